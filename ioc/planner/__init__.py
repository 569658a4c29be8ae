"""The planner: a play in, an ordered list of steps out (pure, deterministic)."""
import dataclasses

from ioc.planner.closure import other_hostvars, step_reads
from ioc.planner.dataflow import (check_rule, data_rule, decidable_on_target, delegate_rule,
                                  deferred_rule)
from ioc.planner.effects import analyze_program
from ioc.planner.program import Entry, Program, compile_play, wire_tree
from ioc.planner.schedule import Batch, ControllerStep, Plan, Where, schedule
from ioc.planner.support import Capabilities, check_handlers, check_program
from ioc.planner.tags import TagFilter

__all__ = ["TagFilter", "Batch", "Capabilities", "ControllerStep", "Where", "Entry", "Plan", "Program", "compile_play",
           "plan_play", "schedule", "wire_tree", "explain"]


def plan_play(play, caps, per_task=False, tags=None, fallback=None, suspendable=None,
              template_files=None):
    """Compile, check and schedule ``play``; raises PlanError before any host is touched.

    ``tags`` (a :class:`TagFilter`) leaves out the tasks ``--tags``/``--skip-tags`` filter.
    ``fallback`` (``Task -> reason or None``) is given by a caller that can run
    single tasks through Ansible (the mitogen_batch bridge): the tasks it names,
    and those the capability check refuses, become ``Where.ANSIBLE`` steps
    instead of a PlanError; so do handlers it names (or the check refuses):
    every flush that can reach one becomes a ``Where.ANSIBLE`` controller
    step whose ``handlers`` are the numbers of those handlers.
    ``suspendable`` (``Task -> bool``, with ``fallback``) names the tasks of
    those whose only foreign part is their action: one with a ``when`` the
    runner can decide stays inside its batch as a suspension point
    (``Batch.suspend``), so a host that skips it goes on in the same call.
    A task that is a controller step only because of its ``delegate_to``
    stays inside its batch the same way when the runner can decide its
    ``when`` (``dataflow.delegate_rule``, ``Batch.delegated``): with or
    without ``fallback``, the controller runs it for the hosts that reach it.
    ``template_files`` (``(task, name) -> text``, ``effects.TemplateFiles``)
    reads the template files tasks render (a ``template`` task's, a
    ``template`` lookup's), which the plan's data flow takes as the task's
    reads: a file that reads what another host wrote earlier in the batch
    cuts it, and one that a lookup renders is checked like its arguments.
    """
    program = compile_play(play, tags)
    foreign = check_program(program, caps, fallback)
    handlers = check_handlers(program, caps, fallback)
    if handlers:
        program = dataclasses.replace(program, foreign_handlers=tuple(sorted(handlers.items())))
    effects = analyze_program(program, template_files)
    suspend = frozenset(
        index for index in foreign
        if suspendable is not None and suspendable(program.entry(index).task)
        and decidable_on_target(program.entry(index).task, effects[index]))
    plan = schedule(program, per_task=per_task, data_rule=data_rule(program, effects),
                    foreign=foreign, suspend=suspend,
                    check_rule=check_rule(program, effects),
                    deferred_rule=deferred_rule(program, effects),
                    delegate_rule=delegate_rule(program, effects))
    reads = tuple(step_reads(program, effects, s.start, s.end) for s in plan.steps)
    others = tuple(other_hostvars(program, effects, s.start, s.end) for s in plan.steps)
    return dataclasses.replace(plan, reads=reads, hostvars=others)


def explain(plan):
    """The plan as text: each step with its tasks and why it ends there.

    Every cut names its construct and the task (``file:line``, relative to the
    play's directory) as the planner recorded it, and the rule of
    linear-semantics §9 behind it on a ``rule:`` line.
    """
    from ioc.planner.render import relative, task_label
    play = plan.program.play
    base = play.basedir
    lines = ["PLAY [%s] (%s)" % (play.name, relative(str(play.location), base))]
    if play.serial not in (None, "", 0, [], ()):
        lines.append("  serial: %s: every serial batch of hosts runs these same steps "
                     "(no step spans two serial batches)" % (play.serial,))
    for number, step in enumerate(plan.steps, 1):
        entries = plan.entries_of(step)
        reason = relative(step.reason, base)
        if isinstance(step, ControllerStep):
            lines.append("  step %d: controller step (%s%s%s%s): %s"
                         % (number, step.where, ", once" if step.once else "",
                            ", throttle %d" % step.throttle if step.throttle else "",
                            ", a delegate per loop item" if step.per_item else "", reason))
        else:
            lines.append("  step %d: batch of %d task(s), %d-%d; ends: %s"
                         % (number, len(entries), step.start, step.end - 1, reason))
            for index, names in step.checks:
                lines.append("          checks before %d that nothing wrote %s (else it stops "
                             "there and the controller prepares it afresh)"
                             % (index, ", ".join(names)))
            if step.deferred:
                lines.append("          include_vars files chosen on the target: %s (every file "
                             "their name could be is shipped)"
                             % ", ".join(str(i) for i in step.deferred))
            for index, why in step.suspend:
                lines.append("          suspends at %d: %s; a host its `when` skips goes on, "
                             "one that reaches it %s, then runs the rest"
                             % (index, relative(why, base),
                                "(or that another host delegates it to) stops, the controller "
                                "runs it on its delegate" if index in step.delegated
                                else "has Ansible run it"))
        rule = _rule(step.reason) if isinstance(step, ControllerStep) or not \
            step.reason.startswith("before ") else None
        if rule:
            lines.append("          rule: %s" % rule)
        for entry in entries:
            lines.append("    %3d  %-50s %s" % (entry.index, task_label(entry),
                                                 relative(str(entry.task.location), base)))
        for number in getattr(step, "handlers", ()):
            handler = plan.program.handlers[number]
            lines.append("     h%d  %-50s %s" % (number, "handler %s: through Ansible"
                                                 % handler.display_name,
                                                 relative(str(handler.location), base)))
    return "\n".join(lines)


#: Cut reasons (by their leading construct) → the rule of linear-semantics §9.
_RULES = (
    ("run_once handler", "the handler runs on the first notified host only, and the "
                         "notification is cleared for every host (L5.8)"),
    ("run_once", "only the first active host runs it and its result is copied to every "
                 "host; which host is first depends on the others (L7.1)"),
    ("delegate_to", "it runs on another host's connection: side effects across hosts "
                    "must keep Ansible's order"),
    ("add_host", "it changes the inventory for every host; runs once, bypassing the host "
                 "loop (L7.2)"),
    ("pause", "it bypasses the host loop: runs once for all hosts (L7.5)"),
    ("group_by runs", "it changes the groups in the controller"),
    ("group_by", "later tasks see groups as of the step start (L6.6)"),
    ("meta: reset_connection", "the connection is closed; the next task needs a new one"),
    ("meta:", "it runs once, with the first host's when, and acts on all hosts (L7.10)"),
    ("throttle", "at most that many hosts run it at once: mutual exclusion across hosts"),
    ("any_errors_fatal", "if any host fails, every host stops (L4.5)"),
    ("max_fail_percentage", "the play stops once too many hosts have failed (L4.6)"),
    ("ignore_unreachable", "an unreachable host goes on; its next task reconnects (L1.8)"),
    ("delegate_facts", "it writes another host's variables (L7.3)"),
    ("become identity", "a runner cannot change the user it runs as: each become identity "
                        "is a runner of its own, and a batch runs in one"),
    ("dynamic include", "the controller loads the file each host included (per item) and "
                        "splices its tasks in right after it, group after group (L7.8)"),
    ("flush runs a handler through Ansible", "handlers run in definition order, each on the "
     "hosts notified of it (L5.4): the runner runs them natively up to that handler, "
     "Ansible's own machinery runs it for its notified hosts, then the runner goes on"),
    ("runs through Ansible", "ioc cannot run it natively: Ansible's own task machinery runs "
                             "it for the hosts that reach it, between the batches around it"),
)


def _rule(reason):
    for prefix, rule in _RULES:
        if reason.startswith(prefix):
            return rule
    return None
