"""Cutting a compiled play into steps: runner batches and controller steps.

The linear strategy only *synchronises* hosts; on one host it runs tasks
strictly in order. So consecutive tasks stay in one batch unless something
makes one host's behaviour depend on other hosts or on the controller
(linear-semantics §9). Each such construct is a *barrier*:

* a **controller step** (``ControllerStep``) runs one task under the
  controller's direction: on the first host only (``run_once``, bypass-host
  actions), on another host's connection (``delegate_to``), in the
  controller itself (``add_host``, ``group_by`` with ``run_once``,
  play-wide ``meta``), or with bounded concurrency (``throttle``);
* a **cut after** ends the batch after a task whose outcome the controller
  must see before anyone goes on (``any_errors_fatal``, ``max_fail_percentage``,
  ``ignore_unreachable``, ``reset_connection``);
* a **cut before** starts a new batch at a task that needs values the
  controller only has at a step boundary (lookups and controller files whose
  arguments are written inside the batch, reads of other hosts' runtime data)
  or that runs as another identity (``become``): a runner cannot change the
  user it runs as, so each identity is a runner of its own (see
  ``controller/connection.py``) and a batch runs in one of them.

A task the caller says ioc cannot run natively (``foreign``: the Ansible
bridge's modules without a native implementation, filters the runner lacks…)
is a controller step of its own, ``Where.ANSIBLE``: the caller runs it through
Ansible's own machinery between the batches before and after it. So is a
flush that can reach such a handler (``Program.foreign_handlers``): its
``handlers`` name them, and the caller runs the flush's handlers in order,
natively up to one of them, that one through Ansible, then on (L5.4).

Every cut records its reason; ``explain()`` prints them.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import AbstractSet, Callable, Dict, FrozenSet, List, Mapping, Optional, Set, Tuple, Union

from ioc.model import Play, Task
from ioc.planner.effects import _handler_topics, is_template, notifiable
from ioc.planner.program import Entry, Program


@dataclass(frozen=True)
class Batch:
    """Tasks ``[start, end)`` of the program, run per host by the runner."""

    start: int
    end: int
    #: Why the batch ends where it does, for ``--plan``.
    reason: str
    #: Suspension points: (index, why) of tasks run through Ansible that stay
    #: inside the batch. The runner decides whether a host reaches one (its
    #: ``when``, per loop item); a host that does not goes on in the same
    #: call; one that does stops there, the controller has Ansible run the
    #: task for it, then runs the rest of the batch for it.
    suspend: Tuple[Tuple[int, str], ...] = ()
    #: (entry, names): before the entry, the runner checks that nothing it ran
    #: wrote any of the names the controller read to prepare it (its files'
    #: names, its identity...); a host that did stops there, and the
    #: controller prepares the task afresh and runs the rest of its batch.
    checks: Tuple[Tuple[int, Tuple[str, ...]], ...] = ()
    #: ``include_vars`` entries whose file name reads a value written earlier
    #: in the batch: the controller ships every file the name could be, the
    #: runner picks (see ``dataflow.deferrable``).
    deferred: Tuple[int, ...] = ()
    #: The suspension points that exist only because of their ``delegate_to``
    #: (the rest run through Ansible): the controller runs such a task for
    #: the hosts that stop there as the ``Where.DELEGATE`` step it would
    #: otherwise be (:meth:`delegate_step`). A host another host delegates
    #: it to stops there too, so the task runs on it before its next task.
    delegated: Tuple[int, ...] = ()

    @property
    def suspend_at(self) -> FrozenSet[int]:
        return frozenset(index for index, _ in self.suspend)

    def delegate_step(self, index: int) -> Optional["ControllerStep"]:
        """The controller step a delegated suspension point stands for (None:
        ``index`` is not one: Ansible runs it)."""
        if index not in self.delegated:
            return None
        why = next(w for i, w in self.suspend if i == index)
        return ControllerStep(index, Where.DELEGATE, False, why)


class Where:
    """Where a controller step runs the task."""

    TARGET = "target"        #: on the host's own connection
    DELEGATE = "delegate"    #: on the connection of the host named by delegate_to
    CONTROLLER = "controller"  #: inside the controller process
    ANSIBLE = "ansible"      #: through Ansible's own task machinery (mitogen_batch)


@dataclass(frozen=True)
class ControllerStep:
    """One task run under the controller's direction, between batches."""

    index: int
    where: str
    #: Only the first active host runs it; results are copied to all (L7.1–L7.2).
    once: bool
    reason: str
    #: Hosts at most in flight at once (``throttle``); 0 means no limit.
    throttle: int = 0
    #: A templated ``run_once``: ``once`` holds only if it is true for the
    #: first active host (the linear strategy templates it with that host's
    #: variables); otherwise every host runs the task.
    once_if: Optional[str] = None
    #: ``delegate_to`` names the loop item: each item runs on its own delegate,
    #: one call per item, in item order (the controller drives the loop).
    per_item: bool = False
    #: A flush (``Where.ANSIBLE``) that can reach handlers ioc does not run
    #: natively: their numbers (every such handler of the play, so whatever a
    #: host is notified of at run time, the runner stops before it).
    handlers: Tuple[int, ...] = ()

    @property
    def start(self) -> int:
        return self.index

    @property
    def end(self) -> int:
        return self.index + 1


Step = Union[Batch, ControllerStep]

#: Actions that never touch a target: the linear strategy runs them itself.
CONTROLLER_ACTIONS = frozenset({"add_host", "group_by", "pause"})
#: "Bypass host loop" actions: run once, on the first host, like run_once (L7.2).
BYPASS_ACTIONS = frozenset({"add_host", "pause"})
#: meta actions run once for the play, with the first host's `when` (L7.10).
#: Actions the linear strategy runs on the controller: they cannot be unreachable,
#: so with ``ignore_errors`` they cannot trigger any_errors_fatal.
NEVER_UNREACHABLE = frozenset({"debug", "set_fact", "assert", "fail", "meta",
                               "validate_argument_spec"})
PLAY_META = frozenset({"end_play", "end_batch", "clear_host_errors", "clear_facts",
                       "refresh_inventory"})


@dataclass(frozen=True)
class Plan:
    program: Program
    steps: Tuple[Step, ...]
    #: Per step, the variable names its tasks can read (None: all of them).
    reads: Tuple[Optional[FrozenSet[str]], ...] = ()
    #: Per step, the attributes read on other hosts' hostvars (None: all).
    hostvars: Tuple[Optional[FrozenSet[str]], ...] = ()

    def reads_of(self, step: Step) -> Optional[FrozenSet[str]]:
        return self.reads[self.steps.index(step)] if self.reads else None

    def entries_of(self, step: Step) -> Tuple[Entry, ...]:
        return self.program.entries[step.start:step.end]


@dataclass(frozen=True)
class Cut:
    """What one entry forces: a controller step, or a cut before/after it."""

    step: Optional[ControllerStep] = None
    before: Optional[str] = None
    after: Optional[str] = None


#: Extra cut rules from data-flow analysis: (entry, batch start) -> reason or None.
DataRule = Callable[[Entry, int], Optional[str]]
#: What the runner checks was not written before an entry (entry, batch start).
CheckRule = Callable[[Entry, int], FrozenSet[str]]
#: Whether the runner resolves the controller file an entry names (entry, batch start).
DeferredRule = Callable[[Entry, int], bool]


def schedule(program: Program, per_task: bool = False,
             data_rule: Optional[DataRule] = None,
             foreign: Optional[Mapping[int, str]] = None,
             suspend: AbstractSet[int] = frozenset(),
             check_rule: Optional[CheckRule] = None,
             deferred_rule: Optional[DeferredRule] = None,
             delegate_rule: Optional[DeferredRule] = None) -> Plan:
    """The ordered steps of ``program``; pure and deterministic.

    ``foreign`` maps the indices of tasks ioc does not run natively to the
    reason: each becomes a ``Where.ANSIBLE`` step, cut before and after,
    unless it is in ``suspend`` (its ``when`` can be decided by the runner)
    and nothing else about it needs a cut: then it stays in its batch as a
    suspension point (``Batch.suspend``). So does a task that would be a
    ``Where.DELEGATE`` controller step only because of its ``delegate_to``
    when ``delegate_rule`` (entry, batch start) allows it
    (``dataflow.delegate_rule``): a suspension point in ``Batch.delegated``.
    """
    steps: List[Step] = []
    start: Optional[int] = None
    last = -1
    #: The identity of the open batch: its first entry that connects decides it.
    identity: Optional[Tuple[object, ...]] = None
    identity_at: Optional[Task] = None
    #: The open batch's suspension points and identity checks.
    points: List[Tuple[int, str]] = []
    checks: List[Tuple[int, Tuple[str, ...]]] = []
    deferred: List[int] = []
    delegated: List[int] = []

    def close(end: int, reason: str) -> None:
        nonlocal start, identity, identity_at, points, checks, deferred, delegated
        if start is not None and end > start:
            steps.append(Batch(start, end, reason,
                               tuple(p for p in points if start <= p[0] < end),
                               tuple(c for c in checks if start <= c[0] < end),
                               tuple(d for d in deferred if start <= d < end),
                               tuple(d for d in delegated if start <= d < end)))
        start = None
        identity = identity_at = None
        points, checks, deferred, delegated = [], [], [], []

    reach = flush_reach(program) if program.foreign_handlers else {}
    known = notifiable(program.handlers)
    for entry in program.entries:
        if _skippable_flush(program, entry):
            continue
        last = entry.index
        why = (foreign or {}).get(entry.index)
        cut = classify(entry, program.play, why)
        missing = _missing_handler(program, entry, known)
        if why and entry.index in suspend and not per_task and missing is None \
                and entry.index not in reach \
                and classify(entry, program.play) == Cut():
            reason = data_rule(entry, start) if data_rule and start is not None else None
            if reason:
                close(entry.index, reason)
            if start is None:
                start = entry.index
            # (Ansible runs it as whoever it says: it takes no part in the batch's identity)
            points.append((entry.index, "runs through Ansible: %s: task %s (%s)"
                           % (why, entry.task.display_name, entry.task.location)))
            continue
        if missing is not None and cut.step is None and not cut.after:
            cut = dataclasses.replace(cut, after=(
                "notify: no handler has or listens to %r: a changed result ends the run "
                "there, so no host may run past it: %s (%s)"
                % (missing, entry.task.display_name, entry.task.location)))
        if entry.index in reach:
            cut = Cut(step=_foreign_flush(program, entry, reach[entry.index]))
        if _plain_delegate(cut) and not per_task and missing is None and delegate_rule is not None \
                and classify(entry, program.play, delegate=False) == Cut():
            reason = data_rule(entry, start) if data_rule and start is not None else None
            if reason:
                close(entry.index, reason)
            if delegate_rule(entry, entry.index if start is None else start):
                if start is None:
                    start = entry.index
                elif check_rule is not None:
                    names = check_rule(entry, start)
                    if names:
                        checks.append((entry.index, tuple(sorted(names))))
                # (it runs as its delegate step would: no part in the batch's identity)
                assert cut.step is not None
                points.append((entry.index, cut.step.reason))
                delegated.append(entry.index)
                continue
        if cut.step is not None:
            close(entry.index, "before %s" % cut.step.reason)
            steps.append(cut.step)
            continue
        reason = cut.before or (data_rule(entry, start) if data_rule and start is not None else None)
        key = identity_key(program, entry)
        if not reason and key is not None and identity is not None and key != identity:
            reason = "become identity changes (%s -> %s): task %s (%s)" % (
                identity_label(identity_at), identity_label(identity_task(program, entry)),
                entry.task.display_name, entry.task.location)
        if reason:
            close(entry.index, reason)
        if start is None:
            start = entry.index
        else:
            names = check_rule(entry, start) if check_rule is not None else frozenset()
            if names:
                checks.append((entry.index, tuple(sorted(names))))
            if deferred_rule is not None and deferred_rule(entry, start):
                deferred.append(entry.index)
        if key is not None and identity is None:
            identity, identity_at = key, identity_task(program, entry)
        if per_task:
            close(entry.index + 1, "--per-task")
        elif cut.after:
            close(entry.index + 1, cut.after)
    close(last + 1, "end of play")
    return Plan(program=program, steps=tuple(steps))


#: Actions the linear strategy runs without a connection to the host: they
#: run under whatever identity their batch has.
IDENTITY_NEUTRAL = frozenset({"debug", "set_fact", "assert", "fail", "meta", "include_vars",
                              "include_tasks", "include_role", "add_host", "group_by", "pause",
                              "validate_argument_spec"})
BECOME_KEYWORDS = ("become", "become_user", "become_method", "become_flags", "become_exe")


def identity_task(program: Program, entry: Entry) -> Optional[Task]:
    """The task whose ``become`` settings decide what ``entry`` runs as.

    None when it never connects (``debug``, ``set_fact``...). A handler
    flush runs as its handlers (``check_program`` refuses handlers that
    would need different identities).
    """
    if entry.is_flush:
        # A handler that runs through Ansible is not run by the flush's runner.
        foreign = program.foreign_handler_numbers
        handlers = [h for n, h in enumerate(program.handlers)
                    if h.action not in IDENTITY_NEUTRAL and n not in foreign]
        return handlers[0] if handlers else None
    return None if entry.task.action in IDENTITY_NEUTRAL else entry.task


def identity_key(program: Program, entry: Entry) -> Optional[Tuple[object, ...]]:
    """What decides ``entry``'s identity on every host, for comparison (None: any)."""
    task = identity_task(program, entry)
    if task is None:
        return None
    blocks = () if entry.is_flush else program.parents[entry.index]
    return task_identity_key(task, blocks)


def task_identity_key(task: Task, blocks: Tuple[object, ...] = ()) -> Tuple[object, ...]:
    """The ``become`` keywords and ``ansible_become*`` vars in scope of ``task``.

    Equal keys mean the same identity on any one host (inventory variables
    are the same for all of a host's tasks). A templated keyword may differ
    between tasks through their ``vars``, so those are part of the key then.
    """
    scoped: dict = {}
    for block in blocks:
        scoped.update({k: v for k, v in getattr(block, "vars", {}).items()
                       if k.startswith("ansible_become")})
    scoped.update({k: v for k, v in task.vars.items() if k.startswith("ansible_become")})
    words = tuple(getattr(task, k) for k in BECOME_KEYWORDS)
    if not _set(task.become) and not scoped:
        return ("connection user",)
    templated = any("{{" in str(w) for w in words + tuple(scoped.values()))
    return tuple(repr(w) for w in words) + (repr(sorted(scoped.items())),) + (
        (repr(sorted(task.vars.items())),) if templated else ())


def identity_label(task: Optional[Task]) -> str:
    if task is None or not _set(task.become) and not any(
            k.startswith("ansible_become") for k in task.vars):
        return "the connection's user"
    return "become %s:%s" % (task.become_method or "sudo", task.become_user or "root")


def flush_reach(program: Program) -> Dict[int, Tuple[int, ...]]:
    """Per flush that can reach a handler in ``program.foreign_handlers``, those handlers.

    What a flush runs is known only at run time, so this over-approximates
    (L5.2-L5.6): a flush can run every handler notified (templated topics
    name any handler) by a task since the previous flush every host runs
    (an implicit one, or an explicit one outside any block, without ``when``
    and without ``force_handlers``: others may be skipped), handler chains
    followed, plus the handlers a handler of an earlier flush notified (they
    wait for the next flush, L5.6).
    """
    handlers = program.handlers
    foreign = program.foreign_handler_numbers
    topics = [_handler_topics(h) for h in handlers]

    def matching(topic: str) -> Set[int]:
        if is_template(topic):
            return set(range(len(handlers)))
        return {n for n, names in enumerate(topics) if topic in names}

    out: Dict[int, Tuple[int, ...]] = {}
    pending: Set[int] = set()   # notified by tasks since the last implicit flush
    deferred: Set[int] = set()  # notified by handlers of earlier flushes
    for entry in program.entries:
        if not entry.is_flush:
            for topic in entry.task.notify:
                pending |= matching(topic)
            continue
        reached = set(pending | deferred)
        todo = list(reached)
        while todo:
            for topic in handlers[todo.pop()].notify:
                for number in matching(topic) - reached:
                    reached.add(number)
                    todo.append(number)
        # A handler notifying one defined before it (or itself) defers it (L5.6).
        chained = {m for n in reached for topic in handlers[n].notify for m in matching(topic)
                   if m <= n}
        if reached & foreign:
            out[entry.index] = tuple(sorted(reached & foreign))
        if entry.implicit or (not entry.task.when and not program.parents[entry.index]
                              and not _set(program.play.force_handlers)):
            # Every host still in the play runs this flush (a failed host's
            # notifications are dropped, L5.7): nothing before it is pending.
            pending, deferred = set(), chained
        else:
            deferred |= chained
    return out


def _foreign_flush(program: Program, entry: Entry, reached: Tuple[int, ...]) -> ControllerStep:
    """A flush that can reach handlers ioc does not run natively (they run through Ansible)."""
    reasons = dict(program.foreign_handlers)
    whys = "; ".join("handler %s (%s): %s" % (program.handlers[n].display_name,
                                             program.handlers[n].location, reasons[n])
                     for n in reached)
    where = "%s (%s)" % ("(flush handlers)" if entry.implicit else entry.task.display_name,
                         entry.task.location)
    return ControllerStep(entry.index, Where.ANSIBLE, False,
                          "flush runs a handler through Ansible: %s; its other handlers run "
                          "natively: %s" % (whys, where),
                          handlers=tuple(sorted(program.foreign_handler_numbers)))


def _missing_handler(program: Program, entry: Entry,
                     known: Optional[FrozenSet[str]]) -> Optional[str]:
    """A name the entry's task (a flush: its handlers) notifies, not templated,
    that no handler of the play answers to (None: none, or ``known`` is None:
    the handlers' names are known at run time only)."""
    if known is None:
        return None
    for task in program.handlers if entry.is_flush else (entry.task,):
        if task.changed_when is not None and any(c is False for c in task.changed_when):
            continue  # never changed: it looks no name up
        for name in task.notify:
            if not is_template(name) and name not in known:
                return name
    return None


def _skippable_flush(program: Program, entry: Entry) -> bool:
    """An implicit flush with no handler in the play can do nothing."""
    return entry.implicit and entry.is_flush and not program.handlers


def _plain_delegate(cut: Cut) -> bool:
    """Whether ``cut`` is a controller step only because of a ``delegate_to``
    (not once, not a delegate per loop item, not throttled)."""
    step = cut.step
    return step is not None and step.where == Where.DELEGATE and not step.once \
        and step.once_if is None and not step.per_item and not step.throttle \
        and not step.handlers and cut.before is None and cut.after is None


def classify(entry: Entry, play: Play, foreign: Optional[str] = None,
             delegate: bool = True) -> Cut:
    """The barrier rules of linear-semantics §9 that follow from one task.

    ``foreign`` (the reason ioc cannot run the task natively) makes it a step
    run through Ansible: once when Ansible runs it once (``run_once``, an
    action that bypasses the host loop). ``delegate=False``: the rules as if
    the task had no ``delegate_to`` (what else about it needs a cut).
    """
    task = entry.task
    where = "task %s (%s)" % (task.display_name, task.location)
    if foreign and not entry.implicit:
        once = _set(task.run_once) and not _templated(task.run_once)
        return Cut(step=ControllerStep(entry.index, Where.ANSIBLE,
                                       once or task.action in BYPASS_ACTIONS,
                                       "runs through Ansible: %s: %s" % (foreign, where)))
    if entry.is_flush and any(_set(h.run_once) for h in play.handlers):
        cut = _implicit_cut(entry, play, where)
        return dataclasses.replace(cut, before=(
            "run_once handler: a flush chooses the first notified host when it starts, so "
            "every host's notifications must be in: %s" % where))
    if entry.implicit:
        return _implicit_cut(entry, play, where)
    if entry.is_flush:
        return _implicit_cut(entry, play, where)  # (its handlers can fail as an implicit one's)
    if task.action == "meta":
        what = task.args.get("_raw_params")
        if what in PLAY_META:
            return Cut(step=ControllerStep(entry.index, Where.CONTROLLER, True,
                                           "meta: %s acts on the whole play: %s" % (what, where)))
        if what == "reset_connection":
            return Cut(after="meta: reset_connection ends the connection: %s" % where)
        return Cut()
    if task.include_scope is not None:
        return Cut(after="dynamic include: its tasks are known once it has run: %s" % where)
    if task.action in CONTROLLER_ACTIONS:
        once = task.action in BYPASS_ACTIONS or (_set(task.run_once)
                                                  and not _templated(task.run_once))
        if task.action == "group_by" and not once:
            # Batchable (§9): the controller applies it as its result arrives.
            # A later reader of groups/group_names/hostvars is cut before by
            # the data-flow rule (they see the groups as of its step start).
            return Cut()
        return Cut(step=ControllerStep(entry.index, Where.CONTROLLER, once,
                                       "%s runs on the controller: %s" % (task.action, where)))
    delegated = delegate and _delegates(task)
    if _templated(task.run_once):
        return Cut(step=ControllerStep(entry.index, Where.DELEGATE if delegated else Where.TARGET,
                                       True, "run_once %s: %s" % (task.run_once, where),
                                       once_if=task.run_once,
                                       per_item=delegated and _per_item(task)))
    if _set(task.run_once):
        return Cut(step=ControllerStep(entry.index, Where.DELEGATE if delegated else Where.TARGET,
                                       True, "run_once: %s" % where,
                                       per_item=delegated and _per_item(task)))
    if delegated:
        return Cut(step=ControllerStep(entry.index, Where.DELEGATE, False,
                                       "delegate_to %s: %s" % (task.delegate_to, where),
                                       per_item=_per_item(task)))
    if task.throttle not in (None, 0, "0"):
        return Cut(step=ControllerStep(entry.index, Where.TARGET, False,
                                       "throttle %s: %s" % (task.throttle, where),
                                       throttle=int(task.throttle)))
    if _set(task.any_errors_fatal) and not (_set(task.ignore_errors) and task.action in NEVER_UNREACHABLE):
        return Cut(after="any_errors_fatal: every host's next task depends on this one: %s" % where)
    if _percentage(play.max_fail_percentage) and not _set(task.ignore_errors):
        return Cut(after="max_fail_percentage: failures are counted after each task: %s" % where)
    if _set(task.ignore_unreachable):
        # Its own batch: an unreachable host is then unreachable at exactly this
        # task, and tries a new connection for the next one (L1.8).
        return Cut(before="before ignore_unreachable, which runs as a batch of its own so an "
                          "unreachable host is unreachable at exactly this task: %s" % where,
                   after="ignore_unreachable: the next task needs a new connection: %s" % where)
    if _set(task.delegate_facts):
        return Cut(after="delegate_facts writes another host's facts: %s" % where)
    return Cut()


def _implicit_cut(entry: Entry, play: Play, where: str) -> Cut:
    """Fact gathering and handler flushes (implicit or ``meta: flush_handlers``)
    can fail too: handlers inherit the play's keywords, or have their own."""
    if entry.is_flush and not play.handlers:
        return Cut()
    if _set(play.any_errors_fatal) or (entry.is_flush and handlers_fatal(play)):
        return Cut(after="any_errors_fatal: every host's next task depends on this one: %s" % where)
    if _percentage(play.max_fail_percentage):
        return Cut(after="max_fail_percentage: failures are counted after each task: %s" % where)
    return Cut()


def handlers_fatal(play: Play) -> bool:
    """Whether a handler's failure in a flush ends the play for every host
    (L4.5): linear checks each handler's own any_errors_fatal, the play's
    unless the handler sets it; a flush counts any handler's."""
    return _set(play.any_errors_fatal) or any(
        _set(h.any_errors_fatal) and not _set(h.ignore_errors) for h in play.handlers)


def _delegates(task: Task) -> bool:
    target = task.delegate_to
    if target is None:
        return False
    return target.replace(" ", "") not in ("{{inventory_hostname}}",)


def _per_item(task: Task) -> bool:
    """Whether ``delegate_to`` reads the loop variable (a delegate per item)."""
    if task.loop is None or task.delegate_to is None:
        return False
    loop_var = (task.loop_control or {}).get("loop_var", "item")
    return re.search(r"\b%s\b" % re.escape(str(loop_var)), str(task.delegate_to)) is not None


def _templated(value: object) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def _set(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in ("", "false", "no", "0", "off", "n")
    return bool(value)


def _percentage(value: object) -> bool:
    if value in (None, ""):
        return False
    try:
        return float(value) < 100  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return True


