"""``ping``: prove the target can run a module; ``data=crash`` raises on purpose."""
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({"data"})
SUPPORTS_CHECK_MODE = True


@_common.module_entry
def run(args, ctx):
    """Return ``{"ping": data}``; raise for ``data == "crash"`` like Ansible."""
    _common.check_unsupported(args, OPTIONS, "ping")
    data = args.get("data")
    data = "pong" if data is None else str(data)
    if data == "crash":
        raise Exception("boom")
    return {"ping": data, "changed": False}
