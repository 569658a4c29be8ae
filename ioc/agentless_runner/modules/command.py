"""``command`` and ``shell``: run a command on the target.

The executor passes ``_ioc_module`` ("command" or "shell"). ``command`` splits
its string with shlex and runs it without a shell; ``shell`` runs the string
with ``/bin/sh -c`` (or ``executable -c``). Results follow
``ansible.builtin.command``: ``cmd``, ``rc``, ``stdout``, ``stderr``,
``stdout_lines``, ``stderr_lines``, ``start``, ``end``, ``delta``, ``msg``.
"""
import datetime
import glob
import os
import shlex

from ioc.agentless_runner import results
from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({
    "_raw_params", "cmd", "argv", "chdir", "creates", "removes", "executable",
    "stdin", "stdin_add_newline", "strip_empty_ends", "expand_argument_vars",
})

#: ansible-core's command module declares check-mode support: it skips itself
#: ("Command would have run if not in check mode") with its full result shape.
SUPPORTS_CHECK_MODE = True


def _base_result():
    """The keys Ansible's command module always returns."""
    return {"changed": False, "stdout": "", "stderr": "", "rc": None, "cmd": None,
            "start": None, "end": None, "delta": None, "msg": ""}


def _add_lines(r):
    """Add ``stdout_lines``/``stderr_lines`` as the action plugin does."""
    r["stdout_lines"] = r["stdout"].splitlines()
    r["stderr_lines"] = r["stderr"].splitlines()
    return r


def _fail(r, msg, **extra):
    """Turn ``r`` into a failure result."""
    r.update(extra)
    r["failed"] = True
    r["msg"] = msg
    return _add_lines(r)


def _error_keys(r, **extra):
    """The keys of ``r`` (and ``extra``) to put in a ModuleError's result."""
    keys = _add_lines(dict(r, **extra))
    keys.pop("msg", None)
    return keys


def _command_args(args, r, shell):
    """Return the command (list for command, str for shell), or raise ModuleError."""
    raw = args.get("_raw_params")
    if args.get("cmd") is not None:
        if raw not in (None, ""):
            raise ModuleError("The 'cmd' argument cannot be used when other raw parameters are specified.")
        raw = args["cmd"]
    argv = args.get("argv")
    if raw is not None and not isinstance(raw, str):
        raw = str(raw)
    if (raw is None or raw.strip() == "") and not argv:
        raise ModuleError("no command given", **_error_keys(r, rc=256))
    if raw and argv:
        raise ModuleError("only command or argv can be given, not both", **_error_keys(r, rc=256))
    if argv is not None and not isinstance(argv, list):
        raise ModuleError("argument 'argv' is of type %s and we were unable to convert to list" % type(argv))
    if raw and not shell:
        return shlex.split(raw)
    return raw if raw else [str(a) for a in argv]


def _check_chdir(chdir, r):
    """Fail like Ansible's os.chdir when ``chdir`` is not an accessible directory."""
    b_chdir = os.fsencode(chdir)
    try:
        fd = os.open(b_chdir, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        raise ModuleError("Unable to change directory before execution: %s" % e, **_error_keys(r))
    os.close(fd)


def _skip_reason(args, cwd, check_mode):
    """Ansible's creates/removes short-circuit: ``(msg, stdout)`` or None."""
    verb = "Would" if check_mode else "Did"
    creates = _common.opt_path(args.get("creates"))
    removes = _common.opt_path(args.get("removes"))
    if creates and glob.glob(os.path.join(cwd or "", creates)):
        return ("%s not run command since '%s' exists" % (verb, creates),
                "skipped, since %s exists" % creates)
    if removes and not glob.glob(os.path.join(cwd or "", removes)):
        return ("%s not run command since '%s' does not exist" % (verb, removes),
                "skipped, since %s does not exist" % removes)
    return None


def _stdin_data(args):
    """The bytes to feed on stdin (None for /dev/null)."""
    data = args.get("stdin")
    if data is None:
        return None
    data = str(data)
    if _common.opt_bool(args, "stdin_add_newline", True):
        data += "\n"
    return data.encode("utf-8", "surrogateescape")


def _execute(args, ctx, r, cmd, shell, cwd):
    """Run ``cmd`` and fill ``r`` with rc/stdout/stderr/start/end/delta."""
    executable = args.get("executable") if shell else None
    start = datetime.datetime.now()
    try:
        rc, out, err = _common.run_command(
            cmd, env=ctx.child_env(), cwd=cwd, data=_stdin_data(args), shell=shell,
            executable=executable, expand=_common.opt_bool(args, "expand_argument_vars", True))
    except OSError as e:
        # AnsibleModule.run_command's fail_json: no start/end/delta, not changed.
        failed = {"changed": False, "rc": e.errno, "stdout": "", "stderr": "",
                  "cmd": _common.clean_args(cmd), "exception": results.TRACEBACK_UNAVAILABLE}
        return _fail(failed, "Error executing command.")
    end = datetime.datetime.now()
    r.update(rc=rc, stdout=_common.to_text(out), stderr=_common.to_text(err),
             start=str(start), end=str(end), delta=str(end - start))
    if _common.opt_bool(args, "strip_empty_ends", True):
        r["stdout"] = r["stdout"].rstrip("\r\n")
        r["stderr"] = r["stderr"].rstrip("\r\n")
    if rc != 0:
        return _fail(r, "non-zero return code" if results.legacy()
                     else "The command exited with a non-zero return code.")
    return _add_lines(r)


@_common.module_entry
def run(args, ctx):
    """Run the command described by ``args`` (see the module docstring)."""
    name = args.pop("_ioc_module", "command")
    shell = name == "shell"
    _common.check_unsupported(args, OPTIONS, name)
    r = _base_result()
    warnings = []
    if not shell and args.get("executable"):
        warnings.append("As of Ansible 2.4, the parameter 'executable' is no longer supported with "
                        "the 'command' module. Not using '%s'." % args["executable"])
    r["cmd"] = cmd = _command_args(args, r, shell)
    cwd = _common.opt_path(args.get("chdir"))
    if cwd:
        _check_chdir(cwd, r)
    elif ctx.cwd is not None:  # (AnsibleModule's, when it moved: see ModuleDirectory)
        cwd = ctx.cwd.path
    skip = _skip_reason(args, cwd, ctx.check_mode)
    if skip:
        r.update(msg=skip[0], stdout=skip[1], rc=0)
        result = _add_lines(r)
    elif ctx.check_mode:
        result = _check_mode_result(args, r)
    else:
        r["changed"] = True
        result = _execute(args, ctx, r, cmd, shell, cwd)
    if warnings:
        result["warnings"] = warnings
    return result


def _check_mode_result(args, r):
    """What Ansible's command module returns in check mode when not skipped."""
    r.update(rc=0, msg="Command would have run if not in check mode", changed=True)
    if args.get("creates") is None and args.get("removes") is None:
        r.update(skipped=True, changed=False)
    return _add_lines(r)
