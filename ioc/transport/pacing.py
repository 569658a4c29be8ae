"""Connecting many hosts at once: degrade in speed, never into failures.

A *bootstrap* is what it takes to get a runner going on a host: ssh
connects and authenticates, the target's Python starts, mitogen's core and
the runner's code arrive and are imported, and the runner answers its first
call. On a busy controller, a hundred of them started together all slow
down together; with one short bound for the whole they all fail together.
So two things:

* **Bounds.** ssh's own ``ConnectTimeout`` is ``ansible_timeout`` (as in
  Ansible: the TCP connection and the SSH banner). The whole bootstrap, from
  the start of ssh until the runner has answered, has a bound of its own,
  ``IOC_BOOTSTRAP_TIMEOUT`` seconds (default 60). A bootstrap waiting for its
  turn (below) has not started: its bounds have not either.
* **Pacing.** At most ``window`` bootstraps are in flight from one starting
  point (the controller, or each ``mitogen_via`` host for the hosts behind
  it), never more than ``forks``. The window starts at
  ``IOC_CONNECT_WINDOW`` (default 8) and follows progress, judged by how
  long each bootstrap took (``d``) against the quickest seen from that
  starting point (``base``) and against the bound:

  - ``d <= 2 * base`` and ``d <= bound / 6``: the bootstraps in flight do
    not slow each other, one more may fly;
  - ``d > 4 * base`` or ``d > bound / 3``: they queue for the CPU (or the
    link), one fewer;
  - ``d > bound / 2``, or a bootstrap that failed in a way load can cause
    (timed out, reset, cut): half as many.

  The window never goes below 2. A busy controller therefore connects fewer
  hosts at a time, each well within its bound, instead of all of them
  slowly past it; a fleet behind a slow but idle link opens up to ``forks``
  within a few bootstraps' time (the window grows by one per quick
  bootstrap: it doubles each time the ones in flight complete).
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Optional

from ioc.transport.keepalive import numbers_from

#: The window never shrinks below this many bootstraps in flight.
FLOOR = 2
#: A bootstrap within GROW × base (and GROW_BOUND × the bound) lets the window
#: grow; beyond SHRINK × base (or SHRINK_BOUND × the bound) it shrinks by one,
#: beyond HALVE_BOUND × the bound by half.
GROW, GROW_BOUND = 2.0, 1.0 / 6
SHRINK, SHRINK_BOUND = 4.0, 1.0 / 3
HALVE_BOUND = 0.5


@dataclass(frozen=True)
class Pacing:
    """The two settings (see the module docstring)."""

    bootstrap_timeout: float = 60.0
    window: int = 8


def from_environment(environ=os.environ) -> Pacing:
    """The settings, from ``IOC_BOOTSTRAP_TIMEOUT`` and ``IOC_CONNECT_WINDOW``."""
    timeout, window = numbers_from(environ, ("IOC_BOOTSTRAP_TIMEOUT", float, 60, 0),
                                   ("IOC_CONNECT_WINDOW", int, 8, 1))
    return Pacing(timeout, window)


def retry_pause(attempt: int) -> float:
    """Seconds to wait after failed attempt ``attempt`` (0-based), as Ansible's ssh
    connection waits between its retries (``_ssh_retry``: ``2 ** attempt - 1``, at most 30)."""
    return float(min(2 ** attempt - 1, 30))


class Pacer:
    """Admits bootstraps from one starting point, at most ``window`` in flight."""

    def __init__(self, initial: int, ceiling: int, bound: float) -> None:
        self.ceiling = max(1, ceiling)
        #: The bootstrap bound (seconds): the window keeps bootstraps well within it.
        self.bound = bound
        self.window = max(1, min(initial, self.ceiling))
        self.in_flight = 0
        #: The quickest bootstrap seen from here (seconds), None before the first.
        self.base: Optional[float] = None
        self._cond = threading.Condition()

    def admit(self) -> "Slot":
        """Wait for room in the window; the slot is the caller's until it reports."""
        with self._cond:
            while self.in_flight >= self.window:
                self._cond.wait()
            self.in_flight += 1
        return Slot(self)

    def _finished(self, seconds: float, ok: Optional[bool]) -> None:
        with self._cond:
            self.in_flight -= 1
            floor = min(FLOOR, self.ceiling)
            if ok is None:
                pass  # a failure that says nothing about load (refused login, no Python)
            elif not ok or seconds > HALVE_BOUND * self.bound:
                self.window = max(floor, self.window // 2)
            else:
                self.base = seconds if self.base is None else min(self.base, seconds)
                if seconds <= min(GROW * self.base, GROW_BOUND * self.bound):
                    self.window = min(self.ceiling, self.window + 1)
                elif seconds > min(SHRINK * self.base, SHRINK_BOUND * self.bound):
                    self.window = max(floor, self.window - 1)
            self._cond.notify_all()


class Slot:
    """One bootstrap's place in the window; :meth:`done` gives it back (once)."""

    def __init__(self, pacer: Pacer) -> None:
        self._pacer = pacer
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._open = True

    @property
    def open(self) -> bool:
        """True until the bootstrap has been reported."""
        return self._open

    def done(self, ok: Optional[bool]) -> bool:
        """The bootstrap ended: ``ok`` True (its runner answered), False (it failed in a
        way load can cause: timed out, cut), None (a failure load does not cause).
        False if it was already reported."""
        with self._lock:
            if not self._open:
                return False
            self._open = False
        self._pacer._finished(time.monotonic() - self.started, ok)
        return True
