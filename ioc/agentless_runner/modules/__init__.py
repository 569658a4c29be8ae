"""ioc's own modules: the few that earn their place, run in the runner's process.

Every other module a task names is Ansible's own, run on the target from the
payload Ansible would send (``ioc.agentless_runner.ansible_module``). These
stay because they are on every play's hot path and run in the runner's
process in well under a millisecond where Ansible's module costs a forked
interpreter per task (``python -m benchmarks.modules``: 100x to 1,000x), and
because their results are proven equal to Ansible's module for every option
they accept (``tests/unit/test_modules_against_ansible.py``). An option one
of them does not take makes the task run Ansible's module instead.

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
    "file": "file",
    "copy": "copy",
    "script": "script",
    "raw": "raw",
    "fetch": "fetch",
    "slurp": "slurp",
    "replace": "replace",
    "blockinfile": "blockinfile",
    "lineinfile": "lineinfile",
    "template": "template",
    "stat": "stat",
    "validate_argument_spec": "validate_argument_spec",
}

_cache = {}


def get(name):
    """Return the Python module implementing module ``name`` (KeyError if none)."""
    mod = _cache.get(name)
    if mod is None:
        mod = importlib.import_module("ioc.agentless_runner.modules." + MODULES[name])
        _cache[name] = mod
    return mod
