"""``ioc-adhoc`` and ``ioc-ssh`` over the real sshd (docs/ioc-run.md, "ioc-adhoc", "ioc-ssh").

Every inventory name is the session's sshd (with its own ``HostKeyAlias``);
an unreachable host is one whose ``ansible_port`` nothing listens on.
"""
from __future__ import annotations

import json
import os
import select
import shlex
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import List

import pytest

from tests.integration.test_via import OWNER

pytestmark = pytest.mark.integration


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def inventory(tmp_path: Path, sshd, text: str = "", down: str = "c", port: int = 0) -> Path:
    path = tmp_path / "hosts.ini"
    hosts = sshd.inventory_ini(["a", "b"])
    if down:
        hosts += sshd.inventory_ini([down]).replace(
            "ansible_port=%d" % sshd.port, "ansible_port=%d" % (port or closed_port()))
    path.write_text(hosts + text)
    return path


def adhoc(tmp_path: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ioc.adhoc", *args], cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, **kwargs)


def events(path: Path) -> List[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def forward(listen: socket.socket, port: int) -> None:
    """Accept on ``listen`` and relay each connection to ``port`` (a late sshd)."""
    def relay(a: socket.socket) -> None:
        b = socket.create_connection(("127.0.0.1", port))
        with a, b:
            while True:
                ready, _, _ = select.select([a, b], [], [], 30)
                if not ready:
                    return
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    (b if s is a else a).sendall(data)

    while True:
        try:
            conn, _ = listen.accept()
        except OSError:
            return
        threading.Thread(target=relay, args=(conn,), daemon=True).start()


def test_command_on_three_hosts_one_down_then_a_module_on_the_failed_one(tmp_path, sshd):
    port = closed_port()
    hosts = inventory(tmp_path, sshd, port=port)
    r = adhoc(tmp_path, "all", "-i", str(hosts), "-m", "shell", "-a",
              "echo out-?HOST; test ?HOST = a || echo err-{{ inventory_hostname }} >&2",
              "--events", str(tmp_path / "events.jsonl"))
    assert r.returncode == 4, r.stdout + r.stderr  # ansible's: a host was unreachable
    assert "a | CHANGED | rc=0 >>\nout-a\n" in r.stdout
    assert "b | CHANGED | rc=0 >>\nout-b\nerr-b\n" in r.stdout
    assert "c | UNREACHABLE! => {" in r.stdout and "Connection refused" in r.stdout
    assert "\033[" not in r.stdout  # no colours: stdout is not a terminal
    assert r.stdout.endswith("2 succeeded, 1 failed, 3 total\nfailed: c\n"
                             "(their names are in ioc-adhoc.failed: -l @ioc-adhoc.failed runs "
                             "on them alone)\n")
    assert (tmp_path / "ioc-adhoc.failed").read_text() == "c\n"
    calls = [e for e in events(tmp_path / "events.jsonl") if e["event"] == "transport"]
    assert [e["calls"] for e in calls] == [{"a": 1, "b": 1, "c": 0}]  # one round trip a host

    # c comes back; the next attempt, on the failed host alone, runs an Ansible module
    with socket.create_server(("127.0.0.1", port)) as listen:
        threading.Thread(target=forward, args=(listen, sshd.port), daemon=True).start()
        again = adhoc(tmp_path, "all", "-i", str(hosts), "-l", "@ioc-adhoc.failed",
                      "-m", "ansible.builtin.stat", "-a", "path=/etc")
    assert again.returncode == 0, again.stdout + again.stderr
    head, _, body = again.stdout.partition(" => ")
    assert head == "c | SUCCESS"
    assert json.loads(body[:body.rindex("}") + 1])["stat"]["isdir"] is True
    assert again.stdout.endswith("}\n1 succeeded, 0 failed, 1 total\n")
    assert not (tmp_path / "ioc-adhoc.failed").exists()  # no host failed: the list is gone


def test_push_pull_and_script(tmp_path, sshd):
    hosts = inventory(tmp_path, sshd, down="")
    (tmp_path / "local.txt").write_text("pushed\n")
    remote = tmp_path / "remote"
    remote.mkdir()
    r = adhoc(tmp_path, "all", "-i", str(hosts), "--push", "local.txt",
              "%s/?HOST.txt" % remote)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "a | CHANGED => {" in r.stdout and "2 succeeded, 0 failed, 2 total" in r.stdout
    assert sorted(os.listdir(remote)) == ["a.txt", "b.txt"]
    r = adhoc(tmp_path, "all", "-i", str(hosts), "--pull", "%s/?HOST.txt" % remote, "got")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "got/a/a.txt").read_text() == "pushed\n"
    assert (tmp_path / "got/b/b.txt").read_text() == "pushed\n"

    (tmp_path / "s.sh").write_text('#!/bin/sh\necho "script $1 $2"\n')
    r = adhoc(tmp_path, "all", "-i", str(hosts), "-o", "--script", "s.sh", "?HOST", "x")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "a | CHANGED | rc=0 | (stdout) script a x" in r.stdout
    assert "b | CHANGED | rc=0 | (stdout) script b x" in r.stdout


def test_retries_reach_a_host_that_comes_up_late(tmp_path, sshd):
    port = closed_port()
    hosts = inventory(tmp_path, sshd, down="late", port=port)
    proc = subprocess.Popen([sys.executable, "-m", "ioc.adhoc", "all", "-i", str(hosts),
                             "-a", "echo up-?HOST", "--retries", "2"], cwd=str(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    listen = None
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("retrying"):
                assert line.startswith("retrying 1 unreachable host in 1s (retry 1 of 2): late")
                listen = socket.create_server(("127.0.0.1", port))  # the host comes up
                threading.Thread(target=forward, args=(listen, sshd.port), daemon=True).start()
                break
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
        if listen is not None:
            listen.close()
    assert listen is not None, out
    assert proc.returncode == 0, out + err
    assert out.count("late | UNREACHABLE!") == 1 and "late | CHANGED | rc=0 >>\nup-late\n" in out
    assert out.endswith("3 succeeded, 0 failed, 3 total\n")

    # A connection lost while the command ran (its runner killed) is not retried.
    r = adhoc(tmp_path, "a", "-i", str(hosts), "-m", "shell", "-a", "kill -9 $PPID; sleep 5",
              "--retries", "2")
    assert r.returncode == 4, r.stdout + r.stderr
    assert r.stdout.count("a | UNREACHABLE!") == 1 and "while the task ran" in r.stdout
    assert "retrying" not in r.stderr


def ioc_ssh(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ioc.ssh", *args], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL, **kwargs)


def test_ioc_ssh_runs_a_command_passing_its_exit_code_and_through_via_hops(tmp_path, sshd):
    owner = tmp_path / "owner.py"
    owner.write_text(OWNER + ANCESTORS)
    hosts = tmp_path / "hosts.ini"
    hosts.write_text(sshd.inventory_ini(["a"]) + sshd.inventory_ini(["b"], "mitogen_via=a")
                     + sshd.inventory_ini(["c"], "mitogen_via=b"))
    r = ioc_ssh("-i", str(hosts), "a", "--", "echo", "on", "$SSH_CONNECTION;", "exit", "7")
    assert r.returncode == 7, r.stderr
    assert r.stdout.startswith("on 127.0.0.1 ")
    # Who holds c's ssh connection: an ssh client started on the hop b (inside
    # an sshd session), not one started here (its parent would be this process).
    r = ioc_ssh("-i", str(hosts), "c", "--",
                "%s %s $(echo $SSH_CONNECTION | cut -d' ' -f2); exit 3" % (sys.executable, owner))
    assert r.returncode == 3, r.stderr
    holder, ancestors = r.stdout.splitlines()
    assert holder.split()[2] == "ssh"
    assert "sshd" in ancestors.split() and str(os.getpid()) not in ancestors, r.stdout
    assert ioc_ssh("-i", str(hosts), "nosuch", "--", "true").returncode == 1


def test_ioc_ssh_gives_a_terminal_when_it_has_one(tmp_path, sshd):
    hosts = tmp_path / "hosts.ini"
    hosts.write_text(sshd.inventory_ini(["a"]) + sshd.inventory_ini(["b"], "mitogen_via=a"))
    assert ioc_ssh("-i", str(hosts), "b", "--", "tty").stdout == "not a tty\n"
    # script(1) runs it on a terminal: ssh -t at each hop, a pty at the end
    command = shlex.join([sys.executable, "-m", "ioc.ssh", "-i", str(hosts), "b", "--",
                          "tty; exit 4"])
    r = subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 4, r.stdout + r.stderr
    assert r.stdout.strip("\0\r\n^@").startswith("/dev/pts/"), r.stdout


#: After OWNER: the names of the ancestors of the process it found, on one line.
ANCESTORS = """
pid = ppid
names = []
while pid not in ("0", "1"):
    with open("/proc/%s/comm" % pid) as f:
        names.append(f.read().strip())
    with open("/proc/%s/stat" % pid) as f:
        pid = f.read().rsplit(")", 1)[1].split()[1]
print(" ".join(names))
"""
