"""``group``: ensure a local group exists (or not) with groupadd/groupmod/groupdel.

Follows ``ansible.builtin.group`` on Linux: results carry ``name``, ``state``
and, when the group exists afterwards, ``gid`` and ``system``; ``stdout`` and
``stderr`` of the command that ran, when not empty. Check mode reports what
would change and runs nothing. ``local`` (the libuser ``lgroup*`` tools) and
``gid_min``/``gid_max`` are not supported.
"""
import grp

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({"name", "state", "gid", "system", "non_unique", "force"})

SUPPORTS_CHECK_MODE = True


def _group_info(name):
    """The grp entry for ``name``, or None."""
    try:
        return grp.getgrnam(name)
    except KeyError:
        return None


def _execute(ctx, argv, name):
    """Run a group command; fail like the module does on a non-zero rc."""
    rc, out, err = _common.run_text(ctx, argv)
    if rc != 0:
        raise ModuleError(err, name=name)
    return rc, out, err


def _add(args, ctx, name, gid, system):
    cmd = [_common.require_bin("groupadd", ctx)]
    if gid is not None:
        cmd += ["-g", str(gid)]
        if _common.opt_bool(args, "non_unique", False):
            cmd.append("-o")
    if system:
        cmd.append("-r")
    return _execute(ctx, cmd + [name], name)


def _modify(args, ctx, name, gid, info):
    if gid is None or info.gr_gid == gid:
        return None, "", ""
    if ctx.check_mode:
        return 0, "", ""
    cmd = [_common.require_bin("groupmod", ctx), "-g", str(gid)]
    if _common.opt_bool(args, "non_unique", False):
        cmd.append("-o")
    return _execute(ctx, cmd + [name], name)


@_common.module_entry
def run(args, ctx):
    """Ensure group ``name`` is present or absent (see the module docstring)."""
    _common.check_unsupported(args, OPTIONS, "group")
    name = _common.opt_str(args, "name")
    if not name:
        raise ModuleError("missing required arguments: name")
    state = _common.check_choice(_common.opt_str(args, "state", "present"), "state",
                                 ("absent", "present"))
    gid = _common.opt_int(args, "gid")
    system = _common.opt_bool(args, "system", False)
    if _common.opt_bool(args, "non_unique", False) and gid is None:
        raise ModuleError("non_unique is True but all of the following are missing: gid")
    result = {"name": name, "state": state}
    rc, out, err = None, "", ""
    info = _group_info(name)
    if state == "absent" and info is not None:
        if ctx.check_mode:
            return {"changed": True}
        cmd = [_common.require_bin("groupdel", ctx)]
        if _common.opt_bool(args, "force", False):
            cmd.append("-f")
        rc, out, err = _execute(ctx, cmd + [name], name)
    elif state == "present":
        if info is None:
            if ctx.check_mode:
                return {"changed": True}
            rc, out, err = _add(args, ctx, name, gid, system)
        else:
            rc, out, err = _modify(args, ctx, name, gid, info)
    result["changed"] = rc is not None
    if out:
        result["stdout"] = out
    if err:
        result["stderr"] = err
    info = _group_info(name)
    if info is not None:
        result["system"] = system
        result["gid"] = info.gr_gid
    return result
