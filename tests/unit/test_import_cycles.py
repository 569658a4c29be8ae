"""No import cycle anywhere in ``ioc/`` (issue 20, item 2).

A cycle hidden by a function-level import is still a cycle: the two modules
cannot be understood, tested or moved apart. Every ``import`` in a file,
wherever it stands, is an edge from that module to the ``ioc`` module it
names (the longest existing prefix of the imported name); a module importing
its own parent package is not an edge (Python runs the package first
anyway).
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Set

from tests.unit.test_architecture import imports_of, python_files, rel


def module_name(path: Path) -> str:
    name = rel(path)[:-len(".py")].replace("/", ".")
    return name[:-len(".__init__")] if name.endswith(".__init__") else name


def import_graph(paths: List[Path]) -> Dict[str, Set[str]]:
    modules = {module_name(p): p for p in paths if rel(p).startswith("ioc/")}
    graph: Dict[str, Set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for imp in imports_of(path):
            target = imp.name
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                graph[name].add(target)
    return graph


def find_cycle(graph: Dict[str, Set[str]]) -> List[str]:
    """One cycle of ``graph`` as a path that returns to its start, or []."""
    state: Dict[str, int] = {}  # 1: on the current path, 2: done
    path: List[str] = []

    def visit(node: str) -> List[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return []

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return []


def test_ioc_has_no_import_cycle():
    cycle = find_cycle(import_graph(python_files()))
    assert not cycle, "import cycle: %s" % " -> ".join(cycle)


def test_the_check_finds_a_cycle_and_only_a_cycle():
    graph = {"ioc.a": {"ioc.b"}, "ioc.b": {"ioc.c"}, "ioc.c": {"ioc.a"}, "ioc.d": set()}
    assert find_cycle(graph) == ["ioc.a", "ioc.b", "ioc.c", "ioc.a"]
    assert find_cycle({"ioc.a": {"ioc.b"}, "ioc.b": set()}) == []
