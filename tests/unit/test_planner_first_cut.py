"""The first-cut planner: one batch per section, refusals with file:line."""
from __future__ import annotations

import pytest

from ioc import loader
from ioc.controller.capabilities import runner_capabilities
from ioc.errors import PlanError
from ioc.planner import explain, plan_play


def plan_of(tmp_path, text, per_task=False):
    path = tmp_path / "play.yml"
    path.write_text(text)
    play = loader.load_playbook(str(path)).plays[0]
    return plan_play(play, runner_capabilities(), per_task=per_task)


PLAY = """
- hosts: all
  pre_tasks:
    - debug: msg=pre
  tasks:
    - debug: msg=one
    - block:
        - debug: msg=two
      rescue:
        - debug: msg=three
  post_tasks:
    - debug: msg=post
"""


def test_tasks_are_numbered_in_linear_order(tmp_path):
    plan = plan_of(tmp_path, PLAY)
    names = [(e.index, e.task.name or e.task.action, e.implicit) for e in plan.program.entries]
    assert [n[1] for n in names] == ["Gathering Facts", "debug", "meta", "debug", "debug",
                                     "debug", "meta", "debug", "meta"]
    assert [n[0] for n in names] == list(range(9))
    assert [n[2] for n in names] == [True, False, True, False, False, False, True, False, True]


def test_one_batch_per_section_each_ending_with_its_flush(tmp_path):
    plan = plan_of(tmp_path, PLAY)
    assert [(b.start, b.end) for b in plan.steps] == [(0, 3), (3, 7), (7, 9)]
    assert all("flush" in b.reason for b in plan.steps)


def test_empty_sections_get_no_batch(tmp_path):
    plan = plan_of(tmp_path, "- hosts: all\n  gather_facts: false\n  tasks:\n    - debug: msg=x\n")
    assert [(b.start, b.end) for b in plan.steps] == [(1, 3)]


def test_per_task_gives_every_task_its_own_batch(tmp_path):
    plan = plan_of(tmp_path, PLAY, per_task=True)
    assert len(plan.steps) == len(plan.program.entries)
    assert all(b.end - b.start == 1 for b in plan.steps)


def test_planning_is_deterministic(tmp_path):
    first = explain(plan_of(tmp_path, PLAY))
    assert all(explain(plan_of(tmp_path, PLAY)) == first for _ in range(3))


@pytest.mark.parametrize("task, message", [
    ("- debug: msg=x\n      run_once: true", "run_once"),
    ("- debug: msg=x\n      delegate_to: otherhost", "delegate_to"),
    ("- include_tasks: other.yml", "include_tasks"),
    ("- meta: end_play", "meta: end_play"),
    ("- no_such_module: a=b", "couldn't resolve module/action 'no_such_module'"),
    ("- debug: msg=\"{{ x | no_such_filter }}\"", "No filter named 'no_such_filter'"),
    ("- debug: msg=x\n      when: x is no_such_test", "No test named 'no_such_test'"),
    ("- debug: msg=\"{{ x \"", "template error"),
])
def test_unsupported_constructs_are_plan_errors_with_file_and_line(tmp_path, task, message):
    text = "- hosts: all\n  tasks:\n    - debug: msg=fine\n    " + task + "\n"
    with pytest.raises(PlanError) as info:
        plan_of(tmp_path, text)
    assert message in str(info.value)
    assert str(info.value).startswith("%s:4: " % (tmp_path / "play.yml"))


def test_explain_names_every_task_with_its_location(tmp_path):
    text = explain(plan_of(tmp_path, PLAY))
    assert "batch 2: tasks 3-6" in text
    assert "play.yml:6" in text  # the first task of `tasks:`
