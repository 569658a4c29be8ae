"""``service``: start, stop, restart or reload a service with the host's init system.

Like Ansible's ``service`` action, ``use: auto`` picks the service manager:
on a host managed by systemd the task runs as the ``systemd`` module (the
SysV-only ``pattern``, ``runlevel``, ``sleep`` and ``arguments`` are dropped
with Ansible's warning); otherwise it follows ``ansible.builtin.service``'s
SysV path: ``service <name> status|start|stop|reload`` (or the init script
itself when there is no ``service`` command), a restart done as stop then
start, the LSB status codes and keywords to decide whether the service runs.

Results: ``name``, ``changed``, ``state`` (``started``/``stopped`` after the
action), ``enabled`` when asked for, and on systemd hosts ``status``.

Not supported without systemd: ``enabled`` (Ansible edits rc links with
update-rc.d/chkconfig/insserv); upstart and OpenRC.
"""
import os
import time

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common, systemd

OPTIONS = frozenset({
    "name", "state", "enabled", "sleep", "pattern", "arguments", "args", "runlevel", "use",
})

SUPPORTS_CHECK_MODE = True

#: Where SysV init scripts live (tests point it at a temp dir).
_INIT_DIR = "/etc/init.d"
#: The SysV front end; when missing, the init script is run directly.
_SERVICE = "service"
_SYSV_ONLY = ("pattern", "runlevel", "sleep", "arguments", "args")
_LANG_C = {"LANG": "C", "LC_ALL": "C", "LC_MESSAGES": "C"}
_NOT_RUNNING_RC = (1, 2, 3, 4, 69)


def _use(args):
    use = (_common.opt_str(args, "use", "auto") or "auto").lower()
    if use == "auto":
        return "systemd" if systemd.systemd_booted() else "sysvinit"
    if use in ("service", "sysvinit", "systemd"):
        return use if use != "service" else "sysvinit"
    raise ModuleError("ioc cannot manage services with '%s'; use one of auto, systemd, "
                      "sysvinit, service" % use)


def _run_on_systemd(args, ctx):
    warnings = []
    for key in _SYSV_ONLY:
        if key in args:
            del args[key]
            warnings.append('Ignoring "%s" as it is not used in "systemd"' % key)
    args.pop("use", None)
    args.pop("runlevel", None)
    result = systemd.run_systemd(args, ctx, module="service")
    if warnings:
        result["warnings"] = warnings + result.get("warnings", [])
    return result


class _SysV(object):
    """A SysV service: how to run its actions and read its status."""

    def __init__(self, ctx, name, arguments):
        self.ctx = ctx
        self.name = name
        self.arguments = arguments.split() if arguments else []
        script = os.path.join(_INIT_DIR, name)
        self.initscript = script if os.path.isfile(script) else None
        self.service_bin = _common.get_bin_path(_SERVICE, ctx.child_env())
        if self.service_bin is None and self.initscript is None:
            raise ModuleError("cannot find 'service' binary or init script for service,  "
                              "possible typo in service name?, aborting")

    def control(self, action):
        if self.service_bin:
            argv = [self.service_bin, self.name, action]
        else:
            argv = [self.initscript, action]
        return _common.run_text_detached(self.ctx, argv + self.arguments, env=_LANG_C)

    def running(self):
        """True, False, or None when the status cannot be told (Ansible's rules)."""
        rc, out, err = self.control("status")
        if rc in _NOT_RUNNING_RC:
            return False
        if out.count("\n") <= 1:
            clean = out.lower().replace(self.name.lower(), "")
            if "stop" in clean:
                return False
            if "run" in clean:
                return "not " not in clean
            if "start" in clean and "not " not in clean:
                return True
            for dead in ("could not access pid file", "is dead and pid file exists",
                         "dead but subsys locked", "dead but pid file exists"):
                if dead in clean:
                    return False
        if rc == 0:
            return True
        return None


def _action(state, running):
    """The init script action ``state`` needs, or None."""
    if state == "started":
        return None if running else "start"
    if state == "stopped":
        return "stop" if running else None
    if state == "reloaded":
        return "reload" if running else "start"
    return "restart"


def _run_sysv(args, ctx, name, state, sleep):
    if _common.opt_bool(args, "enabled", None) is not None:
        raise ModuleError("Could not find the requested service %s: host" % name
                          if not os.path.isfile(os.path.join(_INIT_DIR, name)) else
                          "ioc supports 'enabled' only on hosts managed by systemd; this host "
                          "uses SysV init scripts")
    if state is None:
        raise ModuleError("one of the following is required: state, enabled")
    svc = _SysV(ctx, name, _common.opt_str(args, "arguments", ""))
    pattern = _common.opt_str(args, "pattern")
    running = _ps_matches(ctx, pattern) if pattern else svc.running()
    if running is None:
        raise ModuleError("failed determining service state, possible typo of service name?")
    action = _action(state, running)
    if action is not None and ctx.check_mode:
        return {"changed": True, "msg": "service state changed"}
    if action == "restart":
        rc, out, err = _restart(svc, sleep)
    elif action is not None:
        rc, out, err = svc.control(action)
    else:
        rc, out, err = 0, "", ""
    if rc != 0:
        raise ModuleError(err or out)
    return {"name": name, "changed": action is not None,
            "state": "stopped" if state == "stopped" else "started"}


def _restart(svc, sleep):
    """stop, sleep, start, merged like Ansible (not every script has restart)."""
    rc1, out1, err1 = svc.control("stop")
    if sleep:
        time.sleep(sleep)
    rc2, out2, err2 = svc.control("start")
    if rc1 != 0 and rc2 == 0:
        return rc2, out2, err2
    return rc1 + rc2, out1 + out2, err1 + err2


def _ps_matches(ctx, pattern):
    rc, out, err = _common.run_text(ctx, [_common.require_bin("ps", ctx), "auxww"])
    if rc != 0:
        return None
    return any(pattern in line and "pattern=" not in line for line in out.split("\n"))


@_common.module_entry
def run(args, ctx):
    """Bring service ``name`` to ``state`` (see the module docstring)."""
    _common.check_unsupported(args, OPTIONS, "service")
    name = _common.opt_str(args, "name")
    if not name:
        raise ModuleError("missing required arguments: name")
    if _use(args) == "systemd":
        return _run_on_systemd(args, ctx)
    _common.resolve_aliases(args, "arguments", ("args",))
    state = _common.opt_str(args, "state")
    if state is not None:
        _common.check_choice(state, "state", ("started", "stopped", "reloaded", "restarted"))
    sleep = args.get("sleep")
    try:
        sleep = int(sleep) if sleep is not None else None
    except (TypeError, ValueError):
        raise ModuleError("argument 'sleep' is of type %s and we were unable to convert to int"
                          % type(sleep))
    return _run_sysv(args, ctx, name, state, sleep)
