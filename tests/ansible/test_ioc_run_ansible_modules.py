"""``ioc-run`` with ansible-core importable: Ansible's own modules and facts, in batches.

The same playbook under ``ansible-playbook`` (linear) and under ``ioc-run``
run by an interpreter that has ansible-core (2.21 and 2.19): the recap, the
task statuses and the files on the host are the same, and ioc-run needs one
runner call for the whole play. Without ansible-core, ioc-run refuses such a
task before connecting (tests/unit/test_cli_plan.py covers refusals).
"""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.ansible.test_mitogen_batch import GREET_MODULE, ROOT, ansible, ansible_python  # noqa: F401

pytestmark = pytest.mark.integration


def run_ioc(python: str, workdir, playbook: str, inventory: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([python, "-m", "ioc", "-i", inventory, playbook], cwd=str(workdir),
                          env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def statuses(stdout: str):
    """(task banner, status line) pairs and the recap: what a reader compares."""
    keep = re.compile(r"^(TASK \[|PLAY RECAP|ok:|changed:|failed:|fatal:|skipping:|h\d +:)")
    return [re.sub(r"\*+$", "", line).rstrip() for line in stdout.splitlines()
            if keep.match(line)]


def test_ioc_run_runs_ansibles_modules_and_gathers_ansibles_facts(ansible, ansible_python,
                                                                  python39, tmp_path):
    ansible.write("library/greet.py", GREET_MODULE)
    ansible.write("play.yml", """
        - hosts: web
          tasks:
            - name: facts are Ansible's
              debug:
                msg: "{{ ansible_facts.lsb is defined }} {{ ansible_facts.devices is defined }}"
            - getent:
                database: passwd
                key: root
            - greet:
                who: "{{ ansible_facts.getent_passwd.root[4] }}"
                changed: true
              register: g
            - copy:
                content: "{{ g.greeting }}\\n"
                dest: "%s/{{ inventory_hostname }}.txt"
            - greet:
                fail: true
              ignore_errors: true
        """ % tmp_path)
    inventory = str(ansible.write("hosts", "[web]\n" + "".join(
        "%s ansible_connection=local ansible_python_interpreter=%s\n" % (h, python39)
        for h in ("h1", "h2"))))
    linear = ansible.run("play.yml", inventory, "linear")
    expected = {h: (tmp_path / ("%s.txt" % h)).read_text() for h in ("h1", "h2")}
    for h in ("h1", "h2"):
        (tmp_path / ("%s.txt" % h)).unlink()
    ioc = run_ioc(ansible_python, ansible.workdir, "play.yml", inventory)
    assert ioc.returncode == linear.rc == 0, ioc.stdout + ioc.stderr
    assert statuses(ioc.stdout) == statuses(linear.stdout)
    assert '"msg": "True True"' in ioc.stdout
    assert {h: (tmp_path / ("%s.txt" % h)).read_text() for h in ("h1", "h2")} == expected \
        == {"h1": "hello /root\n", "h2": "hello /root\n"}
    assert "ioc: 1 batch(es)" in ioc.stdout


def test_package_and_service_plan_with_a_collection_that_removed_a_candidate(ansible,
                                                                           ansible_python):
    """community.general 13 removed ``atomic_container``, one of the package managers
    ``package`` may pick: ioc-run plans the play (no traceback), and the candidates
    the play never names print no deprecation (``swupd``, ``installp``...)."""
    from tests.realworld.prepare import collections_path, collections_ready

    assert collections_ready(), "scripts/test prepares %s" % collections_path()
    ansible.write("play.yml", """
        - hosts: web
          tasks:
            - package:
                name: curl
            - service:
                name: cron
                enabled: true
        """)
    inventory = str(ansible.write("hosts", "[web]\nh1 ansible_connection=local\n"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(PYTHONPATH=str(ROOT), ANSIBLE_COLLECTIONS_PATH=str(collections_path()))
    plan = subprocess.run([ansible_python, "-m", "ioc", "-i", inventory, "play.yml", "--plan"],
                          cwd=str(ansible.workdir), env=env, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "Traceback" not in plan.stderr and "deprecated" not in plan.stderr, plan.stderr
    assert "step 1: batch of 4 task(s), 0-3; ends: end of play" in plan.stdout, plan.stdout


def test_a_modules_warnings_read_and_register_as_in_ansible(ansible, ansible_python):
    # ansible-core 2.19+ modules encode warnings as WarningSummary: the console
    # shows the message, and a registered result holds the message strings.
    ansible.write("play.yml", """
        - hosts: all
          gather_facts: false
          tasks:
            - user:
                name: ioc_warning_probe
                password: not-hashed
              check_mode: true
              register: r
            - debug: var=r.warnings
        """)
    inventory = str(ansible.write("hosts", "h1 ansible_connection=local "
                                           "ansible_python_interpreter=%s\n" % ansible_python))
    linear = ansible.run("play.yml", inventory, "linear")
    ioc = run_ioc(ansible_python, ansible.workdir, "play.yml", inventory)
    assert ioc.returncode == linear.rc == 0, ioc.stdout + ioc.stderr

    def shown(text: str):
        return [line for line in text.splitlines()
                if "appears not to have been hashed" in line]
    assert shown(ioc.stdout + ioc.stderr) == shown(linear.stdout + linear.stderr)
    assert len(shown(ioc.stdout + ioc.stderr)) == 2  # the [WARNING] and the registered string
    assert "WarningSummary" not in ioc.stdout + ioc.stderr


WARNS_MODULE = '''
#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(msg=dict(type='str', required=True)))
    module.warn(module.params['msg'])
    module.exit_json(changed=False)


if __name__ == '__main__':
    main()
'''


def test_what_loading_an_included_file_displays_comes_when_a_host_reaches_it(
        ansible, ansible_python, python39):
    """Ansible displays a deprecated module's routing (2.21: ``apt_key``,
    ``apt_repository``) when it loads the task, and linear loads an included
    file only when a host reaches the include: never for a file no host
    includes (a role's other-OS branch: nginx's setup-Ubuntu.yml under
    ioc-run printed apt_repository's), after what earlier tasks printed for
    one that is, with the origin of the module's name (ioc-run printed them
    all before the play, ``Origin: <unknown>``). Under 2.19 neither prints
    one: the stderr is the task's warning alone, in both."""
    ansible.write("library/warns.py", WARNS_MODULE)
    ansible.write("unreached.yml", """
        - name: a deprecated module in a file no host includes
          ansible.builtin.apt_key:
            url: https://example.invalid/key.asc
          when: false
        """)
    ansible.write("reached.yml", """
        - name: a deprecated module in a file a host includes
          ansible.builtin.apt_repository:
            repo: deb http://example.invalid/debian stable main
          when: false
        """)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - name: an include no host reaches
              include_tasks: unreached.yml
              when: false
            - name: a warning printed before the include
              warns:
                msg: printed by the task before the include
            - name: an include every host reaches
              include_tasks: reached.yml
            - name: a module ioc completes around Ansible's (the name written travels to no runner)
              service:
                name: ioc-no-such-service
                state: started
              ignore_errors: true
        """)
    inventory = str(ansible.write("hosts", "[web]\n" + "".join(
        "%s ansible_connection=local ansible_python_interpreter=%s\n" % (h, python39)
        for h in ("h1", "h2"))))
    linear = ansible.run("play.yml", inventory, "linear")
    ioc = run_ioc(ansible_python, ansible.workdir, "play.yml", inventory)
    assert ioc.returncode == linear.rc == 0, ioc.stdout + ioc.stderr
    assert statuses(ioc.stdout) == statuses(linear.stdout)
    assert ioc.stderr == linear.stderr
    assert "apt_key" not in ioc.stderr
    assert ioc.stderr.index("printed by the task before the include") < (
        ioc.stderr.index("apt_repository") if "apt_repository" in ioc.stderr else len(ioc.stderr))
