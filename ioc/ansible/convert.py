"""Ansible's tasks and blocks → ioc's IR, task by task.

:class:`Converter` turns each Ansible ``Task`` (or handler) the linear
``PlayIterator`` would walk into an :class:`ioc.model.Task`, keyword for
keyword (``when`` with its origins, loops, ``register``, ``become*``, role
variables...), and blocks into IR blocks (a role's tasks in one block that
carries its parameters). Every IR task remembers the Ansible task it came
from (``Converter.origin``): the parent sends that one's callbacks.

Three verdicts per task:

* **native** — ioc's runner runs it; when its module is a plain Ansible
  module ioc does not implement (or whose options ioc's does not all take),
  the runner runs *Ansible's* module code (``Task.module``, built by
  :mod:`ioc.ansible.modules`);
* **through Ansible** — :meth:`Converter.refuse` records why
  (``Converter.reasons``): the planner makes the task a ``Where.ANSIBLE``
  step (see :mod:`ioc.ansible.through_ansible`);
* **the whole play through linear** — :meth:`Converter.fail` raises
  :class:`Fallback` with the reason.

An ``include_tasks`` whose file is known before it runs is loaded now and
inlined (:meth:`Converter.static_include`); other includes stay dynamic
(:mod:`ioc.ansible.includes`). The play as a whole (sections, fact
gathering, ``vars_files``) is :mod:`ioc.ansible.play`.
"""
from __future__ import annotations

import dataclasses
from typing import AbstractSet, Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ioc.ansible import modules
from ioc.ansible.values import plain, plain_vars, written_templates
from ioc.model import Block, IncludeScope, Location, Play, Task

_BUILTIN_PREFIXES = ("ansible.builtin.", "ansible.legacy.")
#: Dynamic task lists: the runner runs the include, the parent loads what each
#: host included with Ansible's own ``IncludedFile`` machinery, and both sides
#: splice the loaded tasks in after it (``ioc.ansible.includes.Includes.splice``).
BRIDGE_INCLUDES = frozenset({"include_tasks", "include_role"})
#: Actions that run through Ansible's own task machinery, one task at a time
#: (their variables come back from Ansible's variable manager, their inventory
#: changes from their results, as for ioc's own add_host/group_by).
_BRIDGE_PER_TASK = frozenset({"pause", "add_host", "group_by"})
#: refresh_inventory re-reads Ansible's inventory sources in the main process:
#: it runs there (``_execute_meta``), and ioc's copy of the inventory follows.
_BRIDGE_META_PER_TASK = frozenset({"refresh_inventory"})


#: Variables that change which modules gather facts: ``ansible_facts_modules``
#: (``FACTS_MODULES`` for a host), and ``ansible_network_os``, for which
#: ``smart`` means that OS's facts module.
FACTS_CHOOSERS = ("ansible_facts_modules", "ansible_network_os")


class Fallback(Exception):
    """The play needs something ioc cannot run natively; the reason says what."""


@dataclasses.dataclass
class Converted:
    """A play in IR and, for every IR task, the Ansible task it came from."""

    play: Play
    origin: Dict[int, Any]
    #: Ansible's implicit fact-gathering task (the first iterator block's).
    gather: Any = None
    handlers: Tuple[Any, ...] = ()
    #: id(IR task) -> why it runs through Ansible rather than natively.
    reasons: Dict[int, str] = dataclasses.field(default_factory=dict)
    #: id(IR task) of those whose only reason is their action (a module or
    #: action plugin ioc lacks): the runner may decide whether a host reaches
    #: them, so they can stay inside a batch (``Batch.suspend``).
    action_only: AbstractSet[int] = frozenset()
    #: The converter that made ``play`` (it converts what dynamic includes load).
    converter: Any = None
    #: Per host, the ``vars_files`` values that differ between the play's hosts
    #: (templated file names); the IR's ``vars_files`` holds the shared ones.
    host_vars_files: Dict[str, Dict[str, Any]] = dataclasses.field(default_factory=dict)
    #: Fact gathering as an IR task of its own (it has options or a ``when``).
    gather_ir: Optional[Task] = None
    #: ``gathering = smart``: hosts that do not gather (their facts are cached).
    skip_gather: Tuple[str, ...] = ()

    def gather_index(self, program: Any) -> Optional[int]:
        """The program entry that gathers facts (implicit or :attr:`gather_ir`)."""
        for entry in program.entries:
            if (entry.implicit and entry.task.action == "gather_facts") or \
                    (self.gather_ir is not None and entry.task is self.gather_ir):
                return entry.index
        return None

    def fallback(self, task: Task) -> Optional[str]:
        """The planner's ``fallback`` predicate."""
        return self.reasons.get(id(task))

    def suspendable(self, task: Task) -> bool:
        """The planner's ``suspendable`` predicate: only the action is foreign."""
        return id(task) in self.action_only


def short_action(task: Any) -> str:
    """The task's action without ``ansible.builtin.``/``ansible.legacy.``.

    An action that is a template (``action: "{{ module }}"``) is resolved only
    when the task runs: asking Ansible for ``resolved_action`` before then
    makes it warn ("A plugin is sampling the task's resolved_action when it is
    not resolved"), which linear never does. Such a task keeps its template.
    """
    from ansible._internal._templating._jinja_bits import is_possibly_template

    resolved = getattr(task, "_resolved_action", None)
    if resolved is None and not is_possibly_template(task.action):
        resolved = task.resolved_action
    name = str(resolved or task.action)
    for prefix in _BUILTIN_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def _location(task: Any) -> Location:
    path = plain(task.get_path()) if hasattr(task, "get_path") else ""
    return Location.parse(path) if path else Location("<unknown>")


def _as_list(value: Any) -> List[Any]:
    """A keyword Ansible keeps as written: a scalar is a one-element list."""
    if value is None:
        return []
    if isinstance(value, (str, bool, int, float)):
        return [value]
    return list(value)


def _conditions(value: Any) -> Tuple[Any, ...]:
    out = []
    for cond in _as_list(value):
        out.append(bool(cond) if isinstance(cond, bool) else str.__str__(str(cond))
                   if not isinstance(cond, str) else plain(cond))
    return tuple(out)


def _that_origins(args: Any) -> Dict[str, Tuple[str, ...]]:
    """Where assert's ``that`` (``arg:that``) or each of its items
    (``arg:that[]``) was written, as Ansible's data tags say: ansible-core
    names it when a condition's result is not boolean."""
    that = (args or {}).get("that")
    key = "arg:that" if isinstance(that, str) else "arg:that[]" if isinstance(that, list) else None
    written = _condition_origins(that) if key else ()
    return {key: written} if key and written else {}


def _condition_origins(value: Any) -> Tuple[str, ...]:
    """Where each condition was written, as Ansible's data tags say (``path:line:col``).

    ansible-core names that position when a condition is not boolean; ""
    where the condition carries no origin (or the release tags none).
    """
    try:
        from ansible._internal._datatag._tags import Origin
    except ImportError:  # pragma: no cover - every supported release has data tags
        return ()
    out = []
    for cond in _as_list(value):
        origin = Origin.get_tag(cond) if isinstance(cond, str) else None
        out.append(str(origin) if origin is not None and origin.path and origin.line_num
                   else "")
    return tuple(out) if any(out) else ()


def _opt_conditions(value: Any) -> Optional[Tuple[Any, ...]]:
    return _conditions(value) if _as_list(value) else None


class Converter:
    """Converts one play's Ansible tasks and blocks (and what its includes load) to IR."""

    def __init__(self, play: Any, caps_actions: frozenset, loader: Any = None,
                 variable_manager: Any = None) -> None:
        self.play = play
        self.caps_actions = caps_actions
        #: With these, an include_tasks whose file is known is inlined (static_include).
        self.loader = loader
        self.vm = variable_manager
        #: A play-wide layer sets ``ansible_facts_modules`` (FACTS_MODULES): the
        #: play's fact gathering is Ansible's task (:meth:`fact_module`).
        self.facts_modules_set = False
        self.origin: Dict[int, Any] = {}
        #: id(Ansible include task) -> the warnings and deprecations loading its
        #: file raised (static_include), shown when a host includes it.
        self.load_warnings: Dict[int, List[Any]] = {}
        #: id(IR task) -> why ioc does not run it natively (it runs through Ansible).
        self.reasons: Dict[int, str] = {}
        self._why: Optional[str] = None
        #: Whether every reason given for the task being converted is its action.
        self._action_only = True
        #: id(IR task) of the tasks whose only reason is their action.
        self.action_only: Set[int] = set()
        #: Ansible's modules the converted tasks run in the runner.
        from ansible.utils.display import Display
        from ioc.ansible import modules
        self.modules = modules.ModuleSet(internal=modules.run_wide_args(Display().verbosity))
        self._module_why: Optional[str] = None
        self._options: Optional[Mapping[str, Any]] = None
        #: The private roles whose blocks are being converted (their defaults
        #: are on the outermost block of each: :meth:`_private_role_block`).
        self._private_roles: List[Any] = []
    def fail(self, task: Any, why: str) -> None:
        """A construct that sends the whole play to linear."""
        raise Fallback("%s (%s)" % (why, _location(task)))

    def refuse(self, why: str, action: bool = False) -> None:
        """A construct that sends this one task through Ansible (the first reason counts).

        ``action``: the reason is the action alone (a module or action plugin
        ioc does not run natively); the task's keywords are ioc's to decide.
        """
        if self._why is None:
            self._why = why
        self._action_only = self._action_only and action

    def task(self, task: Any, handler: bool = False, running: bool = False) -> Task:
        """``task`` (a handler: ``handler``) in ioc's IR, with why it runs through Ansible.

        ``running``: the play runs already (what a dynamic include brought),
        it can no longer be sent to linear as a whole.
        """
        self._why = None
        self._action_only = True
        action = short_action(task)
        dynamic = action in BRIDGE_INCLUDES
        if dynamic and handler:
            if not running:
                self.fail(task, "%s in a handler runs through Ansible's linear strategy" % action)
            # (AnsibleTasks.run_handler runs what it includes as handlers, as linear)
            self.refuse("%s in a handler runs through Ansible, and the handlers it includes"
                        % action)
            dynamic = False
        raw = plain(task.args or {})
        debugger = plain(getattr(task, "debugger", None))
        if debugger and str(debugger).strip().lower() != "never":
            self.fail(task, "debugger: %s needs Ansible's linear strategy" % debugger)
        for setting in ("connection", "remote_user"):
            if getattr(task, setting, None) != getattr(self.play, setting, None):
                # the batch runs over the play's connection; Ansible's own per task
                self.refuse("its %s differs from the play's" % setting)
        if getattr(task, "module_defaults", None) and not dynamic:
            raw = self.module_defaults(task, action, raw)
        if action == "meta" and raw.get("_raw_params") in _BRIDGE_META_PER_TASK:
            self.refuse("meta: %s acts on Ansible's controller state" % raw["_raw_params"])
        splat = _args_splat(task, raw)
        if splat is not None:
            self.refuse(splat)
        if _untrusted_args(task, action):
            self.refuse("its arguments hold untrusted text (!unsafe): Ansible does not "
                        "template it")
        condition = _untrusted_condition(task)
        if condition is not None:
            self.refuse("its %s is untrusted text (!unsafe): Ansible fails the task" % condition)
        keyword = _invalid_keyword(task)
        if keyword is not None:
            self.refuse("keyword %s has a value Ansible cannot convert (it fails the task)"
                        % keyword)
        plugin = _foreign_action_plugin(task, action, self.caps_actions)
        if plugin is not None:
            self.refuse("%s is the action plugin %s, not Ansible's own" % (task.action, plugin),
                        action=True)
        module_key = self.ansible_module(task, action, raw)
        if module_key is None and (
                "." in action or action in ("gather_facts", "setup")
                or (action not in self.caps_actions and action != "meta")):
            self.refuse(self._module_why or "module %s has no native ioc implementation" % action,
                        action=True)
        if action in _BRIDGE_PER_TASK:
            self.refuse("%s acts on Ansible's controller state" % action)
        if action == "include_vars":
            self.include_vars(task, raw)
        async_val = plain(getattr(task, "async_val", None)) or None
        if modules.async_requested(async_val):
            module_key, why = modules.async_module(self.modules, task.action,
                                                   getattr(task, "collections", None))
            if module_key is None:
                self.refuse(why or "async is not supported natively")
        throttle = plain(task.throttle) or None
        if throttle is not None and not isinstance(throttle, int):
            try:
                throttle = int(throttle)
            except (TypeError, ValueError):
                # A template: Ansible's strategy templates it per host when it
                # queues the task (and stops the run when it is no integer).
                self.refuse("a templated throttle is templated by Ansible's strategy")
                throttle = None
        environment: Dict[str, Any] = {}
        for env in task.environment or ():
            if not isinstance(env, Mapping):
                self.refuse("a templated environment is not supported natively")
                environment = {}
                break
            environment.update(written_templates(env))
        from ansible.parsing.vault import AnsibleVaultError

        variables = {}
        role = getattr(task, "_role", None)
        try:
            if role is not None:
                # (the roles that depend on it hand their vars down: Role.get_inherited_vars)
                variables.update(plain_vars(role.get_vars(task.get_dep_chain(),
                                                          include_params=False)))
            # (text not trusted as a template, !unsafe, stays so on the runner)
            variables.update(plain_vars(task.get_vars()))
        except AnsibleVaultError:
            # Ansible decrypts a vault value only where a task reads it
            self.refuse("its variables hold a vault value no secret given decrypts")
        variables.update(_parent_role_vars(task))
        role_params, role_defaults = _handler_role_scope(task) if handler else ({}, {})
        loop_control = getattr(task, "loop_control", None)
        control = plain(getattr(loop_control, "_ds", None) or {}) if loop_control else {}
        ir_location = _location(task)
        name, name_error = self.handler_name(task) if handler else (plain(task.name) or None, None)
        ir = Task(
            action=action,
            args=raw,
            location=ir_location,
            name=name,
            name_error=name_error,
            when=_conditions(task.when),
            when_origins=_condition_origins(task.when),
            origins=_that_origins(task.args) if action == "assert" else {},
            loop=plain(task.loop),
            loop_with=plain(task.loop_with) or None,
            loop_control=control if isinstance(control, dict) else {},
            register=self.register(task),
            changed_when=_opt_conditions(task.changed_when),
            failed_when=_opt_conditions(task.failed_when),
            until=_opt_conditions(task.until),
            retries=plain(task.retries),
            delay=plain(task.delay) if task.until else None,
            ignore_errors=plain(task.ignore_errors) or None,
            ignore_unreachable=plain(task.ignore_unreachable) or None,
            notify=tuple(str(n) for n in plain(_as_list(task.notify))),
            listen=tuple(str(n) for n in plain(_as_list(getattr(task, "listen", None))))
            if handler else (),
            vars=variables,
            role_params=role_params,
            role_defaults=role_defaults,
            no_log=plain(task.no_log) or None,
            environment=environment or None,
            # Ansible's defaults are the CLI's --check/--diff: always explicit here
            # (a template stays one: the runner templates it, omit included).
            check_mode=_flag_keyword(task.check_mode),
            diff=_flag_keyword(task.diff),
            delegate_to=plain(task.delegate_to) or None,
            delegate_facts=plain(task.delegate_facts) or None,
            run_once=plain(task.run_once) or None,
            any_errors_fatal=plain(task.any_errors_fatal) or None,
            throttle=throttle or None,
            async_val=async_val,
            poll=plain(getattr(task, "poll", None)),
            timeout=plain(getattr(task, "timeout", None)) or None,
            **become_keywords(task),
            omitted=omitted_keywords(task),
            role=plain(role.get_name()) if role is not None else None,
            role_path=plain(getattr(role, "_role_path", None)) if role is not None else None,
            role_collection=plain(getattr(role, "_role_collection", None)) or None
            if role is not None else None,
            search_path=self.search_path(task),
            # The planner cuts after it; what it loads comes from Ansible, not this scope.
            include_scope=IncludeScope(path=ir_location.path) if dynamic else None,
            module=module_key,
        )
        if dynamic:
            self._why = None  # the include itself runs nothing: always native
        self.origin[id(ir)] = task
        if self._why is not None:
            # A handler too: the flushes that can reach it run it through
            # Ansible, their other handlers natively.
            self.reasons[id(ir)] = self._why
            if self._action_only and not handler:
                self.action_only.add(id(ir))
        return ir

    def handler_name(self, handler: Any) -> Tuple[Optional[str], Optional[str]]:
        """The name a handler answers to, and why it could not be templated.

        As ``StrategyBase.search_handlers_by_notification``: a handler's name
        is templated once, with the play's variables and the handler's own
        (no host: host variables and facts are not there), and kept
        (``cached_name``) on the handler, whose banner shows it; when that
        fails the handler keeps its name and answers to its ``listen``
        topics only (never templated). Linear does it when it first looks a
        notification up; what it templates with does not change in the play.
        """
        from ansible._internal._templating._jinja_bits import is_possibly_template

        name = handler.name
        if not name or getattr(handler, "cached_name", False) or self.vm is None \
                or not is_possibly_template(name):
            return plain(name) or None, None
        from ansible._internal._templating._engine import TemplateEngine
        from ansible.errors import AnsibleTemplateError
        from ansible.module_utils.common.text.converters import to_text

        def variables() -> Dict[str, Any]:
            return self.vm.get_vars(play=self.play, task=handler)

        try:
            templated = TemplateEngine(variables_factory=variables).template(name)
        except AnsibleTemplateError as exc:
            return plain(name), to_text(exc)
        handler.name = templated
        handler.cached_name = True
        return plain(templated), None

    def module_defaults(self, task: Any, action: str, raw: Dict[str, Any]) -> Dict[str, Any]:
        """``raw`` with the task's ``module_defaults`` under it, as Ansible finalises
        the arguments (:mod:`ioc.ansible.module_defaults`); what ioc cannot merge
        here sends the task through Ansible."""
        from ansible._internal._templating._jinja_bits import is_possibly_template
        from ioc.ansible import module_defaults as md

        if action == "meta":
            return raw
        if is_possibly_template(task.action):
            self.refuse("module_defaults of a templated action apply once Ansible resolves it")
            return raw
        resolved = str(task.resolved_action)
        fact = None
        if resolved == "ansible.builtin.gather_facts":
            fact = md.action_fqcn("ansible.legacy.setup", getattr(task, "collections", None))
        try:
            merged = md.apply_defaults(resolved, task, raw, fact_module=fact)
            picked = md.picked_with_defaults(action, resolved, task,
                                             modules.dispatch_candidates)
            if picked is not None:
                self.refuse("module_defaults for %s, the module %s picks" % (picked, action))
        except md.TemplatedDefaults:
            self.refuse("module_defaults given as a template as a whole are resolved per host")
            return raw
        return plain(merged)

    def include_vars(self, task: Any, args: Mapping[str, Any]) -> None:
        """``include_vars`` runs natively (its files ship with the batch, the
        runner reads them; a vault-encrypted one is decrypted by the parent)
        but for what only Ansible words or places alike."""
        if isinstance(args.get("ignore_files"), str):
            self.refuse("include_vars with ignore_files as a string: Ansible warns that it is "
                        "deprecated")
        if plain(task.delegate_to) and plain(task.delegate_facts):
            self.refuse("include_vars with delegate_facts gives the delegate the variables")

    def ansible_module(self, task: Any, action: str, args: Mapping[str, Any]) -> Optional[str]:
        """The module key when the task runs Ansible's own module code in the runner.

        That is every plain module (no action plugin of its own) that ioc
        does not run itself, or whose arguments ioc's own module does not all
        take: the runner then runs Ansible's module for that task instead.
        """
        from ioc.ansible import modules

        self._module_why = None
        if action == "gather_facts":
            from ansible.parsing.vault import AnsibleVaultError

            try:
                own = task.get_vars()
            except AnsibleVaultError:
                own = {}
            chooser = next((name for name in FACTS_CHOOSERS if name in own), None)
            if chooser is not None:
                # (ansible_network_os: smart is that OS's facts module)
                self._module_why = ("fact gathering where %s is set: Ansible's gather_facts "
                                    "chooses its modules" % chooser)
                return None
        if action in ("gather_facts", "setup"):
            key = self.fact_module()
            if key is None and self._module_why is None:
                self._module_why = "fact gathering with FACTS_MODULES other than smart"
            return key
        written = str(task.action)
        for prefix in ("ansible.builtin.", "ansible.legacy."):
            written = written[len(prefix):] if written.startswith(prefix) else written
        if action in modules.DISPATCHED and written in modules.DISPATCHED and not (
                action in self.caps_actions and self._native_accepts(action, args)):
            key, self._module_why = self.modules.add_dispatch(action)
            return key
        native = "." not in action and action in self.caps_actions
        if action in ("meta",) or (native and self._native_accepts(action, args)):
            return None
        resolved = modules.resolve(task.action, getattr(task, "collections", None))
        if resolved is None:
            return None
        if resolved.action_plugin is not None:
            self._module_why = ("%s runs the action plugin %s on the controller"
                                % (task.action, resolved.action_plugin))
            return None
        key, why = self.modules.add(resolved, task.action.rpartition(".")[2])
        self._module_why = why
        return key

    def fact_module(self) -> Optional[str]:
        """Ansible's ``setup`` for fact gathering: Ansible's fact set, key for key.

        None (ioc's own gathering, or Ansible's for that task) unless
        ``FACTS_MODULES`` is the default ``smart``, which on a non-network
        host means ``ansible.legacy.setup``.
        """
        from ansible import constants as C
        from ioc.ansible import modules

        if list(C.config.get_config_value("FACTS_MODULES")) != ["smart"] \
                or self.facts_modules_set:
            return None
        resolved = modules.resolve("ansible.legacy.setup")
        if resolved is None:
            return None
        key, self._module_why = self.modules.add(resolved, "setup")
        return key

    def _native_accepts(self, action: str, args: Mapping[str, Any]) -> bool:
        from ioc.ansible import modules
        from ioc.controller.capabilities import runner_capabilities

        if self._options is None:
            self._options = runner_capabilities().options
        if action in modules.INVOCATION_MODULES and modules.inject_invocation():
            return False  # (Ansible's module code returns the invocation)
        accepted = self._options.get(action)
        return accepted is None or all(
            not isinstance(k, str) or k.startswith("_") or k in accepted or "{{" in k
            for k in args)

    def register(self, task: Any) -> Optional[str]:
        """``register: name``; 2.21 keeps it as ``{name: <the task's result>}``."""
        value = task.register
        if not value:
            return None
        if isinstance(value, str):
            return plain(value)
        if len(value) == 1:
            (name, expression), = value.items()
            if plain(expression) == "_task.polymorphic_result":
                return plain(name)
        self.refuse("register projections are not supported natively")
        return None

    def search_path(self, task: Any) -> Tuple[str, ...]:
        """``ansible_search_path`` of ``task``, as ``TaskExecutor`` sets it: the
        task's ``get_search_path()`` and the loader's base directory."""
        if self.loader is None:
            return ()
        paths = [plain(p) for p in task.get_search_path()]
        basedir = plain(self.loader.get_basedir())
        if basedir not in paths:
            paths.append(basedir)
        return tuple(paths)

    def nodes(self, items: Sequence[Any]) -> List[Any]:
        """Ansible blocks/tasks → IR nodes; blocks without rescue/always are inlined."""
        from ansible.playbook.block import Block as AnsibleBlock

        out: List[Any] = []
        occurrence = _Occurrence()
        for item in items:
            if isinstance(item, AnsibleBlock):
                if self._ends_role(item):
                    self._close_occurrence(occurrence, item, out)
                    continue
                occurrence.add(item, out)
                out.extend(self._private_role_block(item) or self.block(item))
            elif self._implicit_meta(item):
                continue
            else:
                occurrence.add(item, out)
                ir = self.task(item)
                inlined = self.static_include(item, ir) if ir.include_scope is not None else None
                out.append(inlined if inlined is not None else ir)
        return out

    def static_include(self, task: Any, ir: Task) -> Optional[Block]:
        """An ``include_tasks`` whose file is known before it runs, as a block it heads.

        Its file name is not templated, it does not loop and no include
        encloses it, so every host that runs it includes the same file, found
        where ``IncludedFile.process_include_results`` will find it. The file
        is loaded now, as the strategy's ``_load_included_file`` loads it, and
        its tasks follow the include in the same batch: no cut, no round trip.
        The parent announces it after its results, as linear does (L7.8).
        Anything unusual (a file that does not load) stays dynamic.
        """
        from ansible.errors import AnsibleError

        name = (task.args or {}).get("_raw_params")
        if self.loader is None or ir.action != "include_tasks" or task.loop or \
                task.loop_with or not isinstance(name, str) or "{{" in name or "{%" in name \
                or _parent_include(task) is not None:
            return None
        role = getattr(task, "_role", None)
        if role is not None:
            path = self.loader.path_dwim_relative(role._role_path, "tasks", name, is_role=True)
        else:
            path = self.loader.path_dwim(name)
        try:
            # Linear loads the file when a host includes it; what loading it
            # would display (a deprecated module name, ...) waits until then.
            with warnings_captured() as captured:
                blocks = _load_task_file(path, task, self.play, self.loader, self.vm)
                nodes = self.section(blocks)
        except (AnsibleError, OSError):
            return None
        if captured is not None:
            self.load_warnings[id(task)] = (list(captured.get_warnings())
                                            + list(captured.get_deprecation_warnings()))
        # (its vars are include parameters of the included tasks, above
        # set_fact: the block's params, as ioc-run's loader has them; and the
        # include's own task vars)
        head = dataclasses.replace(ir, include_scope=None)
        self.origin[id(head)] = task
        return Block(block=nodes, location=ir.location, implicit=True, include=head,
                     params=dict(ir.vars))

    def _close_occurrence(self, occurrence: "_Occurrence", end: Any, out: List[Any]) -> None:
        """At a role's implicit ``role_complete`` block (``end``): the nodes of
        the role's own blocks just before it become one block keyed by the
        role (``Block.role_key``; ``role_repeats`` when it allows duplicates
        now), the block a ``meta: end_role`` ends (``Block.role_end``).

        Linear skips, for a host, every task of a role that completed for it
        (a task of it ran, not skipped or unreachable, and the host reached
        its ``role_complete``; the play's cached role: ``Role.__eq__``); the
        runner decides that per host when it reaches the block
        (``HostRun.run_block``). A role's dependencies' blocks come before
        its own, each in a block of its own."""
        role = getattr(end, "_role", None)
        start = occurrence.start_of(role, len(out))
        occurrence.reset()
        if role is None or start is None:
            return
        from ansible.errors import AnsibleError

        try:
            cached = self.play._get_cached_role(role)
        except AnsibleError as exc:  # (linear's iterator raises it too)
            raise Fallback(str(exc)) from None
        key = "%s#%d" % (plain(cached.get_role_path()),
                         self.play.role_cache[cached.get_role_path()].index(cached))
        repeats = bool(getattr(getattr(role, "_metadata", None), "allow_duplicates", False))
        out[start:] = [Block(block=tuple(out[start:]), location=_location(end), implicit=True,
                             role_key=key, role_repeats=repeats, role_end=True)]

    @staticmethod
    def _ends_role(block: Any) -> bool:
        """The implicit block ``Role.compile`` ends each occurrence of a role with."""
        tasks = list(getattr(block, "block", None) or ())
        return len(tasks) == 1 and getattr(tasks[0], "implicit", False) and \
            short_action(tasks[0]) == "meta" and \
            (tasks[0].args or {}).get("_raw_params") == "role_complete"

    @staticmethod
    def _implicit_meta(task: Any) -> bool:
        return bool(getattr(task, "implicit", False)) and short_action(task) == "meta" and \
            (task.args or {}).get("_raw_params") in ("role_complete", "end_role", "noop")

    def _private_role_block(self, block: Any) -> List[Any]:
        """A block of a private role (``import_role`` with ``public: false``, or
        any imported role under ``DEFAULT_PRIVATE_ROLE_VARS``) among other
        tasks: in an IR block holding its defaults and its dependency chain's
        (``Role.get_default_vars(dep_chain)``, which only its own tasks see).
        Empty for any other block, and for the inner blocks of that role."""
        role = getattr(block, "_role", None)
        if role is None or getattr(role, "public", True) or \
                any(r is role for r in self._private_roles):
            return []
        self._private_roles.append(role)
        try:
            body = self.block(block)
        finally:
            self._private_roles.pop()
        chain = block.get_dep_chain() or []
        return [Block(block=tuple(body), location=_location(block), implicit=True,
                      defaults=plain_vars(role.get_default_vars(dep_chain=chain)))]

    def block(self, block: Any) -> List[Any]:
        body = self.nodes(block.block)
        if not block.rescue and not block.always:
            return body
        return [Block(block=tuple(body), rescue=tuple(self.nodes(block.rescue)),
                      always=tuple(self.nodes(block.always)), location=_location(block),
                      name=plain(block.name) or None)]

    def section(self, blocks: Sequence[Any], included: bool = False) -> Tuple[Any, ...]:
        """A section's top-level blocks; each role's tasks in one block with its params.

        ``included``: the blocks of an ``include_role``, whose defaults are
        its tasks' (the play's public roles' defaults are ``Play.role_defaults``;
        a private role's, ``import_role`` with ``public: false``, are its own too).
        Each occurrence of a role is keyed for deduplication (:meth:`_close_occurrence`).
        """
        out: List[Any] = []
        occurrence = _Occurrence()
        for block in blocks:
            role = getattr(block, "_role", None)
            if role is not None and self._ends_role(block):
                self._close_occurrence(occurrence, block, out)
                continue
            occurrence.add(block, out)
            private = role is not None and (included or not getattr(role, "public", True))
            if private:
                self._private_roles.append(role)
            try:
                nodes = self.block(block)
            finally:
                if private:
                    self._private_roles.pop()
            if role is not None:
                # (a dependency has its dependents' params below its own: the dep chain)
                params = plain(role.get_role_params(block.get_dep_chain())) \
                    if hasattr(role, "get_role_params") else {}
                defaults = plain_vars(role.get_default_vars(dep_chain=block.get_dep_chain() or [])) \
                    if private else {}
                out.append(Block(block=tuple(nodes), location=_location(block), params=params,
                                 implicit=True, role=plain(role.get_name()), defaults=defaults,
                                 role_path=plain(getattr(role, "_role_path", None))))
            else:
                out.extend(nodes)
        return tuple(out)


def _handler_role_scope(handler: Any) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """A handler's role parameters and the defaults the play's lack, as
    ``VariableManager.get_vars(task=handler)`` reads them: its role's, over
    its dependency chain (``Task.role_params``, ``Task.role_defaults``).

    The defaults of a chain of public roles the play loaded (``roles:``,
    ``import_role``) are the play's already (``Play.role_defaults``); those
    of a chain that holds an included role (not ``static``) or a private one
    are not.
    """
    role = getattr(handler, "_role", None)
    if role is None:
        return {}, {}
    chain = handler.get_dep_chain() or []
    params = plain(role.get_role_params(chain))
    private = any(not getattr(r, "static", True) or not getattr(r, "public", True)
                  for r in list(chain) + [role])
    defaults = plain_vars(role.get_default_vars(dep_chain=chain)) if private else {}
    return params, defaults


class _Occurrence:
    """The run of blocks (or tasks) of one role converted last, at one level:
    where its nodes start in the output (see ``Converter._close_occurrence``)."""

    def __init__(self) -> None:
        self.role: Any = None
        self.start = 0

    def add(self, item: Any, out: List[Any]) -> None:
        """``item`` is about to be converted, its nodes appended to ``out``."""
        role = getattr(item, "_role", None)
        if role is None or role is not self.role:
            self.role, self.start = role, len(out)

    def start_of(self, role: Any, length: int) -> Optional[int]:
        """Where the nodes of ``role``'s run (up to ``length``) start; None if
        the items just before were not that role's."""
        return self.start if role is not None and role is self.role \
            and self.start < length else None

    def reset(self) -> None:
        self.role = None


def _args_splat(task: Any, args: Mapping[str, Any]) -> Optional[str]:
    """Why the task's arguments need Ansible's ``TaskArgsFinalizer`` (None: they do not).

    Arguments given as a template (``assert: "{{ item }}"``: ``_variable_params``)
    and free-form text given to an action that takes none (``debug: garbage``,
    ``file: path=x {{ more }}``) are resolved when the task runs: Ansible
    templates the text into the arguments (warning that this is unsafe) or
    refuses it ("Action ... does not support raw params.", "Task args must
    resolve to a 'dict'"). Such a task runs through Ansible, which does that.
    """
    if "_variable_params" in args:
        return "its arguments are a template (Ansible resolves them when the task runs)"
    if "_raw_params" in args and not _takes_raw_params(task):
        return "free-form arguments for an action that takes none (Ansible resolves them)"
    return None


#: Arguments that are expressions, evaluated even without ``{{ }}``.
_EXPRESSION_ARGS = {"debug": ("var",), "assert": ("that",)}


def _untrusted_args(task: Any, action: str) -> bool:
    """Whether an argument Ansible would template or evaluate is untrusted text.

    Text marked ``!unsafe`` (or otherwise not trusted as a template) is never
    templated by Ansible: a template in it stays as written, and as an
    expression (``debug: var=``, ``assert: that=``) it fails the task
    ("Encountered untrusted template or expression."). ioc's runner sees
    plain text; such a task runs through Ansible.
    """
    try:
        from ansible._internal._datatag._tags import TrustedAsTemplate
        from ansible._internal._templating._jinja_bits import is_possibly_template
    except ImportError:  # pragma: no cover - every supported release has data tags
        return False
    expressions = _EXPRESSION_ARGS.get(action, ())
    pending = [(None, task.args or {})]
    while pending:
        key, value = pending.pop()
        if isinstance(value, Mapping):
            pending.extend((k if key is None else key, v) for k, v in value.items())
        elif isinstance(value, (list, tuple)):
            pending.extend((key, v) for v in value)
        elif isinstance(value, str) and not TrustedAsTemplate.is_tagged_on(value) and \
                (key in expressions or is_possibly_template(value)):
            return True
    return False


def _untrusted_condition(task: Any) -> Optional[str]:
    """The first conditional keyword (``when``, ``changed_when``, ``failed_when``,
    ``until``) holding a string not trusted as a template (``!unsafe``): Ansible
    evaluates none ("Encountered untrusted template or expression."), the
    runner's conditions are plain text. None when all are trusted."""
    try:
        from ansible._internal._datatag._tags import TrustedAsTemplate
    except ImportError:  # pragma: no cover - every supported release has data tags
        return None
    for keyword in ("when", "changed_when", "failed_when", "until"):
        value = getattr(task, "_" + keyword, None) if keyword != "when" else task.when
        values = value if isinstance(value, (list, tuple)) else [value]
        if any(isinstance(v, str) and not TrustedAsTemplate.is_tagged_on(v) for v in values):
            return keyword
    return None


def _invalid_keyword(task: Any) -> Optional[str]:
    """A keyword whose written value (no template) is not of its type (``diff: yes.``).

    Ansible fails the task when it validates it ("Error processing keyword
    'diff': The value 'yes.' could not be converted to 'bool'."); the first
    such keyword, checked with Ansible's own conversion.
    """
    from ansible._internal._templating._jinja_bits import is_possibly_template

    for name, attribute in task.fattributes.items():
        if attribute.isa not in ("bool", "int", "float"):
            continue
        value = getattr(task, name, None)
        if not isinstance(value, str) or is_possibly_template(value):
            continue
        try:
            task._get_validated_value(name, attribute, value, None)
        except (TypeError, ValueError):
            return name
    return None


def _foreign_action_plugin(task: Any, action: str, native: frozenset) -> Optional[str]:
    """The path of the action plugin not Ansible's own that Ansible runs for
    ``task`` although ``action`` is one ioc runs natively; else None."""
    from ioc.ansible import modules

    from ansible._internal._templating._jinja_bits import is_possibly_template

    if action not in native or is_possibly_template(task.action):
        return None
    return modules.foreign_action_plugin(str(task.action), getattr(task, "collections", None))


def _takes_raw_params(task: Any) -> bool:
    """Whether the task's action keeps free-form text (``Task._post_validate_args``'s test).

    True where the action cannot be resolved yet (a templated action keyword):
    the task is judged on other grounds.
    """
    from ansible.parsing.mod_args import RAW_PARAM_MODULES
    from ansible.plugins.loader import action_loader, module_loader

    from ansible._internal._templating._jinja_bits import is_possibly_template

    if is_possibly_template(task.action):
        return True
    collections = getattr(task, "collections", None)
    context = action_loader.get_with_context(task.action, collection_list=collections,
                                             class_only=True)
    if context.plugin_load_context.resolved:
        fqcn, action_type = context.plugin_load_context.resolved_fqcn, context.object
    else:
        found = module_loader.find_plugin_with_context(task.action, collection_list=collections)
        if not found.resolved:
            return True
        fqcn = found.resolved_fqcn
        action_type = action_loader.get("ansible.legacy.normal", collection_list=collections,
                                        class_only=True)
    return bool(getattr(action_type, "supports_raw_params", False)) or fqcn in RAW_PARAM_MODULES


def _parent_role_vars(task: Any) -> Dict[str, Any]:
    """``ansible_parent_role_names``/``paths`` of a role included from a role (IncludeRole)."""
    try:
        params = task.get_include_params()
    except AttributeError:
        return {}
    return {k: plain(params[k]) for k in ("ansible_parent_role_names", "ansible_parent_role_paths")
            if k in params}


def _parent_include(task: Any) -> Any:
    """The include (task or role) ``task`` was loaded from, if any."""
    from ansible.playbook.task_include import TaskInclude

    parent = getattr(task, "_parent", None)
    while parent is not None:
        if isinstance(parent, TaskInclude):
            return parent
        parent = getattr(parent, "_parent", None)
    return None


def _load_task_file(path: str, task: Any, play: Any, loader: Any, vm: Any) -> List[Any]:
    """A task file ``task`` (an include_tasks) includes, loaded and tag-filtered as
    ``StrategyBase._load_included_file`` and linear load it."""
    from ansible.errors import AnsibleError
    from ansible.playbook.helpers import load_list_of_blocks

    data = loader.load_from_file(path, trusted_as_template=True)
    if data is None:
        return []
    if not isinstance(data, list):
        raise AnsibleError("included task files must contain a list of tasks")
    ti_copy = task.copy(exclude_parent=True)
    ti_copy._parent = task._parent
    blocks = load_list_of_blocks(data, play=play, parent_block=ti_copy.build_parent_block(),
                                 role=task._role, use_handlers=False, loader=loader,
                                 variable_manager=vm)
    return tag_filtered(blocks, play, vm)


def tag_filtered(blocks: Sequence[Any], play: Any, vm: Any, hosts: Any = None,
                  hosts_all: Any = None) -> List[Any]:
    """Included blocks filtered on tags as linear filters them (with the variables
    of the include each came from)."""
    return [b.filter_tagged_tasks(vm.get_vars(play=play, task=b.get_first_parent_include(),
                                              _hosts=hosts, _hosts_all=hosts_all))
            for b in blocks]


def become_keywords(task: Any) -> Dict[str, Any]:
    """The task's effective ``become*`` keywords (``--become``/``-b`` and
    ``--become-user`` are Ansible's defaults for them), as the IR holds them."""
    out: Dict[str, Any] = {}
    for keyword in ("become", "become_user", "become_method", "become_flags", "become_exe"):
        value = plain(getattr(task, keyword, None))
        if value not in (None, ""):
            out[keyword] = value
    return out


def _flag_keyword(value: Any) -> Any:
    """A boolean keyword's value: a template as written, anything else as a bool."""
    value = plain(value)
    if isinstance(value, str) and ("{{" in value or "{%" in value):
        return value
    return bool(value)


#: The keywords whose value, templated to ``omit``, the IR's ``Task.omitted`` says.
OMITTABLE = ("become", "become_user", "become_method", "become_flags", "become_exe",
             "check_mode", "diff")


def omitted_keywords(task: Any) -> Dict[str, Any]:
    """What each keyword of :data:`OMITTABLE` the task sets itself as a template
    falls back to when it gives ``omit``: the inherited value (``set_to_context``)."""
    from ansible.utils.sentinel import Sentinel

    out: Dict[str, Any] = {}
    for keyword in OMITTABLE:
        own = getattr(task, "_" + keyword, Sentinel)
        if not isinstance(own, str) or ("{{" not in own and "{%" not in own):
            continue
        try:
            value = task._get_parent_attribute(keyword, omit=True)
        except AttributeError:
            value = Sentinel
        if value is Sentinel:  # (the attribute's default: -b, --become-user, ...)
            default = task.fattributes[keyword].default
            value = default() if callable(default) else default
        out[keyword] = plain(value)
    return out


def warnings_captured() -> Any:
    """Ansible's ``DeferredWarningContext``: what would be displayed is kept instead."""
    import contextlib

    try:
        from ansible._internal._display_utils import DeferredWarningContext
    except ImportError:  # pragma: no cover - before 2.19
        return contextlib.nullcontext(None)
    return DeferredWarningContext(variables={})


def display_captured(summaries: Sequence[Any]) -> None:
    """Display what :func:`warnings_captured` kept, as Display would have (deduplicated)."""
    from ansible.utils.display import Display

    display = Display()
    for summary in summaries:
        if type(summary).__name__ == "DeprecationSummary":
            display._deprecated(summary)
        else:
            display._warning(summary)
