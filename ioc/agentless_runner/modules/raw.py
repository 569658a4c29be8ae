"""``raw``: run a command string through the shell, as Ansible's raw does over ssh.

The string runs with ``/bin/sh -c`` (or ``executable -c``). Like Ansible,
the task's ``environment`` is not applied (a warning says so), check mode
skips the task, the result is always ``changed`` and carries ``rc``,
``stdout``/``stdout_lines`` and ``stderr``/``stderr_lines`` unstripped; a
non-zero rc fails with "non-zero return code".
"""
import os

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({"_raw_params", "executable"})
SUPPORTS_CHECK_MODE = True


def low_level_result(rc, out, err):
    """_low_level_execute_command's result keys."""
    stdout, stderr = _common.to_text(out), _common.to_text(err)
    return {"rc": rc, "stdout": stdout, "stdout_lines": stdout.splitlines(),
            "stderr": stderr, "stderr_lines": stderr.splitlines()}


@_common.module_entry
def run(args, ctx):
    """Run ``_raw_params`` with the shell."""
    _common.check_unsupported(args, OPTIONS, "raw")
    if ctx.check_mode:
        return {"changed": False, "skipped": True}
    command = args.get("_raw_params")
    if command is None or str(command).strip() == "":
        raise ModuleError("no command given")
    warnings = []
    if ctx.environment:
        warnings.append("raw module does not support the environment keyword")
    executable = args.get("executable") or "/bin/sh"
    try:
        rc, out, err = _common.run_command(str(command), env=dict(os.environ), shell=True,
                                           executable=str(executable), cwd=ctx.start_cwd())
    except OSError as e:
        raise ModuleError(str(e), rc=e.errno, stdout="", stderr="", changed=False)
    result = low_level_result(rc, out, err)
    result["changed"] = True
    if rc != 0:
        result.update(failed=True, msg="non-zero return code")
    if warnings:
        result["warnings"] = warnings
    return result
