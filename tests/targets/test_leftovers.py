"""The harness removes what a target wrote to /tmp by a name its files hold
(``leftovers.py``), and nothing else; on real files (a directory standing for /tmp)."""
from __future__ import annotations

from tests.targets.leftovers import TmpLeftovers, named_in


def test_only_names_the_target_writes_and_that_were_absent_are_removed(tmp_path):
    target, tmp = tmp_path / "file", tmp_path / "tmp"
    (target / "tasks").mkdir(parents=True)
    tmp.mkdir()
    # as the file target writes them (a quoted path, key=value), and paths that are not /tmp's
    (target / "tasks" / "main.yml").write_text(
        "- file:\n    path: '/tmp/made_by_run'\n    state: touch\n"
        "- shell: touch dest=/tmp/made_dir/x /tmp/was_there\n"
        "- copy: dest={{ output_dir }}/tmp/not_tmps src=/var/tmp/nor_this\n")
    (tmp / "was_there").write_text("before")
    assert named_in(target) == {"made_by_run", "made_dir", "was_there"}
    leftovers = TmpLeftovers(target, tmp)
    # the run
    (tmp / "made_by_run").write_text("")
    (tmp / "made_dir").mkdir()
    (tmp / "made_dir" / "x").write_text("")
    (tmp / "was_there").write_text("changed by the run")
    (tmp / "not_tmps").write_text("")
    (tmp / "someone_elses").mkdir()
    assert leftovers.remove() == [str(tmp / "made_by_run"), str(tmp / "made_dir")]
    assert sorted(p.name for p in tmp.iterdir()) == ["not_tmps", "someone_elses", "was_there"]
    assert (tmp / "was_there").read_text() == "changed by the run"
    assert leftovers.remove() == []  # (after the second run: nothing made again)
