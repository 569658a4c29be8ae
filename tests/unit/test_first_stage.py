"""The runner's first stage ends when the interpreter it feeds is gone.

mitogen's first stage forks: one process execs the new interpreter, the
other reads the core's source from the controller and writes it to the
interpreter through two pipes. When the interpreter dies first (the
controller exited while hosts were still being connected), mitogen's writer
blocked for ever on a pipe only it could read, holding the stderr it was
given. ioc's first stage (``ioc.agentless_runner.spawning.FirstStage``) closes
those read ends and ends quietly.
"""
from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import time
import zlib

import mitogen.master
import mitogen.parent
import pytest

from ioc.transport import bootstrap

#: The remote name the test's processes carry on their command line.
NAME = "first-stage-test-%d" % os.getpid()


def _kill_leftovers() -> None:
    """The first stage processes of this test still alive (the one mitogen's
    first stage leaves behind), killed so that a failure leaves nothing."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if NAME.encode() in f.read().split(b"\0"):
                    os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass


@pytest.fixture
def boot():
    """The command a local connection starts, and the preamble it is sent."""
    bootstrap._lighten_spawning()
    broker = mitogen.master.Broker()
    try:
        router = mitogen.master.Router(broker)
        options = mitogen.parent.Options(max_message_size=128 * 1024 * 1024,
                                         python_path=sys.executable, remote_name=NAME)
        connection = mitogen.parent.Connection(options, router)
        connection.context = mitogen.parent.Context(router, router.allocate_id())
        yield connection.get_boot_command(), connection.get_preamble()
    finally:
        broker.shutdown()
        broker.join()


def read_to_end(stream, seconds: float) -> bytes:
    """What ``stream`` yields until EOF; fails the test if EOF does not come in time."""
    out = b""
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([stream], [], [], max(0.0, left))
        if not ready:
            pytest.fail("stderr still open after %gs: a first stage process is left "
                        "(read so far: %r)" % (seconds, out))
        chunk = os.read(stream.fileno(), 65536)
        if not chunk:
            return out
        out += chunk


def test_the_writer_ends_quietly_when_the_interpreter_it_feeds_is_gone(boot):
    argv, preamble = boot
    # more than a pipe holds: mitogen's writer blocked on its second pipe
    assert len(zlib.decompress(preamble)) > 65536
    ours, theirs = socket.socketpair()
    proc = subprocess.Popen(argv, stdin=theirs, stdout=theirs, stderr=subprocess.PIPE,
                            close_fds=True)
    theirs.close()
    try:
        ours.settimeout(30)
        greeting = b""
        while not greeting.endswith(b"MITO000\n"):
            chunk = ours.recv(64)
            assert chunk, "the first stage closed before its greeting"
            greeting += chunk
        # The fork's parent is the process that execs the interpreter: gone,
        # as when the controller ended it (or it died) mid-bootstrap.
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        ours.sendall(preamble)
        assert read_to_end(proc.stderr, 15) == b""  # no BrokenPipeError traceback either
    finally:
        ours.close()
        proc.stderr.close()
        if proc.poll() is None:
            proc.kill()
        _kill_leftovers()
