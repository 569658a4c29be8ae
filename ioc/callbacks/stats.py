"""PLAY RECAP accounting (linear-semantics §8)."""
from __future__ import annotations

from collections import OrderedDict
from typing import Dict

COUNTERS = ("ok", "changed", "unreachable", "failures", "skipped", "rescued", "ignored")


class Stats:
    """Per-host counters, updated once per task result."""

    def __init__(self) -> None:
        self.hosts: "OrderedDict[str, Dict[str, int]]" = OrderedDict()

    def _bump(self, host: str, counter: str) -> None:
        counts = self.hosts.setdefault(host, dict.fromkeys(COUNTERS, 0))
        counts[counter] += 1

    def record(self, host: str, status: str, changed: bool, ignored: bool = False,
               rescued: bool = False) -> None:
        """Count one final task result the way the linear strategy does."""
        if status == "failed":
            if ignored:
                self._bump(host, "ok")
                self._bump(host, "ignored")
            elif rescued:
                self._bump(host, "rescued")
                return
            else:
                self._bump(host, "failures")
                return
        elif status == "unreachable":
            self._bump(host, "ok" if ignored else "unreachable")
            if ignored:
                self._bump(host, "ignored")
            return
        elif status == "skipped":
            self._bump(host, "skipped")
            return
        else:
            self._bump(host, "ok")
        if changed:
            self._bump(host, "changed")

    def summarize(self, host: str) -> Dict[str, int]:
        return dict(self.hosts.get(host) or dict.fromkeys(COUNTERS, 0))

    def exit_code(self) -> int:
        """ansible-playbook's: 4 with unreachable hosts, else 2 with failed ones."""
        if any(c["unreachable"] for c in self.hosts.values()):
            return 4
        if any(c["failures"] for c in self.hosts.values()):
            return 2
        return 0
