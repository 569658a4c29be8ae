"""ioc-run end to end: real local contexts and real SSH to a real sshd."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration


class Run:
    def __init__(self, proc: subprocess.CompletedProcess, events_path: Path) -> None:
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.events: List[Dict[str, Any]] = [
            json.loads(line) for line in events_path.read_text().splitlines()
        ] if events_path.exists() else []

    def of(self, kind: str) -> List[Dict[str, Any]]:
        return [e for e in self.events if e["event"] == kind]

    @property
    def recap(self) -> Dict[str, Dict[str, int]]:
        return self.of("stats")[0]["hosts"]

    @property
    def calls(self) -> Dict[str, int]:
        return self.of("transport")[0]["calls"]


def ioc_run(tmp_path: Path, playbook: str, *args: str, inventory: str = None,
            timeout: float = 300, env: Dict[str, str] = None) -> Run:
    book = tmp_path / "play.yml"
    book.write_text(textwrap.dedent(playbook))
    argv = [sys.executable, "-m", "ioc", str(book), "--events", str(tmp_path / "events.jsonl")]
    if inventory is not None:
        inv = tmp_path / "hosts.ini"
        inv.write_text(inventory)
        argv += ["-i", str(inv)]
    proc = subprocess.run(argv + list(args), capture_output=True, text=True, timeout=timeout,
                          cwd=str(tmp_path), stdin=subprocess.DEVNULL,
                          env={**os.environ, **(env or {})})
    return Run(proc, tmp_path / "events.jsonl")


def run_demo() -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ioc", "playbooks/demo.yml"], cwd=str(ROOT),
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_demo_playbook_runs_on_the_implicit_localhost_and_is_idempotent():
    shutil.rmtree("/tmp/ioc-demo", ignore_errors=True)
    first = run_demo()
    assert first.returncode == 0, first.stdout + first.stderr
    assert "PLAY [ioc demo]" in first.stdout
    assert "RUNNING HANDLER [Summarise]" in first.stdout
    assert re.search(r"^localhost +: ok=\d+ +changed=[1-9]\d* +unreachable=0 +failed=0 +"
                     r"skipped=0 +rescued=1 ", first.stdout, re.M)
    assert Path("/tmp/ioc-demo/mitogen.txt").read_text() == "mitogen is wanted\n"
    second = run_demo()
    assert second.returncode == 0, second.stdout + second.stderr
    assert "RUNNING HANDLER" not in second.stdout  # nothing changed, nothing notified
    assert re.search(r"^localhost +: ok=\d+ +changed=0 ", second.stdout, re.M)


def test_local_run_reports_like_ansible(tmp_path):
    r = ioc_run(tmp_path, """
        - hosts: localhost
          gather_facts: false
          tasks:
            - name: loop
              command: echo {{ item }}
              loop: [a, b]
              changed_when: item == 'a'
              notify: H
            - name: skipme
              debug: msg=x
              when: false
            - name: failign
              fail: msg=boom
              ignore_errors: true
          handlers:
            - name: H
              debug: msg=handled
        """)
    assert r.rc == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert "changed: [localhost] => (item=a)" in lines
    assert "ok: [localhost] => (item=b)" in lines
    assert "skipping: [localhost]" in lines
    assert 'fatal: [localhost]: FAILED! => {"changed": false, "msg": "boom"}' in lines
    assert lines[lines.index('fatal: [localhost]: FAILED! => {"changed": false, "msg": "boom"}') + 1] == "...ignoring"
    assert r.recap["localhost"] == {"ok": 3, "changed": 1, "unreachable": 0, "failures": 0,
                                    "skipped": 1, "rescued": 0, "ignored": 1}


@pytest.fixture
def three_hosts(sshd) -> str:
    return sshd.inventory_ini(["h1", "h2", "h3"], group="web")


def test_every_ssh_host_gets_its_own_runner(tmp_path, three_hosts):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - name: runner pid
              shell: echo $PPID
              register: pid
              changed_when: false
            - name: show
              debug: msg="{{ inventory_hostname }} {{ pid.stdout }}"
        """, inventory=three_hosts)
    assert r.rc == 0, r.stdout + r.stderr
    messages = [e["result"]["msg"] for e in r.of("runner_ok") if e["task"] == "show"]
    assert [m.split()[0] for m in messages] == ["h1", "h2", "h3"]
    assert len({m.split()[1] for m in messages}) == 3
    assert r.calls == {"h1": 1, "h2": 1, "h3": 1}


def test_events_of_all_hosts_come_in_linear_order(tmp_path, three_hosts):
    """Hosts run independently, yet each task shows all hosts before the next task."""
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - name: slow on h1
              shell: "sleep {{ 0.5 if inventory_hostname == 'h1' else 0 }}; echo {{ item }}"
              loop: [1, 2]
            - name: second
              debug: msg=x
        """, inventory=three_hosts)
    assert r.rc == 0, r.stdout + r.stderr
    sequence = [(e["event"], e.get("host"), e.get("name") or e.get("task"))
                for e in r.events if e["event"] in ("task_start", "runner_item_ok", "runner_ok")]
    expected = [("task_start", None, "slow on h1")]
    for host in ("h1", "h2", "h3"):
        expected += [("runner_item_ok", host, "slow on h1")] * 2 + [("runner_ok", host, "slow on h1")]
    expected += [("task_start", None, "second")]
    expected += [("runner_ok", host, "second") for host in ("h1", "h2", "h3")]
    assert sequence == expected


def test_a_failed_host_leaves_the_play_and_later_plays(tmp_path, three_hosts):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - fail: msg=down
              when: inventory_hostname == 'h2'
            - name: after
              debug: msg=x
        - hosts: web
          gather_facts: false
          tasks:
            - name: second play
              debug: msg=y
        """, inventory=three_hosts)
    assert r.rc == 2
    hosts_after = [e["host"] for e in r.of("runner_ok") if e["task"] == "after"]
    assert hosts_after == ["h1", "h3"]
    assert [e["host"] for e in r.of("runner_ok") if e["task"] == "second play"] == ["h1", "h3"]
    assert r.recap["h2"]["failures"] == 1
    assert "fatal: [h2]: FAILED!" in r.stdout


#: An inventory line for a host nothing listens for (port 1 on loopback).
UNREACHABLE_HOST = ("[web]\nghost ansible_host=127.0.0.1 ansible_port=1 ansible_user=root "
                    "ansible_ssh_common_args='-o StrictHostKeyChecking=no "
                    "-o UserKnownHostsFile=/dev/null'\n")


def test_an_unreachable_host_is_reported_and_the_others_carry_on(tmp_path, sshd):
    inventory = sshd.inventory_ini(["h1", "h2"], group="web")
    inventory += UNREACHABLE_HOST
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - name: first
              debug: msg=one
            - name: second
              command: echo two
        """, inventory=inventory)
    assert r.rc == 4, r.stdout + r.stderr
    # as in linear: a task that needs no connection runs; the first that connects is unreachable
    assert re.search(r"^ok: \[ghost\] => ", r.stdout, re.M), r.stdout
    assert re.search(r"^fatal: \[ghost\]: UNREACHABLE! => ", r.stdout, re.M)
    assert [e["host"] for e in r.of("runner_ok") if e["task"] == "second"] == ["h1", "h2"]
    assert r.recap["ghost"]["unreachable"] == 1 and r.recap["ghost"]["ok"] == 1
    assert r.recap["h1"]["ok"] == 2


HUNDRED = "\n".join(
    "    - name: task {0}\n      command: echo {0}\n      changed_when: false".format(n)
    for n in range(100))


def hundred_task_play() -> str:
    return "- hosts: web\n  gather_facts: false\n  tasks:\n" + HUNDRED + "\n"


def test_a_hundred_task_play_costs_one_runner_call_per_host(tmp_path, three_hosts):
    r = ioc_run(tmp_path, hundred_task_play(), inventory=three_hosts)
    assert r.rc == 0, r.stdout + r.stderr
    assert len(r.of("task_start")) == 100
    assert r.calls == {"h1": 1, "h2": 1, "h3": 1}  # counted by the runners themselves
    assert all(c["ok"] == 100 for c in r.recap.values())


def test_per_task_mode_costs_one_runner_call_per_task(tmp_path, three_hosts):
    r = ioc_run(tmp_path, hundred_task_play(), "--per-task", inventory=three_hosts)
    assert r.rc == 0, r.stdout + r.stderr
    # One call per task; the play has no handlers, so no flush is shipped.
    assert r.calls == {"h1": 100, "h2": 100, "h3": 100}


def test_python39_target_over_ssh(tmp_path, sshd, python39):
    inventory = sshd.inventory_ini(["old"], python=python39)
    r = ioc_run(tmp_path, """
        - hosts: old
          tasks:
            - name: facts come from the target's python
              debug: msg="{{ ansible_python_version }}"
            - copy:
                dest: "{{ playbook_dir }}/out.txt"
                content: "{{ ansible_python.version.major }}.{{ ansible_python.version.minor }}"
        """, inventory=inventory)
    assert r.rc == 0, r.stdout + r.stderr
    assert [e["result"]["msg"] for e in r.of("runner_ok") if e["task"].startswith("facts")] == ["3.9.18"]
    assert (tmp_path / "out.txt").read_text() == "3.9"


def test_plan_connects_to_nothing(tmp_path):
    inventory = "[web]\nnowhere ansible_host=192.0.2.1 ansible_port=1\n"
    (tmp_path / "hosts.ini").write_text(inventory)
    book = tmp_path / "play.yml"
    book.write_text("- hosts: web\n  tasks:\n    - debug: msg=x\n")
    proc = subprocess.run([sys.executable, "-m", "ioc", str(book), "-i", str(tmp_path / "hosts.ini"),
                           "--plan"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0
    assert "step 1: batch of" in proc.stdout and "Gathering Facts" in proc.stdout
    assert "UNREACHABLE" not in proc.stdout


@pytest.mark.parametrize("content, message", [
    ("- hosts: all\n  tasks:\n    - debug: msg=x\n     bad: indent\n", "YAML parsing failed: "),
    ("- hosts: all\n  tasks:\n    - nosuchmodule: a=b\n", "couldn't resolve module/action 'nosuchmodule'"),
    ("- hosts: all\n  tasks:\n    - debug: msg=\"{{ x | nofilter }}\"\n", "template error"),
])
def test_bad_playbooks_fail_before_running_with_file_and_line(tmp_path, content, message):
    book = tmp_path / "play.yml"
    book.write_text(content)
    proc = subprocess.run([sys.executable, "-m", "ioc", str(book)], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 4
    assert proc.stderr.startswith("[ERROR]: ") and message in proc.stderr.splitlines()[0]
    assert re.search(r"^Origin: %s:\d+:\d+$" % re.escape(str(book)), proc.stderr, re.M), proc.stderr
    assert "PLAY [" not in proc.stdout


def test_facts_and_registered_values_outlive_their_play(tmp_path):
    r = ioc_run(tmp_path, """
        - hosts: localhost
          tasks:
            - command: echo first
              register: out
            - set_fact: remembered=yes
        - hosts: localhost
          gather_facts: false
          tasks:
            - name: later play
              debug: msg="{{ out.stdout }} {{ remembered }} {{ ansible_facts.python_version is defined }}"
        """)
    assert r.rc == 0, r.stdout + r.stderr
    assert [e["result"]["msg"] for e in r.of("runner_ok") if e["task"] == "later play"] == ["first yes True"]


def test_role_parameters_read_play_variables(tmp_path):
    """A role parameter is a template over play variables: those are shipped too
    (the variables a batch carries are closed over the tree's role parameters)."""
    role = tmp_path / "roles" / "greet" / "tasks"
    role.mkdir(parents=True)
    (role / "main.yml").write_text('- debug:\n    msg: "hello {{ who }}"\n')
    run = ioc_run(tmp_path, """
        - hosts: localhost
          gather_facts: false
          vars:
            target: world
          roles:
            - role: greet
              who: "{{ target }}"
        """)
    assert run.rc == 0, run.stdout + run.stderr
    assert '"msg": "hello world"' in run.stdout
