"""What the runner implements, for the planner's up-front checks."""
from __future__ import annotations

from ioc.agentless_runner import actions, modules, templating
from ioc.controller import lookups, plugins
from ioc.planner import Capabilities


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
        options={**{name: frozenset(modules.get(name).OPTIONS) for name in modules.MODULES},
                 **actions.NATIVE_OPTIONS},
        options_checked_at_run_time=actions.OPTIONS_CHECKED_HERE,
    )
