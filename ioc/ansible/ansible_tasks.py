"""Tasks and handlers that leave the batch: the parent runs them with Ansible's machinery.

The dispatcher's side (who reaches the task, applying the outcome) is
:mod:`ioc.ansible.through_ansible`; this is the parent's answer to its
``("ansible", ...)`` and ``("ansible_handler", ...)`` questions.

:meth:`AnsibleTasks.run_task` queues the task for the hosts that reach it
exactly as linear's loop does (``_queue_task``, ``_process_pending_results``,
``_wait_on_pending_results``; the name templated and the task start sent
with the first host; ``run_once`` and actions that bypass the host loop run
once), so its callbacks, stats, registered values, facts and notifications
are Ansible's own. What ioc decides itself is put back afterwards
(:meth:`AnsibleTasks._restore`): the iterator's host states and the TQM's
failed/unreachable hosts (ioc's summary sets them at the play's end), and a
failure an ioc block rescues counts ``rescued`` and gives the rescue
linear's ``ansible_failed_*``. The reply carries each host's outcome
(:func:`ioc.ansible.results.outcome`) and every play host's variables the
task changed.

:meth:`AnsibleTasks.run_handler` does the same for one handler of a flush,
with Ansible's view of who is notified of what set from ioc's; a play-wide
``meta`` (refresh_inventory) runs through the strategy's ``_execute_meta``
and the reply carries the new inventory.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, FrozenSet, List, Tuple

from ioc.ansible.hostvars import HostVarsExport, delta
from ioc.ansible.results import outcome
from ioc.ansible.routing import RoutingVariables, route, say
from ioc.ansible.state import PlayState
from ioc.ansible.values import plain


class AnsibleTasks:
    """Runs what the dispatcher hands back to Ansible, as linear runs it."""

    def __init__(self, state: PlayState, hostvars: HostVarsExport) -> None:
        self.state = state
        self.hostvars = hostvars
        self.tqm = state.tqm
        #: The hosts whose runner serves the next task's connection, and the
        #: dispatcher's socket (``("runners", ...)``; :mod:`ioc.ansible.routing`).
        self.runners: Tuple[FrozenSet[str], str] = (frozenset(), "")

    def run_task(self, index: int, reached: List[Tuple[str, bool]],
                 once: bool, announce: bool = True) -> Dict[str, Any]:
        """Run task ``index`` through Ansible's own machinery, as linear does, for ``reached``.

        ``reached``: (host, whether an ioc rescue takes a failure), in play
        order. Callbacks, stats, registered values, facts and notifications
        are Ansible's own (``_queue_task`` and ``_process_pending_results``).
        What ioc decides itself is put back: the iterator's and the TQM's
        view of failed and unreachable hosts (ioc's summary sets them at the
        play's end, as for native tasks), and a failure ioc's block rescues
        is counted ``rescued``. The reply gives each host's outcome and every
        play host's variables the task changed.
        """
        state = self.state
        entry = state.program.entry(index)
        state.ir_task = entry.task
        state.task = task = state.converted.origin[id(entry.task)]
        rescuable = dict(reached)
        hosts = [state.hosts[name] for name, _ in reached]
        if entry.task.action == "meta":
            return self._meta(task, hosts)
        snapshot = self._snapshot()
        results = self._queue(task, hosts, once, lambda: self.tqm.send_callback(
            "v2_playbook_on_task_start", task, is_conditional=False) if announce else None,
                              name=announce)
        outcomes: Dict[str, Dict[str, Any]] = {}
        rescued: Dict[str, Any] = {}
        for task_result in results:
            host, result, raw, failed_task = outcome(task_result)
            host_state = state.iterator.get_state_for_host(host)
            saved = snapshot["saved"]
            earlier = saved[host].handler_notifications if host in saved else []
            result["notify"] = [plain(n) for n in host_state.handler_notifications
                                if n not in earlier]
            outcomes[host] = result
            if result["status"] == "failed" and not result["ignored"] and rescuable.get(host):
                rescued[host] = (failed_task, raw)
        return self._restore(outcomes, rescued, snapshot)

    def run_handler(self, index: int, number: int, reached: List[Tuple[str, bool]],
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
        The reply is :meth:`run_task`'s, each outcome with the handler
        numbers it notified (``notified``).
        """
        from ansible.executor.play_iterator import IteratingStates

        state = self.state
        state.ir_task = state.program.handlers[number]
        state.task = task = state.handler_objects[number]
        rescuable = dict(reached)
        hosts = [state.hosts[name] for name, _ in reached]
        snapshot = self._snapshot()
        handlers = state.handler_objects
        known = {id(h): list(h.notified_hosts) for h in handlers}
        # Ansible's view of who is notified of what, from ioc's notifications.
        for other_number, other in enumerate(handlers):
            other.notified_hosts = [state.hosts[name] for name in notified
                                    if other_number in notified[name]]
        for name in notified:
            host_state = state.iterator.get_state_for_host(name)
            host_state.pre_flushing_run_state = host_state.run_state
            host_state.run_state = IteratingStates.HANDLERS
        try:
            results = self._queue(task, hosts, once, lambda: self.tqm.send_callback(
                "v2_playbook_on_handler_task_start", task))
            final = {plain(r.host.name): r for r in results}
            if _is_include(task):
                try:
                    final.update(self._included_handlers(results))
                finally:
                    state.task = task
            now = {id(h): {getattr(x, "name", x) for x in h.notified_hosts} for h in handlers}
        finally:
            for other in handlers:
                other.notified_hosts = known.get(id(other), [])
        outcomes: Dict[str, Dict[str, Any]] = {}
        rescued: Dict[str, Any] = {}
        for task_result in final.values():
            host, result, raw, failed_task = outcome(task_result)
            result["notified"] = [
                n for n, other in enumerate(handlers)
                if host in now[id(other)] and n not in (notified.get(host) or ())]
            outcomes[host] = result
            if result["status"] == "failed" and not result["ignored"] and rescuable.get(host):
                rescued[host] = (failed_task, raw)
        return self._restore(outcomes, rescued, snapshot)

    def _included_handlers(self, results: List[Any]) -> Dict[str, Any]:
        """The handlers an ``include_tasks`` handler included, run as linear runs them.

        Linear loads each included file as handlers (``is_handler``), counts
        an ok and announces it (``v2_playbook_on_include``) for its hosts, or
        fails them where it cannot be loaded, and its iterator then runs each
        included handler (``RUNNING HANDLER``) for the hosts that included it
        and have not failed since. The answer: per host, the result that
        decides its outcome (the first failure that was not ignored), None
        for the hosts whose include ran and whose handlers all passed.
        """
        import functools
        import inspect

        from ansible.errors import AnsibleError, AnsibleParserError
        from ansible.playbook.included_file import IncludedFile

        from ioc.ansible.includes import include_failed

        state, tqm = self.state, self.tqm
        strategy, iterator = state.strategy, state.iterator
        decided: Dict[str, Any] = {}
        included_files = IncludedFile.process_include_results(
            results, iterator=iterator, loader=strategy._loader, variable_manager=state.vm)
        for included_file in included_files:
            kwargs: Dict[str, Any] = {"iterator": iterator, "is_handler": True}
            if "handle_stats_and_callbacks" in inspect.signature(
                    strategy._load_included_file).parameters:
                kwargs["handle_stats_and_callbacks"] = False  # 2.19: this strategy reports
            try:
                new_blocks = strategy._load_included_file(included_file, **kwargs)
            except AnsibleParserError:
                raise
            except AnsibleError as ex:
                include_failed(strategy, included_file, ex)
                for result in included_file._results:
                    decided[plain(result.host.name)] = result
                continue
            for host in included_file._hosts:
                tqm._stats.increment("ok", host.name)
            tqm.send_callback("v2_playbook_on_include", included_file)
            for block in new_blocks:
                for handler in block.block:
                    hosts = [h for h in included_file._hosts
                             if not _failed(decided.get(plain(h.name)))]
                    if not hosts:
                        break
                    state.task = handler  # (the variables and name _queue templates)
                    announce = functools.partial(
                        tqm.send_callback, "v2_playbook_on_handler_task_start", handler)
                    for result in self._queue(handler, hosts, False, announce):
                        if _failed(result):
                            decided[plain(result.host.name)] = result
        return decided

    def _meta(self, task: Any, hosts: List[Any]) -> Dict[str, Any]:
        """A play-wide meta action (refresh_inventory) as linear runs it: once,
        for the first host, by the strategy's ``_execute_meta`` (which sends the
        task start and resets the hosts caches; no result callback, no stats).

        The reply carries the inventory as Ansible now has it, for the
        dispatcher to take over: later native tasks see its groups, host
        variables and connections.
        """
        state = self.state
        s = state.strategy
        results = s._execute_meta(task, state.play_context, state.iterator, hosts[0])
        inventory = s._inventory
        # Ansible made new Host objects: the play's hosts are its new ones.
        state.hosts = {name: inventory.get_host(name) or host
                       for name, host in state.hosts.items()}
        outcomes = {}
        for task_result in results:
            host, result, _, _ = outcome(task_result)
            result["notify"] = []
            outcomes[host] = result
        return {"hosts": outcomes, "vars": {}, "inventory": self.hostvars.inventory(),
                "hosts_all": [plain(n) for n in s._hosts_cache_all or ()]}

    def _snapshot(self) -> Dict[str, Any]:
        """What ``_restore`` puts back after Ansible ran a task: every play host's
        variable layers and iterator state (a failed run_once task marks them
        all failed), ``_removed_hosts``, the TQM's failed/unreachable hosts."""
        state, tqm = self.state, self.tqm
        return {"before": {name: self.hostvars.layers(name) for name in state.hosts},
                "saved": {name: state.iterator.get_state_for_host(name).copy()
                          for name in state.hosts},
                "removed": list(state.play._removed_hosts),
                "failed_hosts": dict(tqm._failed_hosts),
                "unreachable_hosts": dict(tqm._unreachable_hosts)}

    def _queue(self, task: Any, hosts: List[Any], once: bool,
               start: Callable[[], None], name: bool = True) -> List[Any]:
        """Queue ``task`` for ``hosts`` and collect the results, as linear's loop does
        (``start`` sends the task's start callback once its name is templated;
        ``name`` False: the name is templated already, with the step's first host).

        Where Ansible would connect with ssh, the task gets the host's (or
        delegate's) runner instead (:mod:`ioc.ansible.routing`): the task
        variables select the ``ioc_runner`` connection, and the worker's
        variable manager does the same for a delegate."""
        state = self.state
        strategy, iterator = state.strategy, state.iterator
        runners, socket = self.runners
        results: List[Any] = []
        for number, host in enumerate(hosts):
            task_vars, templar = state.task_vars(host)
            run_once = bypasses(task) or bool(templar.template(task.run_once))
            if number == 0:
                if name:
                    state.template_name(host.name)
                start()
            if not task.delegate_to:  # else the delegate's variables choose (RoutingVariables)
                say(task, host.name, route(task_vars, host.name, task, templar.template,
                                           runners, socket))
            strategy._blocked_hosts[host.name] = True
            manager = strategy._variable_manager
            strategy._variable_manager = RoutingVariables(manager, runners, socket)
            try:
                strategy._queue_task(host, task, task_vars, state.play_context)
            finally:
                strategy._variable_manager = manager
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
        self.runners = (frozenset(), "")
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
        state, tqm = self.state, self.tqm
        changed = {}
        for name in state.hosts:
            change = delta(snapshot["before"][name], self.hostvars.layers(name))
            if change:
                changed[name] = change
        for host, (failed_task, raw) in rescued.items():
            tqm._stats.decrement("failures", host)
            tqm._stats.increment("rescued", host)
            state.vm.set_nonpersistent_facts(host, {"ansible_failed_task": failed_task,
                                                    "ansible_failed_result": raw})
        for name, saved in snapshot["saved"].items():
            state.iterator.set_state_for_host(name, saved)
        state.play._removed_hosts[:] = snapshot["removed"]
        tqm._failed_hosts.clear()
        tqm._failed_hosts.update(snapshot["failed_hosts"])
        tqm._unreachable_hosts.clear()
        tqm._unreachable_hosts.update(snapshot["unreachable_hosts"])
        return {"hosts": outcomes, "vars": changed}


def _is_include(task: Any) -> bool:
    from ioc.ansible.convert import short_action

    return short_action(task) == "include_tasks"


def _failed(result: Any) -> bool:
    """Whether an Ansible task result failed its host (a failure not ignored)."""
    if result is None:
        return False
    _, ours, _, _ = outcome(result)
    return ours["status"] in ("failed", "unreachable") and not ours["ignored"]


def bypasses(task: Any) -> bool:
    """Whether the task's action plugin bypasses the host loop (runs once, like run_once)."""
    from ansible.plugins.loader import action_loader

    try:
        action = action_loader.get(task.action, class_only=True, collection_list=task.collections)
    except Exception:
        return False
    return bool(action and getattr(action, "BYPASS_HOST_LOOP", False))
