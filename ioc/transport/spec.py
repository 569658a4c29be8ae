"""How to reach a host: connection and ``become`` settings from its variables.

Settings come from the host's inventory variables, named as in Ansible
(``ansible_connection``, ``ansible_host``, ``ansible_port``, ``ansible_user``,
``ansible_ssh_private_key_file``, ``ansible_ssh_args``, ``ansible_ssh_common_args``,
``ansible_ssh_extra_args``, ``ansible_python_interpreter``, ``mitogen_via``,
``ansible_become*``). The specs are frozen values: two hosts with equal specs
could share a connection, and a spec says nothing secret in ``repr``.
"""
from __future__ import annotations

import getpass
import logging
import os
import shlex
import sys
from dataclasses import dataclass, field
from dataclasses import replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from ioc.agentless_runner.context import OMIT
from ioc.agentless_runner.templating import Templar, TemplateError, is_template
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
    #: ``ansible_timeout``: ssh's ``ConnectTimeout`` (also become's prompt timeout).
    timeout: float = 10.0
    #: ``ansible_ssh_retries``: attempts after the first (Ansible's default, 0).
    retries: int = 0
    #: Ansible's ``pipelining`` setting: only how an unreachable host is worded.
    pipelining: bool = field(default=False, compare=False)
    #: Name the target's process shows in ``ps`` (no slashes).
    remote_name: str = field(default="ioc", compare=False)
    #: ``mitogen_via``: the inventory host whose runner starts this connection.
    via: Optional[str] = None
    #: That host's connection, filled in by :func:`resolve_via`.
    via_spec: Optional["ConnectionSpec"] = None
    #: The SSH login password (``ansible_password``, ``-k``); never in ``repr``.
    password: Optional[str] = field(default=None, repr=False)

    def describe_target(self) -> str:
        """``ssh to root@10.0.0.1 port 2222``: where this connection goes, for messages."""
        if self.transport == "local":
            return "local"
        target = self.hostname if self.user is None else "%s@%s" % (self.user, self.hostname)
        if self.port is not None:
            target += " port %s" % self.port
        return "%s to %s" % (self.transport, target)


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
               password: Optional[str] = None, where: str = "",
               omitted: Optional[Mapping[str, Any]] = None) -> Optional[BecomeSpec]:
    """The identity a task runs as on one host, or None for the connection's own.

    ``keywords`` are the task's effective ``become*`` keywords; ``variables``
    the host's variables, whose ``ansible_become*`` override them as in
    Ansible; ``template`` renders a templated value; ``password`` is the
    run's ``--ask-become-pass`` answer, the lowest source of the password.
    ``omitted``: what a keyword whose template gives ``omit`` falls back to
    (the value it inherits: Ansible's ``set_to_context``).
    """
    settings: Dict[str, Any] = {k: keywords.get(k) for k in BECOME_VARS if k != "password"}
    for key, value in (omitted or {}).items():
        if key in settings and is_template(settings[key]) and \
                template(settings[key]) == OMIT:
            settings[key] = value
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


def same_user_rule(become: Optional[BecomeSpec], spec: ConnectionSpec,
                   allow_same_user: bool) -> Optional[BecomeSpec]:
    """``become``, or None where Ansible would not escalate at all.

    Ansible (``ActionBase._low_level_execute_command``) escalates only when
    ``become_allow_same_user`` is set or the become user differs from the
    connection's remote user: ``become_user: root`` over ``ansible_user=root``
    runs no sudo (and needs none). The local connection's remote user is
    the controller's own; an ssh connection without a user has none known,
    and escalates.
    """
    if become is None or allow_same_user:
        return become
    remote = getpass.getuser() if spec.transport == "local" else spec.user
    return None if remote and remote == become.user else become


def short_method(method: str) -> str:
    """``ansible.builtin.sudo`` (and ``ansible.legacy.*``) is ``sudo``."""
    for prefix in ("ansible.builtin.", "ansible.legacy."):
        if method.startswith(prefix):
            return method[len(prefix):]
    return method


def is_true(value: Any) -> bool:
    """A boolean setting as Ansible reads one (``yes``, ``true``, ``1``... or a bool)."""
    return _truthy(value)


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


#: Ansible's connection plugins ioc's transports stand in for, by short name.
SSH_PLUGINS = frozenset({"ssh", "smart", "paramiko", "paramiko_ssh", "mitogen_ssh"})
LOCAL_PLUGINS = frozenset({"local", "mitogen_local"})


def transport_of(connection: Any) -> Optional[str]:
    """``"ssh"`` or ``"local"``: the transport of an Ansible connection plugin name
    (short or ``ansible.builtin.``/``ansible.legacy.``); None for any other plugin."""
    short = str(connection)
    for prefix in ("ansible.builtin.", "ansible.legacy."):
        if short.startswith(prefix):
            short = short[len(prefix):]
    if short in SSH_PLUGINS:
        return "ssh"
    return "local" if short in LOCAL_PLUGINS else None


#: Ansible's ssh connection plugin's variables for the login password, in its order.
PASSWORD_VARS = ("ansible_password", "ansible_ssh_pass", "ansible_ssh_password")


def spec_for(name: str, hostvars: Mapping[str, Any],
             password: Optional[str] = None) -> ConnectionSpec:
    """The connection of inventory host ``name`` given its variables.

    ``password`` is the run's ``--ask-pass`` answer: a password variable
    of the host wins over it, as in Ansible.
    """
    via = _opt_name(hostvars.get("mitogen_via"))
    if via == name:
        via = None
    written = str(hostvars.get("ansible_connection") or "ssh")
    transport = transport_of(written)
    if transport is None:
        raise ConnectionSetupError("host %s: connection type %r is not supported "
                                   "(local and ssh are)" % (name, written))
    python = hostvars.get("ansible_python_interpreter")
    timeout = float(hostvars.get("ansible_timeout") or hostvars.get("ansible_ssh_timeout") or 10)
    pipelining = str(hostvars.get("ansible_pipelining", hostvars.get(
        "ansible_ssh_pipelining", False))).lower() not in _FALSE + ("", "none")
    if transport == "local":
        return ConnectionSpec(transport="local", hostname=name,
                              python=str(python) if python else sys.executable, via=via,
                              timeout=timeout, pipelining=pipelining)
    args = []
    for key in ("ansible_ssh_args", "ansible_ssh_common_args", "ansible_ssh_extra_args"):
        if key == "ansible_ssh_common_args":
            # Where Ansible's ssh connection puts it: after ssh_args, before the
            # common and extra args (ssh keeps the first value it is given).
            args.extend(["-o", "ConnectTimeout=%d" % max(1, int(timeout))])
        if hostvars.get(key):
            args.extend(shlex.split(str(hostvars[key])))
    port = hostvars.get("ansible_port") or hostvars.get("ansible_ssh_port")
    return ConnectionSpec(
        transport="ssh",
        # (the ansible_ssh_* spellings are Ansible's older aliases)
        hostname=str(hostvars.get("ansible_host") or hostvars.get("ansible_ssh_host") or name),
        port=int(port) if port else None,
        user=_opt_str(hostvars.get("ansible_user") or hostvars.get("ansible_ssh_user")),
        identity_file=_opt_str(hostvars.get("ansible_ssh_private_key_file")),
        ssh_args=tuple(args),
        python=str(python) if python else "python3",
        check_host_keys=_host_key_mode(hostvars, args),
        timeout=timeout,
        retries=int(hostvars.get("ansible_ssh_retries") or 0),
        pipelining=pipelining,
        via=via,
        password=_password(hostvars, password),
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


def _password(hostvars: Mapping[str, Any], default: Optional[str]) -> Optional[str]:
    """The login password: the first password variable set (templated with the
    host's variables when written as a template), else ``default``."""
    for name in PASSWORD_VARS:
        value = hostvars.get(name)
        if value is None:
            continue
        if isinstance(value, str) and is_template(value):
            try:
                value = Templar(hostvars).template(value)
            except TemplateError as exc:
                raise ConnectionSetupError("%s: %s" % (name, exc)) from None
        return str(value) or None  # empty: no password, as Ansible's ssh plugin has it
    return default


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


def early_connections() -> bool:
    """Whether the front ends start connecting a play's hosts before its first
    step (:meth:`ioc.transport.connector.Connector.warm`; ioc-run and
    mitogen_batch alike); ``IOC_EARLY_CONNECT=0`` turns it off."""
    return os.environ.get("IOC_EARLY_CONNECT", "1") != "0"
