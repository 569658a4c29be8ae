"""find: patterns, types, recursion, age/size/contains, checksums."""
import hashlib
import os
import time

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

find = modules.get("find")


def run(**args):
    return find.run(args, ModuleContext())


def tree(tmp_path):
    (tmp_path / "a.log").write_text("error: x\n")
    (tmp_path / "b.txt").write_text("ok\n" * 1000)
    (tmp_path / ".hidden.log").write_text("")
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "sub" / "c.log").write_text("fine\n")
    (tmp_path / "sub" / "deeper" / "d.log").write_text("")
    (tmp_path / "link.log").symlink_to(tmp_path / "a.log")
    old = time.time() - 3 * 86400
    os.utime(str(tmp_path / "b.txt"), (old, old))


def names(r, base):
    return sorted(os.path.relpath(f["path"], str(base)) for f in r["files"])


def test_patterns_and_recursion(tmp_path):
    tree(tmp_path)
    r = run(paths=str(tmp_path), patterns="*.log")
    assert names(r, tmp_path) == ["a.log"] and r["matched"] == 1 and r["changed"] is False
    assert r["msg"] == "All paths examined" and r["skipped_paths"] == {}
    assert r["examined"] == 5
    r = run(paths=[str(tmp_path)], patterns=["*.log"], recurse=True)
    assert names(r, tmp_path) == ["a.log", "sub/c.log", "sub/deeper/d.log"]
    r = run(paths=str(tmp_path), patterns="*.log", recurse=True, depth=2)
    assert names(r, tmp_path) == ["a.log", "sub/c.log"]
    r = run(paths=str(tmp_path), patterns="*.log", hidden=True, excludes="a*")
    assert names(r, tmp_path) == [".hidden.log"]
    r = run(paths=str(tmp_path), patterns=r"^[ab]\.(log|txt)$", use_regex=True)
    assert names(r, tmp_path) == ["a.log", "b.txt"]


def test_file_types(tmp_path):
    tree(tmp_path)
    assert names(run(paths=str(tmp_path), file_type="directory", recurse=True), tmp_path) == \
        ["sub", "sub/deeper"]
    assert names(run(paths=str(tmp_path), file_type="link"), tmp_path) == ["link.log"]
    assert names(run(paths=str(tmp_path), file_type="any"), tmp_path) == \
        ["a.log", "b.txt", "link.log", "sub"]


def test_age_size_contains_mode(tmp_path):
    tree(tmp_path)
    assert names(run(paths=str(tmp_path), age="2d"), tmp_path) == ["b.txt"]
    assert names(run(paths=str(tmp_path), age="-1d"), tmp_path) == ["a.log"]
    assert names(run(paths=str(tmp_path), size="2k"), tmp_path) == ["b.txt"]
    assert names(run(paths=str(tmp_path), size="-10b"), tmp_path) == ["a.log"]
    assert names(run(paths=str(tmp_path), contains="^error"), tmp_path) == ["a.log"]
    os.chmod(str(tmp_path / "a.log"), 0o600)
    assert names(run(paths=str(tmp_path), mode="0600"), tmp_path) == ["a.log"]
    assert names(run(paths=str(tmp_path), mode="u=rw", exact_mode=False), tmp_path) == \
        ["a.log", "b.txt"]


def test_entries_checksum_and_limit(tmp_path):
    tree(tmp_path)
    r = run(paths=str(tmp_path), patterns="a.log", get_checksum=True)
    f = r["files"][0]
    assert f["checksum"] == hashlib.sha1(b"error: x\n").hexdigest()
    assert f["isreg"] is True and f["mode"] == "0644" and f["pw_name"] == "root"
    assert f["size"] == 9 and "mtime" in f and "inode" in f
    r = run(paths=str(tmp_path), file_type="any", limit=1)
    assert r["matched"] == 1 and r["msg"] == "Limit of matches reached"


def test_bad_paths_and_args(tmp_path):
    r = run(paths=[str(tmp_path / "none")])
    assert "failed" not in r and r["matched"] == 0
    assert r["msg"] == "Not all paths examined, check warnings for details"
    assert r["skipped_paths"] == {str(tmp_path / "none"): "'%s' is not a directory"
                                  % (tmp_path / "none")}
    r = run(paths=str(tmp_path), age="3x")
    assert r["failed"] and r["msg"] == "failed to process age"
    r = run(paths=str(tmp_path), limit=0)
    assert r["failed"] and r["msg"] == "limit cannot be 0 (use None for unlimited)"
    r = run(patterns="*")
    assert r["failed"] and r["msg"] == "missing required arguments: paths"
