"""Fixtures of the conformance suite's inventories (``# hosts: ssh2s``)."""
from __future__ import annotations

import socket

import pytest


@pytest.fixture(scope="session")
def silent_port():
    """A loopback port whose connections are accepted and never answered."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # the kernel accepts; nobody reads or writes
    yield silent.getsockname()[1]
    silent.close()
