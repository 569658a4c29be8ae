"""Many hosts at once, and connections that fail once: no cliff.

Every host is an inventory name of the one test sshd, each with its own
``HostKeyAlias`` (a connection and a runner of its own). ``ansible_timeout``
is ssh's ``ConnectTimeout`` only, as in Ansible; the runners' bootstraps are
paced and bounded on their own (``ioc/transport/pacing.py``). Before that,
the 3 s timeout below covered ssh *and* the bootstrap of 40 runners started
together on 2 cores, and every host was UNREACHABLE ("Connection timed out").
The full measurement (10 to 200 hosts) is ``python -m benchmarks.fleet``.
"""
from __future__ import annotations

import sys
import time

import pytest

from benchmarks.delayproxy import DelayProxy
from tests.integration.test_faults import FRONTS, Controller

pytestmark = pytest.mark.integration

HOSTS = 40


def test_forty_hosts_at_once_all_complete_within_a_short_connect_timeout(sshd, tmp_path):
    names = ["n%02d" % n for n in range(HOSTS)]
    started = time.monotonic()
    run = Controller("ioc-run", tmp_path, """
        - hosts: all
          gather_facts: false
          tasks:
            - command: echo one
            - command: echo two
            - debug: msg=three
        """, sshd.inventory_ini(names, "ansible_timeout=3"), args=["-f", str(HOSTS)])
    out = run.finish(timeout=300)
    took = time.monotonic() - started
    assert run.rc == 0, out[-3000:]
    assert "UNREACHABLE" not in run.stdout, out[-3000:]
    for name in names:
        assert run.recap(name)["ok"] == 3, out[-3000:]
    print("%d hosts: %.1f s" % (HOSTS, took))


@pytest.mark.parametrize("front", FRONTS)
def test_a_refused_first_connection_is_retried_with_ansible_ssh_retries(sshd, tmp_path, front):
    """Each host's port refuses its first connection: with ``ansible_ssh_retries=2``
    the host is connected on the second attempt, with 0 it is UNREACHABLE."""
    with DelayProxy(sshd.host, sshd.port, refuse_first=1) as patient, \
            DelayProxy(sshd.host, sshd.port, refuse_first=1) as strict:
        inventory = "".join(
            sshd.inventory_ini([name]).replace("ansible_port=%d" % sshd.port,
                                               "ansible_port=%d ansible_ssh_retries=%d"
                                               % (proxy.port, retries))
            for name, proxy, retries in (("patient", patient, 2), ("strict", strict, 0)))
        run = Controller(front, tmp_path, """
            - hosts: all
              gather_facts: false
              tasks:
                - command: echo hello
            """, inventory)
        out = run.finish()
        attempts = {name: len(proxy.connections()) for name, proxy in
                    (("patient", patient), ("strict", strict))}
    assert run.rc == 4, out
    assert run.recap("patient")["ok"] == 1 and run.recap("patient")["unreachable"] == 0, out
    assert run.recap("strict")["unreachable"] == 1, out
    assert "fatal: [strict]: UNREACHABLE!" in run.stdout, out
    assert attempts == {"patient": 2, "strict": 1}, (attempts, out)


def test_a_runner_that_does_not_start_in_time_is_unreachable_and_the_others_go_on(sshd, tmp_path):
    """ssh connects at once, but the runner's imports stall on the target (a
    ``sitecustomize`` there sleeps on ``import pprint``, which the runner needs
    and mitogen does not): the bootstrap bound cuts it, the other host runs."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys, time\n"
        "class Stall:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'pprint':\n"
        "            time.sleep(60)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Stall())\n")
    python = tmp_path / "stalling-python"
    python.write_text("#!/bin/sh\nPYTHONPATH=%s exec %s \"$@\"\n" % (site, sys.executable))
    python.chmod(0o755)
    inventory = sshd.inventory_ini(["quick"]) + sshd.inventory_ini(["stuck"], python=str(python))
    started = time.monotonic()
    run = Controller("ioc-run", tmp_path, """
        - hosts: all
          gather_facts: false
          tasks:
            - command: echo hello
        """, inventory, env={"IOC_BOOTSTRAP_TIMEOUT": "10"})
    out = run.finish()
    took = time.monotonic() - started
    assert run.rc == 4, out
    assert run.recap("quick")["ok"] == 1 and run.recap("stuck")["unreachable"] == 1, out
    assert "the ioc runner did not start within 10 seconds of connecting " \
           "(IOC_BOOTSTRAP_TIMEOUT)" in run.stdout, out
    assert took < 40, "the stalled host held the run for %.0f s" % took
