"""``assert``: fail unless every conditional in ``that`` is true.

Each conditional goes through ``ctx.templar.conditional``; an error in one
fails the task as ``evaluate_conditional``'s exception fails it under Ansible
("Task failed: Error while evaluating conditional: ..."). Unless ``quiet``,
the result is shown at every verbosity (``_ansible_verbose_always``), as
Ansible's action plugin marks it.
"""
from ioc.agentless_runner.context import ModuleError, TaskError
from ioc.agentless_runner.template_errors import TemplateError, conditional_error_text
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
        try:
            return ctx.templar.conditional(that, origin=ctx.origin_of(that))
        except TemplateError as exc:
            raise TaskError(conditional_error_text(exc), that,
                            help_text=getattr(exc, "help_text", None),
                            value_origin=getattr(exc, "origin", None))
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
    shown = {} if _common.opt_bool(args, "quiet", False) else {"_ansible_verbose_always": True}
    for that in _thats(args):
        if not _evaluate(that, ctx):
            return dict(shown, failed=True, evaluated_to=False, assertion=that,
                        msg=fail_msg, changed=False)
    return dict(shown, changed=False, msg=success_msg)
