"""Queries over the inventory IR: host patterns and per-host variables.

These are pure functions of :class:`ioc.model.Inventory`, used by the loader,
the controller and the CLI alike.

Host patterns: ``all``, groups, hosts, globs, ``~regex``, ``:``/``,``, ``!``, ``&``.

Evaluation follows Ansible's ``InventoryManager``: the terms are reordered as
unions first, then intersections (``&``), then exclusions (``!``); each union
appends the hosts it adds (so ``db,web`` lists db hosts first, each group in
its own order); an unknown name matches nothing.
"""
from __future__ import annotations

import fnmatch
import re
from typing import Any, Callable, Mapping, Sequence

from ioc.errors import InventoryError
from ioc.model import Group, Host, Inventory

__all__ = ["match_hosts", "ensure_localhost", "group_members", "split_pattern", "LOCALHOST_NAMES",
           "host_vars", "groups_dict", "group_names"]

#: Names that mean the controller itself when the inventory does not have them.
LOCALHOST_NAMES = ("localhost", "127.0.0.1", "::1")
_SUBSCRIPT = re.compile(r"^(.+)\[(-?[0-9]*)(?::(-?[0-9]*))?\]$")
_GLOB_CHARS = (".", "?", "*", "[")
_COLON_SPLIT = re.compile(r":(?![^\[]*\])")


def match_hosts(inventory: Inventory, pattern: str, limit: str | None = None) -> tuple[str, ...]:
    """Names of the hosts ``pattern`` selects, narrowed by ``limit`` (``--limit``).

    ``localhost`` (or ``127.0.0.1``) selects the implicit localhost when the
    inventory has no such host: the name is returned and the caller must add
    the host with :func:`ensure_localhost`. An implicit-localhost inventory's
    host is matched only by those names, never by ``all`` or a glob.
    Raises :class:`InventoryError` only for an invalid regex or subscript.
    """
    hosts = _evaluate(inventory, split_pattern(pattern))
    if limit:
        allowed = set(_evaluate(inventory, split_pattern(_limit_text(limit))))
        hosts = [h for h in hosts if h in allowed]
    return tuple(hosts)


def ensure_localhost(inventory: Inventory) -> Inventory:
    """``inventory`` with an implicit ``localhost`` (local connection) if it has none.

    As in Ansible, the added host belongs to no group, so ``all`` does not
    match it, but ``all`` group variables still apply to it.
    """
    if "localhost" in inventory.hosts:
        return inventory
    hosts = dict(inventory.hosts)
    hosts["localhost"] = Host("localhost", {"ansible_connection": "local"})
    return Inventory(hosts=hosts, groups=inventory.groups, implicit_localhost=inventory.implicit_localhost)


def split_pattern(pattern: str) -> list[str]:
    """Terms of a pattern: split on ``,`` if present, else on ``:`` outside ``[]``."""
    text = pattern.strip()
    parts = text.split(",") if "," in text else _COLON_SPLIT.split(text)
    return [p.strip() for p in parts if p.strip()]


def _limit_text(limit: str) -> str:
    if not limit.startswith("@"):
        return limit
    try:
        with open(limit[1:], encoding="utf-8") as stream:
            return ",".join(line.strip() for line in stream if line.strip())
    except OSError as exc:
        raise InventoryError("cannot read limit file: %s" % exc.strerror) from exc


def _evaluate(inventory: Inventory, terms: Sequence[str]) -> list[str]:
    unions = [t for t in terms if t[0] not in "!&"]
    ordered = (unions or ["all"]) + [t for t in terms if t[0] == "&"] + [t for t in terms if t[0] == "!"]
    hosts: list[str] = []
    for term in ordered:
        if term[0] == "!":
            excluded = set(_match_term(inventory, term[1:]))
            hosts = [h for h in hosts if h not in excluded]
        elif term[0] == "&":
            kept = set(_match_term(inventory, term[1:]))
            hosts = [h for h in hosts if h in kept]
        else:
            hosts.extend(h for h in _match_term(inventory, term) if h not in hosts)
    return hosts


def _match_term(inventory: Inventory, term: str) -> list[str]:
    base, subscript = _subscript(term)
    hosts = _enumerate(inventory, base)
    if subscript is not None:
        hosts = hosts[subscript]
    return hosts


def _subscript(term: str) -> tuple[str, slice | None]:
    """``web[0]``, ``web[1:3]``, ``web[-1]`` (not a ``web[01:03]`` range of names)."""
    match = _SUBSCRIPT.match(term)
    if match is None or term.startswith("~"):
        return term, None
    start, end = match.group(2), match.group(3)
    if end is None:
        if not start:
            return term, None
        index = int(start)
        return match.group(1), slice(index, index + 1 if index != -1 else None)
    return match.group(1), slice(int(start) if start else None, int(end) + 1 if end else None)


def _enumerate(inventory: Inventory, term: str) -> list[str]:
    visible = _visible_hosts(inventory)
    matcher = _matcher(term)
    groups = [name for name in inventory.groups if matcher(name)]
    found: list[str] = []
    for name in groups:
        found.extend(h for h in group_members(inventory, name) if h in visible and h not in found)
    if not groups or term.startswith("~") or any(c in term for c in _GLOB_CHARS):
        found.extend(h for h in visible if matcher(h) and h not in found)
    if not found and term in LOCALHOST_NAMES:
        found.append(term)
    return found


def _visible_hosts(inventory: Inventory) -> list[str]:
    """Hosts patterns may select; the implicit localhost is not one of them."""
    if inventory.implicit_localhost:
        return []
    grouped = {h for g in inventory.groups.values() for h in g.hosts}
    return [h for h in inventory.hosts if h in grouped]


def _matcher(term: str) -> Callable[[str], bool]:
    try:
        regex = re.compile(term[1:] if term.startswith("~") else fnmatch.translate(term))
    except re.error as exc:
        raise InventoryError("invalid host pattern %r: %s" % (term, exc)) from exc
    return lambda name: regex.match(name) is not None


def group_members(inventory: Inventory, name: str) -> list[str]:
    """Hosts of group ``name`` and of its descendants, in Ansible's order
    (``Group.get_hosts``): the group's own hosts, then its children's, then
    their children's, level by level, each group's in its order, each host
    once. ``all`` holds itself only the hosts a source or ``add_host`` put
    there: a host ``add_host`` made comes before the parsed ones."""
    hosts: dict[str, None] = {}
    level, seen = [name], {name}
    while level:
        following: list[str] = []
        for current in level:
            group = inventory.groups.get(current)
            if group is None:
                continue
            hosts.update(dict.fromkeys(group.hosts))
            for child in group.children:
                if child not in seen:
                    seen.add(child)
                    following.append(child)
        level = following
    return [h for h in hosts if h in inventory.hosts]


# ---------------------------------------------------------------- queries


def host_vars(inventory: Inventory, host: str) -> dict[str, Any]:
    """Inventory variables of ``host``: ``all`` < groups by (depth, name) < host.

    Raises :class:`InventoryError` for a host that is not in ``inventory``
    (call :func:`ensure_localhost` first for the implicit localhost).
    """
    if host not in inventory.hosts:
        raise InventoryError("unknown host %r" % host)
    merged: dict[str, Any] = dict(inventory.groups["all"].vars)
    depths = _depths(inventory)
    for name in sorted(_groups_of(inventory, host) - {"all"}, key=lambda g: (depths.get(g, 1), g)):
        merged.update(inventory.groups[name].vars)
    merged.update(inventory.hosts[host].vars)
    return merged


def groups_dict(inventory: Inventory) -> dict[str, list[str]]:
    """Ansible's ``groups``: every group → its hosts (children's included), host order."""
    return {name: group_members(inventory, name) for name in inventory.groups}


def group_names(inventory: Inventory, host: str) -> list[str]:
    """Ansible's ``group_names``: the host's groups and their ancestors, sorted.

    ``all`` is left out; ``ungrouped`` is kept for ungrouped hosts, exactly as
    Ansible reports it.
    """
    return sorted(_groups_of(inventory, host) - {"all"})


def via_group_head(inventory: Inventory, host: str) -> str | None:
    """The intermediary ``ioc_via_auto`` gives ``host``: the first host of its
    own group, None when it is that host or has no group of its own.

    Its own group is the first group, in inventory order, that lists the
    host itself (not through a child group); ``all`` and ``ungrouped`` are
    nobody's own group. Each such group thus connects through one of its
    hosts, which the others are reached through.
    """
    for name, group in inventory.groups.items():
        if name in ("all", "ungrouped") or host not in group.hosts:
            continue
        head = next(h for h in group.hosts if h in inventory.hosts) \
            if host in inventory.hosts else None
        return None if head in (None, host) else head
    return None


def _groups_of(inventory: Inventory, host: str) -> set[str]:
    parents: dict[str, set[str]] = {}
    for name, group in inventory.groups.items():
        for child in group.children:
            parents.setdefault(child, set()).add(name)
    result: set[str] = set()
    stack = [n for n, g in inventory.groups.items() if host in g.hosts]
    while stack:
        name = stack.pop()
        if name not in result:
            result.add(name)
            stack.extend(parents.get(name, ()))
    return result


def _depths(inventory: Inventory) -> dict[str, int]:
    """Longest distance of each group from ``all`` (Ansible's group depth)."""
    depths = {"all": 0}
    frontier = ["all"]
    for _ in range(len(inventory.groups)):
        following: list[str] = []
        for name in frontier:
            for child in inventory.groups[name].children if name in inventory.groups else ():
                if depths.get(child, -1) < depths[name] + 1:
                    depths[child] = depths[name] + 1
                    following.append(child)
        if not following:
            break
        frontier = following
    return depths


# ---------------------------------------------------------------- changes at run time


def with_host(inventory: Inventory, name: str, groups: Sequence[str],
              host_vars: Mapping[str, Any]) -> "tuple[Inventory, bool]":
    """``inventory`` after ``add_host``; the flag says whether anything changed."""
    hosts = dict(inventory.hosts)
    changed = name not in hosts
    old = hosts.get(name, Host(name=name))
    merged_vars = {**old.vars, **host_vars}
    changed = changed or merged_vars != dict(old.vars)
    hosts[name] = Host(name=name, vars=merged_vars)
    groups_map = dict(inventory.groups)
    if name not in inventory.hosts:  # (add_dynamic_host: a new host is in `all` itself)
        groups_map = _add_member(groups_map, "all", name, ())
    for group in groups:
        before = groups_map.get(group)
        groups_map = _add_member(groups_map, group, name, ("all",))
        changed = changed or before is None or name not in before.hosts
    if not groups and name not in _all_members(groups_map):
        groups_map = _add_member(groups_map, "ungrouped", name, ("all",))
    return Inventory(hosts=hosts, groups=groups_map,
                     implicit_localhost=inventory.implicit_localhost), changed


def with_group_member(inventory: Inventory, host: str, group: str,
                      parents: Sequence[str] = ("all",)) -> "tuple[Inventory, bool]":
    """``inventory`` after ``group_by``: ``host`` is in ``group`` (created under ``parents``)."""
    before = inventory.groups.get(group)
    groups_map = _add_member(dict(inventory.groups), group, host, tuple(parents) or ("all",))
    changed = before is None or host not in before.hosts
    if changed and before is not None:
        # Hosts reach a group_by's group in the order their results arrive
        # (linear's workers: no order); ioc keeps the group in inventory order.
        rank = {name: number for number, name in enumerate(inventory.hosts)}
        grown = groups_map[group]
        members = sorted(grown.hosts, key=lambda name: rank.get(name, len(rank)))
        groups_map[group] = Group(name=group, hosts=tuple(members), children=grown.children,
                                  vars=grown.vars)
    return Inventory(hosts=inventory.hosts, groups=groups_map,
                     implicit_localhost=inventory.implicit_localhost), changed


def _add_member(groups_map: dict, group: str, host: str, parents: Sequence[str]) -> dict:
    current = groups_map.get(group) or Group(name=group)
    if host not in current.hosts:
        current = Group(name=group, hosts=tuple(current.hosts) + (host,),
                        children=current.children, vars=current.vars)
    groups_map[group] = current
    for parent in parents:
        owner = groups_map.get(parent) or Group(name=parent)
        if group != parent and group not in owner.children:
            groups_map[parent] = Group(name=parent, hosts=owner.hosts,
                                       children=tuple(owner.children) + (group,), vars=owner.vars)
    return groups_map


def _all_members(groups_map: dict) -> set:
    return {h for name, g in groups_map.items() if name not in ("all", "ungrouped") for h in g.hosts}
