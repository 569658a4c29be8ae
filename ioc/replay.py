"""Ordered replay: per-host event streams in, the linear strategy's order out.

Each host's runner reports its events in its own order, tagged with a step
key (``(task index, sub)``). Hosts run independently, so the streams arrive
interleaved in any way. The linear strategy would have run one *step* at a
time: the first task that is the next task of some host, on every host whose
next task it is. :class:`Replay` rebuilds exactly that order (L1.2, L1.4):

* a step starts once every host still in the batch has reported where it
  stands (its next key, or that it finished), and it is the smallest key;
* within the step, hosts come in play order, each host's events together;
* the step ends when every host in it has sent its final (``done``) event.

A host may also be *held* at a step (:meth:`Replay.hold`): it stopped
before the task, which something else runs for it (a suspension point:
Ansible). Its part of the step is over once it is released;
:meth:`Replay.held` says when the step waits on a held host, and names
every host held at it (the task runs for them together, where the first
of them comes in play order). A step only held hosts take part in is not
announced (``step_start``/``step_end``): whoever runs the task announces it.

The replay only orders; what the events mean is the sink's business. It is
pure: feeding the same per-host streams in any interleaving yields the same
output sequence.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Deque, Dict, Optional, Sequence, Tuple

Key = Tuple[int, ...]
Event = Dict[str, Any]


@dataclass
class _Stream:
    events: Deque[Event] = field(default_factory=deque)
    finished: bool = False


class StepSink:
    """Receives the replayed order. Override what you need."""

    def step_start(self, key: Key, hosts: Sequence[str], first: Event) -> None:
        """A new step: ``hosts`` take part; ``first`` is the first host's first event."""

    def host_event(self, host: str, event: Event) -> None:
        """One event of ``host`` in the current step (the final one is ``done``)."""

    def host_left(self, host: str, event: Event) -> None:
        """``host`` finished its batch (its ``end`` event)."""

    def step_end(self, key: Key) -> None:
        """Every host in the step has sent its final event."""


class Replay:
    """Orders the events of one batch across ``hosts`` (given in play order)."""

    def __init__(self, hosts: Sequence[str], sink: StepSink,
                 is_final: Callable[[Event], bool] = lambda e: e.get("e") == "done") -> None:
        self.hosts = list(hosts)
        self.sink = sink
        self.is_final = is_final
        self.streams: Dict[str, _Stream] = {h: _Stream() for h in self.hosts}
        self.step: Optional[Key] = None
        self.pending: list[str] = []
        #: Whether the current step was announced (not only held hosts in it).
        self.announced = False
        #: While no step is current, the next step's candidates found so far:
        #: the first ``_placed`` hosts (play order) each stand at a key, kept
        #: in ``_keys`` (it stays theirs: events are only appended), or have
        #: finished, as ``_finished_placed`` (a new event of one of those, if
        #: any came, starts the search again). ``_start_step`` goes on from
        #: the first host it could not place, not from the first host, so each
        #: event costs the same however many hosts wait for a slow one.
        self._keys: Dict[str, Key] = {}
        self._placed = 0
        self._finished_placed: set[str] = set()

    def feed(self, host: str, event: Event) -> None:
        """Accept one event of ``host`` and release whatever is now in order."""
        self.streams[host].events.append(event)
        if host in self._finished_placed:
            self._forget_placed()
        self._pump()

    def finish_host(self, host: str) -> None:
        """``host`` will send nothing more in this batch."""
        self.streams[host].finished = True
        self._pump()

    def hold(self, host: str, key: Key) -> None:
        """``host`` stopped before step ``key``: it reports nothing of it."""
        self.feed(host, {"k": list(key), "e": "held"})

    def held(self) -> Optional[Tuple[Key, list, bool]]:
        """(step, hosts held at it, announced) when the step waits on a held host."""
        if self.step is None or not self.pending or not self._held(self.pending[0]):
            return None
        return self.step, [h for h in self.pending if self._held(h)], self.announced

    def release(self, host: str) -> None:
        """``host``'s part of the step it is held at is over."""
        self.streams[host].events[0]["released"] = True
        self._pump()

    def _held(self, host: str) -> bool:
        events = self.streams[host].events
        return bool(events) and events[0].get("e") == "held" \
            and not events[0].get("released")

    @property
    def complete(self) -> bool:
        return self.step is None and all(
            s.finished and not s.events for s in self.streams.values())

    def _pump(self) -> None:
        while True:
            if self.step is None and not self._start_step():
                return
            if not self._drain_step():
                return

    def _next_key(self, host: str) -> Optional[Key]:
        """The key of ``host``'s next step, after releasing its ``end`` events."""
        stream = self.streams[host]
        while stream.events and stream.events[0].get("k") is None:
            self.sink.host_left(host, stream.events.popleft())
        return tuple(stream.events[0]["k"]) if stream.events else None

    def _forget_placed(self) -> None:
        self._keys, self._placed, self._finished_placed = {}, 0, set()

    def _start_step(self) -> bool:
        keys = self._keys
        while self._placed < len(self.hosts):
            host = self.hosts[self._placed]
            key = self._next_key(host)
            if key is not None:
                keys[host] = key
            elif not self.streams[host].finished:
                return False  # this host may still report an earlier step
            else:
                self._finished_placed.add(host)
            self._placed += 1
        self._forget_placed()
        if not keys:
            return False
        self.step = min(keys.values())
        self.pending = [h for h in self.hosts if keys.get(h) == self.step]
        first = next((h for h in self.pending if not self._held(h)), None)
        self.announced = first is not None
        if first is not None:
            self.sink.step_start(self.step, list(self.pending), self.streams[first].events[0])
        return True

    def _drain_step(self) -> bool:
        while self.pending:
            if not self._drain_host(self.pending[0]):
                return False
            self.pending.pop(0)
        assert self.step is not None
        if self.announced:
            self.sink.step_end(self.step)
        self.step = None
        return True

    def _drain_host(self, host: str) -> bool:
        """Release ``host``'s events of the current step; True once its part is over.

        A host's part ends with its final event, or when its next event
        belongs to another step (an implicit handler flush sends only
        notifications), or when the host has finished.
        """
        stream = self.streams[host]
        while stream.events:
            key = stream.events[0].get("k")
            if key is None or tuple(key) != self.step:
                return True
            if stream.events[0].get("e") == "held":
                if not stream.events[0].get("released"):
                    return False
                stream.events.popleft()
                return True
            event = stream.events.popleft()
            self.sink.host_event(host, event)
            if self.is_final(event):
                return True
        return stream.finished
