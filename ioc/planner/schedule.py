"""Cutting a compiled play into steps.

First cut: one batch per play section (``pre_tasks`` with fact gathering,
``tasks``, ``post_tasks``), each ending with its handler flush. ``per_task``
gives every task a batch of its own, for comparisons: the runner is the same,
only the number of calls changes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from ioc.planner.program import SECTIONS, Entry, Program


@dataclass(frozen=True)
class Batch:
    """Tasks ``[start, end)`` of the program, run per host by the runner."""

    start: int
    end: int
    #: Why the batch ends where it does, for ``--plan``.
    reason: str


@dataclass(frozen=True)
class Plan:
    program: Program
    steps: Tuple[Batch, ...]

    def entries_of(self, batch: Batch) -> Tuple[Entry, ...]:
        return self.program.entries[batch.start:batch.end]


def schedule(program: Program, per_task: bool = False) -> Plan:
    """The ordered steps of ``program``; pure and deterministic."""
    steps: list[Batch] = []
    for section in SECTIONS:
        entries = [e for e in program.entries if e.section == section]
        if all(e.implicit and e.is_flush for e in entries):
            continue  # nothing to run and nothing to flush
        if per_task:
            steps.extend(Batch(e.index, e.index + 1, "--per-task") for e in entries)
        else:
            reason = "end of %s (handler flush)" % section
            steps.append(Batch(entries[0].index, entries[-1].index + 1, reason))
    return Plan(program=program, steps=tuple(steps))
