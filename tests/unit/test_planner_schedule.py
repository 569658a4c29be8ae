"""The planner cuts a play only where linear semantics demand it (§9)."""
from __future__ import annotations

import pytest

from ioc import loader
from ioc.ansible.modules import attach
from ioc.controller.capabilities import runner_capabilities
from ioc.errors import PlanError
from ioc.planner import ControllerStep, explain, plan_play


def plan_of(tmp_path, text, per_task=False):
    path = tmp_path / "play.yml"
    path.write_text(text)
    play = attach(loader.load_playbook(str(path))).plays[0]
    return plan_play(play, runner_capabilities(), per_task=per_task)


def shape(plan):
    """Steps as short strings: B(start-end) for batches, C(index,where,once) for controller steps."""
    out = []
    for step in plan.steps:
        if isinstance(step, ControllerStep):
            out.append("C%d:%s%s" % (step.index, step.where, ":once" if step.once else ""))
        else:
            out.append("B%d-%d" % (step.start, step.end - 1))
    return out


def tasks(*lines, head="- hosts: all\n  gather_facts: false\n"):
    return head + "  tasks:\n" + "".join("    %s\n" % line for line in lines)


PLAY = """
- hosts: all
  pre_tasks:
    - debug: msg=pre
  tasks:
    - debug: msg=one
      notify: H
    - block:
        - debug: msg=two
      rescue:
        - debug: msg=three
  post_tasks:
    - debug: msg=post
  handlers:
    - name: H
      debug: msg=h
"""


def test_tasks_are_numbered_in_linear_order(tmp_path):
    plan = plan_of(tmp_path, PLAY)
    names = [e.task.name or e.task.action for e in plan.program.entries]
    assert names == ["Gathering Facts", "debug", "meta", "debug", "debug", "debug", "meta",
                     "debug", "meta"]
    assert [e.implicit for e in plan.program.entries] == [True, False, True, False, False,
                                                         False, True, False, True]


def test_a_play_without_barriers_is_one_batch_across_sections_and_flushes(tmp_path):
    assert shape(plan_of(tmp_path, PLAY)) == ["B0-8"]


def test_per_task_gives_every_task_its_own_batch(tmp_path):
    plan = plan_of(tmp_path, PLAY, per_task=True)
    assert shape(plan) == ["B%d-%d" % (i, i) for i in range(9)]


def test_planning_is_deterministic(tmp_path):
    first = explain(plan_of(tmp_path, PLAY))
    assert all(explain(plan_of(tmp_path, PLAY)) == first for _ in range(3))


@pytest.mark.parametrize("task, expected", [
    ("- debug: msg=x\n      run_once: true", ["B1-1", "C2:target:once", "B3-3"]),
    ("- debug: msg=x\n      delegate_to: other", ["B1-1", "C2:delegate", "B3-3"]),
    ("- debug: msg=x\n      delegate_to: localhost\n      run_once: true", ["B1-1", "C2:delegate:once", "B3-3"]),
    ("- local_action: command echo hi", ["B1-1", "C2:delegate", "B3-3"]),
    ("- debug: msg=x\n      delegate_to: \"{{ inventory_hostname }}\"", ["B1-3"]),
    ("- add_host: name=new groups=g", ["B1-1", "C2:controller:once", "B3-3"]),
    ("- pause: seconds=1", ["B1-1", "C2:controller:once", "B3-3"]),
    ("- group_by: key=os", ["B1-3"]),   # nothing reads groups: batchable
    ("- group_by: key=os\n    - debug: msg=\"{{ groups.os }}\"", ["B1-2", "B3-4"]),
    ("- meta: end_play", ["B1-1", "C2:controller:once", "B3-3"]),
    ("- meta: clear_host_errors", ["B1-1", "C2:controller:once", "B3-3"]),
    ("- meta: reset_connection", ["B1-2", "B3-3"]),
    ("- meta: noop", ["B1-3"]),
    ("- meta: end_host", ["B1-3"]),
    ("- debug: msg=x\n      throttle: 1", ["B1-1", "C2:target", "B3-3"]),
    ("- debug: msg=x\n      ignore_unreachable: true", ["B1-1", "B2-2", "B3-3"]),
    ("- debug: msg=x\n      any_errors_fatal: true", ["B1-2", "B3-3"]),
    ("- debug: msg=x\n      any_errors_fatal: true\n      ignore_errors: true", ["B1-3"]),
    ("- setup: filter=ansible_hostname\n      delegate_to: h2\n      delegate_facts: true",
     ["B1-1", "C2:delegate", "B3-3"]),
])
def test_each_barrier_cuts_where_linear_semantics_demand(tmp_path, task, expected):
    text = tasks("- debug: msg=before", task, "- debug: msg=after")
    assert shape(plan_of(tmp_path, text)) == expected


def test_play_level_any_errors_fatal_cuts_after_every_task(tmp_path):
    text = tasks("- debug: msg=a", "- debug: msg=b", "- debug: msg=c",
                 head="- hosts: all\n  gather_facts: false\n  any_errors_fatal: true\n")
    assert shape(plan_of(tmp_path, text)) == ["B1-1", "B2-2", "B3-3"]


def test_max_fail_percentage_cuts_after_every_task(tmp_path):
    text = tasks("- debug: msg=a", "- debug: msg=b",
                 head="- hosts: all\n  gather_facts: false\n  max_fail_percentage: 25\n")
    assert shape(plan_of(tmp_path, text)) == ["B1-1", "B2-2"]


def test_every_cut_says_why_in_the_explanation(tmp_path):
    text = explain(plan_of(tmp_path, tasks("- debug: msg=x", "- debug: msg=y\n      run_once: true")))
    assert "controller step (target, once): run_once: task debug (" in text
    assert "play.yml:5)" in text


@pytest.mark.parametrize("task, message", [
    ("- no_such_module: a=b", "couldn't resolve module/action 'no_such_module'"),
    ("- debug: msg=\"{{ x | no_such_filter }}\"", "No filter named 'no_such_filter'"),
    ("- debug: msg=x\n      when: x is no_such_test", "No test named 'no_such_test'"),
    ("- debug: msg=\"{{ x \"", "template error"),
    ("- command: id\n      become: true\n      become_method: doas", "become_method 'doas'"),
    ("- copy: dest=/tmp/x content=y colour=blue",
     "Unsupported parameters for (copy) module: colour. Supported parameters include: "),
])
def test_unsupported_constructs_are_plan_errors_with_file_and_line(tmp_path, task, message):
    text = "- hosts: all\n  tasks:\n    - debug: msg=fine\n    " + task + "\n"
    with pytest.raises(PlanError) as info:
        plan_of(tmp_path, text)
    assert message in str(info.value)
    assert str(info.value).startswith("%s:4: " % (tmp_path / "play.yml"))


def test_a_dynamic_include_ends_its_batch_and_says_why(tmp_path):
    text = tasks("- debug: msg=a", "- include_tasks: \"{{ name }}.yml\"", "- debug: msg=b")
    plan = plan_of(tmp_path, text)
    assert shape(plan) == ["B1-2", "B3-3"]
    assert "dynamic include: its tasks are known once it has run" in explain(plan)


def test_a_dynamic_include_in_a_handler_is_a_plan_error(tmp_path):
    text = ("- hosts: all\n  tasks:\n    - debug: msg=fine\n  handlers:\n"
            "    - name: h\n      include_tasks: \"{{ name }}.yml\"\n")
    with pytest.raises(PlanError) as info:
        plan_of(tmp_path, text)
    assert "include_tasks in a handler is not supported yet" in str(info.value)
    assert str(info.value).startswith("%s:5: " % (tmp_path / "play.yml"))


def test_a_delegated_handler_is_a_plan_error_not_a_run_on_the_notified_host(tmp_path):
    # (a flush runs in the notified host's runner: the handler would run there,
    # without its delegate's connection or ansible_delegated_vars)
    text = ("- hosts: all\n  tasks:\n    - debug: msg=fine\n  handlers:\n"
            "    - name: h\n      debug: msg=x\n      delegate_to: localhost\n")
    with pytest.raises(PlanError) as info:
        plan_of(tmp_path, text)
    assert "delegate_to on a handler is not supported yet" in str(info.value)
    assert str(info.value).startswith("%s:5: " % (tmp_path / "play.yml"))


def test_a_delegated_task_with_a_when_stays_inside_its_batch(tmp_path):
    """A task that is a controller step only because of its ``delegate_to``
    stays inside its batch as a suspension point when the runner can decide
    its ``when`` alone and the batch's start can tell its delegates; what
    else needs the controller keeps it a step (issue 11, item 3)."""
    plan = plan_of(tmp_path, tasks(
        "- command: echo a",
        "- command: echo b",
        "  delegate_to: \"{{ master | default(omit, true) }}\"",
        "  when: inventory_hostname == 'h2'",
        "- command: echo c"))
    assert shape(plan) == ["B1-3"]
    assert plan.steps[0].delegated == (2,) and plan.steps[0].suspend_at == {2}
    assert plan.steps[0].delegate_step(2).where == "delegate"
    assert "suspends at 2: delegate_to {{ master | default(omit, true) }}: task command" \
        in explain(plan)
    assert "stops, the controller runs it on its delegate" in explain(plan)


@pytest.mark.parametrize("keywords", [
    ["delegate_to: h2"],  # no when: every host reaches it
    ["delegate_to: h2", "when: true", "run_once: true"],
    ["delegate_to: h2", "when: true", "throttle: 1"],
    ["delegate_to: h2", "when: true", "any_errors_fatal: true"],
    ["delegate_to: h2", "when: true", "delegate_facts: true"],
    ["delegate_to: \"{{ item }}\"", "when: true", "loop: [h1, h2]"],  # a delegate per item
    ["delegate_to: \"{{ first.stdout }}\"", "when: true"],  # written in the batch
    ["delegate_to: h2", "when: ansible_host == 'x'"],  # the delegate's connection
    ["delegate_to: h2", "when: lookup('pipe', 'true') == ''"],  # the controller's lookup
])
def test_a_delegated_task_stays_a_controller_step_where_the_batch_cannot_decide(
        tmp_path, keywords):
    plan = plan_of(tmp_path, tasks(
        "- command: echo a",
        "  register: first",
        "- command: echo b",
        *["  " + k for k in keywords],
        "- command: echo c"))
    assert shape(plan)[1].startswith("C2:delegate"), shape(plan)
