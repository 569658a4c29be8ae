"""Ansible strategy plugin ``mitogen_batch``: inversion of control for Ansible users.

In ansible.cfg (``python -m ioc.ansible --strategy-dir`` prints the
directory)::

    [defaults]
    strategy_plugins = /path/to/ioc/strategy_plugin
    strategy = mitogen_batch

This file stays a shim: the logic lives in the package ``ioc.ansible``
(``ioc.ansible.strategy``).
"""
from __future__ import annotations

import os
import sys

DOCUMENTATION = """
    name: mitogen_batch
    short_description: Runs batches of tasks per host through ioc's runner over mitogen
    description:
        - Plans each play into batches, runs a batch per host in one round trip, and replays
          the results to Ansible's callbacks in the linear strategy's order. Plays that need
          anything ioc cannot run natively run through the linear strategy.
    author: ioc
"""

try:
    import ioc.ansible.strategy  # noqa: F401
except ImportError:  # a checkout that was not pip-installed: ioc lives next to this directory
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ioc.ansible.strategy import StrategyModule  # noqa: E402,F401
