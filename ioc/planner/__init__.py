"""The planner: a play in, an ordered list of steps out (pure, deterministic)."""
from ioc.planner.program import Entry, Program, compile_play, wire_tree
from ioc.planner.schedule import Batch, ControllerStep, Plan, Where, schedule
from ioc.planner.support import Capabilities, check_program

__all__ = ["Batch", "Capabilities", "ControllerStep", "Where", "Entry", "Plan", "Program", "compile_play",
           "plan_play", "schedule", "wire_tree", "explain"]


def plan_play(play, caps, per_task=False):
    """Compile, check and schedule ``play``; raises PlanError before any host is touched."""
    program = compile_play(play)
    check_program(program, caps)
    return schedule(program, per_task=per_task)


def explain(plan):
    """The plan as text: each step with its tasks and why it ends there."""
    lines = ["PLAY [%s] (%s)" % (plan.program.play.name, plan.program.play.location)]
    for number, step in enumerate(plan.steps, 1):
        entries = plan.entries_of(step)
        if isinstance(step, ControllerStep):
            lines.append("  step %d: controller step (%s%s): %s"
                         % (number, step.where, ", once" if step.once else "", step.reason))
        else:
            lines.append("  step %d: batch of %d task(s), %d-%d; ends: %s"
                         % (number, len(entries), step.start, step.end - 1, step.reason))
        for entry in entries:
            lines.append("    %3d  %-50s %s" % (entry.index, _label(entry), entry.task.location))
    return "\n".join(lines)


def _label(entry):
    if entry.implicit and entry.is_flush:
        return "(flush handlers)"
    return entry.task.display_name
