"""file module: states, attributes, idempotence, diff and check mode."""
import os
import stat

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

file_mod = modules.get("file")


def run(check=False, diff=False, **args):
    return file_mod.run(args, ModuleContext(check_mode=check, diff_mode=diff))


def mode_of(path):
    return stat.S_IMODE(os.lstat(str(path)).st_mode)


def test_directory_create_idempotent(tmp_path):
    d = tmp_path / "a" / "b"
    r = run(path=str(d), state="directory", mode="0750")
    assert r["changed"] is True and d.is_dir()
    assert r["state"] == "directory" and r["mode"] == "0750" and r["path"] == str(d)
    assert r["uid"] == 0 and r["owner"] == "root" and r["group"] == "root" and "size" in r
    # mode applies to every directory created, like Ansible
    assert mode_of(tmp_path / "a") == 0o750
    assert run(path=str(d), state="directory", mode="0750")["changed"] is False
    assert "diff" not in r


def test_directory_check_mode_creates_nothing(tmp_path):
    d = tmp_path / "x"
    r = run(check=True, path=str(d), state="directory")
    assert r["changed"] is True and not d.exists()


def test_directory_over_file_fails(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    r = run(path=str(f), state="directory")
    assert r["failed"] and r["msg"] == "%s already exists as a file" % f


def test_directory_diff(tmp_path):
    d = tmp_path / "d"
    r = run(diff=True, path=str(d), state="directory", mode="0700")
    assert r["diff"]["before"] == {"path": str(d), "state": "absent", "mode": "0755"}
    assert r["diff"]["after"] == {"path": str(d), "state": "directory", "mode": "0700"}
    r = run(diff=True, path=str(d), state="directory", mode="0701")
    assert r["diff"] == {"before": {"path": str(d), "mode": "0700"},
                         "after": {"path": str(d), "mode": "0701"}}


def test_file_state_requires_existing(tmp_path):
    f = tmp_path / "nofile"
    r = run(path=str(f), state="file")
    assert r["failed"] and r["msg"] == "file (%s) is absent, cannot continue" % f
    assert r["state"] == "absent" and not f.exists()


def test_file_state_sets_mode(tmp_path):
    f = tmp_path / "f"
    f.write_text("data")
    os.chmod(str(f), 0o600)
    r = run(path=str(f), state="file", mode=0o644)
    assert r["changed"] is True and mode_of(f) == 0o644 and r["mode"] == "0644"
    assert r["size"] == 4 and r["state"] == "file"
    assert run(path=str(f), state="file", mode="644")["changed"] is False


def test_symbolic_modes(tmp_path):
    f = tmp_path / "f"
    f.write_text("")
    os.chmod(str(f), 0o640)
    run(path=str(f), mode="u+x,g-r,o=r")
    assert mode_of(f) == 0o704
    run(path=str(f), mode="a=rX")
    assert mode_of(f) == 0o555
    d = tmp_path / "d"
    d.mkdir()
    os.chmod(str(d), 0o700)
    run(path=str(d), state="directory", mode="go=rX")
    assert mode_of(d) == 0o755
    run(path=str(f), mode="u=rw,g=u,o=")
    assert mode_of(f) == 0o660


def test_invalid_mode(tmp_path):
    f = tmp_path / "f"
    f.write_text("")
    r = run(path=str(f), mode="z+q")
    assert r["failed"] and r["msg"] == "mode must be in octal or symbolic form"


def test_check_mode_mode_change_leaves_file(tmp_path):
    f = tmp_path / "f"
    f.write_text("")
    os.chmod(str(f), 0o600)
    r = run(check=True, path=str(f), mode="0644")
    assert r["changed"] is True and mode_of(f) == 0o600


def test_touch_creates_and_always_changes(tmp_path):
    f = tmp_path / "t"
    r = run(path=str(f), state="touch", mode="0640")
    assert r["changed"] is True and f.exists() and mode_of(f) == 0o640
    assert r["dest"] == str(f) and r["state"] == "file"
    assert run(path=str(f), state="touch")["changed"] is True
    r = run(path=str(f), state="touch", modification_time="preserve", access_time="preserve")
    assert r["changed"] is False


def test_touch_explicit_time(tmp_path):
    f = tmp_path / "t"
    run(path=str(f), state="touch", modification_time="202001021530.00")
    assert os.stat(str(f)).st_mtime == __import__("time").mktime((2020, 1, 2, 15, 30, 0, 0, 0, -1))


def test_touch_check_mode(tmp_path):
    f = tmp_path / "t"
    r = run(check=True, path=str(f), state="touch")
    assert r["changed"] is True and not f.exists()


def test_absent_file_and_tree(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    r = run(path=str(f), state="absent")
    assert r == {"path": str(f), "changed": True, "state": "absent"} and not f.exists()
    assert run(path=str(f), state="absent") == {"path": str(f), "changed": False, "state": "absent"}
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "g").write_text("")
    r = run(diff=True, path=str(d), state="absent")
    assert r["changed"] and not d.exists()
    content = r["diff"]["before"]["path_content"]
    assert content == {"directories": [str(d / "sub")], "files": [str(d / "sub" / "g")]}
    assert r["diff"]["after"] == {"path": str(d), "state": "absent"}


def test_absent_check_mode(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    assert run(check=True, path=str(f), state="absent")["changed"] is True
    assert f.exists()


def test_absent_removes_link_not_target(tmp_path):
    target = tmp_path / "target"
    target.write_text("x")
    link = tmp_path / "link"
    link.symlink_to(target)
    assert run(path=str(link), state="absent")["changed"] is True
    assert not os.path.lexists(str(link)) and target.exists()


def test_owner_group_by_name_and_id(tmp_path):
    f = tmp_path / "f"
    f.write_text("")
    os.chown(str(f), 1234, 1234)
    r = run(path=str(f), owner="root", group="0")
    assert r["changed"] is True and r["uid"] == 0 and r["gid"] == 0
    assert run(path=str(f), owner="0", group="root")["changed"] is False


def test_numeric_unknown_uid_works_unknown_name_fails(tmp_path):
    f = tmp_path / "f"
    f.write_text("")
    r = run(path=str(f), owner="54321", group="54321")
    assert r["changed"] is True and r["uid"] == 54321 and r["owner"] == "54321"
    assert r["group"] == "54321"
    r = run(path=str(f), owner="no-such-ioc-user")
    assert r["failed"] and r["msg"] == "chown failed: failed to look up user no-such-ioc-user"
    r = run(path=str(f), group="no-such-ioc-group")
    assert r["failed"] and r["msg"] == "chgrp failed: failed to look up group no-such-ioc-group"


def test_owner_diff(tmp_path):
    f = tmp_path / "f"
    f.write_text("")
    os.chown(str(f), 1000, 1000)
    r = run(diff=True, path=str(f), owner="0")
    assert r["diff"]["before"]["owner"] == 1000 and r["diff"]["after"]["owner"] == 0


def test_recurse(tmp_path):
    d = tmp_path / "d"
    (d / "s").mkdir(parents=True)
    (d / "s" / "f").write_text("")
    os.chown(str(d / "s" / "f"), 1000, 1000)
    r = run(path=str(d), state="directory", recurse=True, owner="0", group="0")
    assert r["changed"] is True and os.stat(str(d / "s" / "f")).st_uid == 0
    assert run(path=str(d), state="directory", recurse=True, owner="0")["changed"] is False
    r = run(path=str(d), recurse=True, mode="u=rwX,go=rX")
    assert mode_of(d / "s" / "f") == 0o644 and mode_of(d / "s") == 0o755


def test_recurse_requires_directory(tmp_path):
    f = tmp_path / "f"
    f.write_text("")
    r = run(path=str(f), state="file", recurse=True)
    assert r["failed"] and r["msg"] == "recurse option requires state to be 'directory'"


def test_invalid_state_rejected(tmp_path):
    r = run(path=str(tmp_path / "l"), state="bogus", src="/etc/passwd")
    assert r["failed"]
    assert r["msg"] == ("value of state must be one of: absent, directory, file, hard, link, "
                        "touch, got: bogus")


def test_default_state(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    r = run(path=str(d), mode="0700")
    assert r["changed"] and r["state"] == "directory"
    r = run(path=str(tmp_path / "missing"))
    assert r["failed"] and "is absent, cannot continue" in r["msg"]


def test_follow_symlink_for_state_file(tmp_path):
    target = tmp_path / "target"
    target.write_text("")
    os.chmod(str(target), 0o600)
    link = tmp_path / "link"
    link.symlink_to(target)
    r = run(path=str(link), state="file", mode="0640")
    assert r["changed"] and mode_of(target) == 0o640 and r["path"] == str(target)


def test_aliases_and_path_expansion(tmp_path, monkeypatch):
    monkeypatch.setenv("IOC_T", str(tmp_path))
    r = run(dest="$IOC_T/x", state="directory")
    assert r["changed"] and (tmp_path / "x").is_dir()
    assert run(name=str(tmp_path / "x"), state="directory")["changed"] is False


def test_missing_path():
    r = run(state="directory")
    assert r["failed"] and r["msg"] == "missing required arguments: path"
