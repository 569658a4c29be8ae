"""The runner never runs a handler marked foreign: a flush stops before it and resumes.

The mitogen_batch bridge runs such a handler through Ansible between two
runner calls (see ``ioc.ansible.through_ansible.FlushThroughAnsible``); these tests drive the
runner's side directly: where it stops, what it keeps, how it goes on.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from ioc.agentless_runner.batch import HostRun
from ioc.model import WIRE_VERSION


def handler(name: str, foreign: bool = False, notify: Optional[List[str]] = None) -> Dict[str, Any]:
    if foreign:
        return {"kind": "task", "action": "greet", "name": name, "args": {}, "foreign": True}
    out: Dict[str, Any] = {"kind": "task", "action": "debug", "name": name,
                           "args": {"msg": "ran " + name}}
    if notify:
        out.update(notify=notify, changed_when=["true"])
    return out


HANDLERS = [handler("a", notify=["c"]), handler("b", foreign=True), handler("c"),
            handler("d", foreign=True), handler("e")]


def run(state: Dict[str, Any], options: Dict[str, Any], explicit: bool = False):
    flush = {"i": 1, "t": {"kind": "task", "action": "meta",
                           "args": {"_raw_params": "flush_handlers"}}}
    if not explicit:
        flush["implicit"] = True
    wire = {"v": WIRE_VERSION, "host": "h1", "start": 1, "end": 2,
            "tree": [flush, {"fence": 2}], "handlers": HANDLERS,
            "vars": {"inventory": {}, "play": {}, "extra": {},
                     "magic": {"inventory_hostname": "h1"}},
            "state": state, "options": options}
    events: List[Dict[str, Any]] = []
    HostRun(wire, events.append).run()
    return events[:-1], events[-1]


def ran(events):
    return [e["name"] for e in events if e["e"] == "start"]


def test_a_flush_stops_before_the_first_foreign_handler_and_keeps_its_queue():
    events, end = run({"notified": ["a", "b", "e"]}, {}, explicit=True)
    # Notifications are announced for everything queued (c by a, in its step).
    assert [(e["k"], e["handler"]) for e in events if e["e"] == "notify"] == \
        [([1, 0], 0), ([1, 0], 1), ([1, 0], 4), ([1, 1], 2)]
    assert ran(events) == ["meta", "a"]  # c comes after b, which the runner does not run
    assert end["status"] == "ok"
    assert end["state"]["flushing"] == [1, 2, 4]
    assert end["state"]["notified"] == []


def test_a_resumed_flush_runs_the_next_run_of_native_handlers_only():
    events, end = run({"flushing": [2, 4]}, {"flush_resume": True, "flush_from": 2},
                      explicit=True)
    # c runs; e lies past d (foreign): the host waits there although d is not queued.
    assert ran(events) == ["c"]
    assert end["state"]["flushing"] == [4]
    events, end = run(end["state"], {"flush_resume": True, "flush_from": 4}, explicit=True)
    assert ran(events) == ["e"]  # no meta start/done again for the explicit flush
    assert "flushing" not in end["state"]


def test_a_host_not_in_the_flush_does_nothing_when_it_resumes():
    events, end = run({"notified": ["e"]}, {"flush_resume": True, "flush_from": 2})
    assert events == [] and end["state"]["notified"] == ["e"]
    assert "flushing" not in end["state"]


def test_a_flush_waits_at_a_foreign_handler_no_host_of_it_is_queued_for():
    events, end = run({"notified": ["a", "e"]}, {})
    # b is not queued, but c (notified by a) comes after it: every host must
    # have run b through Ansible before any host runs c (L5.4).
    assert ran(events) == ["a"]
    assert end["state"]["flushing"] == [2, 4]
