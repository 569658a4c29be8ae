"""``assert``: fail unless every conditional in ``that`` is true.

Each conditional goes through ``ctx.templar.conditional``; exceptions it raises
propagate (the executor reports them as a failed task).
"""
from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({"that", "fail_msg", "msg", "success_msg", "quiet"})
SUPPORTS_CHECK_MODE = True


def _thats(args):
    """``that`` as a list (a single conditional becomes a one-item list)."""
    if "that" not in args or args["that"] is None:
        raise ModuleError("missing required arguments: that")
    that = args["that"]
    if isinstance(that, dict):
        raise ModuleError("argument 'that' is of type %s and we were unable to convert to list"
                          % type(that))
    return list(that) if isinstance(that, (list, tuple)) else [that]


def _evaluate(that, ctx):
    """Truth of one conditional."""
    if ctx.templar is not None:
        return ctx.templar.conditional(that)
    if isinstance(that, bool):
        return that
    raise ModuleError("assert needs a templar to evaluate %r" % (that,))


@_common.module_entry
def run(args, ctx):
    """Evaluate the assertions in order; stop at the first false one."""
    _common.check_unsupported(args, OPTIONS, "assert")
    fail_msg = _common.resolve_aliases(args, "fail_msg", ("msg",))
    if fail_msg is None:
        fail_msg = "Assertion failed"
    success_msg = args.get("success_msg")
    if success_msg is None:
        success_msg = "All assertions passed"
    _common.opt_bool(args, "quiet", False)
    for that in _thats(args):
        if not _evaluate(that, ctx):
            return {"failed": True, "evaluated_to": False, "assertion": that,
                    "msg": fail_msg, "changed": False}
    return {"changed": False, "msg": success_msg}
