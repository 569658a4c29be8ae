"""``script``: run a controller-side script on the target (``ansible.builtin.script``).

The script named by the first word of the free-form string (or ``cmd``)
arrives through :meth:`ModuleContext.controller_file`. It is written to a
private file (mode 0700) in ``ctx.tmpdir`` and run like Ansible's action
does: the command line is the free-form string with its first word replaced
by that file, run with ``/bin/sh -c`` (``executable`` prefixed when given),
so the remaining arguments keep their shell quoting. The file is removed
afterwards. ``creates``/``removes`` skip, ``chdir`` must be absolute; check
mode runs nothing (changed when creates/removes would let it run, skipped
otherwise). Results: ``rc``, ``stdout``, ``stdout_lines``, ``stderr``,
``stderr_lines``, ``changed: True``, failure "non-zero return code".
"""
import os
import shlex
import tempfile

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common
from ioc.agentless_runner.modules.raw import low_level_result

OPTIONS = frozenset({"_raw_params", "cmd", "creates", "removes", "chdir", "executable",
                     "decrypt"})
SUPPORTS_CHECK_MODE = True


def split_first(raw):
    """``(first word, rest of the string as written)`` of a shell-like command line."""
    lex = shlex.shlex(raw, posix=True)
    lex.whitespace_split = True
    lex.commenters = ""
    try:
        first = lex.get_token()
    except ValueError as e:
        raise ModuleError("unable to parse the script command line: %s" % e)
    if first is None:
        raise ModuleError("script requires a script path")
    return first, raw[lex.instream.tell():]


def _skip(msg):
    return {"changed": False, "skipped": True, "msg": msg}


@_common.module_entry
def run(args, ctx):
    """Ship-and-run the script."""
    _common.check_unsupported(args, OPTIONS, "script")
    raw = args.get("_raw_params")
    if args.get("cmd") is not None:
        if raw not in (None, ""):
            raise ModuleError("parameters are mutually exclusive: _raw_params|cmd")
        raw = args["cmd"]
    if raw is None or str(raw).strip() == "":
        raise ModuleError("one of the following is required: _raw_params, cmd")
    raw = str(raw).strip()
    creates = _common.opt_path(args.get("creates"))
    if creates and os.path.exists(creates):
        return _skip("%s exists, matching creates option" % creates)
    removes = _common.opt_path(args.get("removes"))
    if removes and not os.path.exists(removes):
        return _skip("%s does not exist, matching removes option" % removes)
    chdir = _common.opt_str(args, "chdir")
    if chdir and not chdir.startswith("/"):
        raise ModuleError("chdir %s must be an absolute path for a Unix-aware remote node" % chdir)
    first, rest = split_first(raw)
    entry = ctx.controller_file(first)
    if ctx.check_mode:
        if creates or removes:
            return {"changed": True}
        return _skip("Check mode is not supported for this task.")
    data = entry.get("content", b"")
    if isinstance(data, str):
        data = data.encode("utf-8")
    fd, path = tempfile.mkstemp(prefix="ioc-script-", suffix="-" + os.path.basename(first),
                                dir=ctx.tmpdir)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(path, 0o700)
        command = shlex.quote(path) + (" " + rest if rest else "")
        if args.get("executable"):
            command = "%s %s" % (args["executable"], command)
        try:
            rc, out, err = _common.run_command(command, env=ctx.child_env(),
                                               cwd=chdir or ctx.start_cwd(), shell=True)
        except OSError as e:
            raise ModuleError(str(e), rc=e.errno, changed=False)
    finally:
        _common.remove_quietly(path)
    result = low_level_result(rc, out, err)
    result["changed"] = True
    if rc != 0:
        result.update(failed=True, msg="non-zero return code")
    return result
