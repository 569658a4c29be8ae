"""Getting the runner onto a target without waiting on the network.

A new mitogen context imports what it lacks from the controller, one round
trip per module. Over a 150 ms link that is seconds before the first task.
So the controller:

* makes its own ``ioc``, ``jinja2`` and ``markupsafe`` authoritative
  (mitogen *overrides*): the target never runs a different version it
  happens to have installed, and never probes its own site-packages first;
* *blocks* the optional imports that are expected to fail (C speedups,
  PyYAML for the YAML filters), so the target refuses them itself instead of
  asking and waiting for a "no";
* sends the runner's whole import closure right after the connection is up
  (``forward_modules``), ahead of the first call on the same stream, so the
  call finds every module already there.
"""
from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import List, Tuple

import mitogen.core
import mitogen.master

#: Packages the target always takes from the controller.
OVERRIDES = ("ioc", "jinja2", "markupsafe")
#: Imports the runner may attempt that must fail fast on the target.
BLOCKS = ("markupsafe._speedups", "yaml", "_yaml")
#: Subpackages of ``ioc`` that run on the target (everything else stays home).
RUNNER_PACKAGE = "ioc.agentless_runner"


def configure(router: mitogen.master.Router) -> None:
    """Set the import policy; must run before the first connection."""
    for prefix in OVERRIDES:
        router.responder.whitelist_prefix(prefix)
    for prefix in BLOCKS:
        router.responder.blacklist_prefix(prefix)


@functools.lru_cache(maxsize=1)
def runner_closure() -> Tuple[str, ...]:
    """Every module the runner may import, packages before their contents."""
    names: List[str] = ["ioc"]
    for package in (RUNNER_PACKAGE, "markupsafe", "jinja2"):
        names.append(package)
        names.extend(_submodules(package))
    return tuple(sorted(set(names), key=lambda n: (n.count("."), n)))


def _submodules(package: str) -> List[str]:
    module = importlib.import_module(package)
    found = []
    for info in pkgutil.walk_packages(module.__path__, package + "."):
        if any(info.name == b or info.name.startswith(b + ".") for b in BLOCKS):
            continue
        spec = importlib.util.find_spec(info.name)
        if spec is not None and spec.origin and spec.origin.endswith(".py"):
            found.append(info.name)
    return found


def preload(router: mitogen.master.Router, context: mitogen.core.Context) -> None:
    """Queue the runner's closure to ``context`` ahead of any call to it."""
    router.responder.forward_modules(context, runner_closure())
