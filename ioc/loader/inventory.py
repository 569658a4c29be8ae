"""Inventories (INI, YAML, directories, ``a,b,`` host lists) → :class:`Inventory`.

Also the variable queries the controller needs on an inventory:
:func:`host_vars` (group and host variables merged as Ansible merges them),
:func:`groups_dict` (the ``groups`` magic variable) and :func:`group_names`.
Host patterns live in :mod:`ioc.loader.patterns` and are re-exported here.
"""
from __future__ import annotations

import ast
import os
import re
import shlex
from dataclasses import dataclass, field
from typing import AbstractSet, Any, Iterable, Mapping, Optional, Sequence

from ioc.errors import InventoryError, LoadError
from ioc.inventory import (  # noqa: F401  (re-exported)
    ensure_localhost,
    group_names,
    groups_dict,
    host_vars,
    match_hosts,
)
from ioc.loader.roles import read_vars_file
from ioc.loader.yamlsrc import load_yaml_file, location_of, plain, written_text
from ioc.model import Group, Host, Inventory, Location

__all__ = [
    "load_inventory", "add_vars_dirs", "vars_dirs", "implicit_localhost_inventory", "host_vars",
    "groups_dict", "group_names", "match_hosts", "ensure_localhost",
]

_YAML_EXTENSIONS = (".yml", ".yaml", ".json")
#: Files a directory inventory skips (Ansible's INVENTORY_IGNORE_EXTS).
_IGNORED_EXTENSIONS = (
    ".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md", ".txt", ".rst", ".orig", ".cfg", ".retry",
)
_VARS_DIRS = ("host_vars", "group_vars")
_RANGE = re.compile(r"\[([0-9a-zA-Z]+):([0-9a-zA-Z]+)(?::([0-9]+))?\]")
_GROUP_KEYS = frozenset(("hosts", "vars", "children"))


@dataclass
class _Group:
    hosts: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    vars: dict[str, Any] = field(default_factory=dict)


class _Builder:
    """Mutable inventory under construction; :meth:`freeze` gives the IR."""

    def __init__(self) -> None:
        self.hosts: dict[str, dict[str, Any]] = {}
        self.groups: dict[str, _Group] = {"all": _Group(), "ungrouped": _Group()}
        #: The file (or host list) being read: a host it brings first gets
        #: ``inventory_file`` and ``inventory_dir`` (None for a host list),
        #: as Ansible's ``InventoryData.add_host`` sets them.
        self.source: str | None = None

    def group(self, name: str) -> _Group:
        return self.groups.setdefault(name, _Group())

    def add_host(self, name: str, group: str, variables: Mapping[str, Any]) -> None:
        if name not in self.hosts and self.source is not None:
            is_path = os.path.exists(self.source)
            self.hosts[name] = {"inventory_file": self.source,
                                "inventory_dir": os.path.dirname(self.source) if is_path
                                else None}
        self.hosts.setdefault(name, {}).update(variables)
        members = self.group(group).hosts
        if name not in members:
            members.append(name)

    def add_child(self, parent: str, child: str) -> None:
        self.group(child)
        children = self.group(parent).children
        if child not in children and child != parent:
            children.append(child)

    def freeze(self, implicit_localhost: bool = False) -> Inventory:
        grouped = {h for name, g in self.groups.items() if name not in ("all", "ungrouped") for h in g.hosts}
        ungrouped = self.groups["ungrouped"]
        ungrouped.hosts = [h for h in self.hosts if h not in grouped]
        has_parent = {c for g in self.groups.values() for c in g.children}
        top = self.groups["all"]
        # (only the hosts a source put in `all` itself, as Ansible's `all` group
        # holds them: the others are its through `ungrouped` and the groups)
        top.hosts = list(dict.fromkeys(top.hosts))
        top.children = [n for n in self.groups if n != "all" and n not in has_parent]
        return Inventory(
            hosts={name: Host(name, v) for name, v in self.hosts.items()},
            groups={n: Group(n, tuple(g.hosts), tuple(g.children), g.vars) for n, g in self.groups.items()},
            implicit_localhost=implicit_localhost,
        )


# ---------------------------------------------------------------- loading


def load_inventory(sources: Sequence[str]) -> Inventory:
    """Load and merge inventory sources, in order.

    A source is an INI file, a YAML file (``.yml``/``.yaml``/``.json``), a
    directory (every inventory file in it, in name order) or, when no such
    path exists and it contains a comma, a host list (``"h1,h2,"``).
    ``host_vars/`` and ``group_vars/`` beside each file (inside a directory
    source) are applied. Raises :class:`InventoryError` naming ``file:line``.
    """
    builder = _Builder()
    vars_dirs: list[str] = []
    for source in sources:
        vars_dirs.append(_load_source(builder, source))
    inventory = builder.freeze()
    for directory in vars_dirs:
        inventory = add_vars_dirs(inventory, directory)
    return inventory


def vars_dirs(sources: Sequence[str]) -> list[str]:
    """The directories whose ``host_vars/``/``group_vars/`` apply to ``sources``, in order."""
    out = []
    for source in sources:
        if os.path.isdir(source):
            out.append(source)
        elif os.path.isfile(source):
            out.append(os.path.dirname(os.path.abspath(source)))
    return out


def _load_source(builder: _Builder, source: str) -> str:
    """Load one source; return the directory its host_vars/group_vars are in."""
    if os.path.isdir(source):
        for entry in sorted(os.listdir(source)):
            path = os.path.join(source, entry)
            if os.path.isfile(path) and not _ignored(entry):
                builder.source = os.path.abspath(path)
                _load_file(builder, path)
        builder.source = None
        return source
    if os.path.isfile(source):
        builder.source = os.path.abspath(source)
        _load_file(builder, source)
        builder.source = None
        return os.path.dirname(os.path.abspath(source))
    if "," in source:
        builder.source = source
        for name in (n.strip() for n in source.split(",")):
            if name:
                builder.add_host(name, "ungrouped", {})
        builder.source = None
        return ""
    raise InventoryError("inventory source not found", Location(source))


def _ignored(name: str) -> bool:
    return name.startswith(".") or name.endswith(_IGNORED_EXTENSIONS)


def _load_file(builder: _Builder, path: str) -> None:
    if path.endswith(_YAML_EXTENSIONS):
        _load_yaml_inventory(builder, path)
    else:
        _IniReader(builder, path).read()


def implicit_localhost_inventory() -> Inventory:
    """The inventory used when none is given: only ``localhost``, connected locally.

    ``implicit_localhost`` is set: patterns like ``all`` do not match it
    (as in Ansible); only ``localhost`` does.
    """
    builder = _Builder()
    builder.add_host("localhost", "ungrouped", {"ansible_connection": "local"})
    return builder.freeze(implicit_localhost=True)


# ---------------------------------------------------------------- INI


#: A section header, with an optional comment after it (``[web]  # frontends``).
_SECTION = re.compile(r"^\[([^\]]*)\]\s*(?:[#;].*)?$")


class _IniReader:
    """Ansible's INI inventory: ``[g]``, ``[g:vars]``, ``[g:children]`` sections."""

    def __init__(self, builder: _Builder, path: str) -> None:
        self.builder = builder
        self.path = path
        self.group = "ungrouped"
        self.kind = "hosts"
        self.line = 0

    def read(self) -> None:
        try:
            with open(self.path, encoding="utf-8") as stream:
                lines = stream.read().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InventoryError("cannot read inventory: %s" % exc, Location(self.path)) from exc
        for self.line, raw in enumerate(lines, start=1):
            text = raw.strip()
            if text and text[0] not in "#;":
                self._line(text)

    def _error(self, message: str) -> InventoryError:
        return InventoryError(message, Location(self.path, self.line))

    def _line(self, text: str) -> None:
        section = _SECTION.match(text)
        if section:
            self._section(section.group(1).strip())
        elif text.startswith("["):
            # Ansible's ini plugin fails on it and Ansible goes on with no
            # inventory from this file (only a warning): an error here.
            raise self._error("Invalid section entry: %r. Please make sure that there are no "
                              "spaces or other characters in the section entry" % text)
        elif self.kind == "hosts":
            self._hosts_line(text)
        elif self.kind == "vars":
            self._vars_line(text)
        else:
            self._children_line(text)

    def _section(self, header: str) -> None:
        name, _, kind = header.partition(":")
        kind = kind or "hosts"
        if kind not in ("hosts", "vars", "children"):
            raise self._error("invalid section [%s]: expected :vars or :children" % header)
        if not name or " " in name:
            raise self._error("invalid group name %r" % name)
        self.group, self.kind = name, kind
        self.builder.group(name)

    def _hosts_line(self, text: str) -> None:
        try:
            tokens = shlex.split(text, comments=True)
        except ValueError as exc:
            raise self._error("cannot parse host line %r: %s" % (text, exc)) from exc
        if not tokens:
            return
        variables: dict[str, Any] = {}
        for token in tokens[1:]:
            key, sep, value = token.partition("=")
            if not sep or not key:
                raise self._error("expected key=value host variable, got %r" % token)
            variables[key] = written_text(_ini_value(value), self._origin())
        names, port = _split_port(tokens[0])
        if port is not None:
            variables.setdefault("ansible_port", port)
        for name in _expand_ranges(names, self._error):
            self.builder.add_host(name, self.group, variables)

    def _vars_line(self, text: str) -> None:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise self._error("expected key=value, got %r" % text)
        self.builder.group(self.group).vars[key.strip()] = written_text(
            _ini_value(value.strip()), self._origin())

    def _origin(self) -> str:
        """Where the line being read is (Ansible's INI values carry their line only)."""
        return "%s:%d" % (os.path.abspath(self.path), self.line)

    def _children_line(self, text: str) -> None:
        name = text.split("#", 1)[0].strip()
        if " " in name:
            raise self._error("invalid child group name %r" % name)
        self.builder.add_child(self.group, name)


def _ini_value(text: str) -> Any:
    """INI values are Python literals when they parse as one, else strings."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def _split_port(pattern: str) -> tuple[str, int | None]:
    """``host:22`` → (``host``, 22); IPv6 addresses and ranges are left alone."""
    if pattern.count(":") == 1 or (pattern.count(":") > 1 and "]" in pattern.rsplit(":", 1)[0]):
        head, _, tail = pattern.rpartition(":")
        if tail.isdigit() and not head.endswith("["):
            return head, int(tail)
    return pattern, None


def _expand_ranges(pattern: str, error: Any) -> list[str]:
    """``web[01:03]`` → web01, web02, web03 (also ``[a:c]`` and ``[1:9:2]``)."""
    match = _RANGE.search(pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[:match.start()], pattern[match.end():]
    names: list[str] = []
    for item in _range_items(match.group(1), match.group(2), match.group(3), pattern, error):
        names.extend(_expand_ranges(head + item + tail, error))
    return names


def _range_items(start: str, end: str, stride: str | None, pattern: str, error: Any) -> list[str]:
    step = int(stride or 1)
    if start.isdigit() and end.isdigit():
        width = len(start) if start.startswith("0") else 0
        return [str(i).zfill(width) for i in range(int(start), int(end) + 1, step)]
    if len(start) == 1 and len(end) == 1 and start.isalpha() and end.isalpha():
        return [chr(c) for c in range(ord(start), ord(end) + 1, step)]
    raise error("invalid host range in %r" % pattern)


# ---------------------------------------------------------------- YAML


def _load_yaml_inventory(builder: _Builder, path: str) -> None:
    try:
        data = load_yaml_file(path)
    except LoadError as exc:
        raise InventoryError(exc.message, exc.location) from exc
    if data is None:
        return
    if not isinstance(data, Mapping):
        raise InventoryError("a YAML inventory must be a mapping of groups", Location(path, 1))
    for name, body in data.items():
        _yaml_group(builder, str(name), body, location_of(data, Location(path, 1)))


def _yaml_group(builder: _Builder, name: str, body: Any, where: Location) -> None:
    group = builder.group(name)
    if body is None:
        return
    where = location_of(body, where)
    if not isinstance(body, Mapping):
        raise InventoryError("group %r must be a mapping" % name, where)
    unknown = [k for k in body if k not in _GROUP_KEYS]
    if unknown:
        raise InventoryError(
            "group %r has invalid key(s) %s (expected hosts, vars, children)"
            % (name, ", ".join(map(repr, unknown))),
            where,
        )
    group.vars.update(plain(_mapping(body.get("vars"), "vars of group %r" % name, where)))
    for pattern, host_data in _mapping(body.get("hosts"), "hosts of %r" % name, where).items():
        variables = plain(_mapping(host_data, "host %r" % pattern, where))
        for host in _expand_ranges(str(pattern), lambda m: InventoryError(m, where)):
            builder.add_host(host, name, variables)
    for child, child_body in _mapping(body.get("children"), "children of %r" % name, where).items():
        if name != "all":
            builder.add_child(name, str(child))
        _yaml_group(builder, str(child), child_body, where)


def _mapping(value: Any, what: str, where: Location) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InventoryError("%s must be a mapping" % what, location_of(value, where))
    return value


# ---------------------------------------------------------------- host_vars / group_vars


def add_vars_dirs(inventory: Inventory, directory: str,
                  only: Optional[AbstractSet[str]] = None) -> Inventory:
    """Apply ``<directory>/host_vars`` and ``<directory>/group_vars`` to ``inventory``.

    Called by :func:`load_inventory` for each inventory source and by the CLI
    for the playbook's directory (whose files win, being applied later).
    ``<name>.yml``, ``.yaml``, ``.json``, a bare ``<name>`` file and a
    ``<name>/`` directory of such files are read; only hosts and groups that
    exist in the inventory are affected; with ``only``, only those of these names
    (hosts and groups that add_host or group_by created during the run).
    """
    if not directory:
        return inventory
    hosts = {
        name: Host(name, {**host.vars, **_dir_vars(directory, "host_vars", name)})
        if only is None or name in only else host
        for name, host in inventory.hosts.items()
    }
    groups = {
        name: Group(name, g.hosts, g.children, {**g.vars, **_dir_vars(directory, "group_vars", name)})
        if only is None or name in only else g
        for name, g in inventory.groups.items()
    }
    return Inventory(hosts=hosts, groups=groups, implicit_localhost=inventory.implicit_localhost)


def _dir_vars(directory: str, kind: str, name: str) -> dict[str, Any]:
    base = os.path.join(directory, kind)
    merged: dict[str, Any] = {}
    for path in _vars_paths(base, name):
        try:
            merged.update(read_vars_file(path))
        except LoadError as exc:
            if isinstance(exc, InventoryError):
                raise
            raise InventoryError(exc.message, exc.location) from exc
    return merged


def _vars_paths(base: str, name: str) -> Iterable[str]:
    for ext in ("",) + _YAML_EXTENSIONS:
        path = os.path.join(base, name + ext)
        if os.path.isfile(path):
            yield path
    folder = os.path.join(base, name)
    if os.path.isdir(folder):
        for root, dirs, files in os.walk(folder):
            dirs.sort()
            for entry in sorted(files):
                if not _ignored(entry):
                    yield os.path.join(root, entry)
