"""Connections to targets: a mitogen context per inventory host.

Settings come from the host's inventory variables, named as in Ansible
(``ansible_connection``, ``ansible_host``, ``ansible_port``, ``ansible_user``,
``ansible_ssh_private_key_file``, ``ansible_ssh_args``, ``ansible_ssh_common_args``,
``ansible_ssh_extra_args``, ``ansible_python_interpreter``, ``mitogen_via``).
One context is kept per inventory host for the whole run; that context *is*
the ephemeral runner: a Python process in RAM on the target that mitogen
started over SSH and that ends when the run ends.

Identities. A runner cannot change the user it runs as, so each ``become``
identity (method, user, flags, executable) is a context of its own: a child
of the host's ssh context started by ``sudo``/``su`` on the target
(``router.sudo(via=...)``), created on first use and kept per (host,
identity) for the run. ``mitogen_via: <inventory host>`` starts a host's ssh
connection from the named host's runner instead of from the controller
(chains a -> b -> c work the same way).
"""
from __future__ import annotations

import logging
import os
import shlex
import sys
import threading
import time
from dataclasses import dataclass, field
from dataclasses import replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

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
    #: ``mitogen_via``: the inventory host whose runner starts this connection.
    via: Optional[str] = None
    #: That host's connection, filled in by :func:`resolve_via`.
    via_spec: Optional["ConnectionSpec"] = None


@dataclass(frozen=True)
class BecomeSpec:
    """One ``become`` identity on a host: a context of its own (see module doc)."""

    method: str = "sudo"
    user: str = "root"
    flags: Tuple[str, ...] = ()
    exe: Optional[str] = None
    #: Never printed: not in ``repr`` (so not in logs or error messages).
    password: Optional[str] = field(default=None, repr=False)

    def describe(self) -> str:
        return "%s:%s" % (self.method, self.user)


BECOME_METHODS = ("sudo", "su")
#: Ansible's default ``become_flags`` per method (its become plugins' defaults).
DEFAULT_FLAGS = {"sudo": "-H -S -n", "su": ""}
#: Variables that override the ``become*`` keywords (Ansible's
#: ``MAGIC_VARIABLE_MAPPING``: variables win over keywords).
BECOME_VARS = {
    "become": ("ansible_become",),
    "become_method": ("ansible_become_method",),
    "become_user": ("ansible_become_user",),
    "become_flags": ("ansible_become_flags",),
    "become_exe": ("ansible_become_exe",),
    "password": ("ansible_become_password", "ansible_become_pass"),
}


def become_for(keywords: Mapping[str, Any], variables: Mapping[str, Any],
               template: Callable[[Any], Any] = lambda v: v,
               password: Optional[str] = None, where: str = "") -> Optional[BecomeSpec]:
    """The identity a task runs as on one host, or None for the connection's own.

    ``keywords`` are the task's effective ``become*`` keywords; ``variables``
    the host's variables, whose ``ansible_become*`` override them as in
    Ansible; ``template`` renders a templated value; ``password`` is the
    run's ``--ask-become-pass`` answer, the lowest source of the password.
    """
    settings: Dict[str, Any] = {k: keywords.get(k) for k in BECOME_VARS if k != "password"}
    settings["password"] = password
    for key, names in BECOME_VARS.items():
        for name in names:
            if variables.get(name) is not None:
                settings[key] = variables[name]
                break
    if not _truthy(template(settings["become"])):
        return None
    method = short_method(str(template(settings["become_method"]) or "sudo"))
    if method not in BECOME_METHODS:
        raise ConnectionSetupError("%sbecome_method %r is not supported (%s are)"
                                   % (where, method, " and ".join(BECOME_METHODS)))
    flags = settings["become_flags"]
    flags = DEFAULT_FLAGS[method] if flags is None else template(flags)
    secret = settings["password"]
    secret = None if secret is None else template(secret)
    exe = settings["become_exe"]
    return BecomeSpec(method=method, user=str(template(settings["become_user"]) or "root"),
                      flags=tuple(shlex.split(str(flags or ""))),
                      exe=str(template(exe)) if exe else None,
                      password=None if secret in (None, "") else str(secret))


def short_method(method: str) -> str:
    """``ansible.builtin.sudo`` (and ``ansible.legacy.*``) is ``sudo``."""
    for prefix in ("ansible.builtin.", "ansible.legacy."):
        if method.startswith(prefix):
            return method[len(prefix):]
    return method


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("yes", "on", "true", "1", "y", "t")
    return bool(value)


def resolve_via(name: str, spec: ConnectionSpec,
                connection_of: Callable[[str], ConnectionSpec]) -> ConnectionSpec:
    """``spec`` with its ``mitogen_via`` chain filled in (``via_spec``), loops refused."""
    chain = [name]
    resolved: List[Tuple[str, ConnectionSpec]] = [(name, spec)]
    while resolved[-1][1].via:
        hop = resolved[-1][1].via
        if hop in chain:
            raise ConnectionSetupError("host %s: mitogen_via loops: %s"
                                       % (name, " -> ".join(chain + [hop])))
        chain.append(hop)
        resolved.append((hop, connection_of(hop)))
    out: Optional[ConnectionSpec] = None
    for _, hop_spec in reversed(resolved):
        out = replace(hop_spec, via_spec=out)
    assert out is not None  # resolved starts with the host itself
    return out


def spec_for(name: str, hostvars: Mapping[str, Any]) -> ConnectionSpec:
    """The connection of inventory host ``name`` given its variables."""
    via = _opt_name(hostvars.get("mitogen_via"))
    if via == name:
        via = None
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
                              python=str(python) if python else sys.executable, via=via)
    args = []
    for key in ("ansible_ssh_args", "ansible_ssh_common_args", "ansible_ssh_extra_args"):
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
        via=via,
    )


def _opt_name(value: Any) -> Optional[str]:
    """``mitogen_via``'s host: ``host``, or ``user@host`` as ansible_mitogen writes it
    (the user part, a become user there, is not supported and refused)."""
    if value in (None, ""):
        return None
    text = str(value).strip()
    if "@" in text:
        raise ConnectionSetupError("mitogen_via=%s: only an inventory host name is supported "
                                   "(no user@ part)" % text)
    return text


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


class BecomeFailed(Exception):
    """The host is reachable but ``become`` did not work (the task fails, as in Ansible)."""


#: Modules a context needs to start children (sudo, su, ssh for mitogen_via):
#: sent ahead of the request so it costs no import round trip over the WAN.
PARENT_MODULES = {"sudo": ("mitogen.parent", "mitogen.sudo"),
                  "su": ("mitogen.parent", "mitogen.su"),
                  "ssh": ("mitogen.parent", "mitogen.ssh")}

#: Seconds ``reset`` waits for a runner to end before going on without it.
SHUTDOWN_TIMEOUT = 10.0

#: A context is cached per (inventory name, identity); None is the connection's own.
Key = Tuple[str, Optional[BecomeSpec]]


class Connector:
    """Owns the mitogen broker and one context per host and identity for the whole run."""

    def __init__(self, forks: int = 5) -> None:
        self.broker = mitogen.master.Broker()
        self.router = mitogen.master.Router(self.broker)
        bootstrap.configure(self.router)
        bootstrap.warm(self.router)
        self.contexts: Dict[Key, mitogen.core.Context] = {}
        #: The context each one was started from (become child, mitogen_via hop).
        self._parent: Dict[Key, Key] = {}
        self._lock = threading.Lock()
        self._key_locks: Dict[Key, threading.Lock] = {}
        self._forks = threading.BoundedSemaphore(max(1, forks))

    def context(self, host: str, spec: ConnectionSpec,
                become: Optional[BecomeSpec] = None) -> mitogen.core.Context:
        """The context of ``host`` as ``become`` (None: the connection's own user).

        Connects (at most ``forks`` at once) if needed: the ``mitogen_via``
        host first, then the host, then the ``become`` child. Raises
        :class:`Unreachable` or :class:`BecomeFailed`.
        """
        key: Key = (host, become)
        with self._lock:
            ctx = self.contexts.get(key)
            if ctx is not None:
                return ctx
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:  # one connection per key, even when two calls ask at once
            with self._lock:
                ctx = self.contexts.get(key)
            if ctx is not None:
                return ctx
            parent_key: Optional[Key] = None
            if become is not None:
                ctx = self._become(host, spec, self.context(host, spec), become)
                parent_key = (host, None)
            else:
                parent = self.context(spec.via, spec.via_spec) \
                    if spec.via and spec.via_spec is not None else None
                if parent is not None:
                    bootstrap.preload(self.router, parent, PARENT_MODULES["ssh"])
                    parent_key = (str(spec.via), None)
                with self._forks:
                    ctx = self._connect_with_retries(host, spec, parent)
            bootstrap.preload(self.router, ctx)
            with self._lock:
                self.contexts[key] = ctx
                if parent_key is not None:
                    self._parent[key] = parent_key
            return ctx

    def forget(self, host: str) -> None:
        """Drop every context of ``host`` and those started from them (connection lost)."""
        with self._lock:
            for key in self._behind(host):
                del self.contexts[key]
                self._parent.pop(key, None)

    def reset(self, host: str) -> None:
        """End ``host``'s runners; the next call connects afresh (reset_connection).

        Runners started from them (become children, hosts reached with
        ``mitogen_via`` through this one) end first, deepest first: a runner
        does not exit while a child it started is still connected, and a
        child's end is only seen through the runner that started it.
        """
        with self._lock:
            keys = self._behind(host)
            contexts = [self.contexts.pop(k) for k in keys]
            for key in keys:
                self._parent.pop(key, None)
        for ctx in contexts:
            try:
                ctx.shutdown(wait=False).get(timeout=SHUTDOWN_TIMEOUT)
            except (mitogen.core.Error, mitogen.core.TimeoutError):
                LOG.info("%s: a runner did not end within %ss", host, SHUTDOWN_TIMEOUT)

    def _behind(self, host: str) -> List[Key]:
        """``host``'s context keys and every key started from one, deepest first."""
        def chain(key: Key) -> List[Key]:
            out = [key]
            while out[-1] in self._parent and len(out) <= len(self._parent):
                out.append(self._parent[out[-1]])
            return out

        chains = {k: chain(k) for k in self.contexts}
        return sorted((k for k, c in chains.items() if any(hop[0] == host for hop in c)),
                      key=lambda k: -len(chains[k]))

    def _become(self, host: str, spec: ConnectionSpec, parent: mitogen.core.Context,
                become: BecomeSpec) -> mitogen.core.Context:
        """A child of ``parent`` running as ``become.user``, started by sudo or su there."""
        bootstrap.preload(self.router, parent, PARENT_MODULES[become.method])
        kwargs: Dict[str, Any] = {"via": parent, "username": become.user,
                                  "python_path": spec.python, "connect_timeout": spec.timeout,
                                  "remote_name": spec.remote_name}
        if become.password is not None:
            kwargs["password"] = mitogen.core.Secret(become.password)
        try:
            if become.method == "sudo":
                return self.router.sudo(sudo_path=become.exe or "sudo",
                                        sudo_args=list(become.flags), **kwargs)
            if become.flags:
                raise BecomeFailed("Task failed: become_flags %r are not supported with su"
                                   % " ".join(become.flags))
            return self.router.su(su_path=become.exe or "su", **kwargs)
        except mitogen.core.ChannelError as exc:
            self.forget(host)
            raise Unreachable("connection lost: %s" % exc) from None
        except (mitogen.core.StreamError, mitogen.core.CallError, OSError, EOFError) as exc:
            raise BecomeFailed(_become_message(become, spec, exc)) from None

    def _connect_with_retries(self, host: str, spec: ConnectionSpec,
                              parent: Optional[mitogen.core.Context] = None) -> mitogen.core.Context:
        delay = 0.5
        for attempt in range(spec.retries + 1):
            try:
                return self._connect(spec, parent)
            except (mitogen.core.StreamError, mitogen.core.CallError, OSError, EOFError) as exc:
                permanent = _is_permanent(exc)
                LOG.info("connecting to %s failed (attempt %d): %s", host, attempt + 1, exc)
                if permanent or attempt == spec.retries:
                    raise Unreachable(_describe(spec, exc)) from None
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def _connect(self, spec: ConnectionSpec,
                 parent: Optional[mitogen.core.Context] = None) -> mitogen.core.Context:
        common: Dict[str, Any] = {"python_path": spec.python, "connect_timeout": spec.timeout,
                                  "remote_name": spec.remote_name}
        if parent is not None:
            common["via"] = parent
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
        for ctx in reversed(contexts):  # children before the contexts they run under
            try:
                ctx.shutdown(wait=False)
            except mitogen.core.Error:
                pass
        self.broker.shutdown()
        self.broker.join()


def _become_message(become: BecomeSpec, spec: ConnectionSpec, exc: BaseException) -> str:
    """Ansible's words for a failed privilege escalation (its ssh connection's,
    as ansible-core 2.21's TaskExecutor reports them: ``Task failed: ...``)."""
    text = str(exc)
    lowered = text.lower()
    name = become.method
    if "password is incorrect" in lowered:
        return "Task failed: Incorrect %s password" % name
    if "password is required" in lowered:
        return "Task failed: Missing %s password" % name
    if "timed out" in lowered or "timeout" in lowered:
        return "Task failed: Timeout (%ds) waiting for privilege escalation prompt: " \
            % int(spec.timeout)
    if become.password:
        text = text.replace(become.password, "********")
    return "Task failed: %s to user %s failed: %s" % (name, become.user, text)


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
