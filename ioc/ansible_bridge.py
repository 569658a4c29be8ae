"""The bridge between Ansible and ioc: the logic of the ``mitogen_batch`` strategy.

``strategy_plugin/mitogen_batch.py`` is a shim that Ansible loads; everything
it does lives here, and this is the only module of ioc that imports
``ansible`` (DESIGN §1). Three parts:

* **IR from Ansible's parsed play** (:func:`play_to_ir`): the blocks the
  linear ``PlayIterator`` would walk (tags already applied), the roles'
  defaults, variables and parameters, and the handlers become an
  :class:`ioc.model.Play`; each IR task remembers the Ansible ``Task`` it came
  from. A task ioc cannot run natively keeps its reason (``Converted.reasons``)
  and becomes a ``Where.ANSIBLE`` step of the plan; a construct that needs
  the whole play in Ansible's hands is a :class:`Fallback` with the reason.
* **Execution**: a native play is planned here, then run by ioc's controller
  in a *dispatcher subprocess* (``python -m ioc.ansible_bridge --serve``) that
  owns mitogen's broker, so no broker thread ever lives in a process Ansible
  forks. It streams the replayed (linear-ordered) runner events back.
* **Events → Ansible**: each event becomes the callback the linear strategy
  would send, with Ansible's real ``Host`` and ``Task`` objects and a real
  task result; recap counters go to ``tqm._stats``; registered values, facts
  and ``set_fact`` values go to Ansible's variable manager.

A ``Where.ANSIBLE`` step runs through Ansible's own task machinery in this
(the parent) process, between native batches: the dispatcher asks, the
parent queues the task as linear does and replies with the outcome
(:meth:`_PlayRun.through_ansible`). A :class:`Fallback` play runs whole
through the inherited ``linear`` strategy (docs/mitogen_batch.md lists which
constructs still do that).

Ansible is imported lazily: ``StrategyModule`` is built on first access, so
the dispatcher (``--serve``) and ``--strategy-dir`` never import it.
"""
from __future__ import annotations

import argparse
import atexit
import dataclasses
import logging
import os
import pickle
import struct
import subprocess
import sys
import threading
from typing import IO, Any, BinaryIO, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ioc.model import Block, Group, Host, IncludeScope, Inventory, Location, Play, Task

LOG = logging.getLogger(__name__)

#: ansible-core releases the strategy supports, inclusive (major, minor).
SUPPORTED_ANSIBLE = ((2, 19), (2, 21))
STRATEGY_NAME = "mitogen_batch"
_BUILTIN_PREFIXES = ("ansible.builtin.", "ansible.legacy.")
#: Results of these are "Action failed", not "Module failed" (as ioc's console says).
_ACTIONS = frozenset({"fail", "assert", "debug", "set_fact", "meta", "include_vars",
                      "add_host", "group_by", "pause", "gather_facts"})
#: Dynamic task lists: the runner runs the include, the parent loads what each
#: host included with Ansible's own ``IncludedFile`` machinery, and both sides
#: splice the loaded tasks in after it (``_PlayRun.splice_includes``).
_BRIDGE_INCLUDES = frozenset({"include_tasks", "include_role"})
#: Actions that run through Ansible's own task machinery, one task at a time
#: (their variables come back from Ansible's variable manager, their inventory
#: changes from their results, as for ioc's own add_host/group_by).
_BRIDGE_PER_TASK = frozenset({"include_vars", "pause", "async_status", "add_host", "group_by"})
#: refresh_inventory re-reads Ansible's inventory sources in the main process:
#: it runs there (``_execute_meta``), and ioc's copy of the inventory follows.
_BRIDGE_META_PER_TASK = frozenset({"refresh_inventory"})


# -- version gate -------------------------------------------------------------------


def version_problem(version: str) -> Optional[str]:
    """Why ``version`` of ansible-core is unsupported, or None when it is supported."""
    try:
        major, minor = (int(p) for p in version.split(".")[:2])
    except ValueError:
        major, minor = (0, 0)
    low, high = SUPPORTED_ANSIBLE
    if low <= (major, minor) <= high:
        return None
    return ("the %s strategy supports ansible-core %d.%d to %d.%d; this is ansible-core %s"
            % (STRATEGY_NAME, low[0], low[1], high[0], high[1], version))


def check_ansible_version() -> None:
    """Raise one AnsibleError naming the supported range on another ansible-core."""
    from ansible.errors import AnsibleError
    from ansible.release import __version__

    problem = version_problem(__version__)
    if problem:
        raise AnsibleError(problem)


def strategy_dir() -> str:
    """The directory to name in ``strategy_plugins =`` (holds mitogen_batch.py)."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "strategy_plugin")


# -- plain values ------------------------------------------------------------------


def plain(value: Any) -> Any:
    """``value`` as builtins only: Ansible's tagged/lazy containers and strings unwrapped."""
    if value is None or type(value) in (bool, int, float, str, bytes):
        return value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, bytes):
        return bytes(value)
    if isinstance(value, Mapping):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    return str(value)


# -- Ansible's play -> ioc IR -------------------------------------------------------


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


def short_action(task: Any) -> str:
    name = str(getattr(task, "resolved_action", None) or task.action)
    for prefix in _BUILTIN_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def _location(task: Any) -> Location:
    path = plain(task.get_path()) if hasattr(task, "get_path") else ""
    if path and ":" in path:
        head, _, tail = path.rpartition(":")
        if tail.isdigit():
            return Location(head, int(tail))
    return Location(path or "<unknown>")


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


class _Converter:
    def __init__(self, play: Any, caps_actions: frozenset, loader: Any = None,
                 variable_manager: Any = None) -> None:
        self.play = play
        self.caps_actions = caps_actions
        #: With these, an include_tasks whose file is known is inlined (static_include).
        self.loader = loader
        self.vm = variable_manager
        self.origin: Dict[int, Any] = {}
        #: id(IR task) -> why ioc does not run it natively (it runs through Ansible).
        self.reasons: Dict[int, str] = {}
        self._why: Optional[str] = None
        #: Ansible's modules the converted tasks run in the runner.
        from ansible.utils.display import Display
        from ioc.ansible import modules
        self.modules = modules.ModuleSet(internal=modules.run_wide_args(Display().verbosity))
        self._module_why: Optional[str] = None
        self._options: Optional[Mapping[str, Any]] = None

    def fail(self, task: Any, why: str) -> None:
        """A construct that sends the whole play to linear."""
        raise Fallback("%s (%s)" % (why, _location(task)))

    def refuse(self, why: str) -> None:
        """A construct that sends this one task through Ansible (the first reason counts)."""
        if self._why is None:
            self._why = why

    def task(self, task: Any, handler: bool = False) -> Task:
        self._why = None
        action = short_action(task)
        dynamic = action in _BRIDGE_INCLUDES
        if dynamic and handler:
            self.fail(task, "%s in a handler runs through Ansible's linear strategy" % action)
        raw = plain(task.args or {})
        if action == "meta" and raw.get("_raw_params") in _BRIDGE_META_PER_TASK:
            self.refuse("meta: %s acts on Ansible's controller state" % raw["_raw_params"])
        module_key = self.ansible_module(task, action, raw)
        if module_key is None and (
                "." in action or (action not in self.caps_actions and action != "meta")):
            self.refuse(self._module_why or "module %s has no native ioc implementation" % action)
        if action in _BRIDGE_PER_TASK:
            self.refuse("%s acts on Ansible's controller state" % action)
        for keyword in ("async_val", "timeout"):
            if getattr(task, keyword, None):
                self.refuse("%s is not supported natively" % keyword.replace("_val", ""))
        if getattr(task, "module_defaults", None):
            self.refuse("module_defaults is not supported natively")
        environment: Dict[str, Any] = {}
        for env in task.environment or ():
            if not isinstance(env, Mapping):
                self.refuse("a templated environment is not supported natively")
                environment = {}
                break
            environment.update(plain(env))
        variables = {}
        role = getattr(task, "_role", None)
        if role is not None:
            variables.update(plain(role.get_vars(include_params=False)))
        variables.update(plain(task.get_vars()))
        variables.update(_parent_role_vars(task))
        loop_control = getattr(task, "loop_control", None)
        control = plain(getattr(loop_control, "_ds", None) or {}) if loop_control else {}
        ir_location = _location(task)
        ir = Task(
            action=action,
            args=raw,
            location=ir_location,
            name=plain(task.name) or None,
            when=_conditions(task.when),
            when_origins=_condition_origins(task.when),
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
            no_log=plain(task.no_log) or None,
            environment=environment or None,
            # Ansible's defaults are the CLI's --check/--diff: always explicit here.
            check_mode=bool(task.check_mode),
            diff=bool(task.diff),
            delegate_to=plain(task.delegate_to) or None,
            delegate_facts=plain(task.delegate_facts) or None,
            run_once=plain(task.run_once) or None,
            any_errors_fatal=plain(task.any_errors_fatal) or None,
            throttle=plain(task.throttle) or None,
            **become_keywords(task),
            role=plain(role.get_name()) if role is not None else None,
            role_path=plain(getattr(role, "_role_path", None)) if role is not None else None,
            role_collection=plain(getattr(role, "_role_collection", None)) or None
            if role is not None else None,
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
        return ir

    def ansible_module(self, task: Any, action: str, args: Mapping[str, Any]) -> Optional[str]:
        """The module key when the task runs Ansible's own module code in the runner.

        That is every plain module (no action plugin of its own) that ioc
        does not run itself, or whose arguments ioc's own module does not all
        take: the runner then runs Ansible's module for that task instead.
        """
        from ioc.ansible import modules

        self._module_why = None
        if action in ("gather_facts", "setup"):
            return self.fact_module()
        if action == "service" and task.action in ("service", "ansible.builtin.service",
                                                   "ansible.legacy.service"):
            key, self._module_why = self.modules.add_service()
            return key
        if action in modules.PREFER_ANSIBLE:
            args = {"<prefer Ansible's module>": None}
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

        if list(C.config.get_config_value("FACTS_MODULES")) != ["smart"]:
            return None
        resolved = modules.resolve("ansible.legacy.setup")
        if resolved is None:
            return None
        key, self._module_why = self.modules.add(resolved, "setup")
        return key

    def _native_accepts(self, action: str, args: Mapping[str, Any]) -> bool:
        from ioc.controller.capabilities import runner_capabilities

        if self._options is None:
            self._options = runner_capabilities().options
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

    def nodes(self, items: Sequence[Any]) -> List[Any]:
        """Ansible blocks/tasks → IR nodes; blocks without rescue/always are inlined."""
        from ansible.playbook.block import Block as AnsibleBlock

        out: List[Any] = []
        for item in items:
            if isinstance(item, AnsibleBlock):
                out.extend(self.block(item))
            elif self._implicit_meta(item):
                continue
            else:
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
            blocks = _load_task_file(path, task, self.play, self.loader, self.vm)
            nodes = self.section(blocks)
        except (AnsibleError, OSError):
            return None
        head = dataclasses.replace(ir, include_scope=None)
        self.origin[id(head)] = task
        return Block(block=nodes, location=ir.location, implicit=True, include=head)

    @staticmethod
    def _implicit_meta(task: Any) -> bool:
        return bool(getattr(task, "implicit", False)) and short_action(task) == "meta" and \
            (task.args or {}).get("_raw_params") in ("role_complete", "end_role", "noop")

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
        private to its tasks (the play's roles' defaults are ``Play.role_defaults``).
        """
        out: List[Any] = []
        for block in blocks:
            role = getattr(block, "_role", None)
            nodes = self.block(block)
            if role is not None:
                params = plain(role.get_role_params()) if hasattr(role, "get_role_params") else {}
                defaults = plain(role.get_default_vars()) if included else {}
                out.append(Block(block=tuple(nodes), location=_location(block), params=params,
                                 implicit=True, role=plain(role.get_name()), defaults=defaults,
                                 role_path=plain(getattr(role, "_role_path", None))))
            else:
                out.extend(nodes)
        return tuple(out)


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
    return _tag_filtered(blocks, play, vm)


def _tag_filtered(blocks: Sequence[Any], play: Any, vm: Any, hosts: Any = None,
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


def _is_flush(block: Any) -> bool:
    tasks = list(block.block or ())
    return (len(tasks) == 1 and bool(getattr(tasks[0], "implicit", False))
            and short_action(tasks[0]) == "meta"
            and (tasks[0].args or {}).get("_raw_params") == "flush_handlers"
            and not block.rescue and not block.always)


def play_to_ir(iterator: Any, loader: Any, caps_actions: frozenset) -> Converted:
    """Ansible's play, as its linear iterator would walk it, in ioc's IR."""
    from ansible import constants as C

    play = iterator._play
    if any(_templated_vars_file(entry) for entry in play.vars_files or ()):
        vars_files, host_vars_files = _per_host_vars_files(iterator, loader)
    else:
        vars_files, host_vars_files = _static_vars_files(play, loader), {}
    gathering = C.DEFAULT_GATHERING
    if gathering not in ("implicit", "explicit", "smart"):
        raise Fallback("gathering = %s runs through Ansible's linear strategy" % gathering)
    blocks = list(iterator._blocks)
    converter = _Converter(play, caps_actions, loader, iterator._variable_manager)
    setup = blocks.pop(0)
    gather_task = setup.block[0] if setup.block else None
    implied = play.gather_facts is None or bool(play.gather_facts)
    gather = gather_task is not None and (
        (gathering in ("implicit", "smart") and implied)
        or (gathering == "explicit" and bool(play.gather_facts)))
    skip_gather = _smart_skip(iterator) if gather and gathering == "smart" else []
    if skip_gather and len(skip_gather) == len(iterator._host_states):
        gather = False  # every host has its facts: nobody gathers
    gather_ir = None
    if gather and gather_task is not None and (gather_task.args or gather_task.when):
        # gather_subset/gather_timeout/fact_path, a playbook's conditional:
        # the gathering is a task of its own (the runner's setup takes them;
        # what it refuses runs through Ansible, for that task only).
        gather_ir = converter.task(gather_task)
        gather = False
    sections: List[List[Any]] = [[]]
    if play.force_handlers:
        # Ansible wraps each section in a block whose always is the flush (a
        # lone implicit noop stands in for an empty section); ioc's compile
        # wraps them again from Play.force_handlers.
        sections = [_forced_section(b) for b in blocks] + [[]]
    else:
        for block in blocks:
            if _is_flush(block):
                sections.append([])
            else:
                sections[-1].append(block)
    if len(sections) != 4 or sections[-1]:
        raise Fallback("an unexpected play layout (%d sections)" % len(sections))
    pre, main, post = (converter.section(s) for s in sections[:3])
    if gather_ir is not None:
        pre = (gather_ir,) + pre
    handler_tasks = [h for b in play.handlers for h in b.block]
    handlers = tuple(converter.task(h, handler=True) for h in handler_tasks)
    defaults: Dict[str, Any] = {}
    for role in play.get_roles():
        defaults.update(plain(role.get_default_vars()))
    path, line = _play_location(play)
    ir = Play(
        name=plain(play.get_name()),
        hosts=",".join(plain(play.hosts)) if isinstance(play.hosts, list) else plain(play.hosts),
        location=Location(path, line),
        vars=plain(play.vars or {}),
        vars_files=vars_files,
        role_defaults=defaults,
        force_handlers=bool(play.force_handlers),
        gather_facts=gather,
        pre_tasks=pre, tasks=main, post_tasks=post,
        handlers=handlers,
        any_errors_fatal=plain(play.any_errors_fatal) or None,
        max_fail_percentage=plain(play.max_fail_percentage),
        # Fact gathering runs under the play's become, as Ansible's own gather task.
        become=become_keywords(gather_task) if gather_task is not None else {},
        basedir=plain(loader.get_basedir()),
        gather_module=converter.fact_module() if gather else None,
    )
    return Converted(play=ir, origin=converter.origin, gather=gather_task,
                     handlers=tuple(handler_tasks), reasons=converter.reasons,
                     converter=converter,
                     host_vars_files=host_vars_files, gather_ir=gather_ir,
                     skip_gather=tuple(skip_gather) if gather or gather_ir else ())


def _smart_skip(iterator: Any) -> List[str]:
    """``gathering = smart``: the play's hosts whose facts Ansible has gathered
    already (``_ansible_facts_gathered`` in the fact cache, as the PlayIterator
    asks), decided at the play's start like the iterator: they do not gather."""
    vm = iterator._variable_manager
    return [plain(name) for name in iterator._host_states if vm._facts_gathered_for_host(name)]


def _forced_section(block: Any) -> List[Any]:
    """The section a ``force_handlers`` wrapper block holds (its body, noop dropped)."""
    if not (len(block.always or ()) == 1 and _is_flush(block.always[0])) or block.rescue:
        raise Fallback("an unexpected force_handlers layout")
    body = list(block.block or ())
    if len(body) == 1 and getattr(body[0], "implicit", False) \
            and short_action(body[0]) == "meta" \
            and (body[0].args or {}).get("_raw_params") == "noop":
        return []
    return body


def _static_vars_files(play: Any, loader: Any) -> Dict[str, Any]:
    """The play's ``vars_files`` merged in order, read with Ansible's own loader.

    (A templated name or a first-found list: :func:`_per_host_vars_files`.)
    """
    merged: Dict[str, Any] = {}
    for entry in play.vars_files or ():
        data = loader.load_from_file(loader.path_dwim(entry), unsafe=True)
        if data is None:
            continue
        if not isinstance(data, dict):
            raise Fallback("vars_files %s is not a mapping" % entry)
        merged.update(plain(data))
    return merged


def _templated_vars_file(entry: Any) -> bool:
    """A first-found list or a templated name: Ansible resolves it per host."""
    return not isinstance(entry, str) or "{{" in entry or "{%" in entry


def _per_host_vars_files(iterator: Any, loader: Any) -> Tuple[Dict[str, Any],
                                                                Dict[str, Dict[str, Any]]]:
    """``vars_files`` with templated names or first-found lists, resolved per host.

    Exactly as Ansible's ``VariableManager.get_vars`` does it for a host: each
    entry (a list: the first file found) templated with the host's
    variables and the entries read before it, found with
    ``path_dwim_relative_stack`` over the play's search path (``vars/``
    included), read with Ansible's loader; a list where no file exists adds
    nothing. Returns the values every host shares (the IR's ``vars_files``)
    and, per host, those that differ. A name whose template is undefined for
    a host (Ansible skips it with a warning, and may read it once facts are
    gathered) or a differing value that is itself a template (the planner
    could not see what it reads) still needs the linear strategy.
    """
    from ansible.errors import AnsibleFileNotFound, AnsibleUndefinedVariable
    from ansible.vars.manager import preprocess_vars
    try:
        from ansible._internal._templating._engine import TemplateEngine as Templar
    except ImportError:  # pragma: no cover - 2.19 has it too
        from ansible.template import Templar  # type: ignore[no-redef]

    play = iterator._play
    vm = iterator._variable_manager
    per_host: Dict[str, Dict[str, Any]] = {}
    for name in iterator._host_states:
        host = vm._inventory.get_host(name)
        if host is None:
            continue
        variables = vm.get_vars(play=play, host=host, include_hostvars=False)
        merged: Dict[str, Any] = {}
        for entry in play.get_vars_files():
            templar = Templar(loader=loader, variables={**variables, **merged})
            for choice in entry if isinstance(entry, list) else [entry]:
                try:
                    file_name = templar.template(choice)
                except AnsibleUndefinedVariable:
                    raise Fallback("vars_files entry %r is undefined for %s: it runs through "
                                   "Ansible's linear strategy" % (plain(entry), name)) from None
                if not isinstance(file_name, str):
                    raise Fallback("vars_files entry %r is not a file name" % (plain(entry),))
                try:
                    found = loader.path_dwim_relative_stack(play.get_search_path(), "vars",
                                                            file_name)
                    data = preprocess_vars(loader.load_from_file(
                        found, unsafe=True, cache="vaulted", trusted_as_template=True))
                except AnsibleFileNotFound:
                    continue
                for item in data or ():
                    merged.update(plain(item))
                break
        per_host[plain(name)] = merged
    shared: Dict[str, Any] = {}
    if per_host:
        first, *others = per_host.values()
        shared = {k: v for k, v in first.items()
                  if all(k in o and o[k] == v for o in others)}
    differing = {host: {k: v for k, v in values.items() if k not in shared}
                 for host, values in per_host.items()}
    for values in differing.values():
        if any(_has_template(v) for v in values.values()):
            raise Fallback("a vars_files value that differs per host is a template: the play "
                           "runs through Ansible's linear strategy")
    return shared, {h: v for h, v in differing.items() if v}


def _has_template(value: Any) -> bool:
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, Mapping):
        return any(_has_template(k) or _has_template(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_template(v) for v in value)
    return False


def _play_location(play: Any) -> Tuple[str, int]:
    origin = getattr(play, "_origin", None)
    path = str(getattr(origin, "path", "") or "")
    line = int(getattr(origin, "line_num", 0) or 0)
    return plain(path) or "<playbook>", line


# -- the dispatcher: ioc's controller in its own process ----------------------------


def _write(stream: IO[bytes], obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack(">I", len(data)) + data)
    stream.flush()


def _read(stream: BinaryIO) -> Any:
    head = stream.read(4)
    if len(head) < 4:
        raise EOFError
    (size,) = struct.unpack(">I", head)
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return pickle.loads(data)


def serve(inp: BinaryIO, out: BinaryIO) -> None:
    """``--serve``: run each play request with ioc's controller, stream events back.

    Requests: ``{"op": "play", "planned": PlannedPlay, "inventory": Inventory,
    "extra_vars", "hosts", "memory", "options"}``. Replies: ``("step_start",
    key, hosts, first)``, ``("event", host, event)``, ``("left", host, end)``,
    ``("step_end", key)``, ``("callback", name, args)``, then ``("done",
    summary)`` or ``("error", text)``. Mitogen's broker lives here only.

    At a ``Where.ANSIBLE`` step the dispatcher asks ``("ansible", index,
    [(host, rescuable)], once)`` and waits for ``{"op": "ansible_done",
    "hosts": {host: outcome}, "vars": {host: layers}}``: the parent ran the
    task through Ansible's own machinery (see :func:`_run_through_ansible`).
    """
    from ioc.controller.connection import Connector

    connector: Optional[Connector] = None
    try:
        while True:
            try:
                request = _read(inp)
            except EOFError:
                return
            if request.get("op") != "play":
                continue
            if connector is None:
                connector = Connector(forks=request["options"].forks)
            try:
                summary = _serve_play(request, connector, lambda msg: _write(out, msg),
                                      lambda: _read(inp))
            except Exception as exc:  # the parent reports it as Ansible would
                LOG.exception("dispatcher failed")
                _write(out, ("error", "%s: %s" % (type(exc).__name__, exc)))
            else:
                _write(out, ("done", summary))
    finally:
        if connector is not None:
            connector.shutdown()


def _serve_play(request: Dict[str, Any], connector: Any, send: Callable[[Any], None],
                receive: Optional[Callable[[], Any]] = None) -> Dict[str, Any]:
    from ioc.callbacks import Callback
    from ioc.controller.play import HostStatus, PlayExecutor, PlaySink
    from ioc.controller.playbook import PlaybookRun
    from ioc.model import Playbook

    class Forwarding(PlaySink):
        def step_start(self, key, hosts, first):
            send(("step_start", tuple(key), list(hosts), first))
            super().step_start(key, hosts, first)

        def host_event(self, host, event):
            send(("event", host, event))
            super().host_event(host, event)

        def host_left(self, host, event):
            send(("left", host, event))
            super().host_left(host, event)

        def step_end(self, key):
            send(("step_end", tuple(key)))
            super().step_end(key)

    class PlayLevel(Callback):
        def no_hosts_remaining(self):
            send(("callback", "no_hosts_remaining", ()))

        def warning(self, message):
            send(("callback", "warning", (message,)))

    class Executor(PlayExecutor):
        def make_sink(self):
            return Forwarding(self.plan, Callback(), self.ctx.stats)

        def run_step(self, step, active):
            if getattr(step, "handlers", ()):
                return _run_flush_through_ansible(self, step, active, ask_handler)
            if getattr(step, "where", None) == "ansible":
                return _run_through_ansible(self, step, active, ask)
            return super().run_step(step, active)

        def after_step(self, step, active, outcome):
            if getattr(step, "where", None) == "ansible" and not getattr(step, "handlers", ()):
                # Ansible itself gave every host what the task registered (a
                # run_once result reaches all, a host-loop bypass's only the
                # first: the variables came back as they are). When Ansible ran
                # it once (run_once, templated or not, or a bypass) and that
                # host failed, linear fails every host: ioc stops the others.
                reached, ran = self.ansible_hosts
                once = step.once or (len(ran) == 1 and len(reached) > 1)
                if once and ran and ran[0] in outcome.failed:
                    for host in active:
                        if host != ran[0] and self.hosts[host].active:
                            self.hosts[host].status = HostStatus.STOPPED
                step = dataclasses.replace(step, once=False)
            super().after_step(step, active, outcome)

        def splice_includes(self, step, outcome):
            # The parent loads what the hosts included with Ansible's own
            # IncludedFile machinery, splices it into its copy of the play,
            # plans it again and sends the plan: both sides number alike.
            entry = next(e for e in self.plan.entries_of(step) if e.task.include_scope is not None)
            active = [h for h in self.order if self.hosts[h].active]
            reply = parent(("include", entry.index, active), "include_done")
            if reply.get("planned") is not None:
                self.ctx.modules = reply.get("modules") or self.ctx.modules
                self.adopt_plan(reply["planned"].plan)
            for host, message in (reply.get("failed") or {}).items():
                self._fail_include(host, entry, message)
            return self._next_step(entry.index)

    def parent(message: Tuple[Any, ...], answer: str) -> Dict[str, Any]:
        """Ask the parent (``message``) and wait for its ``answer``."""
        send(message)
        if receive is None:
            raise RuntimeError("no way to ask the parent for %r" % (message[0],))
        reply = receive()
        if reply.get("op") != answer:
            raise RuntimeError("unexpected request from the parent: %r" % (reply.get("op"),))
        return reply

    def ask(index: int, reached: List[Tuple[str, bool]], once: bool) -> Dict[str, Any]:
        return parent(("ansible", index, reached, once), "ansible_done")

    def ask_handler(index: int, number: int, reached: List[Tuple[str, bool]], once: bool,
                    notified: Dict[str, List[int]]) -> Dict[str, Any]:
        return parent(("ansible_handler", index, number, reached, once, notified),
                      "ansible_done")

    class BridgeRun(PlaybookRun):
        """Variables of the inventory hosts the parent sent by name only come on demand."""

        def fetch(self, names: Sequence[str]) -> None:
            """Ask the parent once for the variables of ``names`` it did not send."""
            wanted = [n for n in names if n in self.inventory.hosts and n not in fetched
                      and not self.inventory.hosts[n].vars]
            if not wanted:
                return
            fetched.update(wanted)
            hosts = dict(self.inventory.hosts)
            for name, layers in parent(("outside", wanted), "outside_done")["hosts"].items():
                hosts[name] = Host(name, {k: v for k, v in layers["inventory"].items()
                                          if k != "group_names"})
                memory = self.memory.setdefault(name, {})
                for layer in ("facts", "runtime", "include_vars"):  # this run's own win
                    memory[layer] = {**layers.get(layer, {}), **memory.get(layer, {})}
            self.inventory = dataclasses.replace(self.inventory, hosts=hosts)

        def _outside_hostvars(self, inside):
            self.fetch([n for n in self.inventory.hosts if n not in inside])
            return super()._outside_hostvars(inside)

        def _connection_of(self, play, name):
            self.fetch([name])  # a delegate outside the play
            return super()._connection_of(play, name)

        def _replace_inventory(self, inventory):
            super()._replace_inventory(inventory)
            fetched.clear()  # Ansible re-read its sources: ask again

        def _store_facts(self, host, values, layer="facts"):
            # delegate_facts for a host outside the play: Ansible keeps them too
            super()._store_facts(host, values, layer)
            send(("store", host, values, layer))

    fetched: set = set()
    planned = request["planned"]
    run = BridgeRun(Playbook(path="", plays=()), request["inventory"], request["extra_vars"],
                    PlayLevel(), request["options"])
    run.memory = request["memory"]
    run.modules = request.get("modules")
    run.host_vars_files = request.get("host_vars_files") or {}
    run.skip = {host: frozenset(indexes) for host, indexes in (request.get("skip") or {}).items()}
    run._play_hosts_all = list(request.get("hosts_all") or request["hosts"])
    run._removed_in_play = set(request.get("removed") or ())
    base = run._executor(planned, list(request["hosts"]), connector)
    executor = Executor(base.plan, base.hosts, base.ctx, base.static_layers, base.magic,
                        base.removed)
    executor.run()
    return {"hosts": {h: {"status": s.status.value, "facts": s.facts, "runtime": s.runtime,
                          "included": s.included, "marked": s.marked}
                      for h, s in executor.hosts.items()},
            "ended": executor.ended, "max_fail_hit": executor.max_fail_hit}


def _ansible_walk(wire: Dict[str, Any], index: int, given: Optional[Dict[str, Any]]) -> Any:
    """A runner walk of a ``Where.ANSIBLE`` step, in the dispatcher, that never runs the task.

    The runner's own walk decides whether a host reaches task ``index`` (its
    saved block phases: a host in a rescue skips the rest of the body...), so
    the walk with ``given`` None only records that (and whether a failure
    there would be rescued) and stops. With ``given`` (Ansible's outcome for
    the host) it applies the outcome as if the runner had run the task: a
    failure enters the enclosing rescue or always, or fails the host;
    notifications are queued; the end event carries the resulting state.
    """
    from ioc.agentless_runner.batch import BatchEnd, Failure, HostRun, failed_task_wire

    class Walk(HostRun):
        def __init__(self) -> None:
            self.events: List[Dict[str, Any]] = []
            super().__init__(wire, self.events.append)
            self.reached: Optional[bool] = None

        def run_task(self, key, task, scope, is_handler=False, report=None):
            if key[0] != index or is_handler:
                raise BatchEnd()
            self.reached = bool(scope.rescuable)
            if given is None:
                raise BatchEnd()
            for name in given.get("notify") or ():
                if name not in self.notified:
                    self.notified.append(name)
            if given["ignored"]:
                return None
            if given["status"] == "unreachable":
                raise BatchEnd()
            if given["status"] == "failed":
                return Failure(failed_task_wire(task), given["result"])
            return None

        def run_meta(self, node, scope):  # a play-wide meta Ansible runs (refresh_inventory)
            return self.run_task([node["i"], 0], node["t"], scope)

    walk = Walk()
    walk.run()
    return walk


def _run_through_ansible(executor: Any, step: Any, active: List[str],
                         ask: Callable[..., Dict[str, Any]]) -> Any:
    """One ``Where.ANSIBLE`` step: find who reaches it, have Ansible run it, apply the outcome."""
    from ioc.controller.play import HostStatus, StepOutcome

    from ioc.model import WIRE_VERSION
    from ioc.planner import wire_tree

    index = step.index
    tree = wire_tree(executor.plan.program.tree, step.start, step.end)

    def wire(host: str) -> Dict[str, Any]:
        # The walk never templates: the tree and the host's saved state are enough.
        return {"v": WIRE_VERSION, "host": host, "start": step.start, "end": step.end,
                "tree": tree, "handlers": [], "vars": {}, "options": {},
                "state": executor.hosts[host].wire_state()}

    reached: List[Tuple[str, bool]] = []
    for host in active:
        if index in executor.ctx.skip.get(host, ()):
            continue  # gathering = smart: this host's facts are gathered already
        walk = _ansible_walk(wire(host), index, None)
        if walk.reached is not None:
            reached.append((host, walk.reached))
    if step.once:
        reached = reached[:1]
    outcome = StepOutcome()
    ran: List[str] = []  # the hosts Ansible ran the task for
    #: (hosts that reached the task, hosts Ansible ran it for), for after_step.
    executor.ansible_hosts = ([host for host, _ in reached], ran)
    if not reached:
        return outcome
    LOG.info("AnsibleStep %d on %d host(s): %s", index, len(reached), step.reason)
    reply = ask(index, reached, bool(step.once))
    if reply.get("inventory") is not None:  # refresh_inventory: Ansible's new inventory
        executor.replace_inventory(reply["inventory"], reply.get("hosts_all"))
    for host, layers in (reply.get("vars") or {}).items():
        state = executor.hosts.get(host)
        if state is None:
            continue
        state.facts = {**state.facts, **layers.get("facts", {})}
        state.runtime = {**state.runtime, **layers.get("runtime", {})}
        state.included = {**state.included, **layers.get("include_vars", {})}
    for host, _ in reached:
        given = (reply.get("hosts") or {}).get(host)
        if given is None:  # Ansible did not run it there (run_once decided at run time)
            continue
        state = executor.hosts[host]
        ran.append(host)
        if given["status"] == "unreachable" and not given["ignored"]:
            state.status = HostStatus.UNREACHABLE
            outcome.trouble[host] = "unreachable"
            outcome.failed.append(host)
            continue
        # add_host/group_by: ioc's copy of the inventory follows (per loop item too).
        items = given["result"].get("results")
        for result in items if isinstance(items, list) else [given["result"]]:
            if isinstance(result, dict) and not result.get("failed") and \
                    not result.get("skipped") and given["status"] != "unreachable":
                executor._inventory_effects(host, {"status": "ok", "result": dict(result)})
        walk = _ansible_walk(wire(host), index, given)
        state.absorb(walk.events[-1])
        if given["status"] == "failed" and not given["ignored"]:
            outcome.failed.append(host)
    return outcome


def _handler_walk(wire: Dict[str, Any], number: int, given: Optional[Dict[str, Any]],
                  task: Optional[Dict[str, Any]] = None) -> Any:
    """A runner walk that resumes a flush at handler ``number`` and never runs it.

    As :func:`_ansible_walk` for a handler that runs through Ansible: the
    host's saved state (its block phases, the flush's queue) puts it in the
    flush; with ``given`` None the walk records whether a failure there
    would be rescued and stops. With ``given`` (Ansible's outcome) it applies
    the outcome: the handlers it notified are queued as the runner queues a
    handler's notifications (a later one in this flush, an earlier one or
    itself at the next, L5.6; Ansible announced them), a failure fails the
    host (or enters a rescue) and its other handlers do not run; otherwise the
    flush goes on up to the next handler, where the walk stops. ``task`` is
    the handler's wire (the runner only has a stub of it), for a rescue's
    ``ansible_failed_task``.
    """
    from ioc.agentless_runner.batch import BatchEnd, Failure, HostRun, failed_task_wire

    class Walk(HostRun):
        def __init__(self) -> None:
            self.events: List[Dict[str, Any]] = []
            super().__init__(wire, self.events.append)
            self.reached: Optional[bool] = None

        def stops_before(self, other, bound):
            return other != number

        def run_handler(self, index, other, handler, scope, queued):
            self.reached = bool(scope.rescuable)
            if given is None:
                raise BatchEnd()
            for notified in given.get("notified") or ():
                if notified in queued or notified in self.notified:
                    continue
                if notified > number:
                    queued.add(notified)
                else:
                    self.notified.append(notified)
            if given["ignored"]:
                return None
            if given["status"] == "unreachable":
                raise BatchEnd()
            if given["status"] == "failed":
                return Failure(failed_task_wire(task or handler), given["result"])
            return None

    walk = Walk()
    walk.run()
    return walk


def _run_flush_through_ansible(executor: Any, step: Any, active: List[str],
                               ask: Callable[..., Dict[str, Any]]) -> Any:
    """A flush that can reach handlers ioc does not run natively (``step.handlers``).

    The handlers run in definition order, each on the hosts notified of it,
    as linear runs them (L5.4): the runner runs the flush natively (its
    notifications, the explicit flush's events, the native handlers) up to
    the first foreign handler; Ansible runs that one for the hosts queued for
    it, in play-host order (:meth:`_PlayRun.handler_through_ansible`); the
    runner goes on up to the next one, and so on. One runner call per run of
    consecutive native handlers, for the hosts that still have handlers to
    run; none at all when nothing is notified.
    """
    from ioc.controller.play import HostStatus, StepOutcome
    from ioc.model import WIRE_VERSION, to_wire
    from ioc.planner import wire_tree

    program = executor.plan.program
    entry = program.entry(step.index)
    hosts = executor.hosts
    foreign = sorted(step.handlers)
    outcome = StepOutcome()
    ends: Dict[str, Any] = {}
    fatal = _truthy(program.play.any_errors_fatal)
    tree = wire_tree(program.tree, step.start, step.end)

    def native(names: List[str], start: int) -> None:
        calls = [executor._call(h, step, active) for h in names]
        if start:
            once = _once_handlers(program, [(h, hosts[h].flushing or []) for h in executor.order
                                            if hosts[h].active], start)
            for call in calls:
                call.wire["options"].update(flush_resume=True, flush_from=start,
                                            once_handlers=once)
        LOG.info("Flush %d: native handlers from %d on %d host(s)", step.index, start, len(names))
        part = executor.run_calls(calls, StepOutcome())
        settle(part.failed)
        ends.update(part.ends)
        outcome.trouble.update(part.trouble)

    def settle(failed: List[str]) -> None:
        outcome.failed.extend(h for h in failed if h not in outcome.failed)
        if failed and fatal:
            executor.stop_others(active, failed)

    def wire(host: str, number: int) -> Dict[str, Any]:
        return {"v": WIRE_VERSION, "host": host, "start": step.start, "end": step.end,
                "tree": tree, "handlers": executor._handlers_wire(), "vars": {},
                "options": {"flush_resume": True, "flush_from": number},
                "state": hosts[host].wire_state()}

    def through_ansible(number: int) -> None:
        handler = program.handlers[number]
        queued = [h for h in executor.order if hosts[h].active and number in (hosts[h].flushing or ())]
        reached: List[Tuple[str, bool]] = []
        for host in queued:
            walk = _handler_walk(wire(host, number), number, None)
            reached.append((host, bool(walk.reached)))
        once = _truthy(handler.run_once) and not _templated(handler.run_once)
        if once:
            reached = reached[:1]
        if not reached:
            return
        LOG.info("AnsibleHandler %d at flush %d on %d host(s)", number, step.index, len(reached))
        notified = {host: sorted(set(hosts[host].flushing or ()) - {number}
                                 | {n for n in hosts[host].notified if isinstance(n, int)})
                    for host, _ in reached}
        reply = ask(step.index, number, reached, once, notified)
        for host, layers in (reply.get("vars") or {}).items():
            state = hosts.get(host)
            if state is not None:
                state.facts = {**state.facts, **layers.get("facts", {})}
                state.runtime = {**state.runtime, **layers.get("runtime", {})}
                state.included = {**state.included, **layers.get("include_vars", {})}
        ran: List[str] = []
        failed: List[str] = []
        for host in queued:
            given = (reply.get("hosts") or {}).get(host)
            state = hosts[host]
            if given is None:  # run_once: Ansible cleared the others' notification (L5.8)
                state.flushing = [n for n in state.flushing or () if n != number]
                continue
            ran.append(host)
            if given["status"] == "unreachable" and not given["ignored"]:
                state.status = HostStatus.UNREACHABLE
                state.flushing = None
                outcome.trouble[host] = "unreachable"
                failed.append(host)
                continue
            walk = _handler_walk(wire(host, number), number, given, to_wire(handler))
            state.absorb(walk.events[-1])
            if given["status"] == "failed" and not given["ignored"]:
                failed.append(host)
        if failed and ran and (once or len(ran) < len(queued)) and ran[0] in failed:
            # A failed run_once handler fails every host (linear marks them all failed).
            for host in executor.order:
                if host != ran[0] and hosts[host].active:
                    hosts[host].status = HostStatus.STOPPED
        settle(failed)
        if failed and _truthy(handler.any_errors_fatal) and not fatal:
            executor.stop_others(active, failed)

    def carrying(bound: Optional[int]) -> List[str]:
        """Hosts in the flush with a handler (or nothing) to run before ``bound``."""
        out = []
        for host in executor.order:
            queue = hosts[host].flushing
            if hosts[host].active and queue is not None and (
                    bound is None or not queue or queue[0] < bound):
                out.append(host)
        return out

    if entry.implicit and not any(hosts[h].notified or hosts[h].blocks for h in active):
        return outcome  # an implicit flush with nothing to run: no call at all (L5.3)
    native(active, 0)
    for position, number in enumerate(foreign):
        through_ansible(number)
        later = foreign[position + 1] if position + 1 < len(foreign) else None
        names = carrying(later)
        if names:
            native(names, number + 1)
    stuck = [h for h in executor.order if hosts[h].active and hosts[h].flushing is not None]
    if stuck:
        raise RuntimeError("flush %d: hosts %s did not finish it" % (step.index, stuck))
    outcome.ends = ends
    return outcome


def _once_handlers(program: Any, queues: List[Tuple[str, List[int]]], start: int) -> Dict[str, str]:
    """Per run_once handler from ``start`` on, the first host (in order) queued for it (L5.8)."""
    out: Dict[str, str] = {}
    for number, handler in enumerate(program.handlers):
        if number < start or not _truthy(handler.run_once):
            continue
        for host, queue in queues:
            if number in queue:
                out[str(number)] = host
                break
    return out


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in ("", "false", "no", "0", "off", "n")
    return bool(value)


def _templated(value: Any) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


class Dispatcher:
    """The parent's handle on the ``--serve`` subprocess (one per ansible-playbook run)."""

    _instance: Optional["Dispatcher"] = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        debug = env.get("IOC_BRIDGE_LOG")
        self._log = open(debug, "ab") if debug else subprocess.DEVNULL
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ioc.ansible_bridge", "--serve"] +
            (["--log", debug] if debug else []),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, env=env,
            close_fds=True)

    @classmethod
    def get(cls) -> "Dispatcher":
        with cls._lock:
            if cls._instance is None or cls._instance.proc.poll() is not None:
                cls._instance = Dispatcher()
                atexit.register(cls._instance.close)
            return cls._instance

    def request(self, message: Dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        _write(self.proc.stdin, message)

    def replies(self):
        assert self.proc.stdout is not None
        while True:
            try:
                reply = _read(self.proc.stdout)
            except EOFError:
                yield ("error", "the ioc dispatcher exited (status %s)" % self.proc.poll())
                return
            yield reply
            if reply[0] in ("done", "error"):
                return

    def close(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
        if Dispatcher._instance is self:
            Dispatcher._instance = None


# -- the strategy --------------------------------------------------------------------


def plan_for(iterator: Any, loader: Any) -> Tuple[Converted, Any, str]:
    """Ansible's play (its iterator) planned by ioc: (IR, PlannedPlay, explain text).

    Raises :class:`Fallback` when the whole play must run through linear.
    """
    from ioc.controller.capabilities import runner_capabilities
    from ioc.controller.playbook import PlannedPlay
    from ioc.errors import IocError
    from ioc.planner import explain, plan_play

    caps = runner_capabilities()
    converted = play_to_ir(iterator, loader, frozenset(caps.actions))
    try:
        plan = plan_play(converted.play, caps, fallback=converted.fallback)
    except IocError as exc:
        raise Fallback(str(exc)) from None
    return converted, PlannedPlay(converted.play, plan), explain(plan)


def foreign_steps(plan: Any) -> List[Any]:
    """The plan's steps that run through Ansible."""
    from ioc.planner import ControllerStep, Where

    return [s for s in plan.steps if isinstance(s, ControllerStep) and s.where == Where.ANSIBLE]


def print_plans(argv: Sequence[str]) -> int:
    """``--plan``: each play's mitogen_batch plan, from ansible-playbook's arguments; runs nothing."""
    check_ansible_version()
    from ansible import context
    from ansible.cli.playbook import PlaybookCLI
    from ansible.executor.play_iterator import PlayIterator
    from ansible.playbook import Playbook
    from ansible.playbook.play_context import PlayContext
    from ansible.plugins.loader import add_all_plugin_dirs, init_plugin_loader
    try:
        from ansible._internal._templating._engine import TemplateEngine as Templar
    except ImportError:
        from ansible.template import Templar  # type: ignore[no-redef]

    cli = PlaybookCLI(["ansible-playbook", *argv])
    cli.parse()
    init_plugin_loader(list(context.CLIARGS.get("collections_path") or []))
    for path in context.CLIARGS["args"]:
        add_all_plugin_dirs(os.path.dirname(os.path.abspath(path)).encode())
    loader, inventory, vm = cli._play_prereqs()
    for path in context.CLIARGS["args"]:
        book = Playbook.load(path, variable_manager=vm, loader=loader)
        for play in book.get_plays():
            loader.set_basedir(play._included_path or book._basedir)
            all_vars = vm.get_vars(play=play)
            play.post_validate(Templar(loader=loader, variables=all_vars))
            new_play = play.copy()
            new_play.post_validate(Templar(loader=loader, variables=all_vars))
            new_play.handlers = new_play.compile_roles_handlers() + new_play.handlers
            iterator = PlayIterator(inventory=inventory, play=new_play,
                                    play_context=PlayContext(new_play, {}, None),
                                    variable_manager=vm, all_vars=all_vars, start_at_done=False)
            try:
                _, _, text = plan_for(iterator, loader)
            except Fallback as why:
                text = "PLAY [%s]: runs whole with the linear strategy: %s" % (
                    plain(new_play.get_name()), why)
            print(text)
    return 0


def _build_strategy_class() -> type:
    check_ansible_version()
    from ansible.plugins.strategy import StrategyBase
    from ansible.plugins.strategy.linear import StrategyModule as LinearStrategy
    from ansible.utils.display import Display

    display = Display()

    class StrategyModule(LinearStrategy):
        """``strategy = mitogen_batch``: linear results, one round trip per batch."""

        def run(self, iterator, play_context):  # type: ignore[override]
            self._set_hosts_cache(iterator._play)
            try:
                native = self._prepare(iterator, play_context)
            except Fallback as why:
                display.vv("mitogen_batch: play %r runs with the linear strategy: %s"
                           % (iterator._play.get_name(), why))
                log = os.environ.get("IOC_BRIDGE_LOG")
                if log:  # beside the plans of the native plays
                    with open(log, "a") as stream:
                        stream.write("PLAY [%s]: runs whole with the linear strategy: %s\n"
                                     % (plain(iterator._play.get_name()), why))
                return super().run(iterator, play_context)
            play_run = _PlayRun(self, iterator, play_context, native)
            if not play_run.hosts:  # nothing to run: linear's own bookkeeping
                return super().run(iterator, play_context)
            return StrategyBase.run(self, iterator, play_context, play_run.run())

        def _prepare(self, iterator, play_context):
            if self._step or getattr(self, "debugger_active", False):
                raise Fallback("--step and the task debugger need the linear strategy")
            converted, planned, text = plan_for(iterator, self._loader)
            foreign = foreign_steps(planned.plan)
            flushes = [step for step in foreign if step.handlers]
            display.vv("mitogen_batch: play %r runs in %d step(s), %d task(s) through Ansible%s"
                       % (converted.play.name, len(planned.plan.steps),
                          len(foreign) - len(flushes),
                          ", %d flush(es) with handlers through Ansible" % len(flushes)
                          if flushes else ""))
            for step in foreign:
                if step.handlers:  # a flush whose foreign handlers run through Ansible
                    display.vv("mitogen_batch: flush %d %s" % (step.index, step.reason))
                else:
                    display.vv("mitogen_batch: task %d %s" % (step.index, step.reason))
            display.vvv(text)
            log = os.environ.get("IOC_BRIDGE_LOG")
            if log:  # the plan beside the dispatcher's log of the steps it runs
                with open(log, "a") as stream:
                    stream.write(text + "\n")
            return converted, planned

    StrategyModule.__module__ = __name__
    return StrategyModule


class _PlayRun:
    """One native play: request the dispatcher, turn its replies into Ansible's state."""

    def __init__(self, strategy: Any, iterator: Any, play_context: Any, native: Any) -> None:
        self.s = strategy
        self.tqm = strategy._tqm
        self.vm = strategy._variable_manager
        self.iterator = iterator
        self.play = iterator._play
        self.play_context = play_context
        self.converted, self.planned = native
        self.program = self.planned.plan.program
        #: Hosts failed in earlier plays are marked failed in the iterator (TQM.run).
        self.hosts = {h.name: h for h in strategy.get_hosts_left(iterator)
                      if not iterator.is_failed(h)}
        #: The Ansible Task (or handler) whose step is being replayed, and its IR.
        self.task: Any = None
        self.ir_task: Any = None
        self.is_handler = False
        self.handler_objects = list(self.converted.handlers)
        self.ended = False
        #: The current step's dynamic include results, as sent to the callbacks.
        self.include_results: List[Any] = []
        #: Per host, the item results of a looped include, until its final result.
        self.include_items: Dict[str, List[Dict[str, Any]]] = {}

    # -- building the request ------------------------------------------------------

    def request(self) -> Dict[str, Any]:
        from ansible import context
        from ioc.controller.play import RunOptions

        names = [plain(n) for n in self.hosts]
        inventory = self._inventory()
        memory = {}
        for name in names:
            memory[name] = {
                "facts": plain(_facts_of(self.vm, name)),
                "runtime": plain(self.vm._nonpersistent_fact_cache.get(name, {})),
                "include_vars": plain(self.vm._vars_cache.get(name, {})),
            }
        cli = context.CLIARGS
        from ansible.release import __version__
        options = RunOptions(check=bool(cli.get("check")), diff=bool(cli.get("diff")),
                             forks=int(cli.get("forks") or 5),
                             # results shaped as this release's linear shapes them
                             shape="2.19" if __version__.startswith("2.19.") else "2.21",
                             # -K / --become-password-file (variables still win).
                             become_password=plain(self.play_context.become_pass) or None)
        return {"op": "play", "planned": self.planned, "inventory": inventory,
                "modules": self.converted.converter.modules,
                "extra_vars": plain(self.vm.extra_vars), "hosts": names, "memory": memory,
                "options": options, "host_vars_files": self.converted.host_vars_files,
                "skip": self._skip(),
                # ansible_play_hosts_all/ansible_play_hosts span every serial batch
                "hosts_all": [plain(n) for n in (self.s._hosts_cache_all or names)],
                "removed": [plain(n) for n in getattr(self.play, "_removed_hosts", ())
                            if n not in names]}

    def _skip(self) -> Dict[str, List[int]]:
        """Per host, the entries it does not run: gathering where ``gathering =
        smart`` finds its facts gathered already."""
        index = self.converted.gather_index(self.program) if self.converted.skip_gather else None
        if index is None:
            return {}
        return {name: [index] for name in self.converted.skip_gather}

    def _inventory(self) -> Inventory:
        """ioc's copy of Ansible's inventory: every host (``groups`` and
        ``hostvars`` span the whole inventory), in Ansible's order, with the
        variables of the play's pattern, its hosts and their ``mitogen_via``
        hosts. The others' (``get_vars`` per host costs) the dispatcher asks
        for, with their facts, once a step reads their hostvars or connects to
        one (``outside_hosts``)."""
        from ansible import constants as C

        inventory = self.s._inventory
        play_hosts = inventory.get_hosts(self.play.hosts, ignore_restrictions=True) + \
            list(self.hosts.values())
        known = {h.name: h for h in inventory.get_hosts("all", ignore_limits=True,
                                                        ignore_restrictions=True)}
        for host in play_hosts:  # the implicit localhost is in no group
            known.setdefault(host.name, host)
        variables: Dict[str, Dict[str, Any]] = {}
        wanted = list(play_hosts)
        while wanted:
            host = wanted.pop(0)
            if host.name in variables:
                continue
            variables[host.name] = self._host_vars(host, C)
            # mitogen_via hosts (and theirs) need their connection settings too.
            via = variables[host.name].get("mitogen_via")
            if via and inventory.get_host(str(via)) is not None:
                via_host = inventory.get_host(str(via))
                known.setdefault(via_host.name, via_host)
                wanted.append(via_host)
        hosts = {plain(name): Host(plain(name), variables.get(name, {})) for name in known}
        groups = {}
        for name, group in inventory.groups.items():
            groups[plain(name)] = Group(plain(name), hosts=tuple(
                plain(h.name) for h in group.hosts if h.name in hosts),
                children=tuple(plain(c.name) for c in group.child_groups))
        return Inventory(hosts=hosts, groups=groups)

    def _host_vars(self, host: Any, C: Any) -> Dict[str, Any]:
        """The inventory layer of ``host``'s variables (group/host vars, vars plugins)."""
        vm = self.vm
        full = vm.get_vars(host=host, include_hostvars=False)
        drop = set(vm.extra_vars) | set(vm._nonpersistent_fact_cache.get(host.name, {})) \
            | set(vm._vars_cache.get(host.name, {}))
        facts = _facts_of(vm, host.name)
        drop |= set(facts) | {"ansible_facts"}
        drop |= {k for k in facts if not k.startswith("ansible_")}
        drop |= {"ansible_" + k for k in facts if not k.startswith("ansible_")}
        drop |= set(vm._get_magic_variables(play=None, host=host, task=None,
                                            include_hostvars=False, _hosts=None,
                                            _hosts_all=None))
        out = {plain(k): plain(v) for k, v in full.items() if k not in drop}
        python = out.get("ansible_python_interpreter")
        if python is None or str(python).startswith("auto"):
            out.pop("ansible_python_interpreter", None)
            if host.name in ("localhost", "127.0.0.1") and \
                    out.get("ansible_connection") == "local":
                out["ansible_python_interpreter"] = sys.executable
        pc = self.play_context
        if "ansible_user" not in out and "ansible_ssh_user" not in out and pc.remote_user:
            out["ansible_user"] = pc.remote_user
        if "ansible_ssh_private_key_file" not in out and pc.private_key_file:
            out["ansible_ssh_private_key_file"] = pc.private_key_file
        if "ansible_host_key_checking" not in out and not C.HOST_KEY_CHECKING:
            out["ansible_host_key_checking"] = False
        out.update(_ssh_settings(full, out))
        return out

    # -- running ---------------------------------------------------------------------

    def run(self) -> int:
        dispatcher = Dispatcher.get()
        dispatcher.request(self.request())
        summary = None
        for reply in dispatcher.replies():
            kind = reply[0]
            if kind == "step_start":
                self.step_start(*reply[1:])
            elif kind == "event":
                self.host_event(*reply[1:])
            elif kind == "step_end":
                self.announce_includes()
            elif kind == "left":
                self.host_left(*reply[1:])
            elif kind == "callback":
                self.play_level(reply[1], reply[2])
            elif kind == "ansible":
                dispatcher.request(dict(self.through_ansible(*reply[1:]), op="ansible_done"))
            elif kind == "include":
                dispatcher.request(dict(self.splice_includes(*reply[1:]), op="include_done"))
            elif kind == "store":  # delegate_facts for a host outside the play
                _, name, values, layer = reply
                if layer == "facts":
                    self.vm.set_host_facts(name, values)
                else:
                    self.vm.set_nonpersistent_facts(name, values)
            elif kind == "outside":
                dispatcher.request({"op": "outside_done", "hosts": self.outside_hosts(reply[1])})
            elif kind == "ansible_handler":
                dispatcher.request(dict(self.handler_through_ansible(*reply[1:]),
                                        op="ansible_done"))
            elif kind == "done":
                summary = reply[1]
            elif kind == "error":
                from ansible.errors import AnsibleError
                raise AnsibleError("mitogen_batch: %s" % reply[1])
        return self.finish(summary or {})

    def through_ansible(self, index: int, reached: List[Tuple[str, bool]],
                        once: bool) -> Dict[str, Any]:
        """Run task ``index`` through Ansible's own machinery, as linear does, for ``reached``.

        Callbacks, stats, registered values, facts and notifications are
        Ansible's own (``_queue_task`` and ``_process_pending_results``). What
        ioc decides itself is put back: the iterator's and the TQM's view of
        failed and unreachable hosts (ioc's summary sets them at the play's
        end, as for native tasks), and a failure ioc's block rescues is
        counted ``rescued``. The reply gives each host's outcome and every
        play host's variables the task changed.
        """
        entry = self.program.entry(index)
        self.ir_task = entry.task
        self.task = task = self.converted.origin[id(entry.task)]
        self.is_handler = False
        rescuable = dict(reached)
        hosts = [self.hosts[name] for name, _ in reached]
        if entry.task.action == "meta":
            return self._meta_through_ansible(task, hosts)
        iterator = self.iterator
        snapshot = self._snapshot()
        results = self._queue(task, hosts, once, lambda: self.tqm.send_callback(
            "v2_playbook_on_task_start", task, is_conditional=False))
        outcomes: Dict[str, Dict[str, Any]] = {}
        rescued: Dict[str, Any] = {}
        for task_result in results:
            host, outcome, raw, failed_task = _outcome(task_result)
            state = iterator.get_state_for_host(host)
            saved = snapshot["saved"]
            earlier = saved[host].handler_notifications if host in saved else []
            outcome["notify"] = [plain(n) for n in state.handler_notifications if n not in earlier]
            outcomes[host] = outcome
            if outcome["status"] == "failed" and not outcome["ignored"] and rescuable.get(host):
                rescued[host] = (failed_task, raw)
        return self._restore(outcomes, rescued, snapshot)

    def _snapshot(self) -> Dict[str, Any]:
        """What ``_restore`` puts back after Ansible ran a task: every play host's
        variable layers and iterator state (a failed run_once task marks them
        all failed), ``_removed_hosts``, the TQM's failed/unreachable hosts."""
        tqm = self.tqm
        return {"before": {name: self._layers(name) for name in self.hosts},
                "saved": {name: self.iterator.get_state_for_host(name).copy()
                          for name in self.hosts},
                "removed": list(self.play._removed_hosts),
                "failed_hosts": dict(tqm._failed_hosts),
                "unreachable_hosts": dict(tqm._unreachable_hosts)}

    def _queue(self, task: Any, hosts: List[Any], once: bool,
               start: Callable[[], None]) -> List[Any]:
        """Queue ``task`` for ``hosts`` and collect the results, as linear's loop does
        (``start`` sends the task's start callback once its name is templated)."""
        strategy, iterator = self.s, self.iterator
        results: List[Any] = []
        for number, host in enumerate(hosts):
            task_vars, templar = self._task_vars(host)
            run_once = _bypasses(task) or bool(templar.template(task.run_once))
            if number == 0:
                self._template_name(host.name)
                start()
            strategy._blocked_hosts[host.name] = True
            strategy._queue_task(host, task, task_vars, self.play_context)
            del task_vars
            if number == 0:
                task.run_once = run_once  # after queueing the first host, as linear does
            if run_once or once:
                break
            results.extend(strategy._process_pending_results(
                iterator, max_passes=max(1, int(len(self.tqm._workers) * 0.1))))
        if strategy._pending_results > 0:
            results.extend(strategy._wait_on_pending_results(iterator))
        strategy.update_active_connections(results)
        return results

    def _restore(self, outcomes: Dict[str, Any], rescued: Dict[str, Any],
                 snapshot: Dict[str, Any]) -> Dict[str, Any]:
        """After Ansible ran a task or handler: put back what ioc decides itself.

        A failure ioc's block rescues (Ansible's iterator never walked the
        block) counts ``rescued`` and gives the rescue linear's
        ``ansible_failed_*``; the iterator's host states, ``_removed_hosts`` and
        the TQM's failed/unreachable hosts are restored. The reply: each host's
        outcome and every play host's variables that changed.
        """
        tqm = self.tqm
        changed = {}
        for name in self.hosts:
            delta = _delta(snapshot["before"][name], self._layers(name))
            if delta:
                changed[name] = delta
        for host, (failed_task, raw) in rescued.items():
            tqm._stats.decrement("failures", host)
            tqm._stats.increment("rescued", host)
            self.vm.set_nonpersistent_facts(host, {"ansible_failed_task": failed_task,
                                                   "ansible_failed_result": raw})
        for name, state in snapshot["saved"].items():
            self.iterator.set_state_for_host(name, state)
        self.play._removed_hosts[:] = snapshot["removed"]
        tqm._failed_hosts.clear()
        tqm._failed_hosts.update(snapshot["failed_hosts"])
        tqm._unreachable_hosts.clear()
        tqm._unreachable_hosts.update(snapshot["unreachable_hosts"])
        return {"hosts": outcomes, "vars": changed}

    def splice_includes(self, index: int, active: List[str]) -> Dict[str, Any]:
        """Load what the hosts of include task ``index`` included, as linear does it.

        Ansible's own ``IncludedFile.process_include_results`` groups the
        include's results (file, arguments, loop variables; hosts in result
        order) and finds the files; each is loaded, tag-filtered, counted and
        announced (``v2_playbook_on_include``) exactly as the linear strategy
        does it, then converted to IR: a block only that group's hosts reach,
        right after the include. This process's play is spliced and planned
        again (``plan_play`` is deterministic) and the plan goes to the
        dispatcher, which goes on with it. A file that cannot be loaded fails
        its hosts with linear's callbacks; the dispatcher applies the failure
        to their block state (``failed``).
        """
        from ansible.errors import AnsibleError, AnsibleParserError
        from ansible.playbook.included_file import IncludedFile
        from ioc.controller.capabilities import runner_capabilities
        from ioc.controller.playbook import PlannedPlay
        from ioc.planner import plan_play
        from ioc.planner.program import splice_after

        include = self.program.entry(index).task
        results = [r for r in self.include_results if plain(r.host.name) in active]
        self.include_results = []
        s, iterator = self.s, self.iterator
        included_files = IncludedFile.process_include_results(
            results, iterator=iterator, loader=s._loader, variable_manager=self.vm)
        converter = self.converted.converter
        known_handlers = {id(h) for h in self.handler_objects}
        blocks: List[Block] = []
        failed: Dict[str, str] = {}
        for included_file in included_files:
            try:
                new_blocks = self._load_included(included_file)
            except AnsibleParserError:
                raise
            except AnsibleError as ex:
                for host, message in _include_failed(s, included_file, ex).items():
                    failed[host] = message
                continue
            for host in included_file._hosts:
                self.tqm._stats.increment("ok", host.name)
            self.tqm.send_callback("v2_playbook_on_include", included_file)
            try:
                nodes = converter.section(new_blocks, included=included_file._is_role)
            except Fallback as why:
                raise AnsibleError("mitogen_batch: %s cannot run: %s"
                                   % (included_file._filename, why)) from None
            blocks.append(Block(block=nodes, location=include.location, implicit=True,
                                hosts=tuple(plain(h.name) for h in included_file._hosts)))
        if not blocks:
            return {"planned": None, "failed": failed}
        new_handlers = [h for b in self.play.handlers for h in b.block if id(h) not in known_handlers]
        added = _Included(handlers=tuple(converter.task(h, handler=True) for h in new_handlers))
        play = splice_after(self.program.play, include, tuple(blocks), [added])
        plan = plan_play(play, runner_capabilities(), fallback=self.converted.fallback)
        self.planned = PlannedPlay(play, plan)
        self.program = plan.program
        origin = self.converted.origin
        self.handler_objects = [origin[id(h)] for h in play.handlers]
        return {"planned": self.planned, "failed": failed, "modules": converter.modules}

    def outside_hosts(self, names: Sequence[str]) -> Dict[str, Dict[str, Any]]:
        """Variable layers of inventory hosts outside the play, as Ansible has them now."""
        from ansible import constants as C

        out: Dict[str, Dict[str, Any]] = {}
        for name in names:
            host = self.s._inventory.get_host(name)
            if host is None:
                continue
            inventory_vars = self._host_vars(host, C)
            inventory_vars["group_names"] = sorted(
                plain(g.name) for g in host.get_groups() if g.name != "all")
            out[name] = {"inventory": inventory_vars, **self._layers(name)}
        return plain(out)

    def announce_includes(self) -> None:
        """After an inlined include's results: ``included: <file> for <hosts>``.

        Its tasks were loaded with the play (``_Converter.static_include``)
        and run in the same batch; linear counts and announces what each
        host included once the include task is done, from the same results.
        """
        from ansible.playbook.included_file import IncludedFile

        task = self.ir_task
        if not self.include_results or task is None or task.include_scope is not None:
            return  # nothing ran, or a dynamic include (splice_includes announces it)
        results, self.include_results = self.include_results, []
        for included_file in IncludedFile.process_include_results(
                results, iterator=self.iterator, loader=self.s._loader, variable_manager=self.vm):
            for host in included_file._hosts:
                self.tqm._stats.increment("ok", host.name)
            self.tqm.send_callback("v2_playbook_on_include", included_file)

    def _load_included(self, included_file: Any) -> List[Any]:
        """An included file's (or role's) blocks, tag-filtered, as linear loads them."""
        import inspect

        s, iterator = self.s, self.iterator
        if included_file._is_role:
            new_ir = s._copy_included_file(included_file)
            new_blocks, _ = new_ir.get_block_list(play=iterator._play,
                                                  variable_manager=self.vm, loader=s._loader)
        else:
            kwargs: Dict[str, Any] = {"iterator": iterator, "is_handler": False}
            if "handle_stats_and_callbacks" in inspect.signature(s._load_included_file).parameters:
                kwargs["handle_stats_and_callbacks"] = False  # 2.19: this strategy reports
            new_blocks = s._load_included_file(included_file, **kwargs)
        iterator.handlers = [h for b in iterator._play.handlers for h in b.block]
        return _tag_filtered(new_blocks, iterator._play, self.vm, s._hosts_cache,
                             s._hosts_cache_all)

    def handler_through_ansible(self, index: int, number: int, reached: List[Tuple[str, bool]],
                                once: bool, notified: Dict[str, List[int]]) -> Dict[str, Any]:
        """Run handler ``number`` of the flush at ``index`` through Ansible, as linear does.

        ``reached`` are the hosts queued for it (play order), ``notified``
        the handlers each is notified of already (ioc keeps notifications;
        Ansible's handlers are told them so its own ``notify_host`` sends
        ``v2_playbook_on_notify`` only for new ones, before the notifying
        result). The hosts are in Ansible's ``HANDLERS`` state while their
        results are processed, so a handler's notifications apply at once
        (L5.6). Callbacks, stats, registered values are Ansible's own; the
        iterator, the TQM's failed/unreachable hosts and the handlers'
        notified hosts are put back (ioc's summary decides the play's end).
        The reply is :meth:`through_ansible`'s, each outcome with the
        handler numbers it notified (``notified``).
        """
        from ansible.executor.play_iterator import IteratingStates

        self.ir_task = self.program.handlers[number]
        self.task = task = self.handler_objects[number]
        self.is_handler = True
        rescuable = dict(reached)
        hosts = [self.hosts[name] for name, _ in reached]
        iterator = self.iterator
        snapshot = self._snapshot()
        known = {id(h): list(h.notified_hosts) for h in self.handler_objects}
        # Ansible's view of who is notified of what, from ioc's notifications.
        for other_number, other in enumerate(self.handler_objects):
            other.notified_hosts = [self.hosts[name] for name in notified
                                    if other_number in notified[name]]
        for name in notified:
            state = iterator.get_state_for_host(name)
            state.pre_flushing_run_state = state.run_state
            state.run_state = IteratingStates.HANDLERS
        try:
            results = self._queue(task, hosts, once, lambda: self.tqm.send_callback(
                "v2_playbook_on_handler_task_start", task))
            now = {id(h): {getattr(x, "name", x) for x in h.notified_hosts}
                   for h in self.handler_objects}
        finally:
            for other in self.handler_objects:
                other.notified_hosts = known.get(id(other), [])
        outcomes: Dict[str, Dict[str, Any]] = {}
        rescued: Dict[str, Any] = {}
        for task_result in results:
            host, outcome, raw, failed_task = _outcome(task_result)
            outcome["notified"] = [
                n for n, other in enumerate(self.handler_objects)
                if host in now[id(other)] and n not in (notified.get(host) or ())]
            outcomes[host] = outcome
            if outcome["status"] == "failed" and not outcome["ignored"] and rescuable.get(host):
                rescued[host] = (failed_task, raw)
        return self._restore(outcomes, rescued, snapshot)

    def _meta_through_ansible(self, task: Any, hosts: List[Any]) -> Dict[str, Any]:
        """A play-wide meta action (refresh_inventory) as linear runs it: once,
        for the first host, by the strategy's ``_execute_meta`` (which sends the
        task start and resets the hosts caches; no result callback, no stats).

        The reply carries the inventory as Ansible now has it, for the
        dispatcher to take over: later native tasks see its groups, host
        variables and connections.
        """
        results = self.s._execute_meta(task, self.play_context, self.iterator, hosts[0])
        inventory = self.s._inventory
        # Ansible made new Host objects: the play's hosts are its new ones.
        self.hosts = {name: inventory.get_host(name) or host for name, host in self.hosts.items()}
        outcomes = {}
        for task_result in results:
            host, outcome, _, _ = _outcome(task_result)
            outcome["notify"] = []
            outcomes[host] = outcome
        return {"hosts": outcomes, "vars": {}, "inventory": self._inventory(),
                "hosts_all": [plain(n) for n in self.s._hosts_cache_all or ()]}

    def _task_vars(self, host: Any) -> Tuple[Dict[str, Any], Any]:
        try:
            from ansible._internal._templating._engine import TemplateEngine as Templar
        except ImportError:
            from ansible.template import Templar  # type: ignore[no-redef]

        task_vars = self.vm.get_vars(play=self.play, host=host, task=self.task,
                                     _hosts=self.s._hosts_cache, _hosts_all=self.s._hosts_cache_all)
        self.s.add_tqm_variables(task_vars, play=self.play)
        return task_vars, Templar(loader=self.s._loader, variables=task_vars)

    def _layers(self, name: str) -> Dict[str, Dict[str, Any]]:
        """A host's variable layers the dispatcher keeps, as Ansible's variable manager has them."""
        return {"facts": _facts_of(self.vm, name),
                "runtime": dict(self.vm._nonpersistent_fact_cache.get(name, {})),
                "include_vars": dict(self.vm._vars_cache.get(name, {}))}

    def play_level(self, name: str, args: Sequence[Any]) -> None:
        from ansible.utils.display import Display

        if name == "no_hosts_remaining":
            self.tqm.send_callback("v2_playbook_on_no_hosts_remaining")
        elif name == "warning":
            Display().warning(args[0])

    def step_start(self, key: Tuple[int, int], hosts: List[str], first: Dict[str, Any]) -> None:
        from ansible.playbook.handler import Handler

        self.announce_includes()
        if key[1] == 0:
            entry = self.program.entry(key[0])
            self.ir_task = entry.task
            self.is_handler = False
            self.include_results = []
            if entry.implicit:
                self.task = self.converted.gather if entry.task.action == "gather_facts" else None
            else:
                self.task = self.converted.origin[id(entry.task)]
        else:
            self.ir_task = self.program.handlers[key[1] - 1]
            self.task = self.handler_objects[key[1] - 1]
            self.is_handler = True
        if self.task is None or self.ir_task.action == "meta":
            return
        self._template_name(hosts[0] if hosts else None)
        if isinstance(self.task, Handler):
            self.tqm.send_callback("v2_playbook_on_handler_task_start", self.task)
        else:
            self.tqm.send_callback("v2_playbook_on_task_start", self.task, is_conditional=False)

    def _template_name(self, host_name: Optional[str]) -> None:
        task = self.task
        if not task.name or ("{{" not in str(task.name) and "{%" not in str(task.name)):
            return
        try:
            from ansible._internal._templating._engine import TemplateEngine as Templar
        except ImportError:
            from ansible.template import Templar  # type: ignore[no-redef]

        host = self.hosts.get(host_name) if host_name else None
        task_vars = self.vm.get_vars(play=self.play, host=host, task=task,
                                     _hosts=self.s._hosts_cache, _hosts_all=self.s._hosts_cache_all)
        self.s.add_tqm_variables(task_vars, play=self.play)
        templar = Templar(loader=self.s._loader, variables=task_vars)
        if hasattr(task, "post_validate_attribute"):
            task.post_validate_attribute("name", templar=templar)
        else:  # ansible-core < 2.21
            task.name = templar.template(task.name)

    def host_event(self, name: str, event: Dict[str, Any]) -> None:
        host = self.hosts[name]
        kind = event["e"]
        if kind == "notify":  # also from implicit steps (a flush)
            handler = self.handler_objects[event["handler"]]
            self.tqm.send_callback("v2_playbook_on_notify", handler, host)
            return
        if self.task is None:
            return
        if kind == "start":
            if event.get("meta"):
                self.tqm.send_callback("v2_playbook_on_task_start", self.task, is_conditional=False)
            else:
                self.tqm.send_callback("v2_runner_on_start", host, self.task)
        elif kind == "item":
            status = event["status"]
            if self.ir_task.action in _BRIDGE_INCLUDES:  # what each item included
                self.include_items.setdefault(name, []).append(event["result"])
            self.tqm.send_callback("v2_runner_item_on_%s" % status,
                                   _result(host, self.task, event["result"], self.ir_task.action,
                                           status, item=True))
        elif kind == "retry":
            self.tqm.send_callback("v2_runner_retry",
                                   _result(host, self.task, event["result"], self.ir_task.action,
                                           "ok", retry=True))
        elif kind in ("done", "unreachable", "crash"):
            self.final(host, event)

    def final(self, host: Any, event: Dict[str, Any]) -> None:
        if event["e"] != "done" and not event.get("started"):
            self.tqm.send_callback("v2_runner_on_start", host, self.task)
        status = event["status"]
        result = event.get("result") or {}
        ignored = bool(event.get("ignored"))
        items = self.include_items.pop(host.name, None)
        if items and isinstance(result.get("results"), list) and \
                len(items) == len(result["results"]):
            # The aggregate keeps the items' public keys only: the include's
            # items as their events had them (what each included).
            result = dict(result, results=items)
        if self.ir_task.action == "meta":
            if status == "ok":
                if result.get("meta") == "end_play":
                    self.ended = True
                return
        elif not (status == "ok" and self.ir_task.action in _BRIDGE_INCLUDES):
            # An include's ok counts once per file it included (announce_includes).
            self._count(host.name, status, bool(result.get("changed")), ignored,
                        bool(event.get("rescued")))
        if status == "ok":
            self._remember(host.name, result)
        self._apply_register(host.name, result)
        method = {"ok": "v2_runner_on_ok", "skipped": "v2_runner_on_skipped",
                  "failed": "v2_runner_on_failed",
                  "unreachable": "v2_runner_on_unreachable"}[status]
        task_result = _result(host, self.task, result, self.ir_task.action, status,
                              ignored=ignored)
        if self.ir_task.action in _BRIDGE_INCLUDES:
            self.include_results.append(task_result)
        if status == "failed":
            self.tqm.send_callback(method, task_result, ignore_errors=ignored)
        else:
            if status == "ok" and result.get("diff") and (self.s._diff or self.task.diff) \
                    and not isinstance(result.get("results"), list):
                self.tqm.send_callback("v2_on_file_diff", task_result)
            self.tqm.send_callback(method, task_result)

    def _count(self, host: str, status: str, changed: bool, ignored: bool, rescued: bool) -> None:
        stats = self.tqm._stats
        if status == "failed":
            if ignored:
                stats.increment("ok", host)
                stats.increment("ignored", host)
                if changed:
                    stats.increment("changed", host)
            else:
                stats.increment("rescued" if rescued else "failures", host)
        elif status == "unreachable":
            if ignored:
                stats.increment("ok", host)
                stats.increment("ignored", host)
            else:
                stats.increment("dark", host)
        elif status == "skipped":
            stats.increment("skipped", host)
        else:
            stats.increment("ok", host)
            if changed:
                stats.increment("changed", host)

    def _remember(self, host: str, result: Dict[str, Any]) -> None:
        """Facts and set_fact values reach Ansible as soon as the result is replayed."""
        facts = result.get("ansible_facts")
        if not isinstance(facts, dict):
            return
        action = self.ir_task.action
        if action in ("setup", "gather_facts"):
            self.vm.set_host_facts(host, plain(facts))
            if action == "gather_facts":  # as Ansible's gather_facts action marks it
                self.vm.set_host_facts(host, {"_ansible_facts_gathered": True})
        elif action == "set_fact":
            self.vm.set_nonpersistent_facts(host, plain(facts))
            if result.get("ansible_facts_cacheable") or self.ir_task.args.get("cacheable"):
                self.vm.set_host_facts(host, plain(facts))

    def _apply_register(self, host: str, result: Dict[str, Any]) -> None:
        name = self.ir_task.register
        if name:
            value = {k: v for k, v in plain(result).items() if not k.startswith("_ioc_")}
            self.vm.set_nonpersistent_facts(host, {name: value})

    def host_left(self, name: str, end: Dict[str, Any]) -> None:
        """The authoritative state a host's runner reported at the end of its step."""
        state = end.get("state") or {}
        if state.get("facts"):
            self.vm.set_host_facts(name, plain(state["facts"]))
        if state.get("runtime"):
            self.vm.set_nonpersistent_facts(name, plain(state["runtime"]))
        for key, value in (state.get("include_vars") or {}).items():
            self.vm.set_host_variable(name, key, plain(value))

    def finish(self, summary: Dict[str, Any]) -> int:
        result = int(self.tqm.RUN_OK)
        for name, host_summary in (summary.get("hosts") or {}).items():
            host = self.hosts[name]
            status = host_summary["status"]
            if status in ("failed", "stopped"):
                self.tqm._failed_hosts[name] = True
                self.iterator.mark_host_failed(host)
            elif status == "unreachable":
                self.tqm._unreachable_hosts[name] = True
                self.play._removed_hosts.append(name)
            else:
                # The linear iterator never walked this host: it is done.
                from ansible.executor.play_iterator import IteratingStates

                self.iterator.set_run_state_for_host(name, IteratingStates.COMPLETE)
                if host_summary.get("marked"):
                    # Rescued, yet on linear's failed list: later plays leave it out.
                    self.tqm._failed_hosts[name] = True
        if summary.get("max_fail_hit"):
            result |= self.tqm.RUN_FAILED_BREAK_PLAY
        if self.ended:
            self.iterator.end_play = True
        return result


@dataclasses.dataclass(frozen=True)
class _Included:
    """What an include adds to the play besides its tasks (see ``splice_after``)."""

    handlers: Tuple[Task, ...] = ()
    role_defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def _include_failed(strategy: Any, included_file: Any, ex: Exception) -> Dict[str, str]:
    """An included file that cannot be loaded: linear's callbacks and counts for its hosts.

    The include's own results (already shown ok) are sent again as failed,
    reworded as this release's linear strategy words them. Returns each
    host's message, for its block state.
    """
    tqm = strategy._tqm
    out: Dict[str, str] = {}
    try:
        from ansible._internal._task import UnifiedTaskResult
    except ImportError:  # 2.19
        from ansible.utils.display import Display

        Display().error(ex)
        for r in included_file._results:
            r._return_data["failed"] = True
            r._return_data["reason"] = str(ex)
            tqm._stats.increment("failures", r.host.name)
            tqm.send_callback("v2_runner_on_failed", r)
            out[plain(r.host.name)] = str(ex)
        return out
    for r in included_file._results:
        utr = UnifiedTaskResult._create_from_exception(ex, source_is_module=False)
        r.utr.failed = utr.failed
        r.utr.exception = utr.exception
        r.utr.msg = utr.msg
        tqm._stats.increment("failures", r.host.name)
        tqm.send_callback("v2_runner_on_failed", r)
        out[plain(r.host.name)] = str(utr.msg)
    return out


def _bypasses(task: Any) -> bool:
    """Whether the task's action plugin bypasses the host loop (runs once, like run_once)."""
    from ansible.plugins.loader import action_loader

    try:
        action = action_loader.get(task.action, class_only=True, collection_list=task.collections)
    except Exception:
        return False
    return bool(action and getattr(action, "BYPASS_HOST_LOOP", False))


def _outcome(task_result: Any) -> Tuple[str, Dict[str, Any], Any, Any]:
    """(host, outcome, Ansible's own result dict, the failed task as linear saves it).

    The last two are what linear gives a rescue as ``ansible_failed_result``
    and ``ansible_failed_task`` (2.21: ``dump_attrs()``, 2.19: ``serialize()``).
    """
    utr = getattr(task_result, "utr", None)
    task = task_result.task
    if utr is not None:  # ansible-core 2.21: HostTaskResult
        failed, unreachable = bool(utr.failed), bool(utr.unreachable)
        skipped, changed = bool(utr.skipped), bool(utr.changed)
        ignored = bool(utr.ignore_errors) if failed else \
            bool(utr.ignore_unreachable) if unreachable else False
        raw = utr.as_result_dict()
        failed_task = task.dump_attrs()
    else:  # 2.19/2.20: _RawTaskResult, the task's own keywords decide (as their strategy)
        failed, unreachable = task_result.is_failed(), task_result.is_unreachable()
        skipped, changed = task_result.is_skipped(), task_result.is_changed()
        ignored = bool(task.ignore_errors) if failed else \
            bool(task.ignore_unreachable) if unreachable else False
        raw = task_result._return_data
        failed_task = task.serialize()
    status = "failed" if failed else "unreachable" if unreachable else \
        "skipped" if skipped else "ok"
    result = {k: v for k, v in plain(raw or {}).items() if not str(k).startswith("_ansible_")}
    return plain(task_result.host.name), {"status": status, "ignored": ignored,
                                          "changed": changed, "result": result}, raw, failed_task


def _delta(before: Dict[str, Dict[str, Any]], after: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """What changed in each layer (added or replaced names), as plain values."""
    out = {}
    for layer, values in after.items():
        old = before.get(layer, {})
        changed = {plain(k): plain(v) for k, v in values.items()
                   if k not in old or (old[k] is not v and old[k] != v)}
        if changed:
            out[layer] = changed
    return out


#: The ssh connection plugin's options ioc's connections take, as variables.
_SSH_OPTIONS = (("ssh_args", "ansible_ssh_args"), ("ssh_common_args", "ansible_ssh_common_args"),
                ("ssh_extra_args", "ansible_ssh_extra_args"), ("timeout", "ansible_timeout"))


def _ssh_settings(variables: Mapping[str, Any], have: Mapping[str, Any]) -> Dict[str, Any]:
    """ssh_args, ssh_common_args, ssh_extra_args and timeout as Ansible's ssh
    connection resolves them (variables, CLI, environment, ansible.cfg, default)."""
    from ansible import constants as C
    from ansible.plugins.loader import connection_loader

    connection_loader.get("ssh", class_only=True)  # registers its options
    out: Dict[str, Any] = {}
    for option, variable in _SSH_OPTIONS:
        if variable in have or (option == "timeout" and "ansible_ssh_timeout" in have):
            continue
        try:
            value = C.config.get_config_value(option, plugin_type="connection",
                                              plugin_name="ssh", variables=variables)
        except Exception:  # an option this ansible-core does not have
            LOG.debug("ssh option %s unavailable", option, exc_info=True)
            continue
        if value not in (None, ""):
            out[variable] = plain(value)
    return out


def _facts_of(vm: Any, host: str) -> Dict[str, Any]:
    try:
        return dict(vm._fact_cache.get(host) or {})
    except KeyError:
        return {}


def _result(host: Any, task: Any, result: Dict[str, Any], action: str, status: str,
            ignored: bool = False, retry: bool = False, item: bool = False) -> Any:
    """A task result as Ansible's callbacks receive it, for this ansible-core.

    A dynamic include's result (and each of its loop items') also says what
    it included, as TaskExecutor's does: ``IncludedFile.process_include_results``
    reads it (``include``/``include_args`` keys on 2.19, fields on 2.21).
    """
    data = _public(result)
    include = action in _BRIDGE_INCLUDES
    if status == "failed":
        data.setdefault("failed", True)
    elif status == "skipped":
        data.setdefault("skipped", True)
    elif status == "unreachable":
        data.setdefault("unreachable", True)
    try:
        from ansible._internal import _task
        from ansible._internal._task import HostTaskResult
    except ImportError:  # ansible-core 2.19/2.20
        if result.get("_ioc_task_error") and status == "failed":
            data = _engine_error_219(task, data)
        if include:
            _include_keys_219(result, data, action, item)
        return _raw_task_result(host, task, data, action, status, retry)
    utr_class = _task.UnifiedTaskResult
    items = data.pop("results", None) if task.loop or task.loop_with else None
    engine = bool(result.get("_ioc_task_error")) and status == "failed"
    if engine:
        # The connection failed before the task ran (become): TaskExecutor's words.
        utr = _engine_error(utr_class, task, data)
    else:
        utr = _utr(utr_class, data, action)
    if include:
        _include_fields(utr, result, action)
    if isinstance(items, list):
        utr.loop_results = [_utr(utr_class, dict(item), action) if isinstance(item, dict)
                            else item for item in items]
        if include:
            for raw, item_utr in zip(result.get("results") or (), utr.loop_results):
                if isinstance(raw, dict):
                    _include_fields(item_utr, raw, action)
    elif items is not None:
        utr.result_data["results"] = items
    if isinstance(items, list):
        # 2.21 builds a loop's overall result from its items: it has no error of its own.
        utr.exception = None
    elif utr.failed and utr.exception and data.get("msg") and not engine:
        # As TaskExecutor._execute words it: "Task failed: <...>" with the task's origin.
        from ansible.errors import AnsibleTaskError

        try:
            try:
                utr.maybe_raise_on_result()
            except Exception as ex:
                raise AnsibleTaskError(obj=task.get_ds()) from ex
        except AnsibleTaskError as atex:
            utr = utr_class._create_from_exception(atex, accept_result_contribution=True,
                                                   source_is_module=False)
    utr.ignore_errors = ignored
    return HostTaskResult(host=host, task=task, utr=utr)


def _public(result: Dict[str, Any]) -> Dict[str, Any]:
    """``result`` without ioc's internal keys (its loop items' too)."""
    data = {k: v for k, v in result.items() if not k.startswith("_ioc_")}
    if isinstance(data.get("results"), list):
        data["results"] = [{k: v for k, v in item.items() if not k.startswith("_ioc_")}
                           if isinstance(item, dict) else item for item in data["results"]]
    return data


def _include_target(raw: Mapping[str, Any], action: str) -> Tuple[Optional[str], Dict[str, Any]]:
    """(file, arguments) a runner's include result names, as TaskExecutor splits them."""
    args = dict(raw.get("_ioc_include_args") or {})
    if action == "include_tasks":
        name = args.pop("_raw_params", None)
        return (name if name is not None else raw.get("_ioc_included")), args
    return None, args


def _include_fields(utr: Any, raw: Mapping[str, Any], action: str) -> None:
    """2.21: what an include (or one loop item of it) included, on its UnifiedTaskResult."""
    if "_ioc_include_args" not in raw:
        return  # skipped or failed: nothing included
    utr.include_file, utr.include_args = _include_target(raw, action)
    loop_var = raw.get("ansible_loop_var")
    if loop_var:
        utr.loop_var, utr.loop_item = loop_var, raw.get(loop_var)
        index_var = raw.get("ansible_index_var")
        if index_var:
            utr.loop_index_var, utr.loop_index = index_var, raw.get(index_var)
        if "ansible_loop" in raw:
            utr.loop_extended = raw["ansible_loop"]
        # 2.21 templates a label for every item (the item itself by default).
        utr.loop_item_label = raw.get("_ansible_item_label", raw.get(loop_var))


def _include_keys_219(raw: Mapping[str, Any], data: Dict[str, Any], action: str,
                      item: bool) -> None:
    """2.19: the ``include``/``include_args`` keys its TaskExecutor returns, per item too
    (``item``: ``raw`` is one loop item's result)."""
    pairs = [(raw, data)]
    if isinstance(raw.get("results"), list) and isinstance(data.get("results"), list):
        pairs += list(zip(raw["results"], data["results"]))
    for source, out in pairs:
        if not isinstance(source, dict) or "_ioc_include_args" not in source:
            continue
        if item or out is not data:
            out.pop("changed", None)  # an item is TaskExecutor's dict as it is
        name, args = _include_target(source, action)
        if name is not None:
            out["include"] = name
        out["include_args"] = args


def _engine_error(utr_class: Any, task: Any, data: Dict[str, Any]) -> Any:
    """A result as TaskExecutor makes it from an AnsibleError its connection raised."""
    from ansible.errors import AnsibleError, AnsibleTaskError

    message = str(data.get("msg", ""))
    if message.startswith("Task failed: "):
        message = message[len("Task failed: "):]
    try:
        try:
            raise AnsibleError(message)
        except AnsibleError as ex:
            raise AnsibleTaskError(obj=task.get_ds()) from ex
    except AnsibleTaskError as atex:
        utr = utr_class._create_from_exception(atex, accept_result_contribution=True,
                                               source_is_module=False)
    # A loop item keeps what identifies it (TaskExecutor's loop item context).
    for key in ("item", "ansible_loop_var", "ansible_index_var", "ansible_loop"):
        if key in data:
            utr.result_data[key] = data[key]
    if "_ansible_item_label" in data:
        utr.loop_item_label = data["_ansible_item_label"]
    return utr


#: What identifies a loop item's result; an engine error keeps it.
_ITEM_KEYS = ("item", "ansible_loop_var", "ansible_index_var", "ansible_loop",
              "_ansible_item_label", "_ansible_no_log")


def _engine_error_219(task: Any, data: Dict[str, Any]) -> Dict[str, Any]:
    """2.19: the result dict TaskExecutor makes from its connection's AnsibleError
    (a failed become), marked so ``_raw_task_result`` leaves it as it is."""
    from ansible._internal._errors import _error_utils
    from ansible.errors import AnsibleError, AnsibleTaskError

    message = str(data.get("msg", ""))
    if message.startswith("Task failed: "):
        message = message[len("Task failed: "):]
    try:
        try:
            # (from None: called while handling the ImportError that chose 2.19)
            raise AnsibleError(message) from None
        except AnsibleError as ex:
            raise AnsibleTaskError(obj=task.get_ds()) from ex
    except AnsibleTaskError as atex:
        out = _error_utils.result_dict_from_exception(atex, accept_result_contribution=True)
    out.setdefault("changed", False)
    out.update({k: data[k] for k in _ITEM_KEYS if k in data})
    if "results" in data:
        out["results"] = data["results"]
    out["_ioc_engine_error"] = True
    return out


def _raw_task_result(host: Any, task: Any, data: Dict[str, Any], action: str,
                     status: str, retry: bool = False) -> Any:
    """2.19/2.20: the ``_RawTaskResult`` a worker sends, over the result dict.

    ``TaskQueueManager.send_callback`` turns it into the callbacks' copy
    (``as_callback_task_result``: no ``failed``/``skipped`` keys, internal keys
    stripped, ``no_log`` censored), as for linear's own results. A failure is
    worded as 2.19's ``TaskExecutor._execute`` words it, per loop item too
    (``_execute`` runs once per item): ``exception`` becomes the error summary
    of "Task failed: Action failed: <msg>" / "Module failed: <msg>" with the
    task's origin.

    Every loop item has an ``_ansible_item_label`` (2.19 always templates one). A
    retry (``v2_runner_retry``) is 2.19's: ``attempts`` is the attempt that
    failed (2.21 and ioc count the one about to run), and inside a loop it
    carries no loop variable (2.19 adds that once the item is done).
    """
    from ansible.executor.task_result import _RawTaskResult

    data.pop("changed_when_result", None)  # 2.21's key; 2.19 only sets ``changed``
    if data.get("results") == [] and "skipped_reason" in data:  # an empty loop: 2.19's words
        data.pop("skip_reason", None)
    if "ansible_loop_var" in data and not retry:  # 2.19 labels every item
        data.setdefault("_ansible_item_label", data.get(data["ansible_loop_var"]))
    if retry:
        if isinstance(data.get("attempts"), int):
            data["attempts"] -= 1
        loop_var = data.pop("ansible_loop_var", None)
        for key in (loop_var, "ansible_index_var", data.get("ansible_index_var"),
                    "_ansible_item_label"):
            if key:
                data.pop(key, None)
    engine = data.pop("_ioc_engine_error", False)
    items = data.get("results") if task.loop or task.loop_with else None
    if isinstance(items, list):
        data["results"] = [_engine_error_219(task, item) if engine and isinstance(item, dict)
                           and item.get("failed") else _result_dict_219(task, item, action)
                           for item in items]
        for item in data["results"]:
            if isinstance(item, dict):
                item.pop("_ioc_engine_error", None)
    elif status == "failed" and not engine:
        data = _executor_failure_219(task, data, action)
    return _RawTaskResult(host, task, data, task.dump_attrs())


def _result_dict_219(task: Any, item: Any, action: str) -> Any:
    """One loop item's result as 2.19 keeps it in ``results``."""
    if not isinstance(item, dict):
        return item
    item = dict(item)
    item.pop("changed_when_result", None)
    if "ansible_loop_var" in item:
        item.setdefault("_ansible_item_label", item.get(item["ansible_loop_var"]))
    return _executor_failure_219(task, item, action) if item.get("failed") else item


def _executor_failure_219(task: Any, data: Dict[str, Any], action: str) -> Dict[str, Any]:
    """A failed result dict as 2.19's TaskExecutor._execute leaves it."""
    from ansible._internal._errors import _captured, _error_utils
    from ansible.errors import AnsibleTaskError

    if action not in _ACTIONS:  # ActionBase._execute_module normalises a module's result
        _captured.AnsibleModuleCapturedError.normalize_result_exception(data)
    try:
        try:
            _captured.AnsibleActionCapturedError.maybe_raise_on_result(data)
        except Exception as ex:
            raise AnsibleTaskError(obj=task.get_ds()) from ex
    except AnsibleTaskError as atex:
        data = _error_utils.result_dict_from_exception(atex, accept_result_contribution=True)
        data.setdefault("changed", False)
    return data


def _utr(utr_class: Any, data: Dict[str, Any], action: str) -> Any:
    """A 2.21 UnifiedTaskResult from ioc's result dict (an action's or a module's)."""
    if action in _ACTIONS:
        return utr_class.from_action_result_dict(data)
    module_data = {k: v for k, v in data.items() if not k.startswith("_ansible_")}
    utr = utr_class.from_module_result_dict(module_data)
    for key, value in data.items():
        if key == "_ansible_no_log":
            utr.no_log = bool(value)
        elif key == "_ansible_item_label":
            utr.loop_item_label = value
        elif key == "_ansible_verbose_always":
            utr.verbose_always = bool(value)
        elif key == "_ansible_verbose_override":
            utr.verbose_override = bool(value)
        elif key == "_ansible_delegated_vars":
            utr.callback_delegated_vars_subset = value
    return utr


# -- entry points ----------------------------------------------------------------------


def __getattr__(name: str) -> Any:
    """``StrategyModule`` is built (and ansible imported) on first access."""
    if name == "StrategyModule":
        cls = _build_strategy_class()
        globals()["StrategyModule"] = cls
        return cls
    raise AttributeError(name)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ioc.ansible_bridge",
                                     description="The mitogen_batch Ansible strategy's helpers.")
    parser.add_argument("--strategy-dir", action="store_true",
                        help="print the directory to name in ansible.cfg's strategy_plugins")
    parser.add_argument("--serve", action="store_true",
                        help="run as the strategy's dispatcher (internal: pipes on stdin/stdout)")
    parser.add_argument("--log", help="with --serve: append a debug log to this file")
    parser.add_argument("--plan", nargs=argparse.REMAINDER, metavar="ANSIBLE-PLAYBOOK-ARGS",
                        help="print each play's plan (which tasks run in which batch, which "
                             "run through Ansible and why) for these ansible-playbook "
                             "arguments; runs nothing")
    args = parser.parse_args(argv)
    if args.plan is not None:
        return print_plans(args.plan)
    if args.strategy_dir:
        print(strategy_dir())
        return 0
    if args.serve:
        if args.log:
            logging.basicConfig(filename=args.log, level=logging.INFO,
                                format="%(asctime)s %(name)s %(levelname)s %(message)s")
        # The protocol owns the real stdout; a stray print goes to stderr instead.
        out = os.fdopen(os.dup(1), "wb")
        os.dup2(2, 1)
        serve(sys.stdin.buffer, out)
        return 0
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
