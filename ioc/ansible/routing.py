"""Which connection a task run through Ansible uses: the host's ioc runner where it can.

A task the parent runs with Ansible's task machinery
(:mod:`ioc.ansible.ansible_tasks`) would connect with Ansible's own
``ssh`` plugin: a second SSH connection to a host ioc is connected to
already, and about three round trips per module. Instead, wherever Ansible
would have used ``ssh`` (its own rule: ``ansible_connection`` of the host,
or of the delegate, else the task's ``connection``), the task gets the
``ioc_runner`` connection plugin (``connection_plugins/ioc_runner.py``),
served by the dispatcher on the runner it already has.

Selecting it is a matter of variables: :func:`route` sets
``ansible_connection`` (and the plugin's own ``ioc_runner_*`` options) in the
task variables the parent hands to ``_queue_task``; for a delegated task,
whose connection variables the worker computes from the delegate's,
:class:`RoutingVariables` (the worker's variable manager) does the same to
the delegate's. Only hosts the dispatcher has a runner connection for
(``runners``: ssh connections it prepared for this task) are routed; local
connections and other plugins stay Ansible's.
"""
from __future__ import annotations

from typing import Any, Callable, Collection, Dict, MutableMapping, Optional

#: The name Ansible loads the plugin by (``connection_loader.add_directory``).
PLUGIN = "ioc_runner"
#: Connections the runner stands in for: Ansible's ssh, by any of its names.
SSH_CONNECTIONS = frozenset({"ssh", "smart", "paramiko", "paramiko_ssh", "mitogen_ssh",
                             "ansible.builtin.ssh", "ansible.legacy.ssh",
                             "ansible.builtin.paramiko_ssh", "ansible.legacy.paramiko_ssh"})


def plugin_dir() -> str:
    """The directory holding the ``ioc_runner`` connection plugin."""
    import os

    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "connection_plugins")


def route(variables: MutableMapping[str, Any], name: str, default: Any,
          template: Callable[[Any], Any], runners: Collection[str], socket: str) -> bool:
    """Select ``ioc_runner`` in ``variables`` (a host's or a delegate's) if Ansible would use ssh.

    ``name`` is the inventory host whose runner serves the connection,
    ``default`` the task's ``connection`` keyword (used when no
    ``ansible_connection`` is set), ``template`` renders a templated value.
    """
    if not socket or name not in runners:
        return False
    chosen = variables.get("ansible_connection")
    try:
        chosen = default if chosen is None else template(chosen)
    except Exception:  # Ansible reports a broken value itself
        return False
    if str(chosen) not in SSH_CONNECTIONS:
        return False
    variables["ansible_connection"] = PLUGIN
    variables["ioc_runner_host"] = name
    variables["ioc_runner_socket"] = socket
    return True


class RoutingVariables:
    """The variable manager a worker gets: the parent's, routing delegates' connections.

    Ansible's ``TaskExecutor`` computes a delegated task's connection
    variables in the worker (``get_delegated_vars_and_hostname``, per loop
    item); this routes them as :func:`route` does the host's. Everything else
    is the wrapped manager's.
    """

    def __init__(self, manager: Any, runners: Collection[str], socket: str) -> None:
        self.__dict__.update(_manager=manager, _runners=frozenset(runners), _socket=socket)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_manager"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.__dict__["_manager"], name, value)

    def get_delegated_vars_and_hostname(self, templar: Any, task: Any,
                                        variables: Dict[str, Any]) -> Any:
        delegated, name = self.__dict__["_manager"].get_delegated_vars_and_hostname(
            templar, task, variables)
        mine: Optional[Dict[str, Any]] = (delegated.get("ansible_delegated_vars") or {}).get(name)
        if name is not None and mine is not None:
            route(mine, str(name), task.connection, templar.template,
                  self.__dict__["_runners"], self.__dict__["_socket"])
        return delegated, name
