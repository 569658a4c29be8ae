"""stat module."""
import hashlib
import os

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

stat_mod = modules.get("stat")


def run(**args):
    return stat_mod.run(args, ModuleContext())


def test_missing_path(tmp_path):
    assert run(path=str(tmp_path / "nope")) == {"changed": False, "stat": {"exists": False}}


def test_regular_file(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"abc")
    os.chmod(str(f), 0o640)
    r = run(path=str(f))
    s = r["stat"]
    assert r["changed"] is False
    assert s["exists"] is True and s["path"] == str(f) and s["mode"] == "0640"
    assert s["isreg"] is True and s["isdir"] is False and s["islnk"] is False
    assert s["size"] == 3 and s["uid"] == 0 and s["gid"] == 0
    assert s["pw_name"] == "root" and s["gr_name"] == "root"
    assert s["checksum"] == hashlib.sha1(b"abc").hexdigest()
    assert s["readable"] and s["writeable"] and not s["executable"]
    assert s["rusr"] and s["wusr"] and s["rgrp"] and not s["roth"]
    for key in ("mtime", "atime", "ctime", "inode", "dev", "nlink"):
        assert key in s


def test_checksum_options(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"abc")
    s = run(path=str(f), checksum_algorithm="sha256")["stat"]
    assert s["checksum"] == hashlib.sha256(b"abc").hexdigest()
    assert "checksum" not in run(path=str(f), get_checksum=False)["stat"]
    r = run(path=str(f), checksum_algorithm="crc")
    assert r["failed"] and "value of checksum_algorithm must be one of" in r["msg"]
    assert run(path=str(f), get_mime=True, get_attributes=False)["stat"]["exists"]


def test_directory_and_symlink(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    s = run(path=str(d))["stat"]
    assert s["isdir"] is True and "checksum" not in s
    link = tmp_path / "l"
    link.symlink_to(d)
    s = run(path=str(link))["stat"]
    assert s["islnk"] is True and s["lnk_source"] == str(d) and s["lnk_target"] == str(d)
    s = run(path=str(link), follow=True)["stat"]
    assert s["islnk"] is False and s["isdir"] is True and "lnk_source" not in s


def test_unknown_owner_has_no_names(tmp_path):
    f = tmp_path / "f"
    f.write_text("")
    os.chown(str(f), 54321, 54321)
    s = run(path=str(f))["stat"]
    assert s["uid"] == 54321 and "pw_name" not in s and "gr_name" not in s


def test_required_path():
    r = run()
    assert r["failed"] and r["msg"] == "missing required arguments: path"
