"""fetch: the target half (read, compute the controller dest, hand over _ioc_fetch)."""
import hashlib

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

fetch = modules.get("fetch")


def run(check=False, **args):
    return fetch.run(args, ModuleContext(check_mode=check,
                                         task_vars={"inventory_hostname": "web1"}))


def test_dest_per_host(tmp_path):
    f = tmp_path / "app.log"
    f.write_bytes(b"log\n")
    r = run(src=str(f), dest="fetched")
    want = "fetched/web1%s" % f
    sha = hashlib.sha1(b"log\n").hexdigest()
    assert r == {"changed": True, "md5sum": hashlib.md5(b"log\n").hexdigest(), "dest": want,
                 "file": str(f), "remote_md5sum": None, "checksum": sha, "remote_checksum": sha,
                 "_ioc_fetch": {"dest": want, "content": b"log\n", "checksum": sha,
                                "flat": False, "dest_is_dir": False,
                                "validate_checksum": True}}


def test_flat(tmp_path):
    f = tmp_path / "app.log"
    f.write_text("x")
    r = run(src=str(f), dest="/backup/", flat=True)
    assert r["dest"] == "/backup/app.log" and r["_ioc_fetch"]["dest_is_dir"] is True
    r = run(src=str(f), dest="/backup/x.log", flat="yes", validate_checksum=False)
    assert r["dest"] == "/backup/x.log" and r["_ioc_fetch"]["validate_checksum"] is False


def test_missing_and_directory(tmp_path):
    r = run(src=str(tmp_path / "none"), dest="d")
    assert r["failed"] and r["msg"] == "the remote file does not exist, not transferring, ignored"
    r = run(src=str(tmp_path / "none"), dest="d", fail_on_missing=False)
    assert "failed" not in r and r["changed"] is False and r["file"] == str(tmp_path / "none")
    r = run(src=str(tmp_path), dest="d")
    assert r["failed"] and r["msg"] == "remote file is a directory, fetch cannot work on directories"
    r = run(src=str(tmp_path), dest="d", fail_on_missing=False)
    assert "failed" not in r and r["msg"].endswith(", not transferring, ignored")


def test_check_mode_and_args(tmp_path):
    r = run(check=True, src="/etc/hostname", dest="d")
    assert r == {"changed": False, "skipped": True,
                 "msg": "check mode not (yet) supported for this module"}
    r = run(src="/etc/hostname")
    assert r["failed"] and r["msg"] == "src and dest are required"


def test_file_names_the_source_but_in_219s_shape(tmp_path, monkeypatch):
    from ioc.agentless_runner import context
    f = tmp_path / "app.log"
    f.write_text("x")
    assert run(src=str(f), dest="fetched")["file"] == str(f)
    monkeypatch.setattr(context, "SHAPE", ["2.19"])  # (results.legacy reads it)
    assert "file" not in run(src=str(f), dest="fetched")
