"""``slurp``: return a target file's content, base64-encoded (``ansible.builtin.slurp``)."""
import base64
import errno

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({"src", "path"})
SUPPORTS_CHECK_MODE = True


def read(source):
    """The bytes of ``source`` or ModuleError with slurp's messages."""
    try:
        return _common.read_bytes(source)
    except (IOError, OSError) as e:
        if e.errno == errno.ENOENT:
            msg = "File not found: %s" % source
        elif e.errno == errno.EACCES:
            msg = "file is not readable: %s" % source
        elif e.errno == errno.EISDIR:
            msg = "Source is a directory and must be a file: %s" % source
        else:
            msg = "unable to slurp file: %s" % e
        raise ModuleError(msg)


@_common.module_entry
def run(args, ctx):
    """``{"content": <base64>, "encoding": "base64", "source": src}``."""
    _common.check_unsupported(args, OPTIONS, "slurp")
    source = _common.opt_path(_common.resolve_aliases(args, "src", ("path",)))
    if not source:
        raise ModuleError("missing required arguments: src")
    data = read(source)
    return {"changed": False, "content": base64.b64encode(data).decode("ascii"),
            "source": source, "encoding": "base64"}
