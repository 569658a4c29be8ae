"""What the controller keeps between steps: each host's state, each step's outcome,
the run's options, and what a play's executor needs from the run around it.

A :class:`HostState` is the controller's copy of one host: its connection,
its status in the play, and the variables its runners reported (facts,
``set_fact`` values, ``include_vars``, notified handlers); every batch ships
:meth:`HostState.wire_state` and absorbs the state its runner returns. A
:class:`StepOutcome` is what one step leaves for the decisions after it
(failures, meta actions, dynamic includes). :class:`PlayContext` is the
executor's view of the playbook run: the connector, the callbacks and the
inventory operations the two front ends provide differently.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Dict, FrozenSet, List, Mapping, Optional, Set, Tuple

from ioc.callbacks import Callback, Stats
from ioc.callbacks.progress import Progress
from ioc.controller import payloads  # noqa: F401 (PlayContext.payloads)
from ioc.controller.payloads import ModulePayloads
from ioc.controller.stepping import Stepper
from ioc.model import Play, Task
from ioc.planner import Plan
from ioc.replay import Event
from ioc.transport.connector import Connector
from ioc.transport.report import TransportReport
from ioc.transport.spec import ConnectionSpec


class HostStatus(enum.Enum):
    ACTIVE = "active"
    FAILED = "failed"
    UNREACHABLE = "unreachable"
    ENDED = "ended"
    #: Stopped by another host's failure (any_errors_fatal, run_once,
    #: max_fail_percentage): out of the play, but not counted as failed (L4.5).
    STOPPED = "stopped"


@dataclass
class HostState:
    """What the controller carries for one host from one step to the next."""

    name: str
    spec: ConnectionSpec
    #: Static layers shipped with every batch (see ``runner.batch.HostRun``).
    inventory_vars: Dict[str, Any]
    status: HostStatus = HostStatus.ACTIVE
    facts: Dict[str, Any] = field(default_factory=dict)
    runtime: Dict[str, Any] = field(default_factory=dict)
    included: Dict[str, Any] = field(default_factory=dict)
    notified: List[str] = field(default_factory=list)
    blocks: Dict[str, Any] = field(default_factory=dict)
    #: Linear put it on its run's failed-hosts list though a rescue took it
    #: (any_errors_fatal sent it there, or an included file failed to load):
    #: it finishes this play, later plays leave it out, its recap counts no failure.
    marked: bool = False
    #: Handler numbers still queued in the flush the host stopped in, before
    #: a handler its runner does not run (see ``HostRun.run_queued``).
    flushing: Optional[List[int]] = None
    #: Role occurrences that ran ("ran") or completed ("done") for the host
    #: in this play (see ``HostRun.roles``).
    roles: Dict[str, str] = field(default_factory=dict)
    #: How many times any host's status was set: what was derived from every
    #: host's status (``ansible_play_hosts``) is good while this stands still.
    status_changes: ClassVar[int] = 0

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "status":
            HostState.status_changes += 1
        object.__setattr__(self, name, value)

    @property
    def active(self) -> bool:
        return self.status is HostStatus.ACTIVE

    def wire_state(self) -> Dict[str, Any]:
        state: Dict[str, Any] = {"facts": self.facts, "runtime": self.runtime,
                                 "include_vars": self.included, "notified": self.notified,
                                 "blocks": self.blocks, "roles": self.roles}
        if self.flushing is not None:
            state["flushing"] = self.flushing
        return state

    def absorb(self, end: Event) -> None:
        """Take the state a runner reported at the end of its step."""
        state = end.get("state") or {}
        # The runner saw only the variables its step reads (the closure), so
        # what it returns is merged in, never substituted: nothing is deleted
        # on a target except by the controller (clear_facts).
        self.facts = {**self.facts, **state.get("facts", {})}
        self.runtime = {**self.runtime, **state.get("runtime", {})}
        self.included = {**self.included, **state.get("include_vars", {})}
        self.notified = state.get("notified", self.notified)
        self.blocks = state.get("blocks", {})
        self.flushing = state.get("flushing")
        self.roles = state.get("roles", self.roles)
        if end.get("status") == "failed":
            self.status = HostStatus.FAILED
        elif end.get("status") == "ended":
            self.status = HostStatus.ENDED


@dataclass(frozen=True)
class RunOptions:
    check: bool = False
    diff: bool = False
    forks: int = 5
    #: ansible-playbook's ``-v`` count (``ansible_verbosity``; ``debug``'s threshold).
    verbosity: int = 0
    #: Ship only the variables a step reads (off only to measure what it saves).
    closure: bool = True
    #: Whose result shapes the runner reproduces: ansible-core "2.21" (ioc's
    #: own) or "2.19" (mitogen_batch under that release).
    shape: str = "2.21"
    #: ``--ask-become-pass``: the password when no ``ansible_become_password`` is set.
    become_password: Optional[str] = field(default=None, repr=False)
    #: ``--ask-pass``: the SSH password when no ``ansible_password`` is set.
    connection_password: Optional[str] = field(default=None, repr=False)
    #: Connection settings from the command line and Ansible's configuration
    #: (``-u``, ``--private-key``, ``-c``, ``-T``, ``ssh_args``, ...) as the
    #: ``ansible_*`` variables they default: every host variable overrides them.
    connection_vars: Mapping[str, Any] = field(default_factory=dict)
    #: Ansible's ``become_allow_same_user``: become even to the connection's own user.
    become_allow_same_user: bool = False
    #: Ansible's ``error_on_missing_handler``: a changed task notifying a name
    #: no handler has ends the run (else a warning).
    error_on_missing_handler: bool = True
    #: The deprecated values whose reads the runner reports, as this
    #: ansible-core tags them (``ioc.ansible.config.deprecated_reads``): "facts"
    #: (top-level fact names), "play_hosts"; recorded in task results even when
    #: deprecation warnings are off.
    deprecated: Tuple[str, ...] = ()
    #: Ansible's ``deprecation_warnings``: whether those reads are shown.
    deprecation_warnings: bool = True
    #: Ansible's ``allow_broken_conditionals``: a condition whose result is no
    #: boolean is its truth, with a deprecation warning, instead of an error.
    allow_broken_conditionals: bool = False
    #: Magic variables the front end knows and the controller does not
    #: (``ansible_playbook_python``, ``ansible_config_file``, and under
    #: ioc-run Ansible's options variables: ``ansible_version``,
    #: ``ansible_forks``, ``ansible_inventory_sources``): every host has them.
    magic: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class StepOutcome:
    """What happened in one step, as the controller needs it afterwards."""

    ends: Dict[str, Event] = field(default_factory=dict)
    trouble: Dict[str, str] = field(default_factory=dict)
    #: Hosts with a non-ignored failure (rescued or not), and unreachable ones.
    failed: List[str] = field(default_factory=list)
    #: Hosts found unreachable by a task that ignores it (``ignore_unreachable``):
    #: they stay, yet linear's any_errors_fatal check counts them (L4.5).
    ignored_unreachable: List[str] = field(default_factory=list)
    #: meta actions reported as run (not skipped), per host.
    metas: Dict[str, List[str]] = field(default_factory=dict)
    #: Dynamic includes that ran: per host, the ok result of each include (per item).
    includes: Dict[str, List[Event]] = field(default_factory=dict)
    #: Entry indices of the static ``include_role`` tasks that ran (ok) on some host.
    roles_included: Set[int] = field(default_factory=set)
    #: A templated run_once, as the first active host's variables decided it.
    once: Optional[bool] = None
    #: The host a run_once step ran on (the first whose next task it was).
    once_host: Optional[str] = None


@dataclass
class PlayContext:
    """What a play's executor needs from the playbook run around it."""

    connector: Connector
    callbacks: Callback
    stats: Stats
    options: RunOptions
    transport: TransportReport
    payloads: payloads.PayloadCache
    #: The connection of any inventory name (delegates need not be in the play).
    connection_of: Callable[[str], ConnectionSpec]
    #: Applies a result that changes the inventory (add_host, group_by); returns changed.
    change_inventory: Callable[[str, Dict[str, Any]], bool]
    #: Current ``groups`` (they change with add_host/group_by).
    groups: Callable[[], Dict[str, List[str]]]
    #: Facts (or set_fact values) ``delegate_facts`` gave a host outside the
    #: play, kept for the whole run: (host, values, "facts" or "runtime").
    store_facts: Callable[[str, Dict[str, Any], str], None]
    #: A play-wide meta action the run must act on (clear_host_errors...).
    play_meta: Callable[[str, List[str]], None]
    #: Loads what a dynamic include names: (play, include task, templated
    #: args) -> ``ioc.loader.Included``. None: dynamic includes cannot run.
    load_include: Optional[Callable[[Play, Task, Mapping[str, Any]], Any]] = None
    #: Plans a play again once dynamic includes have spliced tasks into it.
    replan: Optional[Callable[[Play], Plan]] = None
    #: A host's current ``group_names`` (group_by/add_host change them).
    group_names: Optional[Callable[[str], List[str]]] = None
    #: ``hostvars`` of the inventory's hosts outside this executor (hosts
    #: add_host or refresh_inventory brought, other serial batches), given
    #: the names the executor has itself.
    outside_hostvars: Optional[Callable[[FrozenSet[str]], Dict[str, Dict[str, Any]]]] = None
    #: The layers (``inventory``, ``facts``, ``include_vars``, ``runtime``) of
    #: an inventory host outside this executor (a delegate), as the run has
    #: them now; a name the inventory lacks has none.
    outside_layers: Optional[Callable[[str], Dict[str, Dict[str, Any]]]] = None
    #: A host's inventory layer as the run has it now (after refresh_inventory).
    inventory_vars: Optional[Callable[[str], Dict[str, Any]]] = None
    #: Installs another inventory (Ansible re-read its sources); None: cannot.
    replace_inventory: Optional[Callable[[Any], None]] = None
    #: ``ansible_play_hosts_all`` as the current inventory makes it.
    play_hosts_all: Optional[Callable[[], List[str]]] = None
    #: Per host, entries it does not run at all, no event (``gathering =
    #: smart``: fact gathering where Ansible has gathered facts already).
    skip: Mapping[str, FrozenSet[int]] = field(default_factory=dict)
    #: Ansible's module payloads for tasks whose ``module`` is set (an
    #: ``ioc.ansible.modules.ModuleSet``); None when Ansible is not used.
    modules: Optional[ModulePayloads] = None
    #: ``--step`` (ioc-run): asks the user before each task; None: never asks.
    stepper: Optional[Stepper] = None
    #: ioc-run's live progress line on a terminal (``ioc.callbacks.progress``);
    #: None: none is shown (stdout is no terminal, or mitogen_batch).
    progress: Optional[Progress] = None
