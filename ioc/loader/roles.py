"""Finding roles on disk and reading their files.

This module only reads: :func:`find_role` locates a role directory and
:func:`read_role` returns its raw YAML pieces. Turning the pieces into IR
(blocks, inherited keywords, handlers) is done by :mod:`ioc.loader.tasks`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ioc.errors import LoadError
from ioc.model import Location
from ioc.loader.yamlsrc import load_yaml_file, location_of, plain, written_vars

__all__ = ["RoleFiles", "RoleSearch", "find_role", "find_main", "read_role", "read_vars_file"]

_EXTENSIONS = (".yml", ".yaml", "", ".json")


@dataclass(frozen=True)
class RoleSearch:
    """Where roles are found besides the playbook's own ``roles/``, as Ansible looks.

    The front end fills it from Ansible's configuration: ``roles_path``, and
    the lookup of a role in a collection (``ns.coll.role``, or a short name
    inside a collection role), which only Ansible's collection finder can do
    (this package does not import ``ansible``).
    """

    #: ``roles_path`` (``DEFAULT_ROLES_PATH``), searched after ``<playbook dir>/roles``.
    roles_path: tuple[str, ...] = ()
    #: ``(name, collections) -> (short name, directory, collection)`` or None
    #: (Ansible's ``_get_collection_role_path``); None: no collections.
    in_collections: Callable[[str, tuple[str, ...]], tuple[str, str, str] | None] | None = None
    #: ``DEFAULT_PRIVATE_ROLE_VARS`` when set (None: not set): whether a role
    #: without ``public:`` keeps its vars and defaults to its own tasks. Not
    #: set, imported roles are public and included ones private.
    private_role_vars: bool | None = None


@dataclass(frozen=True)
class RoleFiles:
    """The raw content of one role, as read from its directory."""

    name: str
    #: Absolute role directory.
    path: str
    tasks: Any = None
    tasks_file: str | None = None
    handlers: Any = None
    handlers_file: str | None = None
    vars: Mapping[str, Any] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    #: The ``dependencies`` list of meta/main.yml, entries unparsed.
    dependencies: Sequence[Any] = ()
    allow_duplicates: bool = False
    #: The ``collections`` of meta/main.yml: where the role's short action names
    #: are looked up (after its own collection).
    collections: tuple[str, ...] = ()
    #: The role's ``argument_specs`` (entry point -> spec), from
    #: ``meta/argument_specs.yml`` or else ``meta/main.yml``.
    argument_specs: Mapping[str, Any] = field(default_factory=dict)


def find_role(name: str, search_dirs: Sequence[str], where: Location) -> str:
    """The absolute directory of role ``name``; the first search dir wins.

    ``name`` may also be a path (relative names are tried in each search
    dir). Raises :class:`LoadError` at ``where`` listing the places tried.
    """
    for base in search_dirs:
        candidate = os.path.abspath(os.path.join(base, name))
        if os.path.isdir(candidate):
            return candidate
    raise LoadError("The role %r was not found in: %s"  # ansible-core's words
                    % (name, ":".join(os.path.abspath(base) for base in search_dirs)),
                    where, exit_code=1)


def find_main(directory: str, stem: str = "main") -> str | None:
    """``<dir>/<stem>.yml``, ``.yaml``, bare, ``.json`` or ``<stem>/`` — first found.

    A directory is returned as is; :func:`read_vars_file` reads every file in
    it (``vars/main/*.yml``), which Ansible allows for vars and defaults.
    """
    for ext in _EXTENSIONS:
        candidate = os.path.join(directory, stem + ext)
        if os.path.isfile(candidate):
            return candidate
    candidate = os.path.join(directory, stem)
    return candidate if os.path.isdir(candidate) else None


def read_vars_file(path: str) -> dict[str, Any]:
    """Variables from a YAML file (or a directory of them, merged in name order).

    An empty file gives ``{}``; anything but a mapping is a :class:`LoadError`.
    """
    if os.path.isdir(path):
        merged: dict[str, Any] = {}
        for entry in sorted(os.listdir(path)):
            if entry.endswith((".yml", ".yaml", ".json")) or "." not in entry:
                merged.update(read_vars_file(os.path.join(path, entry)))
        return merged
    data = load_yaml_file(path)
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise LoadError(
            "a vars file must contain a mapping, got %s" % type(data).__name__,
            location_of(data, Location(path, 1)),
        )
    return written_vars(data)


def read_role(
    name: str,
    path: str,
    where: Location,
    tasks_from: str = "main",
    vars_from: str = "main",
    defaults_from: str = "main",
    handlers_from: str = "main",
) -> RoleFiles:
    """Read the tasks, handlers, vars, defaults and meta of the role at ``path``.

    Missing ``main`` files are fine (a role may have only defaults); a
    missing ``tasks_from``/``vars_from``/... file that was asked for by name
    is a :class:`LoadError` at ``where``.
    """
    tasks_file = _pick(path, "tasks", tasks_from, where)
    handlers_file = _pick(path, "handlers", handlers_from, where)
    vars_file = _pick(path, "vars", vars_from, where)
    defaults_file = _pick(path, "defaults", defaults_from, where)
    meta = _read_meta(path)
    return RoleFiles(
        name=name,
        path=path,
        tasks=load_yaml_file(tasks_file) if tasks_file else None,
        tasks_file=tasks_file,
        handlers=load_yaml_file(handlers_file) if handlers_file else None,
        handlers_file=handlers_file,
        vars=read_vars_file(vars_file) if vars_file else {},
        defaults=read_vars_file(defaults_file) if defaults_file else {},
        dependencies=_dependencies(meta),
        allow_duplicates=bool(meta.get("allow_duplicates", False)),
        collections=_collections(meta),
        argument_specs=_argument_specs(path, meta),
    )


def _pick(role_path: str, subdir: str, stem: str, where: Location) -> str | None:
    found = find_main(os.path.join(role_path, subdir), stem)
    if found is None and stem != "main":
        raise LoadError(
            "role file %s/%s not found in %s" % (subdir, stem, role_path), where
        )
    if found is not None and subdir in ("tasks", "handlers") and os.path.isdir(found):
        return None
    return found


def _read_meta(role_path: str) -> Mapping[str, Any]:
    meta_file = find_main(os.path.join(role_path, "meta"))
    if meta_file is None or os.path.isdir(meta_file):
        return {}
    data = load_yaml_file(meta_file)
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise LoadError("meta/main.yml must contain a mapping", location_of(data, Location(meta_file, 1)))
    return data


def _argument_specs(role_path: str, meta: Mapping[str, Any]) -> Mapping[str, Any]:
    """``Role._get_role_argspecs``: ``meta/argument_specs.{yml,yaml,json}`` wins over
    ``meta/main.yml``'s ``argument_specs``; the files are not merged."""
    for ext in (".yml", ".yaml", ".json"):
        candidate = os.path.join(role_path, "meta", "argument_specs" + ext)
        if os.path.exists(candidate):
            data = load_yaml_file(candidate)
            return plain(data.get("argument_specs") or {}) if isinstance(data, Mapping) else {}
    specs = meta.get("argument_specs") or {}
    return plain(specs) if isinstance(specs, Mapping) else {}


def _dependencies(meta: Mapping[str, Any]) -> Sequence[Any]:
    deps = meta.get("dependencies") or []
    if not isinstance(deps, list):
        raise LoadError("'dependencies' must be a list", location_of(meta, Location("meta/main.yml")))
    return tuple(deps)


def _collections(meta: Mapping[str, Any]) -> tuple[str, ...]:
    value = meta.get("collections") or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise LoadError("'collections' must be a list of collection names",
                        location_of(meta, Location("meta/main.yml")))
    return tuple(value)
