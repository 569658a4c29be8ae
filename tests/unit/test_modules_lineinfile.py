"""lineinfile: Ansible's insertion rules, messages, diff, check mode and atomic writes."""
import os
import stat

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

lineinfile = modules.get("lineinfile")


def run(check=False, diff=False, **args):
    return lineinfile.run(args, ModuleContext(check_mode=check, diff_mode=diff))


def make(tmp_path, text, name="f"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_replace_by_regexp_then_idempotent(tmp_path):
    f = make(tmp_path, "a=1\nb=2\n")
    r = run(path=str(f), regexp="^a=", line="a=3")
    assert r["changed"] is True and r["msg"] == "line replaced" and r["backup"] == ""
    assert f.read_text() == "a=3\nb=2\n"
    r = run(path=str(f), regexp="^a=", line="a=3")
    assert r["changed"] is False and r["msg"] == ""
    assert os.listdir(str(tmp_path)) == ["f"]


def test_append_at_eof_adds_missing_newline(tmp_path):
    f = make(tmp_path, "a\nb")
    r = run(dest=str(f), line="c")
    assert r["msg"] == "line added" and f.read_text() == "a\nb\nc\n"
    assert run(dest=str(f), line="c")["changed"] is False


def test_last_match_wins_unless_firstmatch(tmp_path):
    f = make(tmp_path, "x=1\nx=2\n")
    run(path=str(f), regexp="^x=", line="x=9")
    assert f.read_text() == "x=1\nx=9\n"
    run(path=str(f), regexp="^x=", line="x=0", firstmatch=True)
    assert f.read_text() == "x=0\nx=9\n"


def test_search_string(tmp_path):
    f = make(tmp_path, "Listen 80\nServerName a\n")
    r = run(path=str(f), search_string="Listen ", line="Listen 8080")
    assert r["msg"] == "line replaced" and f.read_text() == "Listen 8080\nServerName a\n"


def test_insertafter_and_insertbefore(tmp_path):
    f = make(tmp_path, "[main]\nkey=1\n[other]\n")
    run(path=str(f), line="new=2", insertafter=r"^\[main\]")
    assert f.read_text() == "[main]\nnew=2\nkey=1\n[other]\n"
    run(path=str(f), line="before=0", insertbefore=r"^\[other\]")
    assert f.read_text() == "[main]\nnew=2\nkey=1\nbefore=0\n[other]\n"
    run(path=str(f), line="# top", insertbefore="BOF")
    assert f.read_text().startswith("# top\n[main]\n")
    run(path=str(f), line="# end", insertafter="EOF")
    assert f.read_text().endswith("[other]\n# end\n")
    # a regexp with no match and no line: falls back to EOF
    r = run(path=str(f), line="tail", insertafter="^nomatch")
    assert r["changed"] and f.read_text().endswith("# end\ntail\n")
    # idempotent: the line already present elsewhere is not duplicated
    assert run(path=str(f), line="new=2", insertafter=r"^\[main\]")["changed"] is False


def test_backrefs(tmp_path):
    f = make(tmp_path, "port = 80\n")
    r = run(path=str(f), regexp=r"^port = (\d+)$", line=r"port = \g<1>0", backrefs=True)
    assert r["changed"] and f.read_text() == "port = 800\n"
    r = run(path=str(f), regexp=r"^nomatch (\d+)", line=r"x \1", backrefs=True)
    assert r["changed"] is False and f.read_text() == "port = 800\n"
    r = run(path=str(f), line="x", backrefs=True)
    assert r["failed"] and r["msg"] == "regexp is required with backrefs=true"


def test_absent(tmp_path):
    f = make(tmp_path, "a\nb\na\n")
    r = run(path=str(f), line="a", state="absent")
    assert r["changed"] and r["msg"] == "2 line(s) removed" and r["found"] == 2
    assert f.read_text() == "b\n"
    r = run(path=str(f), regexp="^z", state="absent")
    assert r["changed"] is False and r["found"] == 0
    r = run(path=str(tmp_path / "none"), line="a", state="absent")
    assert r == {"changed": False, "msg": "file not present"}
    r = run(path=str(f), state="absent")
    assert r["failed"] and r["msg"] == \
        "one of line, search_string, or regexp is required with state=absent"


def test_create_and_missing_file(tmp_path):
    f = tmp_path / "sub" / "new"
    r = run(path=str(f), line="x")
    assert r["failed"] and r["rc"] == 257 and r["msg"] == "Destination %s does not exist !" % f
    r = run(check=True, path=str(f), line="x", create=True)
    assert r["changed"] is True and r["msg"] == "line added" and not f.parent.exists()
    r = run(path=str(f), line="x", create=True, mode="0600")
    assert r["changed"] and f.read_text() == "x\n"
    assert stat.S_IMODE(os.stat(str(f)).st_mode) == 0o600
    assert r["msg"] == "line added and ownership, perms or SE linux context changed"


def test_directory_path_fails(tmp_path):
    r = run(path=str(tmp_path), line="x")
    assert r["failed"] and r["rc"] == 256 and r["msg"] == "Path %s is a directory !" % tmp_path


def test_check_mode_leaves_file_alone(tmp_path):
    f = make(tmp_path, "a\n")
    r = run(check=True, path=str(f), line="b", mode="0600")
    assert r["changed"] and f.read_text() == "a\n"
    assert stat.S_IMODE(os.stat(str(f)).st_mode) == 0o644
    assert os.listdir(str(tmp_path)) == ["f"]


def test_diff_list_shape(tmp_path):
    f = make(tmp_path, "a\n")
    os.chmod(str(f), 0o644)
    r = run(diff=True, path=str(f), line="b", mode="0600")
    assert r["diff"][0] == {"before": "a\n", "after": "a\nb\n",
                            "before_header": "%s (content)" % f,
                            "after_header": "%s (content)" % f}
    assert r["diff"][1] == {"before": {"mode": "0644"}, "after": {"mode": "0600"},
                            "before_header": "%s (file attributes)" % f,
                            "after_header": "%s (file attributes)" % f}
    r = run(path=str(f), line="c")
    assert r["diff"][0]["before"] == "" and r["diff"][0]["after"] == ""


def test_backup_and_validate(tmp_path):
    f = make(tmp_path, "a\n")
    r = run(path=str(f), line="b", backup=True)
    assert r["backup"].startswith(str(f) + ".") and open(r["backup"]).read() == "a\n"
    os.unlink(r["backup"])
    r = run(path=str(f), line="bad", validate="grep -q good %s")
    assert r["failed"] and r["msg"].startswith("failed to validate: rc:1 error:")
    assert f.read_text() == "a\nb\n" and os.listdir(str(tmp_path)) == ["f"]
    r = run(path=str(f), line="good", validate="grep -q good %s")
    assert r["changed"] and f.read_text() == "a\nb\ngood\n"
    r = run(path=str(f), line="x", validate="true")
    assert r["failed"] and r["msg"] == "validate must contain %s: true"


def test_symlink_is_followed_and_kept(tmp_path):
    target = make(tmp_path, "a\n", "target")
    link = tmp_path / "link"
    link.symlink_to(target)
    run(path=str(link), line="b")
    assert link.is_symlink() and target.read_text() == "a\nb\n"


def test_option_errors(tmp_path):
    f = make(tmp_path, "a\n")
    r = run(path=str(f), line="x", insertafter="a", insertbefore="b")
    assert r["failed"] and r["msg"] == "parameters are mutually exclusive: insertbefore|insertafter"
    r = run(path=str(f), regexp="a", search_string="a", line="x")
    assert r["failed"] and r["msg"] == "parameters are mutually exclusive: regexp|search_string"
    r = run(path=str(f), regexp="a")
    assert r["failed"] and r["msg"] == "line is required with state=present"
    r = run(path=str(f), line="x", others="y")
    assert r["failed"] and "Unsupported parameters for (lineinfile) module: others" in r["msg"]
    r = run(path=str(f), regexp="", line="x")
    assert r["warnings"][0].startswith("The regular expression is an empty string")
