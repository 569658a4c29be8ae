"""``debug``: print a message or the value of a variable.

Above the run's ``-v`` count (``ansible_verbosity``) a ``verbosity`` makes the
task skipped, its message or variable not even looked at, as Ansible's action.
"""
from ioc.agentless_runner.context import OMIT, ModuleError, TaskError
from ioc.agentless_runner.template_errors import TemplateError, UntrustedTemplateError
from ioc.agentless_runner.templating import ReplacingMarkers
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({"msg", "var", "verbosity"})
SUPPORTS_CHECK_MODE = True

UNDEFINED_TEXT = "VARIABLE IS NOT DEFINED!"
OMITTED_WARNING = "The result of the `var` expression could not be omitted; a placeholder " \
    "was used instead."
_MISSING = object()


def _is_undefined(obj):
    """True for an undefined marker or error (jinja2's or ioc's), by class name."""
    cls = obj if isinstance(obj, type) else type(obj)
    return any("Undefined" in k.__name__ for k in cls.__mro__)


def _lookup(var, ctx, untrusted=False):
    """``(value, warnings)`` of expression ``var``.

    As ansible-core 2.21's debug (and 2.19's): an undefined value met while
    templating it (the expression's own, or a variable's whose template is
    undefined) stands as ``<< error N - <message> >>``, and each template
    that gave some is a warning ("Encountered N template error(s).",
    :meth:`ReplacingMarkers.warnings`)."""
    if ctx.templar is not None:
        try:
            if untrusted:
                raise UntrustedTemplateError()
            with ReplacingMarkers() as markers:
                value = ctx.templar.evaluate(var)
        except UntrustedTemplateError as e:
            # (about the argument as written: the controller names where)
            raise TaskError("Error while resolving `var` expression: %s" % (e,),
                            help_text=e.help_text, option="var")
        except TemplateError as e:
            # (Ansible's action raises it with the error as its cause)
            raise TaskError("Error while resolving `var` expression: %s" % (e,), var)
        return value, markers.warnings()
    value = ctx.task_vars.get(var, _MISSING) if isinstance(var, str) else _MISSING
    return (UNDEFINED_TEXT if value is _MISSING or _is_undefined(value) else value), []


def _check_verbosity(args):
    """``verbosity`` as an int, validated like Ansible's argument spec."""
    value = args.get("verbosity", 0)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ModuleError("argument 'verbosity' is of type %s and we were unable to convert to int: "
                          "%r cannot be converted to an int" % (type(value), value))


def argument_error(args):
    """What Ansible's argument spec says of ``var`` when it is no text (its type
    is ``_check_type_str_no_conversion``; None counts as ''), or None."""
    var = args.get("var")
    if var is None or isinstance(var, str):
        return None
    return ("argument 'var' is of type %s and we were unable to convert to "
            "_check_type_str_no_conversion: '%r' is not a string and conversion is not "
            "allowed" % (type(var).__name__, var))


@_common.module_entry
def run(args, ctx):
    """Return ``{"msg": ...}`` or ``{<var>: value}``."""
    _common.check_unsupported(args, OPTIONS, "debug")
    verbosity = _check_verbosity(args)
    if "msg" in args and "var" in args:
        raise ModuleError("parameters are mutually exclusive: msg|var")
    if verbosity > int(ctx.task_vars.get("ansible_verbosity", 0) or 0):
        return {"skipped_reason": "Verbosity threshold not met.", "skipped": True,
                "failed": False, "changed": False}
    if args.get("var") is not None:
        var = args["var"]
        key = str(type(var)) if isinstance(var, (list, dict)) else var
        value, warnings = _lookup(var, ctx, args.get("_ioc_untrusted_var", False))
        result = {key: value, "failed": False, "changed": False}
        if value == OMIT:
            # (Ansible's AnsibleValueOmittedError: the placeholder, and a warning
            # about the expression, at the var argument's origin)
            result[key] = "<<Omit>>"
            warnings = [{"text": OMITTED_WARNING, "var": None, "template": var}] + warnings
        if warnings:
            # (the text registered; where each template was, for the consoles)
            result["warnings"] = [w["text"] for w in warnings]
            result["_ioc_marker_warnings"] = warnings
        return result
    return {"msg": args.get("msg", "Hello world!"), "failed": False, "changed": False}
