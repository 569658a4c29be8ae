"""Steps that leave the batch: the dispatcher's side of running a task through Ansible.

A task ioc does not run natively (``Where.ANSIBLE`` steps: the converter's
``reasons``) and a handler flush that can reach such handlers
(``ControllerStep.handlers``) run through Ansible's own task machinery in
the parent, between native batches. This module is what the dispatcher does
around that, without importing ``ansible``:

1. **Who reaches the task.** Each host's saved runner state (its block
   phases, the flush's queue) decides whether it reaches the task and
   whether a failure there would be rescued. A runner walk that never runs
   the task (:class:`TaskWalk`, :class:`HandlerWalk`) answers that exactly
   as the runner would.
2. **Ansible runs it**: the dispatcher asks the parent through its
   :class:`~ioc.ansible.pipe.ParentLink`; the parent side is
   :mod:`ioc.ansible.ansible_tasks`.
3. **The outcome is applied as if the runner had run the task**: the same
   walk, given Ansible's outcome, enters a rescue or always, fails the host,
   queues notifications; its end event becomes the host's state.

:func:`run_through_ansible` does that for one task, :class:`FlushThroughAnsible`
for a flush (runner calls for the native handlers in between).
"""
from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Tuple

from ioc.agentless_runner.batch import BatchEnd, Failure, HostRun, failed_task_wire
from ioc.ansible.pipe import ParentLink
from ioc.controller.play import PlayExecutor
from ioc.controller.state import HostStatus, StepOutcome
from ioc.errors import ConnectionSetupError
from ioc.model import WIRE_VERSION, Task, to_wire
from ioc.planner import ControllerStep, Program, wire_tree
from ioc.transport.spec import ConnectionSpec, resolve_via

LOG = logging.getLogger(__name__)


class TaskWalk(HostRun):
    """A runner walk of a ``Where.ANSIBLE`` step, in the dispatcher, that never runs the task.

    The runner's own walk decides whether a host reaches task ``index`` (its
    saved block phases: a host in a rescue skips the rest of the body...), so
    the walk with ``given`` None only records that (and whether a failure
    there would be rescued) and stops. With ``given`` (Ansible's outcome for
    the host) it applies the outcome as if the runner had run the task: a
    failure enters the enclosing rescue or always, or fails the host;
    notifications are queued; the end event carries the resulting state.
    """

    def __init__(self, wire: Dict[str, Any], index: int,
                 given: Optional[Dict[str, Any]]) -> None:
        self.events: List[Dict[str, Any]] = []
        self.target = index
        self.given = given
        super().__init__(wire, self.events.append)
        #: None: the host does not reach the task; else whether a rescue takes a failure.
        self.reached: Optional[bool] = None

    def run_task(self, key: Any, task: Any, scope: Any, is_handler: bool = False,
                 report: Any = None) -> Any:
        if key[0] != self.target or is_handler:
            raise BatchEnd()
        self.reached = bool(scope.rescuable)
        given = self.given
        if given is None:
            raise BatchEnd()
        for name in given.get("notify") or ():
            if name not in self.notified:
                self.notified.append(name)
        if given["status"] not in ("skipped", "unreachable"):
            self.role_ran(scope)
        if given["ignored"]:
            return None
        if given["status"] == "unreachable":
            raise BatchEnd()
        if given["status"] == "failed":
            return Failure(failed_task_wire(task), given["result"])
        return None

    def run_meta(self, node: Any, scope: Any, key: Any = None) -> Any:
        # a play-wide meta Ansible runs (refresh_inventory); a meta handler (key)
        # is a handler as any other here
        return self.run_task(key or [node["i"], 0], node["t"], scope, is_handler=key is not None)


def ansible_walk(wire: Dict[str, Any], index: int, given: Optional[Dict[str, Any]]) -> TaskWalk:
    """:class:`TaskWalk` of ``wire``, walked."""
    walk = TaskWalk(wire, index, given)
    walk.run()
    return walk


def run_through_ansible(executor: PlayExecutor, step: ControllerStep, active: List[str],
                        link: ParentLink, announce: bool = True,
                        ends: Optional[Dict[str, Dict[str, Any]]] = None,
                        ) -> Tuple[StepOutcome, List[str], List[str]]:
    """One ``Where.ANSIBLE`` step: find who reaches it, have Ansible run it, apply the outcome.

    Returns the outcome, the hosts that reached the task and those Ansible
    ran it for (fewer when it ran once: run_once, or an action that
    bypasses the host loop). ``announce`` False: the task's banner is out
    (a suspension point other hosts skipped). ``ends`` receives each host's
    resulting end event (the walk's, with the outcome applied).
    """
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
        walk = ansible_walk(wire(host), index, None)
        if walk.reached is not None:
            reached.append((host, walk.reached))
    if step.once:
        reached = reached[:1]
    outcome = StepOutcome()
    ran: List[str] = []  # the hosts Ansible ran the task for
    names = [host for host, _ in reached]
    if not reached:
        return outcome, names, ran
    LOG.info("AnsibleStep %d on %d host(s): %s", index, len(reached), step.reason)
    prepare_runners(executor, executor.plan.program.entry(index).task, names, link)
    reply = link.run_task(index, reached, bool(step.once), announce)
    if reply.get("inventory") is not None:  # refresh_inventory: Ansible's new inventory
        executor.replace_inventory(reply["inventory"], reply.get("hosts_all"))
    _take_vars(executor, reply)
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
        walk = ansible_walk(wire(host), index, given)
        state.absorb(walk.events[-1])
        if ends is not None:
            ends[host] = walk.events[-1]
        if given["status"] == "failed" and not given["ignored"]:
            outcome.failed.append(host)
    return outcome, names, ran


def prepare_runners(executor: PlayExecutor, task: Task, names: List[str],
                    link: ParentLink) -> None:
    """Let the task Ansible is about to run reach its hosts (and delegates) through their runners.

    The dispatcher's runner service learns the ssh connection of every host
    the task may connect to: the hosts that reach it, its ``delegate_to``
    (every inventory host when that is templated); the parent learns their
    names, and selects the ``ioc_runner`` connection for them where Ansible
    would use ssh (:mod:`ioc.ansible.routing`). Done here, in the
    dispatcher's main thread, because finding a host outside the play
    may ask the parent, whose pipe is busy once the task runs.
    """
    service = getattr(executor, "runner_service", None)
    if service is None:
        return
    candidates = list(names)
    delegate = task.delegate_to
    if isinstance(delegate, str) and delegate:
        if "{{" in delegate or "{%" in delegate:
            if executor.ctx.outside_hostvars is not None:  # every host's variables, at once
                executor.ctx.outside_hostvars(frozenset(executor.hosts))
            candidates += [h for h in executor.ctx.groups().get("all") or list(executor.hosts)
                           if h not in candidates]
        elif delegate not in candidates:
            candidates.append(delegate)
    specs: Dict[str, ConnectionSpec] = {}
    for name in candidates:
        try:
            spec = executor.hosts[name].spec if name in executor.hosts \
                else executor.ctx.connection_of(name)
            if spec.via:
                spec = resolve_via(name, spec, executor.ctx.connection_of)
        except ConnectionSetupError:
            continue  # a connection ioc does not make: Ansible's own plugin
        if spec.transport == "ssh":
            specs[name] = spec
    service.prepare(specs)
    link.runners(sorted(specs))


def _take_vars(executor: PlayExecutor, reply: Dict[str, Any]) -> None:
    """The variables Ansible's run changed (every play host's), into the hosts' states."""
    for host, layers in (reply.get("vars") or {}).items():
        state = executor.hosts.get(host)
        if state is None:
            continue
        state.facts = {**state.facts, **layers.get("facts", {})}
        state.runtime = {**state.runtime, **layers.get("runtime", {})}
        state.included = {**state.included, **layers.get("include_vars", {})}


class HandlerWalk(HostRun):
    """A runner walk that resumes a flush at handler ``number`` and never runs it.

    As :class:`TaskWalk` for a handler that runs through Ansible: the
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

    def __init__(self, wire: Dict[str, Any], number: int, given: Optional[Dict[str, Any]],
                 task: Optional[Dict[str, Any]] = None) -> None:
        self.events: List[Dict[str, Any]] = []
        self.target = number
        self.given = given
        self.handler_task = task
        super().__init__(wire, self.events.append)
        self.reached: Optional[bool] = None

    def stops_before(self, other: int, bound: Any) -> bool:
        return other != self.target

    def run_handler(self, index: Any, other: int, handler: Any, scope: Any, queued: Any) -> Any:
        self.reached = bool(scope.rescuable)
        given = self.given
        if given is None:
            raise BatchEnd()
        for notified in given.get("notified") or ():
            if notified in queued or notified in self.notified:
                continue
            if notified > self.target:
                queued.add(notified)
            else:
                self.notified.append(notified)
        if given["status"] not in ("skipped", "unreachable"):
            self.role_ran(scope)
        if given["ignored"]:
            return None
        if given["status"] == "unreachable":
            raise BatchEnd()
        if given["status"] == "failed":
            return Failure(failed_task_wire(self.handler_task or handler), given["result"])
        return None


def handler_walk(wire: Dict[str, Any], number: int, given: Optional[Dict[str, Any]],
                 task: Optional[Dict[str, Any]] = None) -> HandlerWalk:
    """:class:`HandlerWalk` of ``wire``, walked."""
    walk = HandlerWalk(wire, number, given, task)
    walk.run()
    return walk


class FlushThroughAnsible:
    """A flush that can reach handlers ioc does not run natively (``step.handlers``).

    The handlers run in definition order, each on the hosts notified of it,
    as linear runs them (L5.4): the runner runs the flush natively (its
    notifications, the explicit flush's events, the native handlers) up to
    the first foreign handler; Ansible runs that one for the hosts queued for
    it, in play-host order (``ioc.ansible.ansible_tasks.AnsibleTasks.run_handler``);
    the runner goes on up to the next one, and so on. One runner call per run
    of consecutive native handlers, for the hosts that still have handlers to
    run; none at all when nothing is notified.
    """

    def __init__(self, executor: PlayExecutor, step: ControllerStep, active: List[str],
                 link: ParentLink) -> None:
        self.executor = executor
        self.step = step
        self.active = active
        self.link = link
        self.program: Program = executor.plan.program
        self.hosts = executor.hosts
        self.outcome = StepOutcome()
        self.ends: Dict[str, Any] = {}
        self.fatal = _truthy(self.program.play.any_errors_fatal)
        self.tree = wire_tree(self.program.tree, step.start, step.end)

    def run(self) -> StepOutcome:
        executor, hosts, step, active = self.executor, self.hosts, self.step, self.active
        entry = self.program.entry(step.index)
        if entry.implicit and not any(hosts[h].notified or hosts[h].blocks for h in active):
            return self.outcome  # an implicit flush with nothing to run: no call at all (L5.3)
        foreign = sorted(step.handlers)
        self.native(active, 0)
        for position, number in enumerate(foreign):
            self.through_ansible(number)
            later = foreign[position + 1] if position + 1 < len(foreign) else None
            names = self.carrying(later)
            if names:
                self.native(names, number + 1)
        stuck = [h for h in executor.order if hosts[h].active and hosts[h].flushing is not None]
        if stuck:
            raise RuntimeError("flush %d: hosts %s did not finish it" % (step.index, stuck))
        self.outcome.ends = self.ends
        return self.outcome

    def native(self, names: List[str], start: int) -> None:
        """One runner call per host in ``names``: the flush from handler ``start`` on."""
        executor, hosts, step = self.executor, self.hosts, self.step
        calls = [executor._call(h, step, self.active) for h in names]
        if start:
            once = executor.once_handlers(step, self.active, [
                (h, hosts[h].flushing or []) for h in executor.order if hosts[h].active], start)
            for call in calls:
                call.wire["options"].update(flush_resume=True, flush_from=start,
                                            once_handlers=once)
        LOG.info("Flush %d: native handlers from %d on %d host(s)", step.index, start, len(names))
        part = executor.run_calls(calls, StepOutcome())
        self.settle(part.failed)
        self.ends.update(part.ends)
        self.outcome.trouble.update(part.trouble)

    def settle(self, failed: List[str]) -> None:
        outcome = self.outcome
        outcome.failed.extend(h for h in failed if h not in outcome.failed)
        if failed and self.fatal:
            self.executor.stop_others(self.active, failed)

    def wire(self, host: str, number: int) -> Dict[str, Any]:
        """What a :class:`HandlerWalk` of ``host`` at handler ``number`` needs."""
        step = self.step
        return {"v": WIRE_VERSION, "host": host, "start": step.start, "end": step.end,
                "tree": self.tree, "handlers": self.executor._handlers_wire(), "vars": {},
                "options": {"flush_resume": True, "flush_from": number},
                "state": self.hosts[host].wire_state()}

    def through_ansible(self, number: int) -> None:
        """Handler ``number`` through Ansible for the hosts queued for it; apply the outcome."""
        executor, hosts, step = self.executor, self.hosts, self.step
        handler = self.program.handlers[number]
        queued = [h for h in executor.order
                  if hosts[h].active and number in (hosts[h].flushing or ())]
        reached: List[Tuple[str, bool]] = []
        for host in queued:
            walk = handler_walk(self.wire(host, number), number, None)
            reached.append((host, bool(walk.reached)))
        once = _truthy(handler.run_once) and not _templated(handler.run_once)
        if once:
            reached = reached[:1]
        if not reached:
            return
        LOG.info("AnsibleHandler %d at flush %d on %d host(s)", number, step.index, len(reached))
        prepare_runners(executor, handler, [host for host, _ in reached], self.link)
        notified = {host: sorted(set(hosts[host].flushing or ()) - {number}
                                 | {n for n in hosts[host].notified if isinstance(n, int)})
                    for host, _ in reached}
        reply = self.link.run_handler(step.index, number, reached, once, notified)
        _take_vars(executor, reply)
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
                self.outcome.trouble[host] = "unreachable"
                failed.append(host)
                continue
            walk = handler_walk(self.wire(host, number), number, given, to_wire(handler))
            state.absorb(walk.events[-1])
            if given["status"] == "failed" and not given["ignored"]:
                failed.append(host)
        if failed and ran and (once or len(ran) < len(queued)) and ran[0] in failed:
            # A failed run_once handler fails every host (linear marks them all failed).
            for host in executor.order:
                if host != ran[0] and hosts[host].active:
                    hosts[host].status = HostStatus.STOPPED
        self.settle(failed)
        if failed and _truthy(handler.any_errors_fatal) and not self.fatal:
            executor.stop_others(self.active, failed)

    def carrying(self, bound: Optional[int]) -> List[str]:
        """Hosts in the flush with a handler (or nothing) to run before ``bound``."""
        out = []
        for host in self.executor.order:
            queue = self.hosts[host].flushing
            if self.hosts[host].active and queue is not None and (
                    bound is None or not queue or queue[0] < bound):
                out.append(host)
        return out


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in ("", "false", "no", "0", "off", "n")
    return bool(value)


def _templated(value: Any) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)
