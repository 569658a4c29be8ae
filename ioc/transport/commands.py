"""Commands and files on a host's runner, for a connection plugin that has no broker.

Ansible's ``ioc_runner`` connection plugin (under ``mitogen_batch``) asks
the dispatcher to run a command, put a file or fetch one on a host; this is
what the dispatcher does with such a request: one mitogen call on the
host's runner, or on the runner of the ``become`` identity the request
names (the connector creates it on first use and keeps it, as for native
batches), through :mod:`ioc.agentless_runner.connection`. A request is a
plain dict and so is the reply; a failure is a reply too
(``{"error": kind, "msg": text}``, ``kind`` one of ``unreachable``,
``become``, ``failed``), never an exception.
"""
from __future__ import annotations

from typing import Any, Dict

import mitogen.core

from ioc.agentless_runner import connection as target
from ioc.transport.connector import BecomeFailed, Connector, Unreachable
from ioc.transport.spec import ConnectionSpec


def serve(connector: Connector, host: str, spec: ConnectionSpec,
          request: Dict[str, Any]) -> Dict[str, Any]:
    """Do ``request`` (``op``: ``exec``, ``put`` or ``fetch``) on ``host``; the reply.

    * ``{"op": "exec", "cmd", "in_data", "become"}`` → ``{"rc", "stdout", "stderr"}``;
    * ``{"op": "put", "src", "dest"}`` → ``{}`` (``src`` is a controller file);
    * ``{"op": "fetch", "src", "dest"}`` → ``{}`` (``dest`` is a controller path).

    An unreachable host's reply carries ``ssh_said``, what ssh printed when
    it gave up (or None), for the plugin to word it as Ansible's ssh would.
    """
    try:
        context = connector.context(host, spec, request.get("become"))
        try:
            return _do(context, request)
        except mitogen.core.ChannelError as exc:
            # The runner is gone (the host died, the runner was killed). The
            # request is not repeated: it may have run. Connecting again
            # tells a dead host (ssh's own words, as linear's next command
            # would get them) from a lost runner; a new one serves what follows.
            connector.forget(host)
            why = connector.cut_reason(context)  # its runner never started in time
            connector.context(host, spec)
            return {"error": "unreachable", "ssh_said": None,
                    "msg": why or "Failed to connect to the host via ssh: the connection to "
                                  "the ioc runner was lost (%s)" % exc}
    except Unreachable as exc:
        return {"error": "unreachable", "msg": str(exc), "ssh_said": exc.ssh_said}
    except BecomeFailed as exc:
        return {"error": "become", "msg": str(exc)}
    except mitogen.core.ChannelError as exc:
        connector.forget(host)
        return {"error": "unreachable", "msg": "connection lost: %s" % exc, "ssh_said": None}
    except (mitogen.core.CallError, OSError) as exc:
        return {"error": "failed", "msg": str(exc)}


def _do(context: mitogen.core.Context, request: Dict[str, Any]) -> Dict[str, Any]:
    """``request`` on the runner ``context``: one mitogen call."""
    op = request.get("op")
    if op == "exec":
        rc, stdout, stderr = context.call(target.exec_command, request["cmd"],
                                          mitogen.core.Blob(request.get("in_data") or b""))
        return {"rc": rc, "stdout": bytes(stdout), "stderr": bytes(stderr)}
    if op == "put":
        with open(request["src"], "rb") as handle:
            data = handle.read()
        context.call(target.put_file, request["dest"], mitogen.core.Blob(data))
        return {}
    if op == "fetch":
        data = context.call(target.fetch_file, request["src"])
        with open(request["dest"], "wb") as handle:
            handle.write(bytes(data))
        return {}
    return {"error": "failed", "msg": "unknown request %r" % (op,)}
