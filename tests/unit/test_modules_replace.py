"""replace: regex substitutions, after/before sections, messages, diff, check mode."""
import os

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

replace = modules.get("replace")


def run(check=False, diff=False, **args):
    return replace.run(args, ModuleContext(check_mode=check, diff_mode=diff))


def test_replacements_and_idempotence(tmp_path):
    f = tmp_path / "f"
    f.write_text("host=a\nhost=b\nport=1\n")
    r = run(path=str(f), regexp=r"^host=(\w)$", replace=r"host=\1.example")
    assert r == {"rc": 0, "changed": True, "msg": "2 replacements made"}
    assert f.read_text() == "host=a.example\nhost=b.example\nport=1\n"
    r = run(path=str(f), regexp=r"^host=(\w)$", replace=r"host=\1.example")
    assert r["changed"] is False and r["msg"] == ""
    assert os.listdir(str(tmp_path)) == ["f"]


def test_after_before_section(tmp_path):
    f = tmp_path / "f"
    f.write_text("x\n[a]\nx\n[b]\nx\n")
    r = run(path=str(f), regexp="^x$", replace="y", after=r"\[a\]", before=r"\[b\]")
    assert r["msg"] == "1 replacements made" and f.read_text() == "x\n[a]\ny\n[b]\nx\n"
    r = run(path=str(f), regexp="^x$", replace="y", after="nomatch")
    assert r["changed"] is False
    assert r["msg"] == "Pattern for before/after params did not match the given file: " \
                       "nomatch(?P<subsection>.*)"


def test_diff_check_backup(tmp_path):
    f = tmp_path / "f"
    f.write_text("a\n")
    r = run(check=True, diff=True, path=str(f), regexp="a", replace="b")
    assert r["changed"] and f.read_text() == "a\n"
    assert r["diff"] == {"before_header": str(f), "before": "a\n",
                         "after_header": str(f), "after": "b\n"}
    r = run(path=str(f), regexp="a", replace="b", backup=True)
    assert "diff" not in r and open(r["backup_file"]).read() == "a\n"


def test_validate_and_attrs(tmp_path):
    f = tmp_path / "f"
    f.write_text("a\n")
    r = run(path=str(f), regexp="a", replace="b", validate="grep -q c %s")
    assert r["failed"] and f.read_text() == "a\n" and os.listdir(str(tmp_path)) == ["f"]
    r = run(path=str(f), regexp="zzz", mode="0600")
    assert r["changed"] and r["msg"] == "ownership, perms or SE linux context changed"


def test_errors(tmp_path):
    r = run(path=str(tmp_path / "none"), regexp="a")
    assert r["failed"] and r["rc"] == 257 and r["msg"] == "Path %s does not exist !" % (
        tmp_path / "none")
    r = run(path=str(tmp_path), regexp="a")
    assert r["failed"] and r["rc"] == 256
    f = tmp_path / "f"
    f.write_text("a")
    r = run(path=str(f), regexp="(", replace="")
    assert r["failed"] and r["msg"].startswith("Unable to process replace due to error:")
    r = run(path=str(f))
    assert r["failed"] and r["msg"] == "missing required arguments: regexp"
