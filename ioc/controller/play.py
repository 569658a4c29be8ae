"""Running a planned play: steps out to hosts, events back through the replay."""
from __future__ import annotations

import dataclasses
import json
import logging
import os
from typing import (Any, Callable, Collection, Dict, FrozenSet, List, Mapping, NamedTuple, Optional,
                    Sequence, Set, Tuple)

from ioc.agentless_runner import results as runner_results
from ioc.agentless_runner.batch import OMIT, HostRun
from ioc.agentless_runner.flow import Scope, handler_scope, handler_search, matching_handlers
from ioc.agentless_runner.templating import Templar, TemplateError
from ioc.callbacks import Status, TaskView
from ioc.controller import closure, fetched, lookups, payloads, plugins
from ioc.controller.dispatch import Dispatch, HostCall, context_key, dispatch, task_indices
from ioc.controller.sink import FINAL_EVENTS, PlaySink
from ioc.controller.state import HostState, HostStatus, PlayContext, StepOutcome
from ioc.errors import ConnectionSetupError, IncludeNotFound, PlanError
from ioc.model import WIRE_VERSION, Block, Play, Task, to_wire
from ioc.planner import Batch, ControllerStep, Plan, Where, wire_tree
from ioc.planner.dataflow import deferred_patterns
from ioc.planner.effects import notifiable
from ioc.planner.program import Entry, NumberedBlock, span, splice_after, too_deep
from ioc.planner.schedule import (BECOME_KEYWORDS, Step, handlers_fatal, identity_key,
                                  identity_task)
from ioc.replay import Event, Replay
from ioc.transport import bootstrap
from ioc.transport.spec import (BecomeSpec, ConnectionSpec, become_for, resolve_via,
                                same_user_rule)

LOG = logging.getLogger(__name__)


class PlayExecutor:
    """Runs the steps of one play's plan across its hosts (one serial batch).

    The one play executor of both front ends. What ``mitogen_batch`` does
    differently is four methods its dispatcher overrides
    (``ioc.ansible.dispatcher.BridgeExecutor``, tested apart in
    ``tests/unit/test_ansible_dispatcher.py``): :meth:`make_sink` (where the
    replayed events go), :meth:`run_step` (a step that runs through Ansible),
    :meth:`after_step` (what the controller decides after a step) and
    :meth:`splice_includes` (who loads what a dynamic include included).
    """

    def __init__(self, plan: Plan, hosts: Dict[str, HostState], ctx: PlayContext,
                 static_layers: Mapping[str, Any], magic: Mapping[str, Any],
                 removed: FrozenSet[str] = frozenset(), dormant: Sequence[str] = ()) -> None:
        self.plan = plan
        self.hosts = hosts
        self.order = list(hosts)
        for name in dormant:
            # Unreachable in an earlier play: linear's iterator holds it at the
            # play's first task, walks it on only once clear_host_errors
            # clears it (it then runs the play from its start, _catch_up).
            hosts[name].status = HostStatus.UNREACHABLE
        self.ctx = ctx
        self.static_layers = static_layers
        self.magic = magic
        self.ended = False
        self.max_fail_hit = False
        #: Hosts lost as unreachable in a step that any_errors_fatal (or a
        #: run_once task) made fatal: linear marks every host of the step
        #: failed but the failed ones, so these count as failed *and*
        #: unreachable, and the playbook goes on to its next play (L4.5).
        self.fatal_unreachable: Set[str] = set()
        #: lookups.needs_controller per task object (asked once per host otherwise).
        self._lookup_tasks: Dict[int, Tuple[Task, bool]] = {}
        #: Hosts whose include the current step could not load (``_fail_include``).
        self.include_failed: List[str] = []
        #: Names the current step reads (None: all), see ``planner/closure.py``.
        self.reads: Optional[FrozenSet[str]] = None
        #: Attributes it reads on other hosts' hostvars (None: all, empty: none).
        self.others: Optional[FrozenSet[str]] = None
        self._blocks = _block_shapes(plan.program.tree)
        #: Hosts of the play that earlier serial batches lost (failed, unreachable).
        self.removed = removed
        #: Every host's ``hostvars`` entry, by the attributes read (see
        #: ``_other_hostvars``): built once for all the calls made together.
        self._hostvars: Dict[Optional[FrozenSet[str]], Dict[str, Any]] = {}
        #: ``ansible_play_hosts`` and ``_batch`` as last made, and for what
        #: (step, status changes, the play's hosts, the active hosts): ``_play_hosts``.
        self._play_hosts_now: Tuple[Any, Tuple[List[str], List[str]]] = (None, ([], []))
        #: The runner's tree and handlers for a step, the same for every host.
        self._shape: Tuple[Any, Any, Dict[str, Any]] = (None, None, {})
        #: The run_once handlers' hosts of a flush step (``_once_handlers``),
        #: with the active hosts and notifications they were chosen from.
        self._once_memo: Tuple[Any, Any, Dict[str, List[str]]] = (None, None, {})
        #: :meth:`_delegate_waits` of the last step it was asked for.
        self._waits_memo: Tuple[Any, Any, Dict[str, List[int]]] = (None, None, {})
        #: A run_once handler's value once templated (by its number): kept
        #: for the play's later flushes, as linear keeps it on the handler.
        self._handler_once: Dict[int, bool] = {}
        #: The names notifications may give, of a plan (``_notifiable``), and
        #: what looking one up passes (``flow.handler_search``).
        self._notifiable_names: Tuple[Any, Optional[List[str]], List[List[Any]]] = \
            (None, None, [])
        #: The task each host became unreachable at (by entry index): where
        #: linear's iterator left it, since it walks no unreachable host on.
        self.unreachable_at: Dict[str, int] = {name: -1 for name in dormant}
        #: (host, task key) -> each item's changed of a looped add_host/group_by.
        self._looped_changes: Dict[Tuple[str, Tuple[int, ...]], List[bool]] = {}
        #: host -> register name -> (changed, items' changed) of an add_host/group_by.
        self._registered_changes: Dict[str, Dict[str, Tuple[bool, Optional[List[bool]]]]] = {}
        #: The roles static includes bring, of a plan (``_included_roles``).
        self._roles_memo: Tuple[Any, Dict[int, Tuple[str, ...]]] = (None, {})
        #: Hosts ``meta: clear_host_errors`` brought back while unreachable,
        #: with the entry each goes on from (:meth:`_catch_up`).
        self.revived: Dict[str, int] = {}
        #: The play's first step (it may answer with a warm-up's outcome).
        self._first_step: Optional[Step] = None

    # -- the loop ----------------------------------------------------------------

    def run(self) -> None:
        if self.ctx.progress is not None:
            self.ctx.progress.play(self.order)
        self._walk(0, {})
        self._settle_open_failures()
        while self.revived and not self.ended:
            self._catch_up()

    def _catch_up(self) -> None:
        """The hosts ``meta: clear_host_errors`` brought back from unreachable
        go on, once the others are through the play (L7.10).

        Linear's iterator never moved an unreachable host past the task it
        was unreachable at; cleared, the host is among the hosts left again,
        and its lockstep picks the host's next task when no other host has
        a task after the current one (``_get_next_task_lockstep`` wraps
        around), so the host runs the rest of the play after them: the
        ``clear_host_errors`` too, which shows its banner again. The hosts
        that were through are ended (no task of the play is left for them).
        """
        revived, self.revived = self.revived, {}
        for name in self.order:
            if self.hosts[name].active:
                self.hosts[name].status = HostStatus.ENDED
        for name in revived:
            self.hosts[name].status = HostStatus.ACTIVE
        first = min(revived.values())
        number = next((n for n, step in enumerate(self.plan.steps) if step.end > first),
                      len(self.plan.steps))
        self._walk(number, revived)
        self._settle_open_failures()

    def _walk(self, number: int, starts: Mapping[str, int]) -> None:
        """Run the plan's steps from step ``number``; a host of ``starts``
        joins at its entry (the steps before are split there, lockstep)."""
        within: Optional[int] = None  # where the current step goes on, once split
        while number < len(self.plan.steps):
            step = self.plan.steps[number]
            cursor = step.start if within is None else within
            within = None
            joining = [starts[h] for h in self.order if h in starts and self.hosts[h].active]
            if joining and min(joining) >= step.end:
                number += 1  # (no host is here yet)
                continue
            if joining:
                cursor = max(cursor, min(joining))
            active = [h for h in self.order if self.hosts[h].active
                      and starts.get(h, 0) <= cursor]
            if not active or self.ended:
                break
            later = sorted(starts[h] for h in self.order if h in starts
                           and self.hosts[h].active and cursor < starts[h] < step.end)
            if cursor > step.start or later:
                assert isinstance(step, Batch)  # (a controller step is one entry)
                step = dataclasses.replace(step, start=cursor,
                                           end=later[0] if later else step.end)
            self.reads = self.plan.reads[number] \
                if self.plan.reads and self.ctx.options.closure else None
            self.others = self.plan.hostvars[number] if self.plan.hostvars else None
            if self.others is not None:  # (a template file named on the target)
                self.others = closure.template_hostvars(self._step_tasks(step), self.others)
            self._hostvars = {}
            self._settle_finished_blocks(step)
            active = [h for h in self.order if self.hosts[h].active
                      and starts.get(h, 0) <= cursor]
            if not active:
                break
            outcome = self.run_step(step, active)
            self.after_step(step, active, outcome)
            if step.end < self.plan.steps[number].end and not outcome.includes:
                within = step.end  # (the rest of the step, with the hosts joining there)
                continue
            number += 1
            if outcome.includes:
                self.include_failed = []
                number = self.splice_includes(step, outcome)
                if self.include_failed:
                    self._after_include_failures(step, active, outcome)

    def _after_include_failures(self, step: Step, active: List[str],
                                outcome: StepOutcome) -> None:
        """Hosts whose include could not be loaded failed at the include: linear
        loads includes before its any_errors_fatal and max_fail_percentage
        checks, so they count there as the step's failures (L4.5)."""
        if not outcome.failed and self._any_errors_fatal(step):
            self.stop_others(active, self.include_failed)
        self._max_fail_percentage()

    def _settle_open_failures(self) -> None:
        """A host whose block failure no later batch resumed ends the play failed.

        Its ``always`` was the play's last step (force_handlers' flush, L5.7),
        or the controller failed it at the play's last task (an include that
        could not be loaded): no batch ran on to return the failure.
        """
        for name in self.order:
            state = self.hosts[name]
            if state.active and any(isinstance(saved, dict) and saved.get("failure")
                                    and saved.get("phase") in ("block", "rescue", "always")
                                    for saved in state.blocks.values()):
                state.status = HostStatus.FAILED

    def _settle_finished_blocks(self, step: Step) -> None:
        """A block a host stood in when the last batch stopped, that lies wholly
        before ``step``, has ended: its failure fails the host; without one, a
        role's occurrence completes as the runner completes it (``run_block``).

        A batch stops right after its last task, inside the blocks around it;
        when that task was the last of a block's always (a cut after it:
        any_errors_fatal, max_fail_percentage), no later batch covers the block
        to return its failure. Linear's iterator fails the host once its
        always is done (L4.2), and the host runs nothing more (31543.yml).
        The failure of an ended block inside a block the host is still in
        goes to that block (its rescue or always, as the runner does).
        """
        numbered = {node.id: node for node in _blocks_of(self.plan.program.tree)}
        spans = {bid: span(node) for bid, node in numbered.items()}
        for name in self.active():
            state = self.hosts[name]
            open_ = {bid: saved for bid, saved in state.blocks.items()
                     if isinstance(saved, dict) and int(bid) in spans
                     and saved.get("phase") in ("block", "rescue", "always")}
            ended = sorted((bid for bid in open_ if spans[int(bid)][1] < step.start),
                           key=lambda bid: -self._blocks[int(bid)].depth)
            for bid in ended:
                saved = state.blocks.pop(bid)
                if not saved.get("failure"):
                    # An occurrence of a role the host got to the end of (its
                    # role_complete) after a task of it ran has completed.
                    key = numbered[int(bid)].block.role_key
                    if key is not None and state.roles.get(key) == "ran":
                        state.roles = {**state.roles, key: "done"}
                    continue
                first, last = spans[int(bid)]
                around = [b for b in state.blocks if b in open_ and b not in ended
                          and spans[int(b)][0] <= first and last <= spans[int(b)][1]]
                if around:
                    inner = max(around, key=lambda b: self._blocks[int(b)].depth)
                    if not state.blocks[inner].get("failure"):
                        state.blocks[inner] = dict(state.blocks[inner], failure=saved["failure"])
                else:
                    # (a host another host's failure marked stops, uncounted: L4.5)
                    state.status = HostStatus.STOPPED if state.marked else HostStatus.FAILED
                    break

    def active(self) -> List[str]:
        return [h for h in self.order if self.hosts[h].active]

    def run_step(self, step: Step, active: List[str]) -> StepOutcome:
        LOG.info("%s %d-%d on %d host(s)", type(step).__name__, step.start, step.end - 1, len(active))
        self.note_step(step)
        controller_step = step if isinstance(step, ControllerStep) else None
        once, first = None, None
        if controller_step and (controller_step.once or controller_step.once_if is not None):
            first = self._first_reaching(active, step)
        if controller_step and controller_step.once_if is not None:
            once = self._once(first or active[0], controller_step)
            controller_step = dataclasses.replace(controller_step, once=once, once_if=None)
            step = controller_step
        hosts = [first or active[0]] if controller_step and controller_step.once else active
        if controller_step and controller_step.per_item:
            outcome = self._run_per_item(controller_step, hosts, active)
            outcome.once, outcome.once_host = once, first
            return outcome
        calls = [self._call(h, step, active) for h in hosts]
        return self.run_calls(calls, StepOutcome(once=once, once_host=first),
                              limit=controller_step.throttle if controller_step else 0)

    def note_step(self, step: Step) -> None:
        """``step`` starts: a warm-up's failure answers only the play's first
        step, and only when it is a batch, which connects its hosts as it
        starts (:meth:`Connector.warm`, binding); any other step comes after
        work that may have made a host reachable. (Called again for the same
        step, it changes nothing.)"""
        if self._first_step is None:
            self._first_step = step
        if self.ctx.connector is not None and (step is not self._first_step
                                               or not isinstance(step, Batch)):
            self.ctx.connector.release_warm()

    def _failing(self, host: str) -> bool:
        """``host`` failed in a block that no rescue took, and runs its
        ``always`` now (the ``force_handlers`` flush is one): linear's
        ``mark_host_failed`` has taken it out of ``ansible_play_hosts`` and
        ``ansible_play_batch`` already, though it still runs (L6.6)."""
        blocks = self.hosts[host].blocks if host in self.hosts else {}
        return any(isinstance(saved, dict) and saved.get("phase") == "always"
                   and saved.get("failure") for saved in blocks.values())

    def _first_reaching(self, active: List[str], step: Step) -> str:
        """The host a run_once task runs on: the first host whose next task it
        is (L7.1). A host in a block's rescue or always, or with a failure its
        block holds for its rescue, is elsewhere: linear's lockstep serves the
        hosts in their tasks first, and run_once picks the first of those. A
        host for which the task's role completed skips it (``HostRun.run_block``)."""
        path = _path_to(self.plan.program.tree, step.start) or []
        nodes = {node.id: node for node in _blocks_of(self.plan.program.tree)}
        keys = {bid: node.block.role_key for bid, node in nodes.items()
                if node.block.role_key is not None and not node.block.role_repeats}
        for host in active:
            blocks, roles = self.hosts[host].blocks, self.hosts[host].roles
            if any(bid in keys and str(bid) not in blocks and roles.get(keys[bid]) == "done"
                   for bid, _ in path):
                continue
            if all(_reaches(blocks.get(str(bid)), phase, bool(nodes[bid].rescue)
                            if bid in nodes else False) for bid, phase in path):
                return host
        return active[0]

    def run_calls(self, calls: List[HostCall], outcome: StepOutcome,
                  limit: int = 0, sink: Optional[PlaySink] = None) -> StepOutcome:
        """Dispatch ``calls`` (hosts in play order), replay their events, settle the hosts.

        ``sink``: the replay of a step already under way (:meth:`run_held`),
        else a new one (and the progress line counts a new step)."""
        hosts = [call.host for call in calls]
        nested = sink is not None
        sink = sink if sink is not None else self.make_sink()
        replay = Replay(hosts, sink, is_final=lambda e: e.get("e") in FINAL_EVENTS)
        #: Each host's latest call (a host that stopped at a suspension point
        #: goes on in a call of its own), and where such hosts stopped.
        latest = {call.host: call for call in calls}
        stopped: Dict[str, int] = {}
        before: Dict[str, int] = {}
        run = Dispatch(self.ctx.connector, calls, limit=limit)
        progress = self._progress_of(calls) if not nested else (lambda host, event: None)
        for host, event in run:
            if event is None:
                if host in before:  # it runs the task itself, as the identity it needs
                    index = before.pop(host)
                    resumed = self._resume(host, index, index)
                    assert resumed is not None  # (the task itself is left to run)
                    latest[host] = resumed
                    run.add(resumed)
                elif host in stopped:
                    replay.hold(host, (stopped.pop(host), 0))
                else:
                    progress(host, None)
                    replay.finish_host(host)
            else:
                progress(host, event)
                self._waits(host, event)
                self._observe(host, event, outcome, latest)
                if event.get("e") == "end" and event.get("suspended") is not None:
                    (before if event.get("before") else stopped)[host] = event["suspended"]
                    self.hosts[host].absorb(event)  # (its state as the next call finds it)
                replay.feed(host, event)
            self._resume_held(replay, run, latest, outcome, sink)
        if self.ctx.progress is not None and not nested:
            self.ctx.progress.step_done()
        outcome.ends = sink.ends
        for call in latest.values():
            self._settle(call, outcome)
        for index in sorted(outcome.roles_included):
            names = self._included_roles().get(id(self.plan.program.entry(index).task), ())
            self.add_roles(names[:1], names[1:])
        self._hostvars = {}  # hosts' variables changed: later calls of the step see them
        return outcome

    def _resume_held(self, replay: Replay, run: Dispatch, latest: Dict[str, HostCall],
                     outcome: StepOutcome, sink: PlaySink) -> None:
        """Hosts stopped at a suspension point, once the replay reaches it:
        the task runs for them elsewhere (:meth:`run_held`), then each goes on
        with the rest of its batch in a call of its own."""
        while True:
            held = replay.held()
            if held is None:
                return
            key, names, announced = held
            going = self.run_held(key[0], names, announced, outcome, sink)
            for host in names:
                replay.release(host)
            for host in names:
                call = self._resume(host, key[0], key[0] + 1) if host in going else None
                if call is not None:
                    latest[host] = call
                    run.add(call)
                else:
                    replay.finish_host(host)

    def _resume(self, host: str, index: int, start: int) -> Optional[HostCall]:
        """The call that runs the rest of ``host``'s batch from ``start`` (it
        stopped at ``index``); None when nothing of the batch is left."""
        step = next(s for s in self.plan.steps if isinstance(s, Batch)
                    and s.start <= index < s.end)
        if start >= step.end:
            return None
        rest = dataclasses.replace(step, start=start)
        LOG.info("Resume %d-%d on %s", rest.start, rest.end - 1, host)
        return self._call(host, rest, self.active())

    def run_held(self, index: int, hosts: List[str], announced: bool,
                 outcome: StepOutcome, sink: PlaySink) -> List[str]:
        """Run task ``index`` (a suspension point) for ``hosts``, which stopped
        before it; the hosts that go on after it.

        A delegated one (``Batch.delegated``) runs as the ``Where.DELEGATE``
        step it stands for, for those hosts only, into the replay under way
        (its banner once, where the first of them comes). Others run through
        Ansible: they are planned only with a ``suspendable`` predicate,
        which only the mitogen_batch bridge gives, and its executor
        (``BridgeExecutor``) runs them; reaching one here is a bug."""
        step = self._delegate_step(index)
        if step is None:
            raise AssertionError("task %d is a suspension point, but this executor runs no "
                                 "task elsewhere: only mitogen_batch plans them" % index)
        LOG.info("DelegateStep %d on %d host(s)", index, len(hosts))
        self.note_step(step)
        active = self.active()
        calls = [self._call(h, step, active) for h in hosts]
        self._warn_late_delegates(step, calls, hosts, active)
        held = self.run_calls(calls, StepOutcome(), sink=_HeldSink(sink, announced))
        for host in held.failed:
            if host not in outcome.failed:
                outcome.failed.append(host)
        outcome.trouble.update(held.trouble)
        outcome.ignored_unreachable.extend(held.ignored_unreachable)
        return [h for h in hosts if self.hosts[h].active and h not in held.trouble]

    def _delegate_step(self, index: int) -> Optional[ControllerStep]:
        step = next((s for s in self.plan.steps if isinstance(s, Batch)
                     and s.start <= index < s.end), None)
        return step.delegate_step(index) if step is not None else None

    def _warn_late_delegates(self, step: ControllerStep, calls: List[HostCall],
                             held: List[str], active: List[str]) -> None:
        """A delegate of the batch that did not wait at the task: its
        ``delegate_to`` read a value that a task of the batch (an
        ``include_vars``...) wrote without naming it, so the batch's start
        could not tell that host to wait (``_delegate_waits``), and it may
        have run tasks after this one already. Said, never silent."""
        for call in calls:
            if call.via != call.host and call.via in active and call.via not in held:
                entry = self.plan.program.entry(step.index)
                self.ctx.callbacks.warning(
                    "task %s (%s) for %s runs on %s, which may have run later tasks of its "
                    "batch already: its delegate_to changed inside the batch"
                    % (entry.task.display_name, entry.task.location, call.host, call.via))

    def _delegate_waits(self, step: Step, active: List[str]) -> Dict[str, List[int]]:
        """Per host of a batch, the delegated suspension points it stops at
        whatever its ``when`` (the runner's ``wait_at``): another host of the
        batch delegates the task to it (the task runs there before the
        host's next task, as linear's lockstep has it), or the controller
        cannot template the host's own ``delegate_to`` (it fails there).
        Worked out once per step and hosts, from their values as it starts
        (``dataflow.delegate_rule`` sees that no task before it in the batch
        writes what ``delegate_to`` reads by name)."""
        if not isinstance(step, Batch) or not step.delegated:
            return {}
        memo_step, memo_hosts, waits = self._waits_memo
        if memo_step is step and memo_hosts == active:
            return waits
        waits = {}
        delegates: List[Tuple[int, ControllerStep]] = []
        for index in step.delegated:
            delegate = step.delegate_step(index)
            if index >= step.start and delegate is not None:
                delegates.append((index, delegate))
        for host in active if delegates else ():
            wire = self._wire(host, step, active, with_options=False)  # (once per host)
            for index, delegate in delegates:
                name, error = self._delegate(host, delegate, wire)
                if error is not None:
                    waits.setdefault(host, []).append(index)
                elif name != host and name in active:
                    waits.setdefault(name, []).append(index)
        self._waits_memo = (step, list(active), waits)
        return waits

    def _run_per_item(self, step: ControllerStep, hosts: List[str],
                      active: List[str]) -> StepOutcome:
        """A loop whose ``delegate_to`` names the item: one call per item, on its delegate.

        Round r runs item r of every host that has one (hosts in parallel,
        items of one host in order); each call gets the earlier items'
        results, so the last one reports the task as a whole. The replay sees
        one task per host: its start, every item, the final result.
        """
        entry = self.plan.program.entry(step.index)
        task = to_wire(entry.task)
        loop_var = (entry.task.loop_control or {}).get("loop_var", "item")
        delegates: Dict[str, List[str]] = {}
        for host in hosts:
            wire = self._wire(host, step, active)
            self._attach_lookups(wire, step)
            hostrun = HostRun(wire, emit=None)
            templar = Templar(hostrun.variables(task, Scope(tuple(
                to_wire(b) for b in self.plan.program.parents[entry.index]))))
            try:
                items = hostrun.loop_items(task, templar)
                delegates[host] = [_delegate_name(templar.template_with({loop_var: item}).template(
                    entry.task.delegate_to), host) for item in items]
            except Exception as exc:  # the runner reports the loop's error itself
                LOG.debug("per-item delegate_to of %s for %s: %s", entry.task.location, host, exc)
                delegates[host] = []
        sink = self.make_sink()
        replay = Replay(hosts, sink, is_final=lambda e: e.get("e") in FINAL_EVENTS)
        outcome = StepOutcome()
        prior: Dict[str, Dict[str, Any]] = {h: {"prior": [], "notify": []} for h in hosts}
        rounds = max([len(d) for d in delegates.values()] + [1])
        if self.ctx.progress is not None:
            self.ctx.progress.step({host: 1 for host in hosts})
        for number in range(rounds):
            calls = []
            for host in hosts:
                count = len(delegates[host])
                if number >= max(count, 1) or not self.hosts[host].active \
                        or host in outcome.trouble or self._declined(host, entry.index):
                    continue
                call = self._call(host, step, active,
                                  via=delegates[host][number] if count else host)
                if count:
                    call.wire["options"]["item_slice"] = dict(
                        prior[host], index=number, final=number == count - 1)
                if number:
                    call.wire["options"].pop("step", None)  # --step: asked at the first item
                calls.append(call)
            by_host = {call.host: call for call in calls}
            for host, event in dispatch(self.ctx.connector, calls):
                last = number >= len(delegates[host]) - 1 or self._declined(host, entry.index)
                if self.ctx.progress is not None and last:  # (the task's own result)
                    self.ctx.progress.event(host, event)
                if event is None:
                    if last or host in outcome.trouble:
                        replay.finish_host(host)
                    continue
                self._waits(host, event)
                kind = event.get("e")
                if kind == "partial":
                    if event.get("item") is not None:
                        prior[host]["prior"].append(event["item"])
                    prior[host]["notify"] = event.get("notify") or []
                    continue
                if kind == "start" and number > 0:
                    continue  # one start per host and task
                if kind == "end":
                    self._observe(host, event, outcome, by_host)
                    if last:
                        replay.feed(host, event)
                    else:
                        self.hosts[host].absorb(event)
                    continue
                self._observe(host, event, outcome, by_host)
                replay.feed(host, event)
            for call in calls:
                if number >= len(delegates[call.host]) - 1 or call.host in outcome.trouble:
                    outcome.ends = {**outcome.ends, **sink.ends}
                    self._settle(call, outcome)
            self._hostvars = {}
        if self.ctx.progress is not None:
            self.ctx.progress.step_done()
        return outcome

    def _progress_of(self, calls: List[HostCall]) -> Callable[[str, Optional[Event]], None]:
        """Where a step's events go for the live progress line (a no-op without one).

        It is quiet through a step whose ``pause`` asks on the terminal."""
        progress = self.ctx.progress
        if progress is None:
            return lambda host, event: None
        asks = any(e.task.action == "pause" and not (
            isinstance(e.task.args, Mapping) and ("seconds" in e.task.args
                                                  or "minutes" in e.task.args))
            for call in calls[:1] for e in self.plan.program.entries
            if call.wire["start"] <= e.index < call.wire["end"])
        progress.step({call.host: max(1, len(task_indices(call.wire))) for call in calls},
                      quiet=asks)
        return progress.event

    def make_sink(self) -> PlaySink:
        """The sink a step's replay feeds (mitogen_batch's forwards to Ansible's callbacks)."""
        return PlaySink(self.plan, self.ctx.callbacks, self.ctx.stats, stepper=self.ctx.stepper)

    def _waits(self, host: str, event: Event) -> None:
        """``--step``: a runner waits for the answer its ``ask`` event wants (the
        replay's sink gives it when the task's step starts)."""
        if event.get("e") == "ask":
            assert self.ctx.stepper is not None
            self.ctx.stepper.waiting(host, event)

    def _declined(self, host: str, index: int) -> bool:
        """``--step``: the user said no to the task at ``index`` for ``host``."""
        return self.ctx.stepper is not None and (host, (index, 0)) in self.ctx.stepper.declined

    def _observe(self, host: str, event: Event, outcome: StepOutcome,
                 calls: Mapping[str, HostCall]) -> None:
        """Act on a result before callbacks see it, in the order it arrives per host
        (``calls``: each host's call, by host)."""
        kind = event.get("e")
        if kind == "unreachable" and self._ignores_unreachable(event):
            event["ignored"] = True  # L1.8: "...ignoring", ok+ignored, the host stays
            outcome.ignored_unreachable.append(host)
            if event.get("lost"):
                self._register_lost(host, event)
        elif kind in ("unreachable", "crash"):
            outcome.trouble[host] = kind
            outcome.failed.append(host)
            if kind == "unreachable":
                self._unreachable_at(host, event["k"][0])
        elif kind == "end":
            call = calls[host]
            if not call.in_process:
                self.ctx.transport.count_call(call.connection, event.get("calls", 0),
                                              context=event.get("context", call.context_key))
                sent, received = event.get("bytes", (0, 0))
                self.ctx.transport.count_bytes(call.connection, sent, received)
        if kind == "done" and event.get("status") == "ok" and event["k"][1] == 0 \
                and "_ioc_included" in (event.get("result") or {}) and not self._dynamic(event):
            outcome.roles_included.add(event["k"][0])
        if kind in ("done", "item") and event.get("status") == "ok" and self._dynamic(event):
            looped = self.plan.program.entry(event["k"][0]).task.loop is not None
            if (kind == "item") == looped:
                outcome.includes.setdefault(host, []).append(event)
        if kind in ("done", "item"):
            fetched.deliver(event, self.plan.program.play.basedir)
            self._inventory_effects(host, event)
        if kind in ("done", "item", "unreachable"):
            self._mark_delegated(host, event, calls)
        if kind == "done":
            result = event.get("result") or {}
            if event.get("status") == "failed" and not event.get("ignored"):
                outcome.failed.append(host)
            if event.get("status") == "ok" and "meta" in result:
                outcome.metas.setdefault(host, []).append(result["meta"])

    def _included_roles(self) -> Dict[int, Tuple[str, ...]]:
        """id(include task) -> the roles a static ``include_role`` brings (its block's)."""
        plan, found = self._roles_memo
        if plan is not self.plan:
            found = {id(node.block.include): node.block.included_roles
                     for node in _blocks_of(self.plan.program.tree)
                     if node.block.include is not None and node.block.included_roles}
            self._roles_memo = (self.plan, found)
        return found

    def add_roles(self, names: Sequence[str], dependencies: Sequence[str]) -> None:
        """An ``include_role`` ran: Ansible's ``play.roles`` gained its role, so
        every later task of the play (on every host) sees it in the role name
        magic variables; the planner cut before their readers."""
        if not names and not dependencies:
            return
        self.magic = {**self.magic, **role_magic(
            list(self.magic.get("ansible_play_role_names", [])) + list(names),
            list(self.magic.get("ansible_dependent_role_names", [])) + list(dependencies))}

    def _dynamic(self, event: Event) -> bool:
        key = event.get("k") or (0, 1)
        return key[1] == 0 and self.plan.program.entry(key[0]).task.include_scope is not None

    # -- dynamic includes (L7.8) ---------------------------------------------------

    def splice_includes(self, step: Step, outcome: StepOutcome) -> int:
        """Load what each host included and splice it in after the include task.

        Hosts are grouped by (file, arguments, loop variables) in play-host
        order, items in order; each group's tasks become a block only its
        hosts reach, right after the include, group after group, exactly
        where the linear strategy puts them. The play is planned again and
        the run goes on with the first step after the include. Returns the
        number of that step in the new plan.
        """
        if self.ctx.load_include is None or self.ctx.replan is None:
            raise PlanError("dynamic includes need the playbook loader", None)
        entry = next(e for e in self.plan.entries_of(step) if e.task.include_scope is not None)
        if self.fail_too_deep(entry, [h for h in self.order if outcome.includes.get(h)]):
            return self._next_step(entry.index)
        task = entry.task
        play = self.plan.program.play
        groups: Dict[str, Dict[str, Any]] = {}
        for host in self.order:
            for event in outcome.includes.get(host, ()):
                if not self.hosts[host].active:
                    continue
                result = event["result"]
                args = result.get("_ioc_include_args") or {}
                loop_vars = {k: v for k, v in result.items() if k in _loop_keys(result)}
                key = json.dumps([result.get("_ioc_included"), args, loop_vars],
                                 sort_keys=True, default=str)
                group = groups.setdefault(key, {"args": args, "hosts": [], "vars": loop_vars,
                                                "label": item_label(result) if loop_vars else None})
                group["hosts"].append(host)
        blocks: List[Block] = []
        included: List[Any] = []
        for group in groups.values():
            # Loaded once per group: every block gets tasks of its own (a
            # later splice finds its include task by identity).
            try:
                loaded = self.ctx.load_include(play, task, group["args"])
            except IncludeNotFound as exc:
                # (ansible-playbook shows a missing file's error with its help and
                # no origin, a missing role's where its name was written)
                written = (task.origins.get("arg:name") or ("",))[0] \
                    if task.action == "include_role" else ""
                for host in group["hosts"]:
                    self._fail_include(host, entry, exc.message, shown=None if written else
                                       " ".join(filter(None, (exc.message, exc.help_text))),
                                       at=written or None)
                continue
            for host in group["hosts"]:
                self.ctx.stats.record(host, "ok", False)
            self.ctx.callbacks.playbook_on_include(loaded.label, group["hosts"], group["label"])
            included.append(loaded)
            blocks.append(Block(block=loaded.nodes, location=task.location,
                                params={**task.vars, **group["vars"]}, implicit=True,
                                hosts=tuple(group["hosts"])))
        if blocks:
            self._adopt(splice_after(play, task, tuple(blocks), included))
        return self._next_step(entry.index)

    def _adopt(self, play: Play) -> None:
        """Go on with ``play`` (the same play with included tasks spliced in)."""
        assert self.ctx.replan is not None
        self.adopt_plan(self.ctx.replan(play))

    def adopt_plan(self, plan: Plan) -> None:
        """Go on with ``plan``: this play's, with included tasks spliced in after the step run."""
        old = self.plan.program.play
        play = plan.program.play
        self.plan = plan
        # (what the includes brought joins the play's role names)
        self.add_roles(play.role_names[len(old.role_names):],
                       play.dependent_role_names[len(old.dependent_role_names):])
        self._blocks = _block_shapes(self.plan.program.tree)
        # A public include_role's defaults and vars are every host's from now
        # on (Ansible's play.roles gained it): its defaults below each host's
        # inventory (a default another role gave is replaced where the host's
        # value is still that default), its vars on the play layer.
        changed = {k: v for k, v in play.role_defaults.items()
                   if k not in old.role_defaults or old.role_defaults[k] != v}
        if changed:
            for state in self.hosts.values():
                below = {k: v for k, v in changed.items() if k not in state.inventory_vars
                         or (k in old.role_defaults
                             and state.inventory_vars[k] == old.role_defaults[k])}
                state.inventory_vars = {**state.inventory_vars, **below}
        if play.role_vars != old.role_vars:
            self.static_layers = {**self.static_layers,
                                  "play": {**self.static_layers["play"], **play.role_vars}}

    def _next_step(self, index: int) -> int:
        for number, step in enumerate(self.plan.steps):
            if step.start > index:
                return number
        return len(self.plan.steps)

    def fail_too_deep(self, entry: Entry, hosts: Sequence[str]) -> bool:
        """Fail ``hosts`` at an include nested too deep (:func:`too_deep`); True if so."""
        message = too_deep(self.plan.program, entry.index)
        if message is None:
            return False
        for host in hosts:
            if self.hosts[host].active:
                self._fail_include(host, entry, message)
        return True

    def _fail_include(self, host: str, entry: Entry, message: str,
                      shown: Optional[str] = None, at: Optional[str] = None) -> None:
        """An included file that cannot be loaded fails the hosts that included it
        (``shown``: the ``[ERROR]`` line's whole text, when it has no ``Origin:``;
        ``at``: the ``Origin:`` it has instead of the task's, ``path:line:col``)."""
        result: Dict[str, Any] = {"failed": True, "changed": False, "msg": message}
        self.include_failed.append(host)
        if shown is not None:
            result["_ioc_error"] = shown
        if at is not None:
            result["_ioc_error_at"] = at
        view = TaskView(name=entry.task.display_name, action=entry.task.action,
                        location=entry.task.location.origin, args=entry.task.args)
        self.ctx.stats.record(host, "failed", False)
        self.ctx.callbacks.runner_result(host, view, Status.FAILED, result)
        state = self.hosts[host]
        state.marked = True
        # Where the host stands: in each enclosing block's body, rescue or
        # always. The failure belongs to the innermost body or rescue: the
        # next batch resumes it there (rescue, or always and up, L4.1).
        path = _path_to(self.plan.program.tree, entry.index) or []
        for bid, phase in path:
            state.blocks.setdefault(str(bid), {"phase": phase, "failure": None})
        open_blocks = [(bid, phase) for bid, phase in path if phase in ("block", "rescue")]
        if not open_blocks:
            state.status = HostStatus.FAILED
            return
        bid, phase = open_blocks[-1]
        # Unlike a task's failure, linear sets no ansible_failed_task/_result
        # for it: a rescue sees the values of an earlier failure, if any.
        state.blocks[str(bid)] = {"phase": phase,
                                  "failure": {"task": to_wire(entry.task), "result": result}}

    def _register_lost(self, host: str, event: Event) -> None:
        """A task whose connection was lost under it (no runner is left to send
        the host's state) registers its unreachable result, as linear does;
        ignore_unreachable tasks run in a batch of their own (schedule.py), so
        nothing else of the batch is left unrecorded."""
        register = self.plan.program.entry(event["k"][0]).task.register
        if register and event["k"][1] == 0:
            state = self.hosts[host]
            state.runtime = {**state.runtime,
                             register: runner_results.registered(event["result"])}

    def _unreachable_at(self, host: str, index: int) -> None:
        """``host`` became unreachable at entry ``index``. Not in a flush:
        linear's iterator holds such a host among its handlers, which ioc
        does not resume (clear_host_errors leaves it out, docs/status.md)."""
        if not self.plan.program.entry(index).is_flush:
            self.unreachable_at[host] = index
        else:
            self.unreachable_at.pop(host, None)

    def _ignores_unreachable(self, event: Event) -> bool:
        """Whether the task lets the host go on: as the runner decided it (a
        templated value, a loop's items), else (a connection lost under the
        task) as it is written."""
        if "ignore" in event:
            return bool(event["ignore"])
        task = self.plan.program.entry(event["k"][0]).task
        return _set(task.ignore_unreachable)

    def _inventory_effects(self, host: str, event: Event) -> None:
        result = event.get("result") or {}
        key = (host, tuple(event.get("k") or ()))
        if event.get("e") == "done" and key in self._looped_changes:
            # A looped add_host/group_by: its items' changed as the inventory
            # took each one, and the task changed when one did (the recap).
            flags = self._looped_changes.pop(key)
            items = result.get("results")
            if isinstance(items, list):
                for item, flag in zip(items, flags):
                    if isinstance(item, dict):
                        item["changed"] = flag
                result["changed"] = any(flags)
                self._register_changes(host, event, any(flags), flags)
            return
        if event.get("status") != "ok":
            return
        if "add_host" in result or "add_group" in result:
            result["changed"] = self.ctx.change_inventory(host, result)
            if event.get("e") == "item":
                self._looped_changes.setdefault(key, []).append(result["changed"])
            else:
                self._register_changes(host, event, result["changed"], None)
            if result["changed"]:
                # group_names, and a new group's group_vars, for the next batch
                self._refresh_inventory_vars()

    def _register_changes(self, host: str, event: Event, changed: bool,
                          items: Optional[List[bool]]) -> None:
        """What the inventory made of an add_host/group_by (``changed``, per
        item for a loop) goes into the result the task registered too: the
        runner registered it before the controller applied it (the host's
        end state carries it: :meth:`_settle`)."""
        key = event.get("k") or ()
        if not key or key[1] != 0:
            return
        register = self.plan.program.entry(key[0]).task.register
        if register:
            self._registered_changes.setdefault(host, {})[register] = (changed, items)

    def _patch_registered(self, host: str, end: Optional[Event]) -> None:
        patches = self._registered_changes.pop(host, {})
        runtime = ((end or {}).get("state") or {}).get("runtime")
        if not patches or not isinstance(runtime, dict):
            return
        for register, (changed, items) in patches.items():
            value = runtime.get(register)
            if not isinstance(value, dict):
                continue
            value = dict(value, changed=changed)
            if items is not None and isinstance(value.get("results"), list):
                value["results"] = [dict(r, changed=flag) if isinstance(r, dict) else r
                                    for r, flag in zip(value["results"], items)] \
                    + value["results"][len(items):]
            runtime[register] = value

    def _mark_delegated(self, host: str, event: Event, calls: Mapping[str, HostCall]) -> None:
        call = calls[host]
        if (event.get("result") or {}).get("skipped"):
            # Skipped by its `when`, before TaskExecutor delegates: the
            # result (a loop item's too) names no delegate (``skipping: [h1]``).
            return
        if call.via and call.via != host and (event.get("result") or {}).get("unreachable"):
            # 2.21: the action never ran, so no delegated vars; the label still names
            # the delegate (the default callback's host_label: ``h1 -> u1``)
            event["result"]["_ansible_delegated_vars"] = {"ansible_delegated_host": call.via}
        elif call.via and call.via != host:
            seen = _delegated_vars(call.via, self.ctx.connection_of(call.via))
            event["result"]["_ansible_delegated_vars"] = {
                k: seen[k] for k in ("ansible_delegated_host", "ansible_host")}

    def _settle(self, call: HostCall, outcome: StepOutcome) -> None:
        host = call.host
        state = self.hosts[host]
        trouble = outcome.trouble.get(host)
        end = outcome.ends.get(host)
        self._patch_registered(host, end)
        if trouble == "unreachable":
            if end is not None:
                # what its step set before (register of the unreachable task
                # too): linear's hostvars keep them
                state.facts = {**state.facts, **(end.get("state") or {}).get("facts", {})}
                state.runtime = {**state.runtime, **(end.get("state") or {}).get("runtime", {})}
            state.status = HostStatus.UNREACHABLE
        elif trouble == "crash":
            state.status = HostStatus.FAILED
        elif end is not None:
            state.absorb(end)
            for layer in ("facts", "runtime"):
                delegated = (end.get("state") or {}).get("delegated_" + layer)
                if delegated and call.connection in self.hosts:
                    target = self.hosts[call.connection]
                    setattr(target, layer, {**getattr(target, layer), **delegated})
                elif delegated:
                    self.ctx.store_facts(call.connection, delegated, layer)

    # -- after a step: the decisions only the controller can make ----------------

    def after_step(self, step: Step, active: List[str], outcome: StepOutcome) -> None:
        once = outcome.once if outcome.once is not None else \
            isinstance(step, ControllerStep) and step.once
        if isinstance(step, ControllerStep):  # (run through Ansible: no runner event)
            for host, kind in outcome.trouble.items():
                if kind == "unreachable" and self.hosts[host].status is HostStatus.UNREACHABLE:
                    self._unreachable_at(host, step.index)
        if once:
            self._copy_once(active, outcome, step)
        self._play_metas(active, outcome)
        for host, metas in outcome.metas.items():
            if "reset_connection" in metas:
                self.ctx.connector.reset(host)
        if (outcome.failed or outcome.ignored_unreachable) and self._any_errors_fatal(step):
            # (the host whose unreachable result was ignored is marked too)
            self.stop_others(active, outcome.failed)
            self.fatal_unreachable.update(h for h, kind in outcome.trouble.items()
                                          if kind == "unreachable")
        self._max_fail_percentage()

    def _copy_once(self, active: List[str], outcome: StepOutcome,
                   step: Optional[Step] = None) -> Dict[str, Dict[str, Any]]:
        """run_once: the first host's results are every host's (L7.1). What the
        step wrote for it (its runner's end state) reaches the others; returns
        that, per layer (``facts``, ``runtime``, ``include_vars``)."""
        first = outcome.once_host if outcome.once_host in active else active[0]
        others = [h for h in active if h != first]
        source = self.hosts[first]
        if first in outcome.failed:
            # Treated as any_errors_fatal, an unreachable host too, and a
            # failure its block rescues as well (L7.1); a failure marks the
            # others twice, see mark_failed.
            unreachable = outcome.trouble.get(first) == "unreachable"
            self.once_failed(others, step, unreachable)
            if unreachable:
                self.fatal_unreachable.add(first)
            return {}
        if first in outcome.ignored_unreachable and step is not None and not any(
                _set(e.task.ignore_errors) for e in self.plan.entries_of(step)):
            # An unreachable result fails a run_once task's hosts even when it
            # is ignored (ignore_unreachable): linear's any_errors_fatal check
            # reads the result's "unreachable", not whether it counts, and marks
            # every host failed, the first one too.
            self.stop_others(active, outcome.failed)
        end = outcome.ends.get(first)
        written = (end.get("state") or {}) if end is not None else {
            "facts": source.facts, "runtime": source.runtime}
        copied = {layer: dict(written.get(layer) or {})
                  for layer in ("facts", "runtime", "include_vars")}
        # An include run once includes its file for the host that ran it
        # only ("included: ... for <first>"): the others never reach its tasks.
        heads = [str(node.id) for node in _blocks_of(self.plan.program.tree)
                 if step is not None and node.include is not None
                 and step.start <= node.include.index <= step.end
                 and _set(node.include.task.run_once)]
        for host in others:
            state = self.hosts[host]
            if state.active:
                state.runtime = {**state.runtime, **copied["runtime"]}
                state.facts = {**state.facts, **copied["facts"]}
                state.included = {**state.included, **copied["include_vars"]}
                for bid in heads:
                    state.blocks[bid] = {"phase": "skipped", "failure": None}
        return copied

    def _play_metas(self, active: List[str], outcome: StepOutcome) -> None:
        metas = [m for ms in outcome.metas.values() for m in ms]
        for meta in ("end_play", "end_batch"):
            if meta in metas:
                for host in self.active():
                    self.hosts[host].status = HostStatus.ENDED
                for host in self.revived:  # (linear ends them too: no longer unreachable)
                    self.hosts[host].status = HostStatus.ENDED
                self.revived = {}
                self.ended = True
        if "clear_facts" in metas:
            for host in self.active():
                self.hosts[host].facts = {}
        if "clear_host_errors" in metas:
            for state in self.hosts.values():
                state.marked = False
                # A failure its block holds (the meta ran in the block's always)
                # is cleared too: the host goes on after the block (linear
                # clears the iterator's fail state).
                state.blocks = {bid: dict(saved, failure=None) if isinstance(saved, dict)
                                and saved.get("failure") else saved
                                for bid, saved in state.blocks.items()}
                if state.status in (HostStatus.FAILED, HostStatus.STOPPED):
                    # Forgiven (L7.10): out of this play still, but not failed,
                    # so later plays run it again.
                    state.status = HostStatus.ENDED
                elif state.status is HostStatus.UNREACHABLE \
                        and state.name not in self.fatal_unreachable \
                        and state.name in self.unreachable_at:
                    # Reachable again to linear, whose iterator left it at its
                    # next task: it goes on from there after the others (_catch_up).
                    self.revived[state.name] = self.unreachable_at.pop(state.name) + 1
        for meta in ("clear_host_errors", "refresh_inventory"):
            if meta in metas:
                self.ctx.play_meta(meta, active)
        if "refresh_inventory" in metas:
            self.inventory_changed()

    def replace_inventory(self, inventory: Any, hosts_all: Optional[List[str]] = None) -> None:
        """Ansible re-read its inventory (``meta: refresh_inventory``): take it over."""
        if self.ctx.replace_inventory is None:
            raise RuntimeError("this run cannot replace its inventory")
        self.ctx.replace_inventory(inventory)
        self.inventory_changed(hosts_all)

    def _refresh_inventory_vars(self) -> None:
        """Every play host's inventory layer, as the controller's inventory has it now."""
        if self.ctx.inventory_vars is not None:
            for name, state in self.hosts.items():
                state.inventory_vars = self.ctx.inventory_vars(name)

    def inventory_changed(self, hosts_all: Optional[List[str]] = None) -> None:
        """After refresh_inventory: the play's hosts take their new inventory
        variables and connections, ``ansible_play_hosts_all`` the pattern's
        new hosts. A play host the pattern no longer matches (gone from the
        inventory) runs nothing more of the play, as under linear, whose
        hosts cache is the pattern's new hosts (a new host joins no play
        already under way: linear's iterator has no tasks for it)."""
        self._refresh_inventory_vars()
        if hosts_all is None and self.ctx.play_hosts_all is not None:
            hosts_all = self.ctx.play_hosts_all()
        for name, state in self.hosts.items():
            if hosts_all is not None and name not in hosts_all:
                if state.status is HostStatus.ACTIVE:
                    state.status = HostStatus.ENDED
                continue
            state.spec = self.ctx.connection_of(name)
        if hosts_all is not None:
            self.magic = {**self.magic, "ansible_play_hosts_all": list(hosts_all)}

    def _any_errors_fatal(self, step: Step) -> bool:
        play = self.plan.program.play
        play_wide = _set(play.any_errors_fatal)
        return any(((_set(e.task.any_errors_fatal) or (e.implicit and play_wide))
                    and not _set(e.task.ignore_errors))
                   # an explicit flush: what fails there is a handler
                   or (e.is_flush and handlers_fatal(play))
                   for e in self.plan.entries_of(step))

    def once_failed(self, others: Sequence[str], step: Optional[Step], unreachable: bool) -> None:
        """A task run once (on the first host) failed there, or found it
        unreachable: every other host fails too (L7.1), marked twice for a
        failure (see :meth:`mark_failed`), where the first host ran the task:
        linear gives every host the task and runs it on the first only."""
        path = _path_to(self.plan.program.tree, self.plan.entries_of(step)[0].index) \
            if step is not None else None
        enclosing = {str(bid) for bid, _ in path or ()}
        for host in others:
            state = self.hosts[host]
            if not state.active:
                continue
            if path is not None:
                # Given this task, the host has left every block not around it
                # (its runner stopped after the last task it ran, inside its blocks).
                for left in [b for b, saved in state.blocks.items()
                             if b not in enclosing and isinstance(saved, dict)
                             and saved.get("phase") in ("block", "rescue", "always")
                             and not saved.get("failure")]:
                    del state.blocks[left]
            for bid, phase in path or ():
                if (state.blocks.get(str(bid)) or {}).get("phase") != phase:
                    state.blocks[str(bid)] = {"phase": phase, "failure": None}
            self.mark_failed(host, 1 if unreachable else 2)

    def stop_others(self, active: List[str], failed: List[str]) -> None:
        """any_errors_fatal (L4.5): linear marks every other host failed."""
        for host in self.active():
            if host not in failed:
                self.mark_failed(host)

    def mark_failed(self, host: str, times: int = 1) -> None:
        """Linear's ``iterator.mark_host_failed`` (``_set_failed_state``),
        ``times`` times in a row, for a host another host's failure fails.

        Each mark moves the innermost section the host stands in: a block's
        body goes to its rescue, else its always, else the block ends failed;
        a rescue goes to its always, else ends failed; an always ends failed.
        A block that ends failed fails its parent the same way when the host
        goes on (the iterator's child state), but a second mark in a row does
        not reach the parent. A run_once failure marks the other hosts twice
        (``_process_pending_results`` marks every host, then linear's
        any_errors_fatal check marks the hosts that did not fail), so they
        skip the innermost rescue. Where the host ends up is what the runner
        resumes: a block to rescue, an always to run with the host still
        failed, or, past the outermost block, the host stops."""
        state = self.hosts[host]
        chain = sorted(((bid, saved["phase"]) for bid, saved in state.blocks.items()
                        if isinstance(saved, dict) and int(bid) in self._blocks
                        and saved.get("phase") in ("block", "rescue", "always")),
                       key=lambda pair: -self._blocks[int(pair[0])].depth)
        level, phase = 0, chain[0][1] if chain else "complete"
        for _ in range(times):
            if phase == "complete":
                break
            phase = self._blocks[int(chain[level][0])].failed_from(phase)
        while phase == "complete" and level + 1 < len(chain):
            level += 1
            phase = self._blocks[int(chain[level][0])].failed_from(chain[level][1])
        if phase == "complete":
            state.status = HostStatus.STOPPED
            return
        state.marked = True
        # the runner resumes a block whose body failed in its rescue
        state.blocks[chain[level][0]] = {"phase": "block" if phase == "rescue" else "always",
                                         "failure": {"task": {}, "result": {}}}

    def _max_fail_percentage(self) -> None:
        limit = self.plan.program.play.max_fail_percentage
        if limit in (None, "") or self.max_fail_hit:
            return
        failed = sum(1 for h in self.order if self.hosts[h].status is HostStatus.FAILED)
        if failed * 100.0 / len(self.order) > float(limit):
            self.max_fail_hit = True
            for host in self.active():
                self.hosts[host].status = HostStatus.STOPPED
            self.ctx.callbacks.no_hosts_remaining()
            self.ctx.callbacks.no_hosts_remaining()

    # -- building calls ------------------------------------------------------------

    def _call(self, host: str, step: Step, active: List[str],
              via: Optional[str] = None) -> HostCall:
        wire = self._wire(host, step, active)
        first_key = (self._first_reportable(step, self.ctx.skip.get(host, frozenset())), 0)
        where = step.where if isinstance(step, ControllerStep) else Where.TARGET
        if where == Where.CONTROLLER:
            return HostCall(host=host, spec=self.hosts[host].spec, wire=wire,
                            first_key=first_key, in_process=True)
        if via is None:
            via = host
            if where == Where.DELEGATE:
                via, error = self._delegate(host, step, wire)
                if error is not None:
                    # As TaskExecutor: the task fails before its `when`, on this host.
                    entry = self.plan.entries_of(step)[0]
                    wire["options"]["delegate_error"] = {
                        str(entry.index): [error, entry.task.delegate_to]}
        if via != host:
            wire["options"]["delegate_facts"] = _set(self.plan.entries_of(step)[0].task.delegate_facts)
        spec = self.hosts[host].spec if via == host else self.ctx.connection_of(via)
        if where == Where.DELEGATE:
            # the task sees the delegate's connection variables (ansible_host...)
            wire["vars"]["magic"].update(_delegated_vars(via, spec))
            wire["vars"]["delegate"] = self._delegate_layers(via, step)
        try:
            if spec.via:
                spec = resolve_via(via, spec, self.ctx.connection_of)
            become = same_user_rule(self._become(host, step, via), spec,
                                    self.ctx.options.become_allow_same_user)
        except (TemplateError, ConnectionSetupError) as exc:
            return HostCall(host=host, spec=spec, wire=wire, first_key=first_key, via=via,
                            error=str(exc))
        # Lookups first: a controller file may be named by one (include_vars
        # with_first_found), and the payloads read the loop items from the answers.
        self._attach_lookups(wire, step)
        self._attach_payloads(wire, step, context_key(via, become))
        self._attach_modules(wire, step, context_key(via, become))
        connection = context_key(via, become)
        return HostCall(host=host, spec=spec, wire=wire, first_key=first_key, via=via,
                        modules=self._modules_of(step), become=become,
                        late_file=lambda key, src: self._late_file(connection, step, key, src),
                        deliver_fetch=lambda result: fetched.deliver_result(
                            result, self.plan.program.play.basedir),
                        late_lookup=lambda key, plugin, terms, kwargs: self._late_lookup(
                            wire, step, key, plugin, terms, kwargs))

    def _delegate_layers(self, via: str, step: Step) -> Dict[str, Any]:
        """What the runner makes a delegated task's ``ansible_delegated_vars``
        of: the delegate ``via``'s own layers (inventory, facts, include_vars,
        set_fact and registered values: as its ``hostvars`` entry has them),
        its magic variables, and the connection defaults Ansible's
        PlayContext gives a delegate without its own. The layers only where
        the step may read ``ansible_delegated_vars`` (it reads every variable)."""
        task = self.plan.entries_of(step)[0].task
        play = self.plan.program.play
        user = next((u for u in (task.remote_user, play.remote_user)
                     if isinstance(u, str) and u), None)
        options = self.ctx.options.connection_vars
        out: Dict[str, Any] = {
            "name": via,
            "inventory": {}, "facts": {}, "include_vars": {}, "runtime": {},
            "magic": {"inventory_hostname_short": via.split(".")[0],
                      "group_names": self.ctx.group_names(via) if self.ctx.group_names
                      else []},
            "defaults": {"transport": options.get("ansible_connection") or "ssh",
                         "port": None, "user": user or options.get("ansible_user")}}
        if self.reads is not None:  # (reading ansible_delegated_vars reads everything)
            return out
        if via in self.hosts:
            state = self.hosts[via]
            out.update(inventory=state.inventory_vars, facts=state.facts,
                       include_vars=state.included, runtime=state.runtime)
        elif self.ctx.outside_layers is not None:
            out.update(self.ctx.outside_layers(via))
        return out

    def _become(self, host: str, step: Step, via: str) -> Optional[BecomeSpec]:
        """The identity ``host`` runs ``step`` as (the planner made it one per step).

        Ansible's rule: the task's ``become*`` keywords, overridden by the
        ``ansible_become*`` variables (of the delegate, when delegating),
        templated with the host's variables.
        """
        program = self.plan.program
        entry = next((e for e in self.plan.entries_of(step) if identity_key(program, e) is not None),
                     None)
        task = identity_task(program, entry) if entry is not None else None
        if entry is None or task is None:
            return None
        state = self.hosts[host]
        wire = {"host": host, "start": step.start, "end": step.end, "tree": [],
                "vars": {"inventory": state.inventory_vars, "play": self.play_vars(host),
                         "extra": self.static_layers["extra"],
                         "magic": {**self.magic, "inventory_hostname": host,
                                   "group_names": state.inventory_vars.get("group_names", [])}},
                "state": state.wire_state()}
        task_wire = to_wire(task)
        # (a flush runs as its handler, templated in the handler's own scope)
        scope = handler_scope(task_wire) if entry.is_flush \
            else Scope(tuple(to_wire(b) for b in program.parents[entry.index]))
        variables: Mapping[str, Any] = HostRun(wire, emit=None).variables(task_wire, scope)
        if via != host:
            delegate = self.hosts[via].inventory_vars if via in self.hosts else {}
            variables = {**{k: v for k, v in variables.items()
                            if not k.startswith("ansible_become")},
                         **{k: v for k, v in delegate.items() if k.startswith("ansible_become")}}
        templar = Templar(variables)
        return become_for({k: getattr(task, k) for k in BECOME_KEYWORDS}, variables,
                                     templar.template, self.ctx.options.become_password,
                                     where="%s: " % task.location, omitted=task.omitted)

    def _once(self, host: str, step: ControllerStep) -> bool:
        """A templated run_once, as the first active host's variables make it."""
        entry = self.plan.program.entry(step.index)
        wire = self._wire(host, step, self.active())
        try:
            return _set(self._templar(host, entry, wire).template(step.once_if))
        except TemplateError as exc:
            LOG.warning("run_once of %s for %s: %s", entry.task.location, host, exc)
            return False

    def _runner_entries(self, step: Step) -> List[Entry]:
        """The step's entries the runner runs (not its suspension points)."""
        suspend = step.suspend_at if isinstance(step, Batch) else frozenset()
        return [e for e in self.plan.entries_of(step) if e.index not in suspend]

    def _modules_of(self, step: Step) -> Tuple[str, ...]:
        entries = self._runner_entries(step)
        actions = {e.task.action for e in entries}
        if any(e.is_flush for e in entries):
            actions |= {h.action for _, h in self._native_handlers()}
        return bootstrap.action_modules(actions)

    def _native_handlers(self) -> List[Tuple[int, Task]]:
        """(number, handler) of the handlers the runner runs itself."""
        foreign = self.plan.program.foreign_handler_numbers
        return [(n, h) for n, h in enumerate(self.plan.program.handlers) if n not in foreign]

    def _handlers_wire(self) -> List[Dict[str, Any]]:
        """The play's handlers as a flush's runner gets them.

        A handler the runner does not run (``Program.foreign_handlers``) is
        only what matches notifications to it: the runner stops before it.
        """
        foreign = self.plan.program.foreign_handler_numbers
        out = []
        for number, handler in enumerate(self.plan.program.handlers):
            wire = to_wire(handler)
            if number in foreign:
                wire = {k: wire[k] for k in ("kind", "action", "name", "role", "listen",
                                             "name_error", "location")
                        if k in wire}
                wire.update(foreign=True, args={})
            out.append(wire)
        return out

    def _delegate(self, host: str, step: Step, wire: Dict[str, Any]) -> Tuple[str, Optional[str]]:
        """The inventory name ``delegate_to`` names for ``host``, or ``host`` and
        why ``delegate_to`` cannot be templated (an undefined variable)."""
        entry = self.plan.entries_of(step)[0]
        templar = self._templar(host, entry, wire)
        try:
            return _delegate_name(templar.template(entry.task.delegate_to), host), None
        except TemplateError as exc:
            return host, str(exc)

    def _templar(self, host: str, entry: Entry, wire: Dict[str, Any]) -> Templar:
        blocks = tuple(to_wire(b) for b in self.plan.program.parents[entry.index])
        return Templar(HostRun(wire, emit=None).variables(to_wire(entry.task), Scope(blocks)))

    def _first_reportable(self, step: Step, skip: FrozenSet[int] = frozenset()) -> int:
        for entry in self.plan.entries_of(step):
            if not (entry.implicit and entry.is_flush) and entry.index not in skip:
                return entry.index
        return step.start

    def _play_hosts(self, step: Step, active: List[str]) -> Tuple[List[str], List[str]]:
        """``ansible_play_hosts`` and ``ansible_play_batch`` as of ``step``'s start.

        Every host of the play (earlier and later serial batches too; the
        batch's hosts for the latter) but those failed or unreachable, here
        or in an earlier play, and those failed in a block running its
        ``always`` (L6.6). The same lists for every host of the step: made
        once per step (again only if a host's status changed since), so a
        step costs O(hosts), not O(hosts²).
        """
        every = self.magic.get("ansible_play_hosts_all", self.order)
        made_for, made = self._play_hosts_now
        if made_for is not None and made_for[1] == HostState.status_changes \
                and made_for[0] is step and made_for[2] is every and made_for[3] is active:
            return made  # (compared by identity: comparing the lists is O(hosts) again)
        failing = {h for h in self.hosts if self._failing(h)}
        made = ([h for h in every
                 if h not in self.removed and h not in failing
                 and (h not in self.hosts or self.hosts[h].active)],
                [h for h in active if h not in failing] if failing else active)
        self._play_hosts_now = ((step, HostState.status_changes, every, active), made)
        return made

    def _wire(self, host: str, step: Step, active: List[str],
              with_options: bool = True) -> Dict[str, Any]:
        state = self.hosts[host]
        play_hosts, playing = self._play_hosts(step, active)
        magic = dict(self.magic)
        magic.update(inventory_hostname=host, inventory_hostname_short=host.split(".")[0],
                     group_names=self.ctx.group_names(host) if self.ctx.group_names
                     else state.inventory_vars.get("group_names", []),
                     groups=self.ctx.groups(),
                     ansible_play_batch=playing, play_hosts=playing,
                     ansible_play_hosts=play_hosts)
        static = {"inventory": state.inventory_vars, "play": self.play_vars(host),
                  "extra": self.static_layers["extra"],
                  "connection": _connection_vars(host, state.spec)}
        shape = self._step_shape(step)
        names = None if self.reads is None else closure.close_over(
            self.reads, [static["extra"], state.included, static["play"], static["inventory"]]
            + closure.tree_layers(shape["tree"]) + closure.tree_layers(shape["handlers"]))
        shipped = {layer: closure.restrict(values, names) for layer, values in static.items()}
        if self.others is None or self.others:
            magic["hostvars"] = self._other_hostvars(host, self.others)
        shipped["magic"] = magic
        wire_state = state.wire_state()
        for layer in ("runtime", "include_vars"):
            wire_state[layer] = closure.restrict(wire_state[layer], names)
        wire_state["facts"] = closure.restrict_facts(wire_state["facts"], names)
        return {
            "v": WIRE_VERSION,
            "host": host,
            "start": step.start,
            "end": step.end,
            "tree": self._step_shape(step)["tree"],
            "handlers": self._step_shape(step)["handlers"],
            "vars": shipped,
            "state": wire_state,
            "options": self._options(step, active, host) if with_options else {},
            "plugins": plugins.declared(),
        }

    def _step_shape(self, step: Step) -> Dict[str, Any]:
        """The runner's tree for ``step`` and the handlers it gets (only a flush
        runs and matches handlers): built once per plan and step, not per host."""
        plan, last, shape = self._shape
        if plan is not self.plan or last is not step:
            flush = any(e.is_flush for e in self.plan.entries_of(step))
            suspend = step.suspend_at if isinstance(step, Batch) else frozenset()
            shape = {"tree": wire_tree(self.plan.program.tree, step.start, step.end, suspend),
                     "handlers": self._handlers_wire() if flush else []}
            self._shape = (self.plan, step, shape)
        return shape

    def play_vars(self, host: str) -> Mapping[str, Any]:
        """The play layer ``host`` sees: play vars, then vars_files (per host
        when their names are templated: ``static_layers["host_play"]``), then
        the play's roles' vars."""
        own = (self.static_layers.get("host_play") or {}).get(host)
        return {**self.static_layers["play"], **own, **self.plan.program.play.role_vars} \
            if own else self.static_layers["play"]

    def _play_var_origins(self) -> Dict[str, str]:
        """Where the play's own ``vars`` the step reads were written, for
        those neither its ``vars_files`` nor its roles' ``vars/`` override."""
        play = self.plan.program.play
        return {name: origin for name, origin in play.var_origins.items()
                if (self.reads is None or name in self.reads)
                and name not in play.vars_files and name not in play.role_vars}

    def _options(self, step: Step, active: List[str],
                 host: Optional[str] = None) -> Dict[str, Any]:
        options: Dict[str, Any] = {"check": self.ctx.options.check, "diff": self.ctx.options.diff}
        state = self.hosts.get(host) if host is not None else None
        if getattr(getattr(state, "spec", None), "transport", None) == "local":
            # Ansible's local connection starts a task's commands and modules
            # in the play's directory (ActionBase._low_level_execute_command)
            options["local_dir"] = os.path.abspath(self.plan.program.play.basedir)
        skip = sorted(i for i in self.ctx.skip.get(host or "", ()) if step.start <= i < step.end)
        if skip:
            options["skip"] = skip
        if self.ctx.options.shape != "2.21":
            options["shape"] = self.ctx.options.shape
        if self.ctx.options.deprecated:
            options["deprecated"] = list(self.ctx.options.deprecated)
        if not self.ctx.options.deprecation_warnings:
            options["quiet_deprecations"] = True
        if self.ctx.options.allow_broken_conditionals:
            options["allow_broken_conditionals"] = True
        origins = self._play_var_origins()
        if origins:  # (an argument's error names where the play var it read was written)
            options["var_origins"] = origins
        if isinstance(step, Batch) and step.checks:
            options["checks"] = {str(i): list(names) for i, names in step.checks
                                 if i > step.start}
        waits = self._delegate_waits(step, active).get(host or "")
        if waits:
            options["wait_at"] = sorted(set(waits))
        if self.ctx.stepper is not None and self.ctx.stepper.on:
            options["step"] = True
        if any(e.is_flush for e in self.plan.entries_of(step)):
            chosen = self._once_handlers(step, active)
            if chosen:
                options["once_handlers"] = chosen
        names = self._notifiable(step)
        if names is not None:
            options["notifiable"] = names
            search = self._notifiable_names[2]
            if search:
                options["handler_search"] = search
            if not self.ctx.options.error_on_missing_handler:
                options["missing_handler"] = "warn"
            if self.ctx.options.verbosity >= 2:
                options["saved_notices"] = True  # (linear's -vv line per saved notification)
        return options

    def _notifiable(self, step: Step) -> Optional[List[str]]:
        """What a notification of the step's tasks (and handlers, at a flush)
        may name (the runner checks each of a changed result's, as linear
        does); None where nothing in the step notifies, or the names are
        known only at run time (see ``effects.notifiable``)."""
        entries = self.plan.entries_of(step)
        handlers = self.plan.program.handlers
        if not any(e.task.notify for e in entries) and not (
                any(e.is_flush for e in entries) and any(h.notify for h in handlers)):
            return None
        plan, names, _ = self._notifiable_names
        if plan is not self.plan:
            known = notifiable(handlers)
            names = sorted(known) if known is not None else None
            self._notifiable_names = (self.plan, names,
                                      handler_search([to_wire(h) for h in handlers]))
        return names

    def _once_handlers(self, step: Step, active: List[str]) -> Dict[str, List[str]]:
        """:meth:`once_handlers` of a flush's step as it starts: the hosts'
        notifications, once for all the step's calls."""
        notified = tuple(tuple(self.hosts[h].notified) for h in active)
        memo_step, memo_key, chosen = self._once_memo
        if memo_step is step and memo_key == (tuple(active), notified):
            return chosen
        handlers = [to_wire(h) for h in self.plan.program.handlers]
        chosen = self.once_handlers(step, active, [
            (h, _notified_numbers(handlers, names)) for h, names in zip(active, notified)])
        self._once_memo = (step, (tuple(active), notified), chosen)
        return chosen

    def once_handlers(self, step: Step, active: List[str],
                      queues: Sequence[Tuple[str, Collection[int]]],
                      start: int = 0) -> Dict[str, List[str]]:
        """Per run_once handler from ``start`` on that runs once, the host it runs on (L5.8).

        ``queues``: each active host (in play order) and the numbers of the
        handlers queued for it. Linear templates a handler's ``run_once``
        with the variables of the first host it serves and keeps that value
        as the handler's (``task.run_once = run_once``): true, the handler
        runs on that host only, now and at every later flush; false, on
        every queued host. A handler absent from the answer runs on all.
        """
        chosen: Dict[str, List[str]] = {}
        for number, handler in enumerate(self.plan.program.handlers):
            if number < start or not _set(handler.run_once):
                continue
            hosts = [h for h, queue in queues if number in queue]
            if not hosts:
                continue
            once = self._handler_once.get(number)
            if once is None:
                once = self._handler_once[number] = self._template_once(
                    hosts[0], step, active, handler)
            if once:
                chosen[str(number)] = hosts[:1]
        return chosen

    def _template_once(self, host: str, step: Step, active: List[str], handler: Task) -> bool:
        """A handler's ``run_once`` as ``host``'s variables (and the handler's
        own) make it; a template that fails counts as false, as for a task."""
        if not _templated(handler.run_once):
            return True
        wire = self._wire(host, step, active, with_options=False)
        handler_wire = to_wire(handler)
        variables = HostRun(wire, emit=None).variables(handler_wire, handler_scope(handler_wire))
        try:
            return _set(Templar(variables).template(handler.run_once))
        except TemplateError as exc:
            LOG.warning("run_once of %s for %s: %s", handler.location, host, exc)
            return False

    def _other_hostvars(self, host: str, attrs: Optional[FrozenSet[str]]) -> Dict[str, Any]:
        """Other hosts' variables as of this step's start (L6.6), as far as read."""
        every = self._hostvars.get(attrs)
        if every is None:
            every = self._hostvars[attrs] = self._every_hostvars(attrs)
        return {name: values for name, values in every.items() if name != host}

    def _every_hostvars(self, attrs: Optional[FrozenSet[str]]) -> Dict[str, Any]:
        """Every host's ``hostvars`` entry: the play's, then the inventory's others."""
        out: Dict[str, Any] = {}
        for name, other in self.hosts.items():
            facts_layer = {**other.facts, "ansible_facts": {
                (k[8:] if k.startswith("ansible_") and k != "ansible_local" else k): v for k, v in other.facts.items()}}
            # No play variables: Ansible's HostVars have no play context.
            merged = {**other.inventory_vars, **facts_layer, **other.included, **other.runtime,
                      **self.static_layers["extra"], "inventory_hostname": name}
            if self.ctx.group_names is not None:
                merged["group_names"] = self.ctx.group_names(name)
            out[name] = merged if attrs is None else {
                k: v for k, v in merged.items() if k in attrs or k == "inventory_hostname"}
        if self.ctx.outside_hostvars is not None:
            for name, merged in self.ctx.outside_hostvars(frozenset(self.hosts)).items():
                out[name] = merged if attrs is None else {
                    k: v for k, v in merged.items() if k in attrs or k == "inventory_hostname"}
        return out

    def _attach_payloads(self, wire: Dict[str, Any], step: Step, connection: str) -> None:
        tasks = self._payload_tasks(step)
        deferred = self._deferred(step)
        if deferred:
            # include_vars files named by values of this batch: every file the name can be
            blobs = wire.setdefault("blobs", {})
            wire["candidates"] = {
                str(index): payloads.candidates_of(
                    self.ctx.payloads, connection, task, deferred_patterns(task) or [],
                    self.plan.program.play.basedir, blobs)
                for index, task in deferred}
        if not tasks:
            return
        wire["files"], blobs = payloads.collect(
            self.ctx.payloads, connection, HostRun(wire, emit=None), tasks,
            self.plan.program.play.basedir)
        if "plugins" in wire:  # (a template file may name more: payloads declared them)
            wire["plugins"] = plugins.declared()
        wire["blobs"] = {**wire.get("blobs", {}), **blobs}
        if self.ctx.payloads.streamed:  # the runner may ask for these (FileService)
            self.ctx.connector.serve_files(self.ctx.payloads.streamed)

    def _attach_modules(self, wire: Dict[str, Any], step: Step, connection: str) -> None:
        """Specs of Ansible's modules the step runs; files the connection lacks, once."""
        modules = self.ctx.modules
        if modules is None:
            return
        entries = self._runner_entries(step)
        tasks = [e.task for e in entries]
        if any(e.is_flush for e in entries):
            tasks += [h for _, h in self._native_handlers()]
        keys = sorted({t.module for t in tasks if t.module is not None})
        if keys:
            wire["modules"] = payloads.collect_modules(
                self.ctx.payloads, connection, modules, keys, wire.setdefault("blobs", {}))

    def _attach_lookups(self, wire: Dict[str, Any], step: Step) -> None:
        program = self.plan.program
        # (a deferred include_vars' with_first_found: the runner answers it)
        deferred = {index for index, _ in self._deferred(step)}
        tasks = [(str(e.index), e.task, program.parents[e.index])
                 for e in self._runner_entries(step)
                 if e.index not in deferred and self._needs_controller(e.task)]
        tasks += [("h%d" % n, h, ()) for n, h in self._native_handlers()
                  if self._needs_controller(h)] \
            if any(e.is_flush for e in self.plan.entries_of(step)) else []
        # A task that reads a controller file names it before the batch
        # (payloads.collect); the name may come from a variable that calls a
        # lookup (a play's or group_vars' ``lookup('env', ...)``), which its
        # own text does not show: its lookups are answered before it too.
        keyed = {key for key, _, _ in tasks}
        tasks += [t for t in self._payload_tasks(step) if t[0] not in keyed]
        if tasks:
            wire["lookups"] = lookups.collect(HostRun(wire, emit=None), tasks,
                                              program.play.basedir, self.ctx.payloads)

    def _needs_controller(self, task: Task) -> bool:
        """:func:`lookups.needs_controller`, worked out once per task for all hosts."""
        known = self._lookup_tasks.get(id(task))
        if known is None or known[0] is not task:
            known = self._lookup_tasks[id(task)] = (task, lookups.needs_controller(task))
        return known[1]

    def _deferred(self, step: Step) -> List[Tuple[int, Task]]:
        """The include_vars of ``step`` whose file the runner picks (``Batch.deferred``;
        not the first task of a call: the controller knows its name then)."""
        if not isinstance(step, Batch):
            return []
        return [(i, self.plan.program.entry(i).task) for i in step.deferred if i > step.start]

    def _late_file(self, connection: str, step: Step, key: str, src: str) -> Dict[str, Any]:
        """A controller file the runner asks for again (``payloads.late_entry``)."""
        task = next((t for k, t, _ in self._payload_tasks(step) if k == key), None)
        if task is None:
            return {"entry": None, "blobs": {}}
        answer = payloads.late_entry(self.ctx.payloads, connection, task, src,
                                     self.plan.program.play.basedir)
        if self.ctx.payloads.streamed:  # (a large file: the runner fetches it)
            self.ctx.connector.serve_files(self.ctx.payloads.streamed)
        return answer

    def _keyed_tasks(self, step: Step) -> List[Tuple[str, Task, Tuple[Block, ...]]]:
        """(file key, task, enclosing blocks) of what the runner runs in ``step``:
        its entries, then the handlers a flush there may run (``h<number>``), as
        the runner keys the files and lookups it is given and asks for."""
        program = self.plan.program
        entries = self._runner_entries(step)
        tasks = [(str(e.index), e.task, program.parents[e.index]) for e in entries]
        if any(e.is_flush for e in entries):
            tasks += [("h%d" % n, h, ()) for n, h in self._native_handlers()]
        return tasks

    def _step_tasks(self, step: Step) -> List[Task]:
        """The tasks the runner runs in ``step``, with the handlers a flush there may run."""
        return [task for _, task, _ in self._keyed_tasks(step)]

    def _late_lookup(self, wire: Dict[str, Any], step: Step, key: str, plugin: str,
                     terms: List[Any], kwargs: Dict[str, Any]) -> Dict[str, Any]:
        """A lookup the runner asks for when its task runs (``lookups.late``)."""
        found = next(((t, b) for k, t, b in self._keyed_tasks(step) if k == key), None)
        if found is None:
            return {"error": "lookup('%s'): no task %s in this batch" % (plugin, key)}
        return lookups.late(HostRun(wire, emit=None), found[0], found[1],
                            self.plan.program.play.basedir, plugin, terms, kwargs,
                            self.ctx.payloads)

    def _payload_tasks(self, step: Step) -> List[Any]:
        """(file key, task, enclosing blocks) of every task that reads controller files."""
        deferred = {str(index) for index, _ in self._deferred(step)}
        return [(key, task, blocks) for key, task, blocks in self._keyed_tasks(step)
                if key not in deferred and payloads.wants_controller_file(task)]


def role_magic(play_roles: Sequence[str], dependencies: Sequence[str]) -> Dict[str, Any]:
    """The role name magic variables (``VariableManager._get_magic_variables``)
    of a play whose ``play.roles`` are named ``play_roles`` (in order, duplicates
    too) and whose roles' dependencies are named ``dependencies``."""
    return {
        # (Ansible's two sets are list(set(...)): an order of no meaning)
        "ansible_role_names": sorted(set(play_roles) | set(dependencies)),
        "ansible_play_role_names": list(play_roles),
        "role_names": list(play_roles),
        "ansible_dependent_role_names": sorted(set(dependencies)),
    }


class _HeldSink(PlaySink):
    """The sink of a step under way, for the calls that run a delegated
    suspension point for the hosts held at it (:meth:`PlayExecutor.run_held`):
    when the step was announced already (another host's result of the task
    came first), its banner and end are the outer replay's."""

    def __init__(self, outer: PlaySink, announced: bool) -> None:  # pylint: disable=super-init-not-called
        self.__dict__["_outer"] = outer
        self.__dict__["_announced"] = announced

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_outer"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.__dict__["_outer"], name, value)

    def step_start(self, key: Any, hosts: Sequence[str], first: Event) -> None:
        if not self.__dict__["_announced"]:
            self.__dict__["_outer"].step_start(key, hosts, first)

    def host_event(self, host: str, event: Event) -> None:
        self.__dict__["_outer"].host_event(host, event)

    def host_left(self, host: str, event: Event) -> None:
        self.__dict__["_outer"].host_left(host, event)

    def step_end(self, key: Any) -> None:
        if not self.__dict__["_announced"]:
            self.__dict__["_outer"].step_end(key)


def _delegate_name(value: Any, host: str) -> str:
    """The host a templated ``delegate_to`` names: ``omit`` (``{{ x | default(omit) }}``) is no
    delegation at all, as Ansible drops an omitted keyword: the task runs on ``host``."""
    return host if value is None or value == OMIT else str(value)


def _connection_vars(name: str, spec: ConnectionSpec) -> Dict[str, Any]:
    """The connection variables a task sees where nothing sets them: what
    TaskExecutor adds from its PlayContext (``PlayContext.update_vars``,
    ``C.MAGIC_VARIABLE_MAPPING``), below every other variable. The login
    password is left out: it never travels to the target as a variable."""
    address = spec.hostname if spec.transport == "ssh" else name
    timeout = int(spec.timeout) if float(spec.timeout).is_integer() else spec.timeout
    pairs: List[Tuple[Tuple[str, ...], Any]] = [
        (("ansible_connection",), spec.transport),
        (("ansible_module_compression",), "ZIP_DEFLATED"),
        (("ansible_shell_executable",), "/bin/sh"),
        (("ansible_ssh_host", "ansible_host"), address),
        (("ansible_ssh_user", "ansible_user"), spec.user),
        (("ansible_ssh_port", "ansible_port"), spec.port),
        (("ansible_ssh_pipelining", "ansible_pipelining"), spec.pipelining),
        (("ansible_ssh_timeout", "ansible_timeout"), timeout),
        (("ansible_ssh_private_key_file", "ansible_private_key_file"), spec.identity_file),
    ]
    return {name: value for names, value in pairs if value is not None for name in names}


def _delegated_vars(name: str, spec: ConnectionSpec) -> Dict[str, Any]:
    """What a delegated task sees of its delegate's connection (as ansible-core sets it)."""
    known = _connection_vars(name, spec)
    out: Dict[str, Any] = {k: known[k] for k in ("ansible_host", "ansible_port", "ansible_user")
                           if k in known}
    out["ansible_delegated_host"] = name
    return out


def _loop_keys(result: Mapping[str, Any]) -> FrozenSet[str]:
    """The loop variables ansible-core records on an item's result."""
    if "ansible_loop_var" not in result:
        return frozenset()
    keys = {"ansible_loop_var", str(result["ansible_loop_var"])}
    if "ansible_index_var" in result:
        keys |= {"ansible_index_var", str(result["ansible_index_var"])}
    if "ansible_loop" in result:
        keys.add("ansible_loop")
    return frozenset(keys)


def item_label(result: Mapping[str, Any]) -> Any:
    """The ``(item=…)`` text of a loop item's result (label, else the loop variable)."""
    if "_ansible_item_label" in result:
        return result["_ansible_item_label"]
    return result.get(result.get("ansible_loop_var", "item"))


def _path_to(tree: Sequence[Any], index: int) -> Optional[List[Tuple[int, str]]]:
    """The blocks enclosing entry ``index``, outermost first, with the part it is in."""
    for node in tree:
        if isinstance(node, Entry):
            if node.index == index:
                return []
            continue
        for phase, part in (("block", node.body), ("rescue", node.rescue), ("always", node.always)):
            inner = _path_to(part, index)
            if inner is not None:
                return [(node.id, phase)] + inner
    return None


class _BlockShape(NamedTuple):
    """What ``mark_failed`` needs of a block: its nesting depth and sections."""
    depth: int
    rescue: bool
    always: bool

    def failed_from(self, phase: str) -> str:
        """The section a failure in ``phase`` sends the host to (or "complete")."""
        if phase == "block" and self.rescue:
            return "rescue"
        if phase in ("block", "rescue") and self.always:
            return "always"
        return "complete"


def _reaches(saved: Any, phase: str, has_rescue: bool) -> bool:
    """Whether a host whose state in a block is ``saved`` (None: it is not in
    it yet) comes to that block's ``phase`` next, as linear's lockstep takes
    it there: the block's tasks done (it failed, and no rescue takes it) lead
    to its always, a failure it holds to its rescue, a rescue to the always."""
    if not isinstance(saved, dict):
        return True
    at, failure = saved.get("phase"), bool(saved.get("failure"))
    if at == phase:
        return not (phase == "block" and failure)
    if phase == "rescue":
        return at == "block" and failure
    if phase == "always":
        return at == "rescue" or (at == "block" and (not failure or not has_rescue))
    return False


def _blocks_of(tree: Sequence[Any]) -> List[NumberedBlock]:
    """Every block of ``tree``, nested ones too."""
    found: List[NumberedBlock] = []
    for node in tree:
        if isinstance(node, NumberedBlock):
            found.append(node)
            for part in (node.body, node.rescue, node.always):
                found.extend(_blocks_of(part))
    return found


def _block_shapes(tree: Sequence[Any], depth: int = 0) -> Dict[int, _BlockShape]:
    """Block id -> its :class:`_BlockShape`, for every block of ``tree``."""
    found: Dict[int, _BlockShape] = {}
    for node in tree:
        if isinstance(node, NumberedBlock):
            found[node.id] = _BlockShape(depth, bool(node.rescue), bool(node.always))
            for part in (node.body, node.rescue, node.always):
                found.update(_block_shapes(part, depth + 1))
    return found


def _notified_numbers(handlers: List[Dict[str, Any]], names: Sequence[Any]) -> Set[int]:
    """The numbers of the (wire) handlers a host's notifications name."""
    out: Set[int] = set()
    for name in names:
        out |= {name} if isinstance(name, int) else set(matching_handlers(handlers, name))
    return out


def _templated(value: Any) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def _set(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in ("", "false", "no", "0", "off", "n")
    return bool(value)
