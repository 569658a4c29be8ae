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
connections, other plugins, become methods ioc's runners do not take and
the actions of :data:`KEEP_CONNECTION` stay Ansible's, and ``-vv`` says so
for each task and host.
"""
from __future__ import annotations

from typing import Any, Callable, Collection, Dict, List, Mapping, MutableMapping, Optional

from ioc.errors import ConnectionSetupError
from ioc.planner.support import CONNECTION_VARIABLES
from ioc.transport.spec import BECOME_VARS, become_for, transport_of

#: The name Ansible loads the plugin by (``connection_loader.add_directory``).
PLUGIN = "ioc_runner"


def plugin_dir() -> str:
    """The directory holding the ``ioc_runner`` connection plugin."""
    import os

    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "connection_plugins")


#: Actions that keep Ansible's connection: ``raw`` and ``script`` show the
#: output of a command ssh runs on a terminal (``-tt``: ``\r\n``, "Shared
#: connection closed"), ``reboot`` and ``synchronize`` manage the connection
#: (or ssh) themselves.
KEEP_CONNECTION = frozenset({"raw", "script", "reboot", "synchronize"})

#: Connection variables a task's own vars may set and still use the runner:
#: the interpreter is on the command line Ansible sends (the runner runs it).
_RUNNER_TAKES = frozenset({"ansible_python_interpreter"})


def _own_connection_vars(task: Any) -> List[str]:
    """The connection variables ``task``'s vars set (its blocks', includes' and
    its own, as ``Task.get_vars`` gathers them): another port, user, key...
    than the host's, which its runner was not made with."""
    gather = getattr(task, "get_vars", None)
    own = gather() if gather is not None else {}
    return sorted((CONNECTION_VARIABLES - _RUNNER_TAKES) & set(own))


def refusal(variables: Mapping[str, Any], name: str, task: Any,
            template: Callable[[Any], Any], runners: Collection[str]) -> Optional[str]:
    """Why ``task`` cannot reach ``name`` over its runner (None: it can).

    ``variables`` are the host's (or the delegate's) task variables,
    ``template`` renders a templated value, ``runners`` are the hosts the
    dispatcher has an ssh runner for. The reason is for ``-vv``.
    """
    action = str(task.action or "").rsplit(".", 1)[-1]
    if action in KEEP_CONNECTION:
        return "%s keeps Ansible's connection" % action
    chosen = variables.get("ansible_connection")
    try:
        chosen = task.connection if chosen is None else template(chosen)
    except Exception:  # Ansible reports a broken value itself
        return "its connection is not known before Ansible templates it"
    if transport_of(chosen) != "ssh":  # the runner stands in for Ansible's ssh only
        return "connection %s is not ssh" % chosen
    named = _own_connection_vars(task)
    if named:
        return "the task's vars set %s" % ", ".join(named)
    if name not in runners:
        return "ioc has no runner for %s" % name
    try:
        keywords = {k: getattr(task, k, None) for k in BECOME_VARS if k != "password"}
        become_for(keywords, variables, template)
    except ConnectionSetupError as exc:
        return str(exc)
    except Exception:  # Ansible reports a broken value itself
        return "its become is not known before Ansible templates it"
    return None


def route(variables: MutableMapping[str, Any], name: str, task: Any,
          template: Callable[[Any], Any], runners: Collection[str], socket: str) -> str:
    """Select ``ioc_runner`` in ``variables`` (a host's or a delegate's) if Ansible would use ssh.

    ``name`` is the inventory host whose runner would serve the connection.
    Returns what the task connects with, for ``-vv``: a user must be able
    to tell which tasks kept Ansible's own connection, and why.
    """
    why = refusal(variables, name, task, template, runners) if socket \
        else "no ioc runner service"
    if why is not None:
        return "Ansible's own connection (%s)" % why
    variables["ansible_connection"] = PLUGIN
    variables["ioc_runner_host"] = name
    variables["ioc_runner_socket"] = socket
    return "the ioc runner of %s" % name


def say(task: Any, host: str, how: str) -> None:
    """``-vv``: the connection a task run through Ansible uses for ``host``."""
    from ansible.utils.display import Display

    Display().vv("mitogen_batch: %s on %s connects with %s" % (task.get_name(), host, how))


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
            how = route(mine, str(name), task, templar.template,
                        self.__dict__["_runners"], self.__dict__["_socket"])
            say(task, "%s -> %s" % (variables.get("inventory_hostname"), name), how)
        return delegated, name
