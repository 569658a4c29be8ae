"""The transport report printed at the end of every run."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List


@dataclass
class TransportReport:
    """Runner calls per host, as counted by the runners themselves.

    Each runner call is one round trip once a host is connected: the batch
    goes out in one write and its events stream back while it runs. The
    connection itself costs what ``ssh host true`` costs plus about two
    round trips (``tests/integration/test_latency.py`` measures both through
    a delay proxy).
    """

    #: Batches shipped (each is one call per active host).
    batches: int = 0
    #: Calls a ``--per-task`` run would have made: one per task per host.
    per_task_calls: int = 0
    calls: Dict[str, int] = field(default_factory=dict)
    #: Serialized bytes of batches sent and events received, per connection
    #: (before the SSH stream's compression).
    sent: Counter = field(default_factory=Counter)
    received: Counter = field(default_factory=Counter)
    _seen: Counter = field(default_factory=Counter)
    _runners: Dict[str, Dict[str, int]] = field(default_factory=dict)

    def count_call(self, host: str, runner_total: int, context: str = "") -> None:
        """Record a finished call; ``runner_total`` is the runner's own count.

        A host has one runner per identity (``become`` contexts, see
        ``connection.py``); ``context`` names the one that answered, and the
        host's count is the sum over its runners.
        """
        self._seen[host] += 1
        per_runner = self._runners.setdefault(host, {})
        key = context or host
        per_runner[key] = max(runner_total, per_runner.get(key, 0))
        self.calls[host] = sum(per_runner.values())

    def count_bytes(self, host: str, sent: int = 0, received: int = 0) -> None:
        self.sent[host] += sent
        self.received[host] += received

    def lines(self, verbose: bool = False) -> List[str]:
        total = sum(self.calls.values())
        most = max(self.calls.values()) if self.calls else 0
        out = ["ioc: %d batch(es); %d round trip(s) per host after connecting (%d runner call(s) "
               "for %d host(s); a per-task run would make %d); %s sent, %s received"
               % (self.batches, most, total, len(self.calls), self.per_task_calls,
                  _size(sum(self.sent.values())), _size(sum(self.received.values())))]
        if verbose:
            for host in sorted(self.calls):
                out.append("ioc:   %-26s runner calls (round trips)=%d sent=%s received=%s"
                           % (host, self.calls[host], _size(self.sent[host]),
                              _size(self.received[host])))
        return out


def _size(count: int) -> str:
    if count >= 10 * 1024 * 1024:
        return "%d MiB" % (count // (1024 * 1024))
    if count >= 10 * 1024:
        return "%d KiB" % (count // 1024)
    return "%d B" % count
