"""The ``mitogen_batch`` strategy plugin under the real ``ansible-playbook``.

Every test runs under both supported ansible-core releases (test ids
``[2.21]``: pyenv's Python 3.13; ``[2.19]``: the Python 3.11 venv scripts/test
makes), each time ansible-playbook of that release twice on the same playbook
and inventory: once with ``strategy = linear`` and once with the only change
an Ansible user makes, ``ANSIBLE_STRATEGY_PLUGINS=<strategy_plugin/>`` and
``ANSIBLE_STRATEGY=mitogen_batch``. mitogen_batch is always compared with the
linear run of the same release. Both run with ``-f 1`` so that linear's own
output order is deterministic (with more forks linear interleaves loop items
of different hosts as its workers happen to finish).

Whether a play ran natively is read from the dispatcher's log
(``IOC_BRIDGE_LOG``): the controller logs one line per step it runs.
"""
from __future__ import annotations

import difflib
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from ioc.ansible.version import SUPPORTED_ANSIBLE, version_problem
from tests.conformance.test_conformance import ANSIBLE_CORE, ANSIBLE_CORE_219, \
    ansible_python as find_ansible_python

ROOT = Path(__file__).resolve().parents[2]
STRATEGY_DIR = ROOT / "strategy_plugin"
TIMEOUT = 180
CORES = (ANSIBLE_CORE, ANSIBLE_CORE_219)

pytestmark = pytest.mark.integration

#: What ansible-core itself prints for any third-party strategy (2.19+).
ANSIBLE_OWN_WARNINGS = (
    "[WARNING]: Deprecation warnings can be disabled by setting",
    "[DEPRECATION WARNING]: Use of strategy plugins not included in ansible.builtin",
)


@pytest.fixture(scope="session", params=CORES)
def ansible_python(request) -> str:
    """The Python of one supported ansible-core (each test runs under both)."""
    core = request.param
    python = find_ansible_python(core)
    r = subprocess.run([python, "-c", "import ansible.release as r; print(r.__version__)"],
                       capture_output=True, text=True, timeout=60)
    if not r.stdout.startswith(core + "."):
        pytest.fail("ansible-core %s.x is not installed for %s (scripts/test installs it): %s"
                    % (core, python, (r.stdout + r.stderr).strip()[:300]), pytrace=False)
    return python


class Result:
    def __init__(self, proc: subprocess.CompletedProcess, log: Optional[Path]) -> None:
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.log = log.read_text() if log is not None and log.exists() else ""

    @property
    def steps(self) -> List[str]:
        """The steps the dispatcher ran natively ("Batch 1-5 on 2 host(s)")."""
        return re.findall(r"(?:Batch|ControllerStep) \d+-\d+ on \d+ host\(s\)", self.log)

    @property
    def through_ansible(self) -> List[str]:
        """The tasks the dispatcher had Ansible run ("AnsibleStep 3 on 2 host(s)")."""
        return re.findall(r"AnsibleStep \d+ on \d+ host\(s\)", self.log)

    def without_ansible_warnings(self, text: Optional[str] = None) -> str:
        text = self.stdout if text is None else text
        return "".join(line for line in text.splitlines(True)
                       if not line.startswith(ANSIBLE_OWN_WARNINGS))


class Ansible:
    """Runs playbooks in one directory under either strategy."""

    def __init__(self, python: str, workdir: Path) -> None:
        self.python = python
        self.workdir = workdir
        self.config = workdir / "ansible.cfg"
        self.config.write_text("[defaults]\n")

    def write(self, name: str, text: str) -> Path:
        path = self.workdir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
        return path

    def run(self, playbook: str, inventory: str, strategy: str,
            env: Optional[Dict[str, str]] = None, args: List[str] = (),
            merged: bool = False) -> Result:
        """``merged``: stderr goes to stdout's pipe (``Result.stdout`` holds both
        in the order they reached it), and stdout is block-buffered (no
        PYTHONUNBUFFERED), as under ansible-test."""
        environ = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")
                   and not (merged and k == "PYTHONUNBUFFERED")}
        environ.update({
            "ANSIBLE_CONFIG": str(self.config),
            "ANSIBLE_STRATEGY": strategy,
            "ANSIBLE_HOST_KEY_CHECKING": "False",
            "ANSIBLE_RETRY_FILES_ENABLED": "False",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORKS": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        })
        log = None
        if strategy == "mitogen_batch":
            log = self.workdir / ("bridge-%s.log" % os.urandom(4).hex())
            environ.update({"ANSIBLE_STRATEGY_PLUGINS": str(STRATEGY_DIR),
                            "IOC_BRIDGE_LOG": str(log)})
        environ.update(env or {})
        script = os.path.join(os.path.dirname(self.python), "ansible-playbook")
        proc = subprocess.run([self.python, script, "-i", inventory, playbook, *args],
                              cwd=str(self.workdir), env=environ, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT if merged else subprocess.PIPE,
                              text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
        return Result(proc, log)

    def both(self, playbook: str, inventory: str, **kwargs) -> "tuple[Result, Result]":
        return (self.run(playbook, inventory, "linear", **kwargs),
                self.run(playbook, inventory, "mitogen_batch", **kwargs))


@pytest.fixture
def ansible(ansible_python, tmp_path) -> Ansible:
    return Ansible(ansible_python, tmp_path)


def local_inventory(python: str, hosts=("h1", "h2")) -> str:
    return "[web]\n" + "".join("%s ansible_connection=local ansible_python_interpreter=%s\n"
                               % (h, python) for h in hosts)


def assert_same_output(linear: Result, batch: Result) -> None:
    assert batch.without_ansible_warnings(batch.stderr) == linear.stderr, (
        "stderr differs:\n%s\n---\n%s" % (linear.stderr, batch.stderr))
    assert batch.without_ansible_warnings() == linear.stdout, (
        "stdout differs\n--- linear:\n%s\n--- mitogen_batch:\n%s" % (linear.stdout, batch.stdout))
    assert batch.rc == linear.rc


NATIVE_PLAY = """
- name: native
  hosts: web
  vars:
    greeting: hello
  tasks:
    - name: say {{ greeting }}
      command: echo {{ greeting }} from {{ inventory_hostname }}
      register: said
    - debug:
        msg: "{{ said.stdout }}"
    - name: loop
      debug:
        msg: "{{ item }}"
      loop: [1, 2]
    - name: block
      block:
        - fail:
            msg: boom
          when: inventory_hostname == 'h2'
      rescue:
        - debug:
            msg: rescued {{ ansible_failed_result.msg }}
      always:
        - file:
            path: "{{ out_dir }}/{{ inventory_hostname }}"
            state: touch
          changed_when: false
    - name: notify
      command: "true"
      notify: handler
    - name: ignored
      fail:
        msg: ignored failure
      ignore_errors: true
      when: inventory_hostname == 'h1'
    - name: reset counters
      file:
        path: "{{ out_dir }}/count-{{ inventory_hostname }}-{{ item }}"
        state: absent
      loop: [a, b]
    - name: retried items
      shell: >-
        echo x >> {{ out_dir }}/count-{{ inventory_hostname }}-{{ item }};
        wc -l < {{ out_dir }}/count-{{ inventory_hostname }}-{{ item }}
      register: retried
      until: retried.stdout | int >= 2
      retries: 2
      delay: 0
      loop: [a, b]
    - name: remove counters
      file:
        path: "{{ out_dir }}/count-{{ inventory_hostname }}-{{ item }}"
        state: absent
      loop: [a, b]
  handlers:
    - name: handler
      debug:
        msg: handled on {{ inventory_hostname }}
# A play of its own on one host: linear prints a host's final result from
# its main thread while its results thread already prints the next host's
# items, so with a second host in the loop linear's own order varies run to run.
- name: one host
  hosts: h2
  gather_facts: false
  tasks:
    - name: an item fails
      fail:
        msg: item {{ item }}
      loop: [x, y]
      when: item == 'y'
      ignore_errors: true
"""


def test_a_native_play_reads_like_linear_locally(ansible, ansible_python, tmp_path):
    ansible.write("play.yml", NATIVE_PLAY)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory), args=["-e", "out_dir=%s" % tmp_path])
    assert linear.rc == 0, linear.stdout
    assert batch.steps, "the play did not run natively:\n%s\n%s" % (batch.stdout, batch.log)
    assert_same_output(linear, batch)
    assert "PLAY RECAP" in batch.stdout and "rescued=1" in batch.stdout
    assert (tmp_path / "h1").exists() and (tmp_path / "h2").exists()


def test_a_native_play_reads_like_linear_over_ssh(ansible, ansible_python, sshd, tmp_path):
    ansible.write("play.yml", NATIVE_PLAY)
    inventory = ansible.write("hosts.ini", sshd.inventory_ini(["h1", "h2"], group="web",
                                                              python=ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory), args=["-e", "out_dir=%s" % tmp_path])
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert batch.steps, "the play did not run natively:\n%s\n%s" % (batch.stdout, batch.log)
    assert_same_output(linear, batch)


def test_registered_values_facts_and_set_fact_reach_later_plays(ansible, ansible_python):
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: true
          tasks:
            - command: echo one-{{ inventory_hostname }}
              register: first
            - set_fact:
                derived: "{{ first.stdout }}-derived"
        - name: native reader
          hosts: web
          gather_facts: false
          tasks:
            - debug:
                msg: "{{ first.stdout }} {{ derived }} {{ ansible_facts.python.version.major }}"
            - debug:
                msg: "{{ hostvars['h1'].derived }} {{ hostvars['h2'].first.rc }}"
        - name: linear reader
          hosts: web
          gather_facts: false
          tasks:
            - greet:
                who: there
              register: greeted
            - debug:
                msg: "{{ first.stdout }} {{ derived }} {{ greeted.greeting }}"
    """)
    write_foreign_greet(ansible)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "one-h1 one-h1-derived 3" in batch.stdout
    assert "one-h1-derived 0" in batch.stdout
    assert "one-h2 one-h2-derived hello there" in batch.stdout
    # Plays 1 and 2 are one batch each; play 3 runs its action plugin through
    # Ansible, then its debug task natively.
    assert len(batch.steps) == 3, batch.log
    assert batch.through_ansible == ["AnsibleStep 1 on 2 host(s)"], batch.log


#: A ``library/`` module: a plain module, so the runner runs it from Ansible's
#: own module code (see test_mitogen_batch_modules.py).
GREET_MODULE = '''
#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(who=dict(default="world"),
                                              fail=dict(type="bool", default=False),
                                              changed=dict(type="bool", default=False)),
                           supports_check_mode=True)
    if module.params["fail"]:
        module.fail_json(msg="greeting %s failed" % module.params["who"])
    module.exit_json(changed=module.params["changed"], greeting="hello " + module.params["who"])


if __name__ == "__main__":
    main()
'''

#: An action plugin of the same name: controller work that ioc's runner cannot
#: do, so a ``greet`` task runs through Ansible's own task machinery.
GREET_ACTION = '''
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        result.update(self._execute_module(module_name="greet", module_args=self._task.args,
                                           task_vars=task_vars))
        return result
'''


def write_foreign_greet(ansible: "Ansible") -> None:
    """``greet``: a module with an action plugin of its own (runs through Ansible)."""
    ansible.write("library/greet.py", GREET_MODULE)
    ansible.write("action_plugins/greet.py", GREET_ACTION)


MIXED_PLAY = """
- hosts: web
  gather_facts: false
  tasks:
    - debug:
        msg: before
    - command: echo native-{{ inventory_hostname }}
      register: native
    - name: greet through ansible
      greet:
        who: "{{ native.stdout }}"
      register: greeted
    - name: native reads what ansible registered
      debug:
        msg: "{{ greeted.greeting }}"
    - block:
        - debug:
            msg: in block
        - name: greet fails on h2
          greet:
            fail: "{{ inventory_hostname == 'h2' }}"
        - debug:
            msg: after the failing task
      rescue:
        - debug:
            msg: "rescued: {{ ansible_failed_result.msg }}"
      always:
        - debug:
            msg: always
    - name: greet notifies
      greet:
        changed: true
      notify: handler
    - debug:
        msg: end
  handlers:
    - name: handler
      debug:
        msg: handled on {{ inventory_hostname }}
- name: later
  hosts: web
  gather_facts: false
  tasks:
    - debug:
        msg: "later: {{ greeted.greeting }}"
"""


def test_a_task_ioc_lacks_runs_through_ansible_between_native_batches(ansible, ansible_python):
    """Per-task fallback: only the ``library/`` module's tasks run through Ansible."""
    write_foreign_greet(ansible)
    ansible.write("play.yml", MIXED_PLAY)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "hello native-h1" in batch.stdout and "rescued: greeting world failed" in batch.stdout
    # h2's failure was rescued: h2 goes on, and into the later play, with the
    # value Ansible registered for it.
    assert "h2                         : ok=11   changed=2    unreachable=0    failed=0    " \
           "skipped=0    rescued=1" in batch.stdout
    assert '"msg": "later: hello native-h2"' in batch.stdout
    # The tasks around the three greet tasks (3, 6, 10) ran natively, in batches.
    assert batch.through_ansible == ["AnsibleStep 3 on 2 host(s)", "AnsibleStep 6 on 2 host(s)",
                                     "AnsibleStep 10 on 2 host(s)"], batch.log
    assert batch.steps == ["Batch 0-2 on 2 host(s)", "Batch 4-5 on 2 host(s)",
                           "Batch 7-9 on 2 host(s)", "Batch 11-13 on 2 host(s)",
                           "Batch 1-1 on 2 host(s)"], batch.log
    # -vv names exactly those tasks and why; -vvv prints the plan.
    verbose = ansible.run("play.yml", str(inventory), "mitogen_batch", args=["-vvv"])
    said = [line for line in verbose.stdout.splitlines() if line.startswith("mitogen_batch: task")]
    assert said == [
        "mitogen_batch: task %d runs through Ansible: greet runs the action plugin greet on "
        "the controller: task %s (%s/play.yml:%d)" % (index, name, ansible.workdir, line)
        for index, name, line in ((3, "greet through ansible", 8), (6, "greet fails on h2", 18),
                                  (10, "greet notifies", 29))], verbose.stdout
    assert "controller step (ansible): runs through Ansible: greet runs the action plugin" \
        in verbose.stdout


def test_tasks_run_through_ansible_over_ssh(ansible, ansible_python, sshd):
    """Ansible's own ssh connection for the fallback task, mitogen's for the batches."""
    write_foreign_greet(ansible)
    ansible.write("play.yml", MIXED_PLAY)
    inventory = ansible.write("hosts.ini", sshd.inventory_ini(["h1", "h2"], group="web",
                                                              python=ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert len(batch.through_ansible) == 3 and len(batch.steps) == 5, batch.log


def test_task_keywords_ioc_lacks_run_through_ansible(ansible, ansible_python):
    """become and a templated environment, in a serial play, read like linear."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          serial: 1
          tasks:
            - command: whoami
              register: me
            - name: become
              command: whoami
              become: true
              become_method: su
              register: root
            - name: templated environment
              command: printenv FOO
              environment: "{{ {'FOO': me.stdout + '-env'} }}"
              register: env
            - debug:
                msg: "{{ me.stdout }} {{ root.stdout }} {{ env.stdout }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    user = subprocess.run(["whoami"], capture_output=True, text=True).stdout.strip()
    assert '"msg": "%s root %s-env"' % (user, user) in batch.stdout
    # One serial batch of hosts after the other: the environment goes through
    # Ansible in each, the tasks around it natively (async runs natively:
    # tests/integration/test_async.py).
    assert sum("a templated environment" in line for line in batch.log.splitlines()
               if "AnsibleStep" in line) == 2, batch.log
    assert batch.steps.count("Batch 1-1 on 1 host(s)") == 2, batch.log


def test_include_vars_ansible_words_and_pause_run_through_ansible(ansible, ansible_python):
    """Their values come back from Ansible's variable manager to the native tasks after them
    (include_vars runs natively but for what only Ansible places alike, here
    delegate_facts: test_mitogen_batch_state.py)."""
    ansible.write("vars/extra/a.yml", "from_file: file value\nlisted: [1, 2]\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - include_vars:
                dir: vars/extra
              delegate_to: "{{ inventory_hostname }}"
              delegate_facts: true
            - debug:
                msg: "{{ from_file }} {{ listed | sum }}"
            - pause:
                seconds: 0
              register: paused
            - debug:
                msg: "paused {{ paused.stop is defined }}"
            - name: run_once propagates its result
              command: echo once
              run_once: true
              become: true
              become_method: su
              register: once
            - debug:
                msg: "{{ once.stdout }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert batch.stdout.count('"msg": "file value 3"') == 2
    # pause bypasses the host loop: Ansible runs it once, and (in 2.21) registers
    # its result for that host only; a run_once task's result reaches every host.
    assert batch.stdout.count('"msg": "paused True"') == 1
    assert batch.stdout.count('"msg": "paused False"') == 1
    assert batch.stdout.count('"msg": "once"') == 2
    assert batch.through_ansible[:2] == ["AnsibleStep 1 on 2 host(s)",
                                         "AnsibleStep 3 on 1 host(s)"], batch.log
    assert batch.steps[:1] == ["Batch 2-2 on 2 host(s)"], batch.log


def test_a_host_unreachable_in_a_task_run_through_ansible(ansible, ansible_python):
    """Ansible finds the host unreachable; ioc drops it, later plays do not see it."""
    write_foreign_greet(ansible)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - greet:
              register: greeted
            - debug:
                msg: "{{ greeted.greeting }}"
        - hosts: web
          gather_facts: false
          tasks:
            - debug:
                msg: later
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, hosts=("h1",)) +
                              "ghost ansible_host=127.0.0.1 ansible_port=1 "
                              "ansible_connection=ssh\n")
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 4, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "ghost                      : ok=0    changed=0    unreachable=1" in batch.stdout
    assert batch.through_ansible == ["AnsibleStep 1 on 2 host(s)"], batch.log
    assert batch.steps == ["Batch 2-2 on 1 host(s)", "Batch 1-1 on 1 host(s)"], batch.log


def test_add_host_and_group_by_run_through_ansible(ansible, ansible_python):
    """Ansible changes its inventory; ioc's copy follows for the native tasks after them."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - add_host:
                name: h3
                groups: added
                ansible_connection: local
                ansible_python_interpreter: %s
                color: blue
            - group_by:
                key: "by_{{ inventory_hostname }}"
            - debug:
                msg: "{{ groups['added'] }} {{ groups['by_h1'] | default([]) }} {{ group_names }}"
        - hosts: added
          gather_facts: false
          tasks:
            - debug:
                msg: "{{ color }} on {{ inventory_hostname }}"
    """ % ansible_python)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "\"msg\": \"['h3'] ['h1'] ['by_h2', 'web']\"" in batch.stdout
    assert '"msg": "blue on h3"' in batch.stdout
    assert batch.through_ansible == ["AnsibleStep 1 on 1 host(s)", "AnsibleStep 2 on 2 host(s)"], \
        batch.log
    assert batch.steps == ["Batch 3-3 on 2 host(s)", "Batch 1-1 on 1 host(s)"], batch.log


def test_a_failed_templated_run_once_through_ansible_stops_every_host(ansible, ansible_python):
    """Ansible decides the templated run_once; when that one host fails, linear fails all."""
    write_foreign_greet(ansible)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - name: once, templated, fails
              greet:
                fail: true
              run_once: "{{ 1 == 1 }}"
            - debug:
                msg: after
        - hosts: web
          gather_facts: false
          tasks:
            - debug:
                msg: later
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 2, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "after"' not in batch.stdout and '"msg": "later"' not in batch.stdout
    assert batch.through_ansible == ["AnsibleStep 1 on 2 host(s)"], batch.log


def test_the_plan_command_says_which_tasks_run_through_ansible(ansible, ansible_python):
    """``python -m ioc.ansible --plan <ansible-playbook args>`` plans, runs nothing."""
    write_foreign_greet(ansible)
    ansible.write("play.yml", MIXED_PLAY + """
- name: second
  hosts: web
  gather_facts: false
  tasks:
    - include_tasks: other.yml
    - debug:
        msg: after
- name: third
  hosts: web
  gather_facts: false
  tasks:
    - command: "true"
      notify: included handler
  handlers:
    - name: included handler
      include_tasks: other.yml
""")
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update({"ANSIBLE_CONFIG": str(ansible.config), "PYTHONPATH": str(ROOT)})
    r = subprocess.run([ansible_python, "-m", "ioc.ansible", "--plan", "-i",
                        str(inventory), "play.yml"], cwd=str(ansible.workdir), env=env,
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "PLAY [web] (play.yml:1)"
    ansible_steps = [line for line in lines if "controller step (ansible)" in line]
    assert [line.split("task ")[-1] for line in ansible_steps] == [
        "greet through ansible (play.yml:8)", "greet fails on h2 (play.yml:18)",
        "greet notifies (play.yml:29)"]
    assert "  step 1: batch of 3 task(s), 0-2; ends: before runs through Ansible" in lines[1]
    second = next(n for n, line in enumerate(lines) if line.startswith("PLAY [second] ("))
    assert "ends: dynamic include: its tasks are known once it has run" in lines[second + 1]
    assert lines[-1].startswith("PLAY [third]: runs whole with the linear strategy: "
                                "include_tasks in a handler runs through Ansible's linear "
                                "strategy (")


def test_failures_of_tasks_run_through_ansible_read_like_linear(ansible, ansible_python):
    """ignore_errors, run_once, a block with only always, a failure that ends the host."""
    write_foreign_greet(ansible)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - debug:
                msg: start
            - name: ignored failure
              greet:
                fail: "{{ inventory_hostname == 'h1' }}"
              ignore_errors: true
              register: ignored
            - debug:
                msg: "ignored failed={{ ignored.failed | default(false) }}"
            - name: once
              greet:
                who: once-{{ inventory_hostname }}
              run_once: true
              register: onced
            - debug:
                msg: "{{ onced.greeting }}"
            - set_fact:
                native_fact: "{{ onced.greeting }}-fact"
            - block:
                - name: fails on h2, no rescue
                  greet:
                    fail: "{{ inventory_hostname == 'h2' }}"
              always:
                - debug:
                    msg: always runs with {{ native_fact }}
            - debug:
                msg: only h1 is left
            - block:
                - name: fails, rescued
                  greet:
                    fail: true
              rescue:
                - name: the rescue through Ansible reads the failure
                  greet:
                    who: "{{ ansible_failed_task.name }}: {{ ansible_failed_result.msg }}"
                  register: told
                - debug:
                    msg: "{{ told.greeting }}"
            - name: fails everywhere
              greet:
                fail: true
            - debug:
                msg: never
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 2, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "always runs with hello once-h1-fact" in batch.stdout
    assert "never" not in batch.stdout.replace("TASK [debug]", "")
    assert '"msg": "hello fails, rescued: greeting world failed"' in batch.stdout
    assert batch.through_ansible == ["AnsibleStep 2 on 2 host(s)", "AnsibleStep 4 on 1 host(s)",
                                     "AnsibleStep 7 on 2 host(s)", "AnsibleStep 10 on 1 host(s)",
                                     "AnsibleStep 11 on 1 host(s)", "AnsibleStep 13 on 1 host(s)"], \
        batch.log
    assert len(batch.steps) == 5, batch.log


def test_filters_and_lookups_the_runner_lacks_stay_in_the_batch(ansible, ansible_python):
    """Ansible's own plugins answer for them: the filter from the dispatcher when the
    runner reaches it, the lookup on the controller before the batch."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - set_fact:
                size: 2048
            - name: a filter the runner lacks
              debug:
                msg: "{{ size | int | human_readable }}"
            - name: a lookup the runner lacks
              set_fact:
                timeout: "{{ lookup('config', 'DEFAULT_TIMEOUT') }}"
            - debug:
                msg: "{{ size }} {{ timeout }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "2.00 KB"' in batch.stdout and '"msg": "2048 10"' in batch.stdout
    assert batch.through_ansible == [], batch.log
    assert batch.steps == ["Batch 1-4 on 2 host(s)"], batch.log


def _junit_view(directory: Path) -> List[str]:
    """The junit callback's XML files, without timings and hostnames of the machine."""
    out = []
    for path in sorted(directory.glob("*.xml")):
        text = path.read_text()
        text = re.sub(r'(time|timestamp|hostname)="[^"]*"', r'\1="-"', text)
        text = re.sub(r'"(start|end|delta)": "[^"]*"', r'"\1": "-"', text)
        # 2.19 escapes the result's JSON inside <system-out>.
        text = re.sub(r'&quot;(start|end|delta)&quot;: &quot;.*?&quot;', r'&quot;\1&quot;: -', text)
        out.append(text)
    return out


def test_other_callback_plugins_get_real_results(ansible, ansible_python, tmp_path):
    """ansible-core's ``minimal`` (JSON of every result) and ``junit`` work unchanged.

    (The ``json`` stdout callback lives in the ansible.posix collection, which
    is not installed here; ``minimal`` prints the same result dictionaries.)
    """
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - name: run
              command: echo {{ inventory_hostname }}
            - name: skip on h1
              debug:
                msg: hi
              when: inventory_hostname != 'h1'
            - name: fail on h2
              fail:
                msg: nope
              when: inventory_hostname == 'h2'
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    results = {}
    for strategy in ("linear", "mitogen_batch"):
        junit = tmp_path / ("junit-" + strategy)
        results[strategy] = (ansible.run("play.yml", str(inventory), strategy, env={
            "ANSIBLE_STDOUT_CALLBACK": "minimal", "ANSIBLE_CALLBACKS_ENABLED": "junit",
            "JUNIT_OUTPUT_DIR": str(junit)}), junit)
    (linear, linear_junit), (batch, batch_junit) = results["linear"], results["mitogen_batch"]
    assert batch.steps, batch.log
    assert batch.rc == linear.rc == 2
    strip = lambda text: re.sub(r'"(start|end|delta)": "[^"]*"', r'"\1": "-"', text)
    assert strip(batch.without_ansible_warnings()) == strip(linear.stdout)
    assert 'h1 | CHANGED | rc=0 >>' in batch.stdout or '"stdout": "h1"' in batch.stdout
    mine, theirs = _junit_view(batch_junit), _junit_view(linear_junit)
    assert mine == theirs, "\n".join(difflib.unified_diff(
        theirs[0].splitlines(), mine[0].splitlines(), "linear", "mitogen_batch", lineterm=""))
    assert _junit_view(batch_junit) and "nope" in _junit_view(batch_junit)[0]


def test_an_unsupported_ansible_core_is_one_clear_error(ansible_python):
    code = textwrap.dedent("""
        import ansible.release
        ansible.release.__version__ = "2.18.6"
        import ioc.ansible.strategy as bridge
        try:
            bridge.StrategyModule
        except Exception as exc:
            print(type(exc).__name__, exc)
    """)
    r = subprocess.run([ansible_python, "-c", code], capture_output=True, text=True, timeout=60,
                       cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.stdout.strip() == ("AnsibleError the mitogen_batch strategy supports ansible-core "
                                "2.19 to 2.21; this is ansible-core 2.18.6"), r.stdout + r.stderr


GATE_MESSAGE = "the mitogen_batch strategy supports ansible-core 2.19 to 2.21; this is ansible-core %s"


def test_an_unsupported_ansible_core_stops_ansible_playbook_with_that_one_error(ansible,
                                                                                 ansible_python):
    """The whole run as a user sees it: Ansible's own error line, nothing of ours besides.

    ansible-playbook runs with ``ansible.release.__version__`` set to 2.18.6
    before its CLI starts (the gate reads it when the strategy is loaded).
    Checked by hand with a real ansible-core 2.18.19 venv, which prints the
    same single line.
    """
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - debug:
                msg: never shown
    """)
    ansible.write("hosts.ini", local_inventory(ansible_python))
    script = os.path.join(os.path.dirname(ansible_python), "ansible-playbook")
    code = ("import sys, runpy, ansible.release; ansible.release.__version__ = '2.18.6'; "
            "sys.argv = [%r, '-i', 'hosts.ini', 'play.yml']; runpy.run_path(%r, run_name='__main__')"
            % (script, script))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update({"ANSIBLE_CONFIG": str(ansible.config), "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_STRATEGY": "mitogen_batch", "ANSIBLE_STRATEGY_PLUGINS": str(STRATEGY_DIR),
                "PYTHONPATH": str(ROOT)})
    r = subprocess.run([ansible_python, "-c", code], cwd=str(ansible.workdir), env=env,
                       capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    output = r.stdout + r.stderr
    assert r.returncode != 0, output
    assert "never shown" not in output
    assert output.count(GATE_MESSAGE % "2.18.6") == 1, output
    assert "Traceback" not in output, output
    # Nothing but Ansible's own lines: the PLAY banner, the deprecation notices it
    # prints for any third-party strategy, and the one error.
    lines = [line for line in output.splitlines() if line.strip()]
    other = [line for line in lines if not line.startswith(ANSIBLE_OWN_WARNINGS)
             and not line.startswith("PLAY [") and GATE_MESSAGE % "2.18.6" not in line]
    assert other == [], output
    assert len([line for line in lines if "ERROR" in line]) == 1, output


@pytest.mark.parametrize("version, supported", [
    ("2.19.0", True), ("2.19.14", True), ("2.20.3", True), ("2.21.5", True),
    ("2.21.0rc1", True), ("2.18.19", False), ("2.22.0", False), ("2.22.0.dev0", False),
    ("3.0.0", False), ("devel", False),
])
def test_version_problem_names_the_supported_range(version, supported):
    assert SUPPORTED_ANSIBLE == ((2, 19), (2, 21))
    problem = version_problem(version)
    assert problem == (None if supported else GATE_MESSAGE % version)


def test_the_shim_loads_through_ansible_cfg(ansible, ansible_python):
    """``strategy_plugins``/``strategy`` in ansible.cfg, nothing in the environment."""
    ansible.config.write_text("[defaults]\nstrategy_plugins = %s\nstrategy = mitogen_batch\n"
                              % STRATEGY_DIR)
    ansible.write("play.yml", """
        - hosts: localhost
          gather_facts: false
          tasks:
            - debug:
                msg: hi
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update({"ANSIBLE_CONFIG": str(ansible.config), "IOC_BRIDGE_LOG": str(ansible.workdir / "log")})
    script = os.path.join(os.path.dirname(ansible_python), "ansible-playbook")
    r = subprocess.run([ansible_python, script, "play.yml"], cwd=str(ansible.workdir), env=env,
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert '"msg": "hi"' in r.stdout
    assert "Batch" in (ansible.workdir / "log").read_text()


def write_first_found_role(ansible: Ansible) -> None:
    """geerlingguy.mysql's variables.yml: include_vars of the first vars file
    named by the facts the play gathered, in a role (h1 has one of its own)."""
    ansible.write("roles/pick/tasks/main.yml", """
        - include_vars: "{{ item }}"
          with_first_found:
            - files:
                - "vars/{{ ansible_facts.system }}-{{ inventory_hostname }}.yml"
                - "vars/{{ ansible_facts.system }}.yml"
              skip: true
        - debug:
            msg: "{{ kind }}"
        - include_vars: "{{ item }}"
          with_first_found:
            - files: ["vars/none-{{ ansible_facts.system }}.yml"]
              skip: true
    """)
    ansible.write("roles/pick/vars/Linux-h1.yml", "kind: own\n")
    ansible.write("roles/pick/vars/Linux.yml", "kind: the system's\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: true
          gather_subset: [min]
          roles: [pick]
    """)


def test_include_vars_with_first_found_over_gathered_facts_is_one_runner_call(
        ansible, ansible_python):
    """The runner picks the file the with_first_found loop names among those
    the controller shipped: no host stops before it to have the controller
    answer the lookup afresh (issue 11, item 6: geerlingguy.mysql made two
    runner calls per host)."""
    write_first_found_role(ansible)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "own"' in batch.stdout and '"msg": "the system\'s"' in batch.stdout
    assert batch.steps == ["Batch 0-4 on 2 host(s)"], batch.log
    assert re.findall(r"Resume \d+-\d+ on \S+", batch.log) == [], batch.log
    assert re.findall(r"(h\d) +runner calls \(round trips\)=(\d+)", batch.log) == [
        ("h1", "1"), ("h2", "1")], batch.log


def test_a_host_that_skips_a_task_through_ansible_goes_on_in_its_batch(ansible, ansible_python):
    """A task run through Ansible that a host's ``when`` skips costs that host
    nothing: the runner skips it as it skips any task and goes on in the same
    call; a host that reaches it stops there, Ansible runs it for that host,
    and the host runs the rest of the batch (issue 11, item 3)."""
    write_foreign_greet(ansible)
    ansible.write("play.yml", SUSPENDING_PLAY)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "hello native-h2"' in batch.stdout
    assert "rescued: greeting world failed" in batch.stdout
    # One batch for the whole play; Ansible ran each greet for the hosts that
    # reach it only, and only those went on in a call of their own after it.
    assert batch.steps == ["Batch 1-8 on 2 host(s)"], batch.log
    assert batch.through_ansible == ["AnsibleStep 2 on 1 host(s)", "AnsibleStep 3 on 1 host(s)",
                                     "AnsibleStep 5 on 1 host(s)"], batch.log
    assert re.findall(r"Resume \d+-\d+ on \S+", batch.log) == [
        "Resume 3-8 on h2", "Resume 4-8 on h1", "Resume 6-8 on h2"], batch.log


def test_suspension_points_over_ssh(ansible, ansible_python, sshd):
    """The same over ssh: Ansible's run reaches the held host through its runner."""
    write_foreign_greet(ansible)
    ansible.write("play.yml", SUSPENDING_PLAY)
    inventory = ansible.write("hosts.ini", sshd.inventory_ini(["h1", "h2"], group="web",
                                                              python=ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert batch.steps == ["Batch 1-8 on 2 host(s)"], batch.log
    assert len(batch.through_ansible) == 3, batch.log


def test_a_host_that_skips_a_delegated_task_goes_on_in_its_batch(ansible, ansible_python, tmp_path):
    """A task that was a controller step only because of its ``delegate_to``
    stays inside its batch when the runner can decide its ``when``: a host
    the ``when`` skips goes on in the same call; a host that reaches it
    stops, the controller runs it on its delegate for that host, and the
    host runs the rest; h2, h1's delegate in one task, waits there so the
    file the task writes on it is there for its next task (issue 11, item 3)."""
    ansible.write("play.yml", DELEGATING_PLAY)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    runs = []
    for strategy in ("linear", "mitogen_batch"):
        out = tmp_path / ("out-" + strategy)
        out.mkdir()
        runs.append(ansible.run("play.yml", str(inventory), strategy,
                                args=["-e", "out_dir=%s" % out]))
    linear, batch = runs
    assert linear.rc == 2, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "h2: native-h2 on the controller, found True"' in batch.stdout
    assert '"msg": "rescued: failed for h2"' in batch.stdout
    # One batch for the whole play; no task went through Ansible; each
    # delegated task ran for the hosts that stopped at it only (h2 for
    # task 4 as h1's delegate), and only those went on in a call of their own.
    assert batch.steps == ["Batch 1-12 on 2 host(s)"], batch.log
    assert batch.through_ansible == [], batch.log
    assert re.findall(r"DelegateStep \d+ on \d+ host\(s\)", batch.log) == [
        "DelegateStep 3 on 1 host(s)", "DelegateStep 4 on 2 host(s)",
        "DelegateStep 6 on 1 host(s)", "DelegateStep 7 on 1 host(s)",
        "DelegateStep 11 on 1 host(s)"], batch.log
    # (h1 failed at 11: it does not go on)
    assert re.findall(r"Resume \d+-\d+ on \S+", batch.log) == [
        "Resume 4-12 on h2", "Resume 5-12 on h1", "Resume 5-12 on h2", "Resume 7-12 on h1",
        "Resume 8-12 on h2"], batch.log


#: tests/conformance/playbooks/delegate_suspension.yml, with ``fail`` for
#: the failures (their results have no times) and a failure no rescue takes
#: at the end (the recap and exit code count it).
DELEGATING_PLAY = """
        - hosts: web
          gather_facts: false
          tasks:
            - name: native first
              command: echo native-{{ inventory_hostname }}
              register: native
            - name: delegated, skipped by every host
              command: echo never
              delegate_to: "{{ replication_master | default(omit, true) }}"
              when: native.stdout == 'never'
            - name: delegated to localhost on h2 only
              command: echo {{ native.stdout }} on the controller
              delegate_to: localhost
              register: on_controller
              when: inventory_hostname == 'h2'
            - name: delegated to h2 for h1 only
              copy:
                content: "written for {{ inventory_hostname }}\n"
                dest: "{{ out_dir }}/for-h1-on-h2"
              delegate_to: h2
              when: inventory_hostname == 'h1'
            - name: what h2 finds after it
              stat:
                path: "{{ out_dir }}/for-h1-on-h2"
              register: found
            - name: delegated items
              command: echo {{ item }} for {{ inventory_hostname }}
              delegate_to: localhost
              loop: [a, b]
              when: inventory_hostname == 'h1' and item == 'b'
            - block:
                - name: delegated failure on h2
                  fail:
                    msg: failed for {{ inventory_hostname }}
                  delegate_to: localhost
                  when: inventory_hostname == 'h2'
                - debug:
                    msg: after the failure
              rescue:
                - debug:
                    msg: "rescued: {{ ansible_failed_result.msg }}"
            - debug:
                msg: "{{ inventory_hostname }}: {{ on_controller.stdout | default('skipped') }}, found {{ found.stat.exists }}"
            - name: delegated failure no rescue takes
              fail:
                msg: failed for {{ inventory_hostname }}
              delegate_to: localhost
              when: inventory_hostname == 'h1'
            - debug:
                msg: h2 goes on
"""


SUSPENDING_PLAY = """
        - hosts: web
          gather_facts: false
          tasks:
            - command: echo native-{{ inventory_hostname }}
              register: native
            - name: greet on h2 only
              greet:
                who: "{{ native.stdout }}"
              register: greeted
              when: inventory_hostname == 'h2'
            - name: greet items on h1 only
              greet:
                who: "{{ item }}"
              loop: [a, b]
              when: inventory_hostname == 'h1' and item == 'b'
            - name: greet nobody
              greet:
                who: nobody
              when: native.stdout == 'never'
            - block:
                - name: greet fails on h2
                  greet:
                    fail: true
                  when: inventory_hostname == 'h2'
                - debug:
                    msg: after the failure
              rescue:
                - debug:
                    msg: "rescued: {{ ansible_failed_result.msg }}"
            - debug:
                msg: "{{ greeted.greeting | default('skipped') }}"
"""
