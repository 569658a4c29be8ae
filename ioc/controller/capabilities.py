"""What the runner implements, for the planner's up-front checks."""
from __future__ import annotations

from typing import AbstractSet, Dict, Iterator, Mapping

from ioc.agentless_runner import actions, modules, templating
from ioc.controller import lookups, plugins
from ioc.planner import Capabilities


class _ModuleOptions(Mapping[str, AbstractSet[str]]):
    """Each of ioc's modules' ``OPTIONS``, its module imported when first asked
    for: importing all of them (``validate_argument_spec`` brings Ansible's
    argument spec code) cost a cold ``ioc-run`` 0.16 s for modules its play
    mostly never names."""

    def __init__(self) -> None:
        self._read: Dict[str, AbstractSet[str]] = {}

    def __getitem__(self, name: str) -> AbstractSet[str]:
        found = self._read.get(name)
        if found is None:
            if name in actions.NATIVE_OPTIONS:
                return actions.NATIVE_OPTIONS[name]
            if name not in modules.MODULES:
                raise KeyError(name)
            found = self._read[name] = frozenset(modules.get(name).OPTIONS)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*modules.MODULES, *actions.NATIVE_OPTIONS]))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def runner_capabilities() -> Capabilities:
    """Actions, filters and tests the runner can execute.

    Filters, tests and lookups are ioc's own plus, once a plugin host is
    installed (``controller/plugins.py``), every one Ansible resolves.
    """
    return Capabilities(
        actions=frozenset(modules.MODULES) | actions.NATIVE | {"meta"},
        filters=plugins.names("filter", templating.known_filters()),
        tests=plugins.names("test", templating.known_tests()),
        lookups=plugins.names("lookup", lookups.KNOWN),
        options=_ModuleOptions(),
        options_checked_at_run_time=actions.OPTIONS_CHECKED_HERE,
    )
