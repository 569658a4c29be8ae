"""Ansible's own modules inside batches under ``mitogen_batch``.

A plain module (no action plugin of its own) that ioc does not implement,
whose options ioc's module lacks, or that comes from ``library/``, runs in
the runner from Ansible's own module code: no step leaves the batch, and the
console, recap and exit code are linear's. Fact gathering is Ansible's
``setup``. The target interpreter is a real Python 3.9.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.ansible.test_mitogen_batch import GREET_MODULE, ansible, ansible_python, \
    assert_same_output  # noqa: F401 (fixtures)

pytestmark = pytest.mark.integration


def old_target_inventory(python: str, hosts=("h1", "h2")) -> str:
    return "[web]\n" + "".join("%s ansible_connection=local ansible_python_interpreter=%s\n"
                               % (h, python) for h in hosts)


def test_plain_modules_run_inside_the_batch_as_ansible_runs_them(ansible, ansible_python, python39, tmp_path):
    ansible.write("library/greet.py", GREET_MODULE)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - name: a builtin module ioc lacks
              getent:
                database: passwd
                key: root
            - debug:
                msg: "{{ ansible_facts.getent_passwd.root[4] }}"
            - name: a library module
              greet:
                who: "{{ inventory_hostname }}"
                changed: "{{ inventory_hostname == 'h1' }}"
              register: greeted
            - debug:
                msg: "{{ greeted.greeting }}"
            - name: items, one failing
              greet:
                who: "{{ item }}"
                fail: "{{ item == 'b' }}"
              loop: [a, b, c]
              ignore_errors: true
            - name: arguments the module refuses
              getent:
                bogus: 1
              ignore_errors: true
            - name: check mode
              greet:
                changed: true
              check_mode: true
              register: checked
            - debug:
                var: checked.changed
            - name: an option ioc's own file module lacks
              file:
                path: "{{ out }}/{{ inventory_hostname }}"
                state: touch
                setype: _default
              changed_when: false
        """)
    inventory = str(ansible.write("hosts", old_target_inventory(python39)))
    linear, batch = ansible.both("play.yml", inventory, args=["-e", "out=%s" % tmp_path])
    assert_same_output(linear, batch)
    assert "hello h1" in batch.stdout and "asked" not in batch.stdout
    assert batch.steps == ["Batch 1-9 on 2 host(s)"], batch.log
    assert batch.through_ansible == [], batch.log
    assert (tmp_path / "h1").exists() and (tmp_path / "h2").exists()


def test_fact_gathering_is_ansibles_setup(ansible, ansible_python, python39, tmp_path):
    facts_d = tmp_path / "facts.d"
    facts_d.mkdir()
    (facts_d / "site.fact").write_text('{"role": "web"}\n')
    ansible.write("play.yml", """
        - hosts: web
          tasks:
            - setup:
                fact_path: %s
                gather_subset: [local]
            - debug:
                msg: >-
                  {{ ansible_facts.virtualization_type is defined }}
                  {{ ansible_facts['lsb'] is defined }} {{ ansible_facts.devices is defined }}
                  {{ ansible_facts.ansible_local.site.role }} {{ ansible_facts | length > 60 }}
        - hosts: web
          gather_subset: [min]
          tasks:
            - debug:
                msg: "{{ ansible_facts.keys() | length }}"
            - setup:
                filter: "ansible_distribution*"
              register: found
            - debug:
                msg: "{{ found.ansible_facts.keys() | sort }}"
        """ % facts_d)
    inventory = str(ansible.write("hosts", old_target_inventory(python39)))
    linear, batch = ansible.both("play.yml", inventory, args=["-v"])
    assert_same_output(linear, batch)
    assert "True True True web True" in batch.stdout  # Ansible's fact set, local facts too
    assert batch.steps == ["Batch 0-3 on 2 host(s)", "Batch 0-4 on 2 host(s)"], batch.log
    assert batch.through_ansible == [], batch.log


def test_a_module_with_its_own_action_plugin_still_runs_through_ansible(ansible, ansible_python,
                                                                       python39):
    """Controller work (an action plugin) is not the runner's: that task goes through Ansible."""
    ansible.write("library/greet.py", GREET_MODULE)
    ansible.write("action_plugins/greet.py", """
        from ansible.plugins.action import ActionBase


        class ActionModule(ActionBase):
            def run(self, tmp=None, task_vars=None):
                result = super().run(tmp, task_vars)
                result.update(self._execute_module(module_name="greet", task_vars=task_vars))
                result["on_controller"] = True
                return result
        """)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - getent:
                database: group
                key: root
            - greet:
              register: g
            - debug:
                msg: "{{ g.on_controller }} {{ ansible_facts.getent_group.root[1] }}"
        """)
    inventory = str(ansible.write("hosts", old_target_inventory(python39)))
    linear, batch = ansible.both("play.yml", inventory)
    assert_same_output(linear, batch)
    assert batch.through_ansible == ["AnsibleStep 2 on 2 host(s)"], batch.log


def test_roles_see_their_magic_variables_as_ansible_sets_them(ansible, ansible_python, python39):
    """role_name, ansible_role_name (the FQCN of a collection role), ansible_collection_name,
    role_path and, in a role included from a role, ansible_parent_role_names/paths."""
    ansible.write("roles/plain.role/tasks/main.yml", """
        - debug:
            msg: "{{ role_name }} {{ ansible_role_name }} {{ ansible_collection_name }}"
        - include_role:
            name: ns.coll.inner
        """)
    ansible.write("collections/ansible_collections/ns/coll/roles/inner/tasks/main.yml", """
        - debug:
            msg: >-
              {{ role_name }} {{ ansible_role_name }} {{ ansible_collection_name }}
              {{ role_path | basename }} {{ ansible_parent_role_names }}
              {{ ansible_parent_role_paths | map('basename') | list }}
        """)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          roles: [plain.role]
        """)
    inventory = str(ansible.write("hosts", old_target_inventory(python39)))
    linear, batch = ansible.both("play.yml", inventory)
    assert_same_output(linear, batch)
    assert "inner ns.coll.inner ns.coll inner ['plain.role'] ['plain.role']" in batch.stdout
    assert batch.through_ansible == [], batch.log


SYSV_SCRIPT = """#!/bin/sh
### BEGIN INIT INFO
# Provides:          {name}
# Required-Start:    $remote_fs
# Required-Stop:     $remote_fs
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: ioc test service
### END INIT INFO
case "$1" in
  start) touch {flag} ;;
  stop) rm -f {flag} ;;
  status) [ -f {flag} ] ;;
  *) exit 0 ;;
esac
"""


def test_service_enabled_on_a_host_without_systemd_runs_ansibles_module(ansible, ansible_python,
                                                                       python39, tmp_path):
    """PID 1 here is not systemd: Ansible's service action picks sysvinit (update-rc.d);
    the runner makes the same choice on the target, inside the batch."""
    name = "ioc-test-%s" % tmp_path.name.replace("_", "-")[-20:]
    script = SYSV_SCRIPT.format(name=name, flag=tmp_path / "running")
    ansible.write("init.sh", script)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - copy:
                src: init.sh
                dest: /etc/init.d/%(name)s
                mode: "0755"
            - service:
                name: %(name)s
                state: started
                enabled: true
              register: started
            - debug:
                msg: "{{ started.changed }} {{ started.state }} {{ started.enabled }}"
            - name: again, nothing changes
              service:
                name: %(name)s
                state: started
                enabled: true
            - shell: ls /etc/rc2.d | grep -c %(name)s
              register: links
              changed_when: false
            - service:
                name: %(name)s
                state: stopped
                enabled: false
            - file:
                path: /etc/init.d/%(name)s
                state: absent
            - command: update-rc.d %(name)s remove
        """ % {"name": name})
    inventory = str(ansible.write("hosts", old_target_inventory(python39, hosts=("h1",))))
    try:
        linear, batch = ansible.both("play.yml", inventory)
    finally:
        (Path("/etc/init.d") / name).unlink(missing_ok=True)
    assert_same_output(linear, batch)
    assert '"msg": "True started True"' in batch.stdout
    assert batch.rc == 0 and batch.through_ansible == [], batch.log
    assert len(batch.steps) == 1, batch.log


def test_package_manager_actions_choose_their_module_on_the_target(ansible, ansible_python,
                                                                   python39, tmp_path):
    """package, dnf and yum are action plugins that pick their module from the host's
    pkg_mgr fact (setup asked now when facts were not gathered): the runner makes the
    same choice inside the batch. On this Debian host ``package`` runs apt; dnf/yum find
    apt, not a dnf backend, and fail with Ansible's words; nothing leaves the batch."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - package:
                name: coreutils
                state: present
              register: pkg
            - debug:
                msg: "{{ pkg.changed }} {{ pkg.failed }}"
            - dnf:
                name: coreutils
              ignore_errors: true
            - yum:
                name: coreutils
              ignore_errors: true
            - package:
                name: coreutils
                enablerepo: epel
              when: ansible_facts.os_family | default('') == 'RedHat'
        """)
    inventory = str(ansible.write("hosts", old_target_inventory(python39, hosts=("h1",))))
    linear, batch = ansible.both("play.yml", inventory)
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "False False"' in batch.stdout
    assert "Could not detect which major revision of dnf is in use" in batch.stdout
    assert batch.through_ansible == [] and len(batch.steps) == 1, batch.log
