"""A live one-line progress on the terminal, under the console's lines.

``ioc-run`` makes one when its stdout is a terminal (never when it is a pipe
or a file: then the console is byte for byte what it would be without it).
The connector tells it about connections (:meth:`Progress.connection`), the
play executor about each step's hosts and their streamed events
(:meth:`Progress.step`, :meth:`Progress.event`, :meth:`Progress.step_done`),
in whatever thread they happen. A thread of its own redraws the line in
place (carriage return, clear line) at most every ``interval`` seconds, and
only once a step has run ``delay`` seconds: a quick play shows none. The
console erases it before each line it prints (:meth:`Progress.hidden`) and
it is not redrawn until ``interval`` later, so it never interleaves with
them; :meth:`Progress.close` erases it for good.
"""
from __future__ import annotations

import contextlib
import os
import statistics
import threading
import time
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Set, TextIO

#: What erases the line the cursor is on: back to its start, clear to its end.
ERASE = "\r\033[K"


class Progress:
    def __init__(self, out: TextIO, interval: float = 0.25, delay: float = 0.5) -> None:
        self.out = out
        self.interval = interval
        self.delay = delay
        self._lock = threading.RLock()
        self._shown = False
        self._written = ""
        #: When the console last printed (the line stays away ``interval`` after).
        self._quiet_since = 0.0
        self._hosts: List[str] = []
        self._connected: Set[str] = set()
        self._unreachable: Set[str] = set()
        self._connecting: Dict[str, float] = {}
        #: The current step: per host, tasks done, tasks in its batch, when it last moved.
        self._step_started: Optional[float] = None
        self._done: Dict[str, int] = {}
        self._total: Dict[str, int] = {}
        self._moved: Dict[str, float] = {}
        self._finished: Set[str] = set()
        self._quiet_step = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="ioc-progress", daemon=True)
        self._thread.start()

    # -- what the run reports ---------------------------------------------------

    def play(self, hosts: Sequence[str]) -> None:
        """A play (one serial batch of it) starts on ``hosts``."""
        with self._lock:
            self._hosts = list(hosts)
            self._unreachable.clear()

    def connection(self, host: str, what: str) -> None:
        """The connector's news of ``host``: "connecting", "connected",
        "unreachable" or "gone" (its runner ended or was lost)."""
        with self._lock:
            if what == "connecting":
                self._connecting.setdefault(host, time.monotonic())
                return
            self._connecting.pop(host, None)
            if what == "connected":
                self._connected.add(host)
                self._unreachable.discard(host)
            else:
                self._connected.discard(host)
                if what == "unreachable":
                    self._unreachable.add(host)

    def step(self, totals: Mapping[str, int], quiet: bool = False) -> None:
        """A step starts: the hosts it runs on and how many tasks each one's batch
        has. ``quiet``: the step talks to the terminal itself (``pause`` asking)."""
        now = time.monotonic()
        with self._lock:
            self._step_started = now
            self._total = dict(totals)
            self._done = {host: 0 for host in totals}
            self._moved = {host: now for host in totals}
            self._finished = set()
            self._quiet_step = quiet
            if quiet:
                self._erase()

    def event(self, host: str, event: Optional[Mapping[str, Any]]) -> None:
        """An event ``host``'s runner streamed (None: its call is over)."""
        kind = None if event is None else event.get("e")
        if kind not in (None, "done", "unreachable", "crash"):
            return  # (an "end" may be a suspension: the host goes on in another call)
        with self._lock:
            if host not in self._done:
                return
            if kind == "done":
                self._done[host] += 1
                self._moved[host] = time.monotonic()
            else:
                self._finished.add(host)

    def step_done(self) -> None:
        with self._lock:
            self._step_started = None
            self._quiet_step = False

    @contextlib.contextmanager
    def hidden(self) -> Iterator[None]:
        """Around a line printed to the terminal: the progress line is erased
        first and stays away ``interval`` after."""
        with self._lock:
            self._erase()
            try:
                yield
            finally:
                self._quiet_since = time.monotonic()

    def filter(self, record: Any) -> bool:
        """As a ``logging`` filter of a handler writing to the terminal: the
        line is erased before each record is written, and stays away
        ``interval`` after (enough for the handler to write it)."""
        with self._lock:
            self._erase()
            self._quiet_since = time.monotonic()
        return True

    def close(self) -> None:
        """Erase the line for good and stop redrawing it."""
        self._stop.set()
        self._thread.join()
        with self._lock:
            self._erase()

    # -- the line ------------------------------------------------------------------

    def text(self, now: Optional[float] = None) -> str:
        """The progress line as it reads now ("" when there is nothing to show)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            starts = list(self._connecting.values())
            if self._step_started is not None:
                starts.append(self._step_started)
            if not starts or now - min(starts) < self.delay or self._quiet_step:
                return ""
            total = len(self._hosts) or len(self._total)
            parts = ["hosts connected %d/%d" % (
                len(self._connected & set(self._hosts or self._total)), total)]
            if self._unreachable:
                parts[0] += " (%d unreachable)" % len(self._unreachable)
            if self._connecting:
                parts[0] += ", %d connecting" % len(self._connecting)
            running = [h for h in self._total if h not in self._finished]
            if self._step_started is not None and self._total:
                counts = [min(self._done[h], self._total[h]) for h in self._total]
                parts.append("tasks done %d/%d, per host min %d median %g max %d of %d" % (
                    sum(counts), sum(self._total.values()), min(counts),
                    statistics.median(counts), max(counts), max(self._total.values())))
            if running and self._step_started is not None:
                slowest = min(running, key=lambda h: (self._done[h], self._moved[h]))
                since = self._connecting.get(slowest)
                parts.append("slowest %s (%d/%d, %s)" % (
                    slowest, self._done[slowest], self._total[slowest],
                    "connecting for %ds" % (now - since) if since is not None
                    else "%ds on a task" % (now - self._moved[slowest])))
            return "[ioc] " + " | ".join(parts)

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                if time.monotonic() - self._quiet_since < self.interval:
                    continue
                line = self.text()[:self._columns() - 1]
                if not line:
                    self._erase()
                elif line != self._written or not self._shown:
                    self._write(ERASE + line)
                    self._shown, self._written = True, line

    def _erase(self) -> None:
        if self._shown:
            self._write(ERASE)
            self._shown, self._written = False, ""

    def _write(self, text: str) -> None:
        try:
            self.out.write(text)
            self.out.flush()
        except (OSError, ValueError):  # the terminal went away: nothing more to show
            self._stop.set()

    def _columns(self) -> int:
        try:
            return os.get_terminal_size(self.out.fileno()).columns or 80  # (0: not set)
        except (OSError, ValueError, AttributeError):
            return 80
