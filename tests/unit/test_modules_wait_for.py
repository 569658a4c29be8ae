"""wait_for module: real sockets on loopback and real files in tmp dirs."""
import socket
import threading
import time

import pytest

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

wait_for = modules.get("wait_for")


def run(**args):
    return wait_for.run(args, ModuleContext())


class Server(object):
    """A loopback TCP server that sends ``banner`` to each client."""

    def __init__(self, banner=b""):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.banner = banner
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                if self.banner:
                    conn.sendall(self.banner)
            except OSError:
                pass
            conn.close()

    def close(self):
        self.sock.close()


@pytest.fixture
def server():
    servers = []

    def make(banner=b""):
        servers.append(Server(banner))
        return servers[-1]
    yield make
    for s in servers:
        s.close()


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_flags():
    assert wait_for.SUPPORTS_CHECK_MODE is False
    assert {"host", "port", "path", "search_regex", "timeout", "delay", "sleep",
            "connect_timeout", "msg", "exclude_hosts"} <= wait_for.OPTIONS


def test_port_started(server):
    srv = server()
    r = run(port=srv.port, timeout=5)
    assert r == {"changed": False, "state": "started", "port": srv.port, "search_regex": None,
                 "match_groups": [], "match_groupdict": {}, "path": None, "elapsed": 0}


def test_port_search_regex(server):
    srv = server(b"SSH-2.0-OpenSSH_9.2\r\n")
    r = run(port=str(srv.port), search_regex="OpenSSH", timeout=5)
    assert "failed" not in r and r["search_regex"] == "OpenSSH"
    r = run(port=srv.port, search_regex="nginx", timeout=1, sleep=0)
    assert r["failed"] is True
    assert r["msg"] == "Timeout when waiting for search string nginx in 127.0.0.1:%d" % srv.port


def test_port_timeout_message_and_custom_msg():
    port = _free_port()
    r = run(port=port, timeout=0)
    assert r["failed"] is True and r["msg"] == "Timeout when waiting for 127.0.0.1:%d" % port
    assert r["elapsed"] == 0
    r = run(port=port, timeout=0, msg="no server")
    assert r["msg"] == "no server"


def test_port_comes_up_later():
    port = _free_port()
    holder = {}

    def later():
        time.sleep(0.5)
        holder["srv"] = s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen(1)
    t = threading.Thread(target=later)
    t.start()
    try:
        r = run(port=port, timeout=10, sleep=1)
        assert "failed" not in r and r["elapsed"] >= 0
    finally:
        t.join()
        holder["srv"].close()


def test_port_stopped(server):
    port = _free_port()
    assert "failed" not in run(port=port, state="stopped", timeout=2)
    srv = server()
    r = run(port=srv.port, state="stopped", timeout=0)
    assert r["failed"] is True
    assert r["msg"] == "Timeout when waiting for 127.0.0.1:%d to stop." % srv.port


def test_path_present_with_match_groups(tmp_path):
    p = tmp_path / "log"
    p.write_text("starting\nlistening on port 8080 (pid=42)\n")
    r = run(path=str(p), search_regex=r"port (\d+) \(pid=(?P<pid>\d+)\)", timeout=2)
    assert "failed" not in r and r["path"] == str(p) and r["port"] is None
    assert r["match_groups"] == ["8080", "42"] and r["match_groupdict"] == {"pid": "42"}


def test_path_timeouts(tmp_path):
    p = tmp_path / "nothere"
    r = run(path=str(p), timeout=0)
    assert r["failed"] and r["msg"] == "Timeout when waiting for file %s" % p
    p.write_text("hello\n")
    r = run(path=str(p), search_regex="bye", timeout=0)
    assert r["msg"] == "Timeout when waiting for search string bye in %s" % p
    r = run(path=str(p), state="absent", timeout=0)
    assert r["msg"] == "Timeout when waiting for %s to be absent." % p


def test_path_appears_and_disappears(tmp_path):
    p = tmp_path / "flag"
    t = threading.Timer(0.3, p.write_text, args=("x",))
    t.start()
    r = run(path=str(p), state="present", timeout=5, sleep=0)
    t.join()
    assert "failed" not in r and r["state"] == "present"
    t = threading.Timer(0.3, p.unlink)
    t.start()
    r = run(path=str(p), state="absent", timeout=5, sleep=0)
    t.join()
    assert "failed" not in r and not p.exists()


def test_plain_timeout_sleeps(tmp_path):
    start = time.monotonic()
    r = run(timeout=1)
    assert "failed" not in r and r["elapsed"] == 1 and time.monotonic() - start >= 1


def test_refusals_and_errors(tmp_path):
    r = run(port=22, path="/tmp")
    assert r["msg"] == "port and path parameter can not both be passed to wait_for"
    assert r["elapsed"] == 0
    r = run(path="/tmp", state="stopped")
    assert r["msg"] == "state=stopped should only be used for checking a port in the wait_for module"
    r = run(port=22, exclude_hosts=["10.0.0.1"])
    assert r["msg"] == "exclude_hosts should only be with state=drained"
    r = run(port=22, state="drained")
    assert r["failed"] and "does not support state=drained" in r["msg"]
    r = run(path=str(tmp_path), search_regex="(")
    assert r["failed"] and r["msg"].startswith("Invalid regular expression:")
    r = run(port="eighty")
    assert r["failed"] and "unable to convert to int" in r["msg"]
