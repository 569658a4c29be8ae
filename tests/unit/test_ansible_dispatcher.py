"""What the dispatcher does differently from ``ioc-run``: its hooks, without Ansible.

``ioc.ansible.dispatcher`` runs ioc's one play executor with ``mitogen_batch``'s
hooks (``BridgeExecutor``, ``BridgeRun``, ``ForwardingSink``, ``PlayLevel``),
which talk to ``ansible-playbook`` through a ``ParentLink``. Here the parent's
side of the pipe is written and read by the test, in the pipe's own format:
what the dispatcher asks and tells, and what it makes of the answers. (The
parent's side runs under the real ansible-playbook in ``tests/ansible/``.)
"""
from __future__ import annotations

import io
from typing import Any, Dict, List

import pytest

from ioc import loader
from ioc.ansible.dispatcher import BridgeRun, ForwardingSink, PlayLevel
from ioc.ansible.pipe import ParentLink, read_message, write_message
from ioc.callbacks import Stats
from ioc.controller.capabilities import runner_capabilities
from ioc.controller.state import HostStatus, RunOptions
from ioc.controller.playbook import PlannedPlay
from ioc.model import Group, Host, Inventory
from ioc.planner import ControllerStep, Where, plan_play
from ioc.replay import Replay

PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - name: top
      greet:
    - name: notifies
      debug: msg=changes
      notify: foreign
    - block:
        - debug: msg=one
        - name: in body
          greet:
      rescue:
        - debug: msg=rescued
    - include_tasks: "{{ which }}.yml"
    - debug: msg=after
  handlers:
    - name: foreign
      greet:
"""

FAILED = {"status": "failed", "ignored": False, "changed": False,
          "result": {"failed": True, "msg": "boom"}}
OK = {"status": "ok", "ignored": False, "changed": False, "result": {"changed": False}}


def _plan(tmp_path, text=PLAY):
    path = tmp_path / "play.yml"
    path.write_text(text)
    play = loader.load_playbook(str(path)).plays[0]
    plan = plan_play(play, runner_capabilities(),
                     fallback=lambda t: "lacks greet" if t.action == "greet" else None)
    return PlannedPlay(play, plan)


def _inventory() -> Inventory:
    hosts = {name: Host(name, {"ansible_connection": "local"}) for name in ("h1", "h2")}
    hosts["h3"] = Host("h3")  # outside the play: the parent sent its name only
    return Inventory(hosts=hosts, groups={"all": Group("all", hosts=("h1", "h2", "h3"))})


class Parent:
    """The parent's end of the pipe, scripted: its answers, and what it was sent."""

    def __init__(self, *answers: Dict[str, Any]) -> None:
        inp = io.BytesIO()
        for answer in answers:
            write_message(inp, answer)
        inp.seek(0)
        self.out = io.BytesIO()
        self.link = ParentLink(inp, self.out)

    def sent(self) -> List[Any]:
        stream = io.BytesIO(self.out.getvalue())
        messages = []
        while True:
            try:
                messages.append(read_message(stream))
            except EOFError:
                return messages


def _executor(tmp_path, parent: Parent):
    """The run and the play's executor, as the dispatcher makes them for a request."""
    planned = _plan(tmp_path)
    request = {"op": "play", "planned": planned, "inventory": _inventory(), "modules": None,
               "extra_vars": {}, "hosts": ["h1", "h2"], "options": RunOptions(),
               "memory": {"h1": {"facts": {"os": "debian"}}},
               # the play's hosts in every serial batch, one lost in an earlier batch
               "hosts_all": ["h1", "h2", "h0"], "removed": ["h0"], "skip": {"h2": [0]},
               "options_vars": {"ansible_run_tags": ["all"], "ansible_skip_tags": []}}
    run = BridgeRun(parent.link, request)
    # No runner call happens in these tests: no connection is made.
    return run, run.bridge_executor(planned, request["hosts"], connector=None)


def _step(executor, name: str) -> ControllerStep:
    return next(s for s in executor.plan.steps if isinstance(s, ControllerStep)
                and s.where == Where.ANSIBLE and not s.handlers
                and executor.plan.entries_of(s)[0].task.name == name)


def test_the_request_gives_the_executor_what_ansible_knows_of_the_play(tmp_path):
    _, executor = _executor(tmp_path, Parent())
    assert executor.hosts["h1"].facts == {"os": "debian"} and executor.hosts["h2"].facts == {}
    assert executor.magic["ansible_play_hosts_all"] == ["h1", "h2", "h0"]
    assert executor.removed == frozenset({"h0"})
    assert executor.ctx.skip == {"h2": frozenset({0})}


def test_a_task_that_leaves_the_batch_is_asked_of_the_parent_for_the_hosts_reaching_it(tmp_path):
    parent = Parent({"op": "ansible_done", "hosts": {"h1": FAILED},
                     "vars": {"h1": {"runtime": {"told": 1}}}})
    _, executor = _executor(tmp_path, parent)
    step = _step(executor, "in body")
    # h2 failed earlier in the block: it is in the rescue and skips the task.
    executor.hosts["h2"].blocks = {"0": {"phase": "rescue", "failure": None}}
    outcome = executor.run_step(step, ["h1", "h2"])
    assert parent.sent() == [("ansible", step.index, [("h1", True)], False, True)]
    assert outcome.failed == ["h1"]
    h1 = executor.hosts["h1"]
    assert h1.status is HostStatus.ACTIVE  # its block's rescue takes the failure
    assert h1.blocks["0"]["phase"] == "rescue"
    assert h1.runtime["told"] == 1  # what Ansible's run set, as the parent sent it
    assert h1.runtime["ansible_failed_result"] == {"failed": True, "msg": "boom"}
    assert executor.hosts["h2"].blocks == {"0": {"phase": "rescue", "failure": None}}


def test_a_failure_where_ansible_ran_the_task_once_stops_the_other_hosts(tmp_path):
    # Ansible ran it for h1 only (run_once decided at run time, or a host-loop bypass).
    parent = Parent({"op": "ansible_done", "hosts": {"h1": FAILED}, "vars": {}})
    _, executor = _executor(tmp_path, parent)
    step = _step(executor, "top")
    outcome = executor.run_step(step, ["h1", "h2"])
    executor.after_step(step, ["h1", "h2"], outcome)
    assert parent.sent() == [("ansible", step.index, [("h1", False), ("h2", False)], False, True)]
    assert executor.hosts["h1"].status is HostStatus.FAILED
    assert executor.hosts["h2"].status is HostStatus.STOPPED


def test_a_failure_where_ansible_ran_the_task_for_every_host_stops_only_that_host(tmp_path):
    parent = Parent({"op": "ansible_done", "hosts": {"h1": FAILED, "h2": OK}, "vars": {}})
    _, executor = _executor(tmp_path, parent)
    step = _step(executor, "top")
    outcome = executor.run_step(step, ["h1", "h2"])
    executor.after_step(step, ["h1", "h2"], outcome)
    assert executor.hosts["h1"].status is HostStatus.FAILED
    assert executor.hosts["h2"].status is HostStatus.ACTIVE


def test_a_flush_with_nothing_notified_asks_nothing(tmp_path):
    parent = Parent()
    _, executor = _executor(tmp_path, parent)
    flushes = [s for s in executor.plan.steps if isinstance(s, ControllerStep) and s.handlers]
    assert flushes, "the foreign handler makes its flushes steps of their own"
    outcome = executor.run_step(flushes[-1], ["h1", "h2"])
    assert parent.sent() == [] and outcome.failed == [] and outcome.ends == {}


def test_a_dynamic_include_is_loaded_by_the_parent_and_its_plan_adopted(tmp_path):
    replanned = _plan(tmp_path, PLAY.replace("msg=after", "msg=spliced"))
    parent = Parent({"op": "include_done", "planned": replanned,
                     "failed": {"h2": "could not find b.yml"}, "modules": None})
    _, executor = _executor(tmp_path, parent)
    step = next(s for s in executor.plan.steps
                if any(e.task.include_scope is not None for e in executor.plan.entries_of(s)))
    include = next(e for e in executor.plan.entries_of(step) if e.task.include_scope is not None)
    number = executor.splice_includes(step, outcome=None)
    assert parent.sent() == [("include", include.index, ["h1", "h2"])]
    assert [e.task.args for e in executor.plan.program.entries
            if e.task.action == "debug"][-1] == {"msg": "spliced"}
    assert executor.plan.steps[number].start == include.index + 1
    h2 = executor.hosts["h2"]
    assert h2.status is HostStatus.FAILED and h2.marked  # the file did not load for it
    assert executor.hosts["h1"].status is HostStatus.ACTIVE


def test_variables_of_hosts_outside_the_play_are_asked_once_and_this_runs_values_win(tmp_path):
    # h3 has no inventory variables at all: asked once all the same.
    layers = {"inventory": {"group_names": ["all"]}, "facts": {"os": "theirs", "seen": True},
              "runtime": {}, "include_vars": {}}
    parent = Parent({"op": "outside_done", "hosts": {"h3": layers}},
                    {"op": "outside_done",
                     "hosts": {"h3": dict(layers, inventory={"color": "blue"})}})
    run, executor = _executor(tmp_path, parent)
    run.memory["h3"] = {"facts": {"os": "ours"}}  # delegate_facts of this run
    first = run._outside_hostvars(frozenset({"h1", "h2"}))
    again = run._outside_hostvars(frozenset({"h1", "h2"}))
    assert parent.sent() == [("outside", ["h3"])]
    assert again == first and "color" not in first["h3"]
    assert first["h3"]["os"] == "ours" and first["h3"]["seen"] is True
    run._replace_inventory(_inventory())  # Ansible re-read its inventory: ask again
    assert run._outside_hostvars(frozenset({"h1", "h2"}))["h3"]["color"] == "blue"
    assert len(parent.sent()) == 2


def test_delegate_facts_for_a_host_outside_the_play_reach_the_parent(tmp_path):
    parent = Parent()
    run, _ = _executor(tmp_path, parent)
    run._store_facts("h3", {"a": 1}, "runtime")
    assert parent.sent() == [("store", "h3", {"a": 1}, "runtime")]
    assert run.memory["h3"]["runtime"] == {"a": 1}


def test_the_sink_forwards_events_in_linear_order_and_keeps_the_recap(tmp_path):
    parent = Parent()
    planned = _plan(tmp_path)
    stats = Stats()
    replay = Replay(["h1", "h2"], ForwardingSink(planned.plan, stats, parent.link),
                    is_final=lambda e: e.get("e") == "done")
    done = {"e": "done", "k": [1, 0], "status": "ok", "result": {"changed": True}}
    replay.feed("h2", {"e": "start", "k": [1, 0]})
    replay.feed("h2", done)  # h2 first: held back until h1 has reported
    replay.feed("h1", {"e": "start", "k": [1, 0]})
    replay.feed("h1", done)
    replay.finish_host("h1")
    replay.finish_host("h2")
    assert [(m[0], m[1]) for m in parent.sent()] == [
        ("step_start", (1, 0)), ("event", "h1"), ("event", "h1"),
        ("event", "h2"), ("event", "h2"), ("step_end", (1, 0))]
    assert stats.hosts["h1"]["changed"] == 1 and stats.hosts["h2"]["ok"] == 1


def test_play_level_callbacks_go_to_the_parent():
    parent = Parent()
    callbacks = PlayLevel(parent.link)
    callbacks.warning("Could not match supplied host pattern")
    callbacks.no_hosts_remaining()
    assert parent.sent() == [("callback", "warning", ("Could not match supplied host pattern",)),
                             ("callback", "no_hosts_remaining", ())]


def test_an_answer_of_another_kind_is_a_protocol_error():
    parent = Parent({"op": "include_done"})
    with pytest.raises(RuntimeError, match="include_done"):
        parent.link.run_task(3, [("h1", False)], False)
