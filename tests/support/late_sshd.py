"""A host whose sshd an earlier task of the play starts: the early-connection tests' scenario.

The host's address is a free loopback port with nothing behind it until the
play's first task (delegated to the controller, ``when: start_relay``)
starts a relay there to the test sshd (``benchmarks.delayproxy`` without
delay) and the second waits for it; a ``debug`` needs no connection; the last
task connects. Used by ``tests/integration/test_early_connect.py`` (ioc-run)
and ``tests/ansible/test_mitogen_batch_early_connect.py`` (mitogen_batch).
"""
from __future__ import annotations

import os
import signal
import socket
import sys
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[2]

PLAYBOOK = """
    - name: early
      hosts: web
      gather_facts: false
      tasks:
        - name: the host's sshd comes up
          shell: >-
            {{ relay }} -m benchmarks.delayproxy --listen {{ relay_port }}
            --target {{ target }} >/dev/null 2>&1 & echo $! > {{ pidfile }}
          args:
            chdir: "{{ root }}"
          delegate_to: localhost
          when: start_relay | bool
        - wait_for:
            port: "{{ relay_port }}"
            host: 127.0.0.1
            timeout: 20
          delegate_to: localhost
          when: start_relay | bool
        - debug:
            msg: no connection needed
        - command: echo reached {{ inventory_hostname }}
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LateSshd:
    """The scenario's inventory (host ``h1`` in group ``web``) and its relay's pid file."""

    def __init__(self, sshd, workdir: Path, python: Optional[str] = None) -> None:
        self.port = free_port()
        self.pidfile = workdir / "relay.pid"
        self.inventory = sshd.inventory_ini(["h1"], python=python, group="web").replace(
            "ansible_port=%d" % sshd.port, "ansible_port=%d" % self.port) \
            + "\n[all:vars]\nrelay=%s\nrelay_port=%d\ntarget=%s:%d\npidfile=%s\nroot=%s\n" \
            % (sys.executable, self.port, sshd.host, sshd.port, self.pidfile, ROOT)

    def stop_relay(self) -> None:
        """End the relay a run started (if it did)."""
        if self.pidfile.exists():
            os.kill(int(self.pidfile.read_text()), signal.SIGTERM)
            self.pidfile.unlink()
