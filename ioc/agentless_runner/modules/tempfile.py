"""``tempfile``: create a temporary file or directory (``ansible.builtin.tempfile``).

Like Ansible's module it does not support check mode (the task is skipped).
"""
import os
import tempfile as _tempfile

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({"state", "path", "prefix", "suffix"})
SUPPORTS_CHECK_MODE = False


@_common.module_entry
def run(args, ctx):
    """``{"changed": True, "path": <new path>}``."""
    _common.check_unsupported(args, OPTIONS, "tempfile")
    state = _common.check_choice(args.get("state") or "file", "state", ("file", "directory"))
    directory = _common.opt_path(args.get("path"))
    prefix = _common.opt_str(args, "prefix", "ansible.")
    suffix = _common.opt_str(args, "suffix", "")
    try:
        if state == "file":
            handle, path = _tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=directory)
            os.close(handle)
        else:
            path = _tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=directory)
    except Exception as e:
        raise ModuleError(str(e))
    return {"changed": True, "path": path}
