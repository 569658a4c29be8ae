"""Connections to targets: a mitogen context per inventory host.

Settings come from the host's inventory variables, named as in Ansible
(``ansible_connection``, ``ansible_host``, ``ansible_port``, ``ansible_user``,
``ansible_ssh_private_key_file``, ``ansible_ssh_common_args``,
``ansible_ssh_extra_args``, ``ansible_python_interpreter``). One context is
kept per inventory host for the whole run; that context *is* the ephemeral
runner: a Python process in RAM on the target that mitogen started over SSH
and that ends when the run ends.
"""
from __future__ import annotations

import logging
import os
import shlex
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple

import mitogen.core
import mitogen.master
import mitogen.parent

from ioc.controller import bootstrap
from ioc.errors import ConnectionSetupError

LOG = logging.getLogger(__name__)

_FALSE = ("false", "no", "0", "off", "n", "f")


@dataclass(frozen=True)
class ConnectionSpec:
    """How to reach one host; derived from its variables, compared for reuse."""

    transport: str
    hostname: str
    port: Optional[int] = None
    user: Optional[str] = None
    identity_file: Optional[str] = None
    ssh_args: Tuple[str, ...] = ()
    python: Optional[str] = None
    check_host_keys: str = "enforce"
    timeout: float = 10.0
    retries: int = 1
    #: Name the target's process shows in ``ps`` (no slashes).
    remote_name: str = field(default="ioc", compare=False)


def spec_for(name: str, hostvars: Mapping[str, Any]) -> ConnectionSpec:
    """The connection of inventory host ``name`` given its variables."""
    transport = str(hostvars.get("ansible_connection") or "ssh")
    if transport in ("smart", "paramiko", "ssh", "mitogen_ssh"):
        transport = "ssh"
    elif transport in ("local", "mitogen_local"):
        transport = "local"
    else:
        raise ConnectionSetupError("host %s: connection type %r is not supported "
                                   "(local and ssh are)" % (name, transport))
    python = hostvars.get("ansible_python_interpreter")
    if transport == "local":
        return ConnectionSpec(transport="local", hostname=name,
                              python=str(python) if python else sys.executable)
    args = []
    for key in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        if hostvars.get(key):
            args.extend(shlex.split(str(hostvars[key])))
    return ConnectionSpec(
        transport="ssh",
        hostname=str(hostvars.get("ansible_host") or name),
        port=int(hostvars["ansible_port"]) if hostvars.get("ansible_port") else None,
        user=_opt_str(hostvars.get("ansible_user") or hostvars.get("ansible_ssh_user")),
        identity_file=_opt_str(hostvars.get("ansible_ssh_private_key_file")),
        ssh_args=tuple(args),
        python=str(python) if python else "python3",
        check_host_keys=_host_key_mode(hostvars, args),
        timeout=float(hostvars.get("ansible_timeout") or hostvars.get("ansible_ssh_timeout") or 10),
        retries=int(hostvars.get("ansible_ssh_retries", 1)),
    )


def _opt_str(value: Any) -> Optional[str]:
    return None if value is None else os.path.expanduser(str(value))


def _host_key_mode(hostvars: Mapping[str, Any], args: list) -> str:
    """mitogen's ``check_host_keys`` for Ansible's host key settings.

    mitogen puts its own ``StrictHostKeyChecking`` before the user's ssh
    arguments, and ssh keeps the first value it sees, so the user's choice
    has to be translated rather than passed through.
    """
    setting = hostvars.get("ansible_host_key_checking",
                           os.environ.get("ANSIBLE_HOST_KEY_CHECKING"))
    if setting is not None and str(setting).lower() in _FALSE:
        return "ignore"
    joined = " ".join(args).replace("=", " ").lower()
    if "stricthostkeychecking no" in joined:
        return "ignore"
    if "stricthostkeychecking accept-new" in joined:
        return "accept"
    return "enforce"


class Unreachable(Exception):
    """A host could not be connected to (after retries)."""


class Connector:
    """Owns the mitogen broker and one context per host for the whole run."""

    def __init__(self, forks: int = 5) -> None:
        self.broker = mitogen.master.Broker()
        self.router = mitogen.master.Router(self.broker)
        bootstrap.configure(self.router)
        bootstrap.warm(self.router)
        self.contexts: Dict[str, mitogen.core.Context] = {}
        self._lock = threading.Lock()
        self._forks = threading.BoundedSemaphore(max(1, forks))

    def context(self, host: str, spec: ConnectionSpec) -> mitogen.core.Context:
        """The host's context, connecting (at most ``forks`` at once) if needed."""
        with self._lock:
            ctx = self.contexts.get(host)
        if ctx is not None:
            return ctx
        with self._forks:
            ctx = self._connect_with_retries(host, spec)
        bootstrap.preload(self.router, ctx)
        with self._lock:
            self.contexts[host] = ctx
        return ctx

    def forget(self, host: str) -> None:
        with self._lock:
            self.contexts.pop(host, None)

    def reset(self, host: str) -> None:
        """End ``host``'s runner; the next call connects afresh (reset_connection)."""
        with self._lock:
            ctx = self.contexts.pop(host, None)
        if ctx is not None:
            try:
                ctx.shutdown(wait=True)
            except mitogen.core.Error:
                pass

    def _connect_with_retries(self, host: str, spec: ConnectionSpec) -> mitogen.core.Context:
        delay = 0.5
        for attempt in range(spec.retries + 1):
            try:
                return self._connect(spec)
            except (mitogen.core.StreamError, OSError, EOFError) as exc:
                permanent = _is_permanent(exc)
                LOG.info("connecting to %s failed (attempt %d): %s", host, attempt + 1, exc)
                if permanent or attempt == spec.retries:
                    raise Unreachable(_describe(spec, exc)) from None
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def _connect(self, spec: ConnectionSpec) -> mitogen.core.Context:
        common = {"python_path": spec.python, "connect_timeout": spec.timeout,
                  "remote_name": spec.remote_name}
        if spec.transport == "local":
            return self.router.local(**common)
        return self.router.ssh(
            hostname=spec.hostname, port=spec.port, username=spec.user,
            identity_file=spec.identity_file, ssh_args=list(spec.ssh_args),
            check_host_keys=spec.check_host_keys, **common)

    def shutdown(self) -> None:
        """End every runner on every target, then the broker."""
        with self._lock:
            contexts = list(self.contexts.values())
            self.contexts.clear()
        for ctx in contexts:
            try:
                ctx.shutdown(wait=False)
            except mitogen.core.Error:
                pass
        self.broker.shutdown()
        self.broker.join()


def _is_permanent(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(s in text for s in ("permission denied", "host key", "identification has changed"))


#: mitogen's wrapper around what the ssh process printed before it exited.
_SSH_OUTPUT = "last 100 lines received:"


def _describe(spec: ConnectionSpec, exc: BaseException) -> str:
    """The unreachable message, worded as Ansible's ssh connection words it.

    When ssh itself gave up (mitogen saw EOF and quotes ssh's output), the
    runner's bootstrap could not be sent through ssh's stdin: Ansible, which
    pipelines modules the same way, says "Data could not be sent to remote
    host" with ssh's own message. Other failures keep mitogen's text.
    """
    text = str(exc)
    if spec.transport == "ssh" and _SSH_OUTPUT in text:
        ssh_said = text.split(_SSH_OUTPUT, 1)[1].replace("\r", "").strip()
        if ssh_said:
            return ("Task failed: Data could not be sent to remote host \"%s\". Make sure this "
                    "host can be reached over ssh: %s" % (spec.hostname, ssh_said))
    target = spec.hostname if spec.port is None else "%s port %s" % (spec.hostname, spec.port)
    return "Failed to connect to the host via %s: %s (%s)" % (spec.transport, text, target)
