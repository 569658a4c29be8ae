"""``fail``: fail the task with ``msg``."""
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({"msg"})
SUPPORTS_CHECK_MODE = True


@_common.module_entry
def run(args, ctx):
    """Always fail, with ``msg`` (Ansible's default message otherwise)."""
    _common.check_unsupported(args, OPTIONS, "fail")
    msg = args.get("msg")
    if msg is None:
        msg = "Failed as requested from task"
    return {"failed": True, "msg": msg, "changed": False}
