"""mitogen_batch with become, ssh settings from ansible.cfg / the CLI, and mitogen_via.

Each run is compared with the linear strategy's, as in test_mitogen_batch.py.
The become users are throwaway ones like those of
tests/integration/test_become.py, under names of their own: the two files
may run at the same time on different pytest workers, and each removes its
users when it is done.
"""
from __future__ import annotations

import pytest

from tests.ansible.test_mitogen_batch import Ansible, ansible_python, assert_same_output  # noqa: F401 (fixture)
from tests.integration.test_become import B_PASSWORD, TARGET_PYTHON, WRONG_PASSWORD
from tests.integration.test_via import OWNER
from tests.support import users
from tests.support.sshd import CLIENT_OPTIONS

pytestmark = pytest.mark.integration

A = "ioc_abec_a"
B = "ioc_abec_b"


@pytest.fixture(scope="module")
def accounts(sshd):
    # remote_tmp: linear's modules would create it and warn about it; ioc has no remote tmp.
    with users.become_accounts(sshd, A, B, B_PASSWORD, remote_tmp=True) as ready:
        yield ready


@pytest.fixture
def ansible(ansible_python, tmp_path) -> Ansible:
    return Ansible(ansible_python, tmp_path)


def bare_inventory(sshd, hosts, extra=""):
    """Address, port, user and interpreter only: the key and ssh options come from elsewhere."""
    return "[web]\n" + "".join(
        "%s ansible_host=%s ansible_port=%d ansible_python_interpreter=%s %s\n"
        % (h, sshd.host, sshd.port, TARGET_PYTHON, extra) for h in hosts)


def inventory_as_b(sshd, hosts_and_extras):
    """Each host logs in as B with the sshd's key and ssh options, plus its own extra vars."""
    common = "ansible_user=%s ansible_ssh_private_key_file=%s ansible_ssh_common_args='%s'" % (
        B, sshd.client_key, CLIENT_OPTIONS)
    return "[web]\n" + "".join(
        "%s ansible_host=%s ansible_port=%d ansible_python_interpreter=%s %s %s\n"
        % (h, sshd.host, sshd.port, TARGET_PYTHON, common, extra) for h, extra in hosts_and_extras)


BECOME_PLAY = """
- name: become
  hosts: web
  tasks:
    - name: who
      command: id -un
      register: who
    - debug:
        msg: "{{ who.stdout }} {{ ansible_facts.user_id }}"
    - name: as the connection user
      command: id -un
      become: false
      register: plain
    - debug:
        msg: "{{ plain.stdout }}"
"""


def test_become_from_the_cli_and_ssh_settings_from_ansible_cfg(ansible, accounts):
    """--become/--become-user; the key only in ansible.cfg's ssh_args, the host key
    options only in --ssh-common-args: the run works only if both are applied."""
    ansible.config.write_text("[defaults]\n[ssh_connection]\nssh_args = -i %s -o IdentitiesOnly=yes\n"
                              % accounts.client_key)
    ansible.write("play.yml", BECOME_PLAY)
    inventory = ansible.write("hosts.ini", bare_inventory(accounts, ["h1", "h2"],
                                                          "ansible_user=%s" % accounts.user))
    args = ["--become", "--become-user", A, "--ssh-common-args", CLIENT_OPTIONS]
    linear, batch = ansible.both("play.yml", str(inventory), args=args)
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert '"msg": "%s %s"' % (A, A) in linear.stdout and '"msg": "root"' in linear.stdout
    # Facts and the first two tasks as A; then the connection user: two batches.
    assert batch.steps == ["Batch 0-3 on 2 host(s)", "Batch 4-5 on 2 host(s)"], batch.log
    assert_same_output(linear, batch)


def test_a_become_variable_set_by_one_host_moves_it_alone_to_the_new_identity(ansible,
                                                                              accounts):
    """include_vars (which may set anything) and a set_fact of ansible_become*
    on h2 only: no cut; h2's runner stops before its next task that connects,
    which runs as A with the rest of h2's batch; h1 runs on, as linear does."""
    ansible.write("vars/h2.yml", "ansible_become: true\nansible_become_user: %s\n" % A)
    ansible.write("vars/h1.yml", "other: value\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - name: before
              command: id -un
              register: before
            - include_vars: "vars/{{ inventory_hostname }}.yml"
            - name: after
              command: id -un
              register: after
            - name: again
              command: id -un
              register: again
            - debug:
                msg: "{{ before.stdout }} {{ after.stdout }} {{ again.stdout }}"
    """)
    inventory = ansible.write("hosts.ini", bare_inventory(
        accounts, ["h1", "h2"], "ansible_user=%s ansible_ssh_private_key_file=%s "
        "ansible_ssh_common_args='%s'" % (accounts.user, accounts.client_key, CLIENT_OPTIONS)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert '"msg": "root root root"' in linear.stdout
    assert '"msg": "root %s %s"' % (A, A) in linear.stdout
    assert_same_output(linear, batch)
    assert batch.steps == ["Batch 1-5 on 2 host(s)"], batch.log
    assert "Resume 3-5 on h2" in batch.log


def test_a_wrong_become_password_fails_that_host_like_linear(ansible, accounts):
    ansible.write("play.yml", """
        - name: become with a password
          hosts: web
          become: true
          tasks:
            - name: who
              command: id -un
    """)
    inventory = ansible.write("hosts.ini", inventory_as_b(accounts, [
        ("h1", "ansible_become_password=%s" % WRONG_PASSWORD),
        ("h2", "ansible_become_password=%s" % B_PASSWORD)]))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 2, linear.stdout + linear.stderr
    assert 'fatal: [h1]: FAILED! => {"changed": false, "msg": "Task failed: Incorrect sudo ' \
           'password"}' in batch.stdout
    assert batch.steps, batch.log
    assert_same_output(linear, batch)
    for secret in (WRONG_PASSWORD, B_PASSWORD):
        assert secret not in batch.stdout + batch.stderr + batch.log


def test_without_its_identity_a_host_fails_like_linear(ansible, accounts):
    """debug, skipped tasks, ignore_errors, rescue and loops around a failed become."""
    ansible.write("play.yml", """
        - name: become fails
          hosts: web
          gather_facts: false
          become: true
          tasks:
            - debug: msg=before
            - name: ignored
              command: id -un
              ignore_errors: true
            - block:
                - name: in block
                  command: id -un
              rescue:
                - debug: msg="rescued {{ ansible_failed_result.msg }}"
            - name: skipped
              command: id -un
              when: false
            - name: looped
              command: echo {{ item }}
              loop: [1, 2]
            - name: last
              command: id -un
    """)
    inventory = ansible.write("hosts.ini", inventory_as_b(accounts, [
        ("h1", "ansible_become_password=%s" % WRONG_PASSWORD),
        ("h2", "ansible_become_password=%s" % B_PASSWORD), ("h3", "")]))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 2, linear.stdout + linear.stderr
    assert "rescued Task failed: Incorrect sudo password" in linear.stdout
    assert batch.steps, batch.log
    assert_same_output(linear, batch)


def test_ask_become_pass_reaches_the_runner(ansible, accounts):
    """-K: Ansible's PlayContext password, used where no variable sets one."""
    ansible.write("play.yml", """
        - name: become with -K
          hosts: web
          gather_facts: false
          become: true
          tasks:
            - name: who
              command: id -un
              register: who
            - debug:
                msg: "{{ who.stdout }}"
    """)
    inventory = ansible.write("hosts.ini", inventory_as_b(accounts, [("h1", "")]))
    password_file = ansible.write("become.pw", B_PASSWORD + "\n")
    args = ["--become-password-file", str(password_file)]
    linear, batch = ansible.both("play.yml", str(inventory), args=args)
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert '"msg": "root"' in batch.stdout
    assert batch.steps, batch.log
    assert_same_output(linear, batch)


def test_mitogen_via_runs_natively(ansible, ansible_python, sshd, tmp_path):
    """b's ssh client is a child of a's runner (see tests/integration/test_via.py)."""
    owner = ansible.write("owner.py", OWNER)
    ansible.write("play.yml", """
        - name: via
          hosts: a,b
          gather_facts: false
          tasks:
            - name: where
              shell: echo "$PPID $SSH_CONNECTION"
              register: where
            - name: holder
              command: "%s %s {{ hostvars['b'].where.stdout.split()[2] }}"
              delegate_to: localhost
              run_once: true
              register: holder
            - name: b is carried by a
              debug:
                msg: "{{ holder.stdout.split()[1] == hostvars['a'].where.stdout.split()[0] }}"
              run_once: true
    """ % (ansible_python, owner))
    inventory = ansible.write("hosts.ini", sshd.inventory_ini(["a"], python=ansible_python)
                              + sshd.inventory_ini(["b"], "mitogen_via=a", python=ansible_python))
    batch = ansible.run("play.yml", str(inventory), "mitogen_batch")
    assert batch.rc == 0, batch.stdout + batch.stderr
    assert len(batch.steps) == 3, batch.log  # native: where, holder, the check
    assert '"msg": true' in batch.stdout, batch.stdout
