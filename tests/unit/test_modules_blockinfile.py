"""blockinfile: markers, placement, messages, diff, check mode."""
import os

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

blockinfile = modules.get("blockinfile")


def run(check=False, diff=False, **args):
    return blockinfile.run(args, ModuleContext(check_mode=check, diff_mode=diff))


B, E = "# BEGIN ANSIBLE MANAGED BLOCK\n", "# END ANSIBLE MANAGED BLOCK\n"


def test_insert_update_remove(tmp_path):
    f = tmp_path / "f"
    f.write_text("a\nb")
    r = run(path=str(f), block="x=1\ny=2")
    assert r["changed"] and r["msg"] == "Block inserted"
    assert f.read_text() == "a\nb\n" + B + "x=1\ny=2\n" + E
    assert run(path=str(f), block="x=1\ny=2")["changed"] is False
    r = run(path=str(f), block="x=3")
    assert r["msg"] == "Block inserted" and f.read_text() == "a\nb\n" + B + "x=3\n" + E
    r = run(path=str(f), state="absent")
    assert r["changed"] and r["msg"] == "Block removed" and f.read_text() == "a\nb\n"
    assert run(path=str(f), state="absent")["changed"] is False
    # an empty block with state=present removes it too
    run(path=str(f), block="z")
    r = run(path=str(f), block="")
    assert r["msg"] == "Block removed" and f.read_text() == "a\nb\n"
    assert os.listdir(str(tmp_path)) == ["f"]


def test_custom_markers(tmp_path):
    f = tmp_path / "f"
    f.write_text("")
    run(path=str(f), block="k", marker="<!-- {mark} app -->", marker_begin="START",
        marker_end="STOP")
    assert f.read_text() == "<!-- START app -->\nk\n<!-- STOP app -->\n"


def test_insertafter_insertbefore_bof_and_multiline(tmp_path):
    f = tmp_path / "f"
    f.write_text("one\ntwo\nthree\n")
    run(path=str(f), block="X", insertafter="^two")
    assert f.read_text() == "one\ntwo\n" + B + "X\n" + E + "three\n"
    g = tmp_path / "g"
    g.write_text("one\ntwo\n")
    run(path=str(g), block="X", insertbefore="BOF")
    assert g.read_text() == B + "X\n" + E + "one\ntwo\n"
    h = tmp_path / "h"
    h.write_text("one\ntwo\nthree\n")
    run(path=str(h), block="X", insertbefore="(?m)^two\nthree")
    assert h.read_text() == "one\n" + B + "X\n" + E + "two\nthree\n"


def test_prepend_append_newline(tmp_path):
    f = tmp_path / "f"
    f.write_text("a\nb\n")
    run(path=str(f), block="X", insertafter="^a", prepend_newline=True, append_newline=True)
    assert f.read_text() == "a\n\n" + B + "X\n" + E + "\nb\n"


def test_create_check_mode_and_missing(tmp_path):
    f = tmp_path / "d" / "new"
    r = run(path=str(f), block="x")
    assert r["failed"] and r["msg"] == "Path %s does not exist !" % f and r["rc"] == 257
    r = run(check=True, path=str(f), block="x", create=True)
    assert r["changed"] and r["msg"] == "File created" and not (tmp_path / "d").exists()
    r = run(path=str(f), block="x", create=True)
    assert r["msg"] == "File created" and f.read_text() == B + "x\n" + E
    # like Ansible: without create a missing file fails even for state=absent
    r = run(path=str(tmp_path / "none"), state="absent")
    assert r["failed"] and r["rc"] == 257
    r = run(path=str(tmp_path / "none"), state="absent", create=True)
    assert r == {"changed": False, "msg": "File %s not present" % (tmp_path / "none")}
    assert not (tmp_path / "none").exists()


def test_diff_backup_validate_attrs(tmp_path):
    f = tmp_path / "f"
    f.write_text("a\n")
    os.chmod(str(f), 0o644)
    r = run(diff=True, path=str(f), block="x", backup=True, mode="0600")
    assert r["diff"][0]["before"] == "a\n" and r["diff"][0]["after"] == "a\n" + B + "x\n" + E
    assert r["diff"][1]["after"] == {"mode": "0600"}
    assert r["msg"] == "Block inserted and ownership, perms or SE linux context changed"
    assert open(r["backup_file"]).read() == "a\n"
    os.unlink(r["backup_file"])
    r = run(path=str(f), block="y", validate="false %s")
    assert r["failed"] and r["msg"].startswith("failed to validate: rc:1")
    assert f.read_text() == "a\n" + B + "x\n" + E and os.listdir(str(tmp_path)) == ["f"]
    r = run(check=True, path=str(f), block="y")
    assert r["changed"] and "y" not in f.read_text()


def test_errors(tmp_path):
    r = run(path=str(tmp_path), block="x")
    assert r["failed"] and r["msg"] == "Path %s is a directory !" % tmp_path
    r = run(path=str(tmp_path / "f"), block="x", insertafter="a", insertbefore="b")
    assert r["failed"] and r["msg"] == "parameters are mutually exclusive: insertbefore|insertafter"
    r = run(path=str(tmp_path / "f"), block="x", foo=1)
    assert r["failed"] and "Unsupported parameters for (blockinfile) module: foo" in r["msg"]
