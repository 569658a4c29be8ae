"""``systemd`` (``systemd_service``): control a unit through systemctl.

Follows ``ansible.builtin.systemd_service``: ``name``/``service``/``unit``,
``state`` (started, stopped, restarted, reloaded), ``enabled``, ``masked``,
``daemon_reload``, ``daemon_reexec``, ``scope``, ``no_block``, ``force``.
Results carry ``name``, ``changed``, ``status`` (every property of
``systemctl show <unit>``), ``enabled`` when asked for and ``state`` when a
state was asked for. Check mode reports what would change and runs no
changing systemctl command.

Unlike Ansible, which lets systemctl discover a missing systemd, the module
fails up front, naming the reason, when the host is not managed by systemd
(the ``sd_booted`` canaries Ansible's service facts use).
"""
import glob
import os

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({
    "name", "service", "unit", "state", "enabled", "force", "masked", "daemon_reload",
    "daemon-reload", "daemon_reexec", "daemon-reexec", "scope", "no_block",
})

SUPPORTS_CHECK_MODE = True

#: Paths whose existence shows systemd is the running init (sd_booted(3)).
_SYSTEMD_CANARIES = ("/run/systemd/system/", "/dev/.run/systemd/", "/dev/.systemd/")
#: Name of PID 1, the last resort of the check.
_PROC1_COMM = "/proc/1/comm"
#: Where SysV init scripts live (tests point it at a temp dir).
_INIT_DIR = "/etc/init.d"
_RC_GLOB = "/etc/rc?.d/S??%s"

_STATES = ("reloaded", "restarted", "started", "stopped")
_ENABLED_STATES = ("enabled", "enabled-runtime", "linked", "linked-runtime", "masked",
                   "masked-runtime", "static", "indirect", "disabled", "generated",
                   "transient")


def systemd_booted():
    """True when systemd manages this host, like Ansible's is_systemd_managed."""
    if any(os.path.exists(c) for c in _SYSTEMD_CANARIES):
        return True
    try:
        with open(_PROC1_COMM) as f:
            return f.readline().strip() == "systemd"
    except OSError:
        return False


def require_systemd(module):
    """Fail the task clearly when the host does not run systemd."""
    if not systemd_booted():
        raise ModuleError(
            "The %s module needs systemd, but this host is not managed by systemd "
            "(none of %s exists and PID 1 is not systemd)."
            % (module, ", ".join(_SYSTEMD_CANARIES)))


def parse_systemctl_show(lines):
    """``systemctl show`` output as a dict; only ``Exec*={...}`` values span lines."""
    parsed = {}
    multival = []
    key = None
    for line in lines:
        if key is None:
            if "=" in line:
                key, value = line.split("=", 1)
                if key.startswith("Exec") and value.lstrip().startswith("{") \
                        and not value.rstrip().endswith("}"):
                    multival.append(value)
                    continue
                parsed[key] = value.strip()
                key = None
        else:
            multival.append(line)
            if line.rstrip().endswith("}"):
                parsed[key] = "\n".join(multival).strip()
                multival = []
                key = None
    return parsed


def request_was_ignored(out):
    return "=" not in out and ("ignoring request" in out or "ignoring command" in out)


class _Systemctl(object):
    """systemctl with the task's scope/no_block/force flags and environment."""

    def __init__(self, ctx, scope, no_block, force):
        self.ctx = ctx
        self.base = [_common.require_bin("systemctl", ctx)]
        if scope != "system":
            self.base.append("--" + scope)
        if no_block:
            self.base.append("--no-block")
        if force:
            self.base.append("--force")
        self.env = {}
        if "XDG_RUNTIME_DIR" not in ctx.child_env():
            self.env["XDG_RUNTIME_DIR"] = "/run/user/%s" % os.geteuid()

    def __call__(self, *words):
        return _common.run_text(self.ctx, self.base + list(words), env=self.env)


def _sysv_exists(name):
    return os.path.exists(name if name.startswith("/") else os.path.join(_INIT_DIR, name))


def _sysv_is_enabled(name):
    return bool(glob.glob(_RC_GLOB % name))


def _unit_status(systemctl, unit, result):
    """Fill ``result['status']``; return whether systemd knows ``unit``."""
    rc, out, err = systemctl("show", unit)
    if rc == 0 and not (request_was_ignored(out) or request_was_ignored(err)):
        if not out:
            return False
        status = result["status"] = parse_systemctl_show(out.split("\n"))
        load_state = status.get("LoadState")
        known = load_state is not None and load_state != "not-found"
        if known and load_state != "masked" and "LoadError" in status:
            raise ModuleError("Error loading unit file '%s': %s" % (unit, status["LoadError"]))
        return known
    rc, out, err = systemctl("is-enabled", unit)
    if out.strip() in _ENABLED_STATES:
        return True
    rc, out, err = systemctl("list-unit-files", unit)
    return rc == 0


def _fail_if_missing(found, unit):
    if not found:
        raise ModuleError("Could not find the requested service %s: host" % unit)


def _apply_masked(systemctl, ctx, unit, masked, found, result):
    rc, out, err = systemctl("is-enabled", unit)
    if (out.strip() == "masked") == masked:
        return
    result["changed"] = True
    if ctx.check_mode:
        return
    action = "mask" if masked else "unmask"
    rc, out, err = systemctl(action, unit)
    if rc != 0:
        _fail_if_missing(found, unit)
        raise ModuleError("Failed to %s the service (%s): %s" % (action, unit, err.strip()))


def _apply_enabled(systemctl, ctx, unit, enable, found, is_initd, scope, result):
    _fail_if_missing(found, unit)
    rc, out, err = systemctl("is-enabled", unit, "-l")
    enabled = False
    if rc == 0:
        enabled = out.rstrip() not in ("enabled-runtime", "indirect", "alias")
    elif rc == 1 and scope == "system" and is_initd \
            and not out.strip().endswith("disabled") and _sysv_is_enabled(unit):
        enabled = True
    result["enabled"] = enabled
    if enabled == enable:
        return
    result["changed"] = True
    if not ctx.check_mode:
        action = "enable" if enable else "disable"
        rc, out, err = systemctl(action, unit)
        if rc != 0:
            raise ModuleError("Unable to %s service %s: %s" % (action, unit, out + err))
    result["enabled"] = enable


def _apply_state(systemctl, ctx, unit, state, found, result):
    _fail_if_missing(found, unit)
    result["state"] = state
    status = result["status"]
    if "ActiveState" not in status:
        raise ModuleError("Service is in unknown state", status=status)
    running = status["ActiveState"] in ("active", "activating")
    action = None
    if state == "started":
        action = None if running else "start"
    elif state == "stopped":
        if running or status["ActiveState"] == "deactivating":
            action = "stop"
    else:
        action = state[:-2] if running else "start"
        result["state"] = "started"
    if action is None:
        return
    result["changed"] = True
    if not ctx.check_mode:
        rc, out, err = systemctl(action, unit)
        if rc != 0:
            raise ModuleError("Unable to %s service %s: %s" % (action, unit, err))


def _daemon(systemctl, ctx, verb):
    if ctx.check_mode:
        return
    rc, out, err = systemctl(verb)
    if rc != 0:
        raise ModuleError("failure %d during %s: %s" % (rc, verb, err))


def run_systemd(args, ctx, module="systemd"):
    """The module's body; ``service`` calls it on systemd hosts."""
    unit = _common.resolve_aliases(args, "name", ("service", "unit"))
    _common.resolve_aliases(args, "daemon_reload", ("daemon-reload",))
    _common.resolve_aliases(args, "daemon_reexec", ("daemon-reexec",))
    state = _common.opt_str(args, "state")
    if state is not None:
        _common.check_choice(state, "state", _STATES)
    enabled = _common.opt_bool(args, "enabled", None)
    masked = _common.opt_bool(args, "masked", None)
    daemon_reload = _common.opt_bool(args, "daemon_reload", False)
    daemon_reexec = _common.opt_bool(args, "daemon_reexec", False)
    scope = _common.check_choice(_common.opt_str(args, "scope", "system"), "scope",
                                 ("system", "user", "global"))
    if state is None and enabled is None and masked is None \
            and not daemon_reload and not daemon_reexec:
        raise ModuleError("one of the following is required: state, enabled, masked, "
                          "daemon_reload, daemon_reexec")
    if unit is None:
        for key, value in (("state", state), ("enabled", enabled), ("masked", masked)):
            if value is not None:
                raise ModuleError("missing parameter(s) required by '%s': name" % key)
    unit = None if unit is None else str(unit)
    for pattern in ("*", "?", "["):
        if unit is not None and pattern in unit:
            raise ModuleError("This module does not currently support using glob patterns, "
                              "found '%s' in service name: %s" % (pattern, unit))
    require_systemd(module)
    systemctl = _Systemctl(ctx, scope, _common.opt_bool(args, "no_block", False),
                           _common.opt_bool(args, "force", False))
    result = {"name": unit, "changed": False, "status": {}}
    if daemon_reload:
        _daemon(systemctl, ctx, "daemon-reload")
    if daemon_reexec:
        _daemon(systemctl, ctx, "daemon-reexec")
    if unit is None:
        return result
    is_initd = _sysv_exists(unit)
    is_systemd = _unit_status(systemctl, unit, result)
    found = is_systemd or is_initd
    warnings = []
    if is_initd and not is_systemd:
        warnings.append("The service (%s) is actually an init script but the system is "
                        "managed by systemd" % unit)
    if masked is not None:
        _apply_masked(systemctl, ctx, unit, masked, found, result)
    if enabled is not None:
        _apply_enabled(systemctl, ctx, unit, enabled, found, is_initd, scope, result)
    if state is not None:
        _apply_state(systemctl, ctx, unit, state, found, result)
    if warnings:
        result["warnings"] = warnings
    return result


@_common.module_entry
def run(args, ctx):
    """Bring a systemd unit to the requested state (see the module docstring)."""
    _common.check_unsupported(args, OPTIONS, "systemd")
    return run_systemd(args, ctx)
