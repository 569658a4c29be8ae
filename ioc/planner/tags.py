"""``--tags`` / ``--skip-tags``: which tasks a run reaches at all (L7.9).

Filtering happens when the play is compiled: a task that is filtered out is
*not reached* — no events, no stats — exactly like Ansible, which filters
while it builds its task lists.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, FrozenSet, Iterable


@dataclass(frozen=True)
class TagFilter:
    """The ``--tags`` and ``--skip-tags`` of a run."""

    only: FrozenSet[str] = frozenset({"all"})
    skip: FrozenSet[str] = frozenset()

    @classmethod
    def parse(cls, only: Iterable[str] = (), skip: Iterable[str] = ()) -> "TagFilter":
        def split(values: Iterable[str]) -> FrozenSet[str]:
            return frozenset(t.strip() for v in values for t in str(v).split(",") if t.strip())
        return cls(only=split(only) or frozenset({"all"}), skip=split(skip))

    @property
    def everything(self) -> bool:
        return self.only == {"all"} and not self.skip

    def selects(self, tags: AbstractSet[str]) -> bool:
        """Whether a task with ``tags`` runs (Ansible's Taggable.evaluate_tags)."""
        tags = set(tags)
        return self._wanted(tags) and not self._skipped(tags)

    def _wanted(self, tags: set) -> bool:
        only = self.only
        if "always" in tags and "always" not in self.skip:
            return True
        if "never" in tags and not (tags - {"never"}) & only and "never" not in only:
            return False
        if "all" in only:
            return True
        if "tagged" in only and tags - {"always", "never"}:
            return True
        if "untagged" in only and not tags:
            return True
        return bool(tags & only)

    def _skipped(self, tags: set) -> bool:
        skip = self.skip
        if not skip:
            return False
        if "all" in skip and not ("always" in tags and "always" not in skip):
            return True
        if "tagged" in skip and tags:
            return True
        if "untagged" in skip and not tags:
            return True
        return bool(tags & skip)
