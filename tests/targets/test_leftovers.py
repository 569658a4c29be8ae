"""The harness removes what a target wrote to /tmp by a name its files hold,
and puts the paths outside /tmp that targets write back as they were
(``leftovers.py``), and nothing else; on real files (directories standing for
/tmp and /etc)."""
from __future__ import annotations

import stat

from tests.targets import leftovers
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


def test_machine_paths_are_put_back_as_they_were_when_the_target_started(tmp_path):
    """/etc/ansible/facts.d as gathering_facts leaves it, on real files (a
    directory standing for /etc): a fact file the run wrote is gone, one it
    changed or removed is back with its mode and owner, a path that was absent
    is removed, and an unchanged one is left alone."""
    etc, var_tmp = tmp_path / "etc", tmp_path / "var_tmp"
    facts = etc / "ansible" / "facts.d"
    facts.mkdir(parents=True)
    var_tmp.mkdir()
    (facts / "kept.fact").write_text('{"a": 1}')
    (facts / "kept.fact").chmod(0o640)
    (facts / "removed.fact").write_text("[x]\ny=1\n")
    (etc / "sudoers.d").mkdir()
    (etc / "sudoers.d" / "README").write_text("readme")
    paths = [etc / "ansible", etc / "sudoers.d", var_tmp / "ansible_test_unicode_get_put"]
    with leftovers.restored(paths) as saved:
        # the run
        (facts / "testfact.fact").write_text('{"fact_dir": "default"}')
        (facts / "kept.fact").write_text('{"a": 2}')
        (facts / "kept.fact").chmod(0o777)
        (facts / "removed.fact").unlink()
        (var_tmp / "ansible_test_unicode_get_put").mkdir()
        (var_tmp / "ansible_test_unicode_get_put" / "Zażółć").write_text("")
        assert saved.restore() == [str(etc / "ansible"),
                                   str(var_tmp / "ansible_test_unicode_get_put")]
        assert sorted(p.name for p in facts.iterdir()) == ["kept.fact", "removed.fact"]
        assert (facts / "kept.fact").read_text() == '{"a": 1}'
        assert stat.S_IMODE((facts / "kept.fact").stat().st_mode) == 0o640
        assert (facts / "removed.fact").read_text() == "[x]\ny=1\n"
        assert not (var_tmp / "ansible_test_unicode_get_put").exists()
        assert saved.restore() == []  # (after a run that left nothing)
        # the second run leaves a fact again: the end of the target takes it back
        (facts / "uuid.fact").write_text("{}")
    assert sorted(p.name for p in facts.iterdir()) == ["kept.fact", "removed.fact"]
    assert (etc / "sudoers.d" / "README").read_text() == "readme"
