"""An Ansible play, as its linear iterator would walk it → ioc's Play and Plan.

:func:`play_to_ir` takes the blocks of Ansible's ``PlayIterator`` (tags
already applied, roles already compiled) and rebuilds ioc's play from them:
the implicit fact gathering (``gathering = implicit/explicit/smart``, a
gathering task of its own when it has options), the pre/main/post sections
between Ansible's implicit handler flushes (or its ``force_handlers``
wrappers), the handlers, the roles' defaults and ``vars_files``
(:mod:`ioc.ansible.varsfiles`); each task through
:class:`ioc.ansible.convert.Converter`.

:func:`plan_for` plans it with ioc's planner; what the converter refused
becomes ``Where.ANSIBLE`` steps (:func:`foreign_steps`). A play whose layout
or keywords need Ansible's linear strategy as a whole raises
:class:`~ioc.ansible.convert.Fallback`.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from ioc.ansible.convert import (FACTS_CHOOSERS, Converted, Converter, Fallback, become_keywords,
                                 short_action)
from ioc.ansible.values import plain, plain_vars
from ioc.ansible.varsfiles import per_host_vars_files, static_vars_files, templated_vars_file
from ioc.model import Location, Play


def _is_flush(block: Any) -> bool:
    tasks = list(block.block or ())
    return (len(tasks) == 1 and bool(getattr(tasks[0], "implicit", False))
            and short_action(tasks[0]) == "meta"
            and (tasks[0].args or {}).get("_raw_params") == "flush_handlers"
            and not block.rescue and not block.always)


def play_to_ir(iterator: Any, loader: Any, caps_actions: frozenset) -> Converted:
    """Ansible's play, as its linear iterator would walk it, in ioc's IR.

    A vault value no secret given decrypts, in a layer the whole play reads
    (its vars, its public roles' vars and defaults), makes the play
    linear's: Ansible decrypts a value only where a task uses it (an unused
    one is no error; a used one fails that task), and ioc ships these layers
    as plain values. (In a task's own vars the converter hands that task to
    Ansible instead.)
    """
    from ansible.parsing.vault import AnsibleVaultError

    try:
        return _play_to_ir(iterator, loader, caps_actions)
    except AnsibleVaultError as exc:
        raise Fallback("the play's variables hold a vault value no secret given decrypts (%s)"
                       % str(getattr(exc, "message", exc)).rstrip(".")) from None


def _play_to_ir(iterator: Any, loader: Any, caps_actions: frozenset) -> Converted:
    from ansible import constants as C

    play = iterator._play
    if any(templated_vars_file(entry) for entry in play.get_vars_files()):
        vars_files, host_vars_files = per_host_vars_files(iterator, loader)
    else:
        vars_files, host_vars_files = static_vars_files(play, loader), {}
    if C.DEFAULT_HASH_BEHAVIOUR != "replace":
        # (dict variables of different precedence layers merge recursively;
        # ioc's layers replace: the whole play is linear's, never a difference)
        raise Fallback("hash_behaviour = %s runs through Ansible's linear strategy"
                       % C.DEFAULT_HASH_BEHAVIOUR)
    gathering = C.DEFAULT_GATHERING
    if gathering not in ("implicit", "explicit", "smart"):
        raise Fallback("gathering = %s runs through Ansible's linear strategy" % gathering)
    blocks = list(iterator._blocks)
    converter = Converter(play, caps_actions, loader, iterator._variable_manager)
    vm = iterator._variable_manager
    # FACTS_MODULES is also the variable ansible_facts_modules: gathering
    # with modules set there is Ansible's (its inventory layer: PlayRun.prepare)
    converter.facts_modules_set = any(
        name in layer for name in FACTS_CHOOSERS for layer in
        [play.vars or {}, vm.extra_vars or {}, vars_files] + list(host_vars_files.values()))
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
    if gather and gather_task is not None and (gather_task.args or gather_task.when
                                               or getattr(gather_task, "module_defaults", None)
                                               or converter.fact_module() is None):
        # gather_subset/gather_timeout/fact_path, module_defaults (of
        # gather_facts or setup), a playbook's conditional:
        # the gathering is a task of its own (Ansible's setup takes them in
        # the runner; FACTS_MODULES other than smart runs through Ansible,
        # for that task only).
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
    defaults, exported = role_layers(play)
    # (VariableManager._get_magic_variables: the roles of play.roles by name)
    role_names = tuple(plain(r.get_name()) for r in play.roles)
    dependent_role_names = tuple(sorted({plain(d.get_name()) for r in play.roles
                                         for d in r.get_all_dependencies()}))
    path, line = _play_location(play)
    ir = Play(
        name=plain(play.get_name()),
        hosts=",".join(plain(play.hosts)) if isinstance(play.hosts, list) else plain(play.hosts),
        location=Location(path, line),
        vars=plain_vars(play.vars or {}),
        vars_files=vars_files,
        role_defaults=defaults,
        role_vars=exported,
        role_names=role_names,
        dependent_role_names=dependent_role_names,
        force_handlers=bool(play.force_handlers),
        gather_facts=gather,
        pre_tasks=pre, tasks=main, post_tasks=post,
        handlers=handlers,
        any_errors_fatal=plain(play.any_errors_fatal) or None,
        max_fail_percentage=plain(play.max_fail_percentage),
        # Fact gathering runs under the play's become, as Ansible's own gather task.
        become=become_keywords(gather_task) if gather_task is not None else {},
        environment=_gather_environment(gather_task) if gather else None,
        basedir=plain(loader.get_basedir()),
        gather_module=converter.fact_module() if gather else None,
    )
    return Converted(play=ir, origin=converter.origin, gather=gather_task,
                     handlers=tuple(handler_tasks), reasons=converter.reasons,
                     action_only=converter.action_only,
                     converter=converter,
                     host_vars_files=host_vars_files, gather_ir=gather_ir,
                     skip_gather=tuple(skip_gather) if gather or gather_ir else ())


def role_layers(play: Any) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """The defaults and exported vars of the play's public roles
    (``Play.role_defaults`` and ``Play.role_vars``), as plain values.

    ``VariableManager.get_vars`` reads both from ``play.roles`` only for a role
    that is ``public``: ``roles:`` and ``import_role`` unless ``public: false``
    or ``DEFAULT_PRIVATE_ROLE_VARS`` is set true (``Role.__init__``); a private
    role's defaults are its own tasks' (the converter puts them on its block).
    ``play.roles`` gains an ``include_role``'s role when it runs
    (:mod:`ioc.ansible.includes` then calls :func:`public_role_layers` on it)."""
    return public_role_layers(play.get_roles())


def public_role_layers(roles: Any) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """The defaults and exported vars of those of ``roles`` that are public, merged in order."""
    defaults: Dict[str, Any] = {}
    exported: Dict[str, Any] = {}
    for role in roles:
        if role.public:
            defaults.update(plain_vars(role.get_default_vars()))
            exported.update(plain_vars(role.get_vars(include_params=False, only_exports=True)))
    return defaults, exported


def connection_layers(strategy: Any, iterator: Any, play_context: Any,
                      hosts: List[Any]) -> Dict[str, Dict[str, Any]]:
    """Per host of ``hosts``, the variables its connection is made from, as
    ``PlaybookRun._spec`` layers them in the dispatcher (role defaults, the
    inventory layer :class:`~ioc.ansible.hostvars.HostVarsExport` sends, the
    play's vars and static ``vars_files``, role vars, extra vars): what the
    dispatcher warms the connections up with while the play is planned. A
    per-host ``vars_files`` entry is not in it (the play's settings win)."""
    from types import SimpleNamespace

    from ansible import constants as C
    from ioc.ansible.hostvars import HostVarsExport

    play, vm = iterator._play, strategy._variable_manager
    export = HostVarsExport(SimpleNamespace(  # type: ignore[arg-type]
        vm=vm, play=play, strategy=strategy, play_context=play_context))
    defaults, exported = role_layers(play)
    if any(templated_vars_file(entry) for entry in play.get_vars_files()):
        vars_files: Dict[str, Any] = {}
    else:
        vars_files = static_vars_files(play, strategy._loader)
    level = {**plain_vars(play.vars or {}), **vars_files, **exported,
             **plain(vm.extra_vars)}
    return {plain(host.name): {**defaults, **export.host_vars(host, C), **level}
            for host in hosts}


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


def _play_location(play: Any) -> Tuple[str, int]:
    origin = getattr(play, "_origin", None)
    path = str(getattr(origin, "path", "") or "")
    line = int(getattr(origin, "line_num", 0) or 0)
    return plain(path) or "<playbook>", line


def plan_for(iterator: Any, loader: Any) -> Tuple[Converted, Any, str]:
    """Ansible's play (its iterator) planned by ioc: (IR, PlannedPlay, explain text).

    Raises :class:`Fallback` when the whole play must run through linear.
    """
    from ioc.controller.capabilities import runner_capabilities
    from ioc.controller.closure import template_files
    from ioc.controller.playbook import PlannedPlay
    from ioc.errors import IocError
    from ioc.ansible import plugins as ansible_plugins
    from ioc.planner import explain, plan_play

    ansible_plugins.install()  # filters, tests, lookups ioc lacks: Ansible's, in the batch
    caps = runner_capabilities()
    converted = play_to_ir(iterator, loader, frozenset(caps.actions))
    try:
        plan = plan_play(converted.play, caps, fallback=converted.fallback,
                         suspendable=converted.suspendable,
                         template_files=template_files(converted.play.basedir))
    except IocError as exc:
        raise Fallback(str(exc)) from None
    return converted, PlannedPlay(converted.play, plan), explain(plan)


def foreign_steps(plan: Any) -> List[Any]:
    """The plan's steps that run through Ansible."""
    from ioc.planner import ControllerStep, Where

    return [s for s in plan.steps if isinstance(s, ControllerStep) and s.where == Where.ANSIBLE]


def _gather_environment(gather_task: Any) -> Optional[Dict[str, Any]]:
    """The environment Ansible's implicit gather task inherits from the play, merged."""
    environment: Dict[str, Any] = {}
    for env in getattr(gather_task, "environment", None) or ():
        if not isinstance(env, Mapping):
            raise Fallback("a templated play environment (fact gathering runs with it) "
                           "runs through Ansible's linear strategy")
        environment.update(plain(env))
    return environment or None
