"""``validate_argument_spec``: Ansible's action plugin, run on the target.

The task a role with ``meta/argument_specs.yml`` starts with (and any task
naming the action). It is pure Python: the variables the spec names, as the
host sees them, templated, with the task's ``provided_arguments`` over them,
checked by Ansible's own ``ArgumentSpecValidator`` (``module_utils``, which
the controller forwards with this module: it is the controller's own copy,
so the messages are those of the controller's ansible-core). Each step
mirrors ``ansible/plugins/action/validate_argument_spec.py``.
"""
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ioc.agentless_runner.context import TaskError
from ioc.agentless_runner.template_errors import TemplateError
from ioc.agentless_runner.templating import to_builtin

OPTIONS = frozenset({"argument_spec", "provided_arguments", "validate_args_context"})
SUPPORTS_CHECK_MODE = True


def run(args, ctx):
    """The action plugin's result: passed, or the errors and the spec."""
    result = {"validate_args_context": args.get("validate_args_context", {})}
    if "argument_spec" not in args:
        raise TaskError('"argument_spec" arg is required in args: %s' % (args,))
    spec = args.get("argument_spec")
    provided = args.get("provided_arguments", {})
    if not isinstance(spec, dict):
        raise TaskError("Incorrect type for argument_spec, expected dict and got %s" % type(spec))
    if not isinstance(provided, dict):
        raise TaskError("Incorrect type for provided_arguments, expected dict and got %s"
                        % type(provided))
    params = dict(_args_from_vars(spec, ctx))
    params.update(provided)  # combine_vars with the default hash_behaviour: replace
    validation = ArgumentSpecValidator(spec).validate(params, validate_role_argument_spec=True)
    if validation.error_messages:
        result["failed"] = True
        result["msg"] = "Validation of arguments failed:\n%s" % "\n".join(validation.error_messages)
        result["argument_spec_data"] = spec
        result["argument_errors"] = validation.error_messages
        return result
    result["changed"] = False
    result["msg"] = "The arg spec validation passed"
    return result


def _args_from_vars(spec, ctx):
    """``get_args_from_task_vars``: the host's variables the spec names, templated."""
    templar = ctx.templar
    found = {}
    for name in spec:
        if templar is not None and templar.has_variable(name):
            try:
                found[name] = to_builtin(templar.variable(name))
            except TemplateError as exc:
                raise TaskError(str(exc))
        elif templar is None and name in ctx.task_vars:
            found[name] = ctx.task_vars[name]
    return found
