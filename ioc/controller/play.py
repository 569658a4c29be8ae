"""Running a planned play: batches out to hosts, events back through the replay."""
from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ioc.callbacks import Callback, Stats, Status, TaskView
from ioc.controller.connection import ConnectionSpec, Connector
from ioc.agentless_runner.batch import HostRun
from ioc.controller import fetched, payloads
from ioc.controller.dispatch import HostCall, dispatch
from ioc.controller.transport import TransportReport
from ioc.model import WIRE_VERSION, to_wire
from ioc.planner import Batch, Plan, wire_tree
from ioc.planner.program import Entry
from ioc.replay import Event, Key, Replay, StepSink

LOG = logging.getLogger(__name__)

FINAL_EVENTS = frozenset({"done", "unreachable", "crash"})


class HostStatus(enum.Enum):
    ACTIVE = "active"
    FAILED = "failed"
    UNREACHABLE = "unreachable"
    ENDED = "ended"


@dataclass
class HostState:
    """What the controller carries for one host from one batch to the next."""

    name: str
    spec: ConnectionSpec
    #: Static layers shipped with every batch (see ``runner.batch.HostRun``).
    inventory_vars: Dict[str, Any]
    status: HostStatus = HostStatus.ACTIVE
    facts: Dict[str, Any] = field(default_factory=dict)
    runtime: Dict[str, Any] = field(default_factory=dict)
    notified: List[str] = field(default_factory=list)
    blocks: Dict[str, Any] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return self.status is HostStatus.ACTIVE

    def wire_state(self) -> Dict[str, Any]:
        return {"facts": self.facts, "runtime": self.runtime,
                "notified": self.notified, "blocks": self.blocks}

    def absorb(self, end: Event) -> None:
        """Take the state a runner reported at the end of its batch."""
        state = end.get("state") or {}
        self.facts = state.get("facts", self.facts)
        self.runtime = state.get("runtime", self.runtime)
        self.notified = state.get("notified", self.notified)
        self.blocks = state.get("blocks", {})
        if end.get("status") == "failed":
            self.status = HostStatus.FAILED
        elif end.get("status") == "ended":
            self.status = HostStatus.ENDED


@dataclass(frozen=True)
class RunOptions:
    check: bool = False
    diff: bool = False
    forks: int = 5


class PlaySink(StepSink):
    """Turns replayed runner events into callbacks and recap counts."""

    def __init__(self, plan: Plan, callbacks: Callback, stats: Stats) -> None:
        self.plan = plan
        self.callbacks = callbacks
        self.stats = stats
        self.view: Optional[TaskView] = None
        self.entry: Optional[Entry] = None
        self.ends: Dict[str, Event] = {}

    def step_start(self, key: Key, hosts: Sequence[str], first: Event) -> None:
        self.entry = self.plan.program.entry(key[0])
        if key[1] == 0:
            task = self.entry.task
            name = first.get("name") or task.display_name
            self.view = TaskView(name=name, action=task.action, location=str(task.location),
                                 args=task.args, implicit=self.entry.implicit)
            if task.action != "meta":
                self.callbacks.task_start(self.view)
        else:
            handler = self.plan.program.handlers[key[1] - 1]
            name = first.get("name") or handler.display_name
            self.view = TaskView(name=name, action=handler.action, location=str(handler.location),
                                 is_handler=True, args=handler.args)
            self.callbacks.task_start(self.view)

    def host_event(self, host: str, event: Event) -> None:
        assert self.view is not None
        kind = event["e"]
        if kind == "start":
            if event.get("meta"):
                self.callbacks.task_start(self.view)  # per host, like linear (L5.3)
            else:
                self.callbacks.runner_on_start(host, self.view)
        elif kind == "item":
            self.callbacks.runner_item(host, self.view, Status(event["status"]), event["result"])
        elif kind == "retry":
            self.callbacks.runner_retry(host, self.view, event["result"])
        elif kind == "notify":
            handler = self.plan.program.handlers[event["handler"]]
            self.callbacks.on_notify(host, TaskView(name=handler.display_name, action=handler.action,
                                                    location=str(handler.location), is_handler=True))
        elif kind in FINAL_EVENTS:
            self._final(host, event)

    def _final(self, host: str, event: Event) -> None:
        assert self.view is not None
        if event["e"] != "done" and not event.get("started"):
            self.callbacks.runner_on_start(host, self.view)
        status = Status(event["status"])
        is_meta = self.view.action == "meta"
        if is_meta and status is Status.OK:
            return  # meta results are not shown or counted (L7.10)
        if not is_meta:
            self.stats.record(host, status.value, bool(event["result"].get("changed")),
                              ignored=bool(event.get("ignored")), rescued=bool(event.get("rescued")))
        self.callbacks.runner_result(host, self.view, status, event["result"],
                                     ignored=bool(event.get("ignored")))

    def host_left(self, host: str, event: Event) -> None:
        self.ends[host] = event


class PlayExecutor:
    """Runs the steps of one play's plan across its hosts."""

    def __init__(self, plan: Plan, hosts: Dict[str, HostState], connector: Connector,
                 callbacks: Callback, stats: Stats, options: RunOptions,
                 static_layers: Mapping[str, Any], magic: Mapping[str, Any],
                 transport: TransportReport, payload_cache: payloads.PayloadCache) -> None:
        self.plan = plan
        self.hosts = hosts
        self.order = list(hosts)
        self.connector = connector
        self.callbacks = callbacks
        self.stats = stats
        self.options = options
        self.static_layers = static_layers
        self.magic = magic
        self.transport = transport
        self.payloads = payload_cache

    def run(self) -> None:
        for batch in self.plan.steps:
            active = [h for h in self.order if self.hosts[h].active]
            if not active:
                break
            self.run_batch(batch, active)
        if not any(self.hosts[h].active for h in self.order):
            LOG.info("play %s: no hosts remaining", self.plan.program.play.name)

    def run_batch(self, batch: Batch, active: List[str]) -> None:
        LOG.info("batch %d-%d on %d host(s)", batch.start, batch.end - 1, len(active))
        tree = wire_tree(self.plan.program.tree, batch.start, batch.end)
        handlers = [to_wire(h) for h in self.plan.program.handlers]
        first_key = (self._first_reportable(batch), 0)
        calls = [HostCall(host=h, spec=self.hosts[h].spec, first_key=first_key,
                          wire=self._wire(h, batch, tree, handlers, active)) for h in active]
        sink = PlaySink(self.plan, self.callbacks, self.stats)
        replay = Replay(active, sink, is_final=lambda e: e.get("e") in FINAL_EVENTS)
        failed_at: Dict[str, str] = {}
        for host, event in dispatch(self.connector, calls):
            if event is None:
                replay.finish_host(host)
                continue
            if event.get("e") in ("unreachable", "crash"):
                failed_at[host] = event["e"]
            if event.get("e") == "end":
                self.transport.count_call(host, event.get("calls", 0))
            fetched.deliver(event)
            replay.feed(host, event)
        for host in active:
            self._settle(host, sink.ends.get(host), failed_at.get(host))

    def _settle(self, host: str, end: Optional[Event], trouble: Optional[str]) -> None:
        state = self.hosts[host]
        if trouble == "unreachable":
            state.status = HostStatus.UNREACHABLE
        elif trouble == "crash":
            state.status = HostStatus.FAILED
        elif end is not None:
            state.absorb(end)

    def _first_reportable(self, batch: Batch) -> int:
        for entry in self.plan.entries_of(batch):
            if not (entry.implicit and entry.is_flush):
                return entry.index
        return batch.start

    def _wire(self, host: str, batch: Batch, tree: list, handlers: list,
              active: List[str]) -> Dict[str, Any]:
        state = self.hosts[host]
        magic = dict(self.magic)
        magic.update(inventory_hostname=host, inventory_hostname_short=host.split(".")[0],
                     group_names=state.inventory_vars.get("group_names", []),
                     ansible_play_batch=active, ansible_play_hosts=active, play_hosts=active)
        wire = {
            "v": WIRE_VERSION,
            "host": host,
            "start": batch.start,
            "end": batch.end,
            "tree": tree,
            "handlers": handlers,
            "vars": {"inventory": state.inventory_vars, "play": self.static_layers["play"],
                     "extra": self.static_layers["extra"], "magic": magic},
            "state": state.wire_state(),
            "options": {"check": self.options.check, "diff": self.options.diff},
        }
        wire["files"], wire["blobs"] = payloads.collect(
            self.payloads, host, HostRun(wire, emit=None), self._payload_tasks(batch),
            self.plan.program.play.basedir)
        return wire

    def _payload_tasks(self, batch: Batch) -> List[Any]:
        """(file key, task, enclosing blocks) of every task that reads controller files."""
        program = self.plan.program
        tasks: List[Any] = [(str(e.index), e.task, program.parents[e.index])
                            for e in self.plan.entries_of(batch)
                            if payloads.wants_controller_file(e.task)]
        if any(e.is_flush for e in self.plan.entries_of(batch)):
            tasks += [("h%d" % n, h, ()) for n, h in enumerate(program.handlers)
                      if payloads.wants_controller_file(h)]
        return tasks
