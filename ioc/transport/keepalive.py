"""Silence on a runner's connection is noticed within a bound, at both ends.

A network that goes silent (a black hole: no reset, no close) would
otherwise leave the controller waiting on the host forever and the runner
running its batch for nobody. The bound is ``interval * count`` seconds,
from two settings (environment variables, as ``ioc-run`` and
``mitogen_batch`` both read them):

* ``IOC_KEEPALIVE_INTERVAL`` (seconds, default 15) and
* ``IOC_KEEPALIVE_COUNT`` (default 3): silence is noticed after 45 s.

Controller end: ssh's own probes (``ServerAliveInterval`` = interval,
``ServerAliveCountMax`` = count, which mitogen passes to ssh). When they go
unanswered ssh exits, the host's runner call ends with a lost connection,
and the host is UNREACHABLE with the results received so far shown and
the rest called unknown (:mod:`ioc.controller.dispatch`).

Runner end: the controller sends every runner that has started a batch a
heartbeat message every ``interval`` seconds -- one way, never answered,
so it costs no round trip. A runner that hears nothing for ``interval *
(count + 1)`` seconds ends itself and the processes its tasks started
(:func:`ioc.agentless_runner.lifeline.watch`).
"""
from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Tuple

import mitogen.core

from ioc.agentless_runner.lifeline import HEARTBEAT
from ioc.errors import ConnectionSetupError

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class KeepAlive:
    interval: float = 15.0
    count: int = 3

    @property
    def controller_bound(self) -> float:
        return self.interval * self.count

    @property
    def runner_bound(self) -> float:
        """What a runner waits for: one interval more, so the controller notices first."""
        return self.interval * (self.count + 1)

    def ssh_options(self) -> Dict[str, object]:
        """mitogen's ssh keyword arguments for ssh's own probes."""
        return {"keepalive_enabled": True, "keepalive_interval": max(1, int(self.interval)),
                "keepalive_count": max(1, self.count)}


def from_environment(environ=os.environ) -> KeepAlive:
    """The settings, from ``IOC_KEEPALIVE_INTERVAL`` and ``IOC_KEEPALIVE_COUNT``."""
    interval, count = numbers_from(environ, ("IOC_KEEPALIVE_INTERVAL", float, 15, 0),
                                   ("IOC_KEEPALIVE_COUNT", int, 3, 1))
    return KeepAlive(interval, count)


def numbers_from(environ: Mapping[str, str], *settings: Tuple[str, Any, float, float]) -> List[Any]:
    """Each ``(name, type, default, least)`` setting's value from ``environ``:
    a value that does not parse, or is below ``least`` (a float: not above
    it), is a ConnectionSetupError naming the variable."""
    out: List[Any] = []
    for name, kind, default, least in settings:
        try:
            value = kind(environ.get(name) or default)
        except ValueError as exc:
            raise ConnectionSetupError("%s: %s" % (name, exc)) from None
        if value < least or (kind is float and value <= least):
            raise ConnectionSetupError("%s must be %s %s" % (
                name, ">" if kind is float else ">=", least))
        out.append(value)
    return out


class Heartbeat:
    """Sends each runner that asked for it a one-way heartbeat every ``interval`` s."""

    def __init__(self, router: mitogen.core.Router, settings: KeepAlive) -> None:
        self.router = router
        self.settings = settings
        self._contexts: Dict[int, mitogen.core.Context] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ioc-heartbeat", daemon=True)
        self._thread.start()

    def add(self, context: mitogen.core.Context) -> None:
        """Beat for ``context`` from now on (its runner has installed its handler)."""
        with self._lock:
            self._contexts[context.context_id] = context

    def discard(self, context: mitogen.core.Context) -> None:
        with self._lock:
            self._contexts.pop(context.context_id, None)

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.settings.interval):
            with self._lock:
                contexts = list(self._contexts.values())
            for context in contexts:
                try:
                    context.send(mitogen.core.Message(handle=HEARTBEAT))
                except mitogen.core.Error:  # the broker is shutting down
                    return
