"""Shipping one batch to every host at once and collecting the streamed events.

One runner call per host per batch, all in flight together. Each host gets a
worker thread that connects (bounded by ``--forks``), makes the call, and
forwards the events the runner streams back into one queue, which the
controller's main thread replays in linear order. No host waits for another.
"""
from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import mitogen.core
import mitogen.select

from ioc.agentless_runner import batch as runner_batch
from ioc.controller import bootstrap
from ioc.controller.connection import (BecomeFailed, BecomeSpec, ConnectionSpec, Connector,
                                      Unreachable)

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class HostCall:
    """One host's share of a step: what runs, and on which connection."""

    host: str
    spec: ConnectionSpec
    wire: Dict[str, Any]
    #: Step key to report an unreachable host at if it never starts a task.
    first_key: Tuple[int, int]
    #: Inventory name of the connection to use: the host itself, or its delegate.
    via: str = ""
    #: Run inside the controller process (controller steps) instead of a target.
    in_process: bool = False
    #: Module implementations the step's actions need on the target.
    modules: Tuple[str, ...] = ()
    #: The identity the step runs as (None: the connection's own user).
    become: Optional[BecomeSpec] = None
    #: Set when the controller could not prepare the call: the host fails with it.
    error: str = ""

    @property
    def connection(self) -> str:
        return self.via or self.host

    @property
    def context_key(self) -> str:
        """One runner process: the connection, or its ``become`` child."""
        return context_key(self.connection, self.become)


def context_key(connection: str, become: Optional[BecomeSpec]) -> str:
    return connection if become is None else "%s (%s)" % (connection, become.describe())


#: (host, event) pairs; event None means the host's worker is finished.
Delivery = Tuple[str, Optional[Dict[str, Any]]]


def dispatch(connector: Connector, calls: List[HostCall], limit: int = 0) -> Iterator[Delivery]:
    """Run every call concurrently; yield events as they arrive, then ``(host, None)``.

    ``limit`` bounds how many calls run at once (``throttle``); 0 is no bound.
    """
    inbox: "queue.Queue[Delivery]" = queue.Queue()
    gate = threading.BoundedSemaphore(limit) if limit else None
    threads = [threading.Thread(target=_host_worker, args=(connector, call, inbox.put, gate),
                                name="ioc-%s" % call.host, daemon=True) for call in calls]
    for thread in threads:
        thread.start()
    remaining = len(threads)
    while remaining:
        host, event = inbox.get()
        if event is None:
            remaining -= 1
        yield host, event
    for thread in threads:
        thread.join()


def _host_worker(connector: Connector, call: HostCall, put: Callable[[Delivery], None],
                 gate: Optional[threading.BoundedSemaphore]) -> None:
    tracker = _Position(call.first_key)
    if gate is not None:
        gate.acquire()
    try:
        if call.error:
            put((call.host, tracker.failed(call.error)))
            return
        if call.in_process:
            runner_batch.HostRun(call.wire, lambda event: put((call.host, event))).run()
            return
        try:
            ctx = connector.context(call.connection, call.spec, call.become)
        except Unreachable as exc:
            put((call.host, tracker.unreachable(str(exc))))
            return
        except BecomeFailed as exc:
            put((call.host, tracker.failed(str(exc))))
            return
        _run_call(connector, ctx, call, tracker, put)
    except Exception as exc:  # never leave the main thread waiting on this host
        LOG.exception("worker for %s failed", call.host)
        put((call.host, tracker.crashed("ioc controller error: %s" % exc)))
    finally:
        if gate is not None:
            gate.release()
        put((call.host, None))


def _run_call(connector: Connector, ctx: mitogen.core.Context, call: HostCall,
              tracker: "_Position", put: Callable[[Delivery], None]) -> None:
    tracker.sent = len(mitogen.core.Message.pickled(call.wire).data)
    if call.modules:
        bootstrap.preload(connector.router, ctx, call.modules)
    events = mitogen.core.Receiver(connector.router, respondent=ctx)
    reply = ctx.call_async(runner_batch.run_batch, call.wire, events.to_sender())
    select = mitogen.select.Select([events, reply], oneshot=False)
    try:
        while True:
            msg = select.get()
            try:
                value = msg.unpickle()
            except mitogen.core.ChannelError as exc:
                connector.forget(call.connection)
                put((call.host, tracker.unreachable("connection lost: %s" % exc)))
                return
            except mitogen.core.CallError as exc:
                put((call.host, tracker.crashed(str(exc))))
                return
            if msg.receiver is reply:
                return  # run_batch returned: every event has been delivered
            tracker.received += len(msg.data)
            tracker.see(value)
            if value.get("e") == "end":
                value["bytes"] = [tracker.sent, tracker.received]
            put((call.host, value))
    finally:
        select.close()
        events.close()


class _Position:
    """Where a host stands, so a lost connection is reported at the right step."""

    def __init__(self, first_key: Tuple[int, int]) -> None:
        self.sent = 0
        self.received = 0
        self.open_key: Optional[List[int]] = None
        self.first_key = list(first_key)
        self.ended = False

    def see(self, event: Dict[str, Any]) -> None:
        kind = event.get("e")
        if kind == "start":
            self.open_key = event["k"]
        elif kind == "done":
            self.open_key = None
        elif kind == "end":
            self.ended = True

    def unreachable(self, msg: str) -> Dict[str, Any]:
        key = self.open_key or self.first_key
        return {"e": "unreachable", "k": key, "status": "unreachable",
                "result": {"unreachable": True, "msg": msg, "changed": False},
                "started": self.open_key is not None}

    def failed(self, msg: str) -> Dict[str, Any]:
        """The host fails at its first step with ``msg`` (a failed ``become``)."""
        event = self.unreachable(msg)
        event.update(e="crash", status="failed",
                     result={"failed": True, "changed": False, "msg": msg,
                             # an error of the engine, not of a module (see the bridge)
                             "_ioc_task_error": True})
        return event

    def crashed(self, msg: str) -> Dict[str, Any]:
        event = self.unreachable(msg)
        event.update(e="crash", status="failed",
                     result={"failed": True, "changed": False, "msg": "ioc runner error: %s" % msg})
        return event
