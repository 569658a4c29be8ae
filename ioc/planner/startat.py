"""``--start-at-task``: a playbook without the tasks before the named one.

Ansible's ``PlayIterator`` walks each host's tasks (peeking, running
nothing) until one whose name -- or its ``role : name`` -- equals the given
name or matches it as a shell pattern; that task and everything after it
run, and once a play has matched, later plays run whole. An include is one
task there (what it includes is not seen: "--start-at-task can only follow
static includes"). Fact gathering and handlers are not tasks it skips in
the play that matches; a play before it, where nothing matches, runs
nothing at all, fact gathering included.
"""
from __future__ import annotations

import dataclasses
import fnmatch
from typing import Any, Dict, List, Optional, Tuple

from ioc.model import Node, Play, Playbook, Task

__all__ = ["start_at_task"]


def start_at_task(playbook: Playbook, name: str) -> Tuple[Playbook, bool]:
    """``playbook`` from the first task matching ``name``; and whether one did."""
    plays: List[Play] = []
    found = False
    for play in playbook.plays:
        if found:
            plays.append(play)
            continue
        sections: Dict[str, Any] = {}
        for section in ("pre_tasks", "tasks", "post_tasks"):
            if found:
                sections[section] = getattr(play, section)
                continue
            kept, found = _from_match(getattr(play, section), name)
            sections[section] = kept
        if not found:
            # the iterator walked every host past the play's last task: it
            # runs nothing, not even fact gathering
            sections["gather_facts"] = False
        plays.append(dataclasses.replace(play, **sections))
    return dataclasses.replace(playbook, plays=tuple(plays)), found


def _from_match(nodes: Tuple[Node, ...], name: str) -> Tuple[Tuple[Node, ...], bool]:
    for index, node in enumerate(nodes):
        kept = _node_from_match(node, name)
        if kept is not None:
            return (kept,) + tuple(nodes[index + 1:]), True
    return (), False


def _node_from_match(node: Node, name: str) -> Optional[Node]:
    """``node`` cut to start at the match, or None when no task in it matches."""
    if isinstance(node, Task):
        return node if _matches(node, name) else None
    if node.include is not None:  # an include is one task to the iterator
        return node if _matches(node.include, name) else None
    for section in ("block", "always"):
        kept, found = _from_match(getattr(node, section), name)
        if found:
            if section == "block":
                return dataclasses.replace(node, block=kept)
            return dataclasses.replace(node, block=(), rescue=(), always=kept)
    return None


def _matches(task: Task, name: str) -> bool:
    names = [n for n in (task.name, task.display_name) if n]
    return any(n == name or fnmatch.fnmatch(n, name) for n in names)
