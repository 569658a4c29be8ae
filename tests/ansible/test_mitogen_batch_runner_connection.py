"""Tasks that run through Ansible's task machinery reach their hosts over ioc's runners.

Under ``mitogen_batch`` a task ioc does not run natively (here ``greet``, a
``library/`` module with an action plugin of its own) runs through Ansible's
task machinery. Its connection is the ``ioc_runner`` plugin: every command
is served by the host's existing runner (``ioc_runner <host>: exec`` in the
dispatcher's log), so no second SSH connection is opened and a pipelined
module costs one round trip. The hosts are the test sshd behind the delay
proxy (``benchmarks/delayproxy.py``), which counts connections and round
trips. Where the runner cannot stand in (a local host, ``raw``), the task
keeps Ansible's connection and ``-vv`` says so; a host that dies is
UNREACHABLE in linear's words. Output is compared with the linear
strategy's as in test_mitogen_batch.py, under ansible-core 2.21 and 2.19.
"""
from __future__ import annotations

import re
import socket
import subprocess
import sys
import time

import pytest

from benchmarks.delayproxy import DelayProxy
from tests.ansible.test_mitogen_batch import (  # noqa: F401 (fixture)
    ROOT, Ansible, MIXED_PLAY, ansible_python, assert_same_output, write_foreign_greet)
from tests.integration.test_become import B_PASSWORD, TARGET_PYTHON
from tests.support import users
from tests.support.sshd import CLIENT_OPTIONS

pytestmark = pytest.mark.integration

A = "ioc_arun_a"
B = "ioc_arun_b"

#: A module that says who runs it, with an action plugin of its own (so the
#: task runs through Ansible).
IDENTITY_MODULE = '''
#!/usr/bin/python
import os, pwd
from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    module.exit_json(changed=False, user=pwd.getpwuid(os.geteuid()).pw_name)


if __name__ == "__main__":
    main()
'''
IDENTITY_ACTION = '''
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        result.update(self._execute_module(module_name="identity", task_vars=task_vars))
        return result
'''
#: An action plugin that never connects: it cuts the plan like ``greet`` does.
NOOP_ACTION = '''
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        return super().run(tmp, task_vars)
'''


@pytest.fixture
def ansible(ansible_python, tmp_path) -> Ansible:
    return Ansible(ansible_python, tmp_path)


@pytest.fixture
def proxy(sshd):
    """An undelayed proxy of the test's own: it counts connections (linear's ssh
    keeps its ControlMaster connections open for a minute after a run)."""
    with DelayProxy(sshd.host, sshd.port, 0.0) as p:
        yield p


def through_proxy(sshd, proxy, names, python, extra=""):
    return sshd.inventory_ini(names, extra, python=python, group="web").replace(
        "ansible_port=%d" % sshd.port, "ansible_port=%d" % proxy.port)


def runner_requests(log: str):
    """The ``ioc_runner`` requests the dispatcher served: (host, op, identity)."""
    return re.findall(r"ioc_runner (\S+): (exec|put|fetch)(?: as (\S+))?", log)


def run_batch_then_linear(ansible, proxy, playbook, inventory, **kwargs):
    """mitogen_batch first, so the proxy counts its connections alone, then linear."""
    proxy.reset()
    batch = ansible.run(playbook, inventory, "mitogen_batch", **kwargs)
    assert proxy.wait_idle(30), proxy.connections()
    batch.totals = proxy.totals()
    linear = ansible.run(playbook, inventory, "linear", **kwargs)
    return linear, batch


#: A third-party action plugin that copies a host's file to the controller itself.
PULL_ACTION = '''
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        self._connection.fetch_file(self._task.args["src"], self._task.args["dest"])
        result["changed"] = True
        return result
'''

DELEGATED_PLAY = """
- name: delegated
  hosts: web
  gather_facts: false
  tasks:
    - name: greet on the other host
      greet:
        who: "{{ inventory_hostname }}"
      delegate_to: "{{ 'h2' if inventory_hostname == 'h1' else 'h1' }}"
      register: other
    - debug:
        msg: "{{ other.greeting }}"
- name: files
  hosts: web
  gather_facts: false
  tasks:
    - name: assemble puts a file
      assemble:
        src: fragments
        remote_src: false
        dest: "{{ out_dir }}/assembled-{{ inventory_hostname }}"
    - name: pull fetches it back
      pull:
        src: "{{ out_dir }}/assembled-{{ inventory_hostname }}"
        dest: "{{ out_dir }}/pulled-{{ inventory_hostname }}"
    - name: clean up for the other strategy's run
      file:
        path: "{{ out_dir }}/assembled-{{ inventory_hostname }}"
        state: absent
"""


def test_tasks_through_ansible_use_the_hosts_runners_not_a_second_ssh_connection(
        ansible, ansible_python, sshd, proxy):
    """A task through Ansible between native batches, one failing into a rescue,
    one notifying a handler, one delegated, files put and fetched: each runs on
    the runners ioc has."""
    write_foreign_greet(ansible)
    ansible.write("action_plugins/pull.py", PULL_ACTION)
    ansible.write("files/fragments/1-a", "first\n")
    ansible.write("files/fragments/2-b", "second\n")
    ansible.write("play.yml", MIXED_PLAY + DELEGATED_PLAY)
    inventory = str(ansible.write("hosts.ini", through_proxy(sshd, proxy, ["h1", "h2"],
                                                            ansible_python)))
    out = ansible.workdir / "out"
    out.mkdir()
    linear, batch = run_batch_then_linear(ansible, proxy, "play.yml", inventory,
                                          args=["-e", "out_dir=%s" % out])
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert (out / "pulled-h2").read_text() == "first\nsecond\n"
    assert "rescued: greeting world failed" in batch.stdout
    assert "ok: [h1 -> h2(%s)]" % sshd.host in batch.stdout and '"msg": "hello h1"' in batch.stdout
    # One connection per host for the whole run: the runners' own.
    assert batch.totals["connections"] == 2, batch.totals
    assert len(batch.through_ansible) == 6, batch.log
    # Each greet is one pipelined exec on the runner of the host it runs on
    # (three tasks on both hosts; the delegated one on the other host's runner);
    # assemble's requests are its action plugin's own (a stat module, its
    # temporary directory, the file put there, the copy module, cleanup):
    # one request each; pull fetches.
    requests = runner_requests(batch.log)
    for host in ("h1", "h2"):
        assert [op for name, op, _ in requests if name == host] == \
            ["exec"] * 4 + ["exec"] * 3 + ["put"] + ["exec"] * 3 + ["fetch"], requests


def test_become_through_ansible_runs_in_the_runner_of_that_identity(ansible, sshd, proxy):
    """``become: true`` (sudo with a password) through Ansible: the command runs in
    the runner of the identity, not wrapped in sudo; the password never shows."""
    with users.become_accounts(sshd, A, B, B_PASSWORD, remote_tmp=True):
        ansible.write("library/identity.py", IDENTITY_MODULE)
        ansible.write("action_plugins/identity.py", IDENTITY_ACTION)
        ansible.write("play.yml", """
            - name: identities
              hosts: web
              gather_facts: false
              tasks:
                - name: as root
                  identity:
                  become: true
                  register: root
                - name: as the login user
                  identity:
                  register: login
                - name: as root, natively
                  command: id -un
                  become: true
                  register: native
                - debug:
                    msg: "{{ root.user }} {{ login.user }} {{ native.stdout }}"
        """)
        inventory = str(ansible.write("hosts.ini", (
            "[web]\nh1 ansible_host=%s ansible_port=%d ansible_python_interpreter=%s "
            "ansible_user=%s ansible_ssh_private_key_file=%s ansible_ssh_common_args='%s' "
            "ansible_become_password=%s\n" % (sshd.host, proxy.port, TARGET_PYTHON, B,
                                              sshd.client_key, CLIENT_OPTIONS, B_PASSWORD))))
        linear, batch = run_batch_then_linear(ansible, proxy, "play.yml", inventory)
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "root %s root"' % B in batch.stdout
    assert batch.totals["connections"] == 1, batch.totals
    # The sudo runner the native task uses is the one the Ansible task made.
    assert runner_requests(batch.log) == [("h1", "exec", "sudo:root"), ("h1", "exec", "")], \
        batch.log
    assert B_PASSWORD not in batch.stdout + batch.stderr + batch.log


def test_a_module_through_ansible_costs_one_round_trip_at_150ms(ansible, ansible_python, sshd):
    """The same play with a task through Ansible that never connects (``noop``) and
    one that runs a module (``greet``): the module's cost is the difference."""
    write_foreign_greet(ansible)
    ansible.write("action_plugins/noop.py", NOOP_ACTION)
    play = """
        - hosts: web
          gather_facts: false
          tasks:
            - command: echo one
            - %s
            - command: echo two
    """
    ansible.write("noop.yml", play % "noop: {}")
    ansible.write("greet.yml", play % "greet: {who: x}")
    with DelayProxy(sshd.host, sshd.port, 0.150) as slow:
        inventory = str(ansible.write("hosts.ini", through_proxy(sshd, slow, ["h1"],
                                                                ansible_python)))
        counts = []
        for _ in range(2):  # a loaded machine may add a turn (see test_latency.py)
            measured = {}
            for book in ("noop.yml", "greet.yml"):
                slow.reset()
                result = ansible.run(book, inventory, "mitogen_batch")
                assert result.rc == 0, result.stdout + result.stderr
                assert slow.wait_idle(30), slow.connections()
                measured[book] = slow.totals()
                time.sleep(0.1)
            counts.append(measured)
            if measured["greet.yml"]["round_trips"] - measured["noop.yml"]["round_trips"] <= 2:
                break
    for measured in counts:
        assert [m["connections"] for m in measured.values()] == [1, 1], counts
    assert min(m["greet.yml"]["round_trips"] - m["noop.yml"]["round_trips"]
               for m in counts) <= 2, counts
    assert runner_requests(result.log) == [("h1", "exec", "")], result.log


def test_tasks_the_runner_cannot_serve_keep_ansibles_connection_and_vv_says_so(
        ansible, ansible_python, sshd, proxy):
    """A local host keeps the local connection; ``raw`` keeps ssh (whose terminal
    its output shows): what is read is linear's, and ``-vv`` names each choice."""
    write_foreign_greet(ansible)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - command: echo native
            - name: greet everywhere
              greet:
                who: x
            - name: raw through ansible
              raw: echo raw
              environment: "{{ {'FOO': inventory_hostname} }}"
              register: r
            - debug:
                msg: "{{ r.stdout }}"
    """)
    inventory = str(ansible.write("hosts.ini", through_proxy(sshd, proxy, ["h1"], ansible_python)
                                  + "loc ansible_connection=local "
                                    "ansible_python_interpreter=%s\n" % ansible_python))
    proxy.reset()
    batch = ansible.run("play.yml", inventory, "mitogen_batch")
    # Counted at once: ssh's ControlPersist keeps its connection open a while.
    totals = proxy.totals()
    linear = ansible.run("play.yml", inventory, "linear")
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "raw\\r\\n"' in batch.stdout  # ssh's terminal, not the runner's pipe
    assert len(batch.through_ansible) == 2, batch.log
    # The runner, and the ssh connection Ansible opened for raw.
    assert totals["connections"] == 2, totals
    assert runner_requests(batch.log) == [("h1", "exec", "")], batch.log
    verbose = ansible.run("play.yml", inventory, "mitogen_batch", args=["-vv"])
    assert verbose.rc == 0, verbose.stdout + verbose.stderr
    said = [line for line in verbose.stdout.splitlines() if " connects with " in line]
    assert said == [
        "mitogen_batch: greet everywhere on h1 connects with the ioc runner of h1",
        "mitogen_batch: greet everywhere on loc connects with Ansible's own connection "
        "(connection local is not ssh)",
        "mitogen_batch: raw through ansible on h1 connects with Ansible's own connection "
        "(raw keeps Ansible's connection)",
        "mitogen_batch: raw through ansible on loc connects with Ansible's own connection "
        "(raw keeps Ansible's connection)"], verbose.stdout


#: An action plugin that takes the network down: it kills the proxy process
#: (``pid``) and waits until its port refuses connections.
SEVER_ACTION = '''
import os, signal, socket, time
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        os.kill(int(self._task.args["pid"]), signal.SIGKILL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", int(self._task.args["port"])), 1).close()
            except OSError:
                break
            time.sleep(0.05)
        return result
'''


def start_proxy(sshd, port: int) -> subprocess.Popen:
    """benchmarks/delayproxy.py as a process of its own on ``port``, once it listens."""
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.delayproxy", "--listen",
                             str(port), "--target", "%s:%d" % (sshd.host, sshd.port)],
                            cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout.readline().startswith(b"relaying"), "the proxy did not start"
    return proc


def test_a_host_that_dies_before_a_task_through_ansible_is_unreachable_as_in_linear(
        ansible, ansible_python, sshd):
    """The link to h1 goes down after a native task: its runner is gone, and the next
    task through Ansible finds it UNREACHABLE, worded as linear's ssh words it."""
    write_foreign_greet(ansible)
    ansible.write("action_plugins/sever.py", SEVER_ACTION)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - command: echo before
            - name: the link to h1 goes down
              sever:
                pid: "{{ proxy_pid }}"
                port: %d
              run_once: true
            - name: greet after
              greet:
                who: x
            - debug:
                msg: after
    """ % port)
    lines = sshd.inventory_ini(["h1", "h2"], python=ansible_python, group="web").splitlines()
    lines = [line.replace("ansible_port=%d" % sshd.port, "ansible_port=%d" % port)
             if line.startswith("h1 ") else line for line in lines]
    inventory = str(ansible.write("hosts.ini", "\n".join(lines) + "\n"))
    results = {}
    for strategy in ("mitogen_batch", "linear"):
        proxy = start_proxy(sshd, port)
        try:
            results[strategy] = ansible.run("play.yml", inventory, strategy,
                                            args=["-e", "proxy_pid=%d" % proxy.pid])
        finally:
            proxy.kill()
            proxy.wait()
    linear, batch = results["linear"], results["mitogen_batch"]
    assert linear.rc == 4, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert ('fatal: [h1]: UNREACHABLE! => {"changed": false, "msg": "Task failed: Failed to '
            'connect to the host via ssh: ssh: connect to host 127.0.0.1 port %d: Connection '
            'refused"' % port) in batch.stdout
    assert "h2                         : ok=3    changed=1    unreachable=0    failed=0" \
        in batch.stdout
