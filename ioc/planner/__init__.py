"""The planner: a play in, an ordered list of steps out (pure, deterministic)."""
from ioc.planner.program import Entry, Program, compile_play, wire_tree
from ioc.planner.schedule import Batch, Plan, schedule
from ioc.planner.support import Capabilities, check_program

__all__ = ["Batch", "Capabilities", "Entry", "Plan", "Program", "compile_play",
           "plan_play", "schedule", "wire_tree", "explain"]


def plan_play(play, caps, per_task=False):
    """Compile, check and schedule ``play``; raises PlanError before any host is touched."""
    program = compile_play(play)
    check_program(program, caps)
    return schedule(program, per_task=per_task)


def explain(plan):
    """The plan as text: each step with its tasks and why it ends there."""
    lines = ["PLAY [%s] (%s)" % (plan.program.play.name, plan.program.play.location)]
    for number, batch in enumerate(plan.steps, 1):
        entries = plan.entries_of(batch)
        lines.append("  batch %d: tasks %d-%d, %d task(s); cut: %s"
                     % (number, batch.start, batch.end - 1, len(entries), batch.reason))
        for entry in entries:
            label = entry.task.display_name if entry.task.name or entry.implicit else entry.task.action
            if entry.implicit and entry.is_flush:
                label = "(flush handlers)"
            lines.append("    %3d  %-50s %s" % (entry.index, label, entry.task.location))
    return "\n".join(lines)
