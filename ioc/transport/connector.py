"""Connections to targets: a mitogen context per inventory host and identity.

One context is kept per inventory host for the whole run; that context *is*
the ephemeral runner: a Python process in RAM on the target that mitogen
started over SSH and that ends when the run ends.

Identities. A runner cannot change the user it runs as, so each ``become``
identity (method, user, flags, executable) is a context of its own: a child
of the host's ssh context started by ``sudo``/``su`` on the target
(``router.sudo(via=...)``), created on first use and kept per (host,
identity) for the run. ``mitogen_via: <inventory host>`` starts a host's ssh
connection from the named host's runner instead of from the controller
(chains a -> b -> c work the same way).

Connecting is paced and bounded (:mod:`ioc.transport.pacing`): ssh's
``ConnectTimeout`` is the host's ``ansible_timeout``; from ssh's start until
the runner answers its first call (``runner_info``, sent right behind the
runner's code, so it costs no round trip of its own) the bootstrap has
``IOC_BOOTSTRAP_TIMEOUT``; at most a window of bootstraps are in flight per
starting point. A connection that fails in a way that may pass (refused,
reset, timed out, ssh gave up before logging in) is tried again
``ansible_ssh_retries`` times, pausing as Ansible's ssh connection does.
"""
from __future__ import annotations

import copy
import itertools
import logging
import os
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Set, Tuple

import mitogen.core
import mitogen.master
import mitogen.parent
import mitogen.ssh

from ioc.agentless_runner import entry
from ioc.agentless_runner import relay as relay_entry, spawning
from ioc.transport import bootstrap, pacing
from ioc.transport.keepalive import Heartbeat, KeepAlive, from_environment
from ioc.transport.spec import BecomeSpec, ConnectionSpec

LOG = logging.getLogger(__name__)


class Unreachable(Exception):
    """A host could not be connected to (after retries)."""

    def __init__(self, message: str, ssh_said: Optional[str] = None) -> None:
        super().__init__(message)
        #: What ssh itself printed when it gave up, if it did: a caller that
        #: words the failure as another of Ansible's code paths does needs it.
        self.ssh_said = ssh_said


class InterpreterNotFound(Exception):
    """The host is reachable but its ``ansible_python_interpreter`` does not exist
    there: the task fails (as in Ansible), it is not an ssh failure."""


class BecomeFailed(Exception):
    """The host is reachable but ``become`` did not work (the task fails, as in Ansible)."""


#: Modules a context needs to start children (sudo, su, ssh for mitogen_via):
#: sent ahead of the request so it costs no import round trip over the WAN.
PARENT_MODULES = {"sudo": ("mitogen.parent", "mitogen.sudo", "ioc.agentless_runner.spawning"),
                  "su": ("mitogen.parent", "mitogen.su", "ioc.agentless_runner.spawning"),
                  "ssh": ("mitogen.parent", "mitogen.ssh", "ioc.agentless_runner.spawning")}
#: What an intermediary's relay needs besides: mitogen's service pool.
RELAY_MODULES = ("mitogen.select", "mitogen.service", "ioc.agentless_runner.relay")
#: The relay's mitogen service name (``ioc.agentless_runner.relay.Relay``).
RELAY = "ioc.agentless_runner.relay.Relay"
#: Threads of an intermediary's relay: its connections in flight (at most
#: its pacing window, see pacing) and the runners below asking for payloads.
RELAY_THREADS = 64

#: Seconds ``reset`` waits for a runner to end before going on without it.
SHUTDOWN_TIMEOUT = 10.0

#: Numbers the runs of this process (Connector.run_id).
_RUNS = itertools.count(1)

#: A context is cached per (inventory name, identity); None is the connection's own.
Key = Tuple[str, Optional[BecomeSpec]]


class Connector:
    """Owns the mitogen broker and one context per host and identity for the whole run."""

    def __init__(self, forks: int = 5, keepalive: Optional[KeepAlive] = None,
                 paced: Optional[pacing.Pacing] = None) -> None:
        self.broker = mitogen.master.Broker()
        self.router = mitogen.master.Router(self.broker)
        #: Set once :meth:`shutdown` starts: calls still in flight (the run
        #: ended while other hosts were in their batches) fail quietly.
        self.closing = False
        #: How long silence on a runner's connection is borne (ioc.transport.keepalive).
        self.keepalive = keepalive or from_environment()
        self.heartbeat = Heartbeat(self.router, self.keepalive)
        #: mitogen's FileService, started on first use: large files stream from it.
        self._files: Optional[Any] = None
        self._pool: Optional[Any] = None
        bootstrap.configure(self.router)
        bootstrap.warm(self.router)
        #: The settings each host's connection was made with.
        self._specs: Dict[str, ConnectionSpec] = {}
        self.contexts: Dict[Key, mitogen.core.Context] = {}
        #: The context each one was started from (become child, mitogen_via hop).
        self._parent: Dict[Key, Key] = {}
        self._lock = threading.Lock()
        self._key_locks: Dict[Key, threading.Lock] = {}
        #: The bootstrap bound and the first window (ioc.transport.pacing).
        self.pacing = paced or pacing.from_environment()
        self._forks = max(1, forks)
        #: One pacer per starting point: the controller (None) or a mitogen_via host.
        self._pacers: Dict[Optional[str], pacing.Pacer] = {}
        #: Why the connector cut a context (by context id): its bootstrap ran out of time.
        self._cut: Dict[int, str] = {}
        #: The bootstrap deadline of each context whose runner has not answered yet
        #: (mitogen's broker waits for pending timers when it shuts down).
        self._deadlines: Dict[int, Any] = {}
        #: Per key, how many connections were tried, and the last one's failure.
        self._attempts: Dict[Key, int] = {}
        self._failures: Dict[Key, Exception] = {}
        self._observer: Callable[[str, str], None] = lambda host, what: None
        #: The last news of each host told to the observer (a later observer
        #: hears it too: ioc-run's progress line starts after its warm-up).
        self._told: Dict[str, str] = {}
        #: Whether a warm-up's failure is still the answer of its host's first
        #: call (:meth:`warm` with ``binding``), and those failures by key.
        self._binding = False
        self._warm_failed: Dict[Key, Exception] = {}
        #: Told of each context the connector drops (its runner ended or is
        #: ending): what the run recorded about that runner goes with it.
        self.dropped: Callable[[Key], None] = lambda key: None
        #: Names the run in each batch: a runner counts its calls per run.
        self.run_id = "%d.%d" % (os.getpid(), next(_RUNS))
        #: Hosts other hosts are reached through (``mitogen_via``): their runner
        #: starts a relay when it connects (:meth:`expect_intermediaries`).
        self._intermediaries: Set[str] = set()
        #: The intermediaries whose relay runs (by inventory name), and the
        #: payload digests each holds (pushed once per intermediary).
        self._relays: Dict[str, mitogen.core.Context] = {}
        self._held: Dict[str, Set[str]] = {}

    @property
    def observer(self) -> Callable[[str, str], None]:
        """Told of each host's own connection, from the thread that makes it:
        (host, "connecting" / "connected" / "unreachable" / "gone"); ioc-run's
        live progress line (ioc.callbacks.progress) listens here. A new
        observer is told at once what the hosts' connections are now."""
        return self._observer

    @observer.setter
    def observer(self, observer: Callable[[str, str], None]) -> None:
        with self._lock:
            self._observer = observer
            told = sorted(self._told.items())
        for host, what in told:
            observer(host, what)

    def _tell(self, host: str, what: str) -> None:
        with self._lock:
            self._told[host] = what
            observer = self._observer
        observer(host, what)

    def begin_run(self, forks: int) -> None:
        """A new run on this connector (``ioc-run --persist``'s daemon keeps one
        across runs): its ``forks`` bound the bootstraps it starts."""
        with self._lock:
            self._forks = max(1, forks)
            self._pacers.clear()
            self.run_id = "%d.%d" % (os.getpid(), next(_RUNS))

    def context(self, host: str, spec: ConnectionSpec,
                become: Optional[BecomeSpec] = None) -> mitogen.core.Context:
        """The context of ``host`` as ``become`` (None: the connection's own user).

        Connects (paced: see :mod:`ioc.transport.pacing`) if needed: the
        ``mitogen_via`` host first, then the host, then the ``become`` child.
        Raises :class:`Unreachable` or :class:`BecomeFailed`.
        """
        key: Key = (host, become)
        with self._lock:
            ctx = self.contexts.get(key)
            if ctx is not None:
                return ctx
            warmed = self._warm_failed.pop(key, None)
            key_lock = self._key_locks.setdefault(key, threading.Lock())
            tried = self._attempts.get(key, 0)
        if warmed is not None:
            # The warm-up was this call's attempt, made a little earlier (see warm)
            raise copy.copy(warmed)
        with key_lock:  # one connection per key, even when two calls ask at once
            with self._lock:
                ctx = self.contexts.get(key)
                failed = self._failures.get(key) if self._attempts.get(key, 0) != tried else None
            if ctx is not None:
                return ctx
            if failed is not None:
                # The attempt made while this call waited for it failed: that is
                # this call's answer too (several hosts delegating to one dead
                # host wait for one connect timeout, not one each in turn).
                raise copy.copy(failed)
            try:
                ctx = self._connect_key(key, spec)
            except (Unreachable, InterpreterNotFound, BecomeFailed) as exc:
                with self._lock:
                    self._failures[key] = exc
                raise
            else:
                with self._lock:
                    self._failures.pop(key, None)
                return ctx
            finally:
                with self._lock:
                    self._attempts[key] = self._attempts.get(key, 0) + 1

    def _connect_key(self, key: Key, spec: ConnectionSpec) -> mitogen.core.Context:
        """Connect ``key`` (its caller holds the key's lock)."""
        host, become = key
        parent_key: Optional[Key] = None
        slot: Optional[pacing.Slot] = None
        if become is not None:
            ctx = self._become(host, spec, self.context(host, spec), become)
            parent_key = (host, None)
        else:
            parent = self.context(spec.via, spec.via_spec) \
                if spec.via and spec.via_spec is not None else None
            if parent is not None:
                bootstrap.preload(self.router, parent, PARENT_MODULES["ssh"])
                parent_key = (str(spec.via), None)
                self._start_relay(str(spec.via), parent)
            self._tell(host, "connecting")
            try:
                ctx, slot = self._connect_with_retries(host, spec, parent)
            except BaseException as exc:
                self._tell(host, "unreachable" if isinstance(exc, Unreachable) else "gone")
                raise
            self._tell(host, "connected")
        bootstrap.preload(self.router, ctx)
        if slot is not None:
            self._await_runner(host, spec, ctx, slot)
        with self._lock:
            self.contexts[key] = ctx
            if parent_key is not None:
                self._parent[key] = parent_key
            relays = slot is not None and host in self._intermediaries
        if relays:  # (or expect_intermediaries starts it, if it came later)
            self._start_relay(host, ctx)
        return ctx

    def warm(self, host: str, spec: ConnectionSpec, binding: bool = False) -> bool:
        """Start connecting ``host`` with ``spec`` in the background, before any
        call needs it (``mitogen_batch``: while ansible-playbook plans the play;
        ``ioc-run``: while it resolves the modules and plans the playbook).

        Only a warm-up: nothing is reported. A call that asks for the host
        while the attempt is under way waits for it and takes its outcome, as
        a call that waits for another call's attempt does (:meth:`context`).
        A failure that ended before any call asked is forgotten, and the first
        call connects again, where and when the run would have; unless
        ``binding`` and :meth:`release_warm` was not called since: then the
        warm-up was that first call's attempt (the run's first step, which
        connects its hosts as it starts: nothing ran in between that could
        make the host reachable), and no attempt is made that Ansible would
        not make. A host settled already (an earlier play) is left alone; the
        play's :meth:`settle` with other settings ends what this one started.
        Returns whether an attempt was started.
        """
        with self._lock:
            if host in self._specs or (host, None) in self.contexts:
                return False
            self._specs[host] = spec
            self._binding = self._binding or binding

        def connect() -> None:
            try:
                self.context(host, spec)
            except Exception as exc:  # (the first call that needs it connects again)
                LOG.info("%s: warming up its connection failed: %s", host, exc)
                with self._lock:
                    if binding and self._binding and not self.closing:
                        self._warm_failed[(host, None)] = exc

        threading.Thread(target=connect, name="ioc-warm-%s" % host, daemon=True).start()
        return True

    def release_warm(self) -> None:
        """The run is past its first step: a binding warm-up's failure no
        longer answers a call (the host's first connection comes later, after
        work that may have made it reachable), and the call connects afresh."""
        with self._lock:
            self._binding = False
            self._warm_failed.clear()

    def expect_intermediaries(self, names: Set[str]) -> None:
        """Hosts that other hosts of the run are reached through: each starts
        its relay (:mod:`ioc.agentless_runner.relay`) as it connects, before
        any batch of its own, so the hosts below it connect while it runs."""
        with self._lock:
            self._intermediaries |= set(names)
            # (one connected already, by a warm-up: its relay starts now, before any batch)
            connected = [(name, self.contexts[(name, None)]) for name in sorted(names)
                         if (name, None) in self.contexts]
        for name, ctx in connected:
            self._start_relay(name, ctx)

    def _start_relay(self, host: str, ctx: mitogen.core.Context) -> None:
        """Start ``host``'s relay (once per runner): the call is queued behind
        the runner's first, ahead of any batch; what is asked of the relay
        later follows it on the same stream."""
        with self._lock:
            if self._relays.get(host) is ctx:
                return
            self._relays[host] = ctx
            self._held[host] = set()
        bootstrap.preload(self.router, ctx, PARENT_MODULES["ssh"] + RELAY_MODULES)
        reply = ctx.call_async(relay_entry.start, RELAY_THREADS)

        def started(receiver: mitogen.core.Receiver) -> None:
            try:
                receiver.get(block=False).unpickle()
            except mitogen.core.TimeoutError:
                return
            except mitogen.core.Error as exc:
                LOG.warning("%s: its relay for the hosts behind it did not start: %s", host, exc)

        reply.notify = started
        if not reply.empty():
            started(reply)

    def relay_of(self, host: str, become: Optional[BecomeSpec] = None
                 ) -> Optional[Tuple[str, mitogen.core.Context]]:
        """The nearest intermediary whose relay runs, ``(name, context)``, of
        ``host``'s context (as ``become``): that context itself (an
        intermediary's own batches take its payloads from its own relay, so
        they cross once for it and the hosts below), or one it was started
        from; None when there is none."""
        with self._lock:
            key: Key = (host, become)
            for _ in range(len(self._parent) + 2):
                ctx = self._relays.get(key[0])
                if key[1] is None and ctx is not None and self.contexts.get(key) is ctx:
                    return key[0], ctx
                parent = self._parent.get(key)
                if parent is None:
                    return None
                key = parent
        return None

    def divert(self, host: str, become: Optional[BecomeSpec],
               blobs: Mapping[str, Any]) -> Optional[Tuple[Dict[str, Any], int]]:
        """Payloads for an intermediary's runner or one below it: pushed to the
        intermediary's relay, those it lacks, once per intermediary for the
        run; the runner gets them from there. The batch then carries
        ``{"id": <the relay's context id>, "digests": [...]}`` instead of the
        blobs, and the bytes pushed for it (the transport report counts them
        for the call that needed them); None when ``host`` is reached
        through no relay."""
        found = self.relay_of(host, become)
        if found is None:
            return None
        name, ctx = found
        with self._lock:
            held = self._held.setdefault(name, set())
            new = {d: b for d, b in blobs.items() if d not in held}
            held.update(new)
            if new:  # (under the lock: two hosts below never push the same twice)
                ctx.call_service_async(RELAY, "store", blobs=new).close()
        return {"id": ctx.context_id, "digests": sorted(blobs)}, \
            sum(len(blob) for blob in new.values())

    def settle(self, host: str, spec: ConnectionSpec) -> None:
        """``host``'s settings for the play about to run: if they changed (a later
        play's ``connection``, ``remote_user``, ``port``...) its runners made with
        the old ones end, and the next call connects afresh, as Ansible connects
        with each task's settings. Called between plays, never during a step."""
        with self._lock:
            known = self._specs.get(host)
            self._specs[host] = spec
            key_lock = self._key_locks.get((host, None))
        if known is not None and known != spec:
            LOG.info("%s: its connection settings changed: connecting afresh", host)
            if key_lock is not None:
                with key_lock:  # (a warm-up with the other settings ends first)
                    pass
            self.reset(host)

    def forget(self, host: str) -> None:
        """Drop every context of ``host`` and those started from them (connection lost)."""
        with self._lock:
            keys = self._behind(host)
            for key in keys:
                self.heartbeat.discard(self.contexts.pop(key))
                self._parent.pop(key, None)
                self.dropped(key)
        for name in sorted({key[0] for key in keys if key[1] is None}):
            self._tell(name, "gone")

    def cut_reason(self, context: mitogen.core.Context) -> Optional[str]:
        """Why the connector cut ``context`` (its runner did not answer in time), or None."""
        with self._lock:
            return self._cut.get(context.context_id)

    def reset(self, host: str) -> None:
        """End ``host``'s runners; the next call connects afresh (reset_connection).

        Runners started from them (become children, hosts reached with
        ``mitogen_via`` through this one) end first, deepest first: a runner
        does not exit while a child it started is still connected, and a
        child's end is only seen through the runner that started it.
        """
        with self._lock:
            keys = self._behind(host)
            contexts = [self.contexts.pop(k) for k in keys]
            for key in keys:
                self._parent.pop(key, None)
                self.dropped(key)
        for name in sorted({key[0] for key in keys if key[1] is None}):
            self._tell(name, "gone")
        for ctx in contexts:
            self.heartbeat.discard(ctx)
            try:
                ctx.shutdown(wait=False).get(timeout=SHUTDOWN_TIMEOUT)
            except (mitogen.core.Error, mitogen.core.TimeoutError):
                LOG.info("%s: a runner did not end within %ss", host, SHUTDOWN_TIMEOUT)

    def _behind(self, host: str) -> List[Key]:
        """``host``'s context keys and every key started from one, deepest first."""
        def chain(key: Key) -> List[Key]:
            out = [key]
            while out[-1] in self._parent and len(out) <= len(self._parent):
                out.append(self._parent[out[-1]])
            return out

        chains = {k: chain(k) for k in self.contexts}
        return sorted((k for k, c in chains.items() if any(hop[0] == host for hop in c)),
                      key=lambda k: -len(chains[k]))

    def _become(self, host: str, spec: ConnectionSpec, parent: mitogen.core.Context,
                become: BecomeSpec) -> mitogen.core.Context:
        """A child of ``parent`` running as ``become.user``, started by sudo or su there."""
        bootstrap.preload(self.router, parent, PARENT_MODULES[become.method])
        # (one way, ahead of mitogen's own call that starts the child there)
        parent.call_no_reply(spawning.lighten)
        kwargs: Dict[str, Any] = {"via": parent, "username": become.user,
                                  "python_path": spec.python, "connect_timeout": spec.timeout,
                                  "remote_name": spec.remote_name}
        if become.password is not None:
            kwargs["password"] = mitogen.core.Secret(become.password)
        try:
            if become.method == "sudo":
                return self.router.sudo(sudo_path=become.exe or "sudo",
                                        sudo_args=list(become.flags), **kwargs)
            if become.flags:
                raise BecomeFailed("Task failed: become_flags %r are not supported with su"
                                   % " ".join(become.flags))
            return self.router.su(su_path=become.exe or "su", **kwargs)
        except mitogen.core.ChannelError as exc:
            self.forget(host)
            raise Unreachable("connection lost: %s" % exc) from None
        except (mitogen.core.StreamError, mitogen.core.CallError, OSError, EOFError) as exc:
            raise BecomeFailed(_become_message(become, spec, exc)) from None

    def _pacer(self, start: Optional[str]) -> pacing.Pacer:
        """The pacer of the bootstraps started from ``start`` (None: the controller)."""
        with self._lock:
            if start not in self._pacers:
                self._pacers[start] = pacing.Pacer(self.pacing.window, self._forks,
                                                    self.pacing.bootstrap_timeout)
            return self._pacers[start]

    def _connect_with_retries(self, host: str, spec: ConnectionSpec,
                              parent: Optional[mitogen.core.Context] = None
                              ) -> Tuple[mitogen.core.Context, pacing.Slot]:
        """A connection and its bootstrap's slot, after up to ``spec.retries`` retries.

        Each attempt waits for room in its starting point's window; a
        failure that may pass is tried again after Ansible's pause
        (:func:`ioc.transport.pacing.retry_pause`), one that will not
        (refused login, changed host key, no such Python) is not.
        """
        pacer = self._pacer(spec.via)
        for attempt in range(spec.retries + 1):
            slot = pacer.admit()
            try:
                return self._connect(spec, parent), slot
            except (mitogen.core.StreamError, mitogen.core.CallError, OSError, EOFError) as exc:
                if _interpreter_missing(spec, exc):
                    slot.done(None)
                    raise InterpreterNotFound("The module interpreter '%s' was not found."
                                              % spec.python) from None  # Ansible's words
                permanent = _is_permanent(exc)
                slot.done(None if permanent else False)
                LOG.info("connecting to %s failed (attempt %d of %d): %s",
                         host, attempt + 1, spec.retries + 1, exc)
                if permanent or attempt == spec.retries:
                    if str(exc) == mitogen.parent.Router.connection_timeout_msg:
                        # mitogen's deadline, the bootstrap bound (ssh's own
                        # ConnectTimeout ends ssh, whose words are quoted)
                        raise Unreachable(_late(spec, self.pacing.bootstrap_timeout)) from None
                    raise Unreachable(_describe(spec, exc), _ssh_said(spec, exc)) from None
                time.sleep(pacing.retry_pause(attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def _await_runner(self, host: str, spec: ConnectionSpec, ctx: mitogen.core.Context,
                      slot: pacing.Slot) -> None:
        """Give ``slot`` back when the new runner answers; cut it if that takes too long.

        The call (``runner_info``) travels right behind the runner's code and
        ahead of the caller's first call, which is not held up by it. If no
        answer comes within the bootstrap bound, the connection is cut: the
        caller's call ends with a lost connection, :meth:`cut_reason` says why.
        """
        reply = ctx.call_async(entry.runner_info)

        def answered(receiver: mitogen.core.Receiver) -> None:
            try:
                receiver.get(block=False).unpickle()
                ok: Optional[bool] = True
            except mitogen.core.TimeoutError:
                return  # already taken (the answer came before ``notify`` was set)
            except mitogen.core.ChannelError:
                ok = False  # the connection went away first
            except mitogen.core.CallError:
                ok = None  # the runner could not start (it says why to the first call)
            slot.done(ok)
            with self._lock:
                timer = self._deadlines.pop(ctx.context_id, None)
            if timer is not None:
                timer.cancel()

        def arm() -> None:  # on the broker thread
            left = slot.started + self.pacing.bootstrap_timeout - time.monotonic()
            timer = self.broker.timers.schedule(mitogen.core.now() + max(0.0, left), expire)
            with self._lock:
                if slot.open:
                    self._deadlines[ctx.context_id] = timer
                else:
                    timer.cancel()

        def expire() -> None:  # on the broker thread
            with self._lock:
                self._deadlines.pop(ctx.context_id, None)
            if not slot.done(False):
                return
            why = _late(spec, self.pacing.bootstrap_timeout)
            LOG.info("%s: %s", host, why)
            with self._lock:
                self._cut[ctx.context_id] = why
            stream = self.router.stream_by_id(ctx.context_id)
            if stream is not None and stream.protocol.remote_id == ctx.context_id:
                stream.on_disconnect(self.broker)

        reply.notify = answered
        if not reply.empty():
            answered(reply)
        self.broker.defer(arm)

    def _connect(self, spec: ConnectionSpec,
                 parent: Optional[mitogen.core.Context] = None) -> mitogen.core.Context:
        # mitogen's bound is the bootstrap's; ssh's ConnectTimeout (in
        # ssh_args, see spec_for) is ansible_timeout.
        common: Dict[str, Any] = {"python_path": spec.python,
                                  "connect_timeout": self.pacing.bootstrap_timeout,
                                  "remote_name": spec.remote_name}
        if spec.transport == "local":
            method, options = "local", common
        else:
            if spec.password is not None:
                common["password"] = mitogen.core.Secret(spec.password)
            method, options = "ssh", dict(ssh_options(spec, self.keepalive), **common)
        with self._lock:
            relay = self._relays.get(str(spec.via)) if parent is not None else None
        if relay is not None and relay is parent:
            return self._relay_connect(parent, method, options)
        if parent is not None:
            options["via"] = parent
        return self.router.connect(method, **options)

    def _relay_connect(self, parent: mitogen.core.Context, method: str,
                       options: Dict[str, Any]) -> mitogen.core.Context:
        """A connection started by ``parent``'s relay, on a thread of its own
        there (``router.<method>(via=parent)`` is mitogen's ``proxy_connect``:
        the same, on the intermediary's main thread, one at a time)."""
        router = self.router
        kwargs = dict(options, debug=router.debug, profiling=router.profiling,
                      unidirectional=router.unidirectional, name=None)
        answer = parent.call_service(RELAY, "connect", method=method,
                                     kwargs=mitogen.core.Kwargs(kwargs))
        if answer["msg"] is not None:
            raise mitogen.core.StreamError(answer["msg"])
        return router.context_by_id(answer["id"], via_id=parent.context_id,
                                    name="%s.%s" % (parent.name, answer["name"]))

    def serve_files(self, paths: Any) -> None:
        """Let runners fetch ``paths`` from mitogen's FileService (idempotent).

        The service streams a file in chunks with a bounded window per
        connection (``mitogen.service.FileService``), the way ansible_mitogen
        moves files: the controller never holds a whole file.
        """
        import mitogen.service

        with self._lock:
            if self._files is None:
                self._files = mitogen.service.FileService(self.router)
                self._pool = mitogen.service.Pool(self.router, services=[self._files], size=2)
            for path in paths:
                self._files.register(path)

    def shutdown(self) -> None:
        """End every runner on every target, then the broker."""
        self.closing = True
        with self._lock:
            contexts = list(self.contexts.values())
            self.contexts.clear()
            for timer in self._deadlines.values():
                timer.cancel()
            self._deadlines.clear()
        self.heartbeat.stop()
        if self._pool is not None:
            self._pool.stop(join=True)
        for ctx in reversed(contexts):  # children before the contexts they run under
            try:
                ctx.shutdown(wait=False)
            except mitogen.core.Error:
                pass
        self.broker.shutdown()
        self.broker.join()


def ssh_options(spec: ConnectionSpec, keepalive: KeepAlive) -> Dict[str, Any]:
    """mitogen's ``router.ssh()`` keyword arguments for ``spec``'s ssh connection
    (what ssh's command line is made of; the bootstrap's are the caller's)."""
    return dict(hostname=spec.hostname, port=spec.port, username=spec.user,
                identity_file=spec.identity_file, ssh_args=list(spec.ssh_args),
                check_host_keys=spec.check_host_keys, **keepalive.ssh_options())


class _NoBootstrap(mitogen.parent.Connection):
    def get_boot_command(self) -> List[str]:
        return []


class _SshCommandLine(mitogen.ssh.Connection, _NoBootstrap):
    """mitogen's ssh connection reduced to its ssh command line: its
    ``get_boot_command`` appends the Python bootstrap it gets from its parent
    class, which (by the method order) is :class:`_NoBootstrap`'s nothing."""

    def __init__(self, options: mitogen.ssh.Options) -> None:  # (no router: none needed)
        self.options = options


def ssh_command_line(spec: ConnectionSpec, keepalive: KeepAlive) -> List[str]:
    """The ``ssh`` argv ioc's connection to ``spec``'s host runs, up to and with
    the host name (the runner's bootstrap command, which would follow, left
    out): built by the same mitogen code from the same options as
    :meth:`Connector._connect`'s, so ``ioc-ssh`` logs in exactly as runs do.
    With a password (which mitogen would type), ssh asks for it itself."""
    password = {"password": mitogen.core.Secret(spec.password)} if spec.password else {}
    options = mitogen.ssh.Options(max_message_size=0, **ssh_options(spec, keepalive), **password)
    return list(_SshCommandLine(options).get_boot_command())


def _late(spec: ConnectionSpec, bound: float) -> str:
    """The unreachable message of a bootstrap that ran out of time."""
    return ("Failed to connect to the host via %s: the ioc runner did not start within %d "
            "seconds of connecting (IOC_BOOTSTRAP_TIMEOUT) (%s)"
            % (spec.transport, bound, spec.describe_target()))


def _become_message(become: BecomeSpec, spec: ConnectionSpec, exc: BaseException) -> str:
    """Ansible's words for a failed privilege escalation (its ssh connection's,
    as ansible-core 2.21's TaskExecutor reports them: ``Task failed: ...``)."""
    text = str(exc)
    lowered = text.lower()
    name = become.method
    if "password is incorrect" in lowered:
        return "Task failed: Incorrect %s password" % name
    if "password is required" in lowered:
        return "Task failed: Missing %s password" % name
    if "timed out" in lowered or "timeout" in lowered:
        return "Task failed: Timeout (%ds) waiting for privilege escalation prompt: " \
            % int(spec.timeout)
    if become.password:
        text = text.replace(become.password, "********")
    return "Task failed: %s to user %s failed: %s" % (name, become.user, text)


#: What a failure says when trying again cannot help: the login was refused,
#: the host key is wrong, the Python to start is not there.
_PERMANENT = ("permission denied", "host key", "identification has changed",
              "command not found", "no such file or directory")


def _interpreter_missing(spec: ConnectionSpec, exc: BaseException) -> bool:
    """Did the connection fail because ``spec.python`` does not exist on the host?

    A local child cannot be started (ENOENT naming it); over ssh, the remote
    shell said so before ssh ended (``sh: 1: <python>: not found``, bash's
    ``No such file or directory``).
    """
    python = spec.python or ""
    if not python:
        return False
    if spec.transport == "local":
        return "No such file or directory: %r" % python in str(exc)
    said = _ssh_said(spec, exc) or ""
    return any(line.rstrip().endswith(("%s: not found" % python,
                                       "%s: No such file or directory" % python,
                                       "%s: command not found" % python))
               for line in said.splitlines())


def _is_permanent(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(s in text for s in _PERMANENT)


#: mitogen's wrapper around what the ssh process printed before it exited.
_SSH_OUTPUT = "last 100 lines received:"


def _describe(spec: ConnectionSpec, exc: BaseException) -> str:
    """The unreachable message, worded as Ansible's ssh connection words it.

    When ssh itself gave up (mitogen saw EOF and quotes ssh's output),
    Ansible's ssh connection says "Failed to connect to the host via ssh"
    with ssh's own message, or with pipelining (its first command goes
    through ssh's stdin) "Data could not be sent to remote host". Other
    failures keep mitogen's text.
    """
    ssh_said = _ssh_said(spec, exc)
    if ssh_said:
        return ssh_unreachable(spec, ssh_said)
    text = str(exc)
    target = spec.hostname if spec.port is None else "%s port %s" % (spec.hostname, spec.port)
    return "Failed to connect to the host via %s: %s (%s)" % (spec.transport, text, target)


def ssh_unreachable(spec: ConnectionSpec, why: str) -> str:
    """Ansible's ssh connection's words for a host it could not reach or lost,
    ``why`` being ssh's own: with pipelining (each command goes through ssh's
    stdin) "Data could not be sent to remote host", else "Failed to connect
    to the host via ssh"."""
    if spec.pipelining:
        return ("Task failed: Data could not be sent to remote host \"%s\". Make sure this "
                "host can be reached over ssh: %s" % (spec.hostname, why))
    return "Task failed: Failed to connect to the host via ssh: %s" % why


def _ssh_said(spec: ConnectionSpec, exc: BaseException) -> Optional[str]:
    """What the ssh process printed before it exited, as mitogen quotes it (None: not ssh's end)."""
    text = str(exc)
    if spec.transport != "ssh" or _SSH_OUTPUT not in text:
        return None
    return text.split(_SSH_OUTPUT, 1)[1].replace("\r", "").strip() or None
