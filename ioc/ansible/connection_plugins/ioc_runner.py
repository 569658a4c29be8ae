"""``ioc_runner``: Ansible's connection to a host, served by the host's ioc runner.

Under ``mitogen_batch`` a task ioc does not run natively runs through
Ansible's own task machinery (``ioc.ansible.ansible_tasks``). The strategy
selects this plugin for it (``ansible_connection``, see
``ioc.ansible.routing``) when Ansible would have used ``ssh``, so the task
reaches its host over the runner connection ioc already has, instead of a
second SSH connection: every ``exec_command``, ``put_file`` and
``fetch_file`` is one request to the dispatcher
(``ioc.ansible.runner_service``) over a private unix socket, and one mitogen
call on the target. Modules are always pipelined: a new-style module is one
``exec_command``, one round trip.

Become: the task's become plugin is kept (Ansible sets its options and asks
it what it needs), but it does not wrap commands in ``sudo``/``su``; a
command Ansible would have wrapped runs in the runner of that identity
(the connector keeps one per host and identity, as for native batches),
with the user, flags, executable and password the become plugin was given.
Other become methods never get here: the strategy keeps Ansible's own
connection for them (``ioc.ansible.routing``), since no password prompt
could be answered in a runner.
"""
from __future__ import annotations

DOCUMENTATION = """
    name: ioc_runner
    short_description: run through the host's ioc runner (mitogen_batch)
    description:
        - Selected by the mitogen_batch strategy for tasks that run through Ansible's task
          machinery; not meant to be named in inventories.
    author: ioc
    options:
      ioc_host:
          description: Inventory name of the host whose runner serves the task.
          type: string
          vars:
              - name: ioc_runner_host
      ioc_socket:
          description: The dispatcher's unix socket.
          type: string
          vars:
              - name: ioc_runner_socket
      host:
          description: Hostname/IP of the host (as Ansible's ssh connection reads it).
          default: inventory_hostname
          type: string
          vars:
              - name: inventory_hostname
              - name: ansible_host
              - name: ansible_ssh_host
      port:
          description: Remote port (as Ansible's ssh connection reads it).
          type: int
          ini:
              - section: defaults
                key: remote_port
          env:
              - name: ANSIBLE_REMOTE_PORT
          vars:
              - name: ansible_port
              - name: ansible_ssh_port
          keyword:
              - name: port
      pipelining:
          description: Whether Ansible's ssh connection would pipeline modules (this one
              always does); decides how an unreachable host is worded.
          type: boolean
          default: false
          env:
              - name: ANSIBLE_PIPELINING
              - name: ANSIBLE_SSH_PIPELINING
          ini:
              - section: defaults
                key: pipelining
              - section: connection
                key: pipelining
              - section: ssh_connection
                key: pipelining
          vars:
              - name: ansible_pipelining
              - name: ansible_ssh_pipelining
      remote_user:
          description: The login user (as Ansible's ssh connection reads it).
          type: string
          ini:
              - section: defaults
                key: remote_user
          env:
              - name: ANSIBLE_REMOTE_USER
          vars:
              - name: ansible_user
              - name: ansible_ssh_user
          cli:
              - name: user
          keyword:
              - name: remote_user
"""

import os
import shlex
import socket
from typing import Any, Dict, Optional, Tuple

from ansible.errors import AnsibleConnectionFailure, AnsibleError, AnsibleFileNotFound
from ansible.module_utils.common.text.converters import to_bytes
from ansible.plugins.connection import ConnectionBase

from ioc.ansible.pipe import read_message, write_message
from ioc.transport.spec import BECOME_METHODS, BecomeSpec, short_method

#: Ansible's default executable for each become method: the same as none.
_DEFAULT_EXE = {"sudo": "sudo", "su": "su"}


class Identity:
    """The task's become plugin, whose commands a runner of that identity runs unwrapped.

    Everything but :meth:`build_become_command` is the real plugin's (its
    options, prompts, ``name``), so Ansible's action code decides exactly as
    with ``ssh`` which commands need the identity; those it would wrap are
    run by the identity's runner instead.
    """

    #: No terminal and no prompt: the runner of the identity is already there.
    pipelining = True
    require_tty = False

    def __init__(self, plugin: Any, connection: "Connection") -> None:
        self.__dict__.update(plugin=plugin, connection=connection)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["plugin"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.__dict__["plugin"], name, value)

    def build_become_command(self, cmd: str, shell: Any) -> str:
        self.__dict__["connection"].wrap_next = True
        return cmd

    def spec(self) -> BecomeSpec:
        """The identity as ioc's connector keys it (the same as native batches')."""
        plugin = self.__dict__["plugin"]
        method = short_method(str(plugin._load_name or plugin.name))

        def option(name: str) -> Optional[str]:
            try:
                value = plugin.get_option(name)
            except KeyError:
                return None
            return None if value in (None, "") else str(value)

        exe = option("become_exe")
        return BecomeSpec(method=method, user=option("become_user") or "root",
                          flags=tuple(shlex.split(option("become_flags") or "")),
                          exe=None if exe in (None, _DEFAULT_EXE.get(method)) else exe,
                          password=option("become_pass"))


def _untitled(message: str) -> str:
    """``message`` without ioc's "Task failed: " (Ansible puts its own in front)."""
    return message[len("Task failed: "):] if message.startswith("Task failed: ") else message


class Connection(ConnectionBase):
    """Ansible's connection to one host through that host's ioc runner."""

    transport = "ioc_runner"
    has_pipelining = True
    always_pipeline_modules = True
    has_tty = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sock: Optional[socket.socket] = None
        self._files: Tuple[Any, Any] = (None, None)
        #: Set by :class:`Identity` when Ansible asked for the command to be
        #: wrapped: the next ``exec_command`` runs as the become identity.
        self.wrap_next = False

    def set_become_plugin(self, plugin: Any) -> None:
        if plugin is not None and short_method(str(plugin._load_name or plugin.name)) \
                in BECOME_METHODS:
            plugin = Identity(plugin, self)
        super().set_become_plugin(plugin)

    def _connect(self) -> "Connection":
        if self.connected:
            return self
        path = self.get_option("ioc_socket")
        if not path:
            raise AnsibleConnectionFailure("ioc_runner: no dispatcher socket (the "
                                           "mitogen_batch strategy selects this connection)")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
        except OSError as exc:
            sock.close()
            raise AnsibleConnectionFailure("ioc_runner: cannot reach the dispatcher: %s" % exc)
        self._sock = sock
        self._files = (sock.makefile("rb"), sock.makefile("wb"))
        self._connected = True
        return self

    def _ask(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """One request to the dispatcher, its reply; its failures raised as Ansible's.

        Strings in ``request`` must be plain ``str``: Ansible's tagged strings
        (2.19+) cannot be unpickled on a target that has no Ansible.
        """
        self._connect()
        request["host"] = str(self.get_option("ioc_host"))
        inp, out = self._files
        try:
            write_message(out, request)
            reply: Dict[str, Any] = read_message(inp)
        except (OSError, EOFError) as exc:
            self.close()
            raise AnsibleConnectionFailure("ioc_runner: the dispatcher went away: %s" % exc)
        error = reply.get("error")
        # from None: an exception Ansible is handling when it calls (interpreter
        # discovery's) is not the cause, and would show as one.
        if error == "unreachable":
            raise AnsibleConnectionFailure(self._unreachable(reply, request)) from None
        if error:
            raise AnsibleError(_untitled(str(reply["msg"]))) from None
        return reply

    def _unreachable(self, reply: Dict[str, Any], request: Dict[str, Any]) -> str:
        """An unreachable host, worded as Ansible's ssh plugin words it for this request.

        With ssh's own words for why it gave up, the wording is the ssh
        plugin's for the same request: a pipelined command (if pipelining is
        on, as ssh would have pipelined it) could not be sent; anything else
        could not connect.
        """
        said = reply.get("ssh_said")
        if not said:
            return _untitled(str(reply["msg"]))
        if request["op"] == "exec" and request.get("in_data") is not None \
                and self.get_option("pipelining"):
            return ('Data could not be sent to remote host "%s". Make sure this host can be '
                    'reached over ssh: %s' % (self.get_option("host"), said))
        return "Failed to connect to the host via ssh: %s" % said

    def exec_command(self, cmd: str, in_data: Optional[bytes] = None,
                     sudoable: bool = True) -> Tuple[int, bytes, bytes]:
        super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
        wrapped, self.wrap_next = self.wrap_next, False
        become = self.become.spec() if wrapped and isinstance(self.become, Identity) else None
        reply = self._ask({"op": "exec", "cmd": str(cmd), "become": become,
                           "in_data": None if in_data is None else to_bytes(in_data)})
        return reply["rc"], reply["stdout"], reply["stderr"]

    def put_file(self, in_path: str, out_path: str) -> None:
        super().put_file(in_path, out_path)
        if not os.path.exists(to_bytes(in_path, errors="surrogate_or_strict")):
            raise AnsibleFileNotFound("file or module does not exist: %s" % in_path)
        self._ask({"op": "put", "src": str(in_path), "dest": str(out_path)})

    def fetch_file(self, in_path: str, out_path: str) -> None:
        super().fetch_file(in_path, out_path)
        self._ask({"op": "fetch", "src": str(in_path), "dest": str(out_path)})

    def close(self) -> None:
        for handle in self._files:
            if handle is not None:
                handle.close()
        if self._sock is not None:
            self._sock.close()
        self._sock, self._files = None, (None, None)
        self._connected = False

    def reset(self) -> None:
        self.close()
