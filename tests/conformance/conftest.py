"""Fixtures of the conformance suite's inventories (``# hosts: ssh2s``, ``ssh2d``)."""
from __future__ import annotations

import socket

import pytest

from tests.support.sshd import start_sshd


@pytest.fixture(scope="session")
def silent_port():
    """A loopback port whose connections are accepted and never answered."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # the kernel accepts; nobody reads or writes
    yield silent.getsockname()[1]
    silent.close()


@pytest.fixture(scope="session")
def mortal_sshd():
    """A second sshd, for ``# hosts: ssh2d``: its playbooks kill it mid-play
    (``kill_command``); check_playbook revives it before each run."""
    server = start_sshd()
    try:
        yield server
    finally:
        server.stop()
