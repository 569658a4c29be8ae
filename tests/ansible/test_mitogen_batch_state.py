"""mitogen_batch and Ansible's controller state: the inventory, per-host
``vars_files`` and fact gathering, each compared with linear under both
supported ansible-core releases (see test_mitogen_batch.py for the harness).

Each test also reads the dispatcher's log to prove the play ran natively
(or which single task went through Ansible), not whole through linear.
"""
from __future__ import annotations

import os
import subprocess

import pytest

from tests.ansible.test_mitogen_batch import (  # noqa: F401 (fixtures)
    Ansible, ansible, ansible_python, assert_same_output, local_inventory)

pytestmark = pytest.mark.integration


def test_hosts_add_host_creates_are_in_hostvars_groups_and_later_plays(ansible, ansible_python):
    """After add_host (run through Ansible), native tasks see the new host in
    ``hostvars`` and ``groups``; a later play runs natively on it with the
    connection add_host gave it. Other hosts' hostvars carry no play vars."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            pv: play var
          tasks:
            - add_host:
                name: h3
                groups: [added, more]
                ansible_connection: local
                ansible_python_interpreter: %s
                color: blue
            - name: read the new host
              debug:
                msg: >-
                  {{ hostvars['h3'].color }} {{ hostvars['h3'].group_names }}
                  {{ hostvars['h3'].inventory_hostname }} {{ groups['added'] }}
                  {{ groups['more'] }} {{ 'h3' in hostvars }}
                  {{ hostvars['h3'].pv | default('no play var') }}
                  {{ hostvars[ansible_play_hosts | difference([inventory_hostname]) | first].pv
                     | default('no play var') }}
                  {{ groups['db'] }} {{ hostvars['d1'].role }}
        - hosts: added
          gather_facts: false
          tasks:
            - command: echo {{ color }} {{ inventory_hostname }} {{ group_names | join(',') }}
              register: out
            - debug:
                msg: "{{ out.stdout }} {{ hostvars['h1'].inventory_hostname }}"
    """ % ansible_python)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python) +
                              "[db]\nd1 ansible_connection=local role=database\n")
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "blue ['added', 'more'] h3 ['h3'] ['h3'] True no play var no play var\\n['d1'] " \
        "database" in batch.stdout
    assert '"msg": "blue h3 added,more h1"' in batch.stdout
    assert batch.through_ansible == ["AnsibleStep 1 on 1 host(s)"], batch.log
    assert batch.steps == ["Batch 2-2 on 2 host(s)", "Batch 1-2 on 1 host(s)"], batch.log


def test_templated_vars_files_are_resolved_per_host(ansible, ansible_python):
    """``vars_files`` named per host (a template, a first-found list) run
    natively: each host reads its own files, at vars_files precedence (above
    play vars and inventory host vars, below set_fact and extra vars)."""
    ansible.write("vars/h1.yml", "color: red\nsize: small\nonly_h1: yes\n")
    ansible.write("vars/h2.yml", "color: green\nsize: large\n")
    ansible.write("vars/tier-front.yml", "tier_msg: front door\nshared: from tier\n")
    ansible.write("vars/tier-back.yml", "tier_msg: back office\nshared: from tier\n")
    ansible.write("vars/common.yml", "shared: common wins\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            color: play color
            size: play size
          vars_files:
            - "vars/{{ inventory_hostname }}.yml"
            - ["vars/missing-{{ inventory_hostname }}.yml", "vars/tier-{{ tier }}.yml"]
            - vars/common.yml
            - ["vars/none-{{ tier }}.yml"]
          tasks:
            - name: what each host sees
              debug:
                msg: >-
                  {{ color }} {{ size }} {{ only_h1 | default('-') }} {{ tier_msg }}
                  {{ shared }} {{ over }}
            - set_fact:
                size: set by set_fact
            - command: echo {{ color }} {{ size }}
              register: out
            - debug:
                msg: "{{ out.stdout }} {{ hostvars[ansible_play_hosts | difference(
                        [inventory_hostname]) | first].color | default('no play layer') }}"
    """)
    inventory = ansible.write(
        "hosts.ini", "[web]\n"
        "h1 ansible_connection=local ansible_python_interpreter=%s tier=front color=inv\n"
        "h2 ansible_connection=local ansible_python_interpreter=%s tier=back over=inv\n"
        % (ansible_python, ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory), args=["-e", "over=extra"])
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "red small True front door common wins extra"' in batch.stdout
    assert '"msg": "green large - back office common wins extra"' in batch.stdout
    # hostvars of the other host: its inventory color (h1's) or none (h2 has
    # none): vars_files are play variables, not in hostvars.
    assert '"msg": "red set by set_fact no play layer"' in batch.stdout
    assert '"msg": "green set by set_fact inv"' in batch.stdout
    assert batch.through_ansible == [], batch.log
    assert batch.steps, "the play did not run natively:\n%s" % batch.log


SMART_PLAYS = """
- hosts: h1
  tasks:
    - debug:
        msg: "{{ ansible_facts.hostname is defined }}"
- name: only h2 gathers
  hosts: web
  tasks:
    - debug:
        msg: "{{ ansible_facts.hostname is defined }}"
- name: nobody gathers
  hosts: web
  tasks:
    - debug:
        msg: "{{ ansible_facts.hostname is defined }}"
"""


def test_smart_gathering_gathers_only_where_facts_are_missing(ansible, ansible_python):
    """``gathering = smart``: a host whose facts Ansible gathered already does
    not gather again; the play runs natively with gathering for the others."""
    ansible.write("play.yml", SMART_PLAYS)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory), env={"ANSIBLE_GATHERING": "smart"})
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    gathered = [block.split("\n\n")[0] for block in batch.stdout.split("TASK [Gathering Facts]")[1:]]
    assert [line for block in gathered for line in block.splitlines()
            if line.startswith("ok:")] == ["ok: [h1]", "ok: [h2]"]
    assert batch.stdout.count("TASK [Gathering Facts]") == 2
    assert batch.through_ansible == [], batch.log
    assert batch.steps == ["Batch 0-2 on 1 host(s)", "Batch 0-2 on 2 host(s)",
                           "Batch 1-1 on 2 host(s)"], batch.log


def test_smart_gathering_through_ansible_for_the_hosts_without_facts(ansible, ansible_python):
    """When the gathering itself runs through Ansible (a templated play
    ``environment``), Ansible gathers for the hosts without facts only."""
    ansible.write("play.yml", """
        - hosts: h1
          tasks:
            - debug:
                msg: "{{ ansible_facts.hostname is defined }}"
        - hosts: web
          vars:
            my_env: {GREETING: hello}
          environment: "{{ my_env }}"
          gather_subset: [min]
          tasks:
            - command: printenv GREETING
              register: out
            - debug:
                msg: "{{ out.stdout }} {{ ansible_facts.hostname is defined }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory), env={"ANSIBLE_GATHERING": "smart"})
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert batch.stdout.count('"msg": "hello True"') == 2
    # the second play's gathering (entry 0) on h2 only, then its tasks (they
    # inherit the templated environment too)
    assert batch.through_ansible == ["AnsibleStep 0 on 1 host(s)", "AnsibleStep 2 on 2 host(s)",
                                     "AnsibleStep 3 on 2 host(s)"], batch.log


def test_fact_gathering_options_run_natively(ansible, ansible_python):
    """gather_subset, gather_timeout and fact_path on the play, and a gathering
    made conditional by ``import_playbook ... when``: the runner's setup takes
    them; the plays run natively."""
    ansible.write("facts.d/custom.fact", '{"answer": 42}\n')
    ansible.write("options.yml", """
        - hosts: web
          gather_subset: [min]
          gather_timeout: 20
          fact_path: "{{ playbook_dir }}/facts.d"
          tasks:
            - debug:
                msg: >-
                  {{ ansible_local.custom.answer }} {{ ansible_facts.system }}
                  {{ ansible_facts.hostname is defined }}
    """)
    ansible.write("play.yml", """
        - import_playbook: options.yml
        - import_playbook: options.yml
          when: inventory_hostname == 'h1'
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert batch.stdout.count('"msg": "42 Linux True"') == 3
    assert "skipping: [h2]" in batch.stdout
    assert batch.through_ansible == [], batch.log
    assert batch.steps == ["Batch 0-2 on 2 host(s)", "Batch 0-2 on 2 host(s)"], batch.log


def test_include_vars_runs_natively_and_its_values_reach_later_plays(ansible, ansible_python):
    """Every include_vars form real roles use runs in the batch (no step through
    Ansible): a file named by a fact, ``with_first_found`` and
    ``lookup('first_found')`` searching the role's ``vars/``, ``name``, a
    directory (``depth``, ``files_matching``), a vault-encrypted file (decrypted
    on the controller, its result hidden as Ansible hides it), ``hash_behaviour``
    and ``run_once``; a missing directory fails as Ansible words it. Their values win over play vars and reach ``hostvars`` and
    later plays, with ``ansible_included_var_files`` as linear's (-v shows results)."""
    ansible.write("vars/Linux.yml", "color: red\nlist: [1, 2]\n")
    ansible.write("vars/more/a.yml", "extra_a: from dir\n")
    ansible.write("vars/more/b.json", '{"extra_b": 2}\n')
    ansible.write("vars/more/sub/c.yml", "extra_c: deeper\n")
    ansible.write("vars/other.yml", "other: once\n")
    secret = ansible.write("vars/secret.yml", "token: s3cr3t-t0ken\nnested: {a: 1}\n")
    ansible.write("pw.txt", "pw\n")
    vault = os.path.join(os.path.dirname(ansible_python), "ansible-vault")
    subprocess.run([ansible_python, vault, "encrypt", "--vault-password-file",
                    str(ansible.workdir / "pw.txt"), str(secret)], check=True,
                   capture_output=True, timeout=120)
    ansible.write("roles/r/vars/Linux.yml", "inner: from role\n")
    ansible.write("roles/r/tasks/main.yml", """
        - name: Include OS-specific variables.
          include_vars: "{{ item }}"
          with_first_found:
            - files:
                - "{{ ansible_facts['system'] }}-{{ ansible_facts['machine'] }}.yml"
                - "{{ ansible_facts['system'] }}.yml"
              skip: true
        - include_vars:
            file: "{{ lookup('first_found', ['missing.yml', 'vars/' ~ ansible_facts['system'] ~ '.yml']) }}"
            name: bundle
        - debug:
            msg: "{{ inner }} {{ bundle }}"
    """)
    ansible.write("play.yml", """
        - hosts: web
          gather_subset: ['!all']
          vars:
            color: play
            nested: {b: 2}
          tasks:
            - include_vars:
                file: "{{ ansible_facts['system'] }}.yml"
              register: iv
            - debug:
                msg: "{{ color }} {{ list | sum }} {{ iv.ansible_included_var_files | length }}"
            - include_role:
                name: r
            - include_vars:
                dir: vars/more
                depth: 1
            - include_vars:
                dir: vars/more
                files_matching: "^[c]"
              register: matching
            - include_vars:
                file: secret.yml
                hash_behaviour: merge
            - debug:
                msg: >-
                  {{ extra_a }} {{ extra_b }} {{ extra_c }} {{ nested }} {{ token | length }}
                  {{ matching.ansible_included_var_files | map('basename') }}
            - include_vars:
                dir: no-such-dir
              ignore_errors: true
            - include_vars: other.yml
              run_once: true
        - hosts: web
          gather_facts: false
          tasks:
            - debug:
                msg: "later {{ color }} {{ inner }} {{ hostvars['h2'].other }} {{ hostvars['h1'].bundle }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory),
                                 args=["-v", "--vault-password-file", "pw.txt"])
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert batch.stdout.count('"msg": "red 3 1"') == 2
    assert batch.stdout.count("from role {'inner': 'from role'}") == 2
    assert batch.stdout.count("from dir 2 deeper {'b': 2, 'a': 1} 12") == 2
    assert "['c.yml']" in batch.stdout
    assert batch.stdout.count('"msg": "later red from role once {\'inner\': \'from role\'}"') == 2
    assert "s3cr3t" not in batch.stdout + batch.stderr + batch.log
    assert batch.through_ansible == [], batch.log
