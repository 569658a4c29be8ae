"""file module: state=link and state=hard, and symbolic modes."""
import os
import stat

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

file_mod = modules.get("file")


def run(check=False, diff=False, **args):
    return file_mod.run(args, ModuleContext(check_mode=check, diff_mode=diff))


def mode_of(path):
    return stat.S_IMODE(os.lstat(str(path)).st_mode)


def test_symlink_create_idempotent_and_result(tmp_path):
    target = tmp_path / "target"
    target.write_text("t")
    link = tmp_path / "link"
    r = run(src=str(target), dest=str(link), state="link")
    assert r["changed"] is True and os.readlink(str(link)) == str(target)
    assert r["dest"] == str(link) and r["src"] == str(target) and r["state"] == "link"
    assert r["mode"] == "0777" and "diff" not in r
    assert run(src=str(target), dest=str(link), state="link")["changed"] is False
    # state defaults to the current state (link) when omitted
    assert run(path=str(link))["changed"] is False


def test_relative_symlink_resolved_against_link_dir(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "target").write_text("t")
    link = tmp_path / "sub" / "link"
    r = run(src="../target", path=str(link), state="link")
    assert r["changed"] and os.readlink(str(link)) == "../target" and link.read_text() == "t"
    r = run(src="target", path=str(link), state="link")
    assert r["failed"] and r["msg"] == ('src file does not exist, use "force=yes" if you really '
                                        'want to create the link: %s' % (tmp_path / "sub" / "target"))
    r = run(src="nowhere", path=str(tmp_path / "dangling"), state="link", force=True)
    assert r["changed"] and os.readlink(str(tmp_path / "dangling")) == "nowhere"
    assert "state" not in r  # add_path_info says nothing of a path that does not exist
    assert "Cannot set fs attributes on a non-existent symlink target" in r["warnings"][0]


def test_symlink_retarget_diff_and_check_mode(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("a")
    b.write_text("b")
    link = tmp_path / "link"
    link.symlink_to(a)
    r = run(check=True, diff=True, src=str(b), path=str(link), state="link")
    assert r["changed"] is True and os.readlink(str(link)) == str(a)
    assert r["diff"] == {"before": {"path": str(link), "src": str(a)},
                         "after": {"path": str(link), "src": str(b)}}
    r = run(src=str(b), path=str(link), state="link")
    assert r["changed"] and os.readlink(str(link)) == str(b)
    r = run(check=True, src=str(a), path=str(tmp_path / "new"), state="link")
    assert r["changed"] is True and not os.path.lexists(str(tmp_path / "new"))
    assert sorted(os.listdir(str(tmp_path))) == ["a", "b", "link"]


def test_symlink_over_file_and_directory(tmp_path):
    target = tmp_path / "t"
    target.write_text("t")
    f = tmp_path / "f"
    f.write_text("x")
    r = run(src=str(target), path=str(f), state="link")
    assert r["failed"] and r["msg"] == "refusing to convert from file to symlink for %s" % f
    r = run(src=str(target), path=str(f), state="link", force=True)
    assert r["changed"] and os.path.islink(str(f))
    d = tmp_path / "d"
    (d / "x").mkdir(parents=True)
    r = run(src=str(target), path=str(d), state="link", force=True)
    assert r["failed"] and r["msg"] == "the directory %s is not empty, refusing to convert it" % d
    os.rmdir(str(d / "x"))
    r = run(src=str(target), path=str(d), state="link", force=True)
    assert r["changed"] and os.path.islink(str(d))
    r = run(path=str(tmp_path / "nosrc"), state="link")
    assert r["failed"] and r["msg"] == "src is required for creating new symlinks"


def test_symlink_attributes_follow_target(tmp_path):
    target = tmp_path / "t"
    target.write_text("t")
    os.chmod(str(target), 0o644)
    link = tmp_path / "l"
    r = run(src=str(target), path=str(link), state="link", mode="0600")
    assert r["changed"] and mode_of(target) == 0o600
    assert run(src=str(target), path=str(link), state="link", mode="0600")["changed"] is False


def test_hardlink(tmp_path):
    src = tmp_path / "src"
    src.write_text("s")
    h = tmp_path / "h"
    r = run(src=str(src), path=str(h), state="hard")
    assert r["changed"] and os.stat(str(h)).st_ino == os.stat(str(src)).st_ino
    assert r["state"] == "hard" and r["dest"] == str(h)
    assert run(src=str(src), path=str(h), state="hard")["changed"] is False
    other = tmp_path / "other"
    other.write_text("o")
    r = run(src=str(other), path=str(h), state="hard")
    assert r["failed"] and r["msg"] == "Cannot link, different hard link exists at destination"
    r = run(src=str(other), path=str(h), state="hard", force=True)
    assert r["changed"] and os.stat(str(h)).st_ino == os.stat(str(other)).st_ino
    f = tmp_path / "plain"
    f.write_text("p")
    r = run(src=str(src), path=str(f), state="hard")
    assert r["failed"] and r["msg"] == "Cannot link, file exists at destination"
    r = run(src=str(tmp_path / "missing"), path=str(tmp_path / "x"), state="hard")
    assert r["failed"] and r["msg"] == "src does not exist"
    r = run(check=True, src=str(src), path=str(tmp_path / "y"), state="hard")
    assert r["changed"] and not (tmp_path / "y").exists()
    r = run(path=str(tmp_path / "z"), state="hard")
    assert r["failed"] and r["msg"] == "src is required for creating new hardlinks"
    assert not [n for n in os.listdir(str(tmp_path)) if n.endswith(".tmp")]


def test_hardlink_into_directory_uses_src_basename(tmp_path):
    src = tmp_path / "src"
    src.write_text("s")
    d = tmp_path / "d"
    d.mkdir()
    r = run(src=str(src), path=str(d), state="hard")
    assert r["changed"] and (d / "src").read_text() == "s"


def test_src_needs_link_state(tmp_path):
    r = run(src="/etc/passwd", path=str(tmp_path / "x"), state="file")
    assert r["failed"] and r["msg"] == "src option requires state to be 'link' or 'hard'"


def test_symbolic_modes(tmp_path):
    f = tmp_path / "f"
    f.write_text("")
    os.chmod(str(f), 0o664)
    r = run(path=str(f), mode="u+rwx,g-w,o=r")
    assert r["changed"] and mode_of(f) == 0o744 and r["mode"] == "0744"
    assert run(path=str(f), mode="u+rwx,g-w,o=r")["changed"] is False
    g = tmp_path / "g"
    g.write_text("")
    os.chmod(str(g), 0o640)
    run(path=str(g), mode="a+X")  # no x bit anywhere: X adds nothing to a file
    assert mode_of(g) == 0o640
    run(path=str(g), mode="u+x")
    run(path=str(g), mode="a+X")
    assert mode_of(g) == 0o751
    d = tmp_path / "d"
    d.mkdir()
    os.chmod(str(d), 0o600)
    run(path=str(d), state="directory", mode="a+X")
    assert mode_of(d) == 0o711
    r = run(path=str(f), mode="u+q")
    assert r["failed"] and r["msg"] == "mode must be in octal or symbolic form"


def test_recurse_applies_to_tree(tmp_path):
    d = tmp_path / "d"
    (d / "s").mkdir(parents=True)
    (d / "s" / "f").write_text("")
    os.chmod(str(d / "s" / "f"), 0o600)
    r = run(path=str(d), state="directory", recurse=True, mode="u=rwX,g=rX,o=")
    assert r["changed"] and mode_of(d / "s") == 0o750 and mode_of(d / "s" / "f") == 0o640
    assert run(path=str(d), state="directory", recurse=True, mode="u=rwX,g=rX,o=")["changed"] is False
