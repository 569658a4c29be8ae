"""systemd and service (systemd path): driven against a fake systemctl.

This container has no systemd, so the tests point the systemd canaries at a
temp dir and put a shell-script systemctl first on the task's PATH. The
script keeps unit state in files and logs every call, so the tests can see
which commands ran (and that check mode ran none that change anything).
"""
import os
import stat
import textwrap

import pytest

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext
from ioc.agentless_runner.modules import systemd as systemd_impl

systemd = modules.get("systemd")
service = modules.get("service")

FAKE_SYSTEMCTL = textwrap.dedent(r"""
    #!/bin/sh
    D="$FAKE_SYSTEMD_DIR"
    echo "$*" >> "$D/log"
    while case "$1" in --*) true;; *) false;; esac; do shift; done
    verb=$1; unit=$2
    case "$verb" in
      show)
        if [ -e "$D/units/$unit" ]; then
          if [ -e "$D/masked/$unit" ]; then load=masked; else load=loaded; fi
          if [ -e "$D/active/$unit" ]; then act=active; sub=running; else act=inactive; sub=dead; fi
          printf 'Id=%s\nLoadState=%s\nActiveState=%s\nSubState=%s\n' "$unit" "$load" "$act" "$sub"
          printf 'ExecStart={ path=/bin/true ; argv[]=/bin/true ;\n ignore_errors=no }\n'
          printf 'Description={weird description\nMainPID=0\n'
        else
          printf 'Id=%s\nLoadState=not-found\nActiveState=inactive\n' "$unit"
        fi ;;
      is-enabled)
        [ -e "$D/masked/$unit" ] && { echo masked; exit 1; }
        [ -e "$D/enabled/$unit" ] && { echo enabled; exit 0; }
        [ -e "$D/units/$unit" ] && { echo disabled; exit 1; }
        echo "Failed to get unit file state for $unit: No such file or directory" >&2; exit 1 ;;
      enable) touch "$D/enabled/$unit" ;;
      disable) rm -f "$D/enabled/$unit" ;;
      mask) touch "$D/masked/$unit" ;;
      unmask) rm -f "$D/masked/$unit" ;;
      start|restart|reload)
        [ -e "$D/units/$unit" ] || { echo "Failed to $verb $unit: Unit $unit not found." >&2; exit 5; }
        [ -e "$D/masked/$unit" ] && { echo "Failed to $verb $unit: Unit $unit is masked." >&2; exit 1; }
        touch "$D/active/$unit" ;;
      stop) rm -f "$D/active/$unit" ;;
      daemon-reload|daemon-reexec) ;;
      list-unit-files) [ -e "$D/units/$unit" ] ;;
      *) echo "unknown verb $verb" >&2; exit 2 ;;
    esac
""").lstrip()


class FakeSystemd(object):
    def __init__(self, root):
        self.root = root
        for sub in ("units", "active", "enabled", "masked", "bin", "run"):
            (root / sub).mkdir()
        exe = root / "bin" / "systemctl"
        exe.write_text(FAKE_SYSTEMCTL)
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
        (root / "log").write_text("")
        self.ctx_env = {"FAKE_SYSTEMD_DIR": str(root),
                        "PATH": "%s:%s" % (root / "bin", os.environ.get("PATH", ""))}

    def ctx(self, check_mode=False):
        return ModuleContext(check_mode=check_mode, environment=self.ctx_env)

    def add(self, unit, active=False, enabled=False):
        (self.root / "units" / unit).write_text("")
        if active:
            (self.root / "active" / unit).write_text("")
        if enabled:
            (self.root / "enabled" / unit).write_text("")

    def has(self, kind, unit):
        return (self.root / kind / unit).exists()

    def calls(self):
        return (self.root / "log").read_text().splitlines()


@pytest.fixture
def fake(tmp_path, monkeypatch):
    f = FakeSystemd(tmp_path)
    monkeypatch.setattr(systemd_impl, "_SYSTEMD_CANARIES", (str(tmp_path / "run"),))
    monkeypatch.setattr(systemd_impl, "_INIT_DIR", str(tmp_path / "init.d"))
    return f


@pytest.fixture
def no_systemd(tmp_path, monkeypatch):
    monkeypatch.setattr(systemd_impl, "_SYSTEMD_CANARIES", (str(tmp_path / "nope"),))
    monkeypatch.setattr(systemd_impl, "_PROC1_COMM", str(tmp_path / "nope"))


def test_flags_and_aliases():
    assert systemd.SUPPORTS_CHECK_MODE and service.SUPPORTS_CHECK_MODE
    assert {"name", "unit", "service", "daemon_reload", "daemon-reload", "masked",
            "scope"} <= systemd.OPTIONS
    assert modules.MODULES["systemd"] == "systemd"


def test_fails_clearly_without_systemd(no_systemd):
    r = systemd.run({"name": "cron", "state": "started"}, ModuleContext())
    assert r["failed"] is True
    assert r["msg"].startswith("The systemd module needs systemd, but this host is not "
                               "managed by systemd")


def test_this_container_has_no_systemd():
    # the canary is the one Ansible's service facts use
    assert systemd_impl.systemd_booted() is os.path.isdir("/run/systemd/system")


def test_start_then_idempotent(fake):
    fake.add("web.service")
    r = systemd.run({"name": "web.service", "state": "started"}, fake.ctx())
    assert r["changed"] is True and r["state"] == "started" and r["name"] == "web.service"
    assert r["status"]["ActiveState"] == "inactive"  # the status before the action
    assert fake.has("active", "web.service") and "start web.service" in fake.calls()
    r = systemd.run({"name": "web.service", "state": "started"}, fake.ctx())
    assert r["changed"] is False and r["status"]["ActiveState"] == "active"


def test_status_parses_multiline_exec_values(fake):
    fake.add("web.service")
    r = systemd.run({"name": "web.service", "state": "stopped"}, fake.ctx())
    st = r["status"]
    assert st["ExecStart"] == "{ path=/bin/true ; argv[]=/bin/true ;\n ignore_errors=no }"
    assert st["Description"] == "{weird description" and st["MainPID"] == "0"


def test_check_mode_changes_nothing(fake):
    fake.add("web.service")
    r = systemd.run({"name": "web.service", "state": "started", "enabled": True,
                     "masked": True, "daemon_reload": True}, fake.ctx(check_mode=True))
    assert r["changed"] is True and r["enabled"] is True
    assert not fake.has("active", "web.service") and not fake.has("enabled", "web.service")
    assert not fake.has("masked", "web.service")
    changing = [c for c in fake.calls() if c.split()[0] in
                ("start", "enable", "mask", "daemon-reload")]
    assert changing == []


def test_stop_restart_reload(fake):
    fake.add("web.service", active=True)
    r = systemd.run({"name": "web.service", "state": "restarted"}, fake.ctx())
    assert r["changed"] is True and r["state"] == "started"
    assert fake.calls()[-1] == "restart web.service"
    r = systemd.run({"name": "web.service", "state": "reloaded"}, fake.ctx())
    assert r["changed"] is True and fake.calls()[-1] == "reload web.service"
    r = systemd.run({"name": "web.service", "state": "stopped"}, fake.ctx())
    assert r["changed"] is True and not fake.has("active", "web.service")
    r = systemd.run({"name": "web.service", "state": "reloaded"}, fake.ctx())
    assert r["changed"] is True and fake.calls()[-1] == "start web.service"


def test_enable_disable(fake):
    fake.add("web.service")
    r = systemd.run({"name": "web.service", "enabled": "yes"}, fake.ctx())
    assert r["changed"] is True and r["enabled"] is True and fake.has("enabled", "web.service")
    assert "state" not in r
    r = systemd.run({"name": "web.service", "enabled": True}, fake.ctx())
    assert r["changed"] is False and r["enabled"] is True
    r = systemd.run({"name": "web.service", "enabled": False}, fake.ctx())
    assert r["changed"] is True and r["enabled"] is False
    assert not fake.has("enabled", "web.service")


def test_mask_unmask(fake):
    fake.add("web.service")
    assert systemd.run({"name": "web.service", "masked": True}, fake.ctx())["changed"] is True
    assert fake.has("masked", "web.service")
    assert systemd.run({"name": "web.service", "masked": True}, fake.ctx())["changed"] is False
    r = systemd.run({"name": "web.service", "masked": False}, fake.ctx())
    assert r["changed"] is True and not fake.has("masked", "web.service")


def test_daemon_reload_alone_and_scope(fake):
    r = systemd.run({"daemon-reload": True, "scope": "user"}, fake.ctx())
    assert r == {"name": None, "changed": False, "status": {}}
    assert fake.calls() == ["--user daemon-reload"]


def test_missing_unit(fake):
    r = systemd.run({"name": "nothere.service", "state": "started"}, fake.ctx())
    assert r["failed"] is True
    assert r["msg"] == "Could not find the requested service nothere.service: host"


def test_argument_errors(fake):
    r = systemd.run({"name": "web.service"}, fake.ctx())
    assert r["failed"] and r["msg"].startswith("one of the following is required: state")
    r = systemd.run({"state": "started"}, fake.ctx())
    assert r["failed"] and r["msg"] == "missing parameter(s) required by 'state': name"
    r = systemd.run({"name": "web*", "state": "started"}, fake.ctx())
    assert r["failed"] and "glob patterns" in r["msg"]
    r = systemd.run({"name": "web", "state": "running"}, fake.ctx())
    assert r["failed"] and r["msg"].startswith("value of state must be one of")


def test_service_on_systemd_host_runs_systemd_and_drops_sysv_options(fake):
    fake.add("web")
    r = service.run({"name": "web", "state": "started", "enabled": True, "sleep": 1,
                     "arguments": "-x"}, fake.ctx())
    assert r["changed"] is True and r["state"] == "started" and r["enabled"] is True
    assert r["status"]["LoadState"] == "loaded"
    assert r["warnings"] == ['Ignoring "sleep" as it is not used in "systemd"',
                             'Ignoring "arguments" as it is not used in "systemd"']
    assert fake.has("active", "web") and fake.has("enabled", "web")
