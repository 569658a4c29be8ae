"""What the planner can run today, checked before anything touches a host.

A construct the planner does not handle yet is a :class:`PlanError` naming
the task's ``file:line`` — never a run that silently differs from Ansible.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import AbstractSet, Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import jinja2
from jinja2 import nodes

from ioc.errors import PlanError
from ioc.model import Block, Play, Task
from ioc.planner.effects import condition_source, expression_args, template_strings
from ioc.planner.program import Program
from ioc.planner.schedule import IDENTITY_NEUTRAL, task_identity_key

#: ``become_method`` values ioc runs (each is a mitogen connection method).
BECOME_METHODS = ("sudo", "su")

SUPPORTED_META = frozenset({"flush_handlers", "noop", "end_host", "end_play", "end_batch",
                            "clear_host_errors", "clear_facts", "refresh_inventory",
                            "reset_connection", "end_role"})


@dataclass(frozen=True)
class Capabilities:
    """What the runner (and controller) implement: given by the caller."""

    actions: AbstractSet[str]
    filters: AbstractSet[str]
    tests: AbstractSet[str]
    lookups: AbstractSet[str] = frozenset()
    #: Arguments each module accepts; an action not listed accepts anything.
    options: Mapping[str, AbstractSet[str]] = field(default_factory=dict)
    #: Actions the runner checks the options of when the task runs, as
    #: Ansible's plugins do (a task that does not run, or is rescued, is no
    #: error); without a fallback the planner leaves them to it.
    options_checked_at_run_time: AbstractSet[str] = frozenset()


def check_program(program: Program, caps: Capabilities,
                  fallback: Optional[Callable[[Task], Optional[str]]] = None) -> Dict[int, str]:
    """Raise PlanError for the first construct ``program`` cannot run correctly.

    With ``fallback`` (the caller can run single tasks elsewhere: the Ansible
    bridge), a task it names, or one ``check_task`` refuses, is not an error:
    the returned map gives its index and why; a handler likewise is not (see
    :func:`check_handlers`). Play-level constructs still raise.
    """
    _check_play(program.play)
    headed = set(program.include_heads)
    foreign: Dict[int, str] = {}
    for entry in program.entries:
        if entry.task.action in ("include_tasks", "include_role") and entry.index not in headed \
                and entry.task.include_scope is None:
            raise PlanError("%s with a templated name or a loop is only supported in "
                            "ioc-run" % entry.task.action, entry.task.location)
        if entry.implicit:
            continue
        reason = fallback(entry.task) if fallback is not None else None
        if reason is None:
            try:
                check_task(entry.task, caps, run_time_options=fallback is None)
                check_remote_user(entry.task, program.play)
                check_connection_vars(entry.task, program.parents[entry.index])
            except PlanError as exc:
                if fallback is None:
                    raise
                reason = exc.message
        if reason:
            foreign[entry.index] = reason
    identities: Dict[Any, Task] = {}
    refused = check_handlers(program, caps, fallback)
    for number, handler in enumerate(program.handlers):
        if number in refused:
            continue  # it runs through Ansible, as its own identity
        if handler.action not in IDENTITY_NEUTRAL:
            identities.setdefault(task_identity_key(handler), handler)
            if len(identities) > 1:
                raise PlanError("handlers that run as different become identities are not "
                                "supported yet (a flush runs as one identity)", handler.location)
    return foreign


def check_handlers(program: Program, caps: Capabilities,
                   fallback: Optional[Callable[[Task], Optional[str]]] = None) -> Dict[int, str]:
    """The handlers ioc does not run natively, by number, with why.

    Without ``fallback`` there are none: the first handler ``check_task``
    refuses is a PlanError. With it, a handler it names or ``check_task``
    refuses runs through the caller's machinery (a flush that can reach it
    is planned as a controller step, see ``schedule``).
    """
    refused: Dict[int, str] = {}
    for number, handler in enumerate(program.handlers):
        reason = fallback(handler) if fallback is not None else None
        if handler.action in ("include_tasks", "include_role") and reason is None:
            # (mitogen_batch's fallback runs one, and what it includes, through Ansible)
            raise PlanError("%s in a handler is not supported yet" % handler.action,
                            handler.location)
        if reason is None:
            try:
                check_task(handler, caps, run_time_options=fallback is None)
                if handler.delegate_to is not None:
                    # (a flush runs in the notified host's runner: it would run
                    # there, without the delegate's connection and variables)
                    raise PlanError("delegate_to on a handler is not supported yet",
                                    handler.location)
                check_remote_user(handler, program.play)
                check_connection_vars(handler)
            except PlanError as exc:
                if fallback is None:
                    raise
                reason = exc.message
        if reason:
            refused[number] = reason
    return refused


#: The play keyword ``order`` (how the play's hosts are ordered, L1.4).
HOST_ORDERS = frozenset({"inventory", "reverse_inventory", "sorted", "reverse_sorted", "shuffle"})


def _check_play(play: Play) -> None:
    if play.order not in (None,) and play.order not in HOST_ORDERS:
        raise PlanError("play keyword 'order: %s' is not one of %s"
                        % (play.order, ", ".join(sorted(HOST_ORDERS))), play.location)


def check_remote_user(task: Task, play: Play) -> None:
    """Refuse a ``remote_user`` or ``connection`` (from a block, role, include or the
    task) other than the play's.

    A play's tasks run over one connection per host, made with the play's
    ``remote_user`` (host variables such as ``ansible_user`` win over it,
    as in Ansible); another login user would need a connection of its own.
    """
    if task.connection is not None and task.connection != play.connection:
        raise PlanError("connection %r differs from the play's connection (%r): ioc-run "
                        "connects once per host and play, so every task of a play uses the "
                        "play's connection; set it on the play (or ansible_connection on the "
                        "hosts), use delegate_to: localhost for a task that must run on the "
                        "controller, or move these tasks to a play of their own"
                        % (task.connection, play.connection), task.location)
    if task.remote_user is not None and task.remote_user != play.remote_user:
        raise PlanError("remote_user %r differs from the play's remote_user (%r): ioc-run logs "
                        "in once per host and play, so every task of a play uses the play's "
                        "remote_user; set it on the play (or ansible_user on the hosts), or "
                        "move these tasks to a play of their own"
                        % (task.remote_user, play.remote_user), task.location)


#: Variables that say how to reach a host (``ioc.transport.spec.spec_for``).
CONNECTION_VARIABLES = frozenset({
    "ansible_connection", "ansible_host", "ansible_port", "ansible_user", "ansible_ssh_user",
    "ansible_ssh_host", "ansible_ssh_port",
    "ansible_ssh_private_key_file", "ansible_private_key_file", "ansible_ssh_args",
    "ansible_ssh_common_args", "ansible_ssh_extra_args", "ansible_python_interpreter",
    "ansible_password", "ansible_ssh_pass", "ansible_ssh_password", "ansible_timeout",
    "ansible_ssh_timeout", "ansible_ssh_retries", "ansible_host_key_checking", "mitogen_via",
    "ioc_via_auto",
})


def check_connection_vars(task: Task, blocks: Sequence[Block] = ()) -> None:
    """Refuse a connection variable set in a task's or block's ``vars``.

    Ansible reads them per task; ioc connects once per host and play, with
    the host's variables (inventory, play vars, extra vars).
    """
    for scope in (task, *reversed(tuple(blocks))):
        named = sorted(CONNECTION_VARIABLES & set(getattr(scope, "vars", None) or {}))
        if named:
            raise PlanError("%s set in a task's or block's vars: ioc connects once per host "
                            "and play, with the host's variables; set it in the inventory, "
                            "the play's vars or with -e, or move these tasks to a play of "
                            "their own" % ", ".join(named), task.location)


def check_task(task: Task, caps: Capabilities, run_time_options: bool = False) -> None:
    """Raise PlanError if ``task`` cannot run correctly; ``run_time_options``:
    leave the options of ``caps.options_checked_at_run_time`` to the runner."""
    where = task.location
    action = task.action
    if action == "meta":
        what = task.args.get("_raw_params")
        if what not in SUPPORTED_META:
            raise PlanError("meta: %s is not supported yet" % what, where)
    elif task.module is None and action not in caps.actions:
        raise PlanError("couldn't resolve module/action '%s'. This often indicates a misspelling, "
                        "missing collection, or incorrect module path." % action, where)
    if task.module is None and not (run_time_options
                                    and action in caps.options_checked_at_run_time):
        _check_options(task, caps)  # Ansible's own module checks its arguments itself
    method = task.become_method
    if method is not None and "{{" not in str(method) and \
            str(method).replace("ansible.builtin.", "").replace("ansible.legacy.", "") \
            not in BECOME_METHODS:
        raise PlanError("become_method '%s' is not supported yet (%s are)"
                        % (method, " and ".join(BECOME_METHODS)), where)
    if task.loop_with is not None and task.loop_with not in caps.lookups:
        raise PlanError("lookup plugin (%s) not found" % task.loop_with, where)
    for text in templates_of(task):
        check_template(text, caps, where)
    for text in expression_args(task):
        # (assert's that, debug's var: Ansible says what is wrong with the
        # expression when the task runs; a plugin it names must be known here,
        # so that the runner gets a proxy of one only the controller has)
        check_template(text, caps, where, syntax=False)


def _check_options(task: Task, caps: Capabilities) -> None:
    """An argument the module does not take is refused before anything runs."""
    accepted = caps.options.get(task.action)
    if accepted is None or not isinstance(task.args, Mapping):
        return
    unknown = sorted(k for k in task.args if isinstance(k, str) and not k.startswith("_")
                     and k not in accepted and "{{" not in k)
    if unknown:
        raise PlanError("Unsupported parameters for (%s) module: %s. Supported parameters "
                        "include: %s." % (task.action, ", ".join(unknown),
                                          ", ".join(sorted(o for o in accepted if not o.startswith("_")))),
                        task.location)


def templates_of(task: Task) -> Iterator[str]:
    """Every string of ``task`` that is templated at run time, as jinja source."""
    for value in (task.args, task.loop, task.name, task.vars, task.notify,
                  task.environment, task.retries, task.delay, task.ignore_errors,
                  task.loop_control.get("label"), task.delegate_to):
        yield from template_strings(value)
    for conds in (task.when, task.changed_when, task.failed_when, task.until):
        for cond in conds or ():
            source = condition_source(cond)
            if source is not None:
                yield source


_ENV = jinja2.Environment(extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols"])


def plugin_names(text: str) -> Optional[List[Tuple[str, str]]]:
    """``(kind, name)`` of each filter and test the template ``text`` names, in
    order (``kind`` ``filter`` or ``test``); None when it does not parse."""
    try:
        tree = _ENV.parse(text)
    except jinja2.TemplateSyntaxError:
        return None
    return [("filter" if isinstance(node, nodes.Filter) else "test", node.name)
            for node in tree.find_all((nodes.Filter, nodes.Test))]


def check_template(text: str, caps: Capabilities, where: Any, syntax: bool = True) -> None:
    """Syntax, filters and tests of one template, checked without running it
    (``syntax`` False: a template that does not parse is left to run time)."""
    try:
        tree = _ENV.parse(text)
    except jinja2.TemplateSyntaxError as exc:
        if not syntax:
            return
        raise PlanError("template error while templating string: %s. String: %s"
                        % (exc.message, text), where) from None
    for node in tree.find_all((nodes.Filter, nodes.Test)):
        kind, known = ("filter", caps.filters) if isinstance(node, nodes.Filter) else ("test", caps.tests)
        if node.name not in known:
            raise PlanError("template error while templating string: No %s named '%s'. "
                            "String: %s" % (kind, node.name, text), where)
    for call in tree.find_all(nodes.Call):
        if _called_name(call) in ("lookup", "query", "q") and call.args \
                and isinstance(call.args[0], nodes.Const) and call.args[0].value not in caps.lookups:
            raise PlanError("lookup plugin (%s) not found" % call.args[0].value, where)


def _called_name(call: nodes.Call) -> Optional[str]:
    return call.node.name if isinstance(call.node, nodes.Name) else None


