"""Running a whole playbook: plan every play first, then run them in order."""
from __future__ import annotations

import dataclasses
import logging
import os
import random
from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Set, Tuple

from ioc import inventory as inv
from ioc.agentless_runner.batch import OMIT
from ioc.agentless_runner.templating import Templar, TemplateError, is_template
from ioc.callbacks import Callback, Stats
from ioc.callbacks.progress import Progress
from ioc.controller.capabilities import runner_capabilities
from ioc.controller.closure import template_files
from ioc.transport.spec import ConnectionSpec, early_connections, is_true, resolve_via, spec_for
from ioc.transport.connector import Connector
from ioc.controller.dispatch import context_key
from ioc.controller.payloads import ModulePayloads, PayloadCache
from ioc.controller.play import PlayExecutor, role_magic
from ioc.controller.state import HostState, HostStatus, PlayContext, RunOptions
from ioc.controller.stepping import Stepper
from ioc.transport.report import TransportReport
from ioc.errors import ConnectionSetupError, IocError, LoadError
from ioc.model import Inventory, Play, Playbook
from ioc.planner import ControllerStep, Plan, TagFilter, plan_play

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class PlannedPlay:
    play: Play
    plan: Plan


def plan_playbook(playbook: Playbook, per_task: bool = False,
                  tags: Optional[TagFilter] = None) -> List[PlannedPlay]:
    """Plan every play; any PlanError surfaces before a host is contacted."""
    caps = runner_capabilities()
    return [PlannedPlay(play, plan_play(play, caps, per_task=per_task, tags=tags,
                                        template_files=template_files(play.basedir)))
            for play in playbook.plays]


def warm_connector(contacts: Sequence[Tuple[str, ConnectionSpec]],
                   forks: int) -> Optional[Connector]:
    """A connector already connecting ``contacts`` (:meth:`PlaybookRun.first_contacts`),
    each attempt the first step's own (:meth:`Connector.warm`, binding); None
    when there are none. The run that takes it (:attr:`PlaybookRun.warmed`)
    ends it; its caller ends it otherwise."""
    if not contacts or not early_connections():
        return None
    connector = Connector(forks=forks)
    for host, spec in contacts:
        connector.warm(host, spec, binding=True)
    return connector


class PlaybookRun:
    """One ``ioc-run`` invocation: inventory, plans, connections, results."""

    def __init__(self, playbook: Playbook, inventory: Inventory, extra_vars: Mapping[str, Any],
                 callbacks: Callback, options: RunOptions, limit: Optional[str] = None,
                 per_task: bool = False,
                 reload_inventory: Optional[Callable[[], Inventory]] = None,
                 tags: Optional[TagFilter] = None,
                 load_include: Optional[Callable[..., Any]] = None,
                 new_names_vars: Optional[Callable[[Inventory, FrozenSet[str]], Inventory]] = None
                 ) -> None:
        self.playbook = playbook
        self.inventory = inventory
        self.extra_vars = dict(extra_vars)
        self.callbacks = callbacks
        self.options = options
        self.limit = limit
        self.reload_inventory = reload_inventory
        #: The add_host and group_by results applied so far, in order: a
        #: refresh_inventory applies them again to the inventory it reads, as
        #: Ansible's InventoryManager keeps its dynamic hosts and groupings.
        self._dynamic: List[Tuple[str, Dict[str, Any]]] = []
        self.tags = tags or TagFilter()
        self.per_task = per_task
        #: ``ioc.loader.load_include`` (the controller does not import the loader).
        self.load_include = load_include
        #: The vars of hosts and groups the run creates (``host_vars/``,
        #: ``group_vars/``: the loader's business, given by the front end).
        self.new_names_vars = new_names_vars
        self.plans = plan_playbook(playbook, per_task=per_task, tags=self.tags)
        self.stats = Stats()
        self.transport = TransportReport()
        self.payload_cache = PayloadCache()
        #: Ansible's module payloads for tasks that run Ansible's module code
        #: (``Task.module``); set by the front end when Ansible is importable.
        self.modules: Optional[ModulePayloads] = None
        #: Hosts that failed or became unreachable leave every later play (L1.5).
        self.lost: Dict[str, HostStatus] = {}
        #: ansible-playbook's exit code comes from these, not from the recap
        #: (``meta: clear_host_errors`` empties the first, L7.10).
        self.failed_hosts: Set[str] = set()
        self.unreachable_hosts: Set[str] = set()
        #: The current play's hosts a ``clear_host_errors`` took off the TQM's
        #: unreachable list (those unreachable again by the play's end are not):
        #: the exit code is the last play's, whose start put the list back.
        self.cleared_in_play: Set[str] = set()
        #: Hosts a rescue took after linear listed them failed (HostState.marked):
        #: the next play starts with them failed, which sets the exit code.
        self.marked_hosts: Set[str] = set()
        #: Facts and set_fact/register values outlive a play (Ansible keeps them
        #: in its variable manager for the whole run).
        self.memory: Dict[str, Dict[str, Dict[str, Any]]] = {}
        #: The current play's hosts (all serial batches) and those it lost so far.
        self._play_hosts_all: List[str] = []
        self._removed_in_play: Set[str] = set()
        #: The current play's ``vars_files`` per host, where their names are
        #: templated (Ansible resolves them per host; the bridge does it).
        self.host_vars_files: Dict[str, Dict[str, Any]] = {}
        #: The current play's entries a host does not run (``gathering = smart``).
        self.skip: Dict[str, FrozenSet[int]] = {}
        #: Several playbooks in one run: the index of each one's last play.
        #: As ansible-playbook, the next playbook runs only when that play
        #: ended without a failed or unreachable host.
        self.playbook_ends: FrozenSet[int] = frozenset()
        #: Answers one ``vars_prompt`` entry (templated): the front end's terminal
        #: and Ansible's ``Display.do_var_prompt`` (encrypt, defaults, no tty).
        self.ask_var: Optional[Callable[[Mapping[str, Any]], Any]] = None
        #: ``--step``: asks before each task (``ioc.controller.stepping``).
        self.stepper: Optional[Stepper] = None
        #: max_fail_percentage stopped the playbook (its exit code is 2 then).
        self.broken_by_failures = False
        #: The live progress line on ioc-run's terminal (ioc.callbacks.progress).
        self.progress: Optional[Progress] = None
        #: A connector kept across runs (``ioc-run --persist``'s daemon): used,
        #: not shut down. None: the run makes its own and ends every runner.
        self.connector: Optional[Connector] = None
        #: The run's own connector, made before the run to warm the first
        #: play's hosts up (ioc-run: :meth:`first_contacts`); ended with the run.
        self.warmed: Optional[Connector] = None

    def run(self) -> int:
        """Run every play; return ansible-playbook's exit code."""
        kept = self.connector
        connector = kept if kept is not None else self.warmed or Connector(forks=self.options.forks)
        if self.progress is not None:
            connector.observer = self.progress.connection
        connector.dropped = self._dropped
        try:
            self.callbacks.playbook_on_start(self.playbook.path)
            for index, planned in enumerate(self.plans):
                before = len(self.failed_hosts | self.unreachable_hosts)
                going_on = self.run_play(planned, connector)
                connector.release_warm()  # (past the run's first step)
                if not going_on:
                    break
                if index in self.playbook_ends and index != len(self.plans) - 1:
                    if len(self.failed_hosts | self.unreachable_hosts) > before:
                        break  # (its recap is the run's, below)
                    # ansible-playbook prints the (cumulative) recap after each playbook
                    self.callbacks.stats(self.stats)
        finally:
            if kept is None:
                connector.shutdown()
            else:
                connector.observer = lambda host, what: None
        self.callbacks.stats(self.stats)
        self.callbacks.transport_report(self.transport)
        return self.exit_code()

    def _dropped(self, key: Any) -> None:
        """A runner ended (reset_connection, a lost or changed connection): the
        files it held go with it, and are sent again to its successor."""
        self.payload_cache.sent.pop(context_key(*key), None)

    def exit_code(self) -> int:
        if self.broken_by_failures:
            return 2  # (max_fail_percentage stopped the playbook: L4.6)
        if self.unreachable_hosts - self.cleared_in_play:
            return 4
        return 2 if self.failed_hosts else 0

    def run_play(self, planned: PlannedPlay, connector: Connector) -> bool:
        """Run one play, serial batch by serial batch; False stops the playbook (L1.9)."""
        self.cleared_in_play = set()
        play = self._templated_keywords(self._prompted(planned.play))
        named = self._handler_names(play)
        if named is not play:
            planned = PlannedPlay(named, self._replan(named))
        else:
            planned = dataclasses.replace(planned, play=play)
        play = planned.play
        matched = ordered_hosts(inv.match_hosts(self.inventory, play.hosts, self.limit), play.order)
        hosts = [h for h in matched if h not in self.lost]
        self.failed_hosts |= self.marked_hosts
        self.marked_hosts.clear()
        if not matched:
            # (the inventory warns as the play's hosts are looked up, before its banner)
            self.callbacks.warning("Could not match supplied host pattern, ignoring: %s"
                                   % play.hosts)
            self.callbacks.play_start(play.name, hosts)
            self.callbacks.no_hosts_matched()
            return True
        if not hosts:
            # Every matched host left in an earlier play: linear shows the
            # play's banner and runs nothing.
            self.callbacks.play_start(play.name, hosts)
            return True
        # ansible-core 2.21 stops the playbook when a batch's *new* failures
        # equal the batch, and its batch still counts the play's hosts lost in
        # earlier plays: with one of those, later plays start (and find no host).
        some_lost = len(hosts) < len(matched)
        # ansible_play_hosts_all: every host the play's pattern matches (with
        # --limit), in inventory order (not the play's ``order``), whatever
        # serial batch it is in, and hosts earlier plays lost too (L6.6).
        self._play_hosts_all = list(inv.match_hosts(self.inventory, play.hosts, self.limit))
        self._removed_in_play = set()
        # Hosts unreachable in earlier plays stay in linear's iterator, at the
        # play's first task: a clear_host_errors brings them back for the rest
        # of this play (L7.10); the next play starts with them unreachable
        # again (PlaybookExecutor puts its record of them back into the TQM).
        dormant = [h for h in matched if self.lost.get(h) is HostStatus.UNREACHABLE] \
            if play.serial in (None, "", 0) else []
        for batch_hosts in serial_batches(hosts, play.serial):
            self.callbacks.play_start(play.name, batch_hosts)
            listed = set(batch_hosts) | set(dormant)
            executor = self._executor(planned, [h for h in matched if h in listed], connector,
                                      dormant)
            executor.run()
            self._account(planned, executor)
            self._removed_in_play.update(h for h, s in executor.hosts.items()
                                         if s.status not in (HostStatus.ACTIVE, HostStatus.ENDED))
            if executor.max_fail_hit:
                # ansible-core's RUN_FAILED_BREAK_PLAY: the playbook ends with
                # RUN_FAILED_HOSTS, unreachable hosts or not
                self.broken_by_failures = True
            if executor.max_fail_hit or not some_lost and not executor.fatal_unreachable \
                    and not any(s.status in (HostStatus.ACTIVE, HostStatus.ENDED) and not s.marked
                                for s in executor.hosts.values()):
                return False  # L1.9, L4.6, L4.7: later batches and plays do not run
            if executor.ended and play.serial in (None, "", 0):
                break
        return True

    def _prompted(self, play: Play) -> Play:
        """``play`` with its ``vars_prompt`` answers among its vars.

        As Ansible's PlaybookExecutor: when the play starts (before its
        banner), its entries templated with the play-level variables, each
        variable an extra var sets not asked at all, the answers play vars
        (so ``vars_files`` and extra vars still win).
        """
        if not play.vars_prompt:
            return play
        if self.ask_var is None:
            raise IocError("%s: vars_prompt needs a front end that can ask (ioc-run)"
                           % play.location)
        templar = Templar(self._play_level_vars(play))
        answers: Dict[str, Any] = {}
        for entry in play.vars_prompt:
            try:
                entry = templar.template(dict(entry))
            except TemplateError as exc:
                raise LoadError("Error processing keyword 'vars_prompt': %s" % exc,
                                play.location) from None
            if str(entry["name"]) not in self.extra_vars:
                answers[str(entry["name"])] = self.ask_var(entry)
        return dataclasses.replace(play, vars={**play.vars, **answers})

    def _play_level_vars(self, play: Play,
                         defaults: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """What a play has to template its keywords with before any host
        (``defaults``: a role's own, over the play's roles' defaults)."""
        return {**play.role_defaults, **(defaults or {}), **play.vars, **play.vars_files, **play.role_vars,
                **self.extra_vars, **self.options.magic,
                "groups": inv.groups_dict(self.inventory),
                "playbook_dir": os.path.abspath(play.basedir), "omit": OMIT}

    def _handler_names(self, play: Play) -> Play:
        """``play`` with its handlers' templated names templated, as linear's
        ``search_handlers_by_notification`` does: once, with the play-level
        variables and the handler's own (role defaults, vars and parameters,
        block vars), no host's. One that cannot be templated keeps its name and
        ``name_error`` says why (it answers to its ``listen`` topics only)."""
        if not any(h.name and h.name_error is None and is_template(h.name)
                   for h in play.handlers):
            return play
        level = self._play_level_vars(play)
        handlers = []
        for handler in play.handlers:
            if handler.name and handler.name_error is None and is_template(handler.name):
                role = {"role_name": handler.role.rsplit(".", 1)[-1],
                        "role_path": handler.role_path} if handler.role else {}
                # (its role's defaults over the play's; its role parameters over its vars)
                base = self._play_level_vars(play, handler.role_defaults) \
                    if handler.role_defaults else level
                templar = Templar({**base, **handler.vars, **handler.role_params,
                                   **self.extra_vars, **role})
                try:
                    handler = dataclasses.replace(handler, name=str(templar.template(handler.name)))
                except TemplateError as exc:
                    handler = dataclasses.replace(handler, name_error=str(exc))
            handlers.append(handler)
        return dataclasses.replace(play, handlers=tuple(handlers))

    def _templated_keywords(self, play: Play) -> Play:
        """``name`` and ``hosts`` templated as Ansible does when the play starts.

        With what a play has before any host: its vars and vars_files,
        extra vars, ``groups`` (as earlier plays left the inventory) and
        ``playbook_dir``. An undefined variable stops the run (rc 4), as it
        stops ansible-playbook, with the play's file:line.
        """
        if not (is_template(play.name) or is_template(play.hosts)):
            return play
        templar = Templar(self._play_level_vars(play))
        values: Dict[str, str] = {}
        for keyword in ("name", "hosts"):
            try:
                value = templar.template(getattr(play, keyword))
            except TemplateError as exc:
                where = play.name_location if keyword == "name" else None
                raise LoadError("Error processing keyword '%s': %s" % (keyword, exc),
                                where or play.location) from None
            if isinstance(value, (list, tuple)):
                value = ",".join(str(v) for v in value)
            values[keyword] = str(value)
        return dataclasses.replace(play, name=values["name"], hosts=values["hosts"])

    def _executor(self, planned: PlannedPlay, hosts: List[str], connector: Connector,
                  dormant: Sequence[str] = ()) -> PlayExecutor:
        """The executor of ``hosts`` (in the play's order); those of ``dormant``
        among them were unreachable in an earlier play: they join the play only
        if a ``clear_host_errors`` revives them (see PlayExecutor)."""
        play = planned.play
        states = {h: self._host_state(play, h) for h in hosts}
        for name, state in states.items():
            if connector is not None:  # (None: a plan without connections, in tests)
                connector.settle(name, state.spec)
        if connector is not None:
            connector.expect_intermediaries(self._intermediaries(
                play, [s.spec for s in states.values()]))
        ctx = PlayContext(
            connector=connector, callbacks=self.callbacks, stats=self.stats, options=self.options,
            transport=self.transport, payloads=self.payload_cache,
            connection_of=lambda name: self._connection_of(play, name),
            change_inventory=self._change_inventory,
            groups=lambda: inv.groups_dict(self.inventory),
            group_names=lambda host: inv.group_names(self.inventory, host),
            store_facts=self._store_facts, play_meta=self._play_meta,
            load_include=None if self.load_include is None else self._load_include,
            replan=self._replan,
            outside_hostvars=self._outside_hostvars,
            outside_layers=lambda name: self._outside_layers(play, name),
            inventory_vars=lambda name: self._inventory_layer(play, name),
            replace_inventory=self._replace_inventory,
            play_hosts_all=lambda: self._hosts_all(play),
            skip=dict(self.skip), modules=self.modules, stepper=self.stepper,
            progress=self.progress)
        return PlayExecutor(planned.plan, states, ctx,
                            static_layers={"play": {**play.vars, **play.vars_files,
                                                    **play.role_vars},
                                           "extra": self.extra_vars,
                                           "host_play": {h: self.host_vars_files[h] for h in hosts
                                                         if h in self.host_vars_files}},
                            magic=self._magic(play, hosts),
                            # (L6.6: hosts lost in this play's earlier batches and
                            # in earlier plays are out of ansible_play_hosts)
                            removed=frozenset(self._removed_in_play | (
                                (self.failed_hosts | self.unreachable_hosts)
                                & set(self._play_hosts_all))),
                            dormant=dormant)

    def _account(self, planned: PlannedPlay, executor: PlayExecutor) -> None:
        plan = executor.plan  # with what dynamic includes spliced in
        steps = plan.steps
        self.transport.batches += sum(1 for s in steps if not isinstance(s, ControllerStep))
        self.transport.per_task_calls += sum(
            len([e for e in plan.entries_of(s) if not (e.implicit and e.is_flush)])
            for s in steps) * len(executor.hosts)
        for host, state in executor.hosts.items():
            self.memory[host] = {"facts": state.facts, "runtime": state.runtime,
                                 "include_vars": state.included}
            if state.status in (HostStatus.FAILED, HostStatus.STOPPED):
                self.lost[host] = state.status
                self.failed_hosts.add(host)
            elif state.status is HostStatus.UNREACHABLE:
                self.lost[host] = state.status
                self.unreachable_hosts.add(host)
                self.cleared_in_play.discard(host)
            elif state.marked:
                self.lost[host] = HostStatus.STOPPED  # out of later plays, not failed
                self.marked_hosts.add(host)


    # -- what a play asks of the run --------------------------------------------

    def _load_include(self, play: Play, task: Any, args: Mapping[str, Any]) -> Any:
        assert self.load_include is not None
        return self.load_include(play, task, args, self.extra_vars)

    def _replan(self, play: Play) -> Plan:
        # (what an include brought may have handlers with templated names)
        return plan_play(self._handler_names(play), runner_capabilities(),
                         per_task=self.per_task, tags=self.tags,
                         template_files=template_files(play.basedir))

    def connection_spec(self, name: str) -> ConnectionSpec:
        """How the first play would connect to inventory host ``name``, its
        ``mitogen_via`` chain resolved (``ioc-ssh``: a shell on the host as the
        run reaches it)."""
        play = self.playbook.plays[0]
        spec = self._connection_of(play, name)
        if spec.via:
            spec = resolve_via(name, spec, lambda hop: self._connection_of(play, hop))
        return spec

    def first_contacts(self) -> List[Tuple[str, ConnectionSpec]]:
        """The hosts the first play starts with (its first serial batch) and
        how each is connected, as :meth:`run_play` will settle them: what a
        front end may start connecting before the run (``ioc-run``, while it
        resolves modules and plans). Empty where that is only known as the
        play starts: a templated ``hosts`` or ``vars_prompt`` answers; a host
        whose settings cannot be worked out yet is left out (its first step
        says why, where the run would), and one reached through another
        (``mitogen_via``: the intermediary starts it, and its relay)."""
        if not self.playbook.plays:
            return []
        play = self.playbook.plays[0]
        if play.vars_prompt or is_template(play.hosts) or is_template(play.name):
            return []
        try:
            hosts = list(inv.match_hosts(self.inventory, play.hosts, self.limit))
            if play.order != "shuffle":  # (shuffled as the play starts)
                hosts = ordered_hosts(hosts, play.order)
            elif play.serial not in (None, "", 0, "0"):
                return []  # (which hosts come first is the shuffle's)
            hosts = serial_batches(hosts, play.serial)[0] if hosts else []
        except Exception:  # (the play says it, as it starts)
            return []
        out = []
        for host in hosts:
            try:
                spec = self._host_state(play, host).spec
            except Exception as exc:
                LOG.debug("%s: not connected ahead of the run: %s", host, exc)
                continue
            if not spec.via:  # (a mitogen_via chain is the play's to start: its relays)
                out.append((host, spec))
        return out

    def _intermediaries(self, play: Play, specs: List[ConnectionSpec]) -> Set[str]:
        """The hosts ``specs`` are reached through, along each ``mitogen_via`` chain."""
        found: Set[str] = set()
        for spec in specs:
            hop = spec.via
            while hop and hop not in found:
                found.add(hop)
                try:
                    hop = self._connection_of(play, hop).via
                except ConnectionSetupError:
                    break  # (the host that needs it fails saying why)
        return found

    def _connection_of(self, play: Play, name: str) -> ConnectionSpec:
        vars_of = name
        if name not in self.inventory.hosts and name in inv.LOCALHOST_NAMES:
            # (127.0.0.1 or ::1 that the inventory does not name is Ansible's
            # localhost, implicit or not: its variables, its local connection)
            self.inventory = inv.ensure_localhost(self.inventory)
            vars_of = "localhost"
        hostvars = inv.host_vars(self.inventory, vars_of) if vars_of in self.inventory.hosts else {}
        return self._spec(play, name, {**play.role_defaults, **hostvars})

    def _spec(self, play: Play, name: str, layer: Mapping[str, Any]) -> ConnectionSpec:
        """``name``'s connection from its variables (``layer``, then the play's, its
        ``host_vars`` files and extra vars) over the play's keywords and options."""
        higher = {**layer, **play.vars, **play.vars_files, **self.host_vars_files.get(name, {}),
                  **play.role_vars, **self.extra_vars}
        if higher.get("mitogen_via") in (None, "") and is_true(higher.get("ioc_via_auto")) \
                and name in self.inventory.hosts:
            higher["mitogen_via"] = inv.via_group_head(self.inventory, name)
        return spec_for(name, {**self._connection_defaults(play, higher), **higher},
                        password=self.options.connection_password)

    def _connection_defaults(self, play: Play, variables: Mapping[str, Any]) -> Dict[str, Any]:
        """The connection settings below a host's ``variables``: ``-u``, ``-c`` and the
        others from the command line and ansible.cfg, with the play's ``remote_user``
        and ``connection`` over them (Ansible: keywords over options, variables over
        keywords). No default login user where a variable names one
        (``ansible_ssh_user`` included)."""
        out = {**self.options.connection_vars, **_play_port(play)}
        for keyword, name in (("remote_user", "ansible_user"),
                              ("connection", "ansible_connection")):
            value = getattr(play, keyword)
            if isinstance(value, str) and is_template(value):
                try:
                    value = Templar({**out, **variables, "omit": OMIT}).template(value)
                except TemplateError as exc:
                    raise LoadError("Error processing keyword '%s': %s" % (keyword, exc),
                                    play.location) from None
            if value is not None:
                out[name] = value
        if "ansible_user" in variables or "ansible_ssh_user" in variables:
            out.pop("ansible_user", None)
        if "ansible_connection" in variables:
            out.pop("ansible_connection", None)
        return out

    def _replace_inventory(self, inventory: Inventory) -> None:
        self.inventory = inventory

    def _hosts_all(self, play: Play) -> List[str]:
        """``ansible_play_hosts_all`` from the current inventory (after refresh_inventory)."""
        self._play_hosts_all = list(inv.match_hosts(self.inventory, play.hosts, self.limit))
        return list(self._play_hosts_all)

    def _outside_hostvars(self, inside: FrozenSet[str]) -> Dict[str, Dict[str, Any]]:
        """``hostvars`` of inventory hosts the play's executor does not have, as
        Ansible's ``HostVars`` make them (no play variables: no play context)."""
        out: Dict[str, Dict[str, Any]] = {}
        for name in self.inventory.hosts:
            if name in inside:
                continue
            memory = self.memory.get(name, {})
            facts = memory.get("facts", {})
            facts_layer = {**facts, "ansible_facts": {
                (k[8:] if k.startswith("ansible_") and k != "ansible_local" else k): v for k, v in facts.items()}}
            out[name] = {**inv.host_vars(self.inventory, name), **facts_layer,
                         **memory.get("include_vars", {}), **memory.get("runtime", {}),
                         **self.extra_vars, "inventory_hostname": name,
                         "group_names": inv.group_names(self.inventory, name)}
        return out

    def _outside_layers(self, play: Play, name: str) -> Dict[str, Dict[str, Any]]:
        """A host outside the play's executor (a delegate), layer by layer: its
        inventory layer (``group_names`` and the play's role defaults too, as
        a play host's), and what earlier tasks gave it (delegate_facts...)."""
        memory = self.memory.get(name, {})
        return {"inventory": self._inventory_layer(play, name), "facts": dict(memory.get("facts", {})),
                "include_vars": dict(memory.get("include_vars", {})),
                "runtime": dict(memory.get("runtime", {}))}

    def _change_inventory(self, host: str, result: Dict[str, Any]) -> bool:
        self._dynamic.append((host, result))
        return self._apply_dynamic(host, result)

    def _apply_dynamic(self, host: str, result: Dict[str, Any]) -> bool:
        before = set(self.inventory.hosts) | set(self.inventory.groups)
        if "add_host" in result:
            spec = result["add_host"]
            self.inventory, changed = inv.with_host(self.inventory, spec["host_name"],
                                                    spec.get("groups", []), spec.get("host_vars", {}))
        else:
            self.inventory, changed = inv.with_group_member(
                self.inventory, host, result["add_group"], result.get("parent_groups") or ["all"])
        new = frozenset(set(self.inventory.hosts) | set(self.inventory.groups)) - before
        if new and self.new_names_vars is not None:
            # a new group's group_vars (a new host's host_vars) apply from now on
            self.inventory = self.new_names_vars(self.inventory, new)
        return changed

    def _store_facts(self, host: str, values: Dict[str, Any], layer: str = "facts") -> None:
        memory = self.memory.setdefault(host, {"facts": {}, "runtime": {}})
        memory[layer] = {**memory.get(layer, {}), **values}

    def _play_meta(self, meta: str, hosts: List[str]) -> None:
        if meta == "clear_host_errors":
            self.failed_hosts.clear()  # the exit code forgets earlier failures too
            self.marked_hosts.clear()
            self.cleared_in_play.update(self._play_hosts_all)
        elif meta == "refresh_inventory" and self.reload_inventory is not None:
            self.inventory = self.reload_inventory()
            for host, result in self._dynamic:
                self._apply_dynamic(host, result)

    def _inventory_layer(self, play: Play, host: str) -> Dict[str, Any]:
        """A host's inventory layer: role defaults, host and group vars, group_names."""
        inventory_vars = dict(play.role_defaults)
        if host in self.inventory.hosts:  # (refresh_inventory may have dropped it)
            inventory_vars.update(inv.host_vars(self.inventory, host))
        inventory_vars["group_names"] = inv.group_names(self.inventory, host)
        return inventory_vars

    def _host_state(self, play: Play, host: str) -> HostState:
        inventory_vars = self._inventory_layer(play, host)
        spec = self._spec(play, host, {k: v for k, v in inventory_vars.items()
                                       if k != "group_names"})
        memory = self.memory.get(host, {})
        return HostState(name=host, spec=spec, inventory_vars=inventory_vars,
                         facts=dict(memory.get("facts", {})),
                         runtime=dict(memory.get("runtime", {})),
                         included=dict(memory.get("include_vars", {})))

    def _magic(self, play: Play, hosts: Sequence[str]) -> Dict[str, Any]:
        return {
            **self.options.magic,
            "ansible_play_hosts_all": list(self._play_hosts_all),
            "ansible_play_name": play.name,
            **role_magic(play.role_names, play.dependent_role_names),
            "ansible_check_mode": self.options.check,
            "ansible_diff_mode": self.options.diff,
            "ansible_verbosity": self.options.verbosity,
            "playbook_dir": os.path.abspath(play.basedir),
            "ansible_run_tags": sorted(self.tags.only),
            "ansible_skip_tags": sorted(self.tags.skip),
        }


def ordered_hosts(hosts: Sequence[str], order: Optional[str]) -> List[str]:
    """The play's hosts in the order its ``order`` keyword asks for (inventory by default).

    Every step runs and reports the hosts in this order; ``serial`` batches
    are cut from it.
    """
    if order == "reverse_inventory":
        return list(hosts)[::-1]
    if order == "sorted":
        return sorted(hosts)
    if order == "reverse_sorted":
        return sorted(hosts, reverse=True)
    if order == "shuffle":
        shuffled = list(hosts)
        random.shuffle(shuffled)
        return shuffled
    return list(hosts)


def serial_batches(hosts: List[str], serial: Any) -> List[List[str]]:
    """Hosts cut into ``serial`` batches: numbers, percentages, or a list of them (L4.7)."""
    if serial in (None, "", 0, "0"):
        return [hosts]
    sizes = serial if isinstance(serial, list) else [serial]
    out: List[List[str]] = []
    rest = list(hosts)
    position = 0
    while rest:
        size = _batch_size(sizes[min(position, len(sizes) - 1)], len(hosts))
        out.append(rest[:size])
        rest = rest[size:]
        position += 1
    return out


def _batch_size(value: Any, total: int) -> int:
    text = str(value).strip()
    if text.endswith("%"):
        return max(1, int(total * float(text[:-1]) / 100))
    return max(1, int(text))


def _play_port(play: Play) -> Dict[str, Any]:
    """The play's ``port`` keyword: below every ``ansible_port`` variable, as in Ansible."""
    return {} if play.port is None else {"ansible_port": play.port}
