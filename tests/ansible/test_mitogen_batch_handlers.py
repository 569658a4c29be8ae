"""Handlers ioc cannot run natively, under the real ``ansible-playbook``.

A handler whose module has no native ioc implementation (here a
``library/`` module next to the playbook) runs through Ansible's own
machinery, at the flush where linear runs it, for the hosts linear runs it
on; the flush's other handlers and every task still run natively. Each test
runs the playbook under linear and under mitogen_batch (both supported
ansible-core releases, see test_mitogen_batch.py) and compares stdout,
stderr and the exit code (the recap is part of stdout), then reads from the
dispatcher's log which handlers Ansible ran and on how many hosts.
"""
from __future__ import annotations

import re
import subprocess
import sys
from typing import List

import pytest

from tests.ansible.test_mitogen_batch import (write_foreign_greet, ROOT, Result, ansible,  # noqa: F401
                                              ansible_python, assert_same_output,
                                              local_inventory)

pytestmark = pytest.mark.integration


def handlers_through_ansible(result: Result) -> List[str]:
    """The handlers the dispatcher had Ansible run ("AnsibleHandler 1 at flush 4 on 2 host(s)")."""
    return re.findall(r"AnsibleHandler \d+ at flush \d+ on \d+ host\(s\)", result.log)


def native_flush_calls(result: Result) -> List[str]:
    """The runner calls of flushes that reach a foreign handler ("Flush 4: native ... 2 host(s)")."""
    return re.findall(r"Flush \d+: native handlers from \d+ on \d+ host\(s\)", result.log)


def run(ansible, ansible_python, play: str, hosts=("h1", "h2", "h3"), args=()):
    write_foreign_greet(ansible)
    ansible.write("play.yml", play)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, hosts))
    linear, batch = ansible.both("play.yml", str(inventory), args=list(args))
    assert_same_output(linear, batch)
    assert "runs with the linear strategy" not in batch.stdout
    return linear, batch


MIXED = """
- hosts: web
  gather_facts: false
  tasks:
    - name: notify the native handler before
      command: "true"
      notify: before
    - name: notify the foreign handler on h1 and h3
      command: "true"
      notify: foreign
      when: inventory_hostname != 'h2'
    - name: notify the native handler after
      command: "true"
      notify: after
      when: inventory_hostname != 'h3'
    - debug:
        msg: tasks done
  handlers:
    - name: before
      debug:
        msg: before on {{ inventory_hostname }}
    - name: foreign
      greet:
        who: "{{ inventory_hostname }}"
        changed: true
      register: greeted
    - name: after
      debug:
        msg: "after on {{ inventory_hostname }}: {{ greeted.greeting | default('not greeted') }}"
- name: later play
  hosts: web
  gather_facts: false
  tasks:
    - debug:
        msg: "{{ greeted.greeting | default('not greeted') }}"
"""


def test_a_library_handler_runs_through_ansible_between_native_handlers(ansible, ansible_python):
    linear, batch = run(ansible, ansible_python, MIXED)
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert "RUNNING HANDLER [foreign]" in batch.stdout
    assert "after on h1: hello h1" in batch.stdout
    assert "after on h2: not greeted" in batch.stdout
    assert re.search(r"h3 +: ok=6 +changed=3", batch.stdout), batch.stdout
    # Only the handler ran through Ansible, on the two hosts notified of it;
    # the native handlers before and after it ran natively, one call each.
    assert handlers_through_ansible(batch) == ["AnsibleHandler 1 at flush 5 on 2 host(s)"], \
        batch.log
    assert batch.through_ansible == [], batch.log
    assert native_flush_calls(batch) == ["Flush 5: native handlers from 0 on 3 host(s)",
                                         "Flush 5: native handlers from 2 on 2 host(s)"], batch.log


def test_the_plan_and_vv_say_which_handler_runs_through_ansible(ansible, ansible_python):
    write_foreign_greet(ansible)
    ansible.write("play.yml", MIXED)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    python = ansible.python
    plan = subprocess.run([python, "-m", "ioc.ansible", "--plan", "-i", str(inventory),
                           "play.yml"], cwd=str(ansible.workdir), capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                                            "ANSIBLE_CONFIG": str(ansible.config)})
    assert plan.returncode == 0, plan.stderr
    assert "controller step (ansible): flush runs a handler through Ansible: handler foreign " \
           "(play.yml:21): greet runs the action plugin greet on the controller; its other " \
           "handlers " \
           "run natively: (flush handlers)" in plan.stdout, plan.stdout
    assert "h1  handler foreign: through Ansible" in plan.stdout
    assert "runs whole with the linear strategy" not in plan.stdout
    verbose = ansible.run("play.yml", str(inventory), "mitogen_batch", args=["-vv"])
    assert verbose.rc == 0, verbose.stdout + verbose.stderr
    said = [line for line in verbose.stdout.splitlines() if line.startswith("mitogen_batch: flush")]
    assert said and said[0].startswith(
        "mitogen_batch: flush 5 flush runs a handler through Ansible: handler foreign ("), said


CHAINS = """
- hosts: web
  gather_facts: false
  tasks:
    - name: start the chain on h1 and h2
      command: "true"
      notify: native first
      when: inventory_hostname != 'h3'
    - name: notify the foreign handler directly on h3
      command: "true"
      notify: foreign
      when: inventory_hostname == 'h3'
  handlers:
    - name: native first
      command: "true"
      notify: foreign
    - name: foreign
      greet:
        changed: true
      notify:
        - native last
        - native first
    - name: native last
      debug:
        msg: last on {{ inventory_hostname }}
      changed_when: true
      notify: a topic
    - name: listener one
      debug:
        msg: heard one
      listen: a topic
    - name: listener two
      greet:
        who: topic
      listen: a topic
  post_tasks:
    - debug:
        msg: post
"""


def test_handler_chains_and_listen_through_a_foreign_handler(ansible, ansible_python):
    """A native handler notifies the foreign one, which notifies a later native one (same
    flush) and an earlier one (next flush); a native handler notifies a topic a foreign
    handler listens to."""
    linear, batch = run(ansible, ansible_python, CHAINS)
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert batch.stdout.count("RUNNING HANDLER [native first]") == 2
    assert batch.stdout.count("RUNNING HANDLER [listener two]") == 2
    # -vv shows the notifications, each before the result of the handler that made it.
    inventory = str(ansible.workdir / "hosts.ini")
    verbose = [ansible.run("play.yml", inventory, strategy, args=["-vv"]).stdout
               for strategy in ("linear", "mitogen_batch")]
    shown = [[line.split(" => ")[0] for line in out.splitlines()
              if line.startswith(("NOTIFIED HANDLER", "RUNNING HANDLER", "changed: [", "ok: ["))]
             for out in verbose]
    assert "NOTIFIED HANDLER native last for h1" in shown[0]
    assert shown[1] == shown[0]
    ran = handlers_through_ansible(batch)
    assert "AnsibleHandler 1 at flush 3 on 3 host(s)" in ran, batch.log
    assert "AnsibleHandler 4 at flush 3 on 3 host(s)" in ran, batch.log


FAILING = """
- hosts: web
  gather_facts: false
  {force}
  tasks:
    - name: notify
      command: "true"
      notify: [foreign, native]
    - name: h3 fails before the flush
      fail:
        msg: task failed
      when: inventory_hostname == 'h3'
  handlers:
    - name: foreign
      greet:
        fail: "{{{{ inventory_hostname == 'h2' }}}}"
    - name: native
      debug:
        msg: native on {{{{ inventory_hostname }}}}
"""


@pytest.mark.parametrize("force", ["", "force_handlers: true"], ids=["plain", "force_handlers"])
def test_a_failing_foreign_handler_fails_its_host(ansible, ansible_python, force):
    linear, batch = run(ansible, ansible_python, FAILING.format(force=force))
    assert linear.rc == 2, linear.stdout + linear.stderr
    assert "greeting h2 failed" not in batch.stdout  # the module's message names no host
    assert "native on h1" in batch.stdout and "native on h2" not in batch.stdout
    assert ("native on h3" in batch.stdout) == bool(force)
    assert handlers_through_ansible(batch) == [
        "AnsibleHandler 0 at flush 3 on %d host(s)" % (3 if force else 2)], batch.log


RUN_ONCE = """
- hosts: web
  gather_facts: false
  tasks:
    - name: notify on h2 and h3
      command: "true"
      notify: [foreign once, native]
      when: inventory_hostname != 'h1'
  handlers:
    - name: foreign once
      greet:
        who: "{{{{ inventory_hostname }}}}"
        fail: {fail}
      run_once: true
      register: once
    - name: native
      debug:
        msg: "native on {{{{ inventory_hostname }}}}: {{{{ once.greeting | default('-') }}}}"
"""


@pytest.mark.parametrize("fail", ["false", "true"])
def test_a_run_once_foreign_handler_runs_on_the_first_notified_host(ansible, ansible_python,
                                                                   fail):
    linear, batch = run(ansible, ansible_python, RUN_ONCE.format(fail=fail))
    assert handlers_through_ansible(batch) == ["AnsibleHandler 0 at flush 2 on 1 host(s)"], \
        batch.log
    if fail == "false":
        assert linear.rc == 0, linear.stdout + linear.stderr
        assert "native on h3: hello h2" in batch.stdout
    else:
        assert linear.rc == 2
        assert "native on" not in batch.stdout


FLUSHES = """
- hosts: web
  gather_facts: false
  pre_tasks:
    - name: notify in pre_tasks
      command: "true"
      notify: foreign
      when: inventory_hostname == 'h1'
  tasks:
    - name: notify in tasks
      command: "true"
      notify: [native, foreign]
    - name: flush now
      meta: flush_handlers
    - debug:
        msg: after the explicit flush
    - name: notify again
      command: "true"
      notify: native
      when: inventory_hostname == 'h2'
  handlers:
    - name: native
      debug:
        msg: native on {{ inventory_hostname }}
    - name: foreign
      greet:
        who: "{{ inventory_hostname }}"
"""


def test_foreign_handlers_at_the_pre_tasks_and_an_explicit_flush(ansible, ansible_python):
    linear, batch = run(ansible, ansible_python, FLUSHES, hosts=("h1", "h2"))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert batch.stdout.count("RUNNING HANDLER [foreign]") == 2
    assert handlers_through_ansible(batch) == ["AnsibleHandler 1 at flush 1 on 1 host(s)",
                                               "AnsibleHandler 1 at flush 3 on 2 host(s)"], \
        batch.log
    # The flush at the end of tasks cannot reach the foreign handler (the
    # explicit flush ran every notification before it): it runs in a batch
    # with the tasks around it, as in a play without foreign handlers.
    assert native_flush_calls(batch) == ["Flush 1: native handlers from 0 on 2 host(s)",
                                         "Flush 3: native handlers from 0 on 2 host(s)"], batch.log
    assert batch.steps == ["Batch 0-0 on 2 host(s)", "Batch 2-2 on 2 host(s)",
                           "Batch 4-7 on 2 host(s)"], batch.log


def test_a_play_without_foreign_handlers_runs_its_flushes_in_batches(ansible, ansible_python):
    linear, batch = run(ansible, ansible_python, FLUSHES.replace("greet:", "debug:")
                        .replace("who:", "msg:"), hosts=("h1", "h2"))
    assert linear.rc == 0
    assert handlers_through_ansible(batch) == [] and native_flush_calls(batch) == []
    assert batch.steps == ["Batch 0-7 on 2 host(s)"], batch.log  # one round trip
