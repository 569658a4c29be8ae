"""``mitogen_batch`` connects a play's hosts while ansible-playbook plans the play.

Before the first batch can start, the strategy's parent converts the play
and builds its modules' payloads (seconds for a role's worth of modules),
and ssh plus the runner's bootstrap take ~10 round trips. The dispatcher
starts the connections as soon as the parent knows the play's hosts and
their connection variables, so the two overlap. Only a warm-up: a host
that cannot be reached is still UNREACHABLE at its first task that
connects, in linear's words, and one that can be reached by then (its sshd
started by an earlier task of the play) is reached, as under linear.

The hosts are the test sshd behind the delay proxy
(``benchmarks/delayproxy.py``), under ansible-core 2.21 and 2.19.
"""
from __future__ import annotations

import os
import subprocess
import time

import pytest

from benchmarks.delayproxy import DelayProxy
from tests.support import late_sshd
from tests.support.late_sshd import LateSshd
from tests.ansible.test_mitogen_batch import (  # noqa: F401 (fixture)
    ROOT, STRATEGY_DIR, TIMEOUT, Ansible, ansible_python, assert_same_output)

pytestmark = pytest.mark.integration

#: What the strategy prints (``-vv``) once the play is planned.
PLANNED = "mitogen_batch: play 'early' runs in"

#: A module of the play's own whose payload takes the parent a while to build
#: (Ansible's module_common parses it whole): the planning a role's worth of
#: Ansible's modules costs, made certain.
BULKY_MODULE = '''#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule

%s

def main():
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    module.exit_json(changed=False, bulk=len(TABLE))


if __name__ == "__main__":
    main()
''' % ("TABLE = [\n%s]\n" % "".join("    {'key%d': (%d, 'v%d', [%d, %d])},\n" % (i, i, i, i, i + 1)
                                      for i in range(60000)))


@pytest.fixture
def ansible(ansible_python, tmp_path) -> Ansible:
    return Ansible(ansible_python, tmp_path)


def run_timed(ansible: Ansible, playbook: str, inventory: str, *args: str):
    """ansible-playbook under mitogen_batch, each line of its console with the
    ``time.monotonic()`` it arrived at; (rc, [(time, line)])."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    environ.update({
        "ANSIBLE_CONFIG": str(ansible.config), "ANSIBLE_STRATEGY": "mitogen_batch",
        "ANSIBLE_STRATEGY_PLUGINS": str(STRATEGY_DIR), "ANSIBLE_HOST_KEY_CHECKING": "False",
        "ANSIBLE_RETRY_FILES_ENABLED": "False", "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORKS": "1", "PYTHONUNBUFFERED": "1", "IOC_EARLY_CONNECT": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    })
    script = os.path.join(os.path.dirname(ansible.python), "ansible-playbook")
    proc = subprocess.Popen([ansible.python, script, "-i", inventory, playbook, *args],
                            cwd=str(ansible.workdir), env=environ, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
    lines = []
    deadline = time.monotonic() + TIMEOUT
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append((time.monotonic(), line.rstrip("\n")))
        assert time.monotonic() < deadline, "ansible-playbook ran too long"
    return proc.wait(timeout=TIMEOUT), lines


def test_the_first_connection_is_made_while_the_play_is_planned(ansible, ansible_python, sshd):
    """At 150 ms one way, the ssh connection to the host is open before the
    strategy has planned the play (its ``-vv`` line): without the overlap the
    connection would start only after it."""
    ansible.write("library/bulky.py", BULKY_MODULE)
    ansible.write("play.yml", """
        - name: early
          hosts: web
          gather_facts: false
          tasks:
            - bulky:
            - command: echo {{ inventory_hostname }}
    """)
    with DelayProxy(sshd.host, sshd.port, 0.15) as proxy:
        inventory = str(ansible.write("hosts.ini", sshd.inventory_ini(
            ["h1"], python=ansible_python, group="web").replace(
                "ansible_port=%d" % sshd.port, "ansible_port=%d" % proxy.port)))
        rc, lines = run_timed(ansible, "play.yml", inventory, "-vv")
        connections = proxy.connections()
    console = "\n".join(line for _, line in lines)
    assert rc == 0, console
    assert "h1                         : ok=2    changed=1    unreachable=0    failed=0" \
        in console, console
    planned = [t for t, line in lines if line.startswith(PLANNED)]
    assert planned, console
    assert connections, "no connection through the proxy"
    assert connections[0]["opened"] < planned[0], (
        "the first connection opened %.2f s after the play was planned"
        % (connections[0]["opened"] - planned[0]))


def test_a_host_reached_only_after_an_earlier_task_is_reached_as_in_linear(
        ansible, ansible_python, sshd, tmp_path):
    """The host's sshd (a relay to the test sshd) is started by the play's first
    task, on the controller: the early connection, made while the play is
    planned, is refused; the first task that connects reaches the host, as
    under linear. Without the relay the host is UNREACHABLE at that task, in
    linear's words, after the tasks that need no connection ran."""
    late = LateSshd(sshd, tmp_path, python=ansible_python)
    ansible.write("play.yml", late_sshd.PLAYBOOK)
    inventory = str(ansible.write("hosts.ini", late.inventory))
    results = {}
    for start in ("true", "false"):
        for strategy in ("mitogen_batch", "linear"):
            try:
                results[start, strategy] = ansible.run(
                    "play.yml", inventory, strategy, env={"IOC_EARLY_CONNECT": "1"},
                    args=["-e", "start_relay=%s" % start])
            finally:
                late.stop_relay()
    reached_linear, reached_batch = results["true", "linear"], results["true", "mitogen_batch"]
    assert reached_linear.rc == 0, reached_linear.stdout + reached_linear.stderr
    assert_same_output(reached_linear, reached_batch)
    assert "h1                         : ok=4    changed=2    unreachable=0    failed=0" \
        in reached_batch.stdout, reached_batch.stdout
    # (the early connection was tried, and refused: the dispatcher's log says so)
    assert "h1: warming up its connection failed" in reached_batch.log, \
        reached_batch.log
    lost_linear, lost_batch = results["false", "linear"], results["false", "mitogen_batch"]
    assert lost_linear.rc == 4, lost_linear.stdout + lost_linear.stderr
    assert_same_output(lost_linear, lost_batch)
    assert '"msg": "no connection needed"' in lost_batch.stdout
    assert "fatal: [h1]: UNREACHABLE!" in lost_batch.stdout
