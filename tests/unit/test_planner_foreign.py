"""Tasks ioc cannot run natively become ``Where.ANSIBLE`` steps (the mitogen_batch fallback).

The planner stays pure: the caller (the Ansible bridge) says which tasks fall
back through ``fallback``; with it, a task the capability check refuses falls
back too instead of failing the whole play.
"""
from __future__ import annotations

import pytest

from ioc import loader
from ioc.controller.capabilities import runner_capabilities
from ioc.errors import PlanError
from ioc.planner import ControllerStep, Where, explain, plan_play
from tests.unit.test_planner_schedule import shape


def load(tmp_path, text):
    path = tmp_path / "play.yml"
    path.write_text(text)
    return loader.load_playbook(str(path)).plays[0]




PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - debug: msg=one
    - command: echo two
      register: two
    - name: exotic
      command: echo {{ two.stdout | exotic_filter }}
    - debug: msg=four
    - block:
        - debug: msg=five
        - name: library module
          command: echo six
      rescue:
        - debug: msg=rescued
    - debug: msg=after
"""


def by_name(name):
    return lambda task: "module hello has no native ioc implementation" \
        if task.name == name else None


def test_a_refused_task_is_its_own_ansible_step_between_native_batches(tmp_path):
    plan = plan_play(load(tmp_path, PLAY), runner_capabilities(),
                     fallback=by_name("library module"))
    # 0 pre_tasks flush (skipped: no handlers), 1 debug, 2 command, 3 exotic (unknown
    # filter), 4 debug, 5 debug, 6 library module, 7 rescue debug, 8 after, 9 flush, ...
    assert shape(plan) == ["B1-2", "C3:ansible", "B4-5", "C6:ansible", "B7-8"]
    steps = [s for s in plan.steps if isinstance(s, ControllerStep)]
    assert steps[0].where == Where.ANSIBLE
    assert "No filter named 'exotic_filter'" in steps[0].reason
    assert steps[1].reason.startswith("runs through Ansible: module hello has no native ioc "
                                      "implementation: task library module (")


def test_without_fallback_the_same_play_is_a_plan_error(tmp_path):
    with pytest.raises(PlanError, match="exotic_filter"):
        plan_play(load(tmp_path, PLAY), runner_capabilities())


def test_the_plan_is_deterministic(tmp_path):
    play = load(tmp_path, PLAY)
    plans = [plan_play(play, runner_capabilities(), fallback=by_name("library module"))
             for _ in range(3)]
    assert len({repr(p.steps) for p in plans}) == 1
    assert len({explain(p) for p in plans}) == 1


def test_explain_names_the_tasks_that_run_through_ansible_and_why(tmp_path):
    plan = plan_play(load(tmp_path, PLAY), runner_capabilities(),
                     fallback=by_name("library module"))
    text = explain(plan)
    assert "controller step (ansible): runs through Ansible: module hello has no native ioc " \
           "implementation: task library module (play.yml:" in text
    assert "rule: ioc cannot run it natively" in text
    assert "batch of 2 task(s), 1-2; ends: before runs through Ansible" in text


def test_run_once_and_bypass_actions_run_once_through_ansible(tmp_path):
    play = load(tmp_path, """
- hosts: all
  gather_facts: false
  tasks:
    - command: echo one
      run_once: true
    - pause:
        seconds: 0
    - debug: msg=three
""")
    everything = lambda task: "because" if task.action in ("command", "pause") else None
    assert shape(plan_play(play, runner_capabilities(), fallback=everything)) == \
        ["C1:ansible:once", "C2:ansible:once", "B3-3"]


def test_a_handler_ioc_cannot_run_is_still_a_plan_error(tmp_path):
    play = load(tmp_path, """
- hosts: all
  gather_facts: false
  tasks:
    - debug: msg=one
  handlers:
    - name: h
      debug: msg="{{ 1 | exotic_filter }}"
""")
    with pytest.raises(PlanError, match="exotic_filter"):
        plan_play(play, runner_capabilities(), fallback=lambda task: None)
