"""ioc-run in an ordinary Ansible project: ansible.cfg, vault, collections, the command line.

Every test writes real files (ansible.cfg, inventories, playbooks, vault
files, a collection), runs the real ``ioc-run`` in a subprocess and, where
the output is Ansible's to define, the real ``ansible-playbook`` (ansible-core
2.21) on the same files, and compares.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from tests.realworld.harness import ansible_python
from tests.support.sshd import PASSWORD_USER_PREFIX
from tests.support.terminal import run_on_terminal, screen
from tests.support.users import key_logins, make_user, remove_user

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration

VAULT_PASSWORD = "vault-Pw-8c1f07"
SECRET = "s3cr3t-7b2e94d1"


def clean_env(**extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(PYTHONPATH=str(ROOT), ANSIBLE_NOCOLOR="1", **extra)
    return env


def ioc(cwd: Path, *args: str, env: Optional[Dict[str, str]] = None,
        stdin: Optional[str] = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ioc", *args], cwd=str(cwd), text=True,
                          capture_output=True, timeout=300, env=env or clean_env(),
                          input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)


def ansible_playbook(cwd: Path, *args: str, env: Optional[Dict[str, str]] = None,
                     stdin: Optional[str] = None) -> subprocess.CompletedProcess:
    python = ansible_python()
    command = os.path.join(os.path.dirname(python), "ansible-playbook")
    return subprocess.run([python, command, *args], cwd=str(cwd), text=True,
                          capture_output=True, timeout=300, env=env or clean_env(),
                          input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def banners(stdout: str) -> List[str]:
    """PLAY/TASK banners, status lines and the recap: what both tools must agree on
    (the status lines of one task sorted: Ansible prints them as hosts finish)."""
    out: List[str] = []
    statuses: List[str] = []
    for line in stdout.splitlines():
        if line.startswith(("ok:", "changed:", "fatal:", "skipping:")):
            statuses.append(line.split(" => ")[0])
        elif line.startswith(("PLAY ", "TASK [", "RUNNING HANDLER")) or \
                re.match(r"^\S+ +: ok=", line):
            out += sorted(statuses) + [line]
            statuses = []
    return out + sorted(statuses)


def encrypt(text: str) -> str:
    """``text`` vault-encrypted with :data:`VAULT_PASSWORD`, by ansible-core's VaultLib."""
    from ansible.parsing.vault import VaultLib, VaultSecret

    lib = VaultLib([("default", VaultSecret(VAULT_PASSWORD.encode()))])
    return lib.encrypt(text.encode()).decode()


# -- ansible.cfg and ANSIBLE_* ---------------------------------------------------------


LOCAL_INVENTORY = """
[web]
w1 ansible_connection=local ansible_python_interpreter={python}
w2 ansible_connection=local ansible_python_interpreter={python}
"""

SMALL_PLAY = """
- hosts: web
  gather_facts: false
  tasks:
    - name: say
      debug: msg="hello {{ inventory_hostname }}"
"""


def test_the_inventory_of_ansible_cfg_is_used_and_an_unhonoured_setting_is_named_once(tmp_path):
    write(tmp_path / "inv" / "hosts", LOCAL_INVENTORY.format(python=sys.executable))
    write(tmp_path / "ansible.cfg", """
        [defaults]
        inventory = inv/hosts
        forks = 3
        strategy = free
        nocows = 1
    """)
    write(tmp_path / "site.yml", SMALL_PLAY)
    ours = ioc(tmp_path, "site.yml")
    theirs = ansible_playbook(tmp_path, "site.yml",
                              env=clean_env(ANSIBLE_STRATEGY="linear"))
    assert ours.returncode == 0, ours.stdout + ours.stderr
    assert banners(ours.stdout) == banners(theirs.stdout)
    assert "ok: [w1]" in ours.stdout and "ok: [w2]" in ours.stdout
    warnings = [l for l in ours.stderr.splitlines() if "does not honour" in l]
    assert len(warnings) == 1, ours.stderr
    assert "strategy (DEFAULT_STRATEGY) from %s" % (tmp_path / "ansible.cfg") in warnings[0]
    assert "forks" not in warnings[0] and "nocows" not in warnings[0]


def test_hash_behaviour_merge_is_refused_before_anything_runs(tmp_path):
    """``hash_behaviour = merge`` would merge dict variables of different
    layers, where ioc-run replaces them: it is refused, nothing runs."""
    write(tmp_path / "inv" / "hosts", LOCAL_INVENTORY.format(python=sys.executable))
    write(tmp_path / "ansible.cfg", "[defaults]\ninventory = inv/hosts\n"
                                    "hash_behaviour = merge\n")
    write(tmp_path / "site.yml", SMALL_PLAY)
    ours = ioc(tmp_path, "site.yml")
    assert ours.returncode == 1, ours.stdout + ours.stderr
    assert "[ERROR]: hash_behaviour = merge (from %s) is not supported" \
        % (tmp_path / "ansible.cfg") in ours.stderr
    assert "TASK [" not in ours.stdout and "hello" not in ours.stdout
    replace = ioc(tmp_path, "site.yml", env=clean_env(ANSIBLE_HASH_BEHAVIOUR="replace"))
    assert replace.returncode == 0, replace.stdout + replace.stderr
    assert "does not honour" not in replace.stderr


def test_deprecation_warnings_false_in_ansible_cfg_silences_a_deprecated_read(tmp_path):
    write(tmp_path / "inv" / "hosts", LOCAL_INVENTORY.format(python=sys.executable))
    write(tmp_path / "ansible.cfg", "[defaults]\ninventory = inv/hosts\n"
                                    "deprecation_warnings = False\n")
    write(tmp_path / "site.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - debug: msg="{{ play_hosts | length }}"
            - debug: msg=again
              when: play_hosts | length > 1
    """)
    quiet = ioc(tmp_path, "site.yml")
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert "DEPRECATION" not in quiet.stdout + quiet.stderr
    # ANSIBLE_DEPRECATION_WARNINGS wins over ansible.cfg: 2.21's warnings, each once for
    # both hosts, with the origin of the argument or condition that read play_hosts
    loud = ioc(tmp_path, "site.yml", env=clean_env(ANSIBLE_DEPRECATION_WARNINGS="True"))
    theirs = ansible_playbook(tmp_path, "site.yml",
                              env=clean_env(ANSIBLE_DEPRECATION_WARNINGS="True"))
    assert loud.returncode == 0, loud.stdout + loud.stderr
    assert deprecations(loud.stderr) == deprecations(theirs.stderr)
    assert len(deprecations(loud.stderr)) == 2


def deprecations(stderr: str) -> List[str]:
    """Each ``[DEPRECATION WARNING]`` block (to the blank line after its help text)."""
    return [block.split("\n\n[")[0].rstrip("\n")
            for block in stderr.split("[DEPRECATION WARNING]: ")[1:]]


def test_ansible_config_variable_wins_over_the_file_in_the_current_directory(tmp_path):
    write(tmp_path / "other" / "hosts", LOCAL_INVENTORY.format(python=sys.executable))
    write(tmp_path / "other" / "ansible.cfg", "[defaults]\ninventory = %s\n"
          % (tmp_path / "other" / "hosts"))
    write(tmp_path / "ansible.cfg", "[defaults]\ninventory = nowhere\n")
    write(tmp_path / "site.yml", SMALL_PLAY)
    r = ioc(tmp_path, "site.yml", env=clean_env(ANSIBLE_CONFIG=str(tmp_path / "other" / "ansible.cfg")))
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^w2 +: ok=1 ", r.stdout, re.M), r.stdout
    # and an ANSIBLE_* variable is a setting too: named when ioc-run ignores it
    r = ioc(tmp_path, "site.yml", env=clean_env(ANSIBLE_CONFIG=str(tmp_path / "other" / "ansible.cfg"),
                                                ANSIBLE_STDOUT_CALLBACK="json"))
    assert "stdout_callback (DEFAULT_STDOUT_CALLBACK) from env: ANSIBLE_STDOUT_CALLBACK" in r.stderr


def test_connection_settings_come_from_ansible_cfg(tmp_path, sshd):
    """Only the address in the inventory: user, key, ssh options and timeout from ansible.cfg."""
    write(tmp_path / "hosts", "[web]\nh1 ansible_host=%s ansible_port=%d "
          "ansible_python_interpreter=%s\n" % (sshd.host, sshd.port, sys.executable))
    write(tmp_path / "ansible.cfg", """
        [defaults]
        inventory = hosts
        remote_user = {user}
        private_key_file = {key}
        timeout = 7
        host_key_checking = False
        [ssh_connection]
        ssh_common_args = {args}
    """.format(user=sshd.user, key=sshd.client_key, args=sshd.host_ssh_args("h1")))
    write(tmp_path / "site.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - command: whoami
              register: who
            - debug: var=who.stdout
    """)
    r = ioc(tmp_path, "site.yml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert '"who.stdout": "%s"' % sshd.user in r.stdout
    assert "does not honour" not in r.stderr


def ssh_only_address(tmp_path: Path, sshd, extra: str = "") -> Path:
    return write(tmp_path / "hosts", "[web]\nh1 ansible_host=%s ansible_port=%d "
                 "ansible_python_interpreter=%s %s\n" % (sshd.host, sshd.port, sys.executable, extra))


def test_user_key_timeout_and_ssh_args_on_the_command_line(tmp_path, sshd):
    ssh_only_address(tmp_path, sshd)
    write(tmp_path / "site.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - command: whoami
    """)
    common = ["-i", "hosts", "site.yml", "--private-key", sshd.client_key,
              "--ssh-common-args", sshd.host_ssh_args("h1"), "-T", "9"]
    r = ioc(tmp_path, *common, "-u", sshd.user)
    assert r.returncode == 0, r.stdout + r.stderr
    # -u names the user: one that may not log in makes the host unreachable (exit 4) ...
    r = ioc(tmp_path, *common, "-u", "ioc_nobody_here")
    assert r.returncode == 4, r.stdout + r.stderr
    assert "unreachable=1" in r.stdout
    # ... and a host's ansible_user overrides -u, as in Ansible
    ssh_only_address(tmp_path, sshd, "ansible_user=%s" % sshd.user)
    r = ioc(tmp_path, *common, "-u", "ioc_nobody_here")
    assert r.returncode == 0, r.stdout + r.stderr


def test_become_options_on_the_command_line(tmp_path, sshd):
    write(tmp_path / "hosts", sshd.inventory_ini(["h1"], group="web", python="/usr/bin/python3"))
    write(tmp_path / "site.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - command: id -un
              register: who
            - debug: var=who.stdout
        - hosts: web
          gather_facts: false
          become: false
          tasks:
            - command: id -un
              register: who
            - debug: var=who.stdout
    """)
    r = ioc(tmp_path, "-i", "hosts", "site.yml", "-b", "--become-user", "nobody",
            "--become-method", "sudo")
    assert r.returncode == 0, r.stdout + r.stderr
    users = re.findall(r'"who.stdout": "([^"]+)"', r.stdout)
    assert users == ["nobody", sshd.user]  # the play's become: false wins over -b


def test_connection_local_on_the_command_line(tmp_path):
    write(tmp_path / "hosts", "[web]\nfar.invalid ansible_python_interpreter=%s\n" % sys.executable)
    write(tmp_path / "site.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - command: hostname
              register: name
            - debug: var=name.stdout
    """)
    r = ioc(tmp_path, "-i", "hosts", "site.yml", "-c", "local")
    assert r.returncode == 0, r.stdout + r.stderr
    assert '"name.stdout": "%s"' % os.uname().nodename in r.stdout


# -- vault --------------------------------------------------------------------------------


def vault_project(tmp_path: Path) -> None:
    write(tmp_path / "hosts", "[web]\nw1 ansible_connection=local ansible_python_interpreter=%s\n"
          % sys.executable)
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text(
        encrypt("db_password: %s\nplain_from_vault: visible-1\n" % SECRET))
    token = encrypt(SECRET + "-token")
    write(tmp_path / "vars" / "inline.yml", "api_token: !vault |\n%s\nregion: visible-2\n"
          % textwrap.indent(token, "  "))
    (tmp_path / "vars" / "included.yml").write_text(encrypt("included_value: visible-3\n"))
    write(tmp_path / "site.yml", """
        - hosts: web
          gather_facts: false
          vars_files:
            - vars/inline.yml
          tasks:
            - include_vars: vars/included.yml
            - name: the secrets reach the target
              copy:
                dest: "{{ out }}"
                content: "{{ db_password }} {{ api_token }}"
              no_log: true
            - debug: msg="{{ plain_from_vault }} {{ region }} {{ included_value }}"
    """)
    (tmp_path / "pw").write_text(VAULT_PASSWORD + "\n")


def test_vault_files_and_values_decrypt_and_no_secret_is_shown(tmp_path):
    vault_project(tmp_path)
    out = tmp_path / "out.txt"
    events = tmp_path / "events.jsonl"
    r = ioc(tmp_path, "-i", "hosts", "site.yml", "--vault-password-file", "pw",
            "-e", "out=%s" % out, "--events", str(events), "-vvv")
    assert r.returncode == 0, r.stdout + r.stderr
    assert out.read_text() == "%s %s-token" % (SECRET, SECRET)
    assert "visible-1 visible-2 visible-3" in r.stdout
    for text in (r.stdout, r.stderr, events.read_text()):
        assert SECRET not in text
        assert VAULT_PASSWORD not in text
    theirs = ansible_playbook(tmp_path, "-i", "hosts", "site.yml", "--vault-password-file", "pw",
                              "-e", "out=%s" % (tmp_path / "theirs.txt"))
    assert banners(r.stdout) == banners(theirs.stdout)


def test_vault_id_and_ask_vault_pass(tmp_path):
    vault_project(tmp_path)
    out = tmp_path / "out.txt"
    r = ioc(tmp_path, "-i", "hosts", "site.yml", "--vault-id", "default@pw", "-e", "out=%s" % out)
    assert r.returncode == 0, r.stdout + r.stderr
    out.unlink()
    r = ioc(tmp_path, "-i", "hosts", "site.yml", "--ask-vault-pass", "-e", "out=%s" % out,
            stdin=VAULT_PASSWORD + "\n")
    assert r.returncode == 0, r.stdout + r.stderr
    assert out.read_text().startswith(SECRET)
    assert VAULT_PASSWORD not in r.stdout + r.stderr


@pytest.mark.parametrize("where", ["ansible.cfg", "environment"])
def test_vault_identity_list_setting_gives_the_password(tmp_path, where):
    """``vault_identity_list`` (``ANSIBLE_VAULT_IDENTITY_LIST``) is a vault
    id as ``--vault-id`` is: ansible-playbook decrypts with it, and so must
    ioc-run (it read the setting and used no secret from it)."""
    vault_project(tmp_path)
    env = clean_env()
    if where == "ansible.cfg":
        write(tmp_path / "ansible.cfg", "[defaults]\nvault_identity_list = default@pw\n")
    else:
        env["ANSIBLE_VAULT_IDENTITY_LIST"] = "default@pw"
    ours = ioc(tmp_path, "-i", "hosts", "site.yml", "-e", "out=%s" % (tmp_path / "ours.txt"),
               env=env)
    theirs = ansible_playbook(tmp_path, "-i", "hosts", "site.yml",
                              "-e", "out=%s" % (tmp_path / "theirs.txt"), env=env)
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr
    assert ours.returncode == 0, ours.stdout + ours.stderr
    assert (tmp_path / "ours.txt").read_text() == (tmp_path / "theirs.txt").read_text() \
        == "%s %s-token" % (SECRET, SECRET)
    assert "visible-1 visible-2 visible-3" in ours.stdout
    assert SECRET not in ours.stdout + ours.stderr


def test_vault_without_a_password_fails_as_ansible_does(tmp_path):
    vault_project(tmp_path)
    ours = ioc(tmp_path, "-i", "hosts", "site.yml", "-e", "out=x")
    theirs = ansible_playbook(tmp_path, "-i", "hosts", "site.yml", "-e", "out=x")
    assert theirs.returncode != 0
    assert ours.returncode != 0
    assert "Attempting to decrypt but no vault secrets found" in ours.stderr
    assert "Attempting to decrypt but no vault secrets found" in theirs.stderr


def test_a_vaulted_copy_source_no_password_decrypts_fails_the_task_as_in_ansible(tmp_path):
    # Only this file is vaulted, with another password: the play loads, the copy fails.
    write(tmp_path / "hosts", "w1 ansible_connection=local ansible_python_interpreter=%s\n"
          % sys.executable)
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "secret.txt").write_text(encrypt(SECRET))
    write(tmp_path / "site.yml", """
        - hosts: all
          gather_facts: false
          tasks:
            - copy: src=secret.txt dest={{ out }}
    """)
    (tmp_path / "wrong").write_text("not-the-password\n")
    ours = ioc(tmp_path, "-i", "hosts", "site.yml", "--vault-password-file", "wrong",
               "-e", "out=%s" % (tmp_path / "ours.txt"))
    theirs = ansible_playbook(tmp_path, "-i", "hosts", "site.yml", "--vault-password-file",
                              "wrong", "-e", "out=%s" % (tmp_path / "theirs.txt"))
    fatal = ('fatal: [w1]: FAILED! => {"changed": false, "msg": "Task failed: Decryption failed '
             '(no vault secrets were found that could decrypt)."}')
    assert fatal in theirs.stdout, theirs.stdout
    assert fatal in ours.stdout, ours.stdout + ours.stderr
    assert ours.returncode == theirs.returncode == 2
    assert not (tmp_path / "ours.txt").exists()  # the ciphertext is not copied either


# -- collections and roles_path ---------------------------------------------------------


def collection_project(tmp_path: Path) -> None:
    coll = tmp_path / "collections" / "ansible_collections" / "acme" / "tools"
    write(coll / "galaxy.yml", "namespace: acme\nname: tools\nversion: 1.0.0\n")
    write(coll / "plugins" / "modules" / "greet.py", '''
        #!/usr/bin/python
        from ansible.module_utils.basic import AnsibleModule

        def main():
            module = AnsibleModule(argument_spec={"who": {"type": "str"}})
            module.exit_json(changed=False, greeting="hello from acme " + module.params["who"])

        if __name__ == "__main__":
            main()
    ''')
    write(coll / "roles" / "greeter" / "tasks" / "main.yml", """
        - name: greet by the short name, in the role's collection
          greet:
            who: "{{ inventory_hostname }}"
          register: greeted
        - debug: var=greeted.greeting
    """)
    write(coll / "roles" / "greeter" / "meta" / "main.yml", "dependencies: [helper]\n")
    write(coll / "roles" / "helper" / "tasks" / "main.yml", """
        - name: helper from the same collection
          debug: msg="{{ ansible_collection_name }} {{ role_name }}"
    """)
    write(tmp_path / "elsewhere" / "plainrole" / "tasks" / "main.yml", """
        - name: from roles_path
          debug: msg=plain
    """)
    write(tmp_path / "ansible.cfg", "[defaults]\nroles_path = %s\n" % (tmp_path / "elsewhere"))
    write(tmp_path / "hosts", "[web]\nw1 ansible_connection=local ansible_python_interpreter=%s\n"
          % sys.executable)
    write(tmp_path / "site.yml", """
        - hosts: web
          gather_facts: false
          roles:
            - acme.tools.greeter
            - plainrole
    """)


def test_roles_from_collections_and_roles_path_run_as_in_ansible(tmp_path):
    collection_project(tmp_path)
    ours = ioc(tmp_path, "-i", "hosts", "site.yml")
    theirs = ansible_playbook(tmp_path, "-i", "hosts", "site.yml")
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr
    assert ours.returncode == 0, ours.stdout + ours.stderr
    assert '"greeted.greeting": "hello from acme w1"' in ours.stdout
    assert '"msg": "acme.tools helper"' in ours.stdout
    assert banners(ours.stdout) == banners(theirs.stdout)


def test_the_realworld_collection_role_is_found(tmp_path):
    """tests/realworld/hardening.yml with the harness's ansible.cfg: the tasks Ansible lists."""
    from tests.realworld.prepare import collections_path

    here = ROOT / "tests" / "realworld"
    config = write(tmp_path / "ansible.cfg", "[defaults]\nroles_path = %s\ncollections_path = %s:%s\n"
                   % (here / "roles", here / "collections", collections_path()))
    env = clean_env(ANSIBLE_CONFIG=str(config))
    ours = ioc(here, "-i", "localhost,", "hardening.yml", "--list-tasks", env=env)
    theirs = ansible_playbook(here, "-i", "localhost,", "hardening.yml", "--list-tasks", env=env)
    assert ours.returncode == 0, ours.stdout + ours.stderr
    assert "devsec.hardening.os_hardening : Include hardening tasks" in ours.stdout
    # the role's argument-spec validation task (meta/argument_specs.yml) heads it
    assert "Validating arguments against arg spec 'main'" in ours.stdout
    assert ours.stdout.splitlines() == theirs.stdout.splitlines()


# -- the command line -------------------------------------------------------------------


LIST_INVENTORY = """
[web]
w1 ansible_connection=local
w2 ansible_connection=local
[db]
d1 ansible_connection=local
"""

LIST_PLAY = """
- name: First
  hosts: web
  tags: [p1]
  gather_facts: false
  tasks:
    - name: one
      debug: msg=one
      tags: [a, b]
    - debug: msg=two
    - name: three
      debug: msg=three
      tags: never
- hosts: db
  gather_facts: false
  tasks:
    - name: four
      debug: msg=four
"""


def sorted_hosts(text: str) -> str:
    """Ansible lists a play's hosts from a set: compare them in sorted order."""
    out: List[str] = []
    block: List[str] = []
    for line in text.splitlines():
        if line.startswith("      ") and "\t" not in line and "TAGS" not in line:
            block.append(line)
            continue
        out += sorted(block) + [line]
        block = []
    return "\n".join(out + sorted(block))


@pytest.mark.parametrize("options", [
    ["--list-hosts"], ["--list-tasks"], ["--list-tags"], ["--syntax-check"],
    ["--list-hosts", "--list-tasks", "-l", "w1"], ["--list-tasks", "-t", "a"],
    ["--list-tags", "--skip-tags", "a"],
])
def test_listing_options_print_what_ansible_playbook_prints(tmp_path, options):
    write(tmp_path / "hosts", LIST_INVENTORY)
    write(tmp_path / "site.yml", LIST_PLAY)
    ours = ioc(tmp_path, "-i", "hosts", "site.yml", *options)
    theirs = ansible_playbook(tmp_path, "-i", "hosts", "site.yml", *options)
    assert (ours.returncode, sorted_hosts(ours.stdout)) == \
        (theirs.returncode, sorted_hosts(theirs.stdout))


def test_a_limit_that_matches_nothing_is_ansibles_error(tmp_path):
    write(tmp_path / "hosts", LIST_INVENTORY)
    write(tmp_path / "site.yml", LIST_PLAY)
    ours = ioc(tmp_path, "-i", "hosts", "site.yml", "-l", "nomatch")
    theirs = ansible_playbook(tmp_path, "-i", "hosts", "site.yml", "-l", "nomatch")
    assert ours.returncode == theirs.returncode == 1
    assert ours.stderr.strip().splitlines() == theirs.stderr.strip().splitlines()
    assert "PLAY" not in ours.stdout


@pytest.mark.parametrize("name", ["three", "th*", "nothing-like-it"])
def test_start_at_task(tmp_path, name):
    write(tmp_path / "hosts", LIST_INVENTORY)
    write(tmp_path / "site.yml", LIST_PLAY)
    args = ["-i", "hosts", "site.yml", "--start-at-task", name, "-t", "all,never"]
    ours = ioc(tmp_path, *args)
    theirs = ansible_playbook(tmp_path, *args)
    assert ours.returncode == theirs.returncode
    assert banners(ours.stdout) == banners(theirs.stdout)
    assert ("No matching task" in ours.stderr) == ("No matching task" in theirs.stderr)


#: The second playbook of a run given several.
SECOND_PLAYBOOK = """
    - hosts: all
      gather_facts: false
      tasks:
        - name: in the second playbook
          debug: msg=two
"""


def test_several_playbooks_and_flush_cache(tmp_path):
    write(tmp_path / "hosts", LIST_INVENTORY)
    write(tmp_path / "one.yml", LIST_PLAY)
    write(tmp_path / "two.yml", SECOND_PLAYBOOK)
    args = ["-i", "hosts", "one.yml", "two.yml", "--flush-cache"]
    ours = ioc(tmp_path, *args)
    theirs = ansible_playbook(tmp_path, *args)
    assert ours.returncode == theirs.returncode == 0, ours.stderr
    assert banners(ours.stdout) == banners(theirs.stdout)
    assert "TASK [in the second playbook]" in ours.stdout
    assert "no fact cache" in ioc(tmp_path, "--help").stdout


def test_the_second_playbook_does_not_run_after_a_failure_in_the_first(tmp_path):
    write(tmp_path / "hosts", LIST_INVENTORY)
    write(tmp_path / "one.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - fail: msg=down
              when: inventory_hostname == 'w1'
    """)
    write(tmp_path / "two.yml", SECOND_PLAYBOOK)
    ours = ioc(tmp_path, "-i", "hosts", "one.yml", "two.yml")
    theirs = ansible_playbook(tmp_path, "-i", "hosts", "one.yml", "two.yml")
    assert ours.returncode == theirs.returncode == 2
    assert banners(ours.stdout) == banners(theirs.stdout)


# -- vars_prompt ------------------------------------------------------------------------


PROMPT_PLAY = """
- hosts: localhost
  gather_facts: false
  vars:
    greeting: hi
  vars_prompt:
    - name: visible
      prompt: "Your name"
      private: false
    - name: secret
      prompt: "Password"
      confirm: true
    - name: defaulted
      prompt: "Colour"
      default: "{{ greeting }}-blue"
    - name: hashed
      prompt: "Hash me"
      private: false
      encrypt: sha512_crypt
      salt: abcdefgh
    - name: verbatim
      prompt: "Template"
      private: false
      unsafe: true
    - name: given
  tasks:
    - debug:
        msg: "{{ visible }}|{{ defaulted }}|{{ hashed }}|{{ verbatim }}|{{ given }}|{{ secret | length }}"
"""

PRIVATE_ANSWER = "pw-5e1c0a"
#: A mistyped confirmation first: both tools ask the pair again.
PROMPT_ANSWERS = [("Your name: ", "ann"), ("Password: ", PRIVATE_ANSWER),
                  ("confirm Password: ", "typo"), ("Password: ", PRIVATE_ANSWER),
                  ("confirm Password: ", PRIVATE_ANSWER), ("Colour [hi-blue]: ", ""),
                  ("Hash me: ", "x"), ("Template: ", "{{ greeting }}")]


def terminal_run(tmp_path: Path, front: str, *args: str) -> str:
    """The terminal transcript of ``front`` (ansible-playbook, mitogen_batch or ioc-run,
    all on ansible-core 2.21's Python) answering :data:`PROMPT_ANSWERS`."""
    python = ansible_python()
    env = clean_env()
    if front == "ioc-run":
        argv = [python, "-m", "ioc"]
    else:
        argv = [python, os.path.join(os.path.dirname(python), "ansible-playbook")]
    if front == "mitogen_batch":
        env.update(ANSIBLE_STRATEGY="mitogen_batch",
                   ANSIBLE_STRATEGY_PLUGINS=str(ROOT / "strategy_plugin"))
    code, out = run_on_terminal(argv + ["site.yml", "-e", "given=G", *args], PROMPT_ANSWERS,
                                str(tmp_path), env)
    assert code == 0, out
    return out


def without_warnings_and_report(out: str) -> str:
    """What stays on the screen (ioc-run's progress line erased), without
    warnings and ioc's transport report."""
    return "\n".join(line for line in screen(out).splitlines()
                     if not line.startswith(("[WARNING]", "ioc: ", "[DEPRECATION")))


def test_vars_prompt_on_a_terminal_asks_as_ansible_playbook_does(tmp_path):
    """Prompts, echo, the confirm loop, a templated default, encrypt with a salt,
    unsafe, and an extra var not asked: the same terminal, character for character."""
    write(tmp_path / "site.yml", PROMPT_PLAY)
    theirs = terminal_run(tmp_path, "ansible-playbook")
    assert "|{{ greeting }}|G|%d\"" % len(PRIVATE_ANSWER) in theirs  # the case is Ansible's
    ours = terminal_run(tmp_path, "ioc-run", "--events", "events.jsonl")
    assert without_warnings_and_report(ours) == without_warnings_and_report(theirs)
    assert PRIVATE_ANSWER not in ours + (tmp_path / "events.jsonl").read_text()
    batch = terminal_run(tmp_path, "mitogen_batch")
    assert without_warnings_and_report(batch) == without_warnings_and_report(theirs)


def test_vars_prompt_without_a_terminal_takes_defaults_as_ansible_playbook_does(tmp_path):
    """stdin not a terminal: one warning, defaults, "None" where there is none."""
    write(tmp_path / "site.yml", """
        - hosts: localhost
          gather_facts: false
          vars_prompt:
            - name: nodefault
            - name: defaulted
              default: dflt
            - name: given
          tasks:
            - debug: msg="{{ nodefault }}|{{ defaulted }}|{{ given }}"
    """)
    ours = ioc(tmp_path, "site.yml", "-e", "given=G")
    theirs = ansible_playbook(tmp_path, "site.yml", "-e", "given=G")
    assert ours.returncode == theirs.returncode == 0, ours.stderr
    assert '"msg": "None|dflt|G"' in ours.stdout
    assert ours.stdout.split("PLAY RECAP")[0] == theirs.stdout.split("PLAY RECAP")[0]
    notice = "[WARNING]: Not prompting as we are not in interactive mode"
    assert ours.stderr.count(notice) == theirs.stderr.count(notice) == 1, ours.stderr


# -- SSH passwords ----------------------------------------------------------------------


SSH_PASSWORD = "ssh-Pw-91d3c7"
PASSWORD_PLAY = """
- hosts: web
  gather_facts: false
  tasks:
    - command: id -un
      register: who
    - debug: var=who.stdout
"""


@pytest.fixture
def password_user(sshd):
    """A throwaway user that may log in to the session sshd with :data:`SSH_PASSWORD` only."""
    name = PASSWORD_USER_PREFIX + "k"
    make_user(name, SSH_PASSWORD)
    try:
        yield name
    finally:
        remove_user(name)


def test_ask_pass_and_ansible_password_log_in_with_a_password(tmp_path, sshd, password_user):
    """-k asks "SSH password: " on the terminal as ansible-playbook does;
    ansible_password (templated from a vault-like variable) wins over it; the
    password is in no output and no --events line, even at -vvv."""
    args = "ansible_user=%s ansible_ssh_common_args='%s'" % (password_user,
                                                             sshd.host_ssh_args("h1"))
    hosts = "[web]\nh1 ansible_host=%s ansible_port=%d ansible_python_interpreter=" \
            "/usr/bin/python3 " % (sshd.host, sshd.port)
    write(tmp_path / "hosts", hosts + args + "\n")
    write(tmp_path / "site.yml", PASSWORD_PLAY)
    argv = [sys.executable, "-m", "ioc", "-i", "hosts", "site.yml", "-k", "-vvv",
            "--events", "events.jsonl"]
    code, out = run_on_terminal(argv, [("SSH password: ", SSH_PASSWORD)], str(tmp_path),
                                clean_env())
    assert code == 0, out
    assert '"who.stdout": "%s"' % password_user in out
    seen = out + (tmp_path / "events.jsonl").read_text()
    # the host's variable wins over -k
    write(tmp_path / "hosts", hosts + args + " ansible_password='{{ the_password }}'\n")
    write(tmp_path / "host_vars" / "h1.yml", "the_password: %s\n" % SSH_PASSWORD)
    code, out = run_on_terminal(argv, [("SSH password: ", "wrong")], str(tmp_path), clean_env())
    assert code == 0, out
    seen += out + (tmp_path / "events.jsonl").read_text()
    assert SSH_PASSWORD not in seen


# -- the remote_user keyword --------------------------------------------------------------


REMOTE_USER = "ioc-ru-a"


@pytest.fixture
def login_user(sshd):
    """A throwaway user that may log in to the session sshd with its client key
    (sshd without PAM refuses a locked account, one without a password)."""
    with key_logins(sshd, {REMOTE_USER: "unused-3f9a"}, remote_tmp=(REMOTE_USER,)):
        yield REMOTE_USER


def test_the_remote_user_keyword_is_the_login_user_below_ansible_user(tmp_path, sshd, login_user):
    """The play's remote_user beats -u; a host's ansible_user beats the keyword (2.21)."""
    line = ("ansible_host={0.host} ansible_port={0.port} ansible_python_interpreter=/usr/bin/python3"
            " ansible_ssh_private_key_file={0.client_key} ansible_ssh_common_args='{1}'"
            .format(sshd, sshd.host_ssh_args()))
    write(tmp_path / "hosts", "[free]\nh1 %s\n[pinned]\nh2 %s ansible_user=%s\n"
          % (line, line, sshd.user))
    write(tmp_path / "site.yml", """
        - hosts: free:pinned
          gather_facts: false
          remote_user: %s
          tasks:
            - command: id -un
              register: who
            - debug: var=who.stdout
    """ % login_user)
    # -f 1: ansible-playbook prints the hosts' results in the order they finish
    args = ["-i", "hosts", "site.yml", "-u", "nobody", "-f", "1"]
    ours = ioc(tmp_path, *args)
    theirs = ansible_playbook(tmp_path, *args, env=clean_env(ANSIBLE_HOST_KEY_CHECKING="False"))
    assert ours.returncode == theirs.returncode == 0, ours.stdout + ours.stderr + theirs.stdout
    users = re.findall(r'"who.stdout": "([^"]+)"', ours.stdout)
    assert users == re.findall(r'"who.stdout": "([^"]+)"', theirs.stdout) == [login_user, sshd.user]
    # a task's own remote_user would need another login: refused before anything runs
    write(tmp_path / "task.yml", """
        - hosts: free
          gather_facts: false
          tasks:
            - command: id -un
              remote_user: %s
    """ % login_user)
    r = ioc(tmp_path, "-i", "hosts", "task.yml")
    assert r.returncode == 4 and "task.yml:4" in r.stderr, r.stderr
    assert "differs from the play's remote_user" in r.stderr and "PLAY [" not in r.stdout


# -- --step -------------------------------------------------------------------------------


STEP_PLAY = """
- hosts: web
  tasks:
    - name: loop on {{ inventory_hostname }}
      debug: msg="{{ item }}"
      loop: [1, 2]
    - name: answered no
      command: "true"
      register: never
    - name: registered nothing
      debug: msg="{{ never is defined }}"
    - meta: noop
    - block:
        - name: fails on h1
          fail: msg=boom
          when: inventory_hostname == 'h1'
      rescue:
        - name: rescue
          command: "true"
          notify: handle
    - include_tasks: more.yml
  handlers:
    - name: handle
      debug: msg=handled
- hosts: web
  gather_facts: false
  tasks:
    - name: continue here
      debug: msg=on
    - name: never asked
      debug: msg="{{ inventory_hostname }}"
"""

#: One answer per question, in the order linear asks them: facts, the loop, "no", the
#: task after it, the failing task, the rescue (only h1 reaches it), the include, its two
#: tasks, the handler; the second play's first task ends the asking ("c"); a blank line
#: is "no".
STEP_ANSWERS = "y\ny\nn\ny\nyes\ny\ny\nY\n\ny\nc\n"


def test_step_asks_once_per_task_where_linear_asks_it(tmp_path, sshd):
    """ioc-run --step asks the questions ansible-playbook --step asks, in its order (a
    rescue only where a host failed, an included file's tasks once it is loaded, a
    handler when it runs, none after "c"), and does what each answer says: the same
    console, recap and exit code. Answers come on a pipe, one line each."""
    write(tmp_path / "hosts", sshd.inventory_ini(["h1", "h2"], group="web"))
    write(tmp_path / "site.yml", STEP_PLAY)
    write(tmp_path / "more.yml", """
        - name: included first
          debug: msg=first
        - name: included second, answered with a blank line
          debug: msg=second
    """)
    python = ansible_python()
    args = ["-i", "hosts", "site.yml", "--step", "-f", "1"]
    theirs = subprocess.run([python, os.path.join(os.path.dirname(python), "ansible-playbook"),
                             *args], cwd=str(tmp_path), text=True, capture_output=True,
                            timeout=300, env=clean_env(), input=STEP_ANSWERS)
    ours = subprocess.run([python, "-m", "ioc", *args], cwd=str(tmp_path), text=True,
                          capture_output=True, timeout=300, env=clean_env(), input=STEP_ANSWERS)
    assert theirs.returncode == ours.returncode == 0, ours.stdout + ours.stderr
    assert theirs.stdout.count("Perform task:") == 2 * 11  # each question and its banner
    assert "Perform task: HANDLER: handle" in theirs.stdout
    assert "TASK [never asked]" in theirs.stdout and "TASK: never asked" not in theirs.stdout
    assert without_warnings_and_report(ours.stdout) == without_warnings_and_report(theirs.stdout)


def test_step_on_a_terminal_reads_as_ansible_playbook_under_both_front_ends(tmp_path):
    """On a terminal too (the answers echoed): ioc-run and mitogen_batch (which hands a
    --step run to the linear strategy) print what ansible-playbook prints."""
    write(tmp_path / "site.yml", """
        - hosts: localhost
          gather_facts: false
          tasks:
            - name: first
              debug: msg=one
            - name: second
              debug: msg=two
            - name: third
              debug: msg=three
            - name: fourth
              debug: msg=four
    """)
    python = ansible_python()
    answers = [("Perform task: TASK: first (N)o/(y)es/(c)ontinue: ", "n"),
               ("Perform task: TASK: second (N)o/(y)es/(c)ontinue: ", "y"),
               ("Perform task: TASK: third (N)o/(y)es/(c)ontinue: ", "c")]
    runs = []
    for front in ("linear", "mitogen_batch", "ioc-run"):
        argv = [python, "-m", "ioc"] if front == "ioc-run" else \
            [python, os.path.join(os.path.dirname(python), "ansible-playbook")]
        env = clean_env(ANSIBLE_STRATEGY=front, ANSIBLE_STRATEGY_PLUGINS=str(
            ROOT / "strategy_plugin")) if front != "ioc-run" else clean_env()
        code, out = run_on_terminal(argv + ["site.yml", "--step"], answers, str(tmp_path), env)
        assert code == 0, out
        runs.append(without_warnings_and_report(out))
    assert runs[0] == runs[1] == runs[2]
    assert '"msg": "one"' not in runs[0] and '"msg": "four"' in runs[0]


def test_step_without_answers_is_an_error_naming_the_question(tmp_path):
    """Standard input ends before an answer: exit 250 as ansible-playbook (whose
    input() raises EOFError), with one line instead of its traceback, nothing run."""
    write(tmp_path / "site.yml", """
        - hosts: localhost
          gather_facts: false
          tasks:
            - name: first
              file: path={{ playbook_dir }}/made state=touch
    """)
    r = ioc(tmp_path, "site.yml", "--step")
    assert r.returncode == 250, r.stdout + r.stderr
    assert "standard input ended" in r.stderr and "TASK: first" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "made").exists()


def test_ansible_password_logs_in_under_mitogen_batch_too(tmp_path, sshd, password_user):
    """mitogen_batch's own connection takes the host's password (it was "SSH password was
    requested, but none specified"); linear would need sshpass, not installed here."""
    write(tmp_path / "hosts", "[web]\nh1 ansible_host=%s ansible_port=%d ansible_user=%s "
          "ansible_password=%s ansible_python_interpreter=/usr/bin/python3 "
          "ansible_ssh_common_args='%s'\n" % (sshd.host, sshd.port, password_user,
                                               SSH_PASSWORD, sshd.host_ssh_args("h1")))
    write(tmp_path / "site.yml", PASSWORD_PLAY)
    r = ansible_playbook(tmp_path, "-i", "hosts", "site.yml", env=clean_env(
        ANSIBLE_STRATEGY="mitogen_batch", ANSIBLE_STRATEGY_PLUGINS=str(ROOT / "strategy_plugin"),
        ANSIBLE_HOST_KEY_CHECKING="False"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert '"who.stdout": "%s"' % password_user in r.stdout
    assert SSH_PASSWORD not in r.stdout + r.stderr


#: Notifications linear saves for the next flush, and some it does not.
SAVED_NOTIFICATIONS_PLAY = """
    - hosts: all
      gather_facts: false
      tasks:
        - command: echo one
          notify: [H, topic]
        - command: echo "{{ item }}"
          loop: [1, 2]
          changed_when: item != 2
          notify: H
        - meta: flush_handlers
        - command: echo unchanged
          changed_when: false
          notify: H
      handlers:
        - name: H
          debug:
            msg: handled
          notify: L
        - name: L
          debug:
            msg: listener
          listen: topic
"""


def test_saved_notifications_are_shown_at_vv_as_ansible_playbook_shows_them(tmp_path):
    """At -vv, "Notification for handler <name> has been saved." for each
    notification of a changed result saved for the next flush, where
    ansible-playbook prints it (before the status line; after a loop's
    items, per item that ran); not at -v, not for a handler's own."""
    write(tmp_path / "hosts", "h1 ansible_connection=local ansible_python_interpreter=%s\n"
          % sys.executable)
    write(tmp_path / "site.yml", SAVED_NOTIFICATIONS_PLAY)
    kept = ("TASK [", "RUNNING HANDLER", "Notification for handler", "NOTIFIED HANDLER",
            "ok: [", "changed: [")
    shown = {}
    for verbosity in ("-v", "-vv"):
        ours = ioc(tmp_path, "-i", "hosts", "site.yml", verbosity)
        theirs = ansible_playbook(tmp_path, "-i", "hosts", "site.yml", verbosity)
        assert ours.returncode == theirs.returncode == 0, ours.stdout + ours.stderr
        shown[verbosity] = [[line.split(" => ")[0] for line in out.stdout.splitlines()
                             if line.startswith(kept)] for out in (ours, theirs)]
        assert shown[verbosity][0] == shown[verbosity][1]
    assert not any(line.startswith("Notification") for line in shown["-v"][0])
    assert [line for line in shown["-vv"][0] if line.startswith("Notification")] == [
        "Notification for handler H has been saved.",
        "Notification for handler topic has been saved.",
        "Notification for handler H has been saved.",
        "Notification for handler H has been saved."]


def test_a_play_gathering_with_ansible_facts_modules_is_refused_before_it_runs(tmp_path):
    """``ansible_facts_modules`` (FACTS_MODULES as a variable) names other
    modules to gather facts with; ioc-run gathers with ``setup`` only, so it
    refuses such a play before anything runs, naming the play, instead of
    giving it other facts than Ansible's (it ignored the variable)."""
    write(tmp_path / "hosts", "[web]\nw1 ansible_connection=local ansible_python_interpreter=%s\n"
          % sys.executable)
    marker = tmp_path / "ran"
    write(tmp_path / "site.yml", """
        - hosts: web
          vars:
            ansible_facts_modules: [setup, my_facts]
          tasks:
            - file: path=%s state=touch
    """ % marker)
    r = ioc(tmp_path, "-i", "hosts", "site.yml")
    assert r.returncode != 0
    assert "ansible_facts_modules is set in the play's vars" in r.stderr, r.stderr
    assert "site.yml:1:3" in r.stderr, r.stderr
    assert not marker.exists()
    # without gathering, the variable changes nothing: the play runs
    (tmp_path / "site.yml").write_text((tmp_path / "site.yml").read_text().replace(
        "- hosts: web\n", "- hosts: web\n  gather_facts: false\n"))
    r = ioc(tmp_path, "-i", "hosts", "site.yml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert marker.exists()


def test_refresh_inventory_as_linear_refreshes_it(tmp_path):
    """ioc-run after ``meta: refresh_inventory``: a host the new inventory
    lacks leaves the play (it ran the always's run_once task), the add_host
    host is kept (it was dropped: the next play's assert failed), as under
    ansible-playbook (the meta_tasks target's refresh playbooks)."""
    from tests.ansible.test_mitogen_batch_fidelity import write_refresh_project

    # (-f 1: linear prints a task's results as its workers finish, and with
    # four hosts at once the order of h3's and h4's varied under load)
    write_refresh_project(tmp_path, sys.executable)
    theirs = ansible_playbook(tmp_path, "-i", "hosts.ini", "-f", "1", "play.yml")
    write_refresh_project(tmp_path, sys.executable)
    ours = ioc(tmp_path, "-i", "hosts.ini", "-f", "1", "play.yml")
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr
    assert ours.returncode == 0, ours.stdout + ours.stderr
    assert ours.stdout.split("\nioc: ")[0].rstrip() == theirs.stdout.rstrip()


def test_a_local_connections_relative_paths_are_in_the_plays_directory(tmp_path):
    """ioc-run run from a directory above its playbook: a local connection's
    modules start in the play's directory, as ansible-playbook's do; ioc's
    own modules wrote relative paths where ioc-run was started."""
    from tests.ansible.test_mitogen_batch_fidelity import LOCAL_RELATIVE_PLAY

    write(tmp_path / "sub" / "play.yml", LOCAL_RELATIVE_PLAY)
    write(tmp_path / "hosts", "[web]\nh1 ansible_connection=local ansible_python_interpreter=%s\n"
          % sys.executable)
    made = tmp_path / "sub" / "made_h1"
    theirs = ansible_playbook(tmp_path, "-i", "hosts", "sub/play.yml")
    assert (made / "a.txt").read_text() == "x"
    shutil.rmtree(made)
    ours = ioc(tmp_path, "-i", "hosts", "sub/play.yml")
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr
    assert ours.returncode == 0, ours.stdout + ours.stderr
    assert ours.stdout.split("\nioc: ")[0].rstrip() == theirs.stdout.rstrip()
    assert (made / "a.txt").read_text() == "x"
    assert not (tmp_path / "made_h1").exists()
