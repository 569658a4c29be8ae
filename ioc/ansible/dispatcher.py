"""The dispatcher subprocess: ioc's controller running a play for ``mitogen_batch``.

``python -m ioc.ansible --serve`` (:func:`serve`) reads play requests from
the parent (:mod:`ioc.ansible.pipe`) and runs each with the same
:class:`~ioc.controller.play.PlayExecutor` that runs ``ioc-run``'s plays.
mitogen's broker lives in this process only; ``ansible`` is never imported
here.

What differs from ``ioc-run`` is a handful of named hooks, each a method of
a class below that talks to the parent through a
:class:`~ioc.ansible.pipe.ParentLink` (and is tested apart in
``tests/unit/test_ansible_dispatcher.py``):

* :class:`BridgeExecutor` (the play executor):

  - ``make_sink`` — the replayed events go to the parent
    (:class:`ForwardingSink`), whose Ansible callbacks show them;
  - ``run_step`` — a ``Where.ANSIBLE`` step and a flush that reaches
    foreign handlers run through Ansible (:mod:`ioc.ansible.through_ansible`);
  - ``after_step`` — a task Ansible ran once (run_once, or an action that
    bypasses the host loop) and that failed stops the other hosts; the
    variables it set came back from Ansible already, so nothing is copied;
  - ``splice_includes`` — the parent loads what a dynamic include included,
    with Ansible's own machinery, and sends the new plan;

* :class:`BridgeRun` (the playbook run around it): the variables of
  inventory hosts the parent did not send come from the parent on demand
  (``fetch``), and ``delegate_facts`` for a host outside the play reaches
  Ansible's variable manager too (``_store_facts``);
* :class:`PlayLevel` — play-level callbacks go to the parent.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import threading
import time
from typing import Any, BinaryIO, Callable, Dict, FrozenSet, IO, List, Optional, Sequence, Set

from ioc.ansible.pipe import ParentLink
from ioc.ansible.runner_service import RunnerService
from ioc.ansible.through_ansible import FlushThroughAnsible, run_through_ansible
from ioc.callbacks import Callback, Stats
from ioc.transport.connector import Connector
from ioc.transport.spec import ConnectionSpec, is_true, spec_for
from ioc.controller.play import PlayExecutor
from ioc.controller.sink import PlaySink
from ioc.controller.state import HostStatus, StepOutcome
from ioc.controller.playbook import PlannedPlay, PlaybookRun
from ioc.errors import RunAborted
from ioc.model import Host, Inventory, Play, Playbook
from ioc.planner import ControllerStep, Plan, Where
from ioc.planner.schedule import Step
from ioc.replay import Event, Key

LOG = logging.getLogger(__name__)


def serve(inp: BinaryIO, out: IO[bytes], socket: Optional[str] = None) -> None:
    """``--serve``: run each play request with ioc's controller, stream events back.

    One :class:`~ioc.transport.connector.Connector` serves every play of
    the run; the protocol is :mod:`ioc.ansible.pipe`'s. A play that fails
    in ioc's code ends with ``("error", text)``: the parent raises it as an
    AnsibleError. With ``socket``, the ``ioc_runner`` connection plugin of
    Ansible's workers is served there (:mod:`ioc.ansible.runner_service`).
    """
    _exit_with_parent(os.path.dirname(socket) if socket else None)
    # (beside the first request: a ``connect`` starts the connections meanwhile;
    # a play waits for it, so that no two threads import Ansible at once)
    _PRELOAD.start()
    serve_link(ParentLink(inp, out), Connections(), socket)


def _preload() -> None:
    try:
        _import_ansible()
    except Exception:  # (the play's own imports meet it, and say it)
        LOG.exception("preloading Ansible failed")


#: :func:`_preload`'s thread (``serve`` starts it; a play request joins it).
_PRELOAD = threading.Thread(target=_preload, name="ioc-preload", daemon=True)


def _import_ansible() -> None:
    """Import what the first play request needs before reading it.

    The parent starts this process before it plans its first play
    (``ioc.ansible.strategy``); the Ansible code behind
    :func:`ioc.ansible.plugins.install` (its data loader and plugin loaders:
    0.4 s of CPU, 2 s on a loaded machine) load here meanwhile, instead of
    between the request and the first connection.
    """
    import ansible.parsing.dataloader  # noqa: F401
    import ansible.plugins.loader  # noqa: F401


class Connections:
    """Where the dispatcher's connector comes from: its own, made for this
    ``ansible-playbook`` run and ended with it. (``ioc.warmd`` gives one it
    keeps across runs instead: ``IOC_PERSIST``.)"""

    def __init__(self) -> None:
        self.connector: Optional[Connector] = None
        #: The files (by digest) each runner holds, when kept across runs (None:
        #: each play's own record).
        self.sent: Optional[Dict[str, Set[str]]] = None

    def get(self, forks: int) -> Connector:
        if self.connector is None:
            self.connector = Connector(forks=forks)
        return self.connector

    def abort(self) -> None:
        """The run was aborted with hosts still in their batches: end every runner."""
        connector, self.connector = self.connector, None
        if connector is not None:
            connector.shutdown()

    def close(self) -> None:
        """``ansible-playbook`` is done with the dispatcher."""
        self.abort()


def serve_link(link: ParentLink, connections: Connections, socket: Optional[str] = None,
               playing: Optional[Callable[[bool], None]] = None) -> None:
    """Serve the parent's play requests on ``link`` until it closes it.

    ``playing`` is told when a play starts (True) and when its summary or
    error is about to go (False): a parent that goes away between the two
    went away in the middle of a play (``ioc.warmd`` watches for that).
    """
    service: Optional[RunnerService] = None
    try:
        while True:
            try:
                request = link.next_request()
            except EOFError:
                return
            if request.get("op") == "connect":
                warm_up(request, connections.get(request["forks"]))
                continue
            if request.get("op") != "play":
                continue
            if _PRELOAD.is_alive():
                _PRELOAD.join()
            connector = connections.get(request["options"].forks)
            if socket and service is None:
                service = RunnerService(socket, connector)
            if playing is not None:
                playing(True)
            try:
                summary = serve_play(request, connector, link, service, connections.sent)
            except RunAborted as exc:
                # The parent raised it at the step's end already: the run is
                # over, and the hosts still in their batches stop now.
                if service is not None:
                    service.close()
                    service = None
                connections.abort()
                _said(playing, link.error, str(exc))
            except Exception as exc:  # the parent reports it as Ansible would
                LOG.exception("dispatcher failed")
                _said(playing, link.error, "%s: %s" % (type(exc).__name__, exc))
            else:
                _said(playing, link.done, summary)
    finally:
        if service is not None:
            service.close()
        connections.close()


def _said(playing: Optional[Callable[[bool], None]], say: Callable[[Any], None],
          what: Any) -> None:
    if playing is not None:
        playing(False)
    say(what)


#: Seconds between two looks at whether ansible-playbook is still there.
PARENT_POLL = 0.2


def _exit_with_parent(socket_dir: Optional[str]) -> None:
    """End this process as soon as ansible-playbook is gone, whatever it is doing.

    A SIGTERM or SIGKILL to ``ansible-playbook`` ends it without running its
    ``atexit`` (which closes this process's stdin), and while a batch runs
    this process does not read stdin anyway. Exiting closes every ``ssh``
    client's pipe, so each runner sees its controller go and ends the
    processes its task started (:mod:`ioc.agentless_runner.lifeline`).
    """
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL)
        LOG.warning("ansible-playbook (pid %d) is gone: exiting", parent)
        if socket_dir:
            shutil.rmtree(socket_dir, ignore_errors=True)
        os._exit(1)

    threading.Thread(target=watch, name="ioc-parent-watch", daemon=True).start()


def warm_up(request: Dict[str, Any], connector: Connector) -> None:
    """``connect``: start connecting the hosts the next play will run on, while
    the parent plans it (:meth:`~ioc.transport.connector.Connector.warm`).

    Each host's settings are made as :meth:`BridgeRun._spec` makes them,
    from the variables the parent sent (its inventory layer, the play's
    role defaults, vars and role vars, extra vars). The play's own
    :meth:`~ioc.transport.connector.Connector.settle` decides: settings
    that differ (a ``vars_files`` entry, say) end the warm-up's runner.
    A host whose settings cannot be made is left to the play, which reports
    why where it always did. Each attempt is the play's first step's own
    (binding: see :meth:`~ioc.transport.connector.Connector.warm`); what an
    earlier play's warm-up left unanswered (a play that ran under linear)
    is forgotten first.
    """
    connector.release_warm()
    for name, variables in request["hosts"].items():
        try:
            spec = spec_for(name, variables, password=request.get("password"))
        except Exception as exc:  # (the play's own spec_for says it, where it says it)
            LOG.info("%s: not warmed up: %s", name, exc)
            continue
        if spec.via or is_true(variables.get("ioc_via_auto")):  # (its chain is the play's to make)
            continue
        if connector.warm(name, spec, binding=True):
            LOG.info("%s: warming up its connection", name)


def serve_play(request: Dict[str, Any], connector: Connector, link: ParentLink,
               service: Optional[RunnerService] = None,
               sent: Optional[Dict[str, Set[str]]] = None) -> Dict[str, Any]:
    """Run one play request; the summary the parent settles Ansible's state from.

    ``sent``: which files each runner holds, kept across runs with the
    connector (``ioc.warmd``)."""
    from ioc.ansible import plugins as ansible_plugins
    from ioc.controller import plugins

    # The plugins ioc lacks, answered here for the runners; what Ansible
    # displays while running them is printed by the parent, as linear does.
    ansible_plugins.install(display=link.display)
    ansible_plugins.add_search_paths(request.get("plugin_paths") or {})
    plugins.declare(request.get("plugins") or {})
    run = BridgeRun(link, request)
    if sent is not None:
        run.payload_cache.sent = sent
    dormant = list(request.get("dormant") or ())
    hosts = list(request["hosts"])
    if dormant:  # (in the play's order: the hosts of ansible_play_hosts_all)
        listed = set(hosts) | set(dormant)
        hosts = [h for h in run._play_hosts_all if h in listed] + \
            [h for h in hosts if h not in run._play_hosts_all]
    executor = run.bridge_executor(request["planned"], hosts, connector, dormant)
    executor.runner_service = service
    try:
        executor.run()
    finally:
        connector.release_warm()  # (past the play's first step)
    # The transport report ioc-run prints: runner calls per host, for -vvv
    # readers and benchmarks/realworld.py (IOC_BRIDGE_LOG).
    for line in executor.ctx.transport.lines(verbose=True):
        LOG.info("%s", line)
    return {"hosts": {h: {"status": s.status.value, "facts": s.facts, "runtime": s.runtime,
                          "included": s.included, "marked": s.marked,
                          "fatal": h in executor.fatal_unreachable}
                      for h, s in executor.hosts.items()},
            "ended": executor.ended, "max_fail_hit": executor.max_fail_hit}


class ForwardingSink(PlaySink):
    """The replay's sink: every released event goes to the parent, in linear order.

    Callbacks here go nowhere (the parent sends Ansible's); the recap counts
    and the ends are kept, as the executor needs them.
    """

    def __init__(self, plan: Plan, stats: Stats, link: ParentLink) -> None:
        super().__init__(plan, Callback(), stats)
        self.link = link

    def step_start(self, key: Key, hosts: Sequence[str], first: Event) -> None:
        self.link.step_start(key, hosts, first)
        super().step_start(key, hosts, first)

    def host_event(self, host: str, event: Event) -> None:
        if self.shown(event):
            self.link.event(host, event)
        super().host_event(host, event)

    def host_left(self, host: str, event: Event) -> None:
        self.link.left(host, event)
        super().host_left(host, event)

    def step_end(self, key: Key) -> None:
        self.link.step_end(key)
        super().step_end(key)


class PlayLevel(Callback):
    """The play-level callbacks the executor sends, forwarded to the parent."""

    def __init__(self, link: ParentLink) -> None:
        self.link = link

    def no_hosts_remaining(self) -> None:
        self.link.callback("no_hosts_remaining")

    def warning(self, message: str) -> None:
        self.link.callback("warning", (message,))


class BridgeExecutor(PlayExecutor):
    """The play executor with ``mitogen_batch``'s hooks (see the module's docstring)."""

    def __init__(self, base: PlayExecutor, link: ParentLink) -> None:
        super().__init__(base.plan, base.hosts, base.ctx, base.static_layers, base.magic,
                         base.removed)
        self.unreachable_at = dict(base.unreachable_at)  # (the dormant hosts')
        self.link = link
        #: Of the last ``Where.ANSIBLE`` step: (hosts that reached the task,
        #: hosts Ansible ran it for), for :meth:`after_step`.
        self.ansible_hosts: tuple = ([], [])
        #: Serves the ``ioc_runner`` connection of tasks run through Ansible
        #: (None: they use Ansible's own connections).
        self.runner_service: Optional[RunnerService] = None

    def make_sink(self) -> PlaySink:
        return ForwardingSink(self.plan, self.ctx.stats, self.link)

    def run_step(self, step: Step, active: List[str]) -> StepOutcome:
        self.note_step(step)
        if isinstance(step, ControllerStep) and step.handlers:
            return FlushThroughAnsible(self, step, active, self.link).run()
        if isinstance(step, ControllerStep) and step.where == Where.ANSIBLE:
            outcome, reached, ran = run_through_ansible(self, step, active, self.link)
            self.ansible_hosts = (reached, ran)
            return outcome
        return super().run_step(step, active)

    def run_held(self, index: int, hosts: List[str], announced: bool,
                 outcome: StepOutcome, sink: PlaySink) -> List[str]:
        """A suspension point the replay reached: Ansible runs the task for the
        hosts that stopped before it, as for a ``Where.ANSIBLE`` step; the
        ones still in the play go on. A delegated one runs natively, as
        ioc-run runs it (``PlayExecutor.run_held``)."""
        if self._delegate_step(index) is not None:
            return super().run_held(index, hosts, announced, outcome, sink)
        entry = self.plan.program.entry(index)
        step = ControllerStep(index, Where.ANSIBLE, False, "suspension point %s (%s)"
                              % (entry.task.display_name, entry.task.location))
        self.note_step(step)
        ends: Dict[str, Dict[str, Any]] = {}
        held, _, _ = run_through_ansible(self, step, hosts, self.link, announce=not announced,
                                         ends=ends)
        # (their ends as the outcome left them: a host that goes on replaces it)
        sink.ends.update(ends)
        for host in held.failed:
            if host not in outcome.failed:
                outcome.failed.append(host)
        outcome.trouble.update(held.trouble)
        return [h for h in hosts if self.hosts[h].active and h not in held.trouble]

    def after_step(self, step: Step, active: List[str], outcome: StepOutcome) -> None:
        if isinstance(step, ControllerStep) and step.where == Where.ANSIBLE and not step.handlers:
            # Ansible itself gave every host what the task registered (a
            # run_once result reaches all, a host-loop bypass's only the
            # first: the variables came back as they are). When Ansible ran
            # it once (run_once, templated or not, or a bypass) and that
            # host failed, linear fails every host: ioc stops the others.
            reached, ran = self.ansible_hosts
            once = step.once or (len(ran) == 1 and len(reached) > 1)
            if once and ran and ran[0] in outcome.failed:
                self.once_failed([h for h in active if h != ran[0]], step,
                                 outcome.trouble.get(ran[0]) == "unreachable")
            step = dataclasses.replace(step, once=False)
        super().after_step(step, active, outcome)

    def _copy_once(self, active: List[str], outcome: StepOutcome,
                   step: Optional[Step] = None) -> Dict[str, Dict[str, Any]]:
        # The other hosts get a run_once task's values in Ansible's variable
        # manager too (linear sets them for every host), not only in ioc's copy.
        copied = super()._copy_once(active, outcome, step)
        for host in active[1:]:
            if self.hosts[host].active:
                for layer, values in copied.items():
                    if values:
                        self.link.store(host, values, layer)
        return copied

    def splice_includes(self, step: Step, outcome: StepOutcome) -> int:
        # The parent loads what the hosts included with Ansible's own
        # IncludedFile machinery, splices it into its copy of the play,
        # plans it again and sends the plan: both sides number alike.
        entry = next(e for e in self.plan.entries_of(step) if e.task.include_scope is not None)
        active = [h for h in self.order if self.hosts[h].active]
        reply = self.link.load_includes(entry.index, active)
        if reply.get("planned") is not None:
            from ioc.controller import plugins

            plugins.declare(reply.get("plugins") or {})  # (names the included tasks use)
            from ioc.ansible import plugins as ansible_plugins

            ansible_plugins.add_search_paths(reply.get("plugin_paths") or {})
            self.ctx.modules = reply.get("modules") or self.ctx.modules
            self.adopt_plan(reply["planned"].plan)
        for host, message in (reply.get("failed") or {}).items():
            self._fail_include(host, entry, message)
        return self._next_step(entry.index)


class BridgeRun(PlaybookRun):
    """The playbook run around one play request, with the parent's inventory.

    What ``ioc-run`` keeps across plays (facts and registered values, the
    play's hosts in every serial batch, those it lost) comes with the
    request, from Ansible. Variables of the inventory hosts the parent sent
    by name only come on demand (:meth:`fetch`).
    """

    def __init__(self, link: ParentLink, request: Dict[str, Any]) -> None:
        super().__init__(Playbook(path="", plays=()), request["inventory"],
                         request["extra_vars"], PlayLevel(link), request["options"])
        self.link = link
        #: Hosts whose variables the parent sent on demand (asked once each).
        self.fetched: Set[str] = set()
        self.memory = request["memory"]
        self.modules = request.get("modules")
        self.host_vars_files = request.get("host_vars_files") or {}
        self.skip = {host: frozenset(indexes)
                     for host, indexes in (request.get("skip") or {}).items()}
        self._play_hosts_all = list(request.get("hosts_all") or request["hosts"])
        # A vault-encrypted controller file ships decrypted (include_vars,
        # copy, template), as ioc-run's: the parent holds the secrets.
        self.payload_cache.decrypt = link.decrypt
        # Ansible's template variables (ansible_managed...) come from the parent too.
        self.payload_cache.template_vars = link.template_vars
        self._removed_in_play = set(request.get("removed") or ())
        #: Ansible's variables of the command line (``load_options_vars``):
        #: magic of the same rank, set last as Ansible's ``get_vars`` sets them.
        self.options_vars: Dict[str, Any] = dict(request["options_vars"])

    def _magic(self, play: Play, hosts: Sequence[str]) -> Dict[str, Any]:
        return {**super()._magic(play, hosts), **self.options_vars}

    def bridge_executor(self, planned: PlannedPlay, hosts: List[str],
                        connector: Connector, dormant: Sequence[str] = ()) -> BridgeExecutor:
        """The play's executor, with the bridge's hooks."""
        return BridgeExecutor(self._executor(planned, hosts, connector, dormant), self.link)

    def fetch(self, names: Sequence[str]) -> None:
        """Ask the parent once for the variables of ``names`` it did not send."""
        wanted = [n for n in names if n in self.inventory.hosts and n not in self.fetched
                  and not self.inventory.hosts[n].vars]
        if not wanted:
            return
        self.fetched.update(wanted)
        for name, layers in self._take_inventory_vars(wanted).items():
            memory = self.memory.setdefault(name, {})
            for layer in ("facts", "runtime", "include_vars"):  # this run's own win
                memory[layer] = {**layers.get(layer, {}), **memory.get(layer, {})}

    def _take_inventory_vars(self, names: Sequence[str]) -> Dict[str, Dict[str, Any]]:
        """The inventory layer of ``names`` from Ansible into ioc's copy; all their layers."""
        given = self.link.outside_hosts(list(names))
        hosts = dict(self.inventory.hosts)
        for name, layers in given.items():
            hosts[name] = Host(name, {k: v for k, v in layers["inventory"].items()
                                      if k != "group_names"})
        self.inventory = dataclasses.replace(self.inventory, hosts=hosts)
        return given

    def _change_inventory(self, host: str, result: Dict[str, Any]) -> bool:
        """add_host/group_by: the host's variables as Ansible has them now.

        Joining a group brings its group_vars (and a new host its host_vars),
        which Ansible's variable manager knows and ioc's copy does not.
        """
        changed = super()._change_inventory(host, result)
        if changed:
            self._take_inventory_vars(
                [result["add_host"]["host_name"] if "add_host" in result else host])
        return changed

    def _outside_hostvars(self, inside: FrozenSet[str]) -> Dict[str, Dict[str, Any]]:
        self.fetch([n for n in self.inventory.hosts if n not in inside])
        return super()._outside_hostvars(inside)

    def _connection_of(self, play: Play, name: str) -> ConnectionSpec:
        self.fetch([name])  # a delegate outside the play
        return super()._connection_of(play, name)

    def _replace_inventory(self, inventory: Inventory) -> None:
        super()._replace_inventory(inventory)
        self.fetched.clear()  # Ansible re-read its sources: ask again

    def _store_facts(self, host: str, values: Dict[str, Any], layer: str = "facts") -> None:
        # delegate_facts for a host outside the play: Ansible keeps them too
        super()._store_facts(host, values, layer)
        self.link.store(host, values, layer)
