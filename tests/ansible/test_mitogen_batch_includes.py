"""Dynamic ``include_tasks``/``include_role`` under the ``mitogen_batch`` strategy.

The runner runs the include; the parent loads what each host included with
Ansible's own ``IncludedFile`` machinery; both sides splice the loaded tasks
in after it and go on with the same plan. Every test compares the default
callback's output, recap and exit code with the linear run of the same
ansible-core (as in test_mitogen_batch.py) and reads from the dispatcher's
log that the included tasks ran natively, in batches.
"""
from __future__ import annotations

import pytest

from tests.ansible.test_mitogen_batch import write_foreign_greet, ansible, ansible_python, \
    assert_same_output, local_inventory  # noqa: F401 (fixtures)

pytestmark = pytest.mark.integration


def test_included_tasks_run_natively_and_a_foreign_one_through_ansible(ansible,
                                                                       ansible_python):
    """An included file with a ``library/`` module task: only that task goes through Ansible."""
    write_foreign_greet(ansible)
    ansible.write("tasks/mixed.yml", """
        - name: native in the include
          command: echo {{ part }} on {{ inventory_hostname }}
          register: said
        - name: foreign in the include
          greet:
            who: "{{ said.stdout }}"
          register: greeted
        - name: native again
          debug:
            msg: "{{ greeted.greeting }}"
        """)
    ansible.write("tasks/deeper.yml", """
        - name: nested include of {{ depth }}
          include_tasks: "{{ depth }}.yml"
        """)
    ansible.write("tasks/one.yml", """
        - debug:
            msg: one for {{ inventory_hostname }} at {{ idx }}
        """)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - name: before
              debug:
                msg: before
            - name: include with vars
              include_tasks: tasks/mixed.yml
              vars:
                part: first
            - name: per-item include, index_var
              include_tasks: tasks/deeper.yml
              loop: [one]
              loop_control:
                loop_var: depth
                index_var: idx
            - name: afterwards the include's values are there
              debug:
                msg: "{{ said.stdout }} / {{ greeted.greeting }}"
        """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "included: %s/tasks/mixed.yml for h1, h2" % ansible.workdir in batch.stdout
    assert '"msg": "hello first on h2"' in batch.stdout
    assert '"msg": "one for h1 at 0"' in batch.stdout
    # Only the library module's task ran through Ansible (once the include had
    # spliced it in); the include tasks and everything else ran natively.
    assert len(batch.through_ansible) == 1, batch.log
    assert batch.through_ansible[0].endswith("on 2 host(s)")
    assert len(batch.steps) >= 4, batch.log


def test_include_role_with_handlers_defaults_and_failures(ansible, ansible_python):
    """include_role (tasks_from, defaults private to it, its handler), a failing
    and a missing file inside blocks, and ``apply`` keywords."""
    ansible.write("roles/web/defaults/main.yml", "port: 8080\n")
    ansible.write("roles/web/tasks/main.yml", """
        - name: role main on {{ port }}
          command: echo {{ port }}
          notify: restart web
        """)
    ansible.write("roles/web/tasks/extra.yml", """
        - name: extra {{ item }}
          debug:
            msg: extra {{ item }} {{ port }}
        """)
    ansible.write("roles/web/handlers/main.yml", """
        - name: restart web
          debug:
            msg: restarted on {{ inventory_hostname }}
        """)
    ansible.write("tasks/boom.yml", """
        - name: boom on {{ inventory_hostname }}
          fail:
            msg: boom
          when: inventory_hostname == 'h1'
        - name: after boom
          debug:
            msg: not on h1
        """)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - name: the role
              include_role:
                name: web
            - name: the role's other file, per item
              include_role:
                name: web
                tasks_from: extra
              loop: [a, b]
            - name: defaults stay private
              debug:
                msg: "{{ port | default('no port') }}"
            - block:
                - name: include that fails on h1
                  include_tasks:
                    file: tasks/boom.yml
                    apply:
                      tags: [applied]
                - name: missing on h2
                  include_tasks:
                    file: "tasks/{{ 'nope' if inventory_hostname == 'h2' else 'boom' }}.yml"
              rescue:
                - debug:
                    # A file that cannot be loaded sets no ansible_failed_task (h2).
                    msg: rescued {{ ansible_failed_task.name | default('without a failed task') }}
            - name: the end
              debug:
                msg: end
        """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert_same_output(linear, batch)
    assert "restarted on h2" in batch.stdout and "no port" in batch.stdout
    assert "rescued boom on h1" in batch.stdout
    assert "rescued without a failed task" in batch.stdout
    assert batch.through_ansible == [], batch.log
    assert batch.steps, batch.log


def test_an_include_of_a_known_file_costs_no_round_trip(ansible, ansible_python):
    """include_tasks with a plain file name (in the play and in a role): its
    tasks run in the include's batch, announced and counted as linear does."""
    ansible.write("roles/app/tasks/main.yml", """
        - name: app first
          command: echo app
        - name: app install
          include_tasks: install.yml
        - name: app last
          debug:
            msg: app done
        """)
    ansible.write("roles/app/tasks/install.yml", """
        - name: installing
          debug:
            msg: installing on {{ inventory_hostname }} with {{ flavour }}
        """)
    ansible.write("tasks/static.yml", """
        - name: static one
          command: echo {{ word }}
          register: static_said
        - name: static two
          debug:
            msg: "{{ static_said.stdout }}"
          tags: [two]
        """)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            flavour: plain
          roles:
            - app
          tasks:
            - name: only h1
              include_tasks: tasks/static.yml
              when: inventory_hostname == 'h1'
              vars:
                word: hello
            - name: with apply
              include_tasks:
                file: tasks/static.yml
                apply:
                  tags: [applied]
              vars:
                word: again
            - name: done
              debug:
                msg: "{{ static_said.stdout }}"
        """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    for args in ([], ["--tags", "applied,two"]):
        linear, batch = ansible.both("play.yml", str(inventory), args=args)
        assert linear.rc == 0, linear.stdout + linear.stderr
        assert_same_output(linear, batch)
        assert batch.through_ansible == [], batch.log
        if not args:
            assert "included: %s/roles/app/tasks/install.yml for h1, h2" % ansible.workdir \
                in batch.stdout
            assert "included: %s/tasks/static.yml for h1\n" % ansible.workdir in batch.stdout
            assert '"msg": "again"' in batch.stdout
            # One batch for every task of the play: no include cuts it.
            assert batch.steps == ["Batch 1-11 on 2 host(s)"], batch.log
