"""What the runner implements, for the planner's up-front checks."""
from __future__ import annotations

from ioc.agentless_runner import actions, modules, templating
from ioc.controller import lookups
from ioc.planner import Capabilities


def runner_capabilities() -> Capabilities:
    """Actions, filters and tests the runner can execute."""
    return Capabilities(
        actions=frozenset(modules.MODULES) | actions.NATIVE | {"meta"},
        filters=frozenset(templating.known_filters()),
        tests=frozenset(templating.known_tests()),
        lookups=lookups.KNOWN,
        options={name: frozenset(modules.get(name).OPTIONS) for name in modules.MODULES},
    )
