"""Built-in modules, run on the target by the batch executor.

A module is a Python module in this package with a function::

    def run(args: dict, ctx: ModuleContext) -> dict

``args`` are the task's arguments, already templated. The return value is an
Ansible-shaped result dict (``changed``, ``failed``, ``msg``, ``rc``,
``stdout``, ``stdout_lines``, ``diff``...). A module reports failure by
returning ``{"failed": True, "msg": ...}``; it raises :class:`ModuleError` for
the same purpose where that reads better. Any other exception is a bug in the
module and is reported as a failed task with the traceback.

Each module declares ``OPTIONS``, the set of argument names it accepts (the
planner rejects anything else before a host is touched), and
``SUPPORTS_CHECK_MODE``. Modules the executor implements itself (``set_fact``,
``meta``...) are not here.
"""
import importlib

from ioc.agentless_runner.context import ModuleContext, ModuleError  # noqa: F401

#: Canonical module name -> submodule that implements it.
MODULES = {
    "command": "command",
    "shell": "command",
    "debug": "debug",
    "assert": "assertion",
    "fail": "fail",
    "ping": "ping",
    "file": "file",
    "copy": "copy",
    "unarchive": "unarchive",
    "find": "find",
    "script": "script",
    "raw": "raw",
    "tempfile": "tempfile",
    "fetch": "fetch",
    "slurp": "slurp",
    "replace": "replace",
    "blockinfile": "blockinfile",
    "lineinfile": "lineinfile",
    "template": "template",
    "stat": "stat",
    "setup": "setup",
    "user": "user",
    "group": "group",
    "service": "service",
    "systemd": "systemd",
    "systemd_service": "systemd",
    "cron": "cron",
    "wait_for": "wait_for",
    "pip": "pip",
    "apt": "apt",
    "package": "package",
}

_cache = {}


def get(name):
    """Return the Python module implementing module ``name`` (KeyError if none)."""
    mod = _cache.get(name)
    if mod is None:
        mod = importlib.import_module("ioc.agentless_runner.modules." + MODULES[name])
        _cache[name] = mod
    return mod
