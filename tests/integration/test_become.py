"""become via sudo and su, over the real sshd, with throwaway local users.

The sshd fixture logs in as root. ``ioc_bec_a`` is an unprivileged user
without a password (root reaches it with sudo or su without one);
``ioc_bec_b`` has a password, may log in with the fixture's key, and may
become root with sudo only by giving that password. Both are removed
afterwards. Targets use Debian's ``/usr/bin/python3``: the controller's
pyenv interpreter lives under ``/root``, which other users cannot enter.
"""
from __future__ import annotations

import binascii
import inspect
import subprocess
import sys
import textwrap
import threading
import time
import zlib
from pathlib import Path

import mitogen.core
import pytest

from ioc.agentless_runner import batch as runner_batch, spawning
from ioc.transport import bootstrap
from ioc.transport.spec import BecomeSpec, spec_for
from ioc.transport.connector import Connector
from tests.integration.test_end_to_end import ROOT, Run, ioc_run
from tests.support import users

pytestmark = pytest.mark.integration

A = "ioc_bec_a"
B = "ioc_bec_b"
B_PASSWORD = "b-Pw-7f3e9c"
WRONG_PASSWORD = "wrong-Pw-51d0a2"
TARGET_PYTHON = "/usr/bin/python3"


@pytest.fixture(scope="module")
def accounts(sshd):
    with users.become_accounts(sshd, A, B, B_PASSWORD) as ready:
        yield ready


def inventory(sshd, hosts=("h1", "h2"), extra="", user=None):
    text = sshd.inventory_ini(list(hosts), extra, python=TARGET_PYTHON, group="web")
    if user:
        text = text.replace("ansible_user=%s " % sshd.user, "ansible_user=%s " % user)
    return text


def stdout_of(run: Run, task: str):
    return {e["host"]: e["result"].get("stdout") for e in run.of("runner_ok")
            if e["task"] == task}


def test_play_level_sudo_runs_as_the_user_in_one_batch_per_host(tmp_path, accounts):
    r = ioc_run(tmp_path, f"""
        - hosts: web
          become: true
          become_user: {A}
          tasks:
            - name: who
              command: id -un
            - name: write
              copy: dest=/home/{A}/made-{{{{ inventory_hostname }}}} content=x
            - name: facts
              debug: msg="{{{{ ansible_user_id }}}}"
        """, inventory=inventory(accounts))
    assert r.rc == 0, r.stdout + r.stderr
    assert stdout_of(r, "who") == {"h1": A, "h2": A}
    # Facts are gathered under the play's become, as Ansible does.
    assert {e["host"]: e["result"]["msg"] for e in r.of("runner_ok") if e["task"] == "facts"} \
        == {"h1": A, "h2": A}
    for host in ("h1", "h2"):
        made = Path("/home/%s/made-%s" % (A, host))
        assert made.stat().st_uid == users.user_id(A)
    # Gathering Facts and all three tasks: one batch, one runner call per host.
    assert r.of("transport")[0]["batches"] == 1
    assert r.calls == {"h1": 1, "h2": 1}


def test_su_reaches_the_user_from_root_without_a_password(tmp_path, accounts):
    r = ioc_run(tmp_path, f"""
        - hosts: web
          gather_facts: false
          tasks:
            - name: who
              command: id -un
              become: true
              become_method: su
              become_user: {A}
        """, inventory=inventory(accounts))
    assert r.rc == 0, r.stdout + r.stderr
    assert stdout_of(r, "who") == {"h1": A, "h2": A}


def test_mixed_identities_in_one_play_run_in_order(tmp_path, accounts):
    log = "/home/%s/order" % A  # /tmp's protected_regular would stop root appending
    r = ioc_run(tmp_path, f"""
        - hosts: web
          gather_facts: false
          tasks:
            - name: one
              shell: echo "one $(id -un)" >> {log}-{{{{ inventory_hostname }}}}
              become: true
              become_user: {A}
            - name: note
              debug: msg="no connection needed"
            - name: two
              shell: echo "two $(id -un)" >> {log}-{{{{ inventory_hostname }}}}
            - block:
                - name: three
                  shell: echo "three $(id -un)" >> {log}-{{{{ inventory_hostname }}}}
                - name: four
                  shell: echo "four $(id -un)" >> {log}-{{{{ inventory_hostname }}}}
                  become_method: su
                  become_user: {A}
              become: true
            - name: five
              shell: echo "five $(id -un)" >> {log}-{{{{ inventory_hostname }}}}
              become: true
              become_user: {A}
        """, inventory=inventory(accounts))
    try:
        assert r.rc == 0, r.stdout + r.stderr
        for host in ("h1", "h2"):
            assert Path("%s-%s" % (log, host)).read_text().split("\n")[:-1] == [
                "one %s" % A, "two root", "three root", "four %s" % A, "five %s" % A]
        # one+note | two | three | four | five: a batch per identity change, the
        # debug task joins the batch it is in.
        assert r.of("transport")[0]["batches"] == 5
    finally:
        for host in ("h1", "h2"):
            Path("%s-%s" % (log, host)).unlink(missing_ok=True)


def test_plan_says_where_the_identity_changes(tmp_path):
    book = tmp_path / "play.yml"
    book.write_text(textwrap.dedent(f"""
        - hosts: all
          become: true
          tasks:
            - command: id -un
            - name: as the connection user
              command: id -un
              become: false
        """))
    r = subprocess.run([sys.executable, "-m", "ioc", str(book), "--plan"], capture_output=True,
                       text=True, cwd=str(ROOT), timeout=60)
    assert r.returncode == 0, r.stderr
    assert "ends: become identity changes (become sudo:root -> the connection's user): " \
           "task as the connection user (play.yml:6)" in r.stdout
    assert "rule: a runner cannot change the user it runs as" in r.stdout


def test_inventory_become_variables_override_the_keywords(tmp_path, accounts):
    r = ioc_run(tmp_path, f"""
        - hosts: web
          gather_facts: false
          tasks:
            - name: who
              command: id -un
              become_user: root
        """, inventory=inventory(accounts, extra="ansible_become=true ansible_become_user=%s" % A))
    assert r.rc == 0, r.stdout + r.stderr
    assert stdout_of(r, "who") == {"h1": A, "h2": A}


def test_sudo_with_a_password_from_the_inventory_or_from_ask_become_pass(tmp_path, accounts):
    book = f"""
        - hosts: web
          gather_facts: false
          become: true
          tasks:
            - name: who
              command: id -un
        """
    from_inventory = ioc_run(tmp_path, book, inventory=inventory(
        accounts, user=B, extra="ansible_become_password=%s" % B_PASSWORD))
    assert from_inventory.rc == 0, from_inventory.stdout + from_inventory.stderr
    assert stdout_of(from_inventory, "who") == {"h1": "root", "h2": "root"}

    (tmp_path / "hosts.ini").write_text(inventory(accounts, user=B))
    (tmp_path / "play.yml").write_text(textwrap.dedent(book))
    asked = subprocess.run(
        [sys.executable, "-m", "ioc", "play.yml", "-i", "hosts.ini", "-K",
         "--events", "asked.jsonl"], input=B_PASSWORD + "\n", capture_output=True, text=True,
        cwd=str(tmp_path), timeout=120)
    assert asked.returncode == 0, asked.stdout + asked.stderr
    assert "BECOME password: " in asked.stderr
    assert B_PASSWORD not in asked.stdout + asked.stderr
    assert "ok=1 " in asked.stdout and "stdout" not in asked.stdout  # not verbose
    run = Run(asked, tmp_path / "asked.jsonl")
    assert stdout_of(run, "who") == {"h1": "root", "h2": "root"}


def test_a_wrong_or_missing_password_fails_that_host_only_and_is_never_shown(tmp_path, accounts):
    hosts = (inventory(accounts, ["h1"], user=B, extra="ansible_become_password=%s" % WRONG_PASSWORD)
             + inventory(accounts, ["h2"], user=B, extra="ansible_become_password=%s" % B_PASSWORD)
             + inventory(accounts, ["h3"], user=B))
    r = ioc_run(tmp_path, """
        - hosts: web
          become: true
          tasks:
            - name: who
              command: id -un
            - name: after
              debug: msg="still here"
        """, "-vvvv", inventory=hosts, timeout=120)
    assert r.rc == 2, r.stdout + r.stderr
    # As linear: the host fails at its first task (here fact gathering).
    assert {e["host"]: (e["task"], e["result"]["msg"]) for e in r.of("runner_failed")} == {
        "h1": ("Gathering Facts", "Task failed: Incorrect sudo password"),
        "h3": ("Gathering Facts", "Task failed: Missing sudo password")}
    assert "fatal: [h1]: FAILED! => {" in r.stdout and "fatal: [h3]: FAILED! => {" in r.stdout
    assert '"msg": "Task failed: Incorrect sudo password"' in r.stdout
    assert stdout_of(r, "who") == {"h2": "root"}
    assert [e["host"] for e in r.of("runner_ok") if e["task"] == "after"] == ["h2"]
    assert r.recap["h1"]["failures"] == 1 and r.recap["h3"]["failures"] == 1
    assert r.recap["h2"]["failures"] == 0
    events = (tmp_path / "events.jsonl").read_text()
    for secret in (WRONG_PASSWORD, B_PASSWORD):
        assert secret not in r.stdout and secret not in r.stderr and secret not in events


def test_a_become_runner_gets_its_modules_from_its_parent_not_over_the_wan(accounts):
    """The sudo child imports the runner closure from the ssh runner's cache:
    the controller answers no module request for it."""
    hostvars = {"ansible_host": accounts.host, "ansible_port": accounts.port,
                "ansible_user": accounts.user,
                "ansible_ssh_private_key_file": accounts.client_key,
                "ansible_ssh_common_args": accounts.host_ssh_args("t"),
                "ansible_python_interpreter": TARGET_PYTHON}
    spec = spec_for("t", hostvars)
    connector = Connector()
    batch = {"v": 1, "host": "t", "start": 0, "end": 2, "state": {}, "vars": {},
             "tree": [{"i": 0, "t": {"action": "stat", "args": {"path": "/"}}},
                      {"i": 1, "t": {"action": "command", "args": {"_raw_params": "id -un"}}}]}

    def run(ctx):
        bootstrap.preload(connector.router, ctx, bootstrap.action_modules(["stat", "command"]))
        events = mitogen.core.Receiver(connector.router)
        ctx.call(runner_batch.run_batch, batch, events.to_sender())
        done = []
        while True:
            event = events.get().unpickle()
            if event["e"] == "end":
                return done
            if event["e"] == "done":
                done.append(event["result"])

    try:
        base = connector.context("t", spec)
        assert run(base)[1]["stdout"] == "root"
        asked = connector.router.responder.get_module_count
        sudo = connector.context("t", spec, BecomeSpec(user=A, flags=("-H", "-S", "-n")))
        su = connector.context("t", spec, BecomeSpec(method="su", user=A))
        assert run(sudo)[1]["stdout"] == A
        assert run(su)[1]["stdout"] == A
        assert connector.router.responder.get_module_count == asked
        # Cached per identity for the run.
        assert connector.context("t", spec, BecomeSpec(user=A, flags=("-H", "-S", "-n"))) is sudo
    finally:
        connector.shutdown()


def test_a_play_level_become_costs_two_round_trips_more_than_none(accounts, tmp_path):
    """Through a 150 ms delay proxy: the sudo runner costs the proxied connect and
    mitogen's id allocation in the ssh runner, nothing per task."""
    from benchmarks.common import inventory as bench_inventory
    from benchmarks.delayproxy import DelayProxy

    counts = {}
    with DelayProxy(accounts.host, accounts.port, 0.150) as proxy:
        hosts = tmp_path / "lat.ini"
        hosts.write_text(bench_inventory(["lat1"], host=accounts.host, port=proxy.port,
                                         user=accounts.user, key=accounts.client_key,
                                         ssh_args=accounts.host_ssh_args, python=sys.executable))
        for become in ("false", "true"):
            book = tmp_path / ("become-%s.yml" % become)
            book.write_text("- hosts: all\n  become: %s\n  tasks:\n" % become
                            + "".join("    - command: echo %d\n" % i for i in range(20)))
            runs = []
            for _ in range(3):  # a loaded machine can make a window adjust look like a turn
                if become == "true" and runs and min(runs) <= counts["false"] + 2:
                    break
                proxy.reset()
                proc = subprocess.run([sys.executable, "-m", "ioc", str(book), "-i", str(hosts)],
                                      capture_output=True, text=True, timeout=180,
                                      cwd=str(ROOT), stdin=subprocess.DEVNULL)
                assert proc.returncode == 0, proc.stdout + proc.stderr
                assert proxy.wait_idle(30)
                runs.append(proxy.totals()["round_trips"])
            counts[become] = min(runs)
    assert counts["true"] <= counts["false"] + 2, counts


def test_controller_files_reach_each_identitys_runner(tmp_path, accounts):
    """Files travel once per runner: the sudo runner is another process than the ssh one."""
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "hello.txt").write_text("hello\n")
    r = ioc_run(tmp_path, f"""
        - hosts: web
          gather_facts: false
          tasks:
            - name: as root
              copy: src=hello.txt dest=/home/{A}/root-{{{{ inventory_hostname }}}}
            - name: as {A}
              copy: src=hello.txt dest=/home/{A}/user-{{{{ inventory_hostname }}}}
              become: true
              become_user: {A}
        """, inventory=inventory(accounts))
    assert r.rc == 0, r.stdout + r.stderr
    for host in ("h1", "h2"):
        assert Path("/home/%s/root-%s" % (A, host)).stat().st_uid == 0
        made = Path("/home/%s/user-%s" % (A, host))
        assert made.read_text() == "hello\n" and made.stat().st_uid == users.user_id(A)


def test_a_become_that_never_prompts_times_out_instead_of_hanging(tmp_path, accounts):
    stuck = tmp_path / "stuck-su"
    stuck.write_text("#!/bin/sh\nexec sleep 120\n")
    stuck.chmod(0o755)
    r = ioc_run(tmp_path, f"""
        - hosts: web
          gather_facts: false
          tasks:
            - name: who
              command: id -un
              become: true
              become_method: su
              become_user: {A}
              become_exe: {stuck}
        """, inventory=inventory(accounts, ["h1"], extra="ansible_timeout=3"), timeout=60)
    assert r.rc == 2, r.stdout + r.stderr
    assert [e["result"]["msg"] for e in r.of("runner_failed")] == [
        "Task failed: Timeout (3s) waiting for privilege escalation prompt: "]


def test_without_its_identity_a_host_fails_only_the_tasks_that_connect(tmp_path, accounts):
    """As in Ansible: debug still runs, when: false still skips, ignore_errors,
    rescue, loops (each item fails) and register still apply."""
    hosts = (inventory(accounts, ["h1"], user=B, extra="ansible_become_password=%s" % WRONG_PASSWORD)
             + inventory(accounts, ["h2"], user=B, extra="ansible_become_password=%s" % B_PASSWORD))
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          become: true
          tasks:
            - name: before
              debug: msg="before"
            - name: ignored
              command: id -un
              register: tried
              ignore_errors: true
            - name: seen
              debug: msg="{{ tried.msg | default(tried.stdout) }}"
            - block:
                - name: in block
                  command: id -un
              rescue:
                - name: rescue
                  debug: msg="rescued {{ ansible_failed_result.msg }}"
            - name: skipped
              command: id -un
              when: false
            - name: looped
              command: echo {{ item }}
              loop: [1, 2]
            - name: last
              command: id -un
        """, inventory=hosts)
    assert r.rc == 2, r.stdout + r.stderr
    wrong = "Task failed: Incorrect sudo password"
    h1 = [(e["event"], e["task"]) for e in r.events if e.get("host") == "h1"
          and e["event"] in ("runner_ok", "runner_failed", "runner_skipped",
                             "runner_item_failed")]
    assert h1 == [("runner_ok", "before"), ("runner_failed", "ignored"), ("runner_ok", "seen"),
                  ("runner_failed", "in block"), ("runner_ok", "rescue"),
                  ("runner_skipped", "skipped"), ("runner_item_failed", "looped"),
                  ("runner_item_failed", "looped"), ("runner_failed", "looped")]
    msgs = {e["task"]: e["result"]["msg"] for e in r.of("runner_ok") if e["host"] == "h1"}
    assert msgs["seen"] == wrong and msgs["rescue"] == "rescued " + wrong
    assert r.recap["h1"] == {"ok": 4, "changed": 0, "unreachable": 0, "failures": 1,
                             "skipped": 1, "rescued": 1, "ignored": 1}
    assert stdout_of(r, "last") == {"h2": "root"}


def test_reset_connection_ends_the_become_runner_too(tmp_path, accounts):
    r = ioc_run(tmp_path, f"""
        - hosts: web
          gather_facts: false
          become: true
          become_user: {A}
          tasks:
            - name: first
              shell: echo $PPID $(id -un)
            - name: reset
              meta: reset_connection
            - name: second
              shell: echo $PPID $(id -un)
        """, "-vvvv", inventory=inventory(accounts), timeout=120)
    assert r.rc == 0, r.stdout[-3000:] + r.stderr[-3000:]
    # Children end before the runner they were started from: no waiting out a timeout.
    assert "did not end" not in r.stderr
    first, second = stdout_of(r, "first"), stdout_of(r, "second")
    for host in ("h1", "h2"):
        assert first[host].split()[1] == second[host].split()[1] == A
        assert first[host].split()[0] != second[host].split()[0]  # a new runner


def test_fetch_and_copy_under_become_stay_in_one_batch(tmp_path, accounts):
    r = ioc_run(tmp_path, f"""
        - hosts: web
          gather_facts: false
          become: true
          become_user: {A}
          tasks:
            - name: private
              copy: dest=/home/{A}/private-{{{{ inventory_hostname }}}} content=mine mode="0600"
            - name: fetch
              fetch: src=/home/{A}/private-{{{{ inventory_hostname }}}} dest={tmp_path}/got/ flat=true
        """, inventory=inventory(accounts))
    assert r.rc == 0, r.stdout + r.stderr
    assert (tmp_path / "got" / "private-h1").read_text() == "mine"
    # one batch; the fetch's file is written by the controller before the
    # task ends (its own round trip, as linear has it there for the next task)
    assert r.calls == {"h1": 2, "h2": 2}


def test_a_become_variable_set_inside_a_batch_moves_only_that_host_to_the_new_identity(
        tmp_path, accounts):
    """set_fact of ansible_become* on one host: that host's next task that
    connects runs as the new identity (its runner stops before it and the rest
    of its batch runs in a runner of that identity); the other host, which set
    nothing, runs the whole play in one call. No cut for anyone."""
    r = ioc_run(tmp_path, f"""
        - hosts: web
          gather_facts: false
          tasks:
            - name: before
              command: id -un
            - name: h2 becomes {A} from here on
              set_fact:
                ansible_become: true
                ansible_become_user: {A}
              when: inventory_hostname == 'h2'
            - name: after
              command: id -un
            - name: again
              command: id -un
        """, inventory=inventory(accounts))
    assert r.rc == 0, r.stdout + r.stderr
    assert stdout_of(r, "before") == {"h1": "root", "h2": "root"}
    assert stdout_of(r, "after") == {"h1": "root", "h2": A}
    assert stdout_of(r, "again") == {"h1": "root", "h2": A}
    assert r.of("transport")[0]["batches"] == 1
    assert r.calls == {"h1": 1, "h2": 2}


def _stage_argument(first_stage) -> str:
    """The argument a boot command carries for ``first_stage``: its body,
    stripped and compressed as mitogen's ``Connection.get_boot_command`` does."""
    lines = inspect.getsourcelines(first_stage)[0][2:]
    source = textwrap.dedent("".join(s for s in lines if "#" not in s))[:-1].replace("    ", " ")
    packer = zlib.compressobj(zlib.Z_BEST_COMPRESSION, zlib.DEFLATED, -zlib.MAX_WBITS)
    return binascii.b2a_base64(packer.compress(source.encode()) + packer.flush()).decode().strip()


def test_a_become_child_is_started_with_iocs_first_stage(tmp_path, accounts):
    """The runner starts its become child with ioc's first stage (one that
    ends when its interpreter is gone: tests/unit/test_first_stage.py), not
    with the copy of mitogen's it was sent: sudo's command line, which stays
    for the child's life, carries the stage."""
    ours = _stage_argument(spawning.FirstStage._first_stage)
    seen, done = [], threading.Event()

    def watch():
        while not done.is_set():
            ps = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True).stdout
            seen.extend(ours in line for line in ps.splitlines()
                        if "sudo " in line.split(" -c ")[0] and "import binascii" in line)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        r = ioc_run(tmp_path, f"""
            - hosts: web
              gather_facts: false
              tasks:
                - command: sleep 2
                  become: true
                  become_user: {A}
            """, inventory=inventory(accounts, hosts=("h1",)))
    finally:
        done.set()
        watcher.join()
    assert r.rc == 0, r.stdout + r.stderr
    assert seen, "no sudo command line was seen while the task ran"
    assert all(seen), "a become child was started with mitogen's own first stage"
