"""benchmarks.delayproxy: delay each way, order, concurrency, exact counts."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from benchmarks.delayproxy import DelayProxy

ROOT = Path(__file__).resolve().parents[2]


class Server:
    """A threaded TCP server on 127.0.0.1; ``handler(conn)`` serves each connection."""

    def __init__(self, handler) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(256)
        self.port = self.sock.getsockname()[1]
        self.handler = handler
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            self.handler(conn)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.sock.close()


def echo(conn: socket.socket) -> None:
    while True:
        data = conn.recv(65536)
        if not data:
            return
        conn.sendall(data)


@pytest.fixture
def echo_server():
    server = Server(echo)
    yield server
    server.close()


def connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def recv_exactly(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise EOFError("closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return bytes(buf)


def ping_pong(port: int, turns: int, size: int = 16) -> list:
    """``turns`` request/response exchanges on one connection; their RTTs."""
    rtts = []
    with connect(port) as s:
        for i in range(turns):
            msg = (b"%08d" % i) * (size // 8)
            t0 = time.monotonic()
            s.sendall(msg)
            assert recv_exactly(s, len(msg)) == msg
            rtts.append(time.monotonic() - t0)
    return rtts


# -- delay --------------------------------------------------------------------


# Timing bounds: never early (the lower bounds are tight), and late only by
# scheduling noise (the upper bounds are loose: CI machines are shared).


def test_round_trip_time_grows_by_twice_the_delay(echo_server):
    with DelayProxy("127.0.0.1", echo_server.port, 0.05) as proxy:
        rtts = ping_pong(proxy.port, 7)
    assert min(rtts) >= 0.0995, rtts
    assert sorted(rtts)[3] < 0.13, rtts


def test_the_delay_is_applied_in_each_direction():
    """Timestamps on both ends (one clock): client->server and server->client each take ~delay."""
    arrivals, sends = [], []

    def handler(conn):
        data = recv_exactly(conn, 4)
        arrivals.append(time.monotonic())
        assert data == b"ping"
        time.sleep(0.2)
        sends.append(time.monotonic())
        conn.sendall(b"pong")
        conn.recv(1)

    server = Server(handler)
    try:
        with DelayProxy("127.0.0.1", server.port, 0.06) as proxy, connect(proxy.port) as s:
            t0 = time.monotonic()
            s.sendall(b"ping")
            assert recv_exactly(s, 4) == b"pong"
            t1 = time.monotonic()
    finally:
        server.close()
    up, down = arrivals[0] - t0, t1 - sends[0]
    assert 0.0595 <= up < 0.16, up
    assert 0.0595 <= down < 0.16, down


def test_zero_delay_relays_at_once(echo_server):
    with DelayProxy("127.0.0.1", echo_server.port, 0) as proxy:
        rtts = ping_pong(proxy.port, 20)
    assert sorted(rtts)[10] < 0.01


# -- order and bandwidth ------------------------------------------------------------


def test_bursts_arrive_in_order_and_complete(echo_server):
    """Many writes of varied sizes, some back to back, some spaced: the echo is the same stream."""
    sent = bytearray()
    with DelayProxy("127.0.0.1", echo_server.port, 0.02) as proxy, connect(proxy.port) as s:
        received = bytearray()

        def reader():
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return
                received.extend(chunk)

        t = threading.Thread(target=reader)
        t.start()
        for i in range(3000):
            msg = (b"<%d>" % i) * (1 + i % 37)
            sent += msg
            s.sendall(msg)
            if i % 500 == 0:
                time.sleep(0.005)
        s.shutdown(socket.SHUT_WR)  # the echo server closes after echoing everything
        t.join(10)
        assert not t.is_alive()
        proxy.wait_idle()
        stats = proxy.connections()[0]
    assert bytes(received) == bytes(sent)
    assert stats["bytes_c2s"] == stats["bytes_s2c"] == len(sent)


def test_bandwidth_is_not_throttled(echo_server):
    """8 MB each way through a 20 ms proxy in well under a second of transfer time."""
    payload = os.urandom(8 << 20)
    with DelayProxy("127.0.0.1", echo_server.port, 0.02) as proxy, connect(proxy.port) as s:
        got = bytearray()

        def reader():
            while len(got) < len(payload):
                chunk = s.recv(1 << 20)
                if not chunk:
                    return
                got.extend(chunk)

        t = threading.Thread(target=reader)
        t0 = time.monotonic()
        t.start()
        s.sendall(payload)
        t.join(30)
        elapsed = time.monotonic() - t0
    assert bytes(got) == payload
    assert elapsed < 3.0


# -- concurrency ---------------------------------------------------------------------


def test_many_connections_at_once(echo_server):
    """50 clients, 5 turns each, concurrently: the time of one client, not fifty."""
    with DelayProxy("127.0.0.1", echo_server.port, 0.05) as proxy:
        t0 = time.monotonic()
        with ThreadPoolExecutor(50) as pool:
            results = list(pool.map(lambda _: ping_pong(proxy.port, 5, size=24), range(50)))
        elapsed = time.monotonic() - t0
        assert proxy.wait_idle()
        conns = proxy.connections()
        totals = proxy.totals()
    assert len(results) == 50
    assert elapsed < 3.0, elapsed  # sequentially it would be 50 * 5 * 0.1 s
    assert len(conns) == 50
    assert all(c["round_trips"] == 5 and c["bytes_c2s"] == c["bytes_s2c"] == 5 * 24
               for c in conns), conns
    assert totals["connections"] == 50 and totals["open"] == 0
    assert totals["round_trips"] == 250
    assert totals["bytes"] == 2 * 50 * 5 * 24


# -- round trips and bytes --------------------------------------------------------------


@pytest.mark.parametrize("delay, gap", [(0.01, None), (0.0, None), (0.0, 0.0), (0.03, 0.001)])
def test_ping_pong_of_n_turns_counts_n_round_trips(echo_server, delay, gap):
    with DelayProxy("127.0.0.1", echo_server.port, delay, quiet_gap=gap) as proxy:
        ping_pong(proxy.port, 17)
        assert proxy.wait_idle()
        (conn,) = proxy.connections()
    assert conn["round_trips"] == 17
    assert conn["bytes_c2s"] == conn["bytes_s2c"] == 17 * 16


def test_byte_counts_are_exact_each_way():
    def handler(conn):  # answers n bytes with 3n + 1
        while True:
            data = conn.recv(65536)
            if not data:
                return
            conn.sendall(data * 3 + b"!")

    server = Server(handler)
    try:
        with DelayProxy("127.0.0.1", server.port, 0.005) as proxy:
            with connect(proxy.port) as s:
                for n in (1, 10, 1000, 5000):
                    s.sendall(b"x" * n)
                    recv_exactly(s, 3 * n + 1)
            assert proxy.wait_idle()
            (conn,) = proxy.connections()
    finally:
        server.close()
    assert conn["bytes_c2s"] == 6011
    assert conn["bytes_s2c"] == 3 * 6011 + 4
    assert conn["round_trips"] == 4


def relayed(handler, client, delay: float, **proxy_options) -> dict:
    """The statistics of the one connection ``client(socket)`` makes through a
    proxy (``delay``, ``proxy_options``) to a server running ``handler``."""
    server = Server(handler)
    try:
        with DelayProxy("127.0.0.1", server.port, delay, **proxy_options) as proxy:
            with connect(proxy.port) as s:
                client(s)
            assert proxy.wait_idle()
            (conn,) = proxy.connections()
    finally:
        server.close()
    return conn


def test_a_streamed_answer_is_one_round_trip():
    """One request, the server streams 30 results over time: one turn (then one for 'bye')."""
    def handler(conn):
        recv_exactly(conn, 3)
        for i in range(30):
            conn.sendall(b"result %02d\n" % i)
            time.sleep(0.003)
        conn.sendall(b"end\n")
        recv_exactly(conn, 3)

    def client(s):
        s.sendall(b"go!")
        recv_exactly(s, 30 * 10 + 4)
        s.sendall(b"bye")
        s.recv(1)

    conn = relayed(handler, client, 0.02)
    assert conn["round_trips"] == 2


def test_messages_sent_into_a_stream_that_never_paused_are_no_turns():
    """The server streams 40 results, 20 ms apart, and never waits; the client
    sends a small message after every 10th it receives (as ssh sends a window
    adjust every ~100 KB of a long result stream). The client was quiet long
    enough before each, but the server was still sending when each reached it:
    nobody waited, so the stream is one turn and the final request another."""
    def handler(conn):
        recv_exactly(conn, 3)
        for i in range(40):
            conn.sendall(b"result %02d\n" % i)
            time.sleep(0.02)
        conn.sendall(b"end\n")
        recv_exactly(conn, 3 * 3 + 3)  # the three asides, then "bye"

    def client(s):
        s.sendall(b"go!")
        for i in range(1, 4):
            recv_exactly(s, 10 * 10)
            s.sendall(b"adj")
        recv_exactly(s, 10 * 10 + 4)
        s.sendall(b"bye")
        s.recv(1)

    conn = relayed(handler, client, 0.02, trace=True)
    assert [w for _, w, _ in conn["trace"] if w.startswith("c2s")] == [
        "c2s+rt", "c2s", "c2s", "c2s", "c2s+rt"]
    assert conn["round_trips"] == 2


def test_an_upload_with_interleaved_acks_is_one_round_trip():
    """The client streams 60 chunks, 2 ms apart; the server acks each one as it comes.

    The acks reach the client while it is still sending: it never waited, so the
    upload is one turn; the final request after the upload's answer is a second.
    """
    def handler(conn):
        for _ in range(60):
            recv_exactly(conn, 100)
            conn.sendall(b"a")
        conn.sendall(b"done")
        recv_exactly(conn, 3)

    def client(s):
        for _ in range(60):
            s.sendall(b"u" * 100)
            time.sleep(0.002)
        recv_exactly(s, 64)
        s.sendall(b"bye")
        s.recv(1)

    conn = relayed(handler, client, 0.02)
    assert conn["round_trips"] == 2


def test_data_the_client_never_waited_for_is_no_turn():
    """Both sides talk at once (like SSH banners): the client's second write is not a turn."""
    def handler(conn):
        conn.sendall(b"SERVER-HELLO")
        recv_exactly(conn, 24)

    def client(s):
        s.sendall(b"CLIENT-HELLO")
        time.sleep(0.02)  # the server's hello is still in flight (50 ms)
        s.sendall(b"CLIENT-MORE!")
        recv_exactly(s, 12)
        s.recv(1)

    conn = relayed(handler, client, 0.05, quiet_gap=0)
    assert conn["round_trips"] == 1


# -- bookkeeping ------------------------------------------------------------------------


def test_reset_forgets_closed_connections_and_zeroes_open_ones(echo_server):
    with DelayProxy("127.0.0.1", echo_server.port, 0.005) as proxy:
        ping_pong(proxy.port, 3)
        assert proxy.wait_idle()
        with connect(proxy.port) as s:
            s.sendall(b"abcd")
            recv_exactly(s, 4)
            assert proxy.totals()["connections"] == 2
            proxy.reset()
            t = proxy.totals()
            assert (t["connections"], t["open"], t["bytes"], t["round_trips"]) == (1, 1, 0, 0)
            s.sendall(b"efgh")
            recv_exactly(s, 4)
        assert proxy.wait_idle()
        t = proxy.totals()
    assert (t["connections"], t["open"], t["round_trips"], t["bytes_c2s"]) == (1, 0, 1, 4)


def test_an_unreachable_target_closes_the_client_and_is_reported():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead_port = probe.getsockname()[1]
    with DelayProxy("127.0.0.1", dead_port, 0.0) as proxy:
        with connect(proxy.port) as s:
            assert s.recv(1) == b""
        assert proxy.wait_idle()
        (conn,) = proxy.connections()
    assert "connect to 127.0.0.1:%d" % dead_port in conn["error"]


def test_stop_cuts_open_connections(echo_server):
    proxy = DelayProxy("127.0.0.1", echo_server.port, 0.0).start()
    s = connect(proxy.port)
    s.sendall(b"x")
    recv_exactly(s, 1)
    proxy.stop()
    assert s.recv(1) == b""
    s.close()
    assert proxy.totals()["open"] == 0


def test_command_line(echo_server):
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.delayproxy", "--target",
         "127.0.0.1:%d" % echo_server.port, "--delay-ms", "10"],
        cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        assert first.startswith("relaying 127.0.0.1:"), first + proc.stderr.read()
        port = int(first.split()[1].rsplit(":", 1)[1])
        ping_pong(port, 4)
        line = proc.stdout.readline()
        assert "4 round trips, 64 bytes up, 64 bytes down" in line, line
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert "total: 1 connection(s), 4 round trips" in out
