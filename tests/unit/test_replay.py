"""The replay rebuilds the linear order from per-host streams in any interleaving."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from hypothesis import given, settings
from hypothesis import strategies as st

from ioc.replay import Replay, StepSink


class Recorder(StepSink):
    def __init__(self) -> None:
        self.out: List[Tuple[Any, ...]] = []

    def step_start(self, key, hosts, first) -> None:
        self.out.append(("step", key, tuple(hosts)))

    def host_event(self, host, event) -> None:
        self.out.append((host, event["e"], tuple(event["k"]), event.get("n")))

    def host_left(self, host, event) -> None:
        self.out.append(("left", host))


def task(index: int, items: int = 0) -> List[Dict[str, Any]]:
    k = [index, 0]
    events = [{"e": "start", "k": k}]
    events += [{"e": "item", "k": k, "n": n} for n in range(items)]
    return events + [{"e": "done", "k": k}]


def end() -> Dict[str, Any]:
    return {"e": "end"}


# h1 fails task 0 and goes to its rescue (3); h2 runs the block (0, 1, 2);
# h3 runs a loop and is unreachable-like short: only 0. Then always (4) for h1, h2.
STREAMS = {
    "h1": task(0) + task(3, items=2) + task(4) + [end()],
    "h2": task(0, items=1) + task(1) + task(2) + task(4) + [end()],
    "h3": task(0, items=3) + [end()],
}


def replay(order: List[str]) -> List[Tuple[Any, ...]]:
    recorder = Recorder()
    r = Replay(list(STREAMS), recorder)
    cursors = {h: 0 for h in STREAMS}
    for host in order:
        event = STREAMS[host][cursors[host]]
        cursors[host] += 1
        r.feed(host, event)
        if cursors[host] == len(STREAMS[host]):
            r.finish_host(host)
    assert r.complete
    return recorder.out


def host_orders() -> st.SearchStrategy[List[str]]:
    """Every interleaving of the three streams (each host's own order kept)."""
    tokens = [h for h, events in STREAMS.items() for _ in events]
    return st.permutations(tokens)


def test_steps_follow_linear_order_with_hosts_in_play_order() -> None:
    out = replay([h for h in STREAMS for _ in STREAMS[h]])
    steps = [(o[1], o[2]) for o in out if o[0] == "step"]
    assert steps == [((0, 0), ("h1", "h2", "h3")), ((1, 0), ("h2",)), ((2, 0), ("h2",)),
                     ((3, 0), ("h1",)), ((4, 0), ("h1", "h2"))]
    first_step = out[1:out.index(("step", (1, 0), ("h2",)))]
    hosts_in_step = [o[0] for o in first_step]
    assert hosts_in_step == sorted(hosts_in_step)  # each host's events together, h1 first


def test_rescue_of_one_host_waits_for_the_others_block() -> None:
    """L1.3: h1's rescue (task 3) is replayed after h2 finished tasks 1 and 2."""
    out = replay([h for h in STREAMS for _ in STREAMS[h]])
    steps = [o[1][0] for o in out if o[0] == "step"]
    assert steps.index(3) > steps.index(2)


@settings(max_examples=300, deadline=None)
@given(host_orders())
def test_every_interleaving_yields_the_same_sequence(order: List[str]) -> None:
    reference = replay([h for h in STREAMS for _ in STREAMS[h]])
    assert replay(order) == reference


def test_nothing_is_released_while_a_host_has_not_reported() -> None:
    recorder = Recorder()
    r = Replay(["h1", "h2"], recorder)
    for event in task(0):
        r.feed("h1", event)
    assert recorder.out == []  # h2 might still report an earlier step
    r.feed("h2", task(0)[0])
    assert recorder.out[0] == ("step", (0, 0), ("h1", "h2"))


def test_a_finished_host_does_not_hold_back_the_others() -> None:
    recorder = Recorder()
    r = Replay(["h1", "h2"], recorder)
    r.finish_host("h1")
    for event in task(5):
        r.feed("h2", event)
    assert [o for o in recorder.out if o[0] == "step"] == [("step", (5, 0), ("h2",))]


def test_a_held_host_stops_the_step_at_its_place_in_play_order() -> None:
    """h1 stopped before task 1 (a suspension point: something else runs it for
    h1); h2 ran it. The step waits at h1; h2's part and later steps come after
    h1 is released, and h1's events after its release come where they belong."""
    recorder = Recorder()
    r = Replay(["h1", "h2"], recorder)
    for event in task(0) + [end()]:
        r.feed("h1", event)
    r.hold("h1", (1, 0))
    for event in task(0) + task(1) + task(2) + [end()]:
        r.feed("h2", event)
    r.finish_host("h2")
    assert r.held() == ((1, 0), ["h1"], True)
    assert recorder.out[-1] == ("step", (1, 0), ("h1", "h2"))  # announced, nothing of it yet
    r.release("h1")
    assert r.held() is None
    assert ("h2", "done", (1, 0), None) in recorder.out
    assert ("step", (2, 0), ("h2",)) not in recorder.out  # h1 may still run task 2
    for event in task(2) + [end()]:
        r.feed("h1", event)
    r.finish_host("h1")
    assert r.complete
    steps = [entry for entry in recorder.out if entry[0] == "step"]
    assert steps == [("step", (0, 0), ("h1", "h2")), ("step", (1, 0), ("h1", "h2")),
                     ("step", (2, 0), ("h1", "h2"))]


def test_a_step_only_held_hosts_take_part_in_is_not_announced() -> None:
    recorder = Recorder()
    r = Replay(["h1"], recorder)
    r.hold("h1", (3, 0))
    assert r.held() == ((3, 0), ["h1"], False)
    r.release("h1")
    r.finish_host("h1")
    assert r.complete and recorder.out == []
