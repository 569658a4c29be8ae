"""The def-use graph of a program: which entry's writes each entry reads.

One node per entry index (attributes ``name``, ``action``, ``location``,
``writes``); an edge ``writer → reader`` labelled ``vars`` (a sorted list)
for every variable the reader reads that an earlier entry writes. Like a
def-use chain, the *last* earlier writer of a name wins; writers that only
*may* write it (``include_vars``, includes, set_fact with templated keys:
:data:`~ioc.planner.effects.WILDCARDS`) are linked too but do not stop the
search for the definite one. Fact gathering defines ``ansible_*`` and
``ansible_facts``; ``add_host``/``group_by`` define ``groups`` and
``group_names``. A flush counts as writing what any handler writes. Reads
include those made through lazily templated definitions (task, block and play
vars): with ``vars: {d: "{{ r.stdout }}"}`` a reader of ``d`` gets an edge
labelled ``r`` from r's writer.

The only planner module that imports networkx (an architecture test checks).
"""
from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Sequence, Set, Tuple, Union

import networkx as nx

from ioc.planner.effects import (WILDCARDS, Effects, definite_keys, effective_writes,
                                 lazy_reads, satisfies)
from ioc.planner.program import Program


def build_graph(program: Program, effects: Sequence[Effects]) -> "nx.DiGraph":
    writes = effective_writes(program, effects)
    graph = nx.DiGraph()
    for entry in program.entries:
        graph.add_node(entry.index, name=_label(entry), action=entry.task.action,
                       location=str(entry.task.location), writes=sorted(writes[entry.index]))
    for entry in program.entries:
        reader = entry.index
        incoming: Dict[int, Set[str]] = {}
        direct = _names_read(effects[reader])
        names = sorted(set(direct) | lazy_reads(program, reader, direct))
        for name in names:
            for writer in _reaching_writers(writes, reader, name):
                incoming.setdefault(writer, set()).add(name)
        for writer in sorted(incoming):
            graph.add_edge(writer, reader, vars=sorted(incoming[writer]))
    return graph


def _label(entry: Any) -> str:
    if entry.is_flush and entry.implicit:
        return "(flush handlers)"
    task = entry.task
    return task.display_name if task.name else task.action


def _names_read(eff: Effects) -> List[str]:
    """Read names, plus attributes read through ``hostvars`` (any host)."""
    names = {r.name for r in eff.reads}
    for access in eff.hostvars:
        names.update(access.attrs)
    return sorted(names)


def _reaching_writers(writes: Sequence[frozenset], reader: int, name: str) -> List[int]:
    """Earlier entries whose write of ``name`` can reach ``reader``, nearest first."""
    definite = definite_keys(name)
    found = []
    for index in range(reader - 1, -1, -1):
        entry_writes = writes[index]
        if entry_writes & definite:
            found.append(index)
            break
        if entry_writes & WILDCARDS:
            found.append(index)
    return found


def writers_between(source: Union["nx.DiGraph", Sequence[Effects]], start: int, stop: int,
                    names: Iterable[str]) -> Dict[str, int]:
    """Which of ``names`` entries in ``[start, stop)`` (may) write: name → last writer.

    ``source`` is a graph from :func:`build_graph` (its ``writes`` node
    attribute includes the handlers' writes at flushes) or a sequence of
    Effects by entry index (the entries' own writes only).
    """
    if isinstance(source, nx.DiGraph):
        def writes_of(index: int) -> frozenset:
            return frozenset(source.nodes[index]["writes"]) if index in source else frozenset()
        stop = min(stop, len(source))
    else:
        def writes_of(index: int) -> frozenset:
            return source[index].writes
        stop = min(stop, len(source))
    out: Dict[str, int] = {}
    for name in sorted(set(names)):
        for index in range(stop - 1, max(start, 0) - 1, -1):
            if satisfies(writes_of(index), name):
                out[name] = index
                break
    return out


def _sorted_edges(graph: "nx.DiGraph") -> List[Tuple[int, int, List[str]]]:
    return sorted((u, v, list(d.get("vars", ()))) for u, v, d in graph.edges(data=True))


def to_json(graph: "nx.DiGraph") -> Dict[str, Any]:
    """``{"nodes": [...], "edges": [...]}``, ordered by index."""
    nodes = [{"index": n, "name": d.get("name"), "action": d.get("action"),
              "location": d.get("location"), "writes": list(d.get("writes", ()))}
             for n, d in sorted(graph.nodes(data=True))]
    edges = [{"from": u, "to": v, "vars": names} for u, v, names in _sorted_edges(graph)]
    return {"nodes": nodes, "edges": edges}


def _quote(text: str) -> str:
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def to_dot(graph: "nx.DiGraph") -> str:
    """DOT text: nodes ``index name (file:line)``, edges labelled with variables."""
    lines = ["digraph ioc {", "  node [shape=box];"]
    for n, d in sorted(graph.nodes(data=True)):
        label = "%d %s (%s)" % (n, d.get("name"), d.get("location"))
        lines.append("  n%d [label=%s];" % (n, _quote(label)))
    for u, v, names in _sorted_edges(graph):
        lines.append("  n%d -> n%d [label=%s];" % (u, v, _quote(", ".join(names))))
    lines.append("}")
    return "\n".join(lines) + "\n"


def dumps(graph: "nx.DiGraph") -> str:
    """:func:`to_json` as stable text (for golden files)."""
    return json.dumps(to_json(graph), indent=2, sort_keys=True)
