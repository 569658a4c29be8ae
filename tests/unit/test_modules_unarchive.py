"""unarchive: tar/zip formats, idempotence, check mode, traversal refusal, attributes."""
import io
import os
import stat
import tarfile
import time
import zipfile

import pytest

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

unarchive = modules.get("unarchive")
MTIME = 1700000000


def tar_bytes(entries, compression=""):
    """entries: (name, kind, data_or_target, mode)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:" + compression) as tf:
        for name, kind, data, mode in entries:
            info = tarfile.TarInfo(name)
            info.mtime = MTIME
            info.mode = mode
            if kind == "dir":
                info.type = tarfile.DIRTYPE
                tf.addfile(info)
            elif kind == "symlink":
                info.type = tarfile.SYMTYPE
                info.linkname = data
                tf.addfile(info)
            else:
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def zip_bytes(entries):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, kind, data, mode in entries:
            info = zipfile.ZipInfo(name + ("/" if kind == "dir" else ""),
                                   date_time=time.localtime(MTIME)[:6])
            info.external_attr = ((stat.S_IFDIR if kind == "dir" else stat.S_IFREG) | mode) << 16
            zf.writestr(info, b"" if kind == "dir" else data)
    return buf.getvalue()


ENTRIES = [("app", "dir", None, 0o755), ("app/bin", "dir", None, 0o750),
           ("app/bin/run", "file", b"#!/bin/sh\n", 0o755), ("app/README", "file", b"hi\n", 0o644)]


def run(tmp_path, archive, check=False, diff=False, src="app.tgz", **args):
    files = {src: {"kind": "file", "path": "/ctl/files/" + src, "mode": 0o644,
                   "content": archive}}
    args.setdefault("dest", str(tmp_path / "dest"))
    return unarchive.run(dict(args, src=src), ModuleContext(check_mode=check, diff_mode=diff,
                                                             files=files))


def listing(root):
    out = []
    for base, dirs, names in os.walk(str(root)):
        for name in dirs + names:
            out.append(os.path.relpath(os.path.join(base, name), str(root)))
    return sorted(out)


@pytest.mark.parametrize("fmt,handler", [("gz", "TgzArchive"), ("", "TarArchive"),
                                         ("bz2", "TarBzipArchive"), ("xz", "TarXzArchive"),
                                         ("zip", "ZipArchive")])
def test_formats_extract_and_are_idempotent(tmp_path, fmt, handler):
    archive = zip_bytes(ENTRIES) if fmt == "zip" else tar_bytes(ENTRIES, fmt)
    dest = tmp_path / "dest"
    dest.mkdir()
    r = run(tmp_path, archive, list_files=True)
    assert r["changed"] is True and r["handler"] == handler and r["dest"] == str(dest)
    assert r["src"] == "/ctl/files/app.tgz" and r["extract_results"]["rc"] == 0
    assert r["files"] == ["app/", "app/bin/", "app/bin/run", "app/README"]
    assert listing(dest) == ["app", "app/README", "app/bin", "app/bin/run"]
    assert (dest / "app" / "bin" / "run").read_bytes() == b"#!/bin/sh\n"
    assert stat.S_IMODE(os.stat(str(dest / "app" / "bin" / "run")).st_mode) == 0o755
    assert stat.S_IMODE(os.stat(str(dest / "app" / "bin")).st_mode) == 0o750
    assert int(os.stat(str(dest / "app" / "README")).st_mtime) == MTIME
    r = run(tmp_path, archive)
    assert r["changed"] is False and "extract_results" not in r
    assert listing(dest) == ["app", "app/README", "app/bin", "app/bin/run"]


def test_changed_file_is_restored_and_diff(tmp_path):
    archive = tar_bytes(ENTRIES, "gz")
    (tmp_path / "dest").mkdir()
    run(tmp_path, archive)
    readme = tmp_path / "dest" / "app" / "README"
    readme.write_text("edited, longer\n")
    r = run(tmp_path, archive, check=True, diff=True)
    assert r["changed"] is True and readme.read_text() == "edited, longer\n"
    assert r["diff"] == {"prepared": "cf.s....... app/README\n"}
    r = run(tmp_path, archive)
    assert r["changed"] is True and readme.read_text() == "hi\n"


def test_keep_newer(tmp_path):
    archive = tar_bytes(ENTRIES, "gz")
    (tmp_path / "dest").mkdir()
    run(tmp_path, archive)
    readme = tmp_path / "dest" / "app" / "README"
    readme.write_text("mine\n")
    r = run(tmp_path, archive, keep_newer=True)
    assert r["changed"] is False and readme.read_text() == "mine\n"


def test_check_mode_leaves_no_trace(tmp_path):
    (tmp_path / "dest").mkdir()
    r = run(tmp_path, tar_bytes(ENTRIES, "gz"), check=True)
    assert r["changed"] is True and listing(tmp_path / "dest") == []


def test_exclude_include(tmp_path):
    (tmp_path / "dest").mkdir()
    r = run(tmp_path, tar_bytes(ENTRIES, "gz"), exclude=["app/bin/*"], list_files=True)
    assert listing(tmp_path / "dest") == ["app", "app/README", "app/bin"]
    assert "app/bin/run" not in r["files"]
    (tmp_path / "d2").mkdir()
    run(tmp_path, tar_bytes(ENTRIES, "gz"), dest=str(tmp_path / "d2"), include="app/README")
    assert listing(tmp_path / "d2") == ["app", "app/README"]


def test_attributes_applied_and_counted(tmp_path):
    (tmp_path / "dest").mkdir()
    archive = tar_bytes(ENTRIES, "gz")
    r = run(tmp_path, archive, mode="u=rwX,g=rX,o=")
    assert r["changed"] is True
    assert stat.S_IMODE(os.stat(str(tmp_path / "dest" / "app" / "README")).st_mode) == 0o640
    assert stat.S_IMODE(os.stat(str(tmp_path / "dest" / "app" / "bin")).st_mode) == 0o750
    assert run(tmp_path, archive, mode="u=rwX,g=rX,o=")["changed"] is False


def test_symlinks_and_traversal(tmp_path):
    (tmp_path / "dest").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    archive = tar_bytes([("ln", "symlink", "target", 0o777), ("target", "file", b"t", 0o644)])
    run(tmp_path, archive)
    assert os.readlink(str(tmp_path / "dest" / "ln")) == "target"
    for evil in ([("../evil", "file", b"x", 0o644)], [("/abs", "file", b"x", 0o644)]):
        r = run(tmp_path, tar_bytes(evil))
        assert r["failed"] and "path traversal" in r["msg"]
    # a symlink to outside, then a member written through it: refused before any write
    (tmp_path / "d3").mkdir()
    archive = tar_bytes([("esc", "symlink", str(outside), 0o777),
                         ("esc/pwned", "file", b"x", 0o644)])
    r = run(tmp_path, archive, dest=str(tmp_path / "d3"))
    assert r["failed"] and "symlink outside" in r["msg"]
    assert os.listdir(str(outside)) == [] and os.listdir(str(tmp_path / "d3")) == []
    # the same through a symlink already on disk
    (tmp_path / "d3" / "esc").symlink_to(outside)
    r = run(tmp_path, tar_bytes([("esc/pwned", "file", b"x", 0o644)]), dest=str(tmp_path / "d3"))
    assert r["failed"] and "symlink outside" in r["msg"] and os.listdir(str(outside)) == []
    r = run(tmp_path, zip_bytes([("../z", "file", b"x", 0o644)]))
    assert r["failed"] and "path traversal" in r["msg"]


def test_remote_src_creates_and_errors(tmp_path):
    (tmp_path / "dest").mkdir()
    archive_path = tmp_path / "a.tar.gz"
    archive_path.write_bytes(tar_bytes(ENTRIES, "gz"))
    r = unarchive.run({"src": str(archive_path), "dest": str(tmp_path / "dest"),
                       "remote_src": True}, ModuleContext())
    assert r["changed"] and r["src"] == str(archive_path)
    r = unarchive.run({"src": str(archive_path), "dest": str(tmp_path / "dest"), "copy": False,
                       "creates": str(tmp_path / "dest" / "app")}, ModuleContext())
    assert r == {"changed": False, "skipped": True,
                 "msg": "skipped, since %s exists" % (tmp_path / "dest" / "app")}
    r = unarchive.run({"src": str(tmp_path / "none.tgz"), "dest": str(tmp_path / "dest"),
                       "remote_src": True}, ModuleContext())
    assert r["failed"] and r["msg"] == "Source '%s' does not exist" % (tmp_path / "none.tgz")
    r = run(tmp_path, b"", dest=str(tmp_path / "dest"))
    assert r["failed"] and r["msg"] == "Invalid archive '/ctl/files/app.tgz', the file is 0 bytes"
    r = run(tmp_path, b"not an archive", dest=str(tmp_path / "dest"))
    assert r["failed"] and r["msg"].startswith('Failed to find handler for')
    r = run(tmp_path, tar_bytes(ENTRIES), dest=str(tmp_path / "nodir"))
    assert r["failed"] and r["msg"] == "dest '%s' must be an existing dir" % (tmp_path / "nodir")
    r = run(tmp_path, tar_bytes(ENTRIES), extra_opts=["--strip-components=1"])
    assert r["failed"] and r["msg"].startswith("extra_opts is not supported by ioc")
    r = run(tmp_path, tar_bytes(ENTRIES), include=["a"], exclude=["b"])
    assert r["failed"] and r["msg"] == "parameters are mutually exclusive: include|exclude"
    assert not [n for n in listing(tmp_path / "dest") if ".ansible_tmp" in n]
