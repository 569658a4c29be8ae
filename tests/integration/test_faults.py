"""Faults injected against the real sshd: what the user reads, and what is left behind.

Both front ends run the same playbooks: ``ioc-run`` and ``ansible-playbook``
with the ``mitogen_batch`` strategy (ansible-core 2.21). The controller runs
in a session of its own, so that a signal to its process group is what a
Ctrl-C in a terminal sends, and a signal to its pid alone is ``kill PID``.

"Left behind" is read from ``/proc``: every process descending from the test
sshd (runners, their ``become`` children, the task's own processes) and
every ``ssh`` client of the controller must be gone shortly after the run
ends, and each task process the play recorded in a pid file must be gone.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Dict, FrozenSet, List, Optional

import pytest

from benchmarks.delayproxy import DelayProxy
from tests.conformance.test_conformance import ANSIBLE_CORE, ansible_python

ROOT = Path(__file__).resolve().parents[2]
FRONTS = ("ioc-run", "mitogen_batch")
pytestmark = pytest.mark.integration

#: How long after the controller ends nothing of the run may remain.
SETTLE = 2.0


def _ppid(pid: int) -> Optional[int]:
    try:
        with open("/proc/%d/stat" % pid) as handle:
            stat = handle.read()
    except OSError:
        return None
    if stat[stat.rindex(")") + 2] == "Z":
        return None  # a zombie holds nothing
    return int(stat[stat.rindex(")") + 2:].split()[1])


def descendants(root: int) -> List[int]:
    """Live processes under ``root`` (not ``root`` itself)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid, seen = int(entry), 0
        parent = _ppid(pid)
        while parent not in (None, 0, 1) and seen < 64:
            if parent == root:
                found.append(pid)
                break
            parent, seen = _ppid(parent), seen + 1
    return found


def alive(pid: int) -> bool:
    return _ppid(pid) is not None


def settled(check, timeout: float = SETTLE) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


def sessions_left(sshd, before: FrozenSet[int] = frozenset()) -> List[str]:
    """What still runs under the test sshd (its sessions, runners, task processes),
    leaving out what ran there before this test (``before``: the sshd is shared
    by the test files of one worker, and a black-holed session lingers)."""
    return [cmdline(pid)[:120] for pid in descendants(sshd.process.pid)
            if alive(pid) and pid not in before]


def under(sshd) -> FrozenSet[int]:
    return frozenset(descendants(sshd.process.pid))


class Controller:
    """One run of a front end, started in its own session so it can be signalled."""

    def __init__(self, front: str, tmp_path: Path, playbook: str, inventory: str,
                 args: List[str] = (), env: Optional[Dict[str, str]] = None) -> None:
        self.tmp = tmp_path
        book = tmp_path / "play.yml"
        book.write_text(textwrap.dedent(playbook))
        hosts = tmp_path / "hosts.ini"
        hosts.write_text(inventory)
        environ = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
        environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT),
                                                              environ.get("PYTHONPATH")]))
        if front == "ioc-run":
            argv = [sys.executable, "-m", "ioc", str(book), "-i", str(hosts)]
        else:
            python = ansible_python(ANSIBLE_CORE)
            argv = [python, os.path.join(os.path.dirname(python), "ansible-playbook"),
                    "-i", str(hosts), str(book)]
            environ.update(ANSIBLE_STRATEGY_PLUGINS=str(ROOT / "strategy_plugin"),
                       ANSIBLE_STRATEGY="mitogen_batch", ANSIBLE_HOST_KEY_CHECKING="False",
                       ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="False",
                       ANSIBLE_DEPRECATION_WARNINGS="False")
        environ.update(env or {})
        self.proc = subprocess.Popen(argv + list(args), cwd=str(tmp_path), env=environ,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.stdout = self.stderr = ""

    def pid_file(self, name: str, timeout: float = 120) -> int:
        """The pid a task wrote to ``name`` in the run's directory, once it is there."""
        path = self.tmp / name
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = path.read_text().strip() if path.exists() else ""
            if text.endswith("."):
                return int(text[:-1])
            assert self.proc.poll() is None, self.finish()
            time.sleep(0.05)
        raise AssertionError("no %s after %ss: %s" % (name, timeout, self.finish()))

    def finish(self, timeout: float = 120) -> str:
        self.stdout, self.stderr = self.proc.communicate(timeout=timeout)
        return self.stdout + self.stderr

    @property
    def rc(self) -> int:
        return self.proc.returncode

    def recap(self, host: str) -> Dict[str, int]:
        line = re.search(r"^%s\s+:(.*)$" % re.escape(host), self.stdout, re.M)
        assert line, self.stdout
        return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line.group(1))}


# -- a runner lost in the middle of a batch ------------------------------------

def kill_runner(front: str, tmp_path: Path, playbook: str, sshd) -> Controller:
    """Run ``playbook`` on hosts a and b; SIGKILL the runner whose pid it wrote to runner.pid."""
    run = Controller(front, tmp_path, playbook.format(tmp=tmp_path), sshd.inventory_ini(["a", "b"]))
    os.kill(run.pid_file("runner.pid"), signal.SIGKILL)
    return run


KILLED_MID_TASK = """
- hosts: all
  gather_facts: false
  tasks:
    - debug: msg=one
    - name: the runner of b is killed while this runs
      shell: "echo $PPID. > {tmp}/runner.pid; sleep 20"
      when: inventory_hostname == 'b'
    - debug: msg=three
"""


@pytest.mark.parametrize("front", FRONTS)
def test_a_runner_killed_mid_task_makes_its_host_unreachable(front, sshd, tmp_path):
    before = under(sshd)
    run = kill_runner(front, tmp_path, KILLED_MID_TASK, sshd)
    out = run.finish()
    assert run.rc == 4, out
    assert re.search(r"^fatal: \[b\]: UNREACHABLE! => .*Lost the connection to the host "
                     r"\(ssh to root@127\.0\.0\.1 port %d\) while the task ran: its result and "
                     r"those after it are unknown" % sshd.port, run.stdout, re.M), out
    # a connection failure is an error Ansible shows as such, with the task's origin
    # (worded as Ansible's ssh connection words a cut one: not pipelining here)
    assert re.search(r"^\[ERROR\]: Task failed: Failed to connect to the host via ssh: "
                     r"Lost the connection to the host .*\n"
                     r"Origin: .*/play\.yml:6:7$", run.stdout, re.M), out
    assert "Traceback" not in out and "ioc controller error" not in out, out
    # the other host goes on; b leaves the play
    assert re.search(r'TASK \[debug\] \*+\nok: \[a\] => \{\n    "msg": "three"\n\}\n\nPLAY RECAP',
                     run.stdout), run.stdout
    assert run.recap("a") == dict(ok=2, changed=0, unreachable=0, failed=0, skipped=1,
                                  rescued=0, ignored=0)
    assert run.recap("b") == dict(ok=1, changed=0, unreachable=1, failed=0, skipped=0,
                                  rescued=0, ignored=0)
    assert settled(lambda: not sessions_left(sshd, before)), sessions_left(sshd, before)


# (b's runner pid is handed to the test only once the controller step runs,
# after b's batch has reported: a kill as soon as the shell wrote it could
# come before the runner sent the shell's result, on a loaded machine)
KILLED_BETWEEN_BATCHES = """
- hosts: all
  gather_facts: false
  tasks:
    - shell: "echo $PPID. > {tmp}/runner.pid.next"
      when: inventory_hostname == 'b'
    - name: a controller step, while which b's runner is killed
      command: "sh -c 'mv {tmp}/runner.pid.next {tmp}/runner.pid; while [ -e {tmp}/runner.pid ]; do sleep 0.1; done'"
      delegate_to: localhost
      run_once: true
    - debug: msg=after
"""


def test_a_runner_killed_between_batches_is_replaced_by_a_new_connection(sshd, tmp_path):
    # Linear connects for each task: a host whose runner went away while it
    # had nothing to do is not unreachable if it can be reached again (a host
    # that cannot: tests/conformance, dead_midplay_*).
    run = kill_runner("ioc-run", tmp_path, KILLED_BETWEEN_BATCHES, sshd)
    (tmp_path / "runner.pid").unlink()
    out = run.finish()
    assert run.rc == 0, out
    assert re.search(r'TASK \[debug\] \*+\nok: \[a\] => \{\n    "msg": "after"\n\}\n'
                     r'ok: \[b\] => \{\n    "msg": "after"\n\}', run.stdout), out
    assert "UNREACHABLE" not in out and "Traceback" not in out, out
    assert run.recap("b") == dict(ok=2, changed=1, unreachable=0, failed=0, skipped=0,
                                  rescued=0, ignored=0), run.stdout


IGNORED = """
- hosts: all
  gather_facts: false
  tasks:
    - shell: "echo $PPID. > {tmp}/runner.pid; sleep 20"
      when: inventory_hostname == 'b'
      ignore_unreachable: true
    - debug: msg=after
"""


def test_ignore_unreachable_applies_to_a_lost_runner(sshd, tmp_path):
    run = kill_runner("ioc-run", tmp_path, IGNORED, sshd)
    out = run.finish()
    assert "fatal: [b]: UNREACHABLE!" in run.stdout and "...ignoring" in run.stdout, out
    assert run.recap("b")["unreachable"] == 0, run.stdout


# -- the controller interrupted --------------------------------------------------

LONG_TASK = """
- hosts: all
  gather_facts: false
  tasks:
    - name: a task whose process ignores SIGTERM
      shell: "trap '' TERM; echo $$. > {tmp}/{{{{ inventory_hostname }}}}.pid; sleep 60; sleep 60"
"""


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm", "sighup"])
@pytest.mark.parametrize("front", FRONTS)
def test_an_interrupted_controller_leaves_nothing_running(front, how, sshd, tmp_path):
    before = under(sshd)
    run = Controller(front, tmp_path, LONG_TASK.format(tmp=tmp_path),
                     sshd.inventory_ini(["a", "b"]))
    tasks = [run.pid_file("a.pid"), run.pid_file("b.pid")]
    assert all(alive(pid) for pid in tasks)
    # the controller's own children: ssh clients, and mitogen_batch's dispatcher
    local = descendants(run.proc.pid)
    assert any("ssh" in cmdline(pid) for pid in local), [cmdline(pid) for pid in local]
    sockets = [Path(arg) for pid in local for arg in cmdline(pid).split()
               if arg.endswith("runner.sock")]
    assert bool(sockets) == (front == "mitogen_batch")
    if how == "ctrl-c":  # what a terminal sends: the whole foreground process group
        os.killpg(run.proc.pid, signal.SIGINT)
    else:
        os.kill(run.proc.pid, signal.SIGTERM if how == "sigterm" else signal.SIGHUP)
    out = run.finish(timeout=30)
    if how == "ctrl-c":
        assert run.rc == 99, out  # ansible-playbook's code for an interrupted run
        assert out.count("User interrupted execution") == 1, out
        assert "[ERROR]: User interrupted execution" in out
        assert "Traceback" not in out, out
    else:  # as ansible-playbook: the signal's default action
        assert run.rc == -(signal.SIGTERM if how == "sigterm" else signal.SIGHUP), out
    assert settled(lambda: not any(alive(pid) for pid in tasks)), \
        "task processes still running: %s" % [p for p in tasks if alive(p)]
    assert settled(lambda: not sessions_left(sshd, before)), sessions_left(sshd, before)
    assert settled(lambda: not any(alive(pid) for pid in local)), \
        [cmdline(pid) for pid in local if alive(pid)]
    assert not any(path.parent.exists() for path in sockets), sockets


def cmdline(pid: int) -> str:
    try:
        return Path("/proc/%d/cmdline" % pid).read_text().replace("\0", " ")
    except OSError:
        return ""


# -- secrets at every verbosity ----------------------------------------------------

SECRET = "planted-secret-7c1f"
SECRETS = """
- hosts: all
  gather_facts: false
  vars:
    token: "%s"
  tasks:
    - name: a no_log command that carries the secret
      command: "echo {{ token }}"
      no_log: true
    - name: a no_log copy of it
      copy:
        content: "{{ token }}"
        dest: "{tmp}/copied"
      no_log: true
""" % SECRET


@pytest.mark.parametrize("front", FRONTS)
def test_no_secret_in_any_stream_at_vvvv(front, sshd, tmp_path):
    run = Controller(front, tmp_path, SECRETS.replace("{tmp}", str(tmp_path)),
                     sshd.inventory_ini(["a"]), args=["-vvvv"])
    out = run.finish()
    assert run.rc == 0, out
    assert (tmp_path / "copied").read_text() == SECRET  # the task did receive it
    assert "the output has been hidden" in run.stdout, out
    assert SECRET not in out, [line for line in out.splitlines() if SECRET in line][:5]


# -- a network that goes silent ------------------------------------------------------

SILENCED = """
- hosts: all
  gather_facts: false
  tasks:
    - debug: msg=one
    - name: b's network goes silent while this runs
      shell: "echo $$. > {tmp}/{{{{ inventory_hostname }}}}.pid; sleep 30"
      when: inventory_hostname == 'b'
    - debug: msg=three
"""


@pytest.mark.parametrize("front", FRONTS)
def test_a_silent_network_is_noticed_at_both_ends_within_the_keepalive_bound(
        front, sshd, tmp_path):
    before = under(sshd)
    with DelayProxy(sshd.host, sshd.port) as proxy:
        inventory = sshd.inventory_ini(["a"]) + sshd.inventory_ini(["b"]).replace(
            "ansible_port=%d" % sshd.port, "ansible_port=%d" % proxy.port)
        run = Controller(front, tmp_path, SILENCED.format(tmp=tmp_path), inventory,
                         env={"IOC_KEEPALIVE_INTERVAL": "1", "IOC_KEEPALIVE_COUNT": "2"})
        task = run.pid_file("b.pid")
        proxy.black_hole()
        silenced = time.monotonic()
        out = run.finish(timeout=60)
        noticed = time.monotonic() - silenced
        # the controller: ssh's probes (1 s x 2) went unanswered
        assert run.rc == 4, out
        assert noticed < 10, "the controller took %.1f s to give up on b" % noticed
        assert re.search(r"^fatal: \[b\]: UNREACHABLE! => .*Lost the connection to the host "
                         r".* while the task ran: its result and those after it are unknown",
                         run.stdout, re.M), out
        assert "Traceback" not in out, out
        assert run.recap("a")["ok"] == 2 and run.recap("b")["unreachable"] == 1, run.stdout
        # the runner: no heartbeat for 1 s x (2 + 1): it ends itself and the task.
        # (sshd's own session process stays until TCP gives up on the silent
        # peer: sshd's business, it runs nothing of the play's.)
        ours = lambda: [p for p in sessions_left(sshd, before)  # noqa: E731
                        if not p.startswith("sshd: ")]
        assert settled(lambda: not alive(task), timeout=10), "b's task still runs"
        assert settled(lambda: not ours(), timeout=10), ours()


# -- bad input: refused before any host is touched, or failed clearly ------------------

def _ioc_run(tmp_path: Path, playbook: str, *args: str, inventory: Optional[str] = None):
    (tmp_path / "play.yml").write_text(textwrap.dedent(playbook))
    argv = [sys.executable, "-m", "ioc", "play.yml", *args]
    if inventory is not None:
        (tmp_path / "hosts.ini").write_text(inventory)
        argv += ["-i", "hosts.ini"]
    return subprocess.run(argv, cwd=str(tmp_path), capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


TEMPLATED_HOSTS = """
- hosts: "{{ target }}"
  gather_facts: false
  tasks:
    - debug: msg=ran
"""


def test_templated_hosts_are_templated_and_an_undefined_one_stops_the_run(tmp_path):
    ran = _ioc_run(tmp_path, TEMPLATED_HOSTS, "-e", "target=localhost")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "PLAY [localhost] ***" in ran.stdout and '"msg": "ran"' in ran.stdout, ran.stdout
    undefined = _ioc_run(tmp_path, TEMPLATED_HOSTS)
    assert undefined.returncode == 4, undefined.stdout + undefined.stderr
    # as ansible-playbook: the message, then the hosts value's origin and excerpt
    assert undefined.stderr.startswith(
        "[ERROR]: Error processing keyword 'name': 'target' is undefined\n"
        "Origin: %s:2:10\n\n" % (tmp_path / "play.yml")), undefined.stderr
    assert "PLAY [" not in undefined.stdout


def test_a_broken_inventory_section_is_an_error_before_any_host_is_touched(tmp_path):
    ran = _ioc_run(tmp_path, "- hosts: all\n  tasks: [{debug: msg=hi}]\n",
                   inventory="[lab\nlocalhost ansible_connection=local\n")
    assert ran.returncode == 4, ran.stdout + ran.stderr
    assert ran.stderr.startswith("[ERROR]: Invalid section entry: '[lab'"), ran.stderr
    assert "\nOrigin: %s:1\n" % (tmp_path / "hosts.ini") in ran.stderr, ran.stderr
    assert "PLAY [" not in ran.stdout


def test_an_include_that_includes_itself_fails_its_host_clearly_under_mitogen_batch(tmp_path):
    (tmp_path / "loop.yml").write_text("- include_tasks: loop.yml\n")
    run = Controller("mitogen_batch", tmp_path, """
        - hosts: localhost
          gather_facts: false
          tasks:
            - include_tasks: loop.yml
        """, "localhost ansible_connection=local ansible_python_interpreter=%s\n"
             % ansible_python(ANSIBLE_CORE))
    out = run.finish(timeout=300)
    assert run.rc == 2, out
    assert re.search(r"^fatal: \[localhost\]: FAILED! => .*loop\.yml:1 is nested 100 blocks and "
                     r"includes deep \(at most 100\): an include that includes itself", run.stdout,
                     re.M), out[-3000:]
    assert "ioc controller error" not in out and "Traceback" not in out, out[-3000:]


@pytest.mark.parametrize("front", FRONTS)
def test_an_include_that_cannot_be_loaded_at_the_end_of_the_play_fails_the_run(front, tmp_path):
    # linear: the host fails at the inner include and ansible-playbook exits 2
    (tmp_path / "inner.yml").write_text('- include_tasks: "{{ \'missing\' }}.yml"\n')
    run = Controller(front, tmp_path, """
        - hosts: localhost
          gather_facts: false
          tasks:
            - include_tasks: inner.yml
        """, "localhost ansible_connection=local ansible_python_interpreter=%s\n"
             % (sys.executable if front == "ioc-run" else ansible_python(ANSIBLE_CORE)))
    out = run.finish()
    assert re.search(r"^fatal: \[localhost\]: FAILED! => .*missing\.yml", run.stdout, re.M), out
    assert run.recap("localhost")["failed"] == 1, out
    assert run.rc == 2, out


# -- become to the user one already is ------------------------------------------------

SAME_USER = """
- hosts: all
  gather_facts: false
  become: true
  become_user: {user}
  become_exe: /nonexistent/sudo
  tasks:
    - command: id -un
      register: who
    - debug: var=who.stdout
"""


@pytest.mark.parametrize("front", FRONTS)
def test_become_to_the_connections_own_user_is_skipped_as_ansible_skips_it(front, sshd, tmp_path):
    # ansible_user=root, become_user=root: no sudo runs (the one named does not exist)
    run = Controller(front, tmp_path, SAME_USER.format(user=sshd.user),
                     sshd.inventory_ini(["a"]))
    out = run.finish()
    assert run.rc == 0, out
    assert '"who.stdout": "%s"' % sshd.user in run.stdout, out
    # become_allow_same_user: escalate anyway, and fail as Ansible fails without that sudo
    allowed = Controller(front, tmp_path, SAME_USER.format(user=sshd.user),
                         sshd.inventory_ini(["a"]),
                         env={"ANSIBLE_BECOME_ALLOW_SAME_USER": "true"})
    out = allowed.finish()
    assert allowed.rc == 2, out
    assert re.search(r"^fatal: \[a\]: FAILED! => ", allowed.stdout, re.M), out


# -- large files -----------------------------------------------------------------------

BIG_COPY = """
- hosts: all
  gather_facts: false
  tasks:
    - copy: src=big.bin dest={dest}/{{{{ inventory_hostname }}}}.bin
"""


def _sent(events: Path) -> Dict[str, int]:
    import json
    for line in events.read_text().splitlines():
        event = json.loads(line)
        if event["event"] == "transport":
            return event["sent"]
    raise AssertionError("no transport event")


def _controller_peak_kb(argv: List[str], cwd: Path) -> "tuple[int, str]":
    """Run ``argv``; its exit status and its own peak RSS (KiB), from wait4."""
    proc = subprocess.Popen(argv, cwd=str(cwd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    out = proc.stdout.read().decode()
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, out
    return usage.ru_maxrss, out


def test_a_large_copy_streams_once_with_bounded_memory_and_not_again_when_unchanged(
        sshd, tmp_path):
    size = 24 * 2 ** 20
    (tmp_path / "big.bin").write_bytes(os.urandom(size))
    dest = tmp_path / "dest"
    dest.mkdir()
    hosts = ["h1", "h2", "h3", "h4"]
    (tmp_path / "hosts.ini").write_text(sshd.inventory_ini(hosts))
    (tmp_path / "play.yml").write_text(BIG_COPY.format(dest=dest))
    argv = [sys.executable, "-m", "ioc", "play.yml", "-i", "hosts.ini", "--events"]
    peak, out = _controller_peak_kb(argv + ["first.jsonl"], tmp_path)
    assert out.count("changed: [h") == 4, out
    for host in hosts:
        assert (dest / ("%s.bin" % host)).read_bytes() == (tmp_path / "big.bin").read_bytes()
    # each host received the file once
    assert all(size <= sent < size + 2 ** 20 for sent in _sent(tmp_path / "first.jsonl").values())
    # unchanged: the digests match on the targets and nothing is sent again
    idle, out = _controller_peak_kb(argv + ["second.jsonl"], tmp_path)
    assert out.count("ok: [h") == 4 and "changed: [" not in out, out
    assert all(sent < 64 * 1024 for sent in _sent(tmp_path / "second.jsonl").values())
    # the controller never held the file: sending 4 x 24 MiB costs less memory
    # than one copy of it over the same run sending nothing
    assert peak - idle < size // 1024, "controller peak %d KiB sending, %d KiB not" % (peak, idle)
    # check mode on a changed file: reported changed, nothing sent, nothing written
    (dest / "h1.bin").write_bytes(b"old")
    _peak, out = _controller_peak_kb(argv + ["check.jsonl", "--check", "--diff"], tmp_path)
    assert "changed: [h1]" in out, out
    assert (dest / "h1.bin").read_bytes() == b"old"
    assert _sent(tmp_path / "check.jsonl")["h1"] < 64 * 1024


def test_a_copy_cut_mid_transfer_leaves_the_destination_and_its_directory_untouched(
        sshd, tmp_path):
    (tmp_path / "big.bin").write_bytes(os.urandom(32 * 2 ** 20))
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "a.bin").write_bytes(b"the old content")
    with DelayProxy(sshd.host, sshd.port, 0.05) as proxy:  # slow enough to cut it midway
        inventory = sshd.inventory_ini(["a"]).replace("ansible_port=%d" % sshd.port,
                                                      "ansible_port=%d" % proxy.port)
        run = Controller("ioc-run", tmp_path, BIG_COPY.format(dest=dest), inventory)
        deadline = time.monotonic() + 120
        runner = None
        while runner is None and time.monotonic() < deadline:
            runner = next((pid for pid in descendants(sshd.process.pid)
                           if "mitogen:ioc" in cmdline(pid)), None)
            time.sleep(0.05)
        assert runner is not None, run.finish()
        while not proxy.totals()["bytes_c2s"] > 2 * 2 ** 20 and time.monotonic() < deadline:
            time.sleep(0.05)  # the transfer is under way
        os.kill(runner, signal.SIGKILL)
        out = run.finish()
    assert run.rc == 4 and "fatal: [a]: UNREACHABLE!" in run.stdout, out
    assert (dest / "a.bin").read_bytes() == b"the old content"
    assert sorted(p.name for p in dest.iterdir()) == ["a.bin"]  # no temp file beside it


def test_a_silent_port_is_unreachable_within_the_connect_timeout(sshd, tmp_path):
    import socket
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts connections in the kernel, never says a word
    try:
        inventory = sshd.inventory_ini(["a"]) + sshd.inventory_ini(["mute"]).replace(
            "ansible_port=%d" % sshd.port,
            "ansible_port=%d ansible_timeout=3" % silent.getsockname()[1])
        started = time.monotonic()
        run = Controller("ioc-run", tmp_path, """
            - hosts: all
              gather_facts: false
              tasks:
                - debug: msg=one
                - command: "true"
            """, inventory)
        out = run.finish()
        took = time.monotonic() - started
    finally:
        silent.close()
    assert run.rc == 4, out
    assert re.search(r"^fatal: \[mute\]: UNREACHABLE! => ", run.stdout, re.M), out
    # As in linear: the task that needs no connection runs, the next is unreachable.
    assert run.recap("a")["ok"] == 2, out
    assert run.recap("mute")["ok"] == 1 and run.recap("mute")["unreachable"] == 1, out
    assert took < 30, "the silent host held the run for %.0f s" % took



# -- a dead or slow host holds the others no longer than its own step ---------------------

#: ansible_timeout of the silent host (seconds).
MUTE_TIMEOUT = 3

SILENT_AT_EVERY_KIND_OF_STEP = """
- hosts: all
  gather_facts: false
  tasks:
    - name: notifies without connecting
      debug: msg=notify
      changed_when: true
      notify: connects
    - meta: flush_handlers
    - name: every host's
      command: "true"
      delegate_to: mute
      ignore_unreachable: true
    - name: once
      command: "true"
      run_once: true
      delegate_to: mute
      ignore_unreachable: true
    - name: never reached
      command: "true"
  handlers:
    - name: connects
      command: "true"
"""


def _events(path: Path) -> List[Dict]:
    import json
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_silent_host_costs_one_connect_timeout_per_step_that_connects_to_it(sshd, tmp_path):
    """A host that accepts TCP and never answers, connected to by a handler
    flush, a step of three hosts delegated to it and a run_once step: each
    step waits for one connect timeout (ansible_timeout), as linear's forks
    connect at once, not one timeout per host in turn."""
    import socket
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # accepts connections in the kernel, never says a word
    try:
        inventory = sshd.inventory_ini(["a", "b", "c"]) + sshd.inventory_ini(["mute"]).replace(
            "ansible_port=%d" % sshd.port,
            "ansible_port=%d ansible_timeout=%d" % (silent.getsockname()[1], MUTE_TIMEOUT))
        started = time.monotonic()
        run = Controller("ioc-run", tmp_path, SILENT_AT_EVERY_KIND_OF_STEP, inventory,
                         args=["--events", "events.jsonl"])
        out = run.finish()
        took = time.monotonic() - started
    finally:
        silent.close()
    assert run.rc == 4, out
    assert re.search(r"^RUNNING HANDLER \[connects\] \*+\nchanged: \[a\]\nchanged: \[b\]\n"
                     r"changed: \[c\]\n(.*\n)*?fatal: \[mute\]: UNREACHABLE!", run.stdout, re.M), out
    for host in "abc":
        assert re.search(r"^fatal: \[%s -> mute\]: UNREACHABLE! .*\n\.\.\.ignoring$" % host,
                         run.stdout, re.M), out
    # as linear: an unreachable run_once result, ignored or not, fails every host
    assert "never reached" not in run.stdout and run.stdout.count("...ignoring") == 4, out
    assert run.recap("a") == dict(ok=4, changed=2, unreachable=0, failed=0, skipped=0,
                                  rescued=0, ignored=2), out
    assert run.recap("b") == dict(ok=3, changed=2, unreachable=0, failed=0, skipped=0,
                                  rescued=0, ignored=1), out
    assert run.recap("mute") == dict(ok=1, changed=1, unreachable=1, failed=0, skipped=0,
                                     rescued=0, ignored=0), out
    # a, b and c delegated to mute: one timeout after the flush's
    unreachable = {(e["task"], e["host"]): e["time"] for e in _events(tmp_path / "events.jsonl")
                   if e["event"] == "runner_unreachable"}
    waited = unreachable[("every host's", "c")] - unreachable[("connects", "mute")]
    assert waited < MUTE_TIMEOUT + 2, "the delegated step took %.1f s" % waited
    # three steps connected to mute: three timeouts, plus connecting and running the rest
    assert took < 3 * MUTE_TIMEOUT + 10, "the run took %.1f s" % took


#: Where a runner is killed while it runs a task that would take 30 s: the
#: playbook (hosts a and b, d a delegate), then what the user reads.
KILLED_AT = {
    "a handler flush": ("""
        - hosts: a,b
          gather_facts: false
          tasks:
            - command: "true"
              notify: slow
            - meta: flush_handlers
            - debug: msg=after
          handlers:
            - name: slow
              shell: "if [ {{{{ inventory_hostname }}}} = b ]; then echo $PPID. > {tmp}/runner.pid; sleep 30; fi"
        """, "b", r"RUNNING HANDLER \[slow\] \*+\nchanged: \[a\]\n(.*\n)*?fatal: \[b\]: UNREACHABLE!",
        dict(a=dict(ok=3, changed=2, unreachable=0), b=dict(ok=1, changed=1, unreachable=1))),
    "a run_once step": ("""
        - hosts: a,b
          gather_facts: false
          tasks:
            - name: once
              shell: "echo $PPID. > {tmp}/runner.pid; sleep 30"
              run_once: true
            - debug: msg=after
        """, "a", r"TASK \[once\] \*+\n(.*\n)*?fatal: \[a\]: UNREACHABLE!",
        # as linear: an unreachable run_once result fails every host, the play
        # ends, and b, which has no result, is not in the recap
        dict(a=dict(ok=0, changed=0, unreachable=1), b=None)),
    "a delegate_to step": ("""
        - hosts: a,b
          gather_facts: false
          tasks:
            - name: b's on d
              shell: "if [ {{{{ inventory_hostname }}}} = b ]; then echo $PPID. > {tmp}/runner.pid; sleep 30; fi"
              delegate_to: "{{{{ 'd' if inventory_hostname == 'b' else inventory_hostname }}}}"
            - debug: msg=after
        """, "d", r"TASK \[b's on d\] \*+\nchanged: \[a\]\n(.*\n)*?fatal: \[b -> d\]: UNREACHABLE!",
        dict(a=dict(ok=2, changed=1, unreachable=0), b=dict(ok=0, changed=0, unreachable=1))),
}


@pytest.mark.parametrize("where", list(KILLED_AT))
def test_a_runner_killed_at_any_kind_of_step_does_not_hold_the_others(where, sshd, tmp_path):
    playbook, killed, shown, recap = KILLED_AT[where]
    run = Controller("ioc-run", tmp_path, playbook.format(tmp=tmp_path),
                     sshd.inventory_ini(["a", "b", "d"]))
    os.kill(run.pid_file("runner.pid"), signal.SIGKILL)
    killed_at = time.monotonic()
    out = run.finish()
    took = time.monotonic() - killed_at
    assert took < 10, "the run ended %.1f s after %s's runner was killed" % (took, killed)
    assert run.rc == 4, out
    assert re.search(shown, run.stdout, re.M), out
    if recap["a"]["ok"]:  # the other host went on to the end
        assert re.search(r'ok: \[a\] => \{\n    "msg": "after"\n\}\n', run.stdout), out
    else:
        assert '"msg": "after"' not in run.stdout, out
    for host, counts in recap.items():
        if counts is None:
            assert not re.search(r"^%s\s+:" % host, run.stdout, re.M), out
        else:
            assert {k: run.recap(host)[k] for k in counts} == counts, out
    assert "Traceback" not in out, out
