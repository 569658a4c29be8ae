"""The dispatcher's side of the ``ioc_runner`` connection plugin: a private unix socket.

A task that runs through Ansible's own task machinery runs in one of
Ansible's forked workers; its connection plugin
(``ioc/ansible/connection_plugins/ioc_runner.py``) has no broker of its own
and must not open a second SSH connection. So it asks the dispatcher, which
owns mitogen's broker and every host's runner, over a unix socket in a
directory only the user running ``ansible-playbook`` can enter (the
parent↔dispatcher pipe is busy while the step runs). Each request is one
message of :mod:`ioc.ansible.pipe`'s framing, answered by one:

* ``{"op": "exec", "host", "become", "cmd", "in_data"}`` → ``{"rc", "stdout",
  "stderr"}``: run a command in the host's runner, or in the runner of the
  ``become`` identity (an :class:`~ioc.transport.spec.BecomeSpec`; the
  connector keeps one per host and identity, as for native batches);
* ``{"op": "put", "host", "src", "dest"}`` → ``{}``: copy a controller
  file to the host (as the login user, like sftp);
* ``{"op": "fetch", "host", "src", "dest"}`` → ``{}``: copy a host's file to
  the controller.

A failure is ``{"error": kind, "msg": text}``, ``kind`` one of
``unreachable``, ``become`` and ``failed``. Each request is one mitogen
call on the target (:mod:`ioc.transport.commands`), one round trip.

Which connection reaches a host is the dispatcher's business: before the
parent runs a task, the dispatcher tells the service the connection of
every host the task may reach (:meth:`RunnerService.prepare`), so a worker's
request never needs the parent (whose pipe is busy).
"""
from __future__ import annotations

import logging
import os
import socket
import threading
from typing import Any, Dict, Mapping, Optional

from ioc.ansible.pipe import read_message, write_message
from ioc.transport import commands
from ioc.transport.connector import Connector
from ioc.transport.spec import BecomeSpec, ConnectionSpec

LOG = logging.getLogger(__name__)


class RunnerService:
    """Serves ``ioc_runner`` requests on ``path`` from a thread of the dispatcher."""

    def __init__(self, path: str, connector: Connector) -> None:
        self.path = path
        self.connector = connector
        self._specs: Dict[str, ConnectionSpec] = {}
        self._lock = threading.Lock()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o077)
        try:
            self._listener.bind(path)
        finally:
            os.umask(old)
        self._listener.listen(64)
        self._thread = threading.Thread(target=self._accept, name="ioc-runner-service",
                                        daemon=True)
        self._thread.start()

    def prepare(self, specs: Mapping[str, ConnectionSpec]) -> None:
        """The connections of the hosts the next task may reach (its hosts, delegates)."""
        with self._lock:
            self._specs.update(specs)

    def close(self) -> None:
        try:
            self._listener.close()
        finally:
            try:
                os.unlink(self.path)
            except OSError:
                pass

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(conn,), name="ioc-runner-client",
                             daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as inp, conn.makefile("wb") as out:
            while True:
                try:
                    request = read_message(inp)
                except (EOFError, OSError):
                    return
                write_message(out, self.answer(request))

    def answer(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """One request's reply (never raises: failures are replies)."""
        host = str(request.get("host"))
        become: Optional[BecomeSpec] = request.get("become")
        op = request.get("op")
        with self._lock:
            spec = self._specs.get(host)
        if spec is None:
            return {"error": "failed", "msg": "ioc_runner: no connection is known for %s" % host}
        LOG.info("ioc_runner %s: %s%s", host, op,
                 "" if become is None else " as %s" % become.describe())
        return commands.serve(self.connector, host, spec, request)
