"""Ansible strategy plugin ``mitogen_batch``: inversion of control for Ansible users.

In ansible.cfg (``ioc-run --strategy-dir`` prints the directory)::

    [defaults]
    strategy_plugins = /path/printed/by/ioc-run--strategy-dir
    strategy = mitogen_batch

The source tree keeps this file in the top-level ``strategy_plugin/``; an
installed copy (wheel, ``pip install .``, pipx) has it inside the package as
``ioc/strategy_plugin/mitogen_batch.py`` (pyproject.toml maps it there).

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
except ImportError:
    # Ansible's Python cannot import ioc: use the copy this file belongs to.
    # In a checkout ioc/ is beside this directory; in an installed copy this
    # directory is ioc/strategy_plugin/, and the directory holding ioc/ is above it.
    _root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if os.path.basename(_root) == "ioc" and os.path.isfile(os.path.join(_root, "__init__.py")):
        _root = os.path.dirname(_root)
    sys.path.insert(0, _root)

from ioc.ansible.strategy import StrategyModule  # noqa: E402,F401
