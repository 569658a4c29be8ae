"""Task lists → IR: tasks, blocks, static imports and roles, inheritance resolved.

Everything an enclosing play, block, import or role gives its tasks travels
down in a :class:`Scope`: the ``when`` conditions to prepend, the tags to add,
the inheritable keywords to copy where a task leaves them unset, and the role
the tasks belong to. What a play collects on the side (role defaults and role
handlers) goes into the mutable :class:`PlayState` the scopes share.
"""
from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from ioc.errors import IncludeNotFound, LoadError
from ioc.loader.kv import parse_kv
from ioc.loader.roles import RoleFiles, RoleSearch, find_role, read_role
from ioc.loader.substitute import render_static
from ioc.loader.yamlsrc import (key_location, load_yaml_file, location_of, plain,
                                 refuse_unsafe_conditions, value_origins, written_vars)
from ioc.model import Block, IncludeScope, Location, Node, Play, Task

__all__ = [
    "INHERITABLE", "PlayState", "Scope", "parse_tasks", "parse_handlers",
    "expand_roles_section", "canonical_action", "conditions", "tag_list",
    "string_list", "vars_of", "union", "Included", "load_include", "to_bool",
]

log = logging.getLogger(__name__)

#: Keywords copied from the nearest enclosing block/role/import/play.
INHERITABLE = (
    "ignore_errors", "ignore_unreachable", "no_log", "environment", "check_mode",
    "diff", "become", "become_user", "become_method", "become_flags", "become_exe",
    "remote_user", "connection", "delegate_to", "run_once", "any_errors_fatal", "throttle",
    "timeout",
)
#: Valid Ansible keywords ioc-run would accept and IGNORE, with a warning: none
#: ("no silent difference", tests/unit/test_keyword_coverage.py).
IGNORED: frozenset = frozenset()
#: Keywords ioc-run implements that the IR carries other than as inherited values.
SCOPE_HANDLED = frozenset(("module_defaults", "collections", "debugger"))
#: ``debugger`` values ioc-run runs as Ansible does (no debugger).
DEBUGGER_ACCEPTED = frozenset(("never",))
DEBUGGER_REFUSED = ("ioc-run has no interactive task debugger; use ansible-playbook "
                    "(strategy linear) to debug, or set debugger: never")
TASK_KEYWORDS = frozenset((
    "name", "when", "loop", "loop_control", "register", "changed_when",
    "failed_when", "until", "retries", "delay", "notify", "listen", "vars", "tags",
    "delegate_facts", "args", "action", "local_action", "async", "poll",
)) | frozenset(INHERITABLE) | SCOPE_HANDLED | IGNORED
#: What a block, an import or a role entry may carry besides its own content.
SCOPE_KEYWORDS = frozenset(("name", "when", "vars", "tags")) | frozenset(INHERITABLE) | (
    SCOPE_HANDLED | IGNORED
)
BLOCK_KEYWORDS = SCOPE_KEYWORDS | {"block", "rescue", "always"}
#: Modules whose free-form words form the command line (``_raw_params``).
FREEFORM_MODULES = frozenset(("command", "shell", "raw", "script", "win_command", "win_shell"))
#: Modules that accept a free-form word that is not ``k=v``.
RAW_PARAM_MODULES = FREEFORM_MODULES | {
    "include_vars", "include_tasks", "include_role", "import_tasks", "import_role",
    "add_host", "group_by", "set_fact", "meta",
}
_BUILTIN_PREFIXES = ("ansible.builtin.", "ansible.legacy.")


@dataclass
class PlayState:
    """What expanding one play collects besides its task tree."""

    playbook_dir: str
    #: Play vars and extra vars: the only values ``{{ name }}`` in an import path may use.
    static_vars: Mapping[str, Any]
    role_defaults: dict[str, Any] = field(default_factory=dict)
    #: ``vars/`` of the public roles, in load order (``Play.role_vars``).
    role_vars: dict[str, Any] = field(default_factory=dict)
    #: ``Play.role_names`` and ``Play.dependent_role_names``.
    role_names: list[str] = field(default_factory=list)
    dependent_role_names: list[str] = field(default_factory=list)
    role_handlers: list[Task] = field(default_factory=list)
    #: Handlers an include (``include_role``, or an ``import_role`` inside an
    #: ``include_tasks``) brings: Ansible adds them to the play's handlers
    #: when the include runs, after the play's own (``IncludeRole.get_block_list``).
    included_handlers: list[Task] = field(default_factory=list)
    #: Roles already expanded by ``roles:``/dependencies (Ansible runs each once).
    seen_roles: set[tuple[Any, ...]] = field(default_factory=set)
    #: ``roles_path`` and collections (from Ansible's configuration).
    search: RoleSearch = field(default_factory=RoleSearch)

    def mark(self) -> tuple[Any, ...]:
        """What :meth:`rewind` goes back to: loading that failed half-way
        leaves nothing of itself."""
        return (dict(self.role_defaults), dict(self.role_vars), len(self.role_names),
                len(self.dependent_role_names), len(self.role_handlers),
                len(self.included_handlers), set(self.seen_roles))

    def rewind(self, mark: tuple[Any, ...]) -> None:
        defaults, role_vars, names, dependents, handlers, included, seen = mark
        self.role_defaults.clear()
        self.role_defaults.update(defaults)
        self.role_vars.clear()
        self.role_vars.update(role_vars)
        del self.role_names[names:], self.dependent_role_names[dependents:]
        del self.role_handlers[handlers:], self.included_handlers[included:]
        self.seen_roles.clear()
        self.seen_roles.update(seen)


@dataclass(frozen=True)
class Scope:
    """What the enclosing play, blocks, imports and roles hand to the tasks inside."""

    play: PlayState
    #: The file being read (task locations, relative imports).
    path: str
    when: tuple[Any, ...] = ()
    #: Where the conditions of ``when`` were written, aligned at its end
    #: (conditions handed down without a position are not in it).
    when_origins: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    inherited: Mapping[str, Any] = field(default_factory=dict)
    role: str | None = None
    role_path: str | None = None
    #: The collection of the role being read, when it comes from one: its
    #: short role and module names resolve in it first, as in Ansible.
    role_collection: str | None = None
    #: ``tasks`` or ``handlers``: the role subdirectory imports are looked up in.
    section: str = "tasks"
    #: Files being imported, outermost first, to report import cycles.
    chain: tuple[str, ...] = ()
    #: ``module_defaults`` layers, outermost first (Ansible extends the list).
    module_defaults: tuple[Mapping[str, Any], ...] = ()
    #: The ``collections`` keyword in force; None: not set.
    collections: Optional[tuple[str, ...]] = None
    #: Where the enclosing blocks' ``vars`` were written, by name (innermost wins).
    var_origins: Mapping[str, str] = field(default_factory=dict)
    #: The directories of the roles' dependency chain (Ansible's ``dep_chain``:
    #: a role's dependencies and included roles follow it), outermost first.
    role_paths: tuple[str, ...] = ()
    #: The params of the roles this one is read for (a dependency's dependents,
    #: the role an ``import_role`` sits in), outermost first: Ansible's
    #: ``Role.get_role_params(dep_chain)`` gives them to its tasks, below its own.
    role_params: Mapping[str, Any] = field(default_factory=dict)
    #: The defaults of the included (private) roles of that chain, merged
    #: outermost first (a role of the play's has its defaults in the play's):
    #: ``Role.get_default_vars(dep_chain)`` gives them to the role's handlers.
    role_defaults: Mapping[str, Any] = field(default_factory=dict)

    def nested(self, ds: Mapping[str, Any]) -> "Scope":
        """The scope inside a block/import/role written as ``ds``."""
        where = location_of(ds, Location(self.path))
        own = {k: ds[k] for k in INHERITABLE if ds.get(k) is not None}
        if "environment" in own:
            own["environment"] = extend_environment(self.inherited.get("environment"),
                                                    own["environment"])
        refuse_unsafe_conditions(ds, where)
        added = conditions(ds.get("when"), where)
        return dataclasses.replace(
            self,
            when=self.when + added,
            when_origins=self.when_origins + value_origins(ds, "when", len(added)),
            tags=union(self.tags, tag_list(ds.get("tags"), where)),
            inherited={**self.inherited, **own},
            module_defaults=self.module_defaults + module_defaults_of(ds, where),
            collections=collections_of(ds, where, self.collections),
            var_origins={**self.var_origins, **var_origins(ds)},
        )

    def entering(self, path: str, where: Location) -> "Scope":
        """The scope for reading ``path``; refuses a file already being read."""
        if path in self.chain:
            cycle = " -> ".join(self.chain + (path,))
            raise LoadError("import cycle: %s" % cycle, where)
        return dataclasses.replace(self, path=path, chain=self.chain + (path,))


# ---------------------------------------------------------------- task lists


def parse_tasks(data: Any, scope: Scope, where: Location) -> tuple[Node, ...]:
    """Parse a YAML task list (``None`` is an empty list) into IR nodes.

    ``where`` is reported when ``data`` itself is not a list.
    """
    if data is None:
        return ()
    if not isinstance(data, list):
        raise LoadError("expected a list of tasks, got %s" % _kind(data), location_of(data, where))
    nodes: list[Node] = []
    for entry in data:
        if not isinstance(entry, Mapping):
            raise LoadError("a task must be a mapping, got %s" % _kind(entry), where)
        nodes.extend(_parse_entry(entry, scope))
    return tuple(nodes)


def parse_handlers(data: Any, scope: Scope, where: Location) -> tuple[Task, ...]:
    """Parse a handlers list; blocks and imports are flattened into tasks.

    ``Play.handlers`` holds tasks only, so the ``vars`` of an enclosing block
    or import are merged under each handler's own ``vars``.
    """
    handler_scope = dataclasses.replace(scope, section="handlers")
    return _flatten(parse_tasks(data, handler_scope, where), {})


def _flatten(nodes: Sequence[Node], outer_vars: Mapping[str, Any]) -> tuple[Task, ...]:
    tasks: list[Task] = []
    for node in nodes:
        if isinstance(node, Task):
            tasks.append(dataclasses.replace(node, vars={**outer_vars, **node.vars}))
            continue
        if node.rescue or node.always:
            raise LoadError("rescue/always are not supported in handlers", node.location)
        tasks.extend(_flatten(node.block, {**outer_vars, **node.vars, **node.params}))
    return tuple(tasks)


def _parse_entry(ds: Mapping[str, Any], scope: Scope) -> tuple[Node, ...]:
    if any(k in ds for k in ("block", "rescue", "always")):
        return (_parse_block(ds, scope),)
    where = location_of(ds, Location(scope.path))
    action, args = _action_and_args(ds, where)
    if action == "import_tasks":
        return (_import_tasks(ds, args, scope, where),)
    if action == "import_role":
        return _import_role(ds, args, scope, where)
    if action in ("include_tasks", "include_role"):
        # (a public include_role's vars are every host's once it ran: the
        # controller loads it then, as a dynamic include)
        if _static_include(ds, args) and not (action == "include_role"
                                              and _public(args, False, scope, where)):
            mark = scope.play.mark()
            try:
                return (_include(ds, action, args, scope, where),)
            except LoadError:
                # A file or role that cannot be loaded (missing, malformed) is
                # no error until a host runs the include: Ansible loads an
                # include then, and fails only the hosts that reach it. As a
                # dynamic include it is loaded then too (its arguments' own
                # errors stay errors now: the dynamic include checks them).
                scope.play.rewind(mark)
        return (_dynamic_include(ds, action, args, scope, where),)
    return (_task(ds, action, args, scope, where),)


def _static_include(ds: Mapping[str, Any], args: Mapping[str, Any]) -> bool:
    """An include whose file (or role) is known now: no loop, no templated name."""
    name = args.get("file") or args.get("_raw_params") or args.get("name")
    looped = "loop" in ds or any(str(k).startswith("with_") for k in ds)
    return isinstance(name, str) and "{{" not in name and "{%" not in name and not looped


def _include(ds: Mapping[str, Any], action: str, args: Mapping[str, Any], scope: Scope,
             where: Location) -> Block:
    """A static ``include_tasks``/``include_role`` as a block headed by the include task.

    Unlike an import, the include's ``when`` and tags stay on the include task
    (L7.8, L7.9); ``apply:`` is what reaches the included tasks, and ``vars:``
    are include parameters (above set_fact, L6.3).
    """
    apply = args.get("apply") or {}
    if not isinstance(apply, Mapping):
        raise LoadError("'apply' must be a mapping", where)
    inner = scope.nested(apply)
    task_args = {k: v for k, v in args.items() if k != "apply"}
    loaded = len(scope.play.role_handlers)
    roles: tuple[str, ...] = ()
    if action == "include_tasks":
        name = str(task_args.get("file") or task_args.get("_raw_params"))
        path = _resolve_import(render_static(name, scope.play.static_vars, where), scope, where)
        body = parse_tasks(load_yaml_file(path), inner.entering(path, where), Location(path, 1))
        task_args["_ioc_included"] = path
    else:
        froms = {k: str(task_args[k]) for k in ("tasks_from", "vars_from", "defaults_from",
                                                 "handlers_from") if task_args.get(k)}
        # Listed as a play's role, then taken off the play's names again: they
        # join them only when the include runs (the controller adds them).
        listed = (len(scope.play.role_names), len(scope.play.dependent_role_names))
        body = _expand_role(str(task_args["name"]), {}, {}, inner, where, froms, dedup=False,
                            private=True, validate=_rolespec_validate(task_args, where),
                            listed="play")
        roles = tuple(scope.play.role_names[listed[0]:]) + \
            tuple(scope.play.dependent_role_names[listed[1]:])
        del scope.play.role_names[listed[0]:], scope.play.dependent_role_names[listed[1]:]
        task_args["_ioc_included"] = str(task_args["name"])
    # What the include loaded joins the play's handlers after the play's own,
    # as it does when the include runs in Ansible (not before, as `roles:`').
    scope.play.included_handlers.extend(scope.play.role_handlers[loaded:])
    del scope.play.role_handlers[loaded:]
    # (its vars: its own, and the included tasks' include parameters)
    include = _task(ds, action, task_args, scope, where)
    return Block(block=body, location=where, params=vars_of(ds, where), implicit=True,
                 include=include, included_roles=roles)


_INCLUDE_OPTIONS = {
    "include_tasks": frozenset({"file", "_raw_params", "apply"}),
    "include_role": frozenset({"name", "tasks_from", "vars_from", "defaults_from", "handlers_from",
                               "apply", "public", "allow_duplicates", "rolespec_validate"}),
}


def _dynamic_include(ds: Mapping[str, Any], action: str, args: Mapping[str, Any], scope: Scope,
                     where: Location) -> Task:
    """An include whose file or role is known only once it runs (templated, looped).

    The task runs per host (and item); the controller then loads what each
    host included with :func:`load_include`, from the scope recorded here.
    """
    apply = args.get("apply") or {}
    if not isinstance(apply, Mapping):
        raise LoadError("'apply' must be a mapping", where)
    unknown = sorted(set(args) - _INCLUDE_OPTIONS[action])
    if unknown:
        # ``include_tasks: "{{ a == b }}.yml"`` reads as k=v, as in Ansible
        raise LoadError("Invalid options for %s: %s" % (action, ", ".join(unknown)), where)
    if action == "include_tasks" and not (args.get("file") or args.get("_raw_params")):
        raise LoadError("include_tasks needs a file name", where)
    if action == "include_role" and not args.get("name"):
        raise LoadError("include_role needs 'name'", where)
    inner = scope.nested(apply)
    task = _task(ds, action, {k: v for k, v in args.items() if k != "apply"}, scope, where)
    return dataclasses.replace(task, include_scope=IncludeScope(
        path=inner.path, when=inner.when, when_origins=inner.when_origins, tags=inner.tags,
        inherited=dict(inner.inherited),
        role=inner.role, role_path=inner.role_path, role_collection=inner.role_collection,
        section=inner.section, chain=inner.chain, module_defaults=inner.module_defaults,
        collections=inner.collections, role_paths=inner.role_paths,
        role_params=dict(inner.role_params), role_defaults=dict(inner.role_defaults)))


@dataclass(frozen=True)
class Included:
    """What one dynamic include loaded: its nodes, and what they add to the play."""

    nodes: tuple[Node, ...]
    #: ``included: <this> for ...`` (the file's absolute path, or the role name).
    label: str
    handlers: tuple[Task, ...] = ()
    #: A public ``include_role``'s defaults and vars (its dependencies'
    #: too): every host's from then on (Ansible's ``play.roles`` gains it).
    role_defaults: Mapping[str, Any] = field(default_factory=dict)
    role_vars: Mapping[str, Any] = field(default_factory=dict)
    #: What an ``include_role`` adds to Ansible's ``play.roles`` when it runs:
    #: the role's name, its dependencies' names (role name magic variables).
    role_names: tuple[str, ...] = ()
    dependent_role_names: tuple[str, ...] = ()


def load_include(play: Play, task: Task, args: Mapping[str, Any],
                 extra_vars: Mapping[str, Any], search: RoleSearch | None = None) -> Included:
    """Load what a dynamic include ``task`` names with its templated ``args``.

    Parsed exactly as a static include at the same place would have been: the
    enclosing scope recorded at load time, ``apply:`` keywords, role context.
    """
    recorded = task.include_scope
    if recorded is None:
        raise LoadError("not a dynamic include", task.location)
    state = PlayState(playbook_dir=play.basedir,
                      static_vars={**play.vars, **play.vars_files, **extra_vars},
                      search=search or RoleSearch())
    scope = Scope(play=state, path=recorded.path, when=recorded.when,
                  when_origins=recorded.when_origins, tags=recorded.tags,
                  inherited=dict(recorded.inherited), role=recorded.role,
                  role_path=recorded.role_path, role_collection=recorded.role_collection,
                  section=recorded.section, chain=recorded.chain,
                  module_defaults=tuple(recorded.module_defaults),
                  collections=recorded.collections, role_paths=tuple(recorded.role_paths),
                  role_params=dict(recorded.role_params),
                  role_defaults=dict(recorded.role_defaults))
    where = task.location
    if task.action == "include_tasks":
        name = str(args.get("file") or args.get("_raw_params"))
        try:
            path = _resolve_import(name, scope, where)
        except LoadError as exc:
            missing = _import_candidates(name, scope)[0]
            raise IncludeNotFound(
                "Unable to retrieve file contents. Could not find or access '%s' on the "
                "Ansible Controller: [Errno 2] No such file or directory: '%s'"
                % (missing, missing), where, help_text=_REMOTE_SRC) from exc
        data = load_yaml_file(path)
        if data is not None and not isinstance(data, list):
            raise IncludeNotFound("included task files must contain a list of tasks", Location(path, 1))
        nodes = parse_tasks(data, scope.entering(path, where), Location(path, 1))
        return Included(nodes=nodes, label=path,
                        handlers=tuple(state.role_handlers) + tuple(state.included_handlers),
                        role_defaults=dict(state.role_defaults), role_vars=dict(state.role_vars))
    name = str(args["name"])
    froms = {k: str(args[k]) for k in ("tasks_from", "vars_from", "defaults_from",
                                       "handlers_from") if args.get(k)}
    try:
        locate_role(name, scope, where)
    except LoadError as exc:
        raise IncludeNotFound(exc.message, where) from exc
    nodes = _expand_role(name, {}, {}, scope, where, froms, dedup=False,
                         private=not _public(args, False, scope, where),
                         validate=_rolespec_validate(args, where), listed="play")
    return Included(nodes=nodes, label=name,
                    handlers=tuple(state.role_handlers) + tuple(state.included_handlers),
                    role_defaults=dict(state.role_defaults), role_vars=dict(state.role_vars),
                    role_names=tuple(state.role_names),
                    dependent_role_names=tuple(state.dependent_role_names))


def _parse_block(ds: Mapping[str, Any], scope: Scope) -> Block:
    where = location_of(ds, Location(scope.path))
    _check_keys(ds, BLOCK_KEYWORDS, "block", where)
    inner = scope.nested(ds)
    return Block(
        block=_section(ds, "block", inner, where),
        rescue=_section(ds, "rescue", inner, where),
        always=_section(ds, "always", inner, where),
        location=where,
        name=_opt_str(ds.get("name")),
        vars=vars_of(ds, where),
    )


def _section(ds: Mapping[str, Any], key: str, scope: Scope, where: Location) -> tuple[Node, ...]:
    value = ds.get(key)
    if value is not None and not isinstance(value, list):
        raise LoadError("'%s' must be a list of tasks" % key, key_location(ds, key, where))
    return parse_tasks(value, scope, where)


def extend_environment(outer: Any, own: Any) -> Any:
    """``environment`` inside a scope whose own is ``outer``: Ansible extends
    the keyword's list (the play's, the blocks', the task's layers, outermost
    first; the runner merges them in order), it does not replace it."""
    if own is None or outer is None:
        return outer if own is None else own
    return (outer if isinstance(outer, list) else [outer]) + (own if isinstance(own, list) else [own])


def _written_environment(value: Any) -> Any:
    """The ``environment`` layers with each value that is a template kept with
    where it was written (a deprecated value it reads is reported there)."""
    if isinstance(value, list):
        return [_written_environment(layer) for layer in value]
    return written_vars(value) if isinstance(value, Mapping) else value


# ---------------------------------------------------------------- one task


def _task(ds: Mapping[str, Any], action: str, args: dict[str, Any], scope: Scope, where: Location) -> Task:
    _warn_unsupported(ds, where)
    loop, loop_with = _loop(ds, where)
    refuse_unsafe_conditions(ds, where)
    own_when = conditions(ds.get("when"), where)
    own = {k: ds.get(k) for k in INHERITABLE}
    if "local_action" in ds:
        own["delegate_to"] = "localhost"
    effective: dict[str, Any] = {k: own[k] if own[k] is not None else scope.inherited.get(k)
                                 for k in INHERITABLE}
    effective["environment"] = _written_environment(extend_environment(
        scope.inherited.get("environment"), own["environment"]))
    omitted = {k: scope.inherited.get(k) for k, v in own.items()
               if (k.startswith("become") or k in ("check_mode", "diff"))
               and isinstance(v, str) and ("{{" in v or "{%" in v)}
    return Task(
        omitted=omitted,
        action=action,
        args=args,
        location=where,
        name=_opt_str(ds.get("name")),
        when=scope.when + own_when,
        when_origins=_aligned(scope) + value_origins(ds, "when", len(own_when)),
        loop=loop,
        loop_with=loop_with,
        loop_control=_mapping(ds, "loop_control", where),
        register=_opt_str(ds.get("register")),
        changed_when=_opt_conditions(ds.get("changed_when"), where),
        failed_when=_opt_conditions(ds.get("failed_when"), where),
        until=_opt_conditions(ds.get("until"), where),
        origins=_origins(ds, scope),
        retries=ds.get("retries"),
        delay=ds.get("delay"),
        async_val=ds.get("async"),
        poll=ds.get("poll"),
        notify=string_list(ds.get("notify"), "notify", where),
        listen=string_list(ds.get("listen"), "listen", where),
        vars=vars_of(ds, where),
        tags=union(scope.tags, tag_list(ds.get("tags"), where)),
        delegate_facts=ds.get("delegate_facts"),
        role=scope.role,
        role_path=scope.role_path,
        role_collection=scope.role_collection,
        search_path=_search_path(scope, where),
        action_written=_written_action(ds, action),
        module_defaults=scope.module_defaults + module_defaults_of(ds, where),
        collections=collections_of(ds, where, scope.collections),
        **effective,
    )


def _search_path(scope: Scope, where: Location) -> tuple[str, ...]:
    """``ansible_search_path`` of a task written at ``where`` (``Task.get_search_path``
    and the playbook's directory, as TaskExecutor adds it)."""
    paths = list(reversed(scope.role_paths))
    for path in (os.path.dirname(where.path), scope.play.playbook_dir):
        if path not in paths:
            paths.append(path)
    return tuple(paths)


def _origins(ds: Mapping[str, Any], scope: Scope) -> dict[str, tuple[str, ...]]:
    """Where the task's changed_when/failed_when/until conditions, its
    loop_control label and break_when conditions, its action, arguments, loop, variables, own
    delegate_to, notify names and environment values were written (see
    :attr:`Task.origins`)."""
    out = _argument_origins(ds)
    for name, origin in {**scope.var_origins, **var_origins(ds)}.items():
        out["var:" + name] = (origin,)
    for key in ds:
        if (key == "loop" or str(key).startswith("with_")) and not isinstance(ds[key], list):
            out["loop"] = value_origins(ds, key, 1)
        elif key == "loop" or str(key).startswith("with_"):  # (an item's error is about it)
            out["loop_items"] = value_origins(ds, key, len(ds[key]))
    if isinstance(ds.get("delegate_to"), str) and any(value_origins(ds, "delegate_to", 1)):
        out["delegate_to"] = value_origins(ds, "delegate_to", 1)
    notify = ds.get("notify")
    if isinstance(notify, (str, list)) and notify:
        out["notify"] = value_origins(ds, "notify", 1 if isinstance(notify, str) else len(notify))
    environment = ds.get("environment")
    if isinstance(environment, Mapping):
        for name in environment:
            if not isinstance(environment[name], list) and any(value_origins(environment, name, 1)):
                out["env:" + str(name)] = value_origins(environment, name, 1)
    for key in ("changed_when", "failed_when", "until"):
        # (the conditions are read first: an invalid value has failed already)
        count = len(conditions(ds.get(key), Location("<unknown>")))
        if count and any(value_origins(ds, key, count)):
            out[key] = value_origins(ds, key, count)
    control = ds.get("loop_control")
    if isinstance(control, Mapping) and "label" in control:
        label = value_origins(control, "label", 1)
        if any(label):
            out["label"] = label
    if isinstance(control, Mapping) and control.get("break_when"):
        count = len(conditions(control["break_when"], Location("<unknown>")))
        if count and any(value_origins(control, "break_when", count)):
            out["break_when"] = value_origins(control, "break_when", count)
    return out


def var_origins(ds: Mapping[str, Any]) -> dict[str, str]:
    """Where each of the ``vars`` of ``ds`` (a play, task, block or import) was written."""
    value = ds.get("vars")
    layers = value if isinstance(value, list) else [value]
    out = {}
    for layer in layers:
        if isinstance(layer, Mapping):
            for name in layer:
                if not isinstance(layer[name], list):
                    origin = value_origins(layer, name, 1)[0]
                    if origin:
                        out[str(name)] = origin
    return out


def _argument_origins(ds: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Where the task's action keyword (``action``) and each of its arguments'
    values (``arg:<name>``; ``arg:*`` the free-form text's) were written:
    ansible-core names them when templating an argument fails."""
    candidates = [k for k in ds if k not in TASK_KEYWORDS and not str(k).startswith("with_")]
    candidates += [k for k in ("action", "local_action") if k in ds]
    if len(candidates) != 1:
        return {}
    key = candidates[0]
    out: dict[str, tuple[str, ...]] = {}
    where = key_location(ds, key, Location("<unknown>"))
    if where.path and not where.path.startswith("<") and where.line:
        out["action"] = (where.origin,)
    extra = ds.get("args")
    value = ds[key]
    for mapping in (extra, value):
        if isinstance(mapping, Mapping):
            _nested_origins(mapping, "arg:", out)
    if isinstance(value, str) and any(value_origins(ds, key, 1)):
        out["arg:*"] = value_origins(ds, key, 1)
    return out


def _nested_origins(mapping: Mapping[str, Any], prefix: str,
                    out: dict[str, tuple[str, ...]]) -> None:
    """Where each value of ``mapping`` was written, as ``<prefix><name>``, and
    those of the mappings inside it, as ``<prefix><name>.<key>``; list values
    are left out (only their items' positions are known: ``<prefix><name>[]``,
    one per item, where ansible-core's warning about a template in an item
    points)."""
    for name in mapping:
        if isinstance(mapping[name], list) and mapping[name] \
                and any(value_origins(mapping, name, len(mapping[name]))):
            out["%s%s[]" % (prefix, name)] = value_origins(mapping, name, len(mapping[name]))
        if not isinstance(mapping[name], list) and any(value_origins(mapping, name, 1)):
            out[prefix + str(name)] = value_origins(mapping, name, 1)
            if isinstance(mapping[name], Mapping):
                _nested_origins(mapping[name], "%s%s." % (prefix, name), out)


def _aligned(scope: Scope) -> tuple[str, ...]:
    """The scope's condition origins, one per condition of ``scope.when``."""
    known = scope.when_origins[-len(scope.when):] if scope.when else ()
    return ("",) * (len(scope.when) - len(known)) + known


def _written_action(ds: Mapping[str, Any], action: str) -> Optional[str]:
    """The module name as the task spelled it, when that is not ``action``."""
    keys = [k for k in ds if k not in TASK_KEYWORDS and not str(k).startswith("with_")]
    if keys:
        written = str(keys[0])
    else:
        value = ds.get("action", ds.get("local_action"))
        if isinstance(value, str) and value.strip():
            written = value.split(None, 1)[0]
        elif isinstance(value, Mapping) and "module" in value:
            written = str(value["module"])
        else:
            return None
    return written if written != action else None


def _action_and_args(ds: Mapping[str, Any], where: Location) -> tuple[str, dict[str, Any]]:
    """The module a task runs and its arguments (``args:`` merged under them)."""
    candidates = [k for k in ds if k not in TASK_KEYWORDS and not str(k).startswith("with_")]
    candidates += [k for k in ("action", "local_action") if k in ds]
    if len(candidates) > 1:  # ansible-core's words (an unknown keyword is a module to it)
        raise LoadError("conflicting action statements: %s" % ", ".join(map(str, candidates)), where)
    if not candidates:
        raise LoadError("no module/action detected in task.", where)
    key = candidates[0]
    if key in ("action", "local_action"):
        module, value = _split_action(ds[key], key_location(ds, key, where))
    else:
        module, value = str(key), ds[key]
    module = canonical_action(module)
    own = _module_args(module, value, key_location(ds, key, where))
    return module, {**_extra_args(ds.get("args"), where), **own}


def canonical_action(name: str) -> str:
    """``ansible.builtin.X`` and ``ansible.legacy.X`` → ``X``; others unchanged."""
    for prefix in _BUILTIN_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def _split_action(value: Any, where: Location) -> tuple[str, Any]:
    if isinstance(value, str) and value.strip():
        parts = value.strip().split(None, 1)
        return parts[0], parts[1] if len(parts) > 1 else None
    if isinstance(value, Mapping) and "module" in value:
        return str(value["module"]), {k: v for k, v in value.items() if k != "module"}
    raise LoadError("'action' needs a module name, e.g. 'action: copy src=a dest=b'", where)


def _module_args(module: str, value: Any, where: Location) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (list, tuple)):
        raise LoadError("arguments of '%s' must be a mapping or k=v text, got a list" % module, where)
    args = parse_kv(str(value), check_raw=module in FREEFORM_MODULES)
    if "_raw_params" in args and module not in RAW_PARAM_MODULES:
        raise LoadError(
            "'%s' got free-form text %r; only k=v pairs are allowed here"
            % (module, args["_raw_params"]),
            where,
        )
    return args


def _extra_args(value: Any, where: Location) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str) and "{{" in value:
        return {"_variable_params": value}
    raise LoadError("'args' must be a mapping or a '{{ variable }}'", where)


def _loop(ds: Mapping[str, Any], where: Location) -> tuple[Any, str | None]:
    lookups = [k for k in ds if str(k).startswith("with_")]
    if len(lookups) + ("loop" in ds) > 1:
        keys = lookups + (["loop"] if "loop" in ds else [])
        raise LoadError("a task can have only one loop; found %s" % ", ".join(keys), where)
    if lookups:
        return ds[lookups[0]], lookups[0][len("with_"):]
    return ds.get("loop"), None


# ---------------------------------------------------------------- imports and roles


def _import_tasks(ds: Mapping[str, Any], args: Mapping[str, Any], scope: Scope, where: Location) -> Block:
    _check_import(ds, "import_tasks", where)
    name = args.get("file") or args.get("_raw_params")
    if not isinstance(name, str) or not name:
        raise LoadError("import_tasks needs a file name", where)
    path = _resolve_import(render_static(name, scope.play.static_vars, where), scope, where)
    inner = scope.nested(ds).entering(path, where)
    return Block(
        block=parse_tasks(load_yaml_file(path), inner, Location(path, 1)),
        location=where,
        vars=vars_of(ds, where),
        implicit=True,
    )


def _resolve_import(name: str, scope: Scope, where: Location) -> str:
    """An imported file: role ``tasks/`` (or ``handlers/``) first, then beside the importer."""
    candidates = _import_candidates(name, scope)
    for candidate in candidates:
        if os.path.isfile(candidate):
            return candidate
    raise LoadError(  # ansible-core's AnsibleFileNotFound, as ansible-playbook prints it
        "Unable to retrieve file contents. Could not find or access '%s' on the Ansible "
        "Controller: [Errno 2] No such file or directory: '%s'" % (candidates[0], candidates[0]),
        where, exit_code=1, help_text=_REMOTE_SRC)


#: ansible-core's help text of AnsibleFileNotFound.
_REMOTE_SRC = "If you are using a module and expect the file to exist on the remote, " \
    "see the remote_src option."


def _import_candidates(name: str, scope: Scope) -> list[str]:
    bases = [os.path.dirname(scope.path), scope.play.playbook_dir]
    if scope.role_path is not None:
        bases.insert(0, os.path.join(scope.role_path, scope.section))
    return [os.path.abspath(os.path.join(base, name)) for base in bases]


def _import_role(ds: Mapping[str, Any], args: Mapping[str, Any], scope: Scope, where: Location) -> tuple[Node, ...]:
    _check_import(ds, "import_role", where)
    name = args.get("name") or args.get("role")
    if not isinstance(name, str) or not name:
        raise LoadError("import_role needs 'name'", where)
    froms = {k: str(args[k]) for k in ("tasks_from", "vars_from", "defaults_from", "handlers_from") if args.get(k)}
    return _expand_role(name, ds, {}, scope, where, froms, dedup=False,
                        private=not _public(args, True, scope, where),
                        validate=_rolespec_validate(args, where), listed="play")


def _public(args: Mapping[str, Any], static: bool, scope: Scope, where: Location) -> bool:
    """Whether a role's vars and defaults are the play's (``Role.public``): its
    ``public:`` (import_role, include_role), else the opposite of
    ``DEFAULT_PRIVATE_ROLE_VARS`` when that is set, else whether it is imported
    (``roles:``, ``import_role``) rather than included."""
    if "public" in args:
        return to_bool(args, "public", static, where)
    setting = scope.play.search.private_role_vars
    return static if setting is None else not setting


def _rolespec_validate(args: Mapping[str, Any], where: Location) -> bool:
    """``rolespec_validate`` of include_role/import_role (default true)."""
    return to_bool(args, "rolespec_validate", True, where)


_TRUE = frozenset(("yes", "on", "true", "1", "y", "t"))
_FALSE = frozenset(("no", "off", "false", "0", "n", "f"))


def to_bool(ds: Mapping[str, Any], key: str, default: bool, where: Location) -> bool:
    """``ds[key]`` as Ansible's boolean field reads it (``default`` when absent)."""
    value = ds.get(key, default)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise LoadError("'%s' must be a boolean, got %r" % (key, value), key_location(ds, key, where))


def expand_roles_section(entries: Any, scope: Scope, where: Location,
                         item_where: Sequence[Location] = ()) -> tuple[Node, ...]:
    """The ``roles:`` list of a play as implicit role blocks (dependencies first).

    ``item_where``: where each entry was written (a role named by a plain
    string has no location of its own).
    """
    if entries is None:
        return ()
    if not isinstance(entries, list):
        raise LoadError("'roles' must be a list", where)
    nodes: list[Node] = []
    for number, entry in enumerate(entries):
        at = location_of(entry, item_where[number] if number < len(item_where) else where)
        name, keywords, params = _role_entry(entry, at)
        nodes.extend(_expand_role(name, keywords, params, scope, at, {}, dedup=True,
                                  private=not _public({}, True, scope, at), listed="play"))
    return tuple(nodes)


def _role_entry(entry: Any, where: Location) -> tuple[str, Mapping[str, Any], dict[str, Any]]:
    """Split a role reference into its name, its keywords and its parameters."""
    if isinstance(entry, str) and entry:
        return entry, {}, {}
    if not isinstance(entry, Mapping):
        raise LoadError("a role entry must be a name or a mapping, got %s" % _kind(entry), where)
    name = entry.get("role") or entry.get("name")
    if not isinstance(name, str) or not name:
        raise LoadError("a role entry needs 'role:' (or 'name:')", location_of(entry, where))
    _warn_unsupported(entry, location_of(entry, where))
    keywords = {k: v for k, v in entry.items() if k in SCOPE_KEYWORDS and k != "name"}
    params = {k: plain(v) for k, v in entry.items() if k not in SCOPE_KEYWORDS and k != "role"}
    return name, keywords, params


def _expand_role(
    name: str,
    keywords: Mapping[str, Any],
    params: dict[str, Any],
    scope: Scope,
    where: Location,
    froms: Mapping[str, str],
    dedup: bool,
    private: bool = False,
    validate: bool = True,
    listed: str | None = None,
) -> tuple[Node, ...]:
    """A role as ``(dependency blocks..., role block)``; ``()`` if already run.

    ``private`` (``include_role`` unless public, ``import_role`` with
    ``public: false``, see :func:`_public`): the role's defaults stay on its
    block and its vars its own (with its dependencies') instead of joining the
    play's. ``validate`` (``rolespec_validate``): the
    role starts with the validation of its entry point's argument spec.
    ``listed``: ``"play"`` for one of the play's roles, ``"dependency"`` for a
    dependency of one (their names are magic variables); None for neither.
    (An ``include_role``'s are listed too, and its caller takes them off the
    play's: Ansible's play knows them only once the include ran.)
    """
    role_name, path, collection = locate_role(name, scope, where)
    files = read_role(role_name, path, where, **froms)
    if listed is not None:  # (each time, as Ansible's play.roles: duplicates too)
        named = scope.play.role_names if listed == "play" else scope.play.dependent_role_names
        named.append(".".join(x for x in (collection, files.name) if x))
    identity = (path, tuple(sorted(froms.items())), repr(params), repr(keywords.get("vars")))
    if dedup and not files.allow_duplicates and identity in scope.play.seen_roles:
        return ()
    scope.play.seen_roles.add(identity)
    outer = scope.nested(keywords)
    chain_params = {**scope.role_params, **params}
    chain_defaults = {**scope.role_defaults, **files.defaults} if private else scope.role_defaults
    dep_scope = dataclasses.replace(outer, role_collection=collection, role_params=chain_params,
                                    role_defaults=chain_defaults)
    deps = _dependencies(files, dep_scope, where, listed is not None, private)
    own_defaults = files.defaults
    role_vars = {**files.vars, **vars_of(keywords, where)}
    if private:
        # (the play does not have its dependencies' vars and defaults either:
        # Role.get_vars/get_default_vars give them to its own tasks)
        dep_vars, dep_defaults = _dependency_layers(files, dep_scope, where)
        role_vars = {**dep_vars, **role_vars}
        own_defaults = {**dep_defaults, **own_defaults}
    else:
        scope.play.role_defaults.update(files.defaults)
        scope.play.role_vars.update(files.vars)
    # roles do not inherit ``collections``: a role searches its own collection
    # and those of its meta/main.yml (Role._load_role_data)
    # (a role's vars and params hide the origins of the vars they override)
    origins = {k: v for k, v in outer.var_origins.items() if k not in files.vars and k not in params}
    inner = dataclasses.replace(outer, role=files.name, role_path=path, role_collection=collection,
                                role_paths=outer.role_paths + (path,),
                                collections=files.collections or None,
                                var_origins={**origins, **var_origins(keywords)},
                                role_params=chain_params, role_defaults=chain_defaults)
    _collect_role_handlers(files, inner, role_vars)
    body = _role_tasks(files, inner, where, froms.get("tasks_from", "main"),
                       params if validate else None)
    block = Block(
        block=body, location=where, vars=role_vars, params=chain_params,
        implicit=True, role=files.name, role_path=path,
        defaults=dict(own_defaults) if private else {},
    )
    return deps + (block,)


def locate_role(name: str, scope: Scope, where: Location) -> tuple[str, str, str | None]:
    """``(role name, directory, collection)`` of role ``name`` as Ansible finds it.

    In a collection first (a ``ns.coll.role`` name, or any name inside a
    collection role: its own collection is searched first, then those of the
    ``collections`` keyword), then in
    ``<playbook dir>/roles``, ``roles_path``, beside the role that depends
    on it, and the playbook directory. A collection role's name is its FQCN.
    """
    search = scope.play.search
    collections: tuple[str, ...] = (scope.role_collection,) if scope.role_collection else ()
    # the ``collections`` keyword in force is searched too (Play.collections for
    # ``roles:``, the task's for import/include_role, a role's meta for its deps)
    collections += tuple(c for c in scope.collections or () if c not in collections)
    if search.in_collections is not None:
        found = search.in_collections(name, collections)
        if found is not None:
            short, path, collection = found
            return "%s.%s" % (collection, short), path, collection
    path = find_role(name, _role_dirs(scope), where)
    return os.path.basename(name.rstrip("/")), path, None


def _role_dirs(scope: Scope) -> list[str]:
    dirs = [os.path.join(scope.play.playbook_dir, "roles"), *scope.play.search.roles_path]
    if scope.role_path is not None:
        dirs.append(os.path.dirname(scope.role_path))
    dirs.append(scope.play.playbook_dir)
    return dirs


def _dependencies(files: RoleFiles, outer: Scope, where: Location,
                  listed: bool, private: bool) -> tuple[Node, ...]:
    scope = dataclasses.replace(outer, role_path=files.path,
                                role_paths=outer.role_paths + (files.path,))
    nodes: list[Node] = []
    for entry in files.dependencies:
        name, keywords, params = _role_entry(entry, where)
        nodes.extend(_expand_role(name, keywords, params, scope, location_of(entry, where), {},
                                  dedup=True, private=private,
                                  listed="dependency" if listed else None))
    return tuple(nodes)


def _dependency_layers(files: RoleFiles, outer: Scope,
                       where: Location) -> tuple[dict[str, Any], dict[str, Any]]:
    """The vars and the defaults of a role's dependencies, all of them, each
    dependency's own above its dependencies' (``Role.get_vars`` and
    ``get_default_vars`` walk ``get_all_dependencies``): what a private role's
    tasks see of them."""
    scope = dataclasses.replace(outer, role_path=files.path)
    found_vars: dict[str, Any] = {}
    found_defaults: dict[str, Any] = {}
    for entry in files.dependencies:
        name, keywords, _ = _role_entry(entry, where)
        at = location_of(entry, where)
        role_name, path, collection = locate_role(name, scope, at)
        dep = read_role(role_name, path, at)
        inner_vars, inner_defaults = _dependency_layers(
            dep, dataclasses.replace(scope, role_collection=collection), at)
        found_vars.update({**inner_vars, **dep.vars, **vars_of(keywords, at)})
        found_defaults.update({**inner_defaults, **dep.defaults})
    return found_vars, found_defaults


def _role_tasks(files: RoleFiles, scope: Scope, where: Location, entrypoint: str,
                params: Mapping[str, Any] | None) -> tuple[Node, ...]:
    """The role's tasks; with ``params`` (validation on), headed by the argument
    spec validation of ``entrypoint`` when the role has one
    (``Role._prepend_validation_task``)."""
    spec = files.argument_specs.get(entrypoint) if params is not None else None
    if not spec:
        if files.tasks_file is None:
            return ()
        inner = scope.entering(files.tasks_file, where)
        return parse_tasks(files.tasks, inner, Location(files.tasks_file, 1))
    tasks_file = files.tasks_file or os.path.join(files.path, "tasks", entrypoint)
    data = files.tasks if files.tasks_file is not None else None
    if data is not None and not isinstance(data, list):
        raise LoadError("the tasks file of role '%s' must contain a list of tasks" % files.name,
                        Location(tasks_file, 1))
    validation = _validation_task(spec, entrypoint, files, params or {}, scope.role_collection)
    inner = scope.entering(tasks_file, where)
    first, = parse_tasks([validation], inner, Location(tasks_file, 1))
    # Ansible's task has no source: its errors say "Origin: <unknown>"
    first = dataclasses.replace(first, location=Location("<unknown>"))
    return (first,) + parse_tasks(data or [], inner, Location(tasks_file, 1))


def _validation_task(spec: Mapping[str, Any], entrypoint: str, files: RoleFiles,
                     params: Mapping[str, Any], collection: str | None) -> dict[str, Any]:
    """``Role._create_validation_task``: the task, as Ansible writes it."""
    name = "Validating arguments against arg spec '%s'" % entrypoint
    if "short_description" in spec:
        name = name + " - " + str(spec["short_description"])
    return {
        "action": "ansible.builtin.validate_argument_spec",
        "args": {
            "argument_spec": spec.get("options", {}),
            "provided_arguments": dict(params),
            # Ansible's ``Role._role_name``: a collection role's short name
            "validate_args_context": {"type": "role", "name": files.name.rpartition(".")[2]
                                      if collection else files.name,
                                      "argument_spec_name": entrypoint, "path": files.path},
        },
        "name": name,
        "tags": ["always"],
    }


def _collect_role_handlers(files: RoleFiles, scope: Scope, role_vars: Mapping[str, Any]) -> None:
    if files.handlers_file is None:
        return
    inner = scope.entering(files.handlers_file, Location(files.handlers_file))
    handlers = parse_handlers(files.handlers, inner, Location(files.handlers_file, 1))
    scope.play.role_handlers.extend(
        dataclasses.replace(h, vars={**role_vars, **h.vars}, role_params=dict(scope.role_params),
                            role_defaults=dict(scope.role_defaults))
        for h in handlers
    )


# ---------------------------------------------------------------- value normalisation


def conditions(value: Any, where: Location) -> tuple[Any, ...]:
    """``when``-like value → tuple of conditions (a string or bool is a 1-tuple)."""
    if value is None:
        return ()
    if isinstance(value, (str, bool)):
        return (value,)
    if isinstance(value, (int, float)):
        return (str(value),)
    if isinstance(value, list):
        return tuple(v if isinstance(v, (str, bool)) else str(v) for v in value)
    raise LoadError("a condition must be a string, a boolean or a list, got %s" % _kind(value), where)


def _opt_conditions(value: Any, where: Location) -> tuple[Any, ...] | None:
    return None if value is None else conditions(value, where)


def string_list(value: Any, keyword: str, where: Location) -> tuple[str, ...]:
    """A string or a list of strings → tuple of strings."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return tuple(str(v) for v in value)
    raise LoadError("'%s' must be a string or a list of strings" % keyword, where)


def tag_list(value: Any, where: Location) -> tuple[str, ...]:
    """``tags`` → tuple; a string may hold several comma-separated tags."""
    if isinstance(value, str):
        return tuple(t.strip() for t in value.split(",") if t.strip())
    if isinstance(value, (int, float)):
        return (str(value),)
    return string_list(value, "tags", where)


def union(first: Sequence[str], second: Sequence[str]) -> tuple[str, ...]:
    """Both sequences, first first, without repeats."""
    return tuple(dict.fromkeys((*first, *second)))


def vars_of(ds: Mapping[str, Any], where: Location) -> Mapping[str, Any]:
    """The ``vars:`` of ``ds``: a mapping, or a list of mappings merged in order."""
    value = ds.get("vars")
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return written_vars(value)
    if isinstance(value, list) and all(isinstance(v, Mapping) for v in value):
        merged: dict[str, Any] = {}
        for item in value:
            merged.update(written_vars(item))
        return merged
    raise LoadError("'vars' must be a mapping", key_location(ds, "vars", where))


def _mapping(ds: Mapping[str, Any], key: str, where: Location) -> Mapping[str, Any]:
    value = ds.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise LoadError("'%s' must be a mapping" % key, key_location(ds, key, where))
    return value


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _kind(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__


# ---------------------------------------------------------------- keyword checks


def _check_keys(ds: Mapping[str, Any], allowed: frozenset[str], what: str, where: Location) -> None:
    unknown = [k for k in ds if k not in allowed]
    if unknown:
        raise LoadError(
            "%s has unsupported keyword(s): %s" % (what, ", ".join(map(repr, unknown))),
            key_location(ds, unknown[0], where),
        )
    _warn_unsupported(ds, where)


def _check_import(ds: Mapping[str, Any], action: str, where: Location) -> None:
    """Imports take only keywords that can apply to every imported task."""
    allowed = SCOPE_KEYWORDS | {action, "ansible.builtin." + action, "ansible.legacy." + action, "args", "action"}
    bad = [k for k in ds if k not in allowed]
    if bad:
        raise LoadError(
            "%s does not support %s (it is static; use include_%s for that)"
            % (action, ", ".join(map(repr, bad)), action.split("_", 1)[1]),
            key_location(ds, bad[0], where),
        )
    _warn_unsupported(ds, where)


def _warn_unsupported(ds: Mapping[str, Any], where: Location) -> None:
    for key in ds:
        if key in IGNORED:
            log.warning("%s: keyword '%s' is not supported by ioc and is ignored", where, key)
    check_debugger(ds, where)


def check_debugger(ds: Mapping[str, Any], where: Location) -> None:
    """``debugger: never`` runs as without it; any other value is refused."""
    if "debugger" not in ds:
        return
    value = ds["debugger"]
    if not (isinstance(value, str) and value.strip().lower() in DEBUGGER_ACCEPTED):
        raise LoadError("debugger: %s is not supported: %s" % (value, DEBUGGER_REFUSED),
                        key_location(ds, "debugger", where))


def module_defaults_of(ds: Mapping[str, Any], where: Location) -> tuple[Mapping[str, Any], ...]:
    """The ``module_defaults`` of ``ds`` as layers (a mapping or a list of mappings).

    Keys must be static action or ``group/`` names, as Ansible requires; the
    values are kept as written (templated when the task runs).
    """
    value = ds.get("module_defaults")
    if value is None:
        return ()
    at = key_location(ds, "module_defaults", where)
    layers = value if isinstance(value, list) else [value]
    out = []
    for layer in layers:
        if not isinstance(layer, Mapping) or not all(isinstance(k, str) for k in layer):
            raise LoadError(
                "The field 'module_defaults' is supposed to be a dictionary or list of "
                "dictionaries, the keys of which must be static action, module, or group "
                "names. Only the values may contain templates. For example: "
                "{'ping': \"{{ ping_defaults }}\"}", at)
        out.append(plain(layer))
    return tuple(out)


def collections_of(ds: Mapping[str, Any], where: Location,
                   outer: Optional[tuple[str, ...]]) -> Optional[tuple[str, ...]]:
    """The ``collections`` keyword of ``ds`` (a list of names), else ``outer``."""
    if "collections" not in ds:
        return outer
    value = ds["collections"]
    if value is None:
        return outer
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and "{{" not in v for v in value):
        raise LoadError("'collections' must be a list of collection names (it is not templated)",
                        key_location(ds, "collections", where))
    return tuple(value) or None
