"""Shipping one batch to every host at once and collecting the streamed events.

One runner call per host per batch, all in flight together. Each host gets a
worker thread that connects (bounded by ``--forks``) and makes the call; the
events the runner streams back go from mitogen's broker into one queue,
which the controller's main thread reads and replays in linear order. No
host waits for another.
"""
from __future__ import annotations

import functools
import logging
import queue
import threading
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

import mitogen.core
import mitogen.select

from ioc.agentless_runner import batch as runner_batch
from ioc.agentless_runner import results as runner_results
from ioc.agentless_runner import entry as runner_entry
from ioc.agentless_runner import trust
from ioc.agentless_runner.lookups import unforeseen
from ioc.controller import plugins
from ioc.transport import bootstrap
from ioc.transport.spec import BecomeSpec, ConnectionSpec
from ioc.transport.connector import (BecomeFailed, Connector, InterpreterNotFound, Unreachable,
                                     ssh_unreachable)
from ioc.planner.schedule import IDENTITY_NEUTRAL

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
    #: ``(file key, src) -> {"entry", "blobs"}``: a controller file that was
    #: missing when the call was prepared, looked up again when its task runs.
    late_file: Optional[Callable[[str, str], Dict[str, Any]]] = None
    #: ``(file key, plugin, terms, kwargs) -> table entry``: a lookup the
    #: controller could not foresee, answered when its task runs.
    late_lookup: Optional[Callable[[str, str, List[Any], Dict[str, Any]], Dict[str, Any]]] = None
    #: ``result -> result``: writes the file a ``fetch`` result carries
    #: (``ioc.controller.fetched.deliver_result``) while its task still runs.
    deliver_fetch: Optional[Callable[[Dict[str, Any]], Dict[str, Any]]] = None

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
    return iter(Dispatch(connector, calls, limit))


class Dispatch:
    """Calls running concurrently, their events as they arrive (see :func:`dispatch`).

    More calls may be added while it is iterated (:meth:`add`): a host that
    stopped at a suspension point goes on with the rest of its batch.

    A host's worker thread connects and sends the call; from then on the
    runner's messages come to the thread that iterates, handed over by
    mitogen's broker as they arrive (:class:`_Running`): an event wakes no
    thread of its host's on its way to the replay.
    """

    def __init__(self, connector: Connector, calls: List[HostCall], limit: int = 0) -> None:
        self.connector = connector
        #: What the worker threads deliver, ``(host, event)``, and the runners'
        #: messages, ``(the running call, its message or its reply's receiver)``.
        self.inbox: "queue.Queue[Tuple[Any, Any]]" = queue.Queue()
        self.gate = threading.BoundedSemaphore(limit) if limit else None
        self.threads: List[threading.Thread] = []
        self.remaining = 0
        for call in calls:
            self.add(call)

    def add(self, call: HostCall) -> None:
        self.remaining += 1
        self._start(call, (self.connector, call, self.inbox.put, self.gate))

    def _start(self, call: HostCall, args: Tuple[Any, ...]) -> None:
        thread = threading.Thread(target=_host_worker, args=args, name="ioc-%s" % call.host,
                                  daemon=True)
        self.threads.append(thread)
        thread.start()

    def __iter__(self) -> Iterator[Delivery]:
        while self.remaining:
            first, second = self.inbox.get()
            deliveries = self._take(first, second) if isinstance(first, _Running) \
                else [(first, second)]
            for host, event in deliveries:
                if event is None:
                    self.remaining -= 1
                yield host, event
        for thread in self.threads:
            thread.join()

    def _take(self, running: "_Running", item: Any) -> List[Delivery]:
        """What one message of a running call delivers, and ``(host, None)``
        once the call is over, as its worker would have."""
        out: List[Delivery] = []
        call = running.call
        try:
            outcome = running.take(item, out.append)
        except Exception as exc:  # (as in _host_worker: the host ends, the run goes on)
            running.close()
            outcome = None
            if self.connector.closing:  # the run ended while this host was in its batch
                LOG.debug("worker for %s ended by the shutdown: %s", call.host, exc)
            else:
                LOG.exception("worker for %s failed", call.host)
                out.append((call.host, running.tracker.crashed("ioc controller error: %s" % exc)))
        if outcome is _GOES_ON:
            return out
        if outcome == _UNHEARD and not running.last_try:
            # connected again once (see _host_worker), the gate still held
            self._start(call, (self.connector, running.origin, self.inbox.put, self.gate,
                               running.tracker, True))
            return out
        if self.gate is not None:
            self.gate.release()
        out.append((call.host, None))
        return out


def _host_worker(connector: Connector, call: HostCall, put: Callable[[Any], None],
                 gate: Optional[threading.BoundedSemaphore],
                 tracker: "Optional[_Position]" = None, last_try: bool = False) -> None:
    """Connect ``call``'s host and send the call (its messages go to the
    dispatch, see :class:`_Running`), or deliver the host's events and end
    here. A call given its ``tracker`` is the second try (the gate is held)."""
    again = tracker is not None
    tracker = tracker or _Position(call.first_key, call.wire)
    if gate is not None and not again:
        gate.acquire()
    sent = False
    try:
        if call.error:
            put((call.host, tracker.failed(call.error)))
            return
        if call.in_process:
            runner_batch.HostRun(call.wire, lambda event: put((call.host, event)),
                                 ask=_asker(call.host, put)).run()
            return  # (foreign plugins: the process-wide caller, see controller/plugins.py)
        # A runner gone before it said anything of this batch (the host died
        # while the controller or other hosts ran, or its runner alone was
        # killed between batches) is connected again once (the dispatch
        # starts the second try): linear connects afresh for each task, so
        # a host that is really gone runs the batch without connection (its
        # tasks that need none first, UNREACHABLE at the first that
        # connects) and one that is back runs it.
        sent = _connect_and_run(connector, call, tracker, put, last_try)
    except Exception as exc:  # never leave the main thread waiting on this host
        if connector.closing:  # the run ended while this host was in its batch
            LOG.debug("worker for %s ended by the shutdown: %s", call.host, exc)
            return
        LOG.exception("worker for %s failed", call.host)
        put((call.host, tracker.crashed("ioc controller error: %s" % exc)))
    finally:
        if not sent:
            if gate is not None:
                gate.release()
            put((call.host, None))


def _connect_and_run(connector: Connector, call: HostCall, tracker: "_Position",
                     put: Callable[[Any], None], last_try: bool) -> bool:
    """Connect ``call``'s host and send the call; True once it is sent (the
    dispatch reads its messages: :class:`_Running`), False when the host's
    events were delivered here (it has no runner to run them)."""
    try:
        ctx = connector.context(call.connection, call.spec, call.become)
    except Unreachable as exc:
        _run_without_connection(call, runner_results.unreachable_result(str(exc)), put)
        return False
    except InterpreterNotFound as exc:  # reachable: its tasks fail, as in Ansible
        _run_without_connection(call, {"failed": True, "changed": False, "msg": str(exc),
                                       # "Action failed", as Ansible words it
                                       "_ioc_action_failure": True}, put)
        return False
    except BecomeFailed as exc:
        # As in Ansible, only what needs the identity fails: run the batch
        # as the connection's user with every task that would connect
        # failing with become's error.
        try:
            ctx = connector.context(call.connection, call.spec)
        except Unreachable as lost:
            _run_without_connection(call, runner_results.unreachable_result(str(lost)), put)
            return False
        as_user, marked = without_identity(call, str(exc))
        _Running(connector, ctx, as_user, tracker, put, marked, str(exc), last_try, origin=call)
        return True
    _Running(connector, ctx, call, tracker, put, last_try=last_try)
    return True


#: What :meth:`_Running.take` returns when the runner's connection ended before
#: any event of the batch arrived (nothing was reported: the caller may try again).
_UNHEARD = "unheard"
#: ... and while the call goes on.
_GOES_ON = "goes on"


class _Events(mitogen.core.Receiver):
    """The runner's events, each handed to ``hand`` on mitogen's broker thread
    as it arrives (no latch, no thread waiting on it)."""

    def __init__(self, router: mitogen.core.Router, respondent: mitogen.core.Context,
                 hand: Callable[[mitogen.core.Message], None]) -> None:
        self.hand = hand
        super().__init__(router, respondent=respondent)

    def _on_receive(self, msg: mitogen.core.Message) -> None:
        self.hand(msg)


class _Running:
    """``call`` running on ``ctx``: sent from its host's worker thread; each
    of its messages (events, then run_batch's reply; or the dead message of
    a lost connection) is put in the dispatch's inbox as ``(self, message)``
    by mitogen's broker, and read by :meth:`take` on the dispatch's thread,
    in the order it arrived."""

    def __init__(self, connector: Connector, ctx: mitogen.core.Context, call: HostCall,
                 tracker: "_Position", put: Callable[[Any], None],
                 marked: Optional[Set[Tuple[int, int]]] = None, error: str = "",
                 last_try: bool = False, origin: Optional[HostCall] = None) -> None:
        self.connector, self.ctx, self.call, self.tracker = connector, ctx, call, tracker
        #: The call as the dispatch got it (a second try starts from it).
        self.origin = origin or call
        self.marked, self.error, self.last_try = marked, error, last_try
        self.over = False
        self.lost = False
        #: run_batch's reply (None until sent: the runner's first events may
        #: be read before the worker thread gets it back from mitogen).
        self.reply: Optional[mitogen.core.Receiver] = None
        # The runner ends itself after this much silence (ioc.transport.keepalive).
        # (the runner's mitogen unpickles builtins only: trusted text as its tuple)
        wire = dict(call.wire, options=dict(call.wire.get("options") or {},
                                            keepalive=connector.keepalive.runner_bound,
                                            run=connector.run_id))
        # Below an intermediary, payloads come from its RAM (ioc.agentless_runner.relay).
        relayed = connector.divert(call.connection, call.become, wire.get("blobs") or {})
        if relayed is not None:
            wire["blobs"], wire["relay"] = {}, relayed[0]
        wire = trust.encode(wire)
        tracker.sent = len(mitogen.core.Message.pickled(wire).data) \
            + (relayed[1] if relayed is not None else 0)
        if call.modules:
            bootstrap.preload(connector.router, ctx, call.modules)
        self.events = _Events(connector.router, ctx, lambda msg: put((self, msg)))
        try:
            reply = ctx.call_async(runner_entry.run_batch, wire, self.events.to_sender())
        except BaseException:
            self.events.close()
            raise
        # The reply may have come before ``notify`` was set: each message it
        # holds is announced again (an announcement too many finds none).
        self.reply = reply
        reply.notify = lambda receiver: put((self, receiver))
        for _ in range(reply.size()):
            put((self, reply))

    def close(self) -> None:
        self.over = True
        if self.reply is not None:
            self.reply.notify = None
        if not self.lost:
            # After a disconnect mitogen's broker drops the context's handles
            # itself; closing them here too races it (KeyError in both threads).
            self.events.close()

    def take(self, item: Any, put: Callable[[Delivery], None]) -> Optional[str]:
        """Act on one message (``item``, or the reply's receiver holding it):
        :data:`_GOES_ON` while the call goes on; once it is over, None, or
        :data:`_UNHEARD` when the connection was gone before the runner sent
        anything (unless ``last_try``, or the connector cut it itself: then,
        and for a connection lost later, the host is UNREACHABLE at the step
        it reached)."""
        if self.over:
            return _GOES_ON  # (the other receiver's end, after the call's)
        outcome = self._take(item, put)
        if outcome is not _GOES_ON:
            self.close()
        return outcome

    def _take(self, item: Any, put: Callable[[Delivery], None]) -> Optional[str]:
        connector, call, tracker = self.connector, self.call, self.tracker
        try:
            if isinstance(item, mitogen.core.Receiver):
                try:
                    msg = item.get(block=False)
                except mitogen.core.TimeoutError:
                    return _GOES_ON  # (announced twice: see __init__)
            else:
                msg = item
            # unpickle raises the ChannelError itself when the runner's end
            # went away (killed, ssh cut: mitogen's dead message), as it does
            # for a dead reply: both are a lost connection, reported as Ansible does.
            value = msg.unpickle(find_class=functools.partial(trust.find_class,
                                                              fallback=msg._find_global))
        except mitogen.core.ChannelError as exc:
            self.lost = True
            connector.heartbeat.discard(self.ctx)
            connector.forget(call.connection)
            cut = connector.cut_reason(self.ctx)
            if tracker.whole() and not cut:
                return None  # (the next batch finds the host gone)
            if not (tracker.received or self.last_try or cut):
                return _UNHEARD
            why = cut or lost_message(call, exc, tracker)
            event = dict(tracker.unreachable(why), lost=True)
            # (the batch reached a runner: its tasks may have run; ioc-adhoc
            # --retries tries again only hosts it could not connect to)
            event["result"]["_ioc_lost"] = True
            put((call.host, event))
            return None
        except mitogen.core.CallError as exc:
            put((call.host, tracker.crashed(str(exc))))
            return None
        if item is self.reply:
            if isinstance(value, dict) and "python_too_old" in value:
                # (the runner could not start: no event was sent)
                _run_without_connection(call, runner_results.failed_result(
                    too_old(call.host, value), _ioc_task_error=True), put)
            return None  # run_batch returned: every event has been delivered
        if value.get("e") == "plugin":  # a plugin ioc lacks: answer, not an event
            # (on a thread of its own: a foreign plugin may take its time)
            threading.Thread(target=lambda: msg.reply(trust.encode(plugins.answer(value))),
                             name="ioc-plugin-%s" % call.host, daemon=True).start()
            return _GOES_ON
        if value.get("e") == "lookup":  # a lookup the controller could not foresee
            msg.reply(call.late_lookup(value["k"], value["plugin"], value["terms"],
                                       value["kwargs"]) if call.late_lookup
                      else {"error": unforeseen(value["plugin"], value["terms"]),
                            "missing": True})
            return _GOES_ON
        if value.get("e") == "file":  # a controller file missing when the call was made
            msg.reply(call.late_file(value["k"], value["src"]) if call.late_file
                      else {"entry": None, "blobs": {}})
            return _GOES_ON
        if value.get("e") == "fetch":  # a fetched file: written before the task ends
            msg.reply({"result": call.deliver_fetch(value["result"]) if call.deliver_fetch
                       else value["result"]})  # (else: written when its event comes)
            return _GOES_ON
        if value.get("e") == "ask":  # --step: answered when the replay reaches it
            value["reply"] = msg.reply
        if not tracker.received:  # run_batch has started: it hears heartbeats now
            connector.heartbeat.add(self.ctx)
        tracker.received += len(msg.data)
        tracker.see(value)
        if value.get("e") == "end":
            # (large files streamed outside the batch's own messages: see payloads)
            value["bytes"] = [tracker.sent + value.pop("streamed", 0), tracker.received]
            value["context"] = call.context_key
        marked = self.marked
        if marked and value.get("e") in ("done", "item") and value.get("status") == "failed" \
                and tuple(value.get("k") or ()) in marked \
                and isinstance(value.get("result"), dict):
            value["result"]["_ioc_task_error"] = True
            if "results" in value["result"] and "msg" in value["result"]:
                value["result"]["msg"] = self.error  # a loop: the error, not "items failed"
        put((call.host, value))
        return _GOES_ON


def _run_without_connection(call: HostCall, result: Dict[str, Any],
                            put: Callable[[Delivery], None]) -> None:
    """The step of a host with no runner to run it, run here.

    Linear connects when a task needs the connection: tasks that need none
    (``debug``, ``set_fact``, ``assert``, ``meta``, includes...) and tasks
    their ``when`` skips come first with their usual results, and each task
    that connects gets ``result``: UNREACHABLE when there is no connection
    (each loop item "failed"; the host leaves the play unless the task
    ignores unreachable hosts), a failure when the host's Python cannot run
    (missing, too old; rescue and ignore_errors apply). So the step runs in
    the controller's process with every task that would connect marked.
    """
    runner_batch.HostRun(without_connection(call.wire, result),
                         lambda event: put((call.host, event)), ask=_asker(call.host, put)).run()


def _asker(host: str, put: Callable[[Delivery], None]) -> Callable[[Dict[str, Any]], Any]:
    """A runner in this process sends an event that wants an answer (``--step``)
    and waits for it, as a remote one does with mitogen's ``send_await``."""
    def ask(event: Dict[str, Any]) -> Any:
        answer: "queue.Queue[Any]" = queue.Queue(maxsize=1)
        put((host, dict(event, reply=answer.put)))
        return answer.get()
    return ask


def without_connection(wire: Dict[str, Any], result: Dict[str, Any]) -> Dict[str, Any]:
    """``wire`` with each task (and handler) that needs a connection given ``result``."""

    def task(task_wire: Dict[str, Any]) -> Dict[str, Any]:
        if task_wire.get("action") in IDENTITY_NEUTRAL:
            return task_wire
        out = {k: v for k, v in task_wire.items() if k != "module"}
        out["without_connection"] = result
        return out

    return dict(wire, tree=_map_tasks(wire["tree"], lambda t, _key: task(t)),
                handlers=[task(h) for h in wire.get("handlers") or []])


def _map_tasks(items: List[Dict[str, Any]],
               task: Callable[[Dict[str, Any], Tuple[int, int]], Dict[str, Any]]
               ) -> List[Dict[str, Any]]:
    """A batch's task tree with ``task(wire, step key)`` applied to every task."""
    out = []
    for node in items:
        if "t" in node:
            node = dict(node, t=task(node["t"], (node["i"], 0)))
        elif "b" in node:
            node = dict(node, **{part: _map_tasks(node.get(part) or [], task)
                                 for part in ("block", "rescue", "always")})
        out.append(node)
    return out


def lost_message(call: HostCall, exc: BaseException, tracker: "_Position") -> str:
    """What the user reads when a host's runner connection ends mid-batch."""
    where = ("while the task ran: its result and those after it are unknown"
             if tracker.open_key is not None else "between tasks")
    said = ("Lost the connection to the host (%s) %s. The ioc runner on it ended or the "
            "network between went away (%s)" % (call.spec.describe_target(), where, exc))
    # Ansible's ssh connection words a connection cut under a task as one it
    # could not use (ssh exits 255), followed by what ssh said: here, what ioc knows.
    return ssh_unreachable(call.spec, said) if call.spec.transport == "ssh" else said


#: Keywords a task that fails for want of its identity no longer acts on:
#: Ansible's connection error bypasses them (its loop, when, register and
#: ignore_errors still apply: each item fails).
_IDENTITY_DROPPED = ("changed_when", "failed_when", "until", "retries", "delay", "notify",
                     "environment", "module")  # module: Ansible's, which it no longer runs


def without_identity(call: HostCall, msg: str) -> Tuple[HostCall, Set[Tuple[int, int]]]:
    """``call`` for a host whose ``become`` failed, and the step keys it fails.

    Ansible reports become's error on the first task that connects; tasks
    that never connect (``debug``, ``set_fact``...), skipped tasks,
    ``ignore_errors`` and ``rescue`` behave as usual. So each task of the
    batch that would connect becomes a ``fail`` with the error (keeping its
    name, loop, ``when``, ``register``, ``ignore_errors``, ``no_log``), run
    as the connection's user, which runs no module of the host's.
    """
    marked: Set[Tuple[int, int]] = set()

    def task(wire: Dict[str, Any], key: Tuple[int, int]) -> Dict[str, Any]:
        if wire.get("action") in IDENTITY_NEUTRAL:
            return wire
        marked.add(key)
        out = {k: v for k, v in wire.items() if k not in _IDENTITY_DROPPED}
        out.update(action="fail", args={"msg": msg},
                   action_written=wire.get("action_written") or wire["action"])
        return out

    wire = dict(call.wire, tree=_map_tasks(call.wire["tree"], task))
    handlers = []
    for number, handler in enumerate(call.wire.get("handlers") or []):
        before = len(marked)
        handlers.append(task(handler, (-1, number + 1)))
        if len(marked) > before:  # a handler's key is [flush index, 1 + number]
            marked.discard((-1, number + 1))
            marked.update((flush, number + 1) for flush in range(call.wire["start"],
                                                                 call.wire["end"]))
    wire["handlers"] = handlers
    modules = tuple(call.modules) + bootstrap.action_modules(["fail"])
    return replace(call, wire=wire, become=None, modules=modules), marked


def too_old(host: str, answer: Dict[str, Any]) -> str:
    """One line for a target whose Python the runner cannot run on."""
    return ("Task failed: %s's Python is %s (%s): ioc needs Python %s or newer on the target; "
            "set ansible_python_interpreter to a newer one"
            % (host, answer["python_too_old"], answer["executable"], answer["minimum"]))


def task_indices(wire: Dict[str, Any]) -> List[int]:
    """The indices of the tasks of a batch's tree, in order."""
    found: List[int] = []

    def note(task: Dict[str, Any], key: Tuple[int, int]) -> Dict[str, Any]:
        found.append(key[0])
        return task

    _map_tasks(wire.get("tree") or [], note)
    return sorted(found)


class _Position:
    """Where a host stands, so a lost connection is reported at the right step."""

    def __init__(self, first_key: Tuple[int, int], wire: Optional[Dict[str, Any]] = None) -> None:
        self.sent = 0
        self.received = 0
        self.open_key: Optional[List[int]] = None
        self.first_key = list(first_key)
        #: The batch (its task indices are read only if its connection is lost),
        #: and the key of the last step done.
        self.wire = wire or {}
        self.done_key: Optional[List[int]] = None
        self.ended = False

    def see(self, event: Dict[str, Any]) -> None:
        kind = event.get("e")
        if kind == "start":
            self.open_key = event["k"]
        elif kind == "done":
            self.open_key = None
            self.done_key = event["k"]
        elif kind == "end":
            self.ended = True

    def _later(self) -> List[int]:
        return [i for i in task_indices(self.wire)
                if self.done_key is None or i > self.done_key[0]]

    def whole(self) -> bool:
        """Every step of the batch was reported (if its state was not: its
        register/set_fact values are lost, a race of a few bytes)."""
        return self.ended or (self.open_key is None and self.done_key is not None
                              and self.done_key[1] == 0 and not self._later())

    def _next_key(self) -> List[int]:
        """Where a host lost between two steps is reported: the batch's next
        task after the last step done (never a step the replay has passed)."""
        later = self._later()
        return [later[0], 0] if self.done_key is not None and later else self.first_key

    def unreachable(self, msg: str) -> Dict[str, Any]:
        key = self.open_key or self._next_key()
        return {"e": "unreachable", "k": key, "status": "unreachable",
                "result": runner_results.unreachable_result(msg),
                "started": self.open_key is not None}

    def failed(self, msg: str) -> Dict[str, Any]:
        """The host fails at its first step with ``msg`` (the controller could not
        prepare its call), an error of the engine, not of a module (see the bridge)."""
        event = self.unreachable(msg)
        event.update(e="crash", status="failed",
                     result={"failed": True, "changed": False, "msg": msg,
                             "_ioc_task_error": True})
        return event

    def crashed(self, msg: str) -> Dict[str, Any]:
        event = self.unreachable(msg)
        event.update(e="crash", status="failed",
                     result={"failed": True, "changed": False, "msg": "ioc runner error: %s" % msg})
        return event
