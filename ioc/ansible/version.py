"""Which ansible-core the ``mitogen_batch`` strategy runs under, and where it lives.

ansible-core changes the internals a strategy plugin touches from release to
release (2.19 and 2.21 shape task results differently), so the strategy is
gated to the releases it is tested on (:data:`SUPPORTED_ANSIBLE`): any other
stops ``ansible-playbook`` with one :class:`ansible.errors.AnsibleError` that
names the range, before a play starts. :func:`strategy_dir` is the directory
users name in ``ansible.cfg`` (``ioc-run --strategy-dir``, or
``python -m ioc.ansible --strategy-dir``).

Importing this module does not import ``ansible``.
"""
from __future__ import annotations

import os
from typing import Optional

#: ansible-core releases the strategy supports, inclusive (major, minor).
SUPPORTED_ANSIBLE = ((2, 19), (2, 21))
STRATEGY_NAME = "mitogen_batch"


def version_problem(version: str) -> Optional[str]:
    """Why ``version`` of ansible-core is unsupported, or None when it is supported."""
    try:
        major, minor = (int(p) for p in version.split(".")[:2])
    except ValueError:
        major, minor = (0, 0)
    low, high = SUPPORTED_ANSIBLE
    if low <= (major, minor) <= high:
        return None
    return ("the %s strategy supports ansible-core %d.%d to %d.%d; this is ansible-core %s"
            % (STRATEGY_NAME, low[0], low[1], high[0], high[1], version))


def check_ansible_version() -> None:
    """Raise one AnsibleError naming the supported range on another ansible-core."""
    from ansible.errors import AnsibleError
    from ansible.release import __version__

    problem = version_problem(__version__)
    if problem:
        raise AnsibleError(problem)


def source_root() -> str:
    """The directory that holds the ``ioc`` package (and, in a checkout, ``strategy_plugin/``)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def strategy_dir() -> str:
    """The directory to name in ``strategy_plugins =`` (holds mitogen_batch.py).

    An installed copy (a wheel, ``pip install .``, pipx) carries the shim inside
    the package, ``ioc/strategy_plugin/``; a checkout (and an editable install,
    which imports the checkout's ``ioc``) has it at the top level beside ``ioc/``.
    """
    package = os.path.join(source_root(), "ioc")
    installed = os.path.join(package, "strategy_plugin")
    if os.path.isfile(os.path.join(installed, STRATEGY_NAME + ".py")):
        return installed
    return os.path.join(source_root(), "strategy_plugin")
