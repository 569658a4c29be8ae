"""``ioc-run --persist``: warm runs through the per-user daemon, over the real sshd.

Every test gets its own daemon directory (``XDG_RUNTIME_DIR`` in its
tmp_path) and stops its daemon at the end. Whether a run reused the
previous one's connection is read off the target: each run reports its
runner's pid (``$PPID`` of a task's shell) and ``SSH_CONNECTION`` (the ssh
client's port), and the sshd's session processes are listed before and
after. Runners left behind are looked for with ``ps``.
"""
from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

import pytest

from benchmarks.delayproxy import DelayProxy
from tests.support.sshd import _descendants

pytestmark = pytest.mark.integration

#: The second user of the runner-per-user tests (a name no other module uses:
#: test modules run at the same time on different workers).
OTHER_USER = "ioc_warm_ioc"

WHERE = """
- hosts: all
  gather_facts: false
  tasks:
    - name: where
      shell: echo "$PPID $SSH_CONNECTION"
      register: where
      changed_when: false
      become: "{{ as_nobody | default(false) }}"
      become_user: nobody
    - name: note
      copy:
        dest: "{{ out }}/{{ inventory_hostname }}"
        content: "{{ where.stdout }}"
      delegate_to: localhost
      changed_when: false
"""


class Warm:
    """ioc-run with one daemon directory; each run reports where its runner was."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.rt = tmp_path / "rt"
        self.rt.mkdir(mode=0o700)
        self.out = tmp_path / "out"
        self.out.mkdir()
        (tmp_path / "play.yml").write_text(WHERE)

    @property
    def env(self) -> Dict[str, str]:
        return {**os.environ, "XDG_RUNTIME_DIR": str(self.rt)}

    def argv(self, *args: str) -> List[str]:
        return [sys.executable, "-m", "ioc", *args]

    def run(self, inventory: str, *args: str, play: str = "play.yml",
            env: Optional[Dict[str, str]] = None,
            first: Sequence[str] = ()) -> subprocess.CompletedProcess:
        """ioc-run ``first`` PLAY -i INVENTORY ... ``args``."""
        (self.tmp / "hosts.ini").write_text(inventory)
        return subprocess.run(
            self.argv(*first, play, "-i", "hosts.ini", "-e", "out=%s" % self.out, *args),
            capture_output=True, text=True, timeout=300, cwd=str(self.tmp),
            stdin=subprocess.DEVNULL, env={**self.env, **(env or {})})

    def where(self, host: str = "a") -> Tuple[int, Optional[str]]:
        """(runner pid, ssh client port: None under sudo) of ``host``'s last run."""
        fields = (self.out / host).read_text().split()
        return int(fields[0]), fields[2] if len(fields) > 2 else None

    def stop(self) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv("--persist-stop"), capture_output=True, text=True,
                              timeout=120, cwd=str(self.tmp), env=self.env)

    @property
    def socket(self) -> Path:
        return self.rt / "ioc" / "ioc-run.sock"


@pytest.fixture
def warm(tmp_path):
    w = Warm(tmp_path)
    yield w
    w.stop()


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process, as ps sees it (a zombie is not)."""
    out = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True)
    return out.returncode == 0 and not out.stdout.strip().startswith("Z")


def sessions(sshd) -> Set[int]:
    """The processes the sshd runs for its sessions (none: nobody is connected)."""
    return set(_descendants(sshd.process.pid))


def none_left(sshd, before: Set[int]) -> bool:
    """Whether every sshd session opened since ``before`` was taken has ended.

    The sshd is shared by every test file its xdist worker runs (it is
    session-scoped): a session another file left (a runner cut off behind a
    stalled proxy waits for its keepalive) is not this test's to end.
    """
    return not (sessions(sshd) - before)


def sizes_out(console: str) -> str:
    """``console`` without the transport line's byte counts (each run's pids and
    ports, which the play reports, differ in length)."""
    return re.sub(r"[\d.]+ (B|KiB|MiB) (sent|received)", r"N \2", console)


def wait_until(check, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


def test_a_second_run_reuses_the_runner_and_prints_what_a_cold_run_prints(warm, sshd):
    before = sessions(sshd)
    inventory = sshd.inventory_ini(["a"]) + sshd.inventory_ini(["b"], "mitogen_via=a")
    cold = warm.run(inventory)
    assert cold.returncode == 0, cold.stderr
    cold_pid, _ = warm.where()

    first = warm.run(inventory, "--persist=120")
    assert first.returncode == 0, first.stderr
    pid, port = warm.where()
    via = warm.where("b")  # (its ssh runs under a's runner)
    assert pid != cold_pid
    assert alive(pid) and alive(via[0])  # left behind by the daemon
    between = sessions(sshd)

    second = warm.run(inventory, "--persist=120")
    assert second.returncode == 0, second.stderr
    assert warm.where() == (pid, port)  # the same runner, over the same ssh connection
    assert warm.where("b") == via  # and the same one behind the mitogen_via hop
    assert sessions(sshd) == between  # no new sshd session
    # the same console as a cold run, the transport line's runner calls included
    assert sizes_out(second.stdout) == sizes_out(cold.stdout)
    assert second.stderr == cold.stderr

    stopped = warm.stop()
    assert stopped.returncode == 0
    assert "runners ended on 3 host(s)" in stopped.stderr  # a, b, localhost (the copy)
    assert wait_until(lambda: not alive(pid) and not alive(via[0]))
    assert wait_until(lambda: none_left(sshd, before)), _ps(sessions(sshd) - before)
    assert not warm.socket.exists()
    assert "no daemon was running" in warm.stop().stderr


def _other_key(sshd, tmp: Path) -> str:
    key = tmp / "same_key"
    shutil.copy(sshd.client_key, key)
    os.chmod(key, 0o600)
    return "ansible_ssh_private_key_file=%s" % key


CHANGES = {
    "port": None,  # through a relay to the same sshd: another port
    "key": _other_key,
    "ssh_args": lambda sshd, tmp: "ansible_ssh_common_args=%s" % (
        "'%s -o HostKeyAlias=a -o ServerAliveCountMax=5'" % sshd.ssh_args),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_changed_setting_never_reuses_the_connection(warm, sshd, change, tmp_path):
    first = warm.run(sshd.inventory_ini(["a"]), "--persist")
    assert first.returncode == 0, first.stderr
    pid, port = warm.where()
    if change == "port":
        with DelayProxy(sshd.host, sshd.port, 0.0) as relay:
            inventory = sshd.inventory_ini(["a"]).replace(
                "ansible_port=%d" % sshd.port, "ansible_port=%d" % relay.port)
            second = warm.run(inventory, "--persist")
            assert second.returncode == 0, second.stderr
            assert relay.totals()["connections"] == 1  # (the new connection went there)
    else:
        line = sshd.inventory_ini(["a"]).rstrip("\n") + " " + CHANGES[change](sshd, tmp_path)
        second = warm.run(line + "\n", "--persist")
        assert second.returncode == 0, second.stderr
    new_pid, new_port = warm.where()
    assert new_port != port and new_pid != pid
    assert wait_until(lambda: not alive(pid))  # the old runner ended


def test_become_runs_in_its_own_runner_and_without_become_the_first_one_is_reused(warm, sshd):
    # (Debian's python: nobody may run it, not the controller's under /root)
    line = sshd.inventory_ini(["a"], python="/usr/bin/python3").rstrip("\n")
    assert warm.run(line + "\n", first=["--persist"]).returncode == 0  # (takes no value)
    pid, port = warm.where()
    become = warm.run(line + "\n", "--persist", "-e", "as_nobody=true")
    assert become.returncode == 0, become.stderr
    child, _ = warm.where()
    assert child != pid
    assert _comm(_ppid(child)) == "sudo"
    # ... started under a's runner, over its ssh session: they share that session's processes
    session = set(_ancestors(child)) & set(_ancestors(pid))
    assert session - set(_ancestors(sshd.process.pid)) - {sshd.process.pid}
    again = warm.run(line + "\n", "--persist")
    assert again.returncode == 0, again.stderr
    assert warm.where() == (pid, port)  # not the become child: a's own runner


def _ppid(pid: int) -> int:
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def _ancestors(pid: int) -> List[int]:
    out = []
    while pid > 1:
        pid = _ppid(pid)
        out.append(pid)
    return out


def _ps(pids: Set[int]) -> str:
    """What ``pids`` are, for a failure's message."""
    if not pids:
        return "no session left"
    return subprocess.run(["ps", "-o", "pid,ppid,stat,etime,args", "-p", ",".join(map(str, sorted(pids)))],
                          capture_output=True, text=True).stdout


def _comm(pid: int) -> str:
    with open("/proc/%d/comm" % pid) as f:
        return f.read().strip()


def test_a_changed_ansible_setting_starts_a_new_daemon(warm, sshd):
    inventory = sshd.inventory_ini(["a"])
    assert warm.run(inventory, "--persist").returncode == 0
    pid, _ = warm.where()
    again = warm.run(inventory, "--persist", env={"ANSIBLE_FORKS": "7"})
    assert again.returncode == 0, again.stderr
    assert warm.where()[0] != pid
    assert wait_until(lambda: not alive(pid))


def test_an_idle_daemon_ends_with_every_runner(warm, sshd):
    before = sessions(sshd)
    run = warm.run(sshd.inventory_ini(["a"]), first=["--persist=2"])
    assert run.returncode == 0, run.stderr
    pid, _ = warm.where()
    assert alive(pid)
    assert wait_until(lambda: not alive(pid), timeout=30)
    assert wait_until(lambda: not warm.socket.exists())
    assert wait_until(lambda: none_left(sshd, before)), _ps(sessions(sshd) - before)
    assert "no daemon was running" in warm.stop().stderr


def test_the_socket_is_the_users_alone(warm, sshd):
    assert warm.run(sshd.inventory_ini(["a"]), "--persist").returncode == 0
    directory = warm.socket.parent
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert directory.stat().st_uid == os.getuid()
    assert stat.S_IMODE(warm.socket.lstat().st_mode) == 0o600
    assert stat.S_ISSOCK(warm.socket.lstat().st_mode)
    assert warm.stop().returncode == 0
    directory.chmod(0o755)  # others could enter: refused, nothing run
    refused = warm.run(sshd.inventory_ini(["a"]), "--persist")
    assert refused.returncode == 1
    assert "has mode 0755" in refused.stderr and "refusing" in refused.stderr
    assert not warm.socket.exists()


def test_ctrl_c_of_a_warm_run_ends_its_task_and_the_daemon(warm, sshd, tmp_path):
    inventory = sshd.inventory_ini(["a"])
    assert warm.run(inventory, "--persist").returncode == 0
    pid, _ = warm.where()
    marker = tmp_path / "started"
    (tmp_path / "sleep.yml").write_text(textwrap.dedent(f"""
        - hosts: all
          gather_facts: false
          tasks:
            - name: long
              shell: echo $PPID > {marker}.tmp && mv {marker}.tmp {marker} && sleep 300
    """))
    client = subprocess.Popen(warm.argv("sleep.yml", "-i", "hosts.ini", "--persist"),
                              cwd=str(tmp_path), env=warm.env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert wait_until(marker.exists, timeout=60)
    assert int(marker.read_text()) == pid  # warm: the same runner
    sleeper = [p for p in _descendants(pid) if "sleep" in _args(p)]
    assert sleeper
    client.send_signal(signal.SIGINT)
    out, err = client.communicate(timeout=60)
    assert client.returncode == 99, err
    assert "User interrupted execution" in err
    assert wait_until(lambda: not any(alive(p) for p in [pid] + sleeper))
    assert wait_until(lambda: not warm.socket.exists())
    # the next run starts cold and works
    again = warm.run(inventory, "--persist")
    assert again.returncode == 0, again.stderr
    assert warm.where()[0] != pid


def _args(pid: int) -> str:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_files_a_runner_holds_are_not_sent_again_until_it_ends(warm, sshd, tmp_path):
    blob = os.urandom(200_000)  # (incompressible; below the size that streams)
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "blob.bin").write_bytes(blob)
    copy = """
        - hosts: a
          gather_facts: false
          tasks:
            {reset}
            - name: copy
              copy:
                src: blob.bin
                dest: "{{{{ out }}}}/copy-{{{{ n }}}}"
    """
    (tmp_path / "copy.yml").write_text(textwrap.dedent(copy.format(reset="")))
    (tmp_path / "reset.yml").write_text(textwrap.dedent(copy.format(
        reset="- meta: reset_connection")))
    inventory = sshd.inventory_ini(["a"])

    def sent(run: subprocess.CompletedProcess) -> int:
        assert run.returncode == 0, run.stdout + run.stderr
        number, unit = re.search(r"([\d.]+) (B|KiB|MiB) sent", run.stdout).groups()
        return int(float(number) * {"B": 1, "KiB": 1024, "MiB": 1 << 20}[unit])

    first = sent(warm.run(inventory, "--persist", "-e", "n=1", play="copy.yml"))
    second = sent(warm.run(inventory, "--persist", "-e", "n=2", play="copy.yml"))
    after_reset = sent(warm.run(inventory, "--persist", "-e", "n=3", play="reset.yml"))
    assert first > len(blob) > second  # the warm runner still holds it
    assert after_reset > len(blob)  # a new runner: sent again
    for n in (1, 2, 3):
        assert (warm.out / ("copy-%d" % n)).read_bytes() == blob


def test_on_a_terminal_a_warm_run_shows_what_a_cold_one_shows_and_asks_without_echo(
        warm, sshd, tmp_path):
    from tests.support.terminal import run_on_terminal, screen

    (tmp_path / "hosts.ini").write_text(sshd.inventory_ini(["a"]))
    argv = warm.argv("play.yml", "-i", "hosts.ini", "-e", "out=%s" % warm.out, "-K")
    answer = [("BECOME password: ", "sekrit-answer")]
    env = {**warm.env, "TERM": "xterm", "COLUMNS": "100"}
    code, cold = run_on_terminal(argv, answer, str(tmp_path), env)
    assert code == 0, cold
    code, first = run_on_terminal(argv + ["--persist"], answer, str(tmp_path), env)
    assert code == 0, first
    pid = warm.where()[0]
    code, second = run_on_terminal(argv + ["--persist"], answer, str(tmp_path), env)
    assert code == 0, second
    assert warm.where()[0] == pid  # warm
    assert "\x1b[0;32m" in second  # colours: the daemon wrote to the terminal itself
    assert sizes_out(screen(second)) == sizes_out(screen(cold))
    assert "sekrit-answer" not in second  # the prompt did not echo


def test_a_second_client_waits_for_the_run_in_progress_then_runs_warm(warm, sshd, tmp_path):
    inventory = sshd.inventory_ini(["a"])
    assert warm.run(inventory, "--persist").returncode == 0
    pid, port = warm.where()
    marker = tmp_path / "started"
    (tmp_path / "slow.yml").write_text(textwrap.dedent(f"""
        - hosts: a
          gather_facts: false
          tasks:
            - name: slow
              shell: touch {marker} && sleep 4 && echo "$PPID" > {tmp_path}/slow-pid
    """))
    slow = subprocess.Popen(warm.argv("slow.yml", "-i", "hosts.ini", "--persist"),
                            cwd=str(tmp_path), env=warm.env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert wait_until(marker.exists, timeout=60)
    second = warm.run(inventory, "--persist")  # (while slow.yml's task sleeps)
    finished = time.monotonic()
    out, err = slow.communicate(timeout=60)
    assert slow.returncode == 0, err
    assert second.returncode == 0, second.stderr
    assert slow_done_before(tmp_path / "slow-pid", finished)  # it waited for the first
    assert int((tmp_path / "slow-pid").read_text()) == pid
    assert warm.where() == (pid, port)  # and then ran warm on the same runner


def slow_done_before(path: Path, when: float) -> bool:
    """Whether ``path`` was written before the monotonic time ``when``."""
    return path.exists() and os.stat(path).st_mtime <= time.time() - (time.monotonic() - when)


def test_runners_outlive_their_silence_bound_while_the_daemon_idles(warm, sshd):
    # A runner ends itself after interval * (count + 1) s without hearing from
    # the controller (4 s here); the idle daemon keeps sending it heartbeats.
    inventory = sshd.inventory_ini(["a"])
    env = {"IOC_KEEPALIVE_INTERVAL": "1"}
    assert warm.run(inventory, "--persist=60", env=env).returncode == 0
    pid, port = warm.where()
    time.sleep(8)
    again = warm.run(inventory, "--persist=60", env=env)
    assert again.returncode == 0, again.stderr
    assert warm.where() == (pid, port)


def test_another_user_never_reuses_the_first_users_runner(warm, sshd):
    from tests.support.users import key_logins

    # (Debian's python for both: the other user may not run the controller's under /root)
    line = sshd.inventory_ini(["a"], python="/usr/bin/python3").rstrip("\n")
    with key_logins(sshd, {OTHER_USER: "unused-7c1e"}):
        assert warm.run(line + "\n", "--persist").returncode == 0
        pid, port = warm.where()
        other = warm.run(line.replace("ansible_user=%s" % sshd.user, "ansible_user=" + OTHER_USER)
                         + "\n", "--persist")
        assert other.returncode == 0, other.stdout + other.stderr
        new_pid, new_port = warm.where()
        assert (new_pid, new_port) != (pid, port)
        with open("/proc/%d/status" % new_pid) as f:
            uid = next(line.split()[1] for line in f if line.startswith("Uid:"))
        assert int(uid) == pwd.getpwnam(OTHER_USER).pw_uid
        assert wait_until(lambda: not alive(pid))  # root's runner ended
        assert warm.stop().returncode == 0
        assert wait_until(lambda: not alive(new_pid))
