"""DESIGN §1's "may import" column, enforced.

Every ``.py`` under ``ioc/`` and ``strategy_plugin/`` is parsed with ``ast``
and each of its ``import``/``from`` statements (top level or nested in
functions, classes, ``if``/``try``) is checked against the rules of the layer
the file belongs to. Files that do not exist yet are simply not checked.

An imported name is allowed when it *is* an allowed module or lies *under* one
(``ioc.model.Task`` is under ``ioc.model``; ``mitogen.core`` is not under
``mitogen.master``). ``from X import a`` is checked as ``X.a`` (``a`` may be a
submodule), relative imports are resolved against the file's package, and the
standard library is ``sys.stdlib_module_names``.
"""
from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
STDLIB = "<stdlib>"

# Layer -> allowed imports (besides the layer's own package).
MODEL = frozenset({STDLIB})
ERRORS = frozenset({STDLIB, "ioc.model"})
LOADER = frozenset({STDLIB, "yaml", "ioc.model", "ioc.errors", "ioc.loader", "ioc.inventory"})
#: Pure queries over the inventory IR (host patterns, per-host variables).
INVENTORY = frozenset({STDLIB, "ioc.model", "ioc.errors"})
PLANNER = frozenset({STDLIB, "jinja2", "ioc.model", "ioc.errors", "ioc.planner"})
PLANNER_GRAPH = PLANNER | {"networkx"}
# Runs on the target: nothing but these, not even bare ``mitogen`` or
# ``mitogen.master``/``mitogen.parent`` (they are not on the target).
#: mitogen.service (and the mitogen.select it imports) is pure Python that
#: travels to the target on first use: large files stream through its FileService.
RUNNER = frozenset({STDLIB, "mitogen.core", "mitogen.service", "jinja2", "markupsafe", "yaml",
                    "ioc.agentless_runner"})
#: A runner module may use Ansible's target-side library (``module_utils``): the
#: controller forwards its own copy with the batch that needs it
#: (``validate_argument_spec`` runs Ansible's ``ArgumentSpecValidator``).
RUNNER_MODULES = RUNNER | {"ansible.module_utils"}
#: The relay runs on an intermediary only, which starts connections: the
#: controller sends it mitogen.parent before it starts the relay; spawning,
#: how a process starts contexts, is sent with mitogen.parent wherever
#: contexts are started (an intermediary, a runner starting become children).
RUNNER_RELAY = RUNNER | {"mitogen.parent"}
# ioc/__init__.py is executed on the target whenever ioc.agentless_runner is
# imported there: it must be as self-contained as the runner.
IOC_PACKAGE = frozenset({STDLIB})
REPLAY_CALLBACKS = frozenset({STDLIB, "ioc.model", "ioc.callbacks", "ioc.replay"})
#: How the controller reaches targets: mitogen, and the runner's code it ships.
TRANSPORT = frozenset({STDLIB, "mitogen", "ioc.errors", "ioc.agentless_runner",
                       "ioc.transport"})
CONTROLLER = frozenset({
    STDLIB, "mitogen", "ioc.model", "ioc.errors", "ioc.planner", "ioc.agentless_runner",
    "ioc.controller", "ioc.transport", "ioc.replay", "ioc.callbacks", "ioc.inventory",
})
BRIDGE = frozenset({STDLIB, "ansible", "ioc"})
STRATEGY_PLUGIN = frozenset({STDLIB, "ansible", "ioc.ansible"})
#: ioc/cli.py (and ``python -m ioc``), like the other front ends ioc/adhoc.py
#: (ioc-adhoc) and ioc/ssh.py (ioc-ssh), may use everything above — but ``ansible``
#: only through the package ioc.ansible (see test_only_the_bridge_imports_ansible).
ANYTHING = None
#: ioc/warm.py is the entry point of ioc-run, ioc-adhoc and ioc-ssh: the standard
#: library only, so that a run through ``--persist``'s daemon imports nothing
#: heavy; the front end (ioc.cli, ioc.adhoc, ioc.ssh) only when no daemon is
#: asked for.
WARM_CLIENT = frozenset({STDLIB, "ioc.cli", "ioc.adhoc", "ioc.ssh"})



def rules_for(rel: str) -> Optional[FrozenSet[str]]:
    """The allowed imports of the file at ``rel`` (posix, relative to the repo).

    Raises LookupError for a file that no rule covers.
    """
    if rel == "ioc/__init__.py":
        return IOC_PACKAGE
    if rel == "ioc/model.py":
        return MODEL
    if rel == "ioc/errors.py":
        return ERRORS
    if rel == "ioc/inventory.py":
        return INVENTORY
    if rel.startswith("ioc/loader/"):
        return LOADER
    if rel == "ioc/planner/graph.py":
        return PLANNER_GRAPH
    if rel.startswith("ioc/planner/"):
        return PLANNER
    if rel.startswith("ioc/agentless_runner/modules/"):
        return RUNNER_MODULES
    if rel in ("ioc/agentless_runner/relay.py", "ioc/agentless_runner/spawning.py"):
        return RUNNER_RELAY
    if rel.startswith("ioc/agentless_runner/"):
        return RUNNER
    if rel == "ioc/replay.py" or rel.startswith("ioc/callbacks/"):
        return REPLAY_CALLBACKS
    if rel.startswith("ioc/transport/"):
        return TRANSPORT
    if rel.startswith("ioc/controller/"):
        return CONTROLLER
    if rel.startswith("ioc/ansible/"):
        return BRIDGE
    if rel in ("ioc/cli.py", "ioc/__main__.py", "ioc/adhoc.py", "ioc/ssh.py", "ioc/warmd.py"):
        return ANYTHING  # the front ends: ioc-run (and its daemon), ioc-adhoc, ioc-ssh
    if rel == "ioc/warm.py":
        return WARM_CLIENT
    if rel.startswith("strategy_plugin/"):
        return STRATEGY_PLUGIN
    raise LookupError(rel)


@dataclass(frozen=True)
class Import:
    name: str      # absolute dotted name, e.g. "ioc.model.Task" or "mitogen.core"
    line: int

    def __str__(self) -> str:
        return "line %d: %s" % (self.line, self.name)


def python_files() -> List[Path]:
    files = []
    for top in ("ioc", "strategy_plugin"):
        if (ROOT / top).is_dir():
            files += sorted(p for p in (ROOT / top).rglob("*.py")
                            if "__pycache__" not in p.parts)
    return files


def rel(path: Path, root: Optional[Path] = None) -> str:
    return path.relative_to(root or ROOT).as_posix()


def package_of(rel_path: str) -> str:
    """The package a file's relative imports resolve against."""
    # ioc/loader/__init__.py and ioc/loader/x.py both resolve in ioc.loader.
    return ".".join(rel_path[:-len(".py")].split("/")[:-1])


def imports_of(path: Path, root: Optional[Path] = None) -> Iterator[Import]:
    """Every import in the file, anywhere in it, as absolute names."""
    rel_path = rel(path, root)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = package_of(rel_path)

    def visit(node: ast.AST) -> Iterator[Import]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[:-(node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                name = module if alias.name == "*" else "%s.%s" % (module, alias.name)
                yield Import(name, node.lineno)
        for child in ast.iter_child_nodes(node):
            yield from visit(child)

    yield from visit(tree)


def is_stdlib(name: str) -> bool:
    return name.split(".")[0] in sys.stdlib_module_names


def under(name: str, module: str) -> bool:
    return name == module or name.startswith(module + ".")


def allowed(name: str, rules: FrozenSet[str]) -> bool:
    if STDLIB in rules and is_stdlib(name):
        return True
    return any(under(name, m) for m in rules if m != STDLIB)


def violations(path: Path, root: Optional[Path] = None) -> List[str]:
    rel_path = rel(path, root)
    rules = rules_for(rel_path)
    bad = []
    for imp in imports_of(path, root):
        if rules is ANYTHING:
            continue
        if allowed(imp.name, rules):
            continue
        bad.append(str(imp))
    return bad


FILES = python_files()


def test_there_is_something_to_check():
    assert (ROOT / "ioc" / "model.py").is_file()
    assert FILES


def test_every_module_belongs_to_a_layer():
    """A new module under ioc/ must be given its place in DESIGN §1 (and here)."""
    unknown = []
    for path in FILES:
        try:
            rules_for(rel(path))
        except LookupError:
            unknown.append(rel(path))
    assert not unknown, ("modules outside every layer of DESIGN §1: %s" % unknown)


@pytest.mark.parametrize("path", FILES, ids=[rel(p) for p in FILES])
def test_imports_follow_design(path):
    try:
        rules_for(rel(path))
    except LookupError:
        pytest.fail("%s belongs to no layer (see test_every_module_belongs_to_a_layer)"
                    % rel(path))
    bad = violations(path)
    assert not bad, "%s imports what DESIGN §1 forbids:\n  %s" % (rel(path), "\n  ".join(bad))


def test_only_the_bridge_imports_ansible():
    offenders = []
    for path in FILES:
        r = rel(path)
        if r.startswith(("strategy_plugin/", "ioc/ansible/")):
            continue
        offenders += ["%s %s" % (r, imp) for imp in imports_of(path)
                      if under(imp.name, "ansible") and not (
                          r.startswith("ioc/agentless_runner/modules/")
                          and under(imp.name, "ansible.module_utils"))]
    assert not offenders, "only ioc/ansible/ may import ansible (and runner modules " \
        "ansible.module_utils): %s" % offenders


def test_networkx_only_in_planner_graph():
    offenders = []
    for path in FILES:
        r = rel(path)
        if r == "ioc/planner/graph.py":
            continue
        offenders += ["%s %s" % (r, imp) for imp in imports_of(path)
                      if under(imp.name, "networkx")]
    assert not offenders, "networkx belongs in ioc/planner/graph.py only: %s" % offenders


# -- no import cycles (issue 20) ----------------------------------------------


def module_name(rel_path: str) -> str:
    """``ioc/loader/__init__.py`` -> ``ioc.loader``; ``ioc/model.py`` -> ``ioc.model``."""
    name = rel_path[:-len(".py")].replace("/", ".")
    return name[:-len(".__init__")] if name.endswith(".__init__") else name


def import_graph(root: Path = ROOT) -> Dict[str, Set[str]]:
    """Module -> the ioc modules it imports, anywhere in it (in functions too).

    An imported name is resolved to the longest ioc module it is under
    (``ioc.model.Task`` -> ``ioc.model``; ``from ioc.controller import play``
    -> ``ioc.controller.play``); a module is not an edge of its own.
    """
    files = sorted(p for p in (root / "ioc").rglob("*.py") if "__pycache__" not in p.parts)
    modules = {module_name(rel(p, root)): p for p in files}
    graph: Dict[str, Set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for imp in imports_of(path, root):
            parts = imp.name.split(".")
            for end in range(len(parts), 0, -1):
                target = ".".join(parts[:end])
                if target in modules:
                    if target != name:
                        graph[name].add(target)
                    break
    return graph


def import_cycles(graph: Dict[str, Set[str]]) -> Set[Tuple[str, ...]]:
    """The graph's strongly connected components of more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: Set[Tuple[str, ...]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.add(tuple(sorted(component)))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles_in_ioc():
    """No module of ioc/ imports itself back through others, function-level imports too."""
    cycles = sorted(import_cycles(import_graph()))
    assert not cycles, "import cycles in ioc/:\n  %s" % "\n  ".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_sees_a_cycle_through_a_function_level_import(tmp_path):
    files = {
        "ioc/__init__.py": "",
        "ioc/a.py": "from ioc.b import thing\n",
        "ioc/b.py": "def thing():\n    from ioc import c\n",
        "ioc/c.py": "import ioc.a\n",
        "ioc/d.py": "from ioc.a import thing\n",
        "ioc/pkg/__init__.py": "from ioc.pkg.e import x\n",
        "ioc/pkg/e.py": "import json\nfrom ioc.a import thing\n",
    }
    for path, source in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(source)
    graph = import_graph(tmp_path)
    assert graph["ioc.b"] == {"ioc.c"}
    assert graph["ioc.pkg"] == {"ioc.pkg.e"} and graph["ioc.pkg.e"] == {"ioc.a"}
    assert import_cycles(graph) == {("ioc.a", "ioc.b", "ioc.c")}


# -- the checker itself -------------------------------------------------------


def _check_source(tmp_path, rel_path: str, source: str) -> List[str]:
    """Run the checker on ``source`` as if it lived at ``rel_path``."""
    fake = tmp_path / rel_path
    fake.parent.mkdir(parents=True, exist_ok=True)
    fake.write_text(source)
    return violations(fake, root=tmp_path)


@pytest.mark.parametrize("rel_path, source, ok", [
    ("ioc/model.py", "import dataclasses\nfrom typing import Any\n", True),
    ("ioc/model.py", "import yaml\n", False),
    ("ioc/model.py", "def f():\n    import jinja2\n", False),       # nested counts
    ("ioc/errors.py", "from ioc.model import Location\n", True),
    ("ioc/errors.py", "from ioc import loader\n", False),
    ("ioc/loader/playbook.py", "import yaml\nfrom ioc.errors import LoadError\n", True),
    ("ioc/loader/playbook.py", "from . import inventory\n", True),
    ("ioc/loader/playbook.py", "import jinja2\n", False),
    ("ioc/planner/graph.py", "import networkx as nx\n", True),
    ("ioc/planner/cuts.py", "import networkx\n", False),
    ("ioc/planner/cuts.py", "from jinja2 import meta\nfrom .graph import build\n", True),
    ("ioc/agentless_runner/batch.py", "import mitogen.core\nfrom mitogen.core import Blob\n", True),
    ("ioc/agentless_runner/batch.py", "import mitogen\n", False),
    ("ioc/agentless_runner/batch.py", "import mitogen.master\n", False),
    ("ioc/agentless_runner/batch.py", "from mitogen import parent\n", False),
    ("ioc/agentless_runner/batch.py", "from ioc import model\n", False),
    ("ioc/agentless_runner/modules/copy.py", "from ..context import ModuleError\n", True),
    ("ioc/agentless_runner/templating.py", "import jinja2\nfrom markupsafe import Markup\n", True),
    # PyYAML travels with the runner; networkx and the controller's mitogen do not
    ("ioc/agentless_runner/filters.py", "import yaml\n", True),
    ("ioc/agentless_runner/filters.py", "import networkx\n", False),
    ("ioc/agentless_runner/templating.py", "import mitogen.master\n", False),
    ("ioc/transport/connector.py", "import mitogen.parent\nfrom ioc.transport import spec\n", True),
    ("ioc/transport/connector.py", "from ioc.controller import play\n", False),
    ("ioc/callbacks/console.py", "from ioc.replay import Event\nimport json\n", True),
    ("ioc/callbacks/console.py", "import mitogen.core\n", False),
    ("ioc/controller/ssh.py", "import mitogen.parent\nfrom ioc.planner import plan\n", True),
    ("ioc/controller/ssh.py", "from ioc.loader import load\n", False),
    ("ioc/ansible/convert.py", "from ansible.playbook.task import Task\nimport ioc.model\n", True),
    ("ioc/ansible/dispatcher.py", "from ioc.controller.play import PlayExecutor\n", True),
    ("ioc/controller/play.py", "from ioc.ansible.modules import ModuleSet\n", False),
    ("strategy_plugin/mitogen_batch.py",
     "from ansible.plugins.strategy.linear import StrategyModule\n"
     "from ioc.ansible.strategy import StrategyModule\n", True),
    ("strategy_plugin/mitogen_batch.py", "from ioc.planner import plan\n", False),
    ("ioc/__init__.py", "from ioc.model import Task\n", False),
])
def test_checker(tmp_path, rel_path, source, ok):
    bad = _check_source(tmp_path, rel_path, source)
    assert (not bad) == ok, bad


def test_the_architecture_doc_draws_the_rooms_the_code_has():
    """docs/architecture.md's room diagram and table are generated from the code
    (``python scripts/rooms.py --write``); a move that forgets them fails here."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("rooms", ROOT / "scripts" / "rooms.py")
    rooms = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rooms)  # type: ignore[union-attr]
    doc = (ROOT / "docs" / "architecture.md").read_text()
    section = doc[doc.index(rooms.BEGIN):doc.index(rooms.END) + len(rooms.END)]
    assert section == rooms.render(), "run: python scripts/rooms.py --write"
    empty = [line for line in section.splitlines()
             if line.startswith("| `ioc/") and line.endswith("|  |")]
    assert not empty, "rooms without a docstring saying what they are for: %s" % empty
