"""``fetch``: bring a target file back to the controller.

The module runs on the target: it reads ``src`` and computes the
controller-side destination the way Ansible's fetch action does, then
returns the bytes under ``_ioc_fetch`` for the controller to write.

The ``_ioc_fetch`` contract (the controller strips the key before the
result is shown or registered)::

    "_ioc_fetch": {
        "dest": "<dest as computed here: dest/<inventory_hostname>/<src> or,
                  with flat, dest (+ basename of src when dest ends in '/');
                  os.path.normpath'ed, may be relative>",
        "content": b"...",            # the file's bytes (mitogen Blob on the wire)
        "checksum": "<sha1 of content>",
        "flat": bool,                 # dest came from flat: yes
        "dest_is_dir": bool,          # flat and dest ended with '/'
        "validate_checksum": bool,
    }

The controller then: resolves a relative ``dest`` against the playbook
directory (Ansible's ``path_dwim``) and rewrites ``result["dest"]`` the same
way; with ``flat`` fails "dest is an existing directory, use a trailing
slash if you want to fetch src into that directory" when the dest (without
trailing slash) is an existing directory on the controller, and
"calculated dest '<dest>' is an existing directory, use another path that
does not point to an existing directory" when the computed file path is one;
compares ``checksum`` with the controller file's SHA-1: equal -> the result
becomes ``{"changed": False, "md5sum", "file": src, "dest", "checksum"}``
(Ansible's unchanged shape); different -> creates the parent directories,
writes the content, re-hashes the written file and, when
``validate_checksum`` and the hash differs, fails with "checksum mismatch".
The module itself always reports ``changed: True`` for a file it read.
"""
import hashlib
import os

from ioc.agentless_runner import results
from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common
from ioc.agentless_runner.modules import slurp as _slurp

OPTIONS = frozenset({"src", "dest", "flat", "fail_on_missing", "validate_checksum"})
SUPPORTS_CHECK_MODE = True


def controller_dest(src, dest, flat, hostname):
    """The controller path Ansible's fetch action computes (before path_dwim)."""
    if flat:
        is_dir = dest.endswith(os.sep)
        if is_dir:
            dest = os.path.join(dest, os.path.basename(src))
        return os.path.normpath(dest), is_dir
    return os.path.normpath("%s/%s/%s" % (dest, hostname, src)), False


def _missing(result, src, fail_on_missing, msg):
    """A missing/unreadable source: failed, or ignored with fail_on_missing: no."""
    if fail_on_missing:
        result.update(failed=True, msg=msg)
    else:
        result.update(changed=False, file=src, msg=msg)
    return result


@_common.module_entry
def run(args, ctx):
    """Read ``src`` and hand it to the controller through ``_ioc_fetch``."""
    _common.check_unsupported(args, OPTIONS, "fetch")
    if ctx.check_mode:
        return {"changed": False, "skipped": True,
                "msg": "check mode not (yet) supported for this module"}
    src, dest = args.get("src"), args.get("dest")
    if src is None or dest is None:
        raise ModuleError("src and dest are required")
    if not isinstance(src, str):
        raise ModuleError("Invalid type supplied for source option, it must be a string")
    if not isinstance(dest, str):
        raise ModuleError("Invalid type supplied for dest option, it must be a string")
    flat = _common.opt_bool(args, "flat", False)
    fail_on_missing = _common.opt_bool(args, "fail_on_missing", True)
    validate = _common.opt_bool(args, "validate_checksum", True)
    src = os.path.expanduser(src)
    result = {}
    if os.path.isdir(src):
        result["msg"] = "remote file is a directory, fetch cannot work on directories"
        if fail_on_missing:
            result.update(failed=True, changed=False)
        else:
            result["msg"] += ", not transferring, ignored"
        return result
    try:
        data = _slurp.read(src)
    except ModuleError as e:
        msg = e.msg
        if "not found" in msg:
            msg = "the remote file does not exist, not transferring, ignored"
        return _missing(result, src, fail_on_missing, msg)
    hostname = ctx.task_vars.get("inventory_hostname") if not flat else None
    if not flat and not hostname:
        raise ModuleError("fetch needs inventory_hostname in the task's variables "
                          "(ioc executor bug)")
    path, is_dir = controller_dest(src, dest, flat, hostname)
    checksum = hashlib.sha1(data).hexdigest()
    result = {"changed": True, "md5sum": hashlib.md5(data).hexdigest(), "dest": path,
              "remote_md5sum": None, "checksum": checksum, "remote_checksum": checksum,
              "_ioc_fetch": {"dest": path, "content": data, "checksum": checksum, "flat": flat,
                             "dest_is_dir": is_dir, "validate_checksum": validate}}
    if not results.legacy():  # (2.21's fetch names the source; 2.19's did not)
        result["file"] = src
    return result
