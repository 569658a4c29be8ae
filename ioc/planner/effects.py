"""What each task reads and writes, found statically from its templates.

Every templated field of a task is parsed with jinja2 (the AST only, with the
runner's extensions) and walked by a small scope-aware visitor: names bound
inside the template (``{% set %}``, ``{% for %}`` targets, macro and call
arguments, ``{% with %}``) are not reads; everything else loaded by name is.
A bare conditional (``when``, ``changed_when``, ``failed_when``, ``until``
without ``{{``) is an expression, as the runner evaluates it; YAML booleans
and other non-strings are not templates.

Rules for names the task itself binds:

* A looping task's loop variable (``loop_control.loop_var``, default
  ``item``), its ``index_var``, ``ansible_loop``, ``ansible_loop_var`` and
  ``ansible_index_var`` are not reads in any field except ``loop`` itself (the
  loop expression is evaluated before any item exists).
* The task's own ``register`` is not a read in ``until``, ``changed_when`` and
  ``failed_when``: it is bound to the current attempt there (L3.2). Elsewhere
  (``when``, ``args``, ...) it *is* a read: inside a loop it holds the previous
  item's result (L2.7), before the first item whatever an earlier task left.
  :func:`classify` only looks at *earlier* entries, so such a self-read is
  HOST_RUNTIME only when an earlier entry writes the same name.
* Task ``vars`` are **not** treated as shadowing: set_fact and registered
  values outrank task and block vars (L6.3, and the runner's ChainMap), so a
  name a task defines in ``vars`` still reads an earlier set_fact/register of
  that name. Reads keep such names; :attr:`Effects.local` lists the names the
  task's ``vars`` define, and :func:`classify` resolves them (runtime writer
  first, then the lazily templated definition).

Writes use the names themselves plus markers: :data:`FACTS` (fact gathering;
satisfies reads of ``ansible_*``/``ansible_facts``), :data:`INVENTORY`
(``add_host``/``group_by``; satisfies ``groups``/``group_names``),
:data:`INCLUDE_VARS` and :data:`DYNAMIC` (names unknown at plan time: they
*may* write any name).
"""
from __future__ import annotations

import dataclasses

import enum
from dataclasses import dataclass
from typing import (AbstractSet, Any, Callable, Dict, FrozenSet, Iterable, Iterator, List,
                    Mapping, Optional, Sequence, Set, Tuple)

import jinja2
from jinja2 import nodes

from ioc.errors import PlanError
from ioc.model import Task
from ioc.planner.program import Program

FACTS = "<facts>"
INVENTORY = "<inventory>"
INCLUDE_VARS = "<include_vars>"
#: Written by an ``include_role``: Ansible's ``play.roles`` gains its role
#: when the include runs, for every host (satisfies :data:`ROLE_MAGIC`).
ROLES = "<roles>"
DYNAMIC = "<dynamic>"
#: Markers whose writer may have written *any* name.
WILDCARDS = frozenset({DYNAMIC, INCLUDE_VARS})
#: The host the template runs for, as a HostvarsAccess host.
SELF = "<self>"

#: Magic variables that reflect other hosts' state (L6.6).
CROSS_HOST_MAGIC = frozenset({
    "groups", "ansible_play_hosts", "ansible_play_batch", "play_hosts",
    "ansible_play_hosts_all", "ansible_failed_hosts", "ansible_current_hosts",
})
#: Of those, the ones fixed for the whole play (L6.6: failures do not change
#: ``ansible_play_hosts_all``) or changed only by add_host/group_by.
_STATIC_CROSS_MAGIC = frozenset({"ansible_play_hosts_all"})
_INVENTORY_MAGIC = frozenset({"groups", "group_names"})
#: The play's role names: an include_role that ran on any host adds to them.
ROLE_MAGIC = frozenset({"role_names", "ansible_role_names", "ansible_play_role_names",
                        "ansible_dependent_role_names"})
#: Variables Ansible sets itself, above any group_vars/host_vars: a new
#: group's or host's vars files (add_host, group_by) cannot change them.
FIXED_MAGIC = frozenset({
    "inventory_hostname", "inventory_hostname_short", "inventory_dir", "inventory_file",
    "playbook_dir", "omit", "ansible_play_name", "ansible_playbook_python",
    "ansible_config_file", "ansible_version", "ansible_check_mode", "ansible_diff_mode",
    "ansible_forks", "ansible_inventory_sources", "ansible_limit", "ansible_run_tags",
    "ansible_skip_tags", "ansible_verbosity", "ansible_search_path", "role_name", "role_path",
    "role_names", "ansible_role_name", "ansible_role_names", "ansible_play_role_names",
    "ansible_dependent_role_names", "ansible_collection_name", "ansible_parent_role_names",
    "ansible_parent_role_paths", "ansible_loop", "ansible_loop_var", "ansible_index_var",
    "item", "environment",
})
#: Written by the failing task of the enclosing block (L4.1).
RUNTIME_MAGIC = frozenset({"ansible_failed_task", "ansible_failed_result"})
#: Names the runner or jinja provide as functions: a call of one reads no
#: variable; the bare name reads the variable that hides it, if any.
GLOBALS = frozenset({
    "lookup", "query", "q", "range", "dict", "lipsum", "cycler", "joiner", "namespace",
    "now", "undef",
})
LOOKUP_FUNCTIONS = frozenset({"lookup", "query", "q"})
#: ``ansible_*`` names that are connection settings or magic, not facts.
_NOT_FACTS = frozenset({
    "ansible_host", "ansible_port", "ansible_user", "ansible_password", "ansible_connection",
    "ansible_python_interpreter", "ansible_check_mode", "ansible_diff_mode", "ansible_version",
    "ansible_run_tags", "ansible_skip_tags", "ansible_limit", "ansible_forks",
    "ansible_verbosity", "ansible_playbook_python", "ansible_config_file",
    "ansible_inventory_sources", "ansible_search_path", "ansible_role_names",
    "ansible_parent_role_names", "ansible_dependent_role_names", "ansible_role_name",
    "ansible_collection_name", "ansible_private_key_file", "ansible_shell_type",
    "ansible_shell_executable", "ansible_index_var", "ansible_loop_var", "ansible_loop",
}) | CROSS_HOST_MAGIC | RUNTIME_MAGIC
_NOT_FACTS_PREFIXES = ("ansible_become", "ansible_ssh_", "ansible_play_")

FACT_ACTIONS = frozenset({"setup", "gather_facts"})
INVENTORY_ACTIONS = frozenset({"add_host", "group_by"})
INCLUDE_ACTIONS = frozenset({"include_tasks", "include_role", "include"})
#: ``with_<name>`` loops that are plain lists, not lookup calls.
PLAIN_LOOPS = frozenset({"items", "list"})

#: Task keywords templated at run time, in report order (``args`` first).
_FIELDS = (
    "args", "name", "loop", "loop_control", "vars", "notify", "environment", "retries",
    "delay", "ignore_errors", "ignore_unreachable", "no_log", "check_mode", "diff",
    "delegate_to", "delegate_facts", "run_once", "any_errors_fatal", "throttle", "async_val",
    "poll", "timeout", "become",
    "become_user", "become_method", "become_flags", "become_exe", "remote_user", "connection",
)
_CONDITIONS = ("when", "changed_when", "failed_when", "until")
#: Fields where the task's register is the current attempt's result (L3.2).
_REGISTER_BOUND = frozenset({"until", "changed_when", "failed_when"})

_ENV = jinja2.Environment(extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols"])


class Origin(enum.Enum):
    STATIC = "static"
    HOST_RUNTIME = "host-runtime"
    CROSS_HOST = "cross-host"


_RANK = {Origin.STATIC: 0, Origin.HOST_RUNTIME: 1, Origin.CROSS_HOST: 2}


def worst(origins: Iterable[Origin]) -> Origin:
    """The most restrictive origin of ``origins`` (STATIC when empty)."""
    return max(origins, key=_RANK.__getitem__, default=Origin.STATIC)


@dataclass(frozen=True)
class Read:
    """A free top-level variable ``name`` read by the task's ``field``."""

    name: str
    field: str


@dataclass(frozen=True)
class LookupCall:
    """A ``lookup()``/``query()``/``q()`` call or a ``with_<lookup>`` loop."""

    plugin: Optional[str]
    field: str
    #: Every argument (plugin name included) is a constant literal.
    static_args: bool
    #: Free variables used in its arguments.
    reads: FrozenSet[str]
    source: str
    #: Its constant terms (the arguments after the plugin's name) when every
    #: argument is constant: the files a ``template`` lookup renders.
    terms: Tuple[Any, ...] = ()


@dataclass(frozen=True)
class HostvarsAccess:
    """``hostvars[host]...``: ``host`` None when computed, SELF for inventory_hostname."""

    host: Optional[str]
    attrs: Tuple[str, ...]
    field: str


@dataclass(frozen=True)
class Effects:
    reads: FrozenSet[Read] = frozenset()
    writes: FrozenSet[str] = frozenset()
    lookups: Tuple[LookupCall, ...] = ()
    hostvars: Tuple[HostvarsAccess, ...] = ()
    magic_cross_host: FrozenSet[str] = frozenset()
    filters: FrozenSet[str] = frozenset()
    tests: FrozenSet[str] = frozenset()
    #: Names the task's own ``vars:`` define (they do not shadow runtime writes).
    local: FrozenSet[str] = frozenset()
    #: A ``template`` lookup of the task renders a file the planner could not
    #: read (a computed name, or no reader given): it may read any name.
    opaque_files: bool = False

    @property
    def read_names(self) -> FrozenSet[str]:
        return frozenset(r.name for r in self.reads)

    def fields_reading(self, name: str) -> Tuple[str, ...]:
        return tuple(sorted({r.field for r in self.reads if r.name == name}))


NO_EFFECTS = Effects()


# --------------------------------------------------------------- templates


class TemplateRefs:
    """What one or more templates reference (accumulated per field)."""

    def __init__(self) -> None:
        self.names: Dict[str, str] = {}          # name -> first field, insertion-ordered
        self.reads: Set[Read] = set()
        self.lookups: List[LookupCall] = []
        self.hostvars: List[HostvarsAccess] = []
        self.filters: Set[str] = set()
        self.tests: Set[str] = set()


def parse(text: str, where: Any = None) -> nodes.Template:
    try:
        return _ENV.parse(text)
    except jinja2.TemplateSyntaxError as exc:
        raise PlanError("template error while templating string: %s. String: %s"
                        % (exc.message, text), where) from None


def is_template(value: Any) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def condition_source(cond: Any) -> Optional[str]:
    """A conditional as template source; None for YAML booleans."""
    if not isinstance(cond, str):
        return None
    return cond if is_template(cond) else "{{ %s }}" % cond


def template_strings(value: Any) -> Iterator[str]:
    """Every templated string in ``value`` (dict keys too), in order."""
    if isinstance(value, str):
        if is_template(value):
            yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from template_strings(key)
            yield from template_strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from template_strings(item)


def named_per_item(value: Any) -> bool:
    """Whether a controller file's naming argument ``value`` can name another
    file for each loop item (it holds a template); a name written as it is
    is every item's. The planner checks a loop's variables for the
    controller exactly when the controller evaluates the loop to find the
    file (``dataflow.controller_reads``, ``controller/payloads._sources``)."""
    return any(template_strings(value))


class _Visitor:
    """Walks one template AST collecting free names, lookups and hostvars."""

    def __init__(self, refs: TemplateRefs, field: str, source: str,
                 excluded: AbstractSet[str]) -> None:
        self.refs = refs
        self.field = field
        self.source = source
        self.excluded = excluded

    # -- recording ---------------------------------------------------------

    def read(self, name: str, bound: AbstractSet[str]) -> None:
        if name in bound or name in self.excluded:
            return
        self.refs.reads.add(Read(name, self.field))
        self.refs.names.setdefault(name, self.field)

    def free_names(self, node: nodes.Node, bound: AbstractSet[str]) -> FrozenSet[str]:
        """The free names of ``node`` (recorded as reads too)."""
        sub = TemplateRefs()
        _Visitor(sub, self.field, self.source, self.excluded).expr(node, bound)
        self._merge(sub)
        return frozenset(sub.names)

    def _merge(self, sub: TemplateRefs) -> None:
        for name, fld in sub.names.items():
            self.refs.names.setdefault(name, fld)
        self.refs.reads |= sub.reads
        self.refs.lookups.extend(sub.lookups)
        self.refs.hostvars.extend(sub.hostvars)
        self.refs.filters |= sub.filters
        self.refs.tests |= sub.tests

    # -- statements ---------------------------------------------------------

    def stmts(self, body: Sequence[nodes.Node], bound: AbstractSet[str]) -> None:
        """Statements in order; ``{% set %}`` binds for the statements after it."""
        scope = set(bound)
        for node in body:
            if isinstance(node, nodes.Assign):
                self.expr(node.node, scope)
                self._assign_target(node.target, scope)
            elif isinstance(node, nodes.AssignBlock):
                self.stmts(node.body, scope)
                if node.filter is not None:
                    self.expr(node.filter, scope)
                self._assign_target(node.target, scope)
            elif isinstance(node, nodes.Macro):
                for default in node.defaults:
                    self.expr(default, scope)
                inner = scope | _names(node.args) | {"varargs", "kwargs", "caller", node.name}
                self.stmts(node.body, inner)
                scope.add(node.name)
            elif isinstance(node, (nodes.Import, nodes.FromImport)):
                self.expr(node.template, scope)
                if isinstance(node, nodes.Import):
                    scope.add(node.target)
                else:
                    for name in node.names:
                        scope.add(name[1] if isinstance(name, tuple) else name)
            else:
                self.stmt(node, scope)

    def _assign_target(self, target: nodes.Node, scope: Set[str]) -> None:
        if isinstance(target, nodes.NSRef):
            self.read(target.name, scope)   # the namespace must already exist
        else:
            scope |= _names([target])

    def stmt(self, node: nodes.Node, bound: AbstractSet[str]) -> None:
        if isinstance(node, nodes.For):
            self.expr(node.iter, bound)
            inner = set(bound) | _names([node.target]) | {"loop"}
            if node.test is not None:
                self.expr(node.test, inner)
            self.stmts(node.body, inner)
            self.stmts(node.else_, bound)
        elif isinstance(node, nodes.If):
            # A {% set %} inside a branch may not run: later reads stay free.
            self.expr(node.test, bound)
            self.stmts(node.body, bound)
            for elif_ in node.elif_:
                self.stmt(elif_, bound)
            self.stmts(node.else_, bound)
        elif isinstance(node, nodes.With):
            for value in node.values:
                self.expr(value, bound)
            self.stmts(node.body, set(bound) | _names(node.targets))
        elif isinstance(node, nodes.CallBlock):
            self.expr(node.call, bound)
            for default in node.defaults:
                self.expr(default, bound)
            self.stmts(node.body, set(bound) | _names(node.args) | {"caller"})
        elif isinstance(node, nodes.FilterBlock):
            self.expr(node.filter, bound)
            self.stmts(node.body, bound)
        elif isinstance(node, (nodes.Scope, nodes.ScopedEvalContextModifier,
                               nodes.EvalContextModifier, nodes.OverlayScope)):
            for child in node.iter_child_nodes():
                if isinstance(child, nodes.Stmt):
                    self.stmts([child], bound)
                else:
                    self.expr(child, bound)
        elif isinstance(node, nodes.Stmt):
            for child in node.iter_child_nodes():
                if isinstance(child, nodes.Stmt):
                    self.stmts([child], bound)
                else:
                    self.expr(child, bound)
        else:
            self.expr(node, bound)

    # -- expressions ----------------------------------------------------------

    def expr(self, node: Optional[nodes.Node], bound: AbstractSet[str]) -> None:
        if node is None:
            return
        if isinstance(node, nodes.Name):
            if node.ctx == "load":
                if self._is_free(node, "hostvars", bound) and "hostvars" not in self.excluded:
                    self._record_whole_hostvars()
                self.read(node.name, bound)
            return
        if isinstance(node, (nodes.Getattr, nodes.Getitem)):
            if self._special_access(node, bound):
                return
        elif isinstance(node, nodes.Filter):
            self.refs.filters.add(node.name)
        elif isinstance(node, nodes.Test):
            self.refs.tests.add(node.name)
        elif isinstance(node, nodes.Call):
            if self._lookup_call(node, bound):
                return
            if isinstance(node.node, nodes.Name) and node.node.name in GLOBALS:
                # A global function called: its arguments are read, not its name
                # (a variable of that name hides the function: ``{{ q }}`` reads it).
                for child in node.iter_child_nodes():
                    if child is not node.node:
                        self.expr(child, bound)
                return
        for child in node.iter_child_nodes():
            if isinstance(child, nodes.Stmt):
                self.stmts([child], bound)
            else:
                self.expr(child, bound)

    def _is_free(self, node: nodes.Node, name: str, bound: AbstractSet[str]) -> bool:
        return isinstance(node, nodes.Name) and node.name == name and name not in bound

    def _special_access(self, node: Any, bound: AbstractSet[str]) -> bool:
        """``hostvars[..]...`` and ``vars[..]``; True when handled."""
        if self._hostvars_host(node.node, bound):
            # hostvars[h].attr / hostvars[h]['attr']
            attr = _constant_key(node)
            self._record_hostvars(node.node, (attr,) if attr is not None else (), bound)
            if attr is None and isinstance(node, nodes.Getitem):
                self.expr(node.arg, bound)
            return True
        if self._hostvars_host(node, bound):
            self._record_hostvars(node, (), bound)
            return True
        if self._is_free(node.node, "vars", bound) and "vars" not in self.excluded:
            key = _constant_key(node)
            if key is not None:
                self.read(key, bound)
                return True
        return False

    def _record_whole_hostvars(self) -> None:
        entry = HostvarsAccess(None, (), self.field)
        if entry not in self.refs.hostvars:
            self.refs.hostvars.append(entry)

    def _hostvars_host(self, node: nodes.Node, bound: AbstractSet[str]) -> bool:
        return (isinstance(node, (nodes.Getattr, nodes.Getitem))
                and self._is_free(node.node, "hostvars", bound))

    def _record_hostvars(self, access: nodes.Node, attrs: Tuple[str, ...],
                         bound: AbstractSet[str]) -> None:
        self.read("hostvars", bound)
        host = _constant_key(access)
        if host is None and isinstance(access, nodes.Getitem):
            if self._is_free(access.arg, "inventory_hostname", bound):
                host = SELF
            self.expr(access.arg, bound)
        if host == SELF:
            # hostvars[inventory_hostname].x is this host's own x.
            for attr in attrs:
                self.read(attr, bound)
        entry = HostvarsAccess(host, attrs, self.field)
        if entry not in self.refs.hostvars:
            self.refs.hostvars.append(entry)

    def _lookup_call(self, call: nodes.Call, bound: AbstractSet[str]) -> bool:
        if not (isinstance(call.node, nodes.Name) and call.node.name in LOOKUP_FUNCTIONS
                and call.node.name not in bound):
            return False
        plugin = None
        if call.args and isinstance(call.args[0], nodes.Const) and isinstance(call.args[0].value, str):
            plugin = call.args[0].value
        parts: List[Any] = list(call.args) + [kw.value for kw in call.kwargs]
        static = call.dyn_args is None and call.dyn_kwargs is None and all(
            _is_constant(p) for p in parts)
        reads: Set[str] = set()
        for part in parts + [call.dyn_args, call.dyn_kwargs]:
            if part is not None:
                reads |= self.free_names(part, bound)
        if plugin == "vars" and static:
            # lookup('vars', 'a', 'b') reads the variables a and b.
            for arg in call.args[1:]:
                if isinstance(arg.as_const(), str):
                    self.read(arg.as_const(), bound)
        terms = tuple(arg.as_const() for arg in call.args[1:]) if static else ()
        self.refs.lookups.append(LookupCall(plugin, self.field, static,
                                            frozenset(reads), self.source, terms))
        return True


def _names(targets: Iterable[nodes.Node]) -> Set[str]:
    out: Set[str] = set()
    for target in targets:
        if isinstance(target, nodes.Name):
            out.add(target.name)
        else:
            out |= {n.name for n in target.find_all(nodes.Name)}
    return out


def _constant_key(node: nodes.Node) -> Optional[str]:
    if isinstance(node, nodes.Getattr):
        return node.attr
    if isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const) \
            and isinstance(node.arg.value, str):
        return node.arg.value
    return None


def _is_constant(node: nodes.Node) -> bool:
    if isinstance(node, nodes.Const):
        return True
    if isinstance(node, (nodes.List, nodes.Tuple)):
        return all(_is_constant(i) for i in node.items)
    if isinstance(node, nodes.Dict):
        return all(_is_constant(p.key) and _is_constant(p.value) for p in node.items)
    return False


def scan(refs: TemplateRefs, text: str, field: str, excluded: AbstractSet[str] = frozenset(),
         where: Any = None) -> None:
    """Add what template ``text`` references (as ``field``) to ``refs``."""
    tree = parse(text, where)
    _Visitor(refs, field, text, excluded).stmts(tree.body, frozenset())


def value_refs(value: Any, field: str = "vars", where: Any = None) -> TemplateRefs:
    """What a (lazily templated) variable value references."""
    refs = TemplateRefs()
    for text in template_strings(value):
        scan(refs, text, field, where=where)
    return refs


# --------------------------------------------------------------- one task


def loop_names(task: Task) -> FrozenSet[str]:
    """Names a looping task binds per item (empty without a loop)."""
    if task.loop is None:
        return frozenset()
    control = task.loop_control or {}
    names = {str(control.get("loop_var") or "item"), "ansible_loop", "ansible_loop_var",
             "ansible_index_var"}
    if control.get("index_var"):
        names.add(str(control["index_var"]))
    return frozenset(names)


#: ``(task, name) -> texts``: the template file ``name`` (a ``template``
#: task's ``src``, a ``template`` lookup's term) as the controller finds it
#: for ``task``, then the templates it includes (imports, extends); none when
#: it is found nowhere (the task fails there), None when one cannot be read.
TemplateFiles = Callable[[Task, str], Optional[Sequence[str]]]


def analyze_task(task: Task, files: Optional[TemplateFiles] = None) -> Effects:
    """The reads, writes, lookups and hostvars accesses of one task.

    ``files`` reads the template files it renders: what they read counts as
    read by the task (field ``template_file`` for a ``template`` task's,
    rendered on the target; ``lookup_file`` for a ``template`` lookup's,
    rendered by the controller before the batch)."""
    refs = TemplateRefs()
    where = task.location
    loop_bound = loop_names(task)
    lookup_loop = task.loop is not None and task.loop_with is not None \
        and task.loop_with not in PLAIN_LOOPS
    for name in _FIELDS:
        value = task.loop_control if name == "loop_control" else getattr(task, name)
        excluded: AbstractSet[str] = loop_bound if name != "loop" else frozenset()
        if name == "loop" and lookup_loop:
            _lookup_loop(refs, task, where)
            continue
        for text in template_strings(value):
            scan(refs, text, name, excluded, where)
    for text in expression_args(task):
        scan(refs, text, "args", loop_bound, where)
    for name in _CONDITIONS:
        bound = set(loop_bound)
        if name in _REGISTER_BOUND and task.register:
            bound.add(task.register)
        for cond in getattr(task, name) or ():
            source = condition_source(cond)
            if source is not None:
                scan(refs, source, name, frozenset(bound), where)
    # loop_control.break_when: bare expressions, after each item, its result registered
    breaks = (task.loop_control or {}).get("break_when") if task.loop is not None else None
    for cond in breaks if isinstance(breaks, (list, tuple)) else [breaks] if breaks else ():
        source = condition_source(cond)
        if source is not None:
            bound = set(loop_bound) | ({task.register} if task.register else set())
            scan(refs, source, "loop_control", frozenset(bound), where)
    opaque = _template_files(refs, task, files, where)
    read_names = {r.name for r in refs.reads}
    return Effects(
        reads=frozenset(refs.reads),
        writes=writes_of(task),
        lookups=tuple(refs.lookups),
        hostvars=tuple(refs.hostvars),
        magic_cross_host=frozenset(read_names & CROSS_HOST_MAGIC),
        filters=frozenset(refs.filters),
        tests=frozenset(refs.tests),
        local=frozenset(str(k) for k in (task.vars or {})),
        opaque_files=opaque,
    )


def _template_files(refs: "TemplateRefs", task: Task, files: Optional[TemplateFiles],
                    where: Any) -> bool:
    """Add to ``refs`` the names and hostvars the task's template files read
    (see :func:`analyze_task`); True when a ``template`` lookup's file is
    unknown (its name computed, or no ``files``)."""
    named: List[Tuple[str, Any]] = []
    opaque = False
    if task.action == "template":
        src = task.args.get("src", task.args.get("_raw_params"))
        if isinstance(src, str) and not is_template(src):
            named.append(("template_file", src))
    for call in list(refs.lookups):
        if call.plugin == "template" or call.plugin is None:
            if call.static_args and call.plugin == "template" and files is not None:
                named += [("lookup_file", term) for term in call.terms]
            else:
                opaque = True
    unread = HostvarsAccess(None, (), "template_file")  # (it may read any host's)
    for field, name in named:
        texts = files(task, str(name)) if files is not None else None
        if texts is None:
            opaque = opaque or field == "lookup_file"
            if unread not in refs.hostvars:
                refs.hostvars.append(unread)
            continue
        for text in texts:
            found = TemplateRefs()
            try:
                if text.startswith("#jinja2:"):  # (delimiters of its own: not read here)
                    raise PlanError("")
                scan(found, text, field, frozenset(), where)
            except PlanError:  # (rendering reports what is wrong with the file)
                opaque = opaque or field == "lookup_file"
                if unread not in refs.hostvars:
                    refs.hostvars.append(unread)
                continue
            refs.reads |= {Read(r.name, field) for r in found.reads}
            for name_read in found.names:
                refs.names.setdefault(name_read, field)
            refs.hostvars.extend(h for h in found.hostvars if h not in refs.hostvars)
    return opaque


def expression_args(task: Task) -> Iterator[str]:
    """Module arguments that are bare expressions, as template source.

    ``assert``'s ``that`` items are conditionals and ``debug``'s ``var`` is
    evaluated as an expression: ``that: x == 1`` reads ``x`` though it has
    no ``{{``. (Their templated forms are already seen as ``args``.)
    ``validate_argument_spec`` reads the variable of each option its
    ``argument_spec`` names.
    """
    if task.action == "assert":
        that = task.args.get("that")
        for cond in that if isinstance(that, (list, tuple)) else [that]:
            if isinstance(cond, str) and not is_template(cond):
                yield "{{ %s }}" % cond
    elif task.action == "debug":
        var = task.args.get("var")
        if isinstance(var, str) and not is_template(var):
            yield "{{ %s }}" % var
    elif task.action == "validate_argument_spec":
        # The action reads the host's variable of each option the spec names;
        # a templated spec (or an option no expression can name) reads any.
        spec = task.args.get("argument_spec")
        names = list(spec) if isinstance(spec, dict) else [None]
        for name in names:
            ok = isinstance(name, str) and name.isidentifier() and not is_template(name)
            yield "{{ %s }}" % name if ok else "{{ vars }}"


def _lookup_loop(refs: TemplateRefs, task: Task, where: Any) -> None:
    """``with_<lookup>``: the terms are templated, then passed to the plugin."""
    sub = TemplateRefs()
    texts = list(template_strings(task.loop))
    for text in texts:
        scan(sub, text, "loop", where=where)
    refs.reads |= sub.reads
    for name, fld in sub.names.items():
        refs.names.setdefault(name, fld)
    refs.lookups.extend(sub.lookups)
    refs.hostvars.extend(h for h in sub.hostvars if h not in refs.hostvars)
    refs.filters |= sub.filters
    refs.tests |= sub.tests
    source = task.loop if isinstance(task.loop, str) else repr(task.loop)
    refs.lookups.append(LookupCall(task.loop_with, "loop", not texts,
                                   frozenset(sub.names), source))


def writes_of(task: Task) -> FrozenSet[str]:
    out: Set[str] = set()
    if task.register:
        out.add(task.register)
    action = task.action
    if action == "set_fact":
        for key in task.args:
            key = str(key)
            if key == "cacheable":
                continue
            if key in ("_raw_params", "_variable_params") or is_template(key):
                out.add(DYNAMIC)
            else:
                out.add(key)
    elif action in FACT_ACTIONS or task.module is not None:
        # Any of Ansible's modules may return ``ansible_facts`` (getent, ...).
        out.add(FACTS)
    elif action == "include_vars":
        out.add(INCLUDE_VARS)
        name = task.args.get("name")
        if isinstance(name, str) and name:
            out.add(DYNAMIC if is_template(name) else name)
    elif action in INVENTORY_ACTIONS:
        out.add(INVENTORY)
    elif action in INCLUDE_ACTIONS:
        # The included tasks are unknown until run time: they may write anything.
        out.add(DYNAMIC)
        if action == "include_role":
            out.add(ROLES)
    return frozenset(out)


# --------------------------------------------------------------- the program


def analyze_program(program: Program,
                    files: Optional[TemplateFiles] = None) -> Tuple[Effects, ...]:
    """Effects of every entry, by entry index (implicit flushes write nothing).

    The include task heading a statically inlined include writes nothing
    itself (its included tasks are entries of the program with effects of
    their own) but the play's role names (an ``include_role``'s, :data:`ROLES`).
    """
    heads = {e.index for e in program.entries if e.task.action in INCLUDE_ACTIONS}
    heads &= set(program.include_heads)
    out = []
    for entry in program.entries:
        if entry.implicit and entry.is_flush:
            out.append(NO_EFFECTS)
            continue
        effects = analyze_task(entry.task, files)
        if entry.index in heads:
            effects = dataclasses.replace(effects, writes=effects.writes & {ROLES})
        out.append(effects)
    return tuple(out)


def handler_writes(program: Program, topics: Optional[Iterable[str]] = None) -> FrozenSet[str]:
    """What the handlers notified by ``topics`` (all handlers if None) may write.

    A templated topic may name any handler; handlers notified by the handlers
    that run are followed too (they run in the same flush or a later one).
    """
    handlers = program.handlers
    chosen: Set[int] = set()
    todo = list(topics) if topics is not None else None
    if todo is None:
        chosen = set(range(len(handlers)))
    while todo:
        topic = todo.pop()
        for number, handler in enumerate(handlers):
            if number in chosen:
                continue
            if is_template(topic) or topic in _handler_topics(handler):
                chosen.add(number)
                todo.extend(handler.notify)
    out: Set[str] = set()
    for number in sorted(chosen):
        out |= writes_of(handlers[number])
    return frozenset(out)


def _handler_topics(handler: Task) -> Set[str]:
    topics = set(handler.listen)
    if handler.name and handler.name_error is None:
        topics.add(handler.name)
        if handler.role:
            topics.add("%s : %s" % (handler.role, handler.name))
    return topics


def notifiable(handlers: Sequence[Task]) -> Optional[FrozenSet[str]]:
    """Every name a notification can give that some handler answers to: a
    name, ``role : name`` (a collection role's short name too), a listen
    topic. A handler whose templated name could not be templated
    (``name_error``) answers to its topics only. None when that is known only
    at run time: a handler's name is still a template (the front ends
    template them before they plan a play they run, with the play's
    variables as linear does; ``ioc-run --plan`` does not)."""
    out: Set[str] = set()
    for handler in handlers:
        if handler.name and handler.name_error is None and is_template(handler.name):
            return None
        out |= _handler_topics(handler)
        if handler.name and handler.name_error is None and handler.role \
                and handler.role_collection:
            out.add("%s : %s" % (handler.role.rsplit(".", 1)[-1], handler.name))
    return frozenset(out)


def effective_writes(program: Program, effects: Sequence[Effects]) -> Tuple[FrozenSet[str], ...]:
    """Per entry, what it writes; a flush writes what its handlers may write.

    Which handlers a flush runs is known only at run time, so a flush counts
    every handler that any entry since the previous flush notifies (whether
    or not that entry changes anything), with handler chains followed.
    """
    out = []
    pending: List[str] = []
    for entry in program.entries:
        writes = effects[entry.index].writes
        if entry.is_flush:
            if pending:
                writes = writes | handler_writes(program, pending)
            pending = []
        else:
            pending.extend(entry.task.notify)
        out.append(writes)
    return tuple(out)


def is_fact_name(name: str) -> bool:
    if name == "ansible_facts":
        return True
    return (name.startswith("ansible_") and name not in _NOT_FACTS
            and not name.startswith(_NOT_FACTS_PREFIXES))


def definite_keys(name: str) -> FrozenSet[str]:
    """Write keys that certainly (re)define ``name``."""
    keys = {name}
    if is_fact_name(name):
        keys.add(FACTS)
    if name in _INVENTORY_MAGIC:
        keys.add(INVENTORY)
    return frozenset(keys)


def satisfies(writes: AbstractSet[str], name: str) -> bool:
    """Whether an entry writing ``writes`` may write ``name``."""
    return bool(writes & (definite_keys(name) | WILDCARDS))


def classify(program: Program, effects: Sequence[Effects]) -> Tuple[Dict[str, Origin], ...]:
    """Per entry: each name it reads → where its value comes from.

    * CROSS_HOST: ``hostvars`` of another (or a computed) host unless every
      attribute read is provably static; ``ansible_play_hosts``-like magic;
      ``groups``/``group_names`` once an add_host/group_by entry precedes;
      the role name magic variables once an ``include_role`` precedes.
    * HOST_RUNTIME: written by an earlier entry (a flush counts the writes of
      the handlers notified since the previous flush; a DYNAMIC/include_vars writer counts for every name; fact
      gathering for ``ansible_*``), or ``ansible_failed_*``. A task reading its
      own register (``when`` in a loop, L2.7) is HOST_RUNTIME only if an
      *earlier* entry writes that name.
    * Otherwise the name is resolved through the definitions that template it
      lazily at run time — task vars, enclosing block params and vars, play
      vars_files, vars, role defaults, highest precedence first — and takes the
      worst origin of what that definition reads (cycles count as STATIC).
    * STATIC otherwise: inventory, extra vars, static magic, undefined.
    """
    writes = effective_writes(program, effects)
    out = []
    seen: Set[str] = set()
    for entry in program.entries:
        resolver = _Resolver(program, entry.index, frozenset(seen))
        eff = effects[entry.index]
        out.append({r.name: resolver.origin(r.name, eff.hostvars)
                    for r in sorted(eff.reads, key=lambda r: (r.name, r.field))})
        seen |= writes[entry.index]
    return tuple(out)


_UNDEFINED = object()


def definition(program: Program, index: int, name: str, play_only: bool = False) -> Any:
    """The lazily templated value that defines ``name`` for entry ``index``.

    Looks in the layers the runner stacks below set_fact/register, highest
    precedence first (L6.3): enclosing blocks' role params, the task's vars,
    enclosing blocks' vars (inner first), then the play's vars_files, vars
    and role defaults (only those with ``play_only``, e.g. for another host's
    ``hostvars``). Returns ``_UNDEFINED`` when none defines it (inventory,
    extra vars and magic are not known here).
    """
    play = program.play
    layers: List[Mapping[str, Any]] = []
    if not play_only:
        task = program.entries[index].task
        blocks = program.parents[index] if program.parents else ()
        layers += [b.params for b in reversed(blocks)]
        layers.append(task.vars or {})
        layers += [b.vars for b in reversed(blocks)]
    layers += [play.vars_files, play.vars]
    if not play_only:
        layers += [b.defaults for b in reversed(blocks)]
    layers.append(play.role_defaults)
    for layer in layers:
        if name in layer:
            return layer[name]
    return _UNDEFINED


def lazy_reads(program: Program, index: int, names: Iterable[str]) -> FrozenSet[str]:
    """Names read *through* the definitions of ``names`` at entry ``index``, transitively.

    ``vars: {d: "{{ r.stdout }}"}`` makes a read of ``d`` a read of ``r``.
    The result excludes ``names`` themselves unless reached again.
    """
    out: Set[str] = set()
    todo = list(names)
    seen: Set[str] = set()
    task = program.entries[index].task
    where = task.location
    per_item = loop_names(task)     # vars are templated per item, item in scope
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        value = definition(program, index, name)
        if value is _UNDEFINED:
            continue
        refs = value_refs(value, where=where)
        for ref in refs.names:
            if ref not in per_item:
                out.add(ref)
                todo.append(ref)
        for access in refs.hostvars:
            out.update(access.attrs)
    return frozenset(out)


class _Resolver:
    """Origins of names read at entry ``index``, given what ran before it."""

    def __init__(self, program: Program, index: int, written: FrozenSet[str]) -> None:
        self.program = program
        self.index = index
        self.written = written
        self._cache: Dict[Tuple[str, bool], Origin] = {}

    def origin(self, name: str, hostvars: Sequence[HostvarsAccess] = (),
               play_only: bool = False, stack: FrozenSet[str] = frozenset()) -> Origin:
        if name == "hostvars":
            return self.hostvars_origin(hostvars, stack)
        if name in CROSS_HOST_MAGIC and name not in _INVENTORY_MAGIC:
            return Origin.STATIC if name in _STATIC_CROSS_MAGIC else Origin.CROSS_HOST
        if name in _INVENTORY_MAGIC:
            return Origin.CROSS_HOST if INVENTORY in self.written else Origin.STATIC
        if name in ROLE_MAGIC:
            # (the names as of the step's start: what any host included before)
            return Origin.CROSS_HOST if ROLES in self.written else Origin.STATIC
        if name in RUNTIME_MAGIC:
            return Origin.HOST_RUNTIME
        if name == "vars":
            return Origin.HOST_RUNTIME if self.written else Origin.STATIC
        if satisfies(self.written, name):
            return Origin.HOST_RUNTIME
        key = (name, play_only)
        if key in self._cache:
            return self._cache[key]
        if name in stack:
            return Origin.STATIC
        result = Origin.STATIC
        value = definition(self.program, self.index, name, play_only)
        if value is _UNDEFINED and INVENTORY in self.written and name not in FIXED_MAGIC \
                and not self._loop_variable(name):
            # Not a variable of the play: after add_host/group_by it may come
            # from a new group's group_vars (a new host's host_vars), which
            # the controller applies between batches.
            result = Origin.CROSS_HOST
        elif value is not _UNDEFINED:
            refs = value_refs(value, where=self.program.entries[self.index].task.location)
            inner = stack | {name}
            result = worst(self.origin(n, refs.hostvars, play_only, inner) for n in refs.names)
        if not stack:
            self._cache[key] = result
        return result

    def _loop_variable(self, name: str) -> bool:
        """``name`` is the reading task's own loop or index variable."""
        control = self.program.entries[self.index].task.loop_control or {}
        return name in (control.get("loop_var", "item"), control.get("index_var"),
                        control.get("extended_var"))

    def hostvars_origin(self, accesses: Sequence[HostvarsAccess],
                        stack: FrozenSet[str]) -> Origin:
        if not accesses:
            # hostvars used whole (e.g. piped to a filter).
            return Origin.CROSS_HOST if self.written else Origin.STATIC
        origins = []
        for access in accesses:
            if access.host == SELF:
                origins.append(worst(self.origin(a, (), False, stack) for a in access.attrs)
                               if access.attrs else
                               (Origin.HOST_RUNTIME if self.written else Origin.STATIC))
                continue
            if not access.attrs:
                origins.append(Origin.CROSS_HOST if self.written else Origin.STATIC)
                continue
            # Another host's attributes: static only if nothing at run time
            # (on any host, all run the same program) can have changed them.
            inner = worst(self.origin(a, (), True, stack) for a in access.attrs)
            origins.append(Origin.STATIC if inner is Origin.STATIC else Origin.CROSS_HOST)
        return worst(origins)
