"""The intermediate representation (IR): plays, blocks, tasks and inventory.

Everything here is pure data: frozen dataclasses built by ``ioc.loader`` and
read by the planner, the controller and (through :func:`to_wire`) the runner.
Nothing in this module does I/O.

Inheritance is resolved by the loader: a :class:`Task` carries its *effective*
keywords. ``when`` conditions of enclosing blocks, imports and roles are
prepended to the task's own (they are re-evaluated for every task, L2.1), tags
are the union, and inheritable keywords (``ignore_errors``, ``no_log``,
``become``...) are copied down where the task does not set them. Variables are
the exception: ``vars`` stay on the block or task that declares them, because
their scope is lexical and their templates are evaluated lazily at run time.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Tuple, Union

WIRE_VERSION = 1


#: Jinja markers: text holding none reads the same templated or not.
_MARKERS = ("{{", "{%", "{#")


def verbatim(text: str) -> str:
    """``text`` as a value ioc's templating leaves exactly as it is.

    Ansible never templates text not trusted as a template (``!unsafe``, a
    ``vars_prompt`` answer with ``unsafe: true``); ioc's variables carry no
    such mark, so a template in such text is wrapped in ``{% raw %}``.
    """
    if not any(m in text for m in _MARKERS):
        return text
    if "{% endraw %}" in text:
        raise ValueError("text holding '{% endraw %}' cannot be kept from templating")
    return "{% raw %}" + text + "{% endraw %}"


@dataclass(frozen=True)
class Location:
    """Where something was written: a file path, a 1-based line and column.

    ``str()`` is ``path:line`` (plans and ioc's own messages); :attr:`origin`
    is ``path:line:col`` as ansible-core prints an ``Origin``. ``0`` means
    unknown.
    """

    path: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        return "%s:%d" % (self.path, self.line) if self.line else self.path

    @property
    def origin(self) -> str:
        """``path:line:col``, leaving out what is unknown from the right."""
        return "%s:%d" % (self, self.col) if self.line and self.col else str(self)

    @classmethod
    def parse(cls, text: str) -> "Location":
        """The location ``path``, ``path:line`` or ``path:line:col`` names (the inverse
        of ``str()`` and :attr:`origin`; ansible-core's ``Task.get_path()``)."""
        numbers: list = []
        path = text
        while len(numbers) < 2:
            head, sep, tail = path.rpartition(":")
            if not sep or not tail.isdigit():
                break
            numbers.insert(0, int(tail))
            path = head
        return cls(path, *numbers)


#: A conditional as written: a string expression or a YAML boolean literal.
Condition = Union[str, bool]


@dataclass(frozen=True)
class IncludeScope:
    """What a dynamic include hands the tasks it loads at run time.

    An ``include_tasks``/``include_role`` whose file is templated or which
    loops is loaded only once it has run (L7.8); this is the loader's view of
    the place it was written (enclosing conditions, tags and keywords with its
    ``apply:``, role, file being read), kept as data so the file can be parsed
    then exactly as it would have been at load time.
    """

    path: str
    when: Tuple[Any, ...] = ()
    when_origins: Tuple[str, ...] = ()
    tags: Tuple[str, ...] = ()
    inherited: Mapping[str, Any] = field(default_factory=dict)
    role: Optional[str] = None
    role_path: Optional[str] = None
    role_collection: Optional[str] = None
    section: str = "tasks"
    chain: Tuple[str, ...] = ()
    module_defaults: Tuple[Mapping[str, Any], ...] = ()
    collections: Optional[Tuple[str, ...]] = None
    #: The directories of the roles' dependency chain, outermost first.
    role_paths: Tuple[str, ...] = ()
    #: The chain's role parameters and its included roles' defaults (the
    #: loader's ``Scope.role_params``/``role_defaults``).
    role_params: Mapping[str, Any] = field(default_factory=dict)
    role_defaults: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Task:
    """One task (or handler) with its effective keywords.

    ``action`` is the short module name (``command``, not
    ``ansible.builtin.command``); ``args`` are its arguments as a plain dict,
    free-form text of ``command``/``shell`` under ``_raw_params`` exactly as in
    Ansible. Keywords that were not written are ``None`` (or empty) so that
    "unset" and "false" stay distinguishable.
    """

    action: str
    args: Mapping[str, Any]
    location: Location
    name: Optional[str] = None
    #: ANDed; inherited conditions first.
    when: Tuple[Condition, ...] = ()
    #: Where each of ``when`` was written (``path:line:col``; ``""`` unknown).
    when_origins: Tuple[str, ...] = ()
    #: The loop expression (a template string or a literal list), or None.
    loop: Any = None
    #: ``None`` for ``loop:``; else the lookup of ``with_<name>`` ("items", ...).
    loop_with: Optional[str] = None
    loop_control: Mapping[str, Any] = field(default_factory=dict)
    register: Optional[str] = None
    #: None when unset; a tuple of ANDed conditions otherwise.
    changed_when: Optional[Tuple[Condition, ...]] = None
    failed_when: Optional[Tuple[Condition, ...]] = None
    until: Optional[Tuple[Condition, ...]] = None
    #: Where each condition of ``changed_when``, ``failed_when`` and ``until`` and
    #: the ``loop_control`` label were written, by keyword (``label`` for the
    #: label): ``path:line:col`` each, ``""`` unknown. ansible-core names these
    #: positions when evaluating one fails. Also (one each): ``action`` the
    #: action's keyword, ``arg:<name>`` an argument's value (``arg:*`` the
    #: free-form text), ``loop`` the loop expression, ``var:<name>`` a task or
    #: enclosing block variable's value, ``delegate_to``, ``env:<name>`` an
    #: ``environment`` value; ``notify``: each name. The "caused by" chain of
    #: a value that cannot be templated names them.
    origins: Mapping[str, Tuple[str, ...]] = field(default_factory=dict)
    retries: Any = None
    delay: Any = None
    ignore_errors: Any = None
    ignore_unreachable: Any = None
    notify: Tuple[str, ...] = ()
    #: Handlers only: topics this handler also answers to.
    listen: Tuple[str, ...] = ()
    #: Handlers only: why ``name`` (a template) could not be templated with the
    #: play's variables, as linear templates it (no host): the handler then
    #: answers to its ``listen`` topics only, and without any a lookup that
    #: passes it warns (``flow.search_warnings``). The front ends template
    #: handler names before planning; None: ``name`` is what it answers to.
    name_error: Optional[str] = None
    vars: Mapping[str, Any] = field(default_factory=dict)
    #: Handlers only: the role parameters and the defaults of the handler's
    #: role and of its dependency chain (the roles that depend on it or
    #: include it: ``Role.get_role_params``/``get_default_vars(dep_chain)``, as
    #: ``VariableManager.get_vars(task=handler)`` reads them). A handler is
    #: templated in this scope of its own, never in the blocks around the
    #: flush that runs it. ``role_defaults`` holds what the play's
    #: (``Play.role_defaults``) lacks: those of included (private) roles.
    role_params: Mapping[str, Any] = field(default_factory=dict)
    role_defaults: Mapping[str, Any] = field(default_factory=dict)
    tags: Tuple[str, ...] = ()
    no_log: Any = None
    environment: Any = None
    check_mode: Any = None
    diff: Any = None
    delegate_to: Optional[str] = None
    delegate_facts: Any = None
    run_once: Any = None
    any_errors_fatal: Any = None
    throttle: Any = None
    #: ``async``: the job's time limit in seconds (0/None: not async); ``poll``:
    #: seconds between status checks (0: fire-and-forget; None: Ansible's 15).
    async_val: Any = None
    poll: Any = None
    #: ``timeout``: seconds before the task is terminated (None/0: none).
    timeout: Any = None
    become: Any = None
    become_user: Optional[str] = None
    become_method: Optional[str] = None
    become_flags: Optional[str] = None
    become_exe: Optional[str] = None
    #: What a ``become*``, ``check_mode`` or ``diff`` keyword the task itself
    #: sets as a template falls back to when the template gives ``omit``: the
    #: value it inherits from its block, role or play (Ansible's
    #: ``set_to_context``; None: the run's default).
    omitted: Mapping[str, Any] = field(default_factory=dict)
    remote_user: Optional[str] = None
    connection: Optional[str] = None
    #: Name of the role the task came from, for ``role : name`` display.
    role: Optional[str] = None
    #: Directory of that role, exposed as ``role_path``.
    role_path: Optional[str] = None
    #: The collection of a collection role (``role`` is then its FQCN), as
    #: ``ansible_collection_name``; None for a role from a roles path.
    role_collection: Optional[str] = None
    #: ``ansible_search_path`` as TaskExecutor sets it for the task: the
    #: directories of its roles' dependency chain (innermost first), of its
    #: own file, and the playbook's base directory (``Task.get_search_path``).
    search_path: Tuple[str, ...] = ()
    #: The action as written when it differs from ``action``
    #: (``ansible.builtin.debug``): an unnamed task is shown by it.
    action_written: Optional[str] = None
    #: Dynamic includes only: how to load the included tasks at run time.
    include_scope: Optional[IncludeScope] = None
    #: ``module_defaults`` of the play, blocks, roles, imports and the task,
    #: outermost first, as written (keys unresolved); ``ioc.ansible.modules``
    #: merges the ones that apply under ``args`` as Ansible does.
    module_defaults: Tuple[Mapping[str, Any], ...] = ()
    #: The ``collections`` keyword in force (task, block, play; a role's own
    #: from its meta/main.yml): where a short action name is looked up first.
    collections: Optional[Tuple[str, ...]] = None
    #: Set when the task runs Ansible's own module code on the target: the
    #: key of the module's payload in the run's module set (built on the
    #: controller by ``ioc.ansible.modules``); None for ioc's own actions.
    module: Optional[str] = None

    @property
    def display_name(self) -> str:
        """The name as the linear strategy prints it before templating."""
        base = self.name or self.action_written or self.action
        role = (self.args or {}).get("name") if self.action == "include_role" else None
        if not self.name and isinstance(role, str) and role:
            base = "%s : %s" % (base, role)  # as the runner's flow.unnamed words it
        if self.action == "include_role":
            return base  # (IncludeRole.get_name: never its role's prefix)
        return "%s : %s" % (self.role, base) if self.role else base


@dataclass(frozen=True)
class Block:
    """A block with its rescue and always sections.

    Imports and roles are expanded into blocks too (``implicit=True``): that
    gives their ``vars`` a lexical scope without inventing a task.
    """

    block: Tuple["Node", ...]
    location: Location
    rescue: Tuple["Node", ...] = ()
    always: Tuple["Node", ...] = ()
    name: Optional[str] = None
    vars: Mapping[str, Any] = field(default_factory=dict)
    #: Role parameters (``roles: [{role: x, p: 1}]``): above set_fact (L6.3).
    params: Mapping[str, Any] = field(default_factory=dict)
    #: Defaults of a role brought by ``include_role``: lowest precedence, and
    #: private to the role's tasks (``roles:``/``import_role`` defaults are
    #: the play's, see ``Play.role_defaults``).
    defaults: Mapping[str, Any] = field(default_factory=dict)
    implicit: bool = False
    role: Optional[str] = None
    role_path: Optional[str] = None
    #: For an ``include_tasks``/``include_role`` whose file is known at load
    #: time: the include task itself. It runs first, per host; a host whose
    #: include is skipped never reaches the block (L7.8). Its ``when`` is not
    #: inherited by the included tasks (includes are dynamic).
    include: Optional[Task] = None
    #: For a static ``include_role``'s block: the names Ansible's ``play.roles``
    #: gains when the include runs (``IncludeRole.get_block_list``), the
    #: role's own first, then its dependencies' (role name magic variables).
    included_roles: Tuple[str, ...] = ()
    #: The tasks of a dynamic include, for one included file and loop item:
    #: only these hosts reach them (the others never do, L7.8). Empty: all.
    hosts: Tuple[str, ...] = ()
    #: One occurrence of a role's own tasks (not its dependencies'), keyed by
    #: the play's cached role: a host for which that role completed (a task of
    #: it ran, not skipped or unreachable, and the host got to its end) does
    #: not reach it, unless ``role_repeats``. None: not a role.
    role_key: Optional[str] = None
    #: The role allowed duplicates when this occurrence was converted
    #: (``allow_duplicates``): it runs whether the role completed or not, and
    #: completes it all the same (Ansible's cached role is one object, whose
    #: ``allow_duplicates`` an include may change for its later occurrences).
    role_repeats: bool = False
    #: One whole occurrence of a role (its own blocks, every level of them):
    #: a ``meta: end_role`` inside skips the rest of this block, as linear
    #: skips the host's next tasks while they are that role's.
    role_end: bool = False


Node = Union[Task, Block]


@dataclass(frozen=True)
class Play:
    """One play. ``tasks`` already holds the expanded ``roles:`` first."""

    name: str
    hosts: str
    location: Location
    vars: Mapping[str, Any] = field(default_factory=dict)
    #: Where the name was written: the ``name:`` value, or the ``hosts:`` one
    #: for a play without a name (what an error templating it points at).
    name_location: Optional[Location] = None
    #: Where each of the play's own ``vars`` was written (``path:line:col``):
    #: an error about such a variable's value names it.
    var_origins: Mapping[str, str] = field(default_factory=dict)
    #: Merged data of ``vars_files``, above ``vars`` (L6.3).
    vars_files: Mapping[str, Any] = field(default_factory=dict)
    #: Merged ``defaults/`` of every role in the play: lowest precedence.
    role_defaults: Mapping[str, Any] = field(default_factory=dict)
    #: Merged ``vars/`` of every public role of the play (``roles:``,
    #: ``import_role``, their dependencies), in load order: every task of the
    #: play sees them, above ``vars_files`` (a role's own tasks see its own
    #: vars above the others', as block vars). Ansible's "exported" role vars.
    role_vars: Mapping[str, Any] = field(default_factory=dict)
    #: The play's roles (``roles:`` and ``import_role``, in load order, as
    #: Ansible's ``play.roles``; FQCN for a collection's) and the names of all
    #: their dependencies: ``ansible_play_role_names`` (``role_names``),
    #: ``ansible_dependent_role_names`` and, both together, ``ansible_role_names``.
    role_names: Tuple[str, ...] = ()
    dependent_role_names: Tuple[str, ...] = ()
    gather_facts: bool = True
    #: The module key of Ansible's ``setup`` when fact gathering runs Ansible's
    #: own module (``Task.module``); None: ioc's own ``setup``.
    gather_module: Optional[str] = None
    pre_tasks: Tuple[Node, ...] = ()
    tasks: Tuple[Node, ...] = ()
    post_tasks: Tuple[Node, ...] = ()
    #: Role handlers first, then the play's own, in definition order (L5.4).
    handlers: Tuple[Task, ...] = ()
    serial: Any = None
    any_errors_fatal: Any = None
    max_fail_percentage: Any = None
    force_handlers: bool = False
    ignore_unreachable: Any = None
    order: Optional[str] = None
    tags: Tuple[str, ...] = ()
    #: The play's own ``become*`` keywords (its tasks inherit them; fact
    #: gathering runs under them, as in Ansible).
    become: Mapping[str, Any] = field(default_factory=dict)
    #: The play's ``environment``, which fact gathering runs with too (as in Ansible).
    environment: Any = None
    #: The play's ``remote_user``: the login user where no host variable
    #: (``ansible_user``) names one; above ``-u`` and ansible.cfg.
    remote_user: Any = None
    #: The play's ``connection``: the connection type where no host variable
    #: (``ansible_connection``) names one; above ``-c`` and ansible.cfg.
    connection: Any = None
    #: Directory the playbook lives in, for relative ``src``/lookups.
    basedir: str = "."
    #: ``vars_prompt`` entries as written (``name``, ``prompt``, ``default``,
    #: ``private``, ...): asked when the play starts, answers become play vars.
    vars_prompt: Tuple[Mapping[str, Any], ...] = ()
    #: What the implicit fact gathering runs ``setup`` with: the play's
    #: ``gather_subset``/``gather_timeout``/``fact_path`` (then, once
    #: ``ioc.ansible.modules`` attached them, the ``module_defaults`` of setup).
    gather_args: Mapping[str, Any] = field(default_factory=dict)
    #: The play's ``module_defaults`` (the implicit fact gathering's).
    module_defaults: Tuple[Mapping[str, Any], ...] = ()
    #: The play's ``collections`` keyword.
    collections: Optional[Tuple[str, ...]] = None
    #: The play's ``port``: the connection port of hosts without ``ansible_port``.
    port: Optional[int] = None


@dataclass(frozen=True)
class Playbook:
    path: str
    plays: Tuple[Play, ...]


@dataclass(frozen=True)
class Host:
    """An inventory host and the variables set on it directly."""

    name: str
    vars: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Group:
    name: str
    hosts: Tuple[str, ...] = ()
    children: Tuple[str, ...] = ()
    vars: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Inventory:
    """Hosts in definition order, and groups (``all`` and ``ungrouped`` included)."""

    hosts: Mapping[str, Host]
    groups: Mapping[str, Group]
    #: True when no inventory was given and ``localhost`` is the implicit target.
    implicit_localhost: bool = False


def to_wire(value: Any) -> Any:
    """Turn IR (or any mix of IR and builtins) into builtins only.

    Dataclasses become dicts tagged with ``"kind"``; tuples become lists;
    mappings become plain dicts. Fields equal to their default are left out to
    keep batches small.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict = {"kind": type(value).__name__.lower()}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if _is_default(f, item):
                continue
            out[f.name] = str(item) if isinstance(item, Location) else to_wire(item)
        return out
    if isinstance(value, Mapping):
        return {str(k): to_wire(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_wire(v) for v in value]
    return value


def _is_default(f: "dataclasses.Field[Any]", value: Any) -> bool:
    if f.default is not dataclasses.MISSING:
        return bool(value == f.default)
    if f.default_factory is not dataclasses.MISSING:
        return bool(value == f.default_factory())
    return False
