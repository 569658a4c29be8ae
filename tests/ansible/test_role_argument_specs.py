"""Role argument validation (``meta/argument_specs.yml``) under all three front ends.

Ansible starts a role that has an argument spec for its entry point with a
``validate_argument_spec`` task. ioc-run's loader adds the same task at the
same place; the runner runs it on the target with Ansible's own
``ArgumentSpecValidator`` (shipped with the batch), so under
``mitogen_batch`` it no longer leaves the batch. The same playbook under
linear, mitogen_batch and ioc-run: the same console, recap and exit code.
"""
from __future__ import annotations

import difflib

import pytest

from tests.ansible.test_ioc_run_ansible_modules import run_ioc
from tests.ansible.test_mitogen_batch import ansible, ansible_python, \
    assert_same_output  # noqa: F401 (fixtures)

pytestmark = pytest.mark.integration

SPECS = """
argument_specs:
  main:
    short_description: Greets someone.
    options:
      who:
        type: str
        required: true
      times:
        type: int
        default: 1
  colours:
    options:
      colour:
        type: str
        choices: [red, blue]
        required: true
"""

PLAY = """
- name: valid arguments
  hosts: web
  gather_facts: false
  vars:
    target: world
  roles:
    - role: greet
      who: "{{ target }}"
      times: "3"
  tasks:
    - name: another entry point, its own spec
      import_role:
        name: greet
        tasks_from: colours
      vars:
        colour: red
    - name: include with arguments as vars
      include_role:
        name: greet
      vars:
        times: 2
    - name: validation turned off
      include_role:
        name: greet
        rolespec_validate: false
      vars:
        who: unchecked
        times: 4
    - name: an entry point without a spec
      include_role:
        name: greet
        tasks_from: plain

- name: invalid arguments
  hosts: web
  gather_facts: false
  tasks:
    - name: who comes from the inventory, times is no int
      include_role:
        name: greet
      vars:
        times: many
    - debug:
        msg: never
"""


def test_role_argument_validation_matches_linear_everywhere(ansible, ansible_python, python39):
    ansible.write("roles/greet/meta/argument_specs.yml", SPECS)
    ansible.write("roles/greet/tasks/main.yml", """
        - debug:
            msg: "hello {{ who }} x{{ times }}"
        """)
    ansible.write("roles/greet/tasks/colours.yml", """
        - debug:
            msg: "colour {{ colour }}"
        """)
    ansible.write("roles/greet/tasks/plain.yml", """
        - debug:
            msg: plain
        """)
    ansible.write("play.yml", PLAY)
    inventory = str(ansible.write("hosts", "[web]\nh1 ansible_connection=local "
                                  "ansible_python_interpreter=%s who=inventory\n" % python39))
    linear, batch = ansible.both("play.yml", inventory)
    assert_same_output(linear, batch)
    assert linear.rc == 2
    assert linear.stdout.count("TASK [greet : Validating arguments against arg spec 'main' - "
                               "Greets someone.]") == 3
    assert "TASK [greet : Validating arguments against arg spec 'colours']" in linear.stdout
    assert "argument 'times' is of type str and we were unable to convert to int" in linear.stdout
    # every task ran natively, in the runner: none went through Ansible
    assert batch.through_ansible == [], batch.log
    assert batch.steps, batch.log

    ours = run_ioc(ansible_python, ansible.workdir, "play.yml", inventory)
    assert ours.returncode == linear.rc, ours.stdout + ours.stderr
    ioc_lines = without_error_blocks([line for line in ours.stdout.splitlines()
                                      if not line.startswith("ioc: ")])
    expected = without_error_blocks(linear.stdout.splitlines())
    assert ioc_lines == expected, "\n".join(difflib.unified_diff(
        expected, ioc_lines, "linear", "ioc-run", lineterm=""))


def without_error_blocks(lines):
    """Stdout without the ``[ERROR]: Task failed`` blocks before a ``fatal:``.

    Known difference: the validation task ioc-run prepends to a role has no
    place in a file, so its block names no origin and shows no excerpt; the
    ``fatal:`` line itself is compared.
    """
    out, skipping = [], False
    for line in lines:
        if line.startswith("[ERROR]: Task failed"):
            skipping = True
        elif line.startswith("fatal: "):
            skipping = False
        if not skipping:
            out.append(line)
    return out
