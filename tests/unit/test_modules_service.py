"""service module on a host without systemd: SysV init scripts in a temp init.d.

The init script really starts a background daemon that keeps the script's
stdout open, so a test also proves the module does not wait for it.
"""
import os
import signal
import stat
import textwrap

import pytest

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext
from ioc.agentless_runner.modules import service as service_impl
from ioc.agentless_runner.modules import systemd as systemd_impl

service = modules.get("service")

INIT_SCRIPT = textwrap.dedent(r"""
    #!/bin/sh
    PIDFILE="$(dirname "$0")/../run/ioctestd.pid"
    echo "$1" >> "$(dirname "$0")/../actions"
    running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }
    case "$1" in
      start) running || { sleep 300 & echo $! > "$PIDFILE"; }; echo "Starting ioctestd" ;;
      stop) running && kill "$(cat "$PIDFILE")"; rm -f "$PIDFILE"; echo "Stopping ioctestd" ;;
      status) if running; then echo "ioctestd is running"; exit 0;
              else echo "ioctestd is not running"; exit 3; fi ;;
      reload) running || exit 7; echo reloaded ;;
      *) echo "Usage: $0 {start|stop|status|reload}" >&2; exit 2 ;;
    esac
""").lstrip()

FAKE_SERVICE = textwrap.dedent(r"""
    #!/bin/sh
    name=$1; shift
    exec "$FAKE_INIT_DIR/$name" "$@"
""").lstrip()


def _exe(path, text):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


class SysV(object):
    def __init__(self, root):
        self.root = root
        for sub in ("init.d", "run", "bin"):
            (root / sub).mkdir()
        _exe(root / "init.d" / "ioctestd", INIT_SCRIPT)
        _exe(root / "bin" / "service", FAKE_SERVICE)
        self.env = {"FAKE_INIT_DIR": str(root / "init.d"),
                    "PATH": "%s:%s" % (root / "bin", os.environ.get("PATH", ""))}

    def ctx(self, check_mode=False):
        return ModuleContext(check_mode=check_mode, environment=self.env)

    def pid(self):
        try:
            pid = int((self.root / "run" / "ioctestd.pid").read_text())
            os.kill(pid, 0)
            return pid
        except (OSError, ValueError):
            return None

    def actions(self):
        p = self.root / "actions"
        return p.read_text().split() if p.exists() else []


@pytest.fixture
def sysv(tmp_path, monkeypatch):
    monkeypatch.setattr(systemd_impl, "_SYSTEMD_CANARIES", (str(tmp_path / "nope"),))
    monkeypatch.setattr(systemd_impl, "_PROC1_COMM", str(tmp_path / "nope"))
    monkeypatch.setattr(service_impl, "_INIT_DIR", str(tmp_path / "init.d"))
    s = SysV(tmp_path)
    yield s
    pid = s.pid()
    if pid:
        os.kill(pid, signal.SIGTERM)


def run(ctx, **args):
    return service.run(args, ctx)


def test_start_is_changed_then_idempotent_and_does_not_wait_for_the_daemon(sysv):
    r = run(sysv.ctx(), name="ioctestd", state="started")
    assert r == {"name": "ioctestd", "changed": True, "state": "started"}
    assert sysv.pid() is not None
    assert sysv.actions() == ["status", "start"]
    r = run(sysv.ctx(), name="ioctestd", state="started")
    assert r["changed"] is False and sysv.actions()[-1] == "status"


def test_check_mode_runs_only_status(sysv):
    r = run(sysv.ctx(check_mode=True), name="ioctestd", state="started")
    assert r == {"changed": True, "msg": "service state changed"}
    assert sysv.pid() is None and sysv.actions() == ["status"]


def test_stop_restart_reload(sysv):
    run(sysv.ctx(), name="ioctestd", state="started")
    first = sysv.pid()
    r = run(sysv.ctx(), name="ioctestd", state="restarted", sleep=0)
    assert r["changed"] is True and r["state"] == "started"
    assert sysv.actions()[-2:] == ["stop", "start"]
    assert sysv.pid() not in (None, first)
    r = run(sysv.ctx(), name="ioctestd", state="reloaded")
    assert r["changed"] is True and sysv.actions()[-1] == "reload"
    r = run(sysv.ctx(), name="ioctestd", state="stopped")
    assert r == {"name": "ioctestd", "changed": True, "state": "stopped"}
    assert sysv.pid() is None
    assert run(sysv.ctx(), name="ioctestd", state="stopped")["changed"] is False


def test_runs_the_init_script_when_there_is_no_service_command(sysv, monkeypatch):
    monkeypatch.setattr(service_impl, "_SERVICE", "ioc-no-such-service-command")
    r = run(sysv.ctx(), name="ioctestd", state="started")
    assert r["changed"] is True and sysv.pid() is not None


def test_failed_action_reports_stderr(sysv):
    (sysv.root / "init.d" / "broken").write_text("#!/bin/sh\n[ \"$1\" = status ] && exit 3\n"
                                                 "echo 'cannot start: no config' >&2; exit 1\n")
    (sysv.root / "init.d" / "broken").chmod(0o755)
    r = run(sysv.ctx(), name="broken", state="started")
    assert r["failed"] is True and r["msg"] == "cannot start: no config\n"


def test_unknown_service(sysv, monkeypatch):
    monkeypatch.setattr(service_impl, "_SERVICE", "ioc-no-such-service-command")
    r = run(sysv.ctx(), name="nothere", state="started")
    assert r["failed"] is True and "cannot find 'service' binary or init script" in r["msg"]


def test_enabled_is_refused_without_systemd(sysv):
    r = run(sysv.ctx(), name="ioctestd", enabled=True)
    assert r["failed"] is True and "only on hosts managed by systemd" in r["msg"]
    r = run(sysv.ctx(), name="nothere", enabled=True)
    assert r["failed"] is True and r["msg"] == "Could not find the requested service nothere: host"


def test_use_systemd_on_a_sysv_host_fails_clearly(sysv):
    r = run(sysv.ctx(), name="ioctestd", state="started", use="systemd")
    assert r["failed"] is True and r["msg"].startswith("The service module needs systemd")


def test_pattern_decides_running(sysv):
    r = run(sysv.ctx(check_mode=True), name="ioctestd", state="stopped",
            pattern="ioc-pattern-that-matches-no-process-%d" % os.getpid())
    assert r == {"name": "ioctestd", "changed": False, "state": "stopped"}


def test_requires_state(sysv):
    r = run(sysv.ctx(), name="ioctestd")
    assert r["failed"] is True and r["msg"] == "one of the following is required: state, enabled"
