"""A TCP relay that adds latency and counts round trips.

``DelayProxy(target_host, target_port, delay_s)`` listens on
``127.0.0.1:<free port>`` and relays every connection it accepts to
``target_host:target_port``, holding each chunk of data for ``delay_s``
seconds in *each* direction, so every round trip through it costs
``2 * delay_s`` more::

    with DelayProxy("127.0.0.1", sshd_port, 0.150) as proxy:
        subprocess.run(["ssh", "-p", str(proxy.port), ..., "true"])
        proxy.wait_idle()
        print(proxy.totals())   # {'connections': 1, 'round_trips': ..., ...}

Command line (prints one line per connection as it closes, totals on Ctrl-C)::

    python -m benchmarks.delayproxy --listen 2222 --target 127.0.0.1:22 --delay-ms 150

Delay, order and bandwidth
--------------------------
Each chunk read from one side is stamped with its arrival time and written
to the other side at ``arrival + delay``, by one writer per direction that
takes chunks in arrival order: a chunk never overtakes an earlier one, and
chunks are never held back for any other reason (no throttling, unlimited
bandwidth; only the receiver's own TCP flow control can slow delivery).
EOF (a half close) travels the same way, after the data before it. The TCP
handshake itself is not delayed: ``connect()`` returns at once, as on a
link where the SYN/SYN-ACK cost nothing. Each connection pays one RTT less
than on a real link with that latency; every tool measured pays the same.

Round trips
-----------
A *round trip* is a request/response turn: a chunk the client sends counts
as a new round trip when

* it is the first data the client sends on the connection, or
* both sides waited for the other:

  - *the client waited*: since the client's previous chunk, the proxy has
    *delivered* server data to the client, and that delivery came at least
    ``quiet_gap`` after the client's previous chunk: the client had been
    quiet, received something, and is now talking again, and
  - *the server waited*: when the chunk reaches the server (``delay``
    after it left the client) the server has sent nothing for at least
    ``quiet_gap``: it was not busy sending, so it may have been waiting for
    this. A message the client sends into a stream the server keeps
    sending (an SSH window adjust while a runner streams a thousand
    results) is nobody's answer and costs nobody a wait.

Delivery times, not arrival times, are used because the client cannot
answer data it has not received: data the two sides send concurrently
(SSH's banners and KEXINIT, or a controller sending two messages back to
back) does not count as a turn even when the chunks interleave.

``quiet_gap`` is what keeps the count robust:

* **Bursts.** A side rarely sends a message in one chunk: sshd sends a
  command's exit status, EOF and close as three writes over a few
  milliseconds, and a client may answer the first before the rest arrives.
  With a 1 ms gap that is two turns or one depending on scheduling (``ssh
  host true`` measured 10 or 11 at 150 ms; a steady 10 with the default).
* **Pauses in a stream.** A client that keeps sending (an upload, a big
  batch, mitogen's module source) while the server sends small control
  messages (SSH window adjusts) is one turn, not one per interleaving: it
  was never quiet for ``quiet_gap`` before the server data reached it. A
  client that *pauses* mid-upload (its CPU is busy: ioc's controller
  preparing 200 KB of modules on a loaded 2-CPU machine paused ~100 ms)
  and resumes just after a window adjust arrived looks exactly like a
  client answering; only a gap longer than the pause hides it. With a
  ``delay / 2`` default ioc's 100-task play measured 13 or 14 turns at
  150 ms; with the default below, a steady 13.
* **A server streaming** many results (the runner's per-task events) to a
  silent client is one turn, however many chunks it takes: only the
  client's next send counts. A stream of ~1,000 results (a 1,000-item
  ``copy`` loop, ~125 KB compressed) makes ssh send a window adjust every
  ~100 KB of channel data; on a loaded 2-CPU machine the results came
  ~1.8 s apart from one another's window adjusts, and the client's rule
  alone counted each as a turn (18 for a play that is 11 without them):
  the server's rule does not, as the server never stopped sending.
* **Real turns always qualify** when ``quiet_gap < 2 * delay``: a client that
  waits for an answer has been quiet for at least ``2 * delay`` (plus the
  server's time) when the answer reaches it. The default, ``1.5 * delay``,
  is as long as that allows with a margin of ``delay / 2`` for timer and
  scheduling jitter (12 ms at 25 ms, 75 ms at 150 ms). An undelayed proxy
  gets 0: the count is then strictly causal (a loopback answer can come
  back in 50 us), and bursts and pauses may add a turn here and there;
  measure at a real delay for exact counts.
* **SSH keepalives** (``ServerAliveInterval``: 15 s in mitogen, off in
  Ansible's default ssh arguments) are real round trips that nobody waits
  for; they are counted, one per interval of server silence. The plays the
  tests and benchmarks run never leave a server silent that long, so none
  appear in their counts; a test that sleeps on the target for more than
  15 s would see them.

Other asynchronous messages of the protocols are counted if, and only if,
the client answers them after being quiet: e.g. OpenSSH's ``hostkeys-00``
host key update after authentication, or a mitogen child asking its parent
for a module (``GET_MODULE``), which is a real turn the target waits for.

Only the standard library is used: asyncio, on a daemon thread of its own.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import signal
import socket
import sys
import threading
import time
from typing import Dict, List, Optional

__all__ = ["ConnectionStats", "DelayProxy", "main"]

#: Default ``quiet_gap`` as a fraction of the one-way delay (see the module docstring).
DEFAULT_QUIET_GAP_FRACTION = 1.5
#: Bytes read from a socket at once.
CHUNK = 256 * 1024


@dataclasses.dataclass
class ConnectionStats:
    """What one relayed connection carried (a snapshot; times are ``time.monotonic()``)."""

    id: int
    client: str
    opened: float
    closed: Optional[float] = None
    #: Bytes from the client to the server, and back.
    bytes_c2s: int = 0
    bytes_s2c: int = 0
    #: Chunks read from each side (an indication of segmentation only).
    chunks_c2s: int = 0
    chunks_s2c: int = 0
    #: Request/response turns (see the module docstring).
    round_trips: int = 0
    #: Why the upstream connection failed, if it did.
    error: Optional[str] = None
    #: With ``DelayProxy(trace=True)``: ``(time, what, bytes)`` for every chunk,
    #: ``what`` one of ``c2s``, ``c2s+rt`` (a chunk that counted as a round
    #: trip), ``s2c`` (read from the server) and ``deliver`` (written to the client).
    trace: Optional[list] = dataclasses.field(default=None, repr=False)
    # Internal clocks for the round trip count.
    last_c2s: Optional[float] = dataclasses.field(default=None, repr=False)
    last_s2c_delivery: Optional[float] = dataclasses.field(default=None, repr=False)
    #: When the server's recent chunks were read (the last ``quiet_gap`` or so).
    s2c_reads: collections.deque = dataclasses.field(default_factory=collections.deque,
                                                     repr=False)

    @property
    def open(self) -> bool:
        return self.closed is None

    def as_dict(self) -> Dict[str, object]:
        return {
            "id": self.id, "client": self.client, "open": self.open, "opened": self.opened,
            "duration": (self.closed if self.closed is not None else time.monotonic())
            - self.opened,
            "bytes_c2s": self.bytes_c2s, "bytes_s2c": self.bytes_s2c,
            "chunks_c2s": self.chunks_c2s, "chunks_s2c": self.chunks_s2c,
            "round_trips": self.round_trips, "error": self.error,
            **({"trace": [(round(t - self.opened, 6), w, n) for t, w, n in self.trace]}
               if self.trace is not None else {}),
        }


class DelayProxy:
    """Relay ``127.0.0.1:<port>`` to ``target_host:target_port`` with a one-way delay.

    ``delay_s`` is added in each direction (RTT grows by ``2 * delay_s``).
    ``quiet_gap`` (seconds; default ``1.5 * delay_s``) tunes the round
    trip count. ``listen_port=0`` picks a free port; read it from :attr:`port`.
    Use as a context manager or call :meth:`start` / :meth:`stop`.
    """

    def __init__(self, target_host: str, target_port: int, delay_s: float = 0.0, *,
                 listen_host: str = "127.0.0.1", listen_port: int = 0,
                 quiet_gap: Optional[float] = None,
                 on_close=None, trace: bool = False, refuse_first: int = 0) -> None:
        if delay_s < 0:
            raise ValueError("delay_s must be >= 0")
        self.target_host = target_host
        self.target_port = int(target_port)
        self.delay_s = float(delay_s)
        self.quiet_gap = (DEFAULT_QUIET_GAP_FRACTION * self.delay_s if quiet_gap is None
                          else float(quiet_gap))
        self.listen_host = listen_host
        #: Record every chunk in :attr:`ConnectionStats.trace` (for debugging).
        self.trace = trace
        self._listen_port = int(listen_port)
        #: Called with a :class:`ConnectionStats` snapshot when a connection closes
        #: (on the proxy's thread).
        self.on_close = on_close
        self._lock = threading.Lock()
        self._conns: List[ConnectionStats] = []
        self._next_id = 1
        self._idle = threading.Condition(self._lock)
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._server: Optional[asyncio.AbstractServer] = None
        self._thread: Optional[threading.Thread] = None
        self._tasks: set = set()
        self.port: Optional[int] = None
        #: Set by :meth:`black_hole`: every byte from then on is dropped.
        self._silent = threading.Event()
        #: The first ``refuse_first`` connections are closed as soon as they are
        #: accepted (a host whose sshd is not up yet, or drops the connection).
        self._refuse = int(refuse_first)

    # -- lifecycle ------------------------------------------------------------

    def start(self) -> "DelayProxy":
        if self._thread is not None:
            raise RuntimeError("already started")
        ready = threading.Event()
        failure: List[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                self._server = loop.run_until_complete(asyncio.start_server(
                    self._handle, self.listen_host, self._listen_port,
                    reuse_address=True, backlog=512))
                self.port = self._server.sockets[0].getsockname()[1]
            except BaseException as exc:  # noqa: BLE001 - reported to start()
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="delayproxy", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise failure[0]
        return self

    def stop(self) -> None:
        """Stop listening and cut every open connection."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        async def shutdown() -> None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._server.wait_closed()

        try:
            asyncio.run_coroutine_threadsafe(shutdown(), loop).result(timeout=10)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10)
            self._thread = None
            self._loop = None

    def black_hole(self) -> None:
        """From now on drop everything, both ways, and close nothing: a network gone silent."""
        self._silent.set()

    def __enter__(self) -> "DelayProxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- statistics -------------------------------------------------------------

    def connections(self) -> List[Dict[str, object]]:
        """Per-connection statistics since the last :meth:`reset`, in accept order."""
        with self._lock:
            return [c.as_dict() for c in self._conns]

    def totals(self) -> Dict[str, object]:
        """Sums over :meth:`connections`."""
        conns = self.connections()
        return {
            "connections": len(conns),
            "open": sum(1 for c in conns if c["open"]),
            "round_trips": sum(c["round_trips"] for c in conns),
            "bytes_c2s": sum(c["bytes_c2s"] for c in conns),
            "bytes_s2c": sum(c["bytes_s2c"] for c in conns),
            "bytes": sum(c["bytes_c2s"] + c["bytes_s2c"] for c in conns),
            "errors": [c["error"] for c in conns if c["error"]],
        }

    def reset(self) -> None:
        """Forget closed connections; zero the counters of open ones."""
        with self._lock:
            self._conns = [c for c in self._conns if c.open]
            for c in self._conns:
                c.bytes_c2s = c.bytes_s2c = c.chunks_c2s = c.chunks_s2c = 0
                c.round_trips = 0
                c.last_c2s = c.last_s2c_delivery = None
                c.s2c_reads.clear()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait until no relayed connection is open; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while any(c.open for c in self._conns):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    # -- relaying -----------------------------------------------------------------

    def _clock(self) -> float:
        return time.monotonic()

    async def _handle(self, creader: asyncio.StreamReader,
                      cwriter: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        peer = cwriter.get_extra_info("peername")
        with self._lock:
            conn = ConnectionStats(id=self._next_id, client="%s:%s" % tuple(peer[:2]),
                                   opened=self._clock(), trace=[] if self.trace else None)
            self._next_id += 1
            self._conns.append(conn)
        _nodelay(cwriter)
        swriter = None
        try:
            with self._lock:
                refused, self._refuse = self._refuse > 0, max(0, self._refuse - 1)
            if refused:
                conn.error = "refused (refuse_first)"
                return
            try:
                sreader, swriter = await asyncio.open_connection(
                    self.target_host, self.target_port)
            except OSError as exc:
                with self._lock:
                    conn.error = "connect to %s:%s: %s" % (self.target_host,
                                                           self.target_port, exc)
                return
            _nodelay(swriter)
            await asyncio.gather(
                self._pipe(creader, swriter, conn, upstream=True),
                self._pipe(sreader, cwriter, conn, upstream=False),
            )
        except asyncio.CancelledError:
            pass
        finally:
            for w in (cwriter, swriter):
                if w is not None:
                    w.close()
            with self._idle:
                conn.closed = self._clock()
                snapshot = dataclasses.replace(conn)
                self._idle.notify_all()
            self._tasks.discard(task)
            if self.on_close is not None:
                try:
                    self.on_close(snapshot)
                except Exception:  # noqa: BLE001 - a reporting hook must not kill the relay
                    pass

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    conn: ConnectionStats, upstream: bool) -> None:
        """Read from one side, deliver to the other ``delay_s`` later, in order."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        delay = self.delay_s
        failed = []

        async def deliver() -> None:
            while True:
                due, data, candidate = await queue.get()
                wait = due - self._clock()
                if wait > 0:
                    await asyncio.sleep(wait)
                if candidate is not None:
                    with self._lock:
                        self._count_c2s_delivered(conn, due, candidate)
                if failed or self._silent.is_set():
                    continue  # drain the queue: the other side is gone, or silence
                try:
                    if data is None:
                        if writer.can_write_eof():
                            writer.write_eof()
                        return
                    writer.write(data)
                    if not upstream:
                        with self._lock:
                            conn.last_s2c_delivery = self._clock()
                            if conn.trace is not None:
                                conn.trace.append((conn.last_s2c_delivery, "deliver", len(data)))
                    await writer.drain()
                except (ConnectionError, OSError):
                    failed.append(True)
                    return

        delivering = loop.create_task(deliver())
        try:
            while True:
                try:
                    data = await reader.read(CHUNK)
                except (ConnectionError, OSError):
                    data = b""
                now = self._clock()
                if not data:
                    queue.put_nowait((now + delay, None, None))
                    break
                # A client chunk that may count: its index in the trace (-1
                # untraced), judged by the server's half as it is delivered.
                candidate = None
                what = "c2s" if upstream else "s2c"
                with self._lock:
                    if upstream:
                        if conn.last_c2s is None:
                            conn.round_trips += 1  # the first: the server's banner is no answer
                            what = "c2s+rt"
                        elif self._client_waited(conn):
                            candidate = -1 if conn.trace is None else len(conn.trace)
                        conn.last_c2s = now
                        conn.bytes_c2s += len(data)
                        conn.chunks_c2s += 1
                    else:
                        conn.s2c_reads.append(now)
                        conn.bytes_s2c += len(data)
                        conn.chunks_s2c += 1
                    if conn.trace is not None:
                        conn.trace.append((now, what, len(data)))
                queue.put_nowait((now + delay, data, candidate))
            await delivering
        finally:
            if not delivering.done():
                delivering.cancel()

    def _client_waited(self, conn: ConnectionStats) -> bool:
        """The client's half of the round trip rule (see the module docstring)
        for its next chunk: it was quiet for ``quiet_gap`` when server data
        reached it. Called with the lock held."""
        return (conn.last_s2c_delivery is not None
                and conn.last_s2c_delivery > conn.last_c2s
                and conn.last_s2c_delivery - conn.last_c2s >= self.quiet_gap)

    def _count_c2s_delivered(self, conn: ConnectionStats, due: float, candidate: int) -> None:
        """The server's half, as a candidate chunk reaches the server at ``due``:
        it counts when the server sent nothing in the ``quiet_gap`` before.
        ``candidate`` is the chunk's index in the trace (``-1`` untraced).
        Called with the lock held."""
        reads = conn.s2c_reads
        while reads and reads[0] <= due - self.quiet_gap:
            reads.popleft()
        if reads and reads[0] <= due:
            return  # the server was sending: nobody waited for this chunk
        conn.round_trips += 1
        if conn.trace is not None and candidate >= 0:
            t, _, n = conn.trace[candidate]
            conn.trace[candidate] = (t, "c2s+rt", n)


def _nodelay(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass


# -----------------------------------------------------------------------------


def _target(value: str):
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError("expected HOST:PORT, got %r" % value)
    return host.strip("[]"), int(port)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.delayproxy",
        description="Relay TCP with an added one-way delay in each direction; "
                    "report bytes and round trips per connection.")
    parser.add_argument("--listen", type=int, default=0,
                        help="port to listen on, on --bind (default: a free port)")
    parser.add_argument("--bind", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--target", type=_target, required=True, help="HOST:PORT to relay to")
    parser.add_argument("--delay-ms", type=float, default=0.0,
                        help="one-way delay added in each direction (RTT grows by twice this)")
    parser.add_argument("--quiet-gap-ms", type=float, default=None,
                        help="round trip quiet gap (default: 1.5 times the delay)")
    args = parser.parse_args(argv)

    def report(c: ConnectionStats) -> None:
        d = c.as_dict()
        print("conn %(id)d from %(client)s: %(round_trips)d round trips, "
              "%(bytes_c2s)d bytes up, %(bytes_s2c)d bytes down, %(duration).3fs" % d
              + (" (%s)" % d["error"] if d["error"] else ""), flush=True)

    # Ctrl-C (SIGINT) ends the relay even when it was started from a
    # background job, which inherits SIGINT ignored (Python then installs no
    # KeyboardInterrupt handler of its own).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    host, port = args.target
    proxy = DelayProxy(host, port, args.delay_ms / 1000.0, listen_host=args.bind,
                       listen_port=args.listen,
                       quiet_gap=None if args.quiet_gap_ms is None else args.quiet_gap_ms / 1000,
                       on_close=report)
    with proxy:
        print("relaying %s:%d -> %s:%d, +%g ms each way (quiet gap %g ms); Ctrl-C ends"
              % (args.bind, proxy.port, host, port, args.delay_ms, proxy.quiet_gap * 1000),
              flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    t = proxy.totals()
    print("total: %(connections)d connection(s), %(round_trips)d round trips, "
          "%(bytes_c2s)d bytes up, %(bytes_s2c)d bytes down" % t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
