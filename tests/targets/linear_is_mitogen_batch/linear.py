"""A strategy plugin named ``linear`` that is ``mitogen_batch``.

ansible-core's integration targets name ``linear`` in plays
(``strategy: linear``, ``strategy: "{{ test_strategy | default('linear') }}"``)
and in ``runme.sh`` (``ANSIBLE_STRATEGY=linear``); the default strategy is
``linear`` too. Each of these is an unqualified name, which Ansible's plugin
loader resolves through the configured ``strategy_plugins`` directories before
its own (``PluginLoader._find_plugin_legacy``). A directory holding this file
on ``ANSIBLE_STRATEGY_PLUGINS`` therefore makes every such play run under
``mitogen_batch``: without it a comparison of the targets would compare
linear with linear wherever a target names its strategy. Only the explicit
``ansible.builtin.linear`` still reaches the builtin (no target of record
spells it).

The harness (``tests/targets/harness.py``) links this file into the
``strategy`` plugin directory of the ansible-core tree it runs
``ansible-test`` from; ansible-test puts that directory on
``ANSIBLE_STRATEGY_PLUGINS`` itself. The dispatcher's log
(``ioc.ansible.pipe.BRIDGE_LOG``, set in this process, not in the environment
the targets' modules see) then goes next to the link, so the harness can tell
which plays ran natively.

Ansible loads a legacy plugin under the module name of the builtin it
shadows, ``ansible.plugins.strategy.linear``; ``mitogen_batch`` subclasses
that builtin. So this module puts the real one back under its name before
loading ``strategy_plugin/mitogen_batch.py`` from this checkout.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys

DOCUMENTATION = """
    name: linear
    short_description: mitogen_batch under the name linear (ioc's harness for ansible-core's targets)
    description:
        - The mitogen_batch strategy, found where Ansible looks for the strategy named linear.
    author: ioc
"""

_BUILTIN = "ansible.plugins.strategy.linear"
_LINKED_FROM = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))))


def _restore_builtin_linear() -> None:
    if sys.modules.get(_BUILTIN) is sys.modules.get(__name__) and __name__ == _BUILTIN:
        del sys.modules[_BUILTIN]
    importlib.import_module(_BUILTIN)


def _mitogen_batch():
    if _ROOT not in sys.path:
        sys.path.insert(0, _ROOT)
    path = os.path.join(_ROOT, "strategy_plugin", "mitogen_batch.py")
    spec = importlib.util.spec_from_file_location("ioc_targets_mitogen_batch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_restore_builtin_linear()
StrategyModule = _mitogen_batch().StrategyModule
if _LINKED_FROM != os.path.dirname(os.path.realpath(__file__)):
    # in this process only: a variable in os.environ would reach the modules of
    # the targets' local connection (ansible_env: one key linear's run lacks)
    from ioc.ansible import pipe

    pipe.BRIDGE_LOG = os.environ.get("IOC_BRIDGE_LOG") or os.path.join(_LINKED_FROM,
                                                                        "ioc-bridge.log")
