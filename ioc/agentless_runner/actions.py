"""Dispatch an action to the executor's own implementation or to a module."""
import traceback

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext as Context
from ioc.agentless_runner.context import ModuleError

__all__ = ["Context", "run", "NATIVE"]

#: Actions the executor implements itself, beside the modules package.
NATIVE = frozenset({"set_fact", "gather_facts"})

_CHECK_MODE_SKIP = {
    "command": "Command would have run if not in check mode",
    "shell": "Command would have run if not in check mode",
}


def run(action, args, ctx):
    """Run ``action`` with templated ``args``; always returns a result dict."""
    if action == "set_fact":
        return _set_fact(args)
    if action == "gather_facts":
        action = "setup"
    try:
        module = modules.get(action)
    except KeyError:
        return {"failed": True, "changed": False,
                "msg": "The module %s was not found on the target." % action}
    if ctx.check_mode and not getattr(module, "SUPPORTS_CHECK_MODE", False):
        msg = _CHECK_MODE_SKIP.get(action, "remote module (%s) does not support "
                                           "check mode" % action)
        return {"changed": False, "skipped": True, "msg": msg}
    if action in ("command", "shell"):
        args = dict(args, _ioc_module=action)
    try:
        result = module.run(args, ctx)
    except ModuleError as exc:
        result = dict(exc.result, failed=True, msg=exc.msg)
    except Exception as exc:  # a bug in a module: report it as Ansible does
        result = {"failed": True, "changed": False,
                  "msg": "MODULE FAILURE: %s: %s" % (type(exc).__name__, exc),
                  "exception": traceback.format_exc()}
    if action == "debug":
        result["_ansible_verbose_always"] = True
    return result


def _set_fact(args):
    facts = dict(args)
    facts.pop("cacheable", None)
    return {"ansible_facts": facts, "changed": False}
