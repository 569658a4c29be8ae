"""Where a host whose runner connection is lost mid-batch is reported
(ioc/controller/dispatch.py, _Position): never at a step the replay has
already passed, and not at all once its batch is whole."""
from ioc.controller.dispatch import _Position

WIRE = {"tree": [{"i": 3, "t": {"action": "debug"}},
                 {"b": 0, "block": [{"i": 4, "t": {"action": "command"}}],
                  "rescue": [{"i": 5, "t": {"action": "debug"}}],
                  "always": [{"i": 6, "t": {"action": "debug"}}]},
                 {"i": 7, "t": {"action": "command"}}, {"fence": 8}]}


def position() -> _Position:
    return _Position((3, 0), WIRE)


def test_lost_under_a_task_is_that_task():
    pos = position()
    for event in ({"e": "start", "k": [3, 0]}, {"e": "done", "k": [3, 0]},
                  {"e": "start", "k": [4, 0]}):
        pos.see(event)
    event = pos.unreachable("gone")
    assert (event["k"], event["started"], pos.whole()) == ([4, 0], True, False)


def test_lost_between_tasks_is_the_next_task_of_the_batch():
    pos = position()
    assert pos.unreachable("gone")["k"] == [3, 0]  # nothing heard yet: the first
    for event in ({"e": "start", "k": [3, 0]}, {"e": "done", "k": [3, 0]}):
        pos.see(event)
    event = pos.unreachable("gone")
    assert (event["k"], event["started"], pos.whole()) == ([4, 0], False, False)


def test_a_batch_whose_steps_all_came_is_whole():
    pos = position()
    pos.see({"e": "done", "k": [7, 0]})
    assert pos.whole()
    pos = position()
    pos.see({"e": "end"})
    assert pos.whole()
