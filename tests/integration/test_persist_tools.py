"""The warm daemon of ``ioc-run --persist`` under the other tools, over the real sshd:
the ``mitogen_batch`` strategy with ``IOC_PERSIST`` (the real ``ansible-playbook``
of ansible-core 2.21; 2.19 too for the main test), ``ioc-adhoc --persist`` and
``ioc-ssh --persist``.

As in test_persist.py, whether a run reused the previous one's connection is
read off the target: the runner's pid (``$PPID`` of a task's shell) and
``SSH_CONNECTION`` (the ssh client's port), and the sshd's session processes
listed before and after. Each test has its own daemon directory
(``XDG_RUNTIME_DIR``) and stops its daemon with ``ioc-run --persist-stop``.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from tests.conformance.test_conformance import ANSIBLE_CORE, ANSIBLE_CORE_219, ansible_python
from tests.integration.test_persist import (WHERE, _args, _other_key, _ps, alive, none_left,
                                            sessions, wait_until)
from tests.support.sshd import _descendants

pytestmark = pytest.mark.integration

#: The second user of the runner-per-settings test (a name no other module uses:
#: test modules run at the same time on different workers).
OTHER_USER = "ioc_warm_tools"

ROOT = Path(__file__).resolve().parents[2]


class Tools:
    """ansible-playbook (mitogen_batch), ioc-adhoc and ioc-run --persist-stop with
    one daemon directory, in one working directory."""

    def __init__(self, tmp_path: Path, core: str = ANSIBLE_CORE) -> None:
        self.tmp = tmp_path
        self.rt = tmp_path / "rt"
        self.rt.mkdir(mode=0o700)
        self.out = tmp_path / "out"
        self.out.mkdir()
        (tmp_path / "play.yml").write_text(WHERE)
        (tmp_path / "ansible.cfg").write_text("[defaults]\n")
        self.python = ansible_python(core)

    @property
    def env(self) -> Dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ANSIBLE_", "IOC_"))}
        env.update({
            "XDG_RUNTIME_DIR": str(self.rt),
            "ANSIBLE_CONFIG": str(self.tmp / "ansible.cfg"),
            "ANSIBLE_STRATEGY_PLUGINS": str(ROOT / "strategy_plugin"),
            "ANSIBLE_STRATEGY": "mitogen_batch",
            "ANSIBLE_NOCOLOR": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                        os.environ.get("PYTHONPATH")])),
        })
        return env

    def playbook(self, inventory: str, *args: str, persist: Optional[str] = "120",
                 play: str = "play.yml",
                 env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
        (self.tmp / "hosts.ini").write_text(inventory)
        environ = {**self.env, **(env or {})}
        if persist is not None:
            environ["IOC_PERSIST"] = persist
        script = os.path.join(os.path.dirname(self.python), "ansible-playbook")
        return subprocess.run([self.python, script, "-i", "hosts.ini", play,
                               "-e", "out=%s" % self.out, *args],
                              capture_output=True, text=True, timeout=300, cwd=str(self.tmp),
                              stdin=subprocess.DEVNULL, env=environ)

    def adhoc(self, inventory: str, *args: str) -> subprocess.CompletedProcess:
        (self.tmp / "hosts.ini").write_text(inventory)
        return subprocess.run(entry_point("adhoc_main") + ["all", "-i", "hosts.ini", *args],
                              capture_output=True, text=True, timeout=300,
                              cwd=str(self.tmp), stdin=subprocess.DEVNULL, env=self.env)

    def where(self, host: str = "a") -> Tuple[int, Optional[str]]:
        fields = (self.out / host).read_text().split()
        return int(fields[0]), fields[2] if len(fields) > 2 else None

    def stop(self) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ioc", "--persist-stop"],
                              capture_output=True, text=True, timeout=120, cwd=str(self.tmp),
                              env=self.env)

    @property
    def socket(self) -> Path:
        return self.rt / "ioc" / "ioc-run.sock"


def entry_point(name: str) -> List[str]:
    """The command line of the console script ``ioc.warm:NAME`` (``ioc-adhoc``,
    ``ioc-ssh`` as pip installs them; ``python -m ioc.adhoc`` is not the entry point)."""
    return [sys.executable, "-c", "import sys; from ioc.warm import %s; sys.exit(%s())"
            % (name, name)]


@pytest.fixture
def tools(tmp_path):
    t = Tools(tmp_path)
    yield t
    t.stop()


def recap(stdout: str) -> List[str]:
    return [line for line in stdout.splitlines() if " : ok=" in line]


@pytest.mark.parametrize("core", [ANSIBLE_CORE, ANSIBLE_CORE_219])
def test_mitogen_batch_with_ioc_persist_reuses_the_runner_until_stopped(tmp_path, sshd, core):
    tools = Tools(tmp_path, core)
    try:
        reuses_until_stopped(tools, sshd)
    finally:
        tools.stop()


def reuses_until_stopped(tools: Tools, sshd) -> None:
    before = sessions(sshd)
    inventory = sshd.inventory_ini(["a"]) + sshd.inventory_ini(["b"], "mitogen_via=a")
    cold = tools.playbook(inventory, persist=None)
    assert cold.returncode == 0, cold.stdout + cold.stderr
    cold_pid, _ = tools.where()
    assert wait_until(lambda: not alive(cold_pid))  # without IOC_PERSIST: ended with the run
    assert not tools.socket.exists()

    first = tools.playbook(inventory)
    assert first.returncode == 0, first.stdout + first.stderr
    pid, port = tools.where()
    via = tools.where("b")
    assert pid != cold_pid
    assert alive(pid) and alive(via[0])  # left behind, in the daemon's keeping
    between = sessions(sshd)

    second = tools.playbook(inventory)
    assert second.returncode == 0, second.stdout + second.stderr
    assert tools.where() == (pid, port)  # the same runner over the same ssh connection
    assert tools.where("b") == via  # and the same one behind the mitogen_via hop
    assert sessions(sshd) == between  # no new sshd session: no handshake
    assert second.stdout == cold.stdout  # Ansible's console, as a cold run's
    assert recap(second.stdout) and all(" failed=0 " in line for line in recap(second.stdout))

    stopped = tools.stop()
    assert stopped.returncode == 0
    assert "runners ended on 3 host(s)" in stopped.stderr  # a, b, localhost (the copy)
    assert wait_until(lambda: not alive(pid) and not alive(via[0]))
    assert wait_until(lambda: none_left(sshd, before)), _ps(sessions(sshd) - before)
    assert not tools.socket.exists()


@pytest.mark.parametrize("change", ["key", "ansible_env", "user"])
def test_mitogen_batch_never_reuses_a_runner_made_for_other_settings(tools, sshd, change,
                                                                     tmp_path):
    line = sshd.inventory_ini(["a"], python="/usr/bin/python3").rstrip("\n")
    first = tools.playbook(line + "\n")
    assert first.returncode == 0, first.stdout + first.stderr
    pid, port = tools.where()
    env: Dict[str, str] = {}
    if change == "key":
        line += " " + _other_key(sshd, tmp_path)
    elif change == "ansible_env":
        env["ANSIBLE_TIMEOUT"] = "17"
    if change == "user":
        from tests.support.users import key_logins

        # (a name of this module's own: test_persist.py's user is made and
        # removed by another worker at the same time)
        with key_logins(sshd, {OTHER_USER: "unused-7c1e"}):
            second = tools.playbook(line.replace("ansible_user=%s" % sshd.user,
                                                 "ansible_user=" + OTHER_USER) + "\n")
            assert second.returncode == 0, second.stdout + second.stderr
            new_pid, new_port = tools.where()
            with open("/proc/%d/status" % new_pid) as f:
                uid = next(x.split()[1] for x in f if x.startswith("Uid:"))
            import pwd
            assert int(uid) == pwd.getpwnam(OTHER_USER).pw_uid
            assert tools.stop().returncode == 0
    else:
        second = tools.playbook(line + "\n", env=env)
        assert second.returncode == 0, second.stdout + second.stderr
        new_pid, new_port = tools.where()
    assert new_pid != pid and new_port != port
    assert wait_until(lambda: not alive(pid))  # the runner made for the old settings ended


def test_mitogen_batch_idle_daemon_ends_with_every_runner(tools, sshd):
    before = sessions(sshd)
    run = tools.playbook(sshd.inventory_ini(["a"]), persist="2")
    assert run.returncode == 0, run.stdout + run.stderr
    pid, _ = tools.where()
    assert wait_until(lambda: not alive(pid), timeout=30)
    assert wait_until(lambda: not tools.socket.exists())
    assert wait_until(lambda: none_left(sshd, before)), _ps(sessions(sshd) - before)
    assert "no daemon was running" in tools.stop().stderr


def test_mitogen_batch_bad_ioc_persist_is_an_error(tools, sshd):
    run = tools.playbook(sshd.inventory_ini(["a"]), persist="soon")
    assert run.returncode != 0
    assert "IOC_PERSIST=soon: it is a number of seconds" in run.stdout + run.stderr
    assert not tools.socket.exists()


def test_ctrl_c_of_ansible_playbook_ends_the_play_and_the_daemon(tools, sshd, tmp_path):
    inventory = sshd.inventory_ini(["a"])
    assert tools.playbook(inventory).returncode == 0
    pid, _ = tools.where()
    marker = tmp_path / "started"
    (tmp_path / "sleep.yml").write_text(textwrap.dedent(f"""
        - hosts: all
          gather_facts: false
          tasks:
            - name: long
              shell: echo $PPID > {marker}.tmp && mv {marker}.tmp {marker} && sleep 300
    """))
    script = os.path.join(os.path.dirname(tools.python), "ansible-playbook")
    client = subprocess.Popen([tools.python, script, "-i", "hosts.ini", "sleep.yml"],
                              cwd=str(tmp_path), env={**tools.env, "IOC_PERSIST": "120"},
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert wait_until(marker.exists, timeout=60)
    assert int(marker.read_text()) == pid  # warm: the same runner
    sleeper = [p for p in _descendants(pid) if "sleep" in _args(p)]
    assert sleeper
    client.send_signal(signal.SIGINT)
    out, err = client.communicate(timeout=60)
    assert client.returncode == 99, out + err
    assert "User interrupted execution" in out + err
    assert wait_until(lambda: not any(alive(p) for p in [pid] + sleeper))
    assert wait_until(lambda: not tools.socket.exists())
    again = tools.playbook(inventory)  # the next run starts cold and works
    assert again.returncode == 0, again.stdout + again.stderr
    assert tools.where()[0] != pid


def test_ioc_adhoc_persist_runs_on_the_warm_runner_without_a_handshake(tools, sshd):
    not_entry = subprocess.run([sys.executable, "-m", "ioc.adhoc", "all", "--persist"],
                               capture_output=True, text=True, timeout=120, env=tools.env)
    assert not_entry.returncode == 1
    assert "ioc-adhoc's entry point's (ioc.warm.adhoc_main)" in not_entry.stderr
    before = sessions(sshd)
    inventory = sshd.inventory_ini(["a"])
    first = tools.adhoc(inventory, "--persist", "-m", "shell", "-a",
                        "echo $PPID $SSH_CONNECTION")
    assert first.returncode == 0, first.stdout + first.stderr
    pid, _, port = first.stdout.splitlines()[1].split()[:3]
    assert first.stdout.splitlines()[0] == "a | CHANGED | rc=0 >>"
    assert alive(int(pid))
    between = sessions(sshd)
    second = tools.adhoc(inventory, "--persist", "-m", "shell", "-a",
                        "echo $PPID $SSH_CONNECTION")
    assert second.returncode == 0, second.stdout + second.stderr
    assert second.stdout == first.stdout  # the same runner, the same ssh client port
    assert sessions(sshd) == between  # no new sshd session
    assert second.stdout.endswith("1 succeeded, 0 failed, 1 total\n")
    stopped = tools.stop()
    assert "runners ended on 1 host(s)" in stopped.stderr
    assert wait_until(lambda: not alive(int(pid)))
    assert wait_until(lambda: none_left(sshd, before)), _ps(sessions(sshd) - before)


def test_ioc_ssh_persist_runs_a_command_in_the_runner_ioc_adhoc_left(tools, sshd):
    before = sessions(sshd)
    inventory = sshd.inventory_ini(["a"])
    first = tools.adhoc(inventory, "--persist", "-m", "shell", "-a",
                        "echo $PPID $SSH_CONNECTION")
    assert first.returncode == 0, first.stdout + first.stderr
    where = first.stdout.splitlines()[1]
    between = sessions(sshd)

    def ioc_ssh(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
        return subprocess.run(entry_point("ssh_main") + ["-i", "hosts.ini", *args],
                              capture_output=True, text=True, timeout=120, cwd=str(tools.tmp),
                              input=stdin, env=tools.env)

    ssh = ioc_ssh("--persist", "a", "--", "echo $PPID $SSH_CONNECTION; cat; echo oops >&2; "
                                          "exit 3", stdin="piped in\n")
    assert ssh.returncode == 3, ssh.stderr  # the command's exit code
    assert ssh.stdout == where + "\npiped in\n"  # the same runner, over the same connection
    assert ssh.stderr == "oops\n"
    assert sessions(sshd) == between  # no ssh handshake

    shell = ioc_ssh("--persist", "a")
    assert shell.returncode == 1
    assert "has no terminal to give a shell" in shell.stderr

    stopped = tools.stop()
    assert "runners ended on 1 host(s)" in stopped.stderr
    assert wait_until(lambda: none_left(sshd, before)), _ps(sessions(sshd) - before)


#: A module that says which ssh connection it runs under, with an action plugin
#: of its own: under mitogen_batch the task runs through Ansible's task
#: machinery, over the ``ioc_runner`` connection the dispatcher serves.
WHO_MODULE = '''#!/usr/bin/python
import os
from ansible.module_utils.basic import AnsibleModule

module = AnsibleModule(argument_spec={})
module.exit_json(changed=False, ssh=os.environ.get("SSH_CONNECTION", ""))
'''
WHO_ACTION = '''
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        result.update(self._execute_module(module_name="who", task_vars=task_vars))
        return result
'''
THROUGH_ANSIBLE = """
- hosts: a
  gather_facts: false
  tasks:
    - name: through ansible
      who:
      register: who
    - name: note
      copy:
        dest: "{{ out }}/a"
        content: "{{ who.ssh }}"
      delegate_to: localhost
"""


def test_mitogen_batch_tasks_through_ansible_use_the_warm_runner(tools, sshd, tmp_path):
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "who.py").write_text(WHO_MODULE)
    (tmp_path / "action_plugins").mkdir()
    (tmp_path / "action_plugins" / "who.py").write_text(WHO_ACTION)
    (tmp_path / "who.yml").write_text(THROUGH_ANSIBLE)
    logs = [tmp_path / "bridge-1.log", tmp_path / "bridge-2.log"]
    inventory = sshd.inventory_ini(["a"])
    first = tools.playbook(inventory, play="who.yml", env={"IOC_BRIDGE_LOG": str(logs[0])})
    assert first.returncode == 0, first.stdout + first.stderr
    ssh = (tools.out / "a").read_text()
    assert ssh.startswith("127.0.0.1 ")
    between = sessions(sshd)
    second = tools.playbook(inventory, play="who.yml", env={"IOC_BRIDGE_LOG": str(logs[1])})
    assert second.returncode == 0, second.stdout + second.stderr
    assert (tools.out / "a").read_text() == ssh  # the same ssh connection, warm
    assert sessions(sshd) == between
    for log in logs:  # each run: the task through Ansible, served by the daemon's runner
        text = log.read_text()
        assert re.search(r"AnsibleStep \d+ on 1 host\(s\)", text), text
        assert "ioc_runner a: exec" in text, text
