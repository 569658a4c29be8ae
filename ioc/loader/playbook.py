"""Playbook files → :class:`ioc.model.Playbook`.

:func:`load_playbook` reads a playbook, splices in ``import_playbook``s,
reads ``vars_files``, expands ``roles:`` and static imports, and resolves
keyword inheritance (see :mod:`ioc.loader.tasks`), so the IR it returns needs
no further file access except for templates and files a task names.
"""
from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from ioc.errors import LoadError
from ioc.loader.roles import RoleSearch, read_vars_file
from ioc.loader.substitute import render_static
from ioc.loader.tasks import (
    INHERITABLE, PlayState, Scope, canonical_action, check_debugger, collections_of,
    conditions, expand_roles_section, module_defaults_of, parse_handlers, parse_tasks,
    tag_list, to_bool, union, var_origins, vars_of,
)
from ioc.loader.yamlsrc import (
    item_locations, key_location, load_yaml_file, location_of, plain, value_location,
)
from ioc.model import Location, Play, Playbook

__all__ = ["load_playbook", "load_playbook_data"]

log = logging.getLogger(__name__)

#: Valid play keywords ioc-run would accept and IGNORE, with a warning: none
#: ("no silent difference", tests/unit/test_keyword_coverage.py).
PLAY_IGNORED: frozenset = frozenset()
#: What the implicit fact gathering takes from the play (Ansible's PlayIterator).
GATHER_KEYWORDS = ("gather_subset", "gather_timeout", "fact_path")
#: ``strategy`` values that are the linear semantics ioc-run runs plays with.
LINEAR_STRATEGIES = frozenset((
    "linear", "ansible.builtin.linear", "ansible.legacy.linear", "mitogen_batch", "mitogen_linear",
))
PLAY_KEYWORDS = frozenset((
    "hosts", "name", "vars", "vars_files", "gather_facts", "pre_tasks", "roles",
    "tasks", "post_tasks", "handlers", "serial", "max_fail_percentage",
    "force_handlers", "order", "tags", "strategy", "port", "collections",
    "module_defaults", "debugger", "vars_prompt",
)) | frozenset(GATHER_KEYWORDS) | (frozenset(INHERITABLE) - {"delegate_to"}) | PLAY_IGNORED
BECOME_KEYWORDS = ("become", "become_user", "become_method", "become_flags", "become_exe")
_IMPORT_PLAYBOOK_KEYS = frozenset(("name", "vars", "when", "tags"))


@dataclass(frozen=True)
class _Overlay:
    """What the ``import_playbook`` entries around a playbook add to its plays."""

    vars: Mapping[str, Any] = field(default_factory=dict)
    when: tuple[Any, ...] = ()
    tags: tuple[str, ...] = ()
    chain: tuple[str, ...] = ()
    #: Where roles are found (``roles_path``, collections); not an overlay,
    #: but handed to every imported playbook the same way.
    search: RoleSearch = field(default_factory=RoleSearch)
    #: ``gathering = explicit``: a play without ``gather_facts`` gathers none.
    gather_default: bool = True
    #: ``--force-handlers`` / ``force_handlers`` in ansible.cfg: the play keyword's default.
    force_handlers_default: bool = False
    #: Keyword defaults from the command line and ansible.cfg (``-b``,
    #: ``--become-user``, ...): a play, block or task that sets one wins.
    defaults: Mapping[str, Any] = field(default_factory=dict)


def load_playbook(path: str, extra_vars: Mapping[str, Any] | None = None,
                  search: RoleSearch | None = None, gather_default: bool = True,
                  defaults: Mapping[str, Any] | None = None,
                  force_handlers: bool = False) -> Playbook:
    """Load the playbook at ``path`` into IR.

    ``extra_vars`` are only used to resolve ``{{ name }}`` in file names
    (``vars_files``, ``import_tasks``, ``import_playbook``); they are not
    stored in the IR. ``search`` says where roles are besides ``roles/``
    beside the playbook; ``gather_default`` is ``gather_facts`` for a play
    that does not say (False for Ansible's ``gathering = explicit``), and
    ``force_handlers`` the play keyword's default (``--force-handlers``). Raises
    :class:`LoadError` whose ``str()`` starts with ``file:line:`` for any
    problem in the playbook, its imports or its roles.
    """
    overlay = _Overlay(search=search or RoleSearch(), gather_default=gather_default,
                       force_handlers_default=force_handlers, defaults=dict(defaults or {}))
    plays = _load_plays(os.path.abspath(path), dict(extra_vars or {}), overlay, None)
    return Playbook(path=path, plays=plays)


def load_playbook_data(data: Any, path: str, extra_vars: Mapping[str, Any] | None = None,
                       search: RoleSearch | None = None,
                       defaults: Mapping[str, Any] | None = None) -> Playbook:
    """A playbook given as data (a list of plays) instead of a file, as
    ``ansible``'s ad-hoc command builds one: ``path`` names it in messages and
    its directory is the playbook directory (relative file names, ``files/``).
    """
    overlay = _Overlay(search=search or RoleSearch(), defaults=dict(defaults or {}))
    plays = _plays_of(data, os.path.abspath(path), dict(extra_vars or {}), overlay)
    return Playbook(path=path, plays=plays)


def _load_plays(
    path: str, extra_vars: Mapping[str, Any], overlay: _Overlay, where: Location | None
) -> tuple[Play, ...]:
    if not os.path.isfile(path):
        raise LoadError("playbook not found: %s" % path, where or Location(path))
    if path in overlay.chain:
        raise LoadError("import_playbook cycle: %s" % " -> ".join(overlay.chain + (path,)), where)
    overlay = dataclasses.replace(overlay, chain=overlay.chain + (path,))
    return _plays_of(load_yaml_file(path), path, extra_vars, overlay)


def _plays_of(data: Any, path: str, extra_vars: Mapping[str, Any],
              overlay: _Overlay) -> tuple[Play, ...]:
    if not data:
        raise LoadError("empty playbook, nothing to do", Location(path, 1))
    if not isinstance(data, list):
        raise LoadError("a playbook must be a list of plays", location_of(data, Location(path, 1)))
    plays: list[Play] = []
    for entry in data:
        if not isinstance(entry, Mapping):
            raise LoadError("a play must be a mapping, got %s" % type(entry).__name__, Location(path))
        import_key = _import_key(entry)
        if import_key is None:
            plays.append(_load_play(entry, path, extra_vars, overlay))
        else:
            plays.extend(_import_playbook(entry, import_key, path, extra_vars, overlay))
    return tuple(plays)


def _import_key(entry: Mapping[str, Any]) -> str | None:
    for key in entry:
        if canonical_action(str(key)) == "import_playbook":
            return str(key)
    return None


def _import_playbook(
    entry: Mapping[str, Any], key: str, path: str, extra_vars: Mapping[str, Any], overlay: _Overlay
) -> tuple[Play, ...]:
    """Plays of an imported playbook; the import's vars, when and tags apply to each."""
    where = location_of(entry, Location(path))
    bad = [k for k in entry if k != key and k not in _IMPORT_PLAYBOOK_KEYS]
    if bad:
        raise LoadError(
            "import_playbook does not support %s" % ", ".join(map(repr, bad)),
            key_location(entry, bad[0], where),
        )
    target = entry[key]
    if not isinstance(target, str) or not target:
        raise LoadError("import_playbook needs a file name", where)
    merged_vars = {**overlay.vars, **vars_of(entry, where)}
    rendered = render_static(target, {**merged_vars, **extra_vars}, where)
    inner = dataclasses.replace(
        overlay,
        vars=merged_vars,
        when=overlay.when + conditions(entry.get("when"), where),
        tags=union(overlay.tags, tag_list(entry.get("tags"), where)),
    )
    full = os.path.abspath(os.path.join(os.path.dirname(path), rendered))
    return _load_plays(full, extra_vars, inner, where)


def _load_play(ds: Mapping[str, Any], path: str, extra_vars: Mapping[str, Any], overlay: _Overlay) -> Play:
    where = location_of(ds, Location(path))
    _check_play_keys(ds, where)
    hosts = _hosts(ds, where)
    play_vars = {**vars_of(ds, where), **overlay.vars}
    files_vars = _vars_files(ds, os.path.dirname(path), {**play_vars, **extra_vars}, where)
    state = PlayState(
        playbook_dir=os.path.dirname(path),
        static_vars={**play_vars, **files_vars, **extra_vars},
        search=overlay.search,
    )
    tags = union(overlay.tags, tag_list(ds.get("tags"), where))
    scope = Scope(
        play=state,
        path=path,
        when=overlay.when,
        tags=tags,
        inherited={**overlay.defaults, **{k: ds[k] for k in INHERITABLE if ds.get(k) is not None}},
        module_defaults=module_defaults_of(ds, where),
        collections=collections_of(ds, where, None),
    )
    pre_tasks = _tasks_section(ds, "pre_tasks", scope, where)
    roles = expand_roles_section(ds.get("roles"), scope, key_location(ds, "roles", where),
                                 item_locations(ds, "roles"))
    tasks = _tasks_section(ds, "tasks", scope, where)
    post_tasks = _tasks_section(ds, "post_tasks", scope, where)
    handler_scope = dataclasses.replace(scope, when=())
    handlers = parse_handlers(ds.get("handlers"), handler_scope, key_location(ds, "handlers", where))
    return Play(
        name=str(ds.get("name") or hosts),
        hosts=hosts,
        location=where,
        name_location=value_location(ds, "name" if ds.get("name") else "hosts", where),
        vars=play_vars,
        var_origins=var_origins(ds),
        vars_files=files_vars,
        role_defaults=state.role_defaults,
        role_vars=state.role_vars,
        role_names=tuple(state.role_names),
        dependent_role_names=tuple(state.dependent_role_names),
        gather_facts=to_bool(ds, "gather_facts", overlay.gather_default, where),
        pre_tasks=pre_tasks,
        tasks=roles + tasks,
        post_tasks=post_tasks,
        handlers=tuple(state.role_handlers) + handlers + tuple(state.included_handlers),
        serial=ds.get("serial"),
        any_errors_fatal=ds.get("any_errors_fatal"),
        max_fail_percentage=ds.get("max_fail_percentage"),
        force_handlers=to_bool(ds, "force_handlers", overlay.force_handlers_default, where),
        ignore_unreachable=ds.get("ignore_unreachable"),
        order=None if ds.get("order") is None else str(ds["order"]),
        tags=tags,
        become={**{k: v for k, v in overlay.defaults.items() if k in BECOME_KEYWORDS},
                **{k: ds[k] for k in BECOME_KEYWORDS if ds.get(k) is not None}},
        environment=ds.get("environment", overlay.defaults.get("environment")),
        remote_user=ds.get("remote_user"),
        connection=ds.get("connection"),
        basedir=os.path.dirname(path),
        vars_prompt=_vars_prompt(ds, where),
        gather_args={k: ds[k] for k in GATHER_KEYWORDS if ds.get(k) is not None},
        module_defaults=scope.module_defaults,
        collections=scope.collections,
        port=_port(ds, where),
    )


def _tasks_section(ds: Mapping[str, Any], key: str, scope: Scope, where: Location) -> tuple[Any, ...]:
    return parse_tasks(ds.get(key), scope, key_location(ds, key, where))


def _check_play_keys(ds: Mapping[str, Any], where: Location) -> None:
    unknown = [k for k in ds if k not in PLAY_KEYWORDS]
    if unknown:
        raise LoadError("'%s' is not a valid attribute for a Play" % unknown[0],
                        key_location(ds, unknown[0], where))
    for key in ds:
        if key in PLAY_IGNORED:
            log.warning("%s: play keyword '%s' is not supported by ioc and is ignored", where, key)
    check_debugger(ds, where)
    _check_strategy(ds, where)


def _check_strategy(ds: Mapping[str, Any], where: Location) -> None:
    """``strategy``: the linear ones run as always; any other is refused."""
    if ds.get("strategy") is None:
        return
    value = ds["strategy"]
    if not (isinstance(value, str) and value.strip() in LINEAR_STRATEGIES):
        raise LoadError(
            "ioc-run runs plays with linear semantics; use ansible-playbook for strategy: %s"
            % value, key_location(ds, "strategy", where))


def _port(ds: Mapping[str, Any], where: Location) -> int | None:
    """The play's ``port`` (Ansible's PlayContext port: a host's ``ansible_port`` wins)."""
    value = ds.get("port")
    if value is None:
        return None
    try:
        return int(str(value).strip())
    except ValueError:
        raise LoadError("'port' must be a number, got %r (ioc-run does not template it; set "
                        "ansible_port for the hosts instead)" % (value,),
                        key_location(ds, "port", where)) from None


#: What a ``vars_prompt`` entry may say (Ansible's ``Play._load_vars_prompt``).
PROMPT_KEYS = frozenset(("name", "prompt", "default", "private", "confirm", "encrypt",
                         "salt_size", "salt", "unsafe"))


def _vars_prompt(ds: Mapping[str, Any], where: Location) -> tuple[Mapping[str, Any], ...]:
    """The play's ``vars_prompt`` entries, checked as Ansible checks them at load time."""
    entries = ds.get("vars_prompt")
    if entries is None:
        return ()
    at = key_location(ds, "vars_prompt", where)
    if isinstance(entries, Mapping):
        entries = [entries]
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) for e in entries):
        raise LoadError("vars_prompt must be a list of mappings", at)
    for entry in entries:
        if "name" not in entry:
            raise LoadError("Invalid vars_prompt data structure, missing 'name' key", at)
        for key in entry:
            if key not in PROMPT_KEYS:
                raise LoadError("Invalid vars_prompt data structure, found unsupported key '%s'"
                                % key, at)
    return tuple(plain(dict(entry)) for entry in entries)


def _hosts(ds: Mapping[str, Any], where: Location) -> str:
    value = ds.get("hosts")
    if isinstance(value, list):
        value = ",".join(str(v) for v in value)
    if value is None or value == "":
        raise LoadError("play has no 'hosts'", where)
    return str(value)


def _vars_files(
    ds: Mapping[str, Any], basedir: str, variables: Mapping[str, Any], where: Location
) -> dict[str, Any]:
    """Merged content of ``vars_files``; a nested list means "first that exists"."""
    entries = ds.get("vars_files")
    if entries is None:
        return {}
    at = key_location(ds, "vars_files", where)
    if isinstance(entries, str):
        entries = [entries]
    if not isinstance(entries, list):
        raise LoadError("'vars_files' must be a list of file names", at)
    merged: dict[str, Any] = {}
    for entry in entries:
        choices = entry if isinstance(entry, list) else [entry]
        merged.update(read_vars_file(_first_file(choices, basedir, variables, at)))
    return merged


def _first_file(choices: list[Any], basedir: str, variables: Mapping[str, Any], at: Location) -> str:
    tried: list[str] = []
    for choice in choices:
        if not isinstance(choice, str):
            raise LoadError("'vars_files' entries must be file names", at)
        path = os.path.join(basedir, render_static(choice, variables, at))
        if os.path.isfile(path):
            return path
        tried.append(path)
    raise LoadError("vars file not found: %s" % " or ".join(tried), at)


