"""A plan as data (JSON) and as a picture (DOT), for ``ioc-run --plan`` and golden tests.

Pure and deterministic: the same plan (and graph) gives the same text, byte
for byte. File paths under the play's directory are written relative to it,
so the output does not depend on where the playbook lives.

:func:`plan_to_json` returns::

    {
      "play":  {"name": str, "location": "file:line", "hosts": str,
                "serial": <as written, or null>},
      "steps": [
        {"number": 1,                      # 1-based, in run order
         "kind": "batch" | "controller",
         "start": int, "end": int,         # task indices [start, end)
         "reason": str,                    # batch: why it ends; controller: why it is one
         # controller steps only:
         "where": "target" | "delegate" | "controller",
         "once": bool, "throttle": int,    # throttle 0 = no limit
         "tasks": [{"index": int, "name": str, "action": str,
                    "location": "file:line", "implicit": bool}, ...]},
        ...
      ],
      # only when a graph (ioc.planner.graph.build_graph) is given:
      "edges": [{"from": int, "to": int, "vars": [str, ...]}, ...]
    }

The task list of a step is every entry in ``[start, end)``, including an
implicit flush that has no handler to run; an entry that falls in no step at
all (such a flush at the very end) is not listed. ``edges`` are the def-use
edges of the program (writer → reader, the variables that flow), sorted.

This module does not import networkx: graphs are read through
:mod:`ioc.planner.graph`'s functions.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from ioc.planner.program import Entry
from ioc.planner.schedule import ControllerStep, Plan

__all__ = ["plan_graph", "plan_to_json", "plan_to_dot", "relative", "task_label"]


def plan_graph(plan: Plan) -> Any:
    """The def-use graph of ``plan``'s program (a networkx DiGraph, built by graph.py)."""
    from ioc.planner.effects import analyze_program
    from ioc.planner.graph import build_graph
    return build_graph(plan.program, analyze_program(plan.program))


def relative(text: str, basedir: str) -> str:
    """``text`` with every ``basedir/`` prefix of a path removed (pure string work)."""
    base = basedir.rstrip("/\\")
    if not base:
        return text
    for sep in ("/", "\\"):
        text = text.replace(base + sep, "")
    return text


def task_label(entry: Entry) -> str:
    """How a task is named in a plan: its display name; flushes are named as such."""
    if entry.implicit and entry.is_flush:
        return "(flush handlers)"
    return entry.task.display_name


def _task(entry: Entry, basedir: str) -> Dict[str, Any]:
    return {"index": entry.index, "name": task_label(entry), "action": entry.task.action,
            "location": relative(str(entry.task.location), basedir),
            "implicit": entry.implicit}


def _step(plan: Plan, number: int, step: Any, basedir: str) -> Dict[str, Any]:
    out: Dict[str, Any] = {"number": number, "start": step.start, "end": step.end,
                           "reason": relative(step.reason, basedir)}
    if isinstance(step, ControllerStep):
        out.update(kind="controller", where=step.where, once=step.once, throttle=step.throttle)
        if step.once_if is not None:
            out["once_if"] = step.once_if
        if step.per_item:
            out["per_item"] = True
        if step.handlers:
            out["handlers"] = list(step.handlers)
    else:
        out["kind"] = "batch"
    out["tasks"] = [_task(entry, basedir) for entry in plan.entries_of(step)]
    return out


def _edges(graph: Any) -> List[Dict[str, Any]]:
    from ioc.planner.graph import to_json
    return [{"from": e["from"], "to": e["to"], "vars": list(e["vars"])}
            for e in to_json(graph)["edges"]]


def plan_to_json(plan: Plan, graph: Optional[Any] = None) -> Dict[str, Any]:
    """``plan`` as plain JSON-able data (schema in the module docstring)."""
    play = plan.program.play
    basedir = play.basedir
    out: Dict[str, Any] = {
        "play": {"name": play.name, "location": relative(str(play.location), basedir),
                 "hosts": play.hosts, "serial": play.serial},
        "steps": [_step(plan, number, step, basedir)
                  for number, step in enumerate(plan.steps, 1)],
    }
    if graph is not None:
        out["edges"] = _edges(graph)
    return out


def _quote(text: str) -> str:
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def plan_to_dot(plan: Plan, graph: Optional[Any] = None) -> str:
    """``plan`` as one DOT digraph.

    One cluster per step, labelled ``step N: batch|controller (...)`` and its
    reason; task nodes ``n<index>`` labelled ``index name`` over ``file:line``;
    solid edges for data flow labelled with the variables (when ``graph`` is
    given); dashed edges from the last task of each step to the first of the
    next, for the order in which the steps run.
    """
    data = plan_to_json(plan, graph)
    lines = ["digraph %s {" % _quote("PLAY [%s]" % data["play"]["name"]),
             "  label=%s;" % _quote("PLAY [%s] %s" % (data["play"]["name"],
                                                       data["play"]["location"])),
             "  labelloc=t;",
             "  compound=true;",
             "  node [shape=box];"]
    shown = set()
    for step in data["steps"]:
        if step["kind"] == "controller":
            head = "step %d: controller (%s%s%s)" % (
                step["number"], step["where"], ", once" if step["once"] else "",
                ", throttle %d" % step["throttle"] if step["throttle"] else "")
        else:
            head = "step %d: batch %d-%d" % (step["number"], step["start"], step["end"] - 1)
        lines.append("  subgraph cluster_%d {" % step["number"])
        lines.append("    label=%s;" % _quote("%s\n%s" % (head, step["reason"])))
        if step["kind"] == "controller":
            lines.append("    style=filled; fillcolor=lightgrey;")
        for task in step["tasks"]:
            shown.add(task["index"])
            style = ", style=dashed" if task["implicit"] else ""
            lines.append("    n%d [label=%s%s];" % (
                task["index"], _quote("%d %s\n%s" % (task["index"], task["name"],
                                                     task["location"])), style))
        lines.append("  }")
    steps = data["steps"]
    for before, after in zip(steps, steps[1:]):
        lines.append("  n%d -> n%d [style=dashed, ltail=cluster_%d, lhead=cluster_%d];" % (
            before["tasks"][-1]["index"], after["tasks"][0]["index"],
            before["number"], after["number"]))
    for edge in data.get("edges", ()):
        if edge["from"] in shown and edge["to"] in shown:
            lines.append("  n%d -> n%d [label=%s];" % (
                edge["from"], edge["to"], _quote(", ".join(edge["vars"]))))
    lines.append("}")
    return "\n".join(lines) + "\n"
