"""Dynamic includes under ``mitogen_batch``: Ansible loads, ioc splices and runs.

An ``include_tasks``/``include_role`` runs in the runner like any task; what
it *loads* is Ansible's business. When a step's include has run, the
dispatcher asks (``("include", index, active)``) and :meth:`Includes.splice`
does what the linear strategy does with the include's results —
``IncludedFile.process_include_results`` groups them, each file is loaded
and tag-filtered, counted and announced (``v2_playbook_on_include``) — then
converts the loaded blocks to IR (:class:`ioc.ansible.convert.Converter`),
splices them into the play after the include (a block only that group's
hosts reach), plans the play again and answers with the plan. The
dispatcher goes on with it, so both processes number the tasks alike.

An include whose file was known at conversion time was inlined
(``Converter.static_include``) and ran in the same batch as its tasks: only
its announcement is left, :func:`announce_included`, after its results.
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Dict, List, Mapping, Tuple

from ioc.ansible.convert import Fallback, display_captured, tag_filtered
from ioc.ansible.play import public_role_layers
from ioc.ansible.state import PlayState
from ioc.ansible.values import plain
from ioc.model import Block, Task


@dataclasses.dataclass(frozen=True)
class _Included:
    """What an include adds to the play besides its tasks (see ``splice_after``)."""

    handlers: Tuple[Task, ...] = ()
    #: The defaults and exported vars of the included roles that are public
    #: (``include_role`` with ``public: true``, or ``DEFAULT_PRIVATE_ROLE_VARS``
    #: set false): ``VariableManager.get_vars`` reads them from ``play.roles``
    #: for every host from then on.
    role_defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    role_vars: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    #: The roles Ansible's ``play.roles`` gained (``IncludeRole.get_block_list``).
    role_names: Tuple[str, ...] = ()
    dependent_role_names: Tuple[str, ...] = ()


class Includes:
    """Loads and splices what dynamic includes included, as linear does (parent side)."""

    def __init__(self, state: PlayState) -> None:
        self.state = state

    def splice(self, index: int, active: List[str], results: List[Any]) -> Dict[str, Any]:
        """Load what the hosts of include task ``index`` included, as linear does it.

        ``results`` are the include's task results as sent to the callbacks.
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
        from ioc.controller import plugins
        from ioc.controller.capabilities import runner_capabilities
        from ioc.controller.closure import template_files
        from ioc.controller.playbook import PlannedPlay
        from ioc.planner import plan_play
        from ioc.planner.program import splice_after, too_deep

        state = self.state
        include = state.program.entry(index).task
        results = [r for r in results if plain(r.host.name) in active]
        s, iterator = state.strategy, state.iterator
        included_files = IncludedFile.process_include_results(
            results, iterator=iterator, loader=s._loader, variable_manager=state.vm)
        converter = state.converted.converter
        known_handlers = {id(h) for h in state.handler_objects}
        blocks: List[Block] = []
        failed: Dict[str, str] = {}
        deep = too_deep(state.program, index)
        if deep is not None:
            for included_file in included_files:
                failed.update(include_failed(s, included_file, AnsibleError(deep)))
            return {"planned": None, "failed": failed}
        roles_before = len(iterator._play.roles)
        for included_file in included_files:
            try:
                new_blocks = self._load(included_file)
            except AnsibleParserError:
                raise
            except AnsibleError as ex:
                for host, message in include_failed(s, included_file, ex).items():
                    failed[host] = message
                continue
            for host in included_file._hosts:
                state.tqm._stats.increment("ok", host.name)
            state.tqm.send_callback("v2_playbook_on_include", included_file)
            try:
                nodes = converter.section(new_blocks, included=included_file._is_role)
            except Fallback as why:
                raise AnsibleError("mitogen_batch: %s cannot run: %s"
                                   % (included_file._filename, why)) from None
            # (an include_tasks' vars are include parameters, above set_fact)
            params = {} if included_file._is_role else plain(dict(included_file._task.vars))
            blocks.append(Block(block=nodes, location=include.location, implicit=True,
                                params=params,
                                hosts=tuple(plain(h.name) for h in included_file._hosts)))
        if not blocks:
            return {"planned": None, "failed": failed}
        new_handlers = [h for b in state.play.handlers for h in b.block
                        if id(h) not in known_handlers]
        # (VariableManager._get_magic_variables names the roles of play.roles)
        roles = iterator._play.roles[roles_before:]
        defaults, exported = public_role_layers(roles)
        added = _Included(handlers=tuple(converter.task(h, handler=True, running=True)
                                         for h in new_handlers),
                          role_defaults=defaults, role_vars=exported,
                          role_names=tuple(plain(r.get_name()) for r in roles),
                          dependent_role_names=tuple(sorted({
                              plain(d.get_name()) for r in roles
                              for d in r.get_all_dependencies()})))
        play = splice_after(state.program.play, include, tuple(blocks), [added])
        plan = plan_play(play, runner_capabilities(), fallback=state.converted.fallback,
                         suspendable=state.converted.suspendable,
                         template_files=template_files(play.basedir))
        state.planned = PlannedPlay(play, plan)
        state.program = plan.program
        origin = state.converted.origin
        state.handler_objects = [origin[id(h)] for h in play.handlers]
        # (the filters and tests of Ansible's the included tasks name that the
        # runner proxies: the dispatcher's batches declare them too)
        from ioc.ansible import plugins as ansible_plugins

        return {"planned": state.planned, "failed": failed, "modules": converter.modules,
                "plugins": plugins.declared(),
                # an included role's filter_plugins/, ... (Ansible added them as
                # it loaded the role): the dispatcher templates with them too
                "plugin_paths": ansible_plugins.search_paths()}

    def _load(self, included_file: Any) -> List[Any]:
        """An included file's (or role's) blocks, tag-filtered, as linear loads them."""
        s, iterator, vm = self.state.strategy, self.state.iterator, self.state.vm
        if included_file._is_role:
            new_ir = s._copy_included_file(included_file)
            new_blocks, _ = new_ir.get_block_list(play=iterator._play,
                                                  variable_manager=vm, loader=s._loader)
        else:
            kwargs: Dict[str, Any] = {"iterator": iterator, "is_handler": False}
            if "handle_stats_and_callbacks" in inspect.signature(s._load_included_file).parameters:
                kwargs["handle_stats_and_callbacks"] = False  # 2.19: this strategy reports
            new_blocks = s._load_included_file(included_file, **kwargs)
        iterator.handlers = [h for b in iterator._play.handlers for h in b.block]
        return tag_filtered(new_blocks, iterator._play, vm, s._hosts_cache, s._hosts_cache_all)


def announce_included(state: PlayState, results: List[Any]) -> None:
    """After an inlined include's ``results``: ``included: <file> for <hosts>``.

    Its tasks were loaded with the play (``Converter.static_include``) and
    ran in the same batch; linear counts and announces what each host
    included once the include task is done, from the same results.
    """
    from ansible.playbook.included_file import IncludedFile

    for included_file in IncludedFile.process_include_results(
            results, iterator=state.iterator, loader=state.strategy._loader,
            variable_manager=state.vm):
        display_captured(state.converted.converter.load_warnings.get(id(state.task), ()))
        for host in included_file._hosts:
            state.tqm._stats.increment("ok", host.name)
        state.tqm.send_callback("v2_playbook_on_include", included_file)


def include_failed(strategy: Any, included_file: Any, ex: Exception) -> Dict[str, str]:
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
