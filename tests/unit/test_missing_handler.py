"""A changed task notifying a name no handler has nor listens to.

ansible-core's linear strategy looks each notification of a changed result
up as it processes the result and, with ``error_on_missing_handler`` (the
default), ends the whole run there (the result never shown); without it,
warns. The runner decides notifications, so it checks them (against the
names the controller ships) and reports ``abort`` / ``warn``; the planner
ends the batch after a task whose static notify names no handler, so no
host runs past it. The conformance playbook is handlers_missing_name.yml.
"""
from __future__ import annotations

from typing import Any, Dict, List

import pytest

from ioc.agentless_runner.batch import HostRun
from ioc.callbacks import Callback
from ioc.controller.sink import FINAL_EVENTS, PlaySink
from ioc.errors import RunAborted
from ioc.model import WIRE_VERSION
from ioc.planner.effects import notifiable
from ioc.replay import Replay

from tests.unit.test_planner_schedule import plan_of, shape, tasks


def debug(index: int, name: str, notify: List[str], changed: bool = True) -> Dict[str, Any]:
    return {"i": index, "t": {"kind": "task", "action": "debug", "name": name,
                              "args": {"msg": name}, "notify": notify,
                              "changed_when": ["true" if changed else "false"]}}


def run(tree: List[Any], options: Dict[str, Any], handlers=(), state=None):
    wire = {"v": WIRE_VERSION, "host": "h1", "start": 0, "end": 9, "tree": tree,
            "handlers": list(handlers),
            "vars": {"inventory": {}, "play": {}, "extra": {},
                     "magic": {"inventory_hostname": "h1"}},
            "state": state or {}, "options": options}
    events: List[Dict[str, Any]] = []
    HostRun(wire, events.append).run()
    return [(e["e"], e.get("k")) for e in events[:-1]], events


KNOWN = {"notifiable": ["H", "topic"]}
MESSAGE = ("The requested handler 'nope' was not found in either the main handlers list "
           "nor in the listening handlers list")


def test_a_changed_result_notifying_an_unknown_name_aborts_the_run_instead_of_its_result():
    tree = [debug(0, "quiet", ["nope"], changed=False), debug(1, "loud", ["H", "nope"]),
            debug(2, "after", [])]
    steps, events = run(tree, KNOWN)
    # The unchanged task looks nothing up; the changed one ends the walk with
    # no result (nor its register), and the next task never starts.
    assert steps == [("start", [0, 0]), ("done", [0, 0]), ("start", [1, 0]), ("abort", [1, 0])]
    assert events[-2]["msg"] == MESSAGE
    assert events[-1]["status"] == "aborted"


def test_without_error_on_missing_handler_it_warns_before_the_result_and_goes_on():
    tree = [debug(0, "loud", ["nope", "topic"]), debug(1, "after", [])]
    steps, events = run(tree, dict(KNOWN, missing_handler="warn"))
    assert steps == [("start", [0, 0]), ("warn", [0, 0]), ("done", [0, 0]),
                     ("start", [1, 0]), ("done", [1, 0])]
    assert events[1]["msg"] == MESSAGE
    assert events[-1]["state"]["notified"] == ["nope", "topic"]


def test_without_the_names_the_runner_checks_nothing():
    steps, _ = run([debug(0, "loud", ["nope"])], {})
    assert steps == [("start", [0, 0]), ("done", [0, 0])]


def test_a_handler_notifying_an_unknown_name_aborts_the_flush():
    flush = {"i": 0, "implicit": True,
             "t": {"kind": "task", "action": "meta", "args": {"_raw_params": "flush_handlers"}}}
    handlers = [{"kind": "task", "action": "debug", "name": "H", "args": {"msg": "h"},
                 "notify": ["nope"], "changed_when": ["true"]},
                {"kind": "task", "action": "debug", "name": "I", "args": {"msg": "i"}}]
    steps, _ = run([flush], KNOWN, handlers, state={"notified": ["H"]})
    assert steps == [("notify", [0, 0]), ("start", [0, 1]), ("abort", [0, 1])]


def test_the_names_a_notification_may_give():
    from ioc.model import Location, Task

    def handler(**keywords):
        return Task(action="debug", args={}, location=Location("h.yml", 1), **keywords)

    handlers = (handler(name="H", listen=("topic",)), handler(name="r", role="web"),
                handler(name="c", role="ns.coll.db", role_collection="ns.coll"))
    assert notifiable(handlers) == {"H", "topic", "r", "web : r", "c", "ns.coll.db : c",
                                    "db : c"}
    # linear templates a handler's name with the play's variables: known at run time only
    assert notifiable(handlers + (handler(name="restart {{ svc }}"),)) is None
    # ... which the front ends do before planning: a name that could not be
    # templated is no name; its listen topics still are
    unusable = (handler(name="{{ inventory_hostname }}", name_error="'inventory_hostname' is "
                        "undefined"),
                handler(name="{{ x }}", name_error="'x' is undefined", listen=("t2",)))
    assert notifiable(handlers + unusable) == notifiable(handlers) | {"t2"}


def test_a_lookup_warns_for_each_unusable_handler_it_passes_before_the_name():
    """Linear's search by name: the handler blocks last loaded first (the play's
    after the roles'), each in order; it warns for a handler whose name could
    not be templated and that has no listen, until a handler answers."""
    from ioc.agentless_runner.flow import handler_search, search_warnings

    handlers = [{"name": "R", "role": "web"},
                {"name": "{{ a }}", "name_error": "'a' is undefined"},
                {"name": "H"},
                {"name": "{{ b }}", "name_error": "'b' is undefined", "listen": ["t"]},
                {"name": "{{ c }}", "name_error": "'c' is undefined"}]
    search = handler_search(handlers)
    warn_a = ("Handler '{{ a }}' is unusable because it has no listen topics and the name "
              "could not be templated (host-specific variables are not supported in handler "
              "names). The error: 'a' is undefined")
    warn_c = warn_a.replace("{{ a }}", "{{ c }}").replace("'a'", "'c'")
    assert list(search_warnings(search, "H")) == [warn_a]
    assert list(search_warnings(search, "web : R")) == [warn_a, warn_c]
    assert list(search_warnings(search, "t")) == [warn_a, warn_c]
    assert handler_search([{"name": "H"}, {"name": "{{ b }}", "name_error": "e",
                            "listen": ["t"]}]) == []


@pytest.mark.parametrize("notify, expected", [
    ("nope", ["B0-2", "B3-5"]),                  # static and unknown: no host runs past it
    ("H", ["B0-5"]),
    ("\"{{ 'no' + 'pe' }}\"", ["B0-5"]),           # templated: the runner alone can tell
    ("nope\n      changed_when: false", ["B0-5"]),  # never changed: never looked up
])
def test_the_batch_ends_after_a_task_whose_static_notify_names_no_handler(tmp_path, notify,
                                                                         expected):
    text = tasks("- debug: msg=a", "- command: echo b\n      notify: %s" % notify,
                 "- debug: msg=c") + "  handlers:\n    - name: H\n      debug: msg=h\n"
    assert shape(plan_of(tmp_path, text)) == expected


class Recorder(Callback):
    def __init__(self) -> None:
        self.seen: List[Any] = []

    def runner_on_start(self, host, task) -> None:
        self.seen.append(("start", host))

    def runner_item(self, host, task, status, result) -> None:
        self.seen.append(("item", host))

    def runner_result(self, host, task, status, result, ignored=False) -> None:
        self.seen.append(("result", host))


def test_after_an_abort_the_other_hosts_show_what_their_workers_send_then_the_run_ends(tmp_path):
    text = tasks("- command: echo b\n      loop: [1]\n      notify: nope")
    plan = plan_of(tmp_path, text)
    callbacks = Recorder()
    replay = Replay(["h1", "h2", "h3"], PlaySink(plan, callbacks, _Stats()),
                    is_final=lambda e: e.get("e") in FINAL_EVENTS)
    key = [1, 0]
    item = {"e": "item", "k": key, "status": "ok", "result": {"changed": True, "item": 1}}
    done = {"e": "done", "k": key, "status": "ok", "result": {"changed": True},
            "ignored": False, "rescued": False}
    replay.feed("h1", {"e": "start", "k": key, "name": "b"})
    replay.feed("h1", item)
    replay.feed("h1", done)
    replay.feed("h2", {"e": "start", "k": key, "name": "b"})
    replay.feed("h2", item)
    replay.feed("h2", {"e": "abort", "k": key, "msg": MESSAGE})
    replay.feed("h3", {"e": "start", "k": key, "name": "b"})
    replay.feed("h3", item)
    with pytest.raises(RunAborted) as info:
        replay.feed("h3", done)
    assert str(info.value) == MESSAGE
    assert callbacks.seen == [("start", "h1"), ("item", "h1"), ("result", "h1"),
                              ("start", "h2"), ("item", "h2"),
                              ("start", "h3"), ("item", "h3")]


class _Stats:
    def record(self, *args, **kwargs) -> None:
        pass
