"""``--list-hosts``, ``--list-tasks`` and ``--list-tags``, printed as ``ansible-playbook`` prints them."""
from __future__ import annotations

from typing import Callable, List, Optional, Sequence, Set

from ioc.model import Block, Node, Playbook, Task
from ioc.planner import TagFilter

__all__ = ["listing"]


def listing(playbook: Playbook, hosts_of: Optional[Callable[[str], Sequence[str]]],
            tags: Optional[TagFilter], list_tasks: bool, list_tags: bool) -> str:
    """The text for one playbook: each play, its hosts (``hosts_of``), tasks or tags.

    ``tags``: the tasks ``--tags``/``--skip-tags`` select (for ``--list-tags``
    without either, every tag including ``never``, as Ansible does).
    """
    out = "\nplaybook: %s\n" % playbook.path
    for number, play in enumerate(playbook.plays, 1):
        play_tags = set(play.tags)
        out += "\n  play #%d (%s): %s\tTAGS: [%s]" % (number, play.hosts, play.name,
                                                    ",".join(sorted(play_tags)))
        if hosts_of is not None:
            hosts = list(hosts_of(play.hosts))
            out += "\n    pattern: %s\n    hosts (%d):" % ([play.hosts], len(hosts))
            out += "".join("\n      %s" % host for host in hosts)
        out += "\n"
        if not (list_tasks or list_tags):
            continue
        seen: Set[str] = set()
        lines: List[str] = ["    tasks:\n"] if list_tasks else []
        for task in _tasks(play.pre_tasks + play.tasks + play.post_tasks):
            if tags is not None and not tags.selects(set(task.tags)):
                continue
            seen.update(task.tags)
            if list_tasks:
                shown = "%s : %s" % (task.role, task.name) if task.role and task.name else (
                    task.name or task.action_written or task.action)
                lines.append("      %s\tTAGS: [%s]\n"
                             % (shown, ", ".join(sorted(play_tags | set(task.tags)))))
        if list_tags:
            lines.append("      TASK TAGS: [%s]\n" % ", ".join(sorted(play_tags | seen)))
        out += "".join(lines)
    return out


def _tasks(nodes: Sequence[Node]) -> List[Task]:
    """Every task as the iterator lists them: an include is one task."""
    out: List[Task] = []
    for node in nodes:
        if isinstance(node, Task):
            out.append(node)
        elif isinstance(node, Block) and node.include is not None:
            out.append(node.include)
        else:
            out.extend(_tasks(tuple(node.block) + tuple(node.rescue) + tuple(node.always)))
    return out
