"""``ioc-run --persist``'s daemon: one per user, keeping the runners between runs.

Started by the client (:mod:`ioc.warm`) as ``python -m ioc.warmd DIR`` in a
session of its own. It holds ``DIR/ioc-run.lock`` (flock) for its life,
listens on ``DIR/ioc-run.sock`` (mode 0600 in a 0700 directory) and serves
one client at a time: each run is :func:`ioc.cli.main` in this process, with
the client's stdin, stdout and stderr on fds 0, 1 and 2, its environment and
working directory, and one :class:`~ioc.transport.connector.Connector`
kept across runs -- the same mitogen router, the same runner contexts
(``become`` children and ``mitogen_via`` hops among them), and the record of
which files (by content hash) each runner holds in RAM.

A ``run`` request runs ``ioc-run``, ``ioc-adhoc`` or ``ioc-ssh`` so; a
``dispatch`` request (the ``mitogen_batch`` strategy with ``IOC_PERSIST``)
makes the daemon that ``ansible-playbook`` run's dispatcher
(:meth:`Daemon.dispatch`): its plays come over the connection with
:mod:`ioc.ansible.pipe`'s protocol and run on the same kept connector.

Which connection a run may reuse is the connector's business: a host whose
connection settings differ from those its runners were started with
(user, key, port, ssh arguments, password, interpreter, ``mitogen_via``...)
has them ended and connects afresh (:meth:`Connector.settle`), and each
``become`` identity (method, user, flags, executable, password) is a
context of its own.

The daemon ends -- and with it every runner on every target, through
:meth:`Connector.shutdown` -- when it has had no client for the idle time
the last run gave (``--persist=SECONDS``), when a client asks it to
(``--persist-stop``), when a run is interrupted (Ctrl-C: the batch in flight
is abandoned with its runners, as a cold run's would be), and when a run
comes with another fingerprint (:func:`ioc.warm.fingerprint`).
"""
from __future__ import annotations

import fcntl
import io
import logging
import os
import select
import signal
import socket
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Set, Tuple

from ioc import warm

LOG = logging.getLogger("ioc.warmd")

#: The encoding of the run's streams (the locale's, as Python picks it at start).
ENCODING = getattr(sys.__stdout__, "encoding", None) or "utf-8"

#: Seconds a new daemon waits for the lock while an old one is still ending.
LOCK_TIMEOUT = 30.0


class Warm:
    """What runs keep: the connector and the file digests each runner holds."""

    def __init__(self) -> None:
        self._connector: Optional[Any] = None
        #: context key -> digests its runner holds (``PayloadCache.sent``).
        self.sent: Dict[str, Set[str]] = {}

    def connector(self, forks: int) -> Any:
        """The kept connector, for a new run with ``forks`` (made on first use)."""
        from ioc.transport.connector import Connector

        if self._connector is None:
            self._connector = Connector(forks=forks)
        else:
            self._connector.begin_run(forks)
        self._connector.dropped = self._dropped
        return self._connector

    def _dropped(self, key: Any) -> None:
        """A runner ended: the files it held go with it (sent again to its successor)."""
        from ioc.controller.dispatch import context_key

        self.sent.pop(context_key(*key), None)

    def attach(self, playbook_run: Any) -> None:
        """Give ``playbook_run`` the kept connector and the kept file record."""
        playbook_run.connector = self.connector(playbook_run.options.forks)
        playbook_run.payload_cache.sent = self.sent

    def connections(self) -> Any:
        """The kept connector for the ``mitogen_batch`` dispatcher's plays
        (:class:`ioc.ansible.dispatcher.Connections`): one run on it per
        ``ansible-playbook``; kept when it closes; ended when a play is
        aborted with hosts in their batches."""
        from ioc.ansible.dispatcher import Connections

        warm = self

        class Kept(Connections):
            def __init__(self) -> None:
                super().__init__()
                self.sent = warm.sent

            def get(self, forks: int) -> Any:
                if self.connector is None or warm._connector is not self.connector:
                    self.connector = warm.connector(forks)
                return self.connector

            def abort(self) -> None:
                self.connector = None
                warm.shutdown()

            def close(self) -> None:
                self.connector = None  # (kept by the daemon)

        return Kept()

    def hosts(self) -> int:
        if self._connector is None:
            return 0
        return len({key[0] for key in self._connector.contexts})

    def shutdown(self) -> None:
        """End every runner on every target, then the broker."""
        connector, self._connector = self._connector, None
        self.sent.clear()
        if connector is not None:
            connector.shutdown()


class Daemon:
    def __init__(self, directory: str, listener: socket.socket) -> None:
        self.directory = directory
        self.path = os.path.join(directory, warm.SOCKET_NAME)
        self.listener = listener
        self.idle = warm.DEFAULT_IDLE
        self.fingerprint: Optional[str] = None
        self.warm = Warm()
        self.lock_fd: Optional[int] = None

    def serve(self) -> None:
        while True:
            self.listener.settimeout(self.idle)
            try:
                conn, _ = self.listener.accept()
            except socket.timeout:
                LOG.info("idle for %ss: ending", self.idle)
                self.close_listener()
                self.warm.shutdown()
                return
            conn.settimeout(None)
            with conn:
                if not self.serve_one(conn):
                    return

    def serve_one(self, conn: socket.socket) -> bool:
        """One client; False when the daemon is to end (it ended everything already)."""
        frame, fds = warm.recv_frame(conn, with_fds=3)
        if frame is None:
            _close(fds)
            return True
        op = frame.get("op")
        if op == "stop":
            _close(fds)
            hosts = self.warm.hosts()
            self.close_listener()
            self.warm.shutdown()
            warm.send_frame(conn, {"op": "stopped", "hosts": hosts})
            return False
        if not (op == "run" and len(fds) == 3 or op == "dispatch" and not fds):
            _close(fds)
            warm.send_frame(conn, {"op": "error", "msg": "unknown request"})
            return True
        if self.fingerprint is not None and frame["fingerprint"] != self.fingerprint:
            _close(fds)
            LOG.info("a run with other settings: ending for a new daemon")
            self.close_listener()
            warm.send_frame(conn, {"op": "replaced"})
            self.warm.shutdown()
            return False
        self.fingerprint = frame["fingerprint"]
        self.idle = float(frame["idle"])
        if op == "dispatch":
            warm.send_frame(conn, {"op": "serving"})
            if self.dispatch(frame, conn) or _TERMINATED.is_set():
                self.close_listener()
                self.warm.shutdown()
                return False
            return True
        code, interrupted = self.run(frame, fds, conn)
        interrupted = interrupted or _TERMINATED.is_set()
        try:
            warm.send_frame(conn, {"op": "exit", "code": code})
        except OSError:
            interrupted = True  # the client is gone
        if interrupted:
            self.close_listener()
            self.warm.shutdown()
            return False
        return True

    def run(self, frame: Dict[str, Any], fds: List[int],
            conn: socket.socket) -> Tuple[int, bool]:
        """``ioc-run ARGV`` here, on the client's descriptors; (exit code, interrupted)."""
        from ioc import cli

        own = (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__)
        environ = dict(os.environ)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os.environ.clear()
        os.environ.update(frame["env"])
        os.chdir(frame["cwd"])
        # The run's Python streams are the client's descriptors; the daemon's
        # own 0, 1 and 2 stay as they are: the processes a run starts and that
        # outlive it (a local runner keeps a dup of a terminal on its stderr)
        # must not hold the client's terminal or pipes open after it.
        for fd in fds:
            os.set_inheritable(fd, False)
        streams = [_stream(fd, mode) for fd, mode in zip(fds, ("r", "w", "w"))]
        sys.stdin, sys.stdout, sys.stderr = streams
        _set_originals(streams)  # (shutil.get_terminal_size reads sys.__stdout__)
        watcher = _Watcher(conn)
        cli.WARM = self.warm
        try:
            _forget_displayed()
            _drop_log_handlers()  # (the run sets its own: -v)
            code = _program(frame.get("program", "ioc-run"))(list(frame["argv"]))
        except KeyboardInterrupt:
            code = 99
        except BaseException:  # noqa: B902 -- said on the client's stderr, then ended
            import traceback

            traceback.print_exc()
            code = 250
            watcher.interrupted = True
        finally:
            cli.WARM = None
            interrupted = watcher.finish()
            _drop_log_handlers()
            for stream in streams:
                try:
                    stream.close()  # (flushes; closes the descriptor)
                except OSError:
                    pass
            sys.stdin, sys.stdout, sys.stderr = own[:3]
            _set_originals(own[3:])
            os.environ.clear()
            os.environ.update(environ)
            os.chdir("/")
        return code, interrupted

    def dispatch(self, frame: Dict[str, Any], conn: socket.socket) -> bool:
        """Be the ``mitogen_batch`` dispatcher of one ``ansible-playbook`` run
        (``IOC_PERSIST``): its plays over ``conn`` (:mod:`ioc.ansible.pipe`'s
        protocol) on the kept connector, the ``ioc_runner`` connection plugin
        served on the socket it named. True when the run was interrupted (its
        ``ansible-playbook`` went away during a play): the daemon then ends."""
        from ioc.ansible.dispatcher import serve_link
        from ioc.ansible.pipe import ParentLink

        environ = dict(os.environ)
        os.environ.clear()
        os.environ.update(frame["env"])
        os.chdir(frame["cwd"])
        log = frame["env"].get("IOC_BRIDGE_LOG")  # (as the cold dispatcher's --log)
        handler: Optional[logging.Handler] = None
        level = logging.root.level
        if log:
            handler = logging.FileHandler(log)
            handler.setFormatter(logging.Formatter(
                "%(asctime)s %(name)s %(levelname)s %(message)s"))
            logging.root.addHandler(handler)
            logging.root.setLevel(logging.INFO)
        watcher = _Hangup(conn)
        interrupted = False
        try:
            with conn.makefile("rb") as inp, conn.makefile("wb") as out:
                serve_link(ParentLink(inp, out), self.warm.connections(), frame.get("socket"),
                           watcher.playing)
        except KeyboardInterrupt:
            interrupted = True
        except BaseException:  # noqa: B902 -- the parent is gone or the protocol broke
            LOG.exception("the mitogen_batch run ended in the middle")
            interrupted = True
        finally:
            interrupted = watcher.finish() or interrupted
            if handler is not None:
                logging.root.removeHandler(handler)
                handler.close()
            logging.root.setLevel(level)
            os.environ.clear()
            os.environ.update(environ)
            os.chdir("/")
        return interrupted

    def close_listener(self) -> None:
        """Stop listening (no new client finds this daemon) and let a new one start;
        a client already queued is told to start one."""
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        self.listener.setblocking(False)
        while True:
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, OSError):
                break
            with conn:
                conn.setblocking(True)
                _, fds = warm.recv_frame(conn, with_fds=3)
                _close(fds)
                try:
                    warm.send_frame(conn, {"op": "replaced"})
                except OSError:
                    pass
        self.listener.close()
        if self.lock_fd is not None:
            os.close(self.lock_fd)
            self.lock_fd = None


class _Watcher:
    """Reads the client's connection during a run: Ctrl-C there (or the client
    going away) interrupts the run in the main thread, as SIGINT would."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.interrupted = False
        self._done = False
        self._lock = threading.Lock()
        self._main = threading.main_thread().ident or 0
        self._thread = threading.Thread(target=self._read, name="ioc-warm-client", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            frame, _ = warm.recv_frame(self.conn)
        except OSError:
            frame = None
        with self._lock:
            if self._done:
                return
            self.interrupted = True
            LOG.info("the client %s", "interrupted the run" if frame else "went away")
            signal.pthread_kill(self._main, signal.SIGINT)

    def finish(self) -> bool:
        """The run ended: no interruption from now on; was there one?"""
        with self._lock:
            self._done = True
            return self.interrupted


class _Hangup:
    """Watches a ``mitogen_batch`` run's connection while a play is in progress:
    its ``ansible-playbook`` going away then (Ctrl-C, a kill) interrupts the
    play in the main thread, as Ctrl-C interrupts a warm ``ioc-run``."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.interrupted = False
        self._playing = False
        self._done = False
        self._lock = threading.Lock()
        self._main = threading.main_thread().ident or 0
        self._thread = threading.Thread(target=self._watch, name="ioc-warm-parent",
                                        daemon=True)
        self._thread.start()

    def playing(self, now: bool) -> None:
        with self._lock:
            self._playing = now

    def _watch(self) -> None:
        poller = select.poll()
        poller.register(self.conn.fileno(), select.POLLRDHUP)
        while True:
            try:
                hung_up = bool(poller.poll(200))
            except OSError:
                hung_up = True
            with self._lock:
                if self._done:
                    return
                if not hung_up:
                    continue
                if self._playing:
                    self.interrupted = True
                    LOG.info("ansible-playbook went away during a play")
                    signal.pthread_kill(self._main, signal.SIGINT)
                return  # (between plays: the main thread reads the end itself)

    def finish(self) -> bool:
        with self._lock:
            self._done = True
            return self.interrupted


def _program(name: str) -> Any:
    """The ``main`` of the command a ``run`` request runs."""
    if name == "ioc-adhoc":
        from ioc import adhoc

        return adhoc.main
    if name == "ioc-ssh":
        from ioc import ssh

        return ssh.main
    from ioc import cli

    return cli.main


#: Set by SIGTERM: the daemon ends after the run in progress is interrupted.
_TERMINATED = threading.Event()


def _terminate(signum: int, frame: Any) -> None:
    _TERMINATED.set()
    raise KeyboardInterrupt()


def _forget_displayed() -> None:
    try:
        from ioc.ansible.errors import forget_displayed
    except ImportError:  # (no ansible-core: nothing was displayed by it)
        return
    forget_displayed()


def _set_originals(streams: Any) -> None:
    for name, stream in zip(("__stdin__", "__stdout__", "__stderr__"), streams):
        setattr(sys, name, stream)


def _drop_log_handlers() -> None:
    for handler in list(logging.root.handlers):
        logging.root.removeHandler(handler)


def _stream(fd: int, mode: str) -> io.TextIOWrapper:
    """A text stream over ``fd`` (closing it when closed), as Python sets up ``sys.std*``."""
    raw = io.FileIO(fd, mode, closefd=True)
    buffered = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
    return io.TextIOWrapper(buffered, encoding=ENCODING,
                            errors="backslashreplace" if fd == 2 else "strict",
                            line_buffering=fd == 2 or raw.isatty())


def _close(fds: List[int]) -> None:
    for fd in fds:
        os.close(fd)


def _take_lock(directory: str) -> Optional[int]:
    """The daemon lock, or None when a live daemon answers on the socket."""
    fd = os.open(os.path.join(directory, warm.LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + LOCK_TIMEOUT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            pass
        probe = warm._connect(os.path.join(directory, warm.SOCKET_NAME))
        if probe is not None:  # another daemon serves: this one is not needed
            probe.close()
            os.close(fd)
            return None
        if time.monotonic() > deadline:
            os.close(fd)
            raise SystemExit("ioc.warmd: the lock stayed taken for %ss" % LOCK_TIMEOUT)
        time.sleep(0.02)


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    directory = warm.checked_dir(argv[0])
    # The daemon's own log goes to its log file (its stderr when started),
    # never to a client's stderr; a run's logging is the run's (ioc.cli.main).
    handler = logging.StreamHandler(os.fdopen(os.dup(2), "w", buffering=1))
    handler.setFormatter(logging.Formatter(
        "%(asctime)s ioc.warmd[%(process)d] %(levelname)s %(message)s"))
    LOG.addHandler(handler)
    LOG.setLevel(logging.INFO)
    LOG.propagate = False
    lock_fd = _take_lock(directory)
    if lock_fd is None:
        return 0
    path = os.path.join(directory, warm.SOCKET_NAME)
    try:
        os.unlink(path)  # (a dead daemon's: the live one holds the lock)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mask = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(mask)
    os.chmod(path, 0o600)
    listener.listen(16)
    LOG.info("listening on %s", path)
    daemon = Daemon(directory, listener)
    daemon.lock_fd = lock_fd
    signal.signal(signal.SIGTERM, _terminate)
    try:
        daemon.serve()
    except KeyboardInterrupt:  # SIGTERM between runs
        daemon.close_listener()
        daemon.warm.shutdown()
    LOG.info("ended")
    return 0


if __name__ == "__main__":
    sys.exit(main())
