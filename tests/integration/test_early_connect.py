"""``ioc-run`` connects the first play's hosts while it resolves and plans the playbook.

Before the first batch can go out, ``ioc-run`` imports Ansible's plugin
loader, resolves every task's module and plans every play (about a second
of a cold run); ssh and the runner's bootstrap take about ten round trips.
As soon as the playbook and the inventory are read, the first play's hosts
start connecting, so the two overlap. The early attempt is the first step's
own: a host that cannot be reached is UNREACHABLE there, after as many
attempts as Ansible makes (``tests/integration/test_fleet.py``,
``test_a_refused_first_connection_is_retried_with_ansible_ssh_retries``);
a host first needed after other work (a delegated task that starts its
sshd) is connected afresh then, as under linear.

Real sshd, real ``ioc-run``, latency from the delay proxy.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from benchmarks.delayproxy import DelayProxy
from tests.support import late_sshd
from tests.support.late_sshd import LateSshd

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 180
pytestmark = pytest.mark.integration


def ioc_run(tmp_path: Path, playbook: str, inventory: str, *args: str, env=None,
            merged: bool = False):
    """``ioc-run`` on ``playbook``, each line of its stdout (``merged``: and
    stderr) with the ``time.monotonic()`` it arrived at; (rc, [(time, line)],
    stderr)."""
    (tmp_path / "play.yml").write_text(textwrap.dedent(playbook))
    (tmp_path / "hosts.ini").write_text(inventory)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    environ.update(PYTHONUNBUFFERED="1", PYTHONPATH=os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    environ.update(env or {})
    proc = subprocess.Popen([sys.executable, "-m", "ioc", "play.yml", "-i", "hosts.ini", *args],
                            cwd=str(tmp_path), env=environ, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT if merged else subprocess.PIPE, text=True)
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append((time.monotonic(), line.rstrip("\n")))
    return proc.wait(timeout=TIMEOUT), lines, proc.stderr.read() if proc.stderr else ""


#: A ``sitecustomize`` for ioc-run's interpreter (on its PYTHONPATH: the
#: target's sessions do not see it) that makes importing Ansible's plugin
#: loader take 2 s, as a loaded controller might: the overlap made certain.
SLOW_LOADER = """\
import sys, time
class Slow:
    def find_spec(self, name, path=None, target=None):
        if name == "ansible.plugins.loader":
            time.sleep(2)
        return None
sys.meta_path.insert(0, Slow())
"""


def test_the_first_connection_opens_before_the_playbook_is_planned(sshd, tmp_path):
    """At 150 ms one way, the ssh connection to the host is open before the
    play's first step starts (``-vvvv`` logs it), which comes once ``ioc-run``
    has imported Ansible's plugin loader (slowed down to 2 s here), resolved
    the modules and planned the playbook: without the overlap the connection
    would start after it. (The run before it keeps Ansible's settings for
    this environment, as anyone's first run does: reading them imports
    Ansible, before any host is known.)"""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_LOADER)
    slow = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), str(ROOT),
                                                         os.environ.get("PYTHONPATH")]))}
    playbook = """
        - name: early
          hosts: web
          gather_facts: false
          tasks:
            - command: echo {{ inventory_hostname }}
        """
    with DelayProxy(sshd.host, sshd.port, 0.15) as proxy:
        inventory = sshd.inventory_ini(["h1"], group="web").replace(
            "ansible_port=%d" % sshd.port, "ansible_port=%d" % proxy.port)
        rc, lines, err = ioc_run(tmp_path, playbook, inventory, env=slow)
        assert rc == 0, "\n".join(line for _, line in lines) + err
        started = time.monotonic()
        rc, lines, _ = ioc_run(tmp_path, playbook, inventory, "-vvvv", merged=True, env=slow)
        connections = [c for c in proxy.connections() if c["opened"] > started]
    console = "\n".join(line for _, line in lines)
    assert rc == 0, console
    assert "h1                         : ok=1    changed=1    unreachable=0    failed=0" \
        in console, console
    planned = [t for t, line in lines if "ioc.controller.play INFO Batch " in line]
    assert planned and connections, console
    assert connections[0]["opened"] < planned[0], (
        "the connection opened %.2f s after the playbook was planned"
        % (connections[0]["opened"] - planned[0]))


def test_a_host_whose_sshd_an_earlier_task_starts_is_reached(sshd, tmp_path):
    """The host's sshd (a relay to the test sshd) is started by the play's
    first task, on the controller: the early connection is refused (ioc's log
    says so at -vvvv), and the first task that needs the host connects
    afresh and reaches it. Without the relay, the same play reports the host
    UNREACHABLE at that task, after the task that needs no connection ran."""
    late = LateSshd(sshd, tmp_path)
    results = {}
    for start in ("true", "false"):
        try:
            results[start] = ioc_run(tmp_path, late_sshd.PLAYBOOK, late.inventory, "-vvvv",
                                     "-e", "start_relay=%s" % start)
        finally:
            late.stop_relay()
    rc, lines, err = results["true"]
    console = "\n".join(line for _, line in lines)
    assert rc == 0, console + err
    assert "h1                         : ok=4    changed=2    unreachable=0    failed=0" \
        in console, console
    assert "h1: warming up its connection failed" in err, err
    rc, lines, err = results["false"]
    console = "\n".join(line for _, line in lines)
    assert rc == 4, console + err
    assert '"msg": "no connection needed"' in console, console
    assert "fatal: [h1]: UNREACHABLE!" in console, console
    assert "h1                         : ok=1    changed=0    unreachable=1    failed=0" \
        in console, console
