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


def test_a_handler_ioc_cannot_run_is_a_plan_error_without_fallback(tmp_path):
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
        plan_play(play, runner_capabilities())


HANDLERS = """
- hosts: all
  gather_facts: false
  pre_tasks:
    - command: "true"
      notify: native
  tasks:
    - command: "true"
      notify: "{{ which }}"
    - name: flush now
      meta: flush_handlers
    - command: "true"
      notify: native
  post_tasks:
    - command: "true"
      notify: chain
  handlers:
    - name: native
      debug: msg=n
    - name: foreign
      command: echo foreign
    - name: chain
      debug: msg=c
      notify: topic
    - name: listener
      debug: msg="{{ 1 | exotic_filter }}"
      listen: topic
"""


def foreign_handler(task):
    return "module greet has no native ioc implementation" if task.name == "foreign" else None


def test_a_flush_that_can_reach_a_foreign_handler_is_an_ansible_step(tmp_path):
    plan = plan_play(load(tmp_path, HANDLERS), runner_capabilities(), fallback=foreign_handler)
    # 0 command, 1 flush (reaches only native), 2 command (templated notify),
    # 3 flush now, 4 command, 5 flush (only native since the explicit flush),
    # 6 command notifying chain -> topic -> listener (exotic filter), 7 flush
    assert shape(plan) == ["B0-2", "C3:ansible", "B4-6", "C7:ansible"]
    flushes = [s for s in plan.steps if isinstance(s, ControllerStep)]
    # Every foreign handler is named (the runner stops before any of them) ...
    assert [s.handlers for s in flushes] == [(1, 3), (1, 3)]
    assert plan.program.foreign_handlers == (
        (1, "module greet has no native ioc implementation"),
        (3, "template error while templating string: No filter named 'exotic_filter'. "
            "String: {{ 1 | exotic_filter }}"))
    # ... the reason those this flush can reach.
    assert "handler foreign (%s:20)" % (tmp_path / "play.yml") in flushes[0].reason
    assert "handler listener (%s:25)" % (tmp_path / "play.yml") in flushes[0].reason
    assert "handler foreign" not in flushes[1].reason
    assert flushes[1].reason.startswith("flush runs a handler through Ansible: handler "
                                        "listener (%s:25)" % (tmp_path / "play.yml"))


def test_explain_lists_the_foreign_handlers_of_a_flush_step(tmp_path):
    text = explain(plan_play(load(tmp_path, HANDLERS), runner_capabilities(),
                             fallback=foreign_handler))
    assert "controller step (ansible): flush runs a handler through Ansible: handler foreign " \
           "(play.yml:" in text
    assert "its other handlers run natively: flush now (play.yml:" in text
    assert "rule: handlers run in definition order, each on the hosts notified of it (L5.4)" \
        in text
    assert "h1  handler foreign: through Ansible" in text
    assert "h3  handler listener: through Ansible" in text


def test_a_handler_deferred_by_a_handler_reaches_the_next_flush(tmp_path):
    play = load(tmp_path, """
- hosts: all
  gather_facts: false
  tasks:
    - command: "true"
      notify: late
  post_tasks:
    - debug: msg=post
  handlers:
    - name: foreign
      command: echo foreign
    - name: late
      debug: msg=late
      notify: foreign
""")
    plan = plan_play(play, runner_capabilities(), fallback=foreign_handler)
    # late (native) notifies foreign, defined before it: it runs at the next flush (L5.6).
    assert shape(plan) == ["B0-1", "C2:ansible", "B3-3", "C4:ansible"]


def test_foreign_handler_plans_are_deterministic(tmp_path):
    play = load(tmp_path, HANDLERS)
    plans = [plan_play(play, runner_capabilities(), fallback=foreign_handler) for _ in range(3)]
    assert len({repr(p.steps) for p in plans}) == 1
    assert len({explain(p) for p in plans}) == 1


def test_plays_without_foreign_handlers_plan_as_before(tmp_path):
    play = load(tmp_path, HANDLERS.replace('"{{ 1 | exotic_filter }}"', "l"))
    without = plan_play(play, runner_capabilities())
    none_foreign = plan_play(play, runner_capabilities(), fallback=lambda task: None)
    assert shape(without) == ["B0-7"]
    assert repr(none_foreign.steps) == repr(without.steps)
    assert none_foreign.program.foreign_handlers == ()
    assert explain(none_foreign) == explain(without)


def test_a_foreign_handler_no_flush_can_reach_changes_nothing(tmp_path):
    play = load(tmp_path, HANDLERS.replace('notify: "{{ which }}"', "notify: native")
                .replace('"{{ 1 | exotic_filter }}"', "l"))
    plan = plan_play(play, runner_capabilities(), fallback=foreign_handler)
    assert plan.program.foreign_handlers != ()
    assert shape(plan) == ["B0-7"]


CONNECTION_VARS = """
- hosts: all
  gather_facts: false
  vars:
    ansible_user: fine_at_play_level
  tasks:
    - debug: msg=one
    - block:
        - name: in the block
          command: echo two
      vars:
        ansible_port: 2222
    - name: own vars
      command: echo three
      vars:
        ansible_python_interpreter: /usr/bin/python3
"""


def test_connection_variables_in_task_or_block_vars_are_refused_or_run_through_ansible(tmp_path):
    """Ansible reads them per task; ioc connects once per host and play."""
    play = load(tmp_path, CONNECTION_VARS)
    with pytest.raises(PlanError, match="ansible_port set in a task's or block's vars"):
        plan_play(play, runner_capabilities())
    plan = plan_play(play, runner_capabilities(), fallback=lambda task: None)
    assert shape(plan) == ["B1-1", "C2:ansible", "C3:ansible"]


SUSPEND = """
- hosts: all
  gather_facts: false
  tasks:
    - debug: msg=one
    - name: other OS
      command: echo two
      when: ansible_os_family == 'RedHat'
    - name: unconditional
      command: echo three
    - name: once
      command: echo four
      when: true
      run_once: true
    - name: looked up
      command: echo five
      when: lookup('env', 'HOME') == '/'
    - name: per item
      command: echo {{ item }}
      loop: [1, 2]
      when: item == 2
    - debug: msg=end
"""


def test_a_foreign_task_with_a_when_stays_in_its_batch_as_a_suspension_point(tmp_path):
    """Only the action is foreign and the runner can decide the ``when``: no cut.
    Without a when every host reaches it; run_once needs the controller; a
    controller lookup in the when must run once, where Ansible runs the task."""
    play = load(tmp_path, SUSPEND)
    plan = plan_play(play, runner_capabilities(),
                     fallback=lambda task: "action plugin" if task.action == "command" else None,
                     suspendable=lambda task: True)
    # 1 debug, 2 other OS, 3 unconditional, 4 once, 5 looked up, 6 per item, 7 debug
    assert shape(plan) == ["B1-2", "C3:ansible", "C4:ansible:once", "C5:ansible", "B6-7"]
    assert plan.steps[0].suspend_at == {2} and plan.steps[-1].suspend_at == {6}
    assert "suspends at 2: runs through Ansible: action plugin: task other OS" in explain(plan)
    # Not suspendable (a keyword or a template is foreign, not only the action): a step.
    plan = plan_play(play, runner_capabilities(),
                     fallback=lambda task: "action plugin" if task.action == "command" else None,
                     suspendable=lambda task: False)
    assert shape(plan) == ["B1-1", "C2:ansible", "C3:ansible", "C4:ansible:once", "C5:ansible",
                           "C6:ansible", "B7-7"]
