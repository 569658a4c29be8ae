"""What Ansible's connection plugin asks of a runner: run a command, put a file, fetch one.

A task that goes through Ansible's own task machinery under ``mitogen_batch``
(a third-party action plugin, ``assemble``...) reaches its host through the
``ioc_runner`` connection plugin instead of a second SSH connection: the
dispatcher calls these functions in the host's runner (or in the runner of
the ``become`` identity the task asks for). Each is one mitogen call, one
round trip; a new-style module is one :func:`exec_command` (pipelined, its
payload on stdin).

They do what an SSH session does for Ansible's ``ssh`` plugin: the command
runs under ``/bin/sh -c`` in the runner's own environment and working
directory (the login's, as sshd gives them), with ``in_data`` on stdin; a
file is written and read as the runner's user, as sftp would.
"""
import os
import subprocess
import tempfile

import mitogen.core

from ioc.agentless_runner import lifeline


@mitogen.core.takes_econtext
def exec_command(cmd, in_data=None, econtext=None):
    """Run ``cmd`` with ``/bin/sh -c``; ``in_data`` (bytes) on stdin.

    Returns ``(rc, stdout, stderr)``, the streams as ``mitogen.core.Blob``.
    """
    lifeline.install(econtext)
    proc = lifeline.popen(cmd, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, close_fds=True)
    out, err = lifeline.communicate(proc, bytes(in_data or b""))
    return proc.returncode, mitogen.core.Blob(out), mitogen.core.Blob(err)


def put_file(path, data, mode=None):
    """Write ``data`` (bytes) to ``path``, atomically (a temporary file renamed).

    ``mode``: the new file's permission bits; None leaves them to the umask,
    as sftp does.
    """
    path = os.path.expanduser(path)
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".ioc-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(bytes(data))
            out.flush()
            os.fsync(out.fileno())
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.rename(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def fetch_file(path):
    """The content of ``path`` on the target, as a ``mitogen.core.Blob``."""
    with open(os.path.expanduser(path), "rb") as handle:
        return mitogen.core.Blob(handle.read())
