"""``async``/``poll`` and ``timeout`` run on the target, inside the batch.

One playbook under ``ansible-playbook`` (linear, ansible-core 2.21), under
``mitogen_batch`` and under ``ioc-run``: the same console (job ids aside,
and ``ASYNC POLL`` lines, whose number depends on how long each poll takes:
one round trip under linear, none in the runner), the same recap and exit
code, the same files; the batch runs every task natively, in one runner call.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.ansible.test_mitogen_batch import ROOT, Ansible, local_inventory
from tests.conformance.test_conformance import ANSIBLE_CORE, ansible_python as find_python

pytestmark = pytest.mark.integration

#: Every outcome here is decided by margins of seconds (a loaded CI machine
#: starts a module in more than one): limits far above what the jobs need,
#: a job the wrapper kills (after 1 s, its file written 1 s later) well before
#: the first poll, a job held by a gate file until the play opens it.
PLAY = """
- hosts: web
  gather_facts: false
  tasks:
    - name: quick job
      command: sleep 1
      async: 60
      poll: 2
      register: quick
    - name: job past its time
      command: sleep 10
      async: 1
      poll: 5
      register: slow
      ignore_errors: true
    - name: fire and forget
      shell: while [ ! -e {{ out }}/gate ]; do sleep 0.1; done; echo done > {{ out }}/fired
      async: 60
      poll: 0
      register: fired
    - name: still running
      async_status:
        jid: "{{ fired.ansible_job_id }}"
      register: running
    - file:
        path: "{{ out }}/gate"
        state: touch
    - wait_for:
        path: "{{ out }}/fired"
    - name: until it has finished
      async_status:
        jid: "{{ fired.ansible_job_id }}"
      register: job
      until: job.finished and job.attempts > 1
      retries: 3
      delay: 1
    - name: clean up
      async_status:
        jid: "{{ fired.ansible_job_id }}"
        mode: cleanup
      register: erased
    - name: bounded
      command: sleep 5
      timeout: 1
      register: bounded
      ignore_errors: true
    - name: async per item, in check mode
      command: echo {{ item }}
      async: 60
      poll: 1
      loop: [a, b]
      check_mode: true
      register: items
    - debug:
        msg: >-
          {{ quick.finished }} {{ quick.rc }} {{ quick.results_file is match('/.*/[.]ansible_async/j') }}
          {{ slow.msg }} {{ fired.started }} {{ fired.finished }} {{ running.finished }}
          {{ job.rc }} {{ erased.erased == fired.results_file }} {{ bounded.msg }}
          {{ bounded.timedout.period }} {{ items.results | map(attribute='skipped') | list }}
    - name: outlives the run
      shell: sleep 1; echo survived > {{ out }}/survived
      async: 30
      poll: 0
"""


def _normal(text: str) -> str:
    text = re.sub(r"j\d+\.\d+", "JID", text)
    text = re.sub(r'"child_pid": \d+', '"child_pid": PID', text)
    return "".join(line for line in text.splitlines(True) if not line.startswith("ASYNC POLL"))


def _statuses(text: str):
    """What ioc-run shares with linear's console: banners, statuses, ASYNC lines, recap."""
    keep = re.compile(r"^(TASK \[|PLAY RECAP|ok:|changed:|failed:|fatal:|skipping:|ASYNC |"
                      r"FAILED - RETRYING|localhost +:|h\d +:)")
    return [re.sub(r"\*+$", "", line).rstrip() for line in _normal(text).splitlines()
            if keep.match(line)]


def _wait_for(path: Path, seconds: float = 20.0) -> str:
    """The file's text once it ends with a newline (or whatever it holds at the deadline)."""
    deadline = time.monotonic() + seconds
    text = ""
    while not text.endswith("\n") and time.monotonic() < deadline:
        time.sleep(0.2)
        text = path.read_text() if path.exists() else ""
    return text


def _ioc_run(python: str, workdir: Path, playbook: str, inventory: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([python, "-m", "ioc", "-i", inventory, playbook], cwd=str(workdir),
                          env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def python() -> str:
    return find_python(ANSIBLE_CORE)


def test_async_poll_and_timeout_read_like_linear_in_both_front_ends(python, tmp_path):
    runs = {}
    workdir = tmp_path
    ansible = Ansible(python, workdir)
    ansible.write("play.yml", PLAY)
    inventory = ansible.write("hosts.ini", "[web]\nh1 ansible_connection=local "
                              "ansible_python_interpreter=%s out=%s\n" % (python, workdir))
    for engine in ("linear", "mitogen_batch", "ioc-run"):
        for name in ("gate", "fired", "survived"):
            (workdir / name).unlink(missing_ok=True)
        start = time.monotonic()
        if engine == "ioc-run":
            runs[engine] = _ioc_run(python, workdir, "play.yml", str(inventory))
        else:
            runs[engine] = ansible.run("play.yml", str(inventory), engine)
        if os.environ.get("IOC_TEST_DUMP"):
            Path(os.environ["IOC_TEST_DUMP"], engine).write_text(
                "%.1f s\n%s\n%s" % (time.monotonic() - start, runs[engine].stdout,
                                     runs[engine].stderr))
        assert _wait_for(workdir / "survived") == "survived\n", engine
        assert (workdir / "fired").read_text() == "done\n", engine
    linear, batch, ioc = runs["linear"], runs["mitogen_batch"], runs["ioc-run"]
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert "Timeout exceeded" in linear.stdout and "Timed out after 1 second(s)" in linear.stdout
    assert "ASYNC OK on h1: jid=JID" in _normal(linear.stdout)
    assert batch.without_ansible_warnings(_normal(batch.stdout)) == _normal(linear.stdout)
    assert batch.rc == linear.rc
    assert batch.steps == ["Batch 1-12 on 1 host(s)"] and not batch.through_ansible, batch.log
    assert _statuses(ioc.stdout) == _statuses(linear.stdout), ioc.stdout + ioc.stderr
    assert ioc.returncode == linear.rc
    assert "1 runner call(s) for 1 host(s)" in ioc.stderr + ioc.stdout


def test_a_job_past_its_time_is_reported_and_killed(python, tmp_path):
    """The runner gives up after its one poll (at 6 s) and the wrapper kills
    the job (its watchdog looks every 5 s: at 10 s, its verdict written 1 s
    later, well after the poll; with ``async: 2, poll: 1`` the second poll came
    near the verdict, and a poll that reads it erases the file, as Ansible's).

    async_wrapper has a race of its own: its watchdog moves the job into a
    process group of its own (``setpgid``) just after forking it, and a job
    that has already started its module by then keeps the module outside the
    group the watchdog kills, so it runs to its end, under Ansible as here. A
    loaded machine lost that race once; when the survivor shows it (a process
    group other than the ``child_pid`` the wrapper killed), the run is made
    once more."""
    for attempt in range(2):
        outcome = _run_past_its_time(python, tmp_path / str(attempt))
        if outcome != "wrapper race":
            break
    assert outcome == "killed", outcome


def _run_past_its_time(python, tmp_path):
    tmp_path.mkdir()
    ansible = Ansible(python, tmp_path)
    marker = "30.%d%d" % (os.getpid(), len(tmp_path.name))
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - shell: sleep %s; touch %s/never
              async: 6
              poll: 6
    """ % (marker, tmp_path))
    inventory = ansible.write("hosts.ini", local_inventory(python, ("h1",)))
    ours = _ioc_run(python, tmp_path, "play.yml", str(inventory))
    assert ours.returncode == 2, ours.stdout + ours.stderr
    assert "ASYNC FAILED on h1: jid=j" in ours.stdout
    # (2.21's words for a job its polls did not see end: it asks a new result's ansible_parsed)
    assert '"msg": "async task produced unparsable results"' in ours.stdout, ours.stdout
    jid = re.search(r"jid=(j\d+\.\d+)", ours.stdout).group(1)
    # async_wrapper's watchdog kills the job at 10 s and writes its verdict 1 s later
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and subprocess.run(
            ["pgrep", "-f", "sleep " + marker], capture_output=True).returncode == 0:
        time.sleep(0.2)
    survivor = subprocess.run(["pgrep", "-f", "sleep " + marker], capture_output=True, text=True)
    verdict = {}
    while time.monotonic() < deadline + 5 and "msg" not in verdict:  # written 1 s after the kill
        verdict = json.loads((Path.home() / ".ansible_async" / jid).read_text())
        time.sleep(0.2)
    assert verdict["msg"] == "Timeout exceeded", verdict
    if survivor.returncode == 0:
        pid = int(survivor.stdout.split()[0])
        escaped = os.getpgid(pid) != verdict["child_pid"]
        os.killpg(os.getpgid(pid), 9)
        return "wrapper race" if escaped else "not killed: %r" % verdict
    assert not (tmp_path / "never").exists()
    return "killed"


def test_async_on_an_action_without_it_is_refused_at_plan_time(python, tmp_path):
    ansible = Ansible(python, tmp_path)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - debug:
                msg: hi
              async: 5
    """)
    inventory = ansible.write("hosts.ini", local_inventory(python, ("h1",)))
    ours = _ioc_run(python, tmp_path, "play.yml", str(inventory))
    assert ours.returncode != 0
    assert "[ERROR]: async with debug: This action (debug) does not support async." \
        in ours.stderr
    assert "play.yml:4:7\n" in ours.stderr  # the Origin line, then the excerpt


def test_a_module_killed_by_its_timeout_leaves_nothing_on_the_target(python, tmp_path):
    """A task's ``timeout`` kills Ansible's own module (``wait_for``, which ioc
    runs from Ansible's code, here told to wait 30 s): the payload directory
    the runner made for it (``ansible_<module>_payload_*``, with the module's
    zip) was left behind, as the killed module ran no cleanup of its own.
    Both front ends, the module's ``TMPDIR`` a directory of the test's."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ansible = Ansible(python, tmp_path)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - wait_for:
                path: %s/never
                timeout: 30
              timeout: 2
              environment:
                TMPDIR: %s
              ignore_errors: true
            - stat: path=%s
              environment:
                TMPDIR: %s
    """ % (tmp_path, scratch, tmp_path, scratch))
    inventory = ansible.write("hosts.ini", "[web]\nh1 ansible_connection=local "
                              "ansible_python_interpreter=%s\n" % python)
    for engine in ("mitogen_batch", "ioc-run"):
        if engine == "ioc-run":
            run = _ioc_run(python, tmp_path, "play.yml", str(inventory))
            out, rc = run.stdout, run.returncode
        else:
            run = ansible.run("play.yml", str(inventory), engine)
            out, rc = run.stdout, run.rc
        assert rc == 0, out
        assert "Timed out after 2 second(s)" in out, out
        assert sorted(os.listdir(scratch)) == [], (engine, os.listdir(scratch))
