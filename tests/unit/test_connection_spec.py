"""Connection settings from variables: become identities, mitogen_via, and the cuts they make."""
from __future__ import annotations

import pytest

from ioc import loader
from ioc.ansible.modules import attach
from ioc.agentless_runner.templating import Templar
from ioc.controller.capabilities import runner_capabilities
from ioc.transport.spec import BecomeSpec, ConnectionSpec, become_for, resolve_via, spec_for
from ioc.transport.report import TransportReport
from ioc.errors import ConnectionSetupError, PlanError
from ioc.planner import explain, plan_play

from tests.unit.test_planner_schedule import shape, tasks


def plan_of(tmp_path, text):
    path = tmp_path / "play.yml"
    path.write_text(text)
    return plan_play(attach(loader.load_playbook(str(path))).plays[0], runner_capabilities())


# -- become_for: Ansible's precedence and defaults -------------------------------------


def test_no_become_is_the_connections_own_user():
    assert become_for({}, {}) is None
    assert become_for({"become": False, "become_user": "x"}, {}) is None
    assert become_for({"become": "no"}, {}) is None


def test_sudo_to_root_with_ansibles_default_flags():
    assert become_for({"become": True}, {}) == BecomeSpec(method="sudo", user="root",
                                                          flags=("-H", "-S", "-n"))


def test_variables_override_keywords_as_in_ansible():
    spec = become_for({"become": False, "become_user": "root", "become_method": "sudo"},
                      {"ansible_become": "true", "ansible_become_user": "app",
                       "ansible_become_method": "su", "ansible_become_pass": "pw"})
    assert (spec.method, spec.user, spec.flags, spec.password) == ("su", "app", (), "pw")


def test_become_password_prefers_the_variable_over_the_asked_one():
    assert become_for({"become": True}, {}, password="asked").password == "asked"
    assert become_for({"become": True}, {"ansible_become_password": "var"},
                      password="asked").password == "var"


def test_a_keyword_templated_to_omit_is_the_inherited_value(tmp_path):
    """ioc-run: ``become: '{{ omit }}'`` falls back to what the task inherits
    (the play's become as nobody), as Ansible's ``set_to_context``."""
    from ioc.agentless_runner.context import OMIT

    book = tmp_path / "play.yml"
    book.write_text("- hosts: all\n  become: yes\n  become_user: nobody\n  tasks:\n"
                    "    - command: whoami\n      become: '{{ omit }}'\n"
                    "    - command: whoami\n      become_user: '{{ omit }}'\n")
    first, second = loader.load_playbook(str(book)).plays[0].tasks[:2]
    variables = {"omit": OMIT}
    template = Templar(variables).template
    for task in (first, second):
        keywords = {k: getattr(task, k) for k in ("become", "become_user", "become_method",
                                                   "become_flags", "become_exe")}
        assert become_for(keywords, variables, template,
                          omitted=task.omitted).user == "nobody"
    assert become_for({"become": "{{ omit }}"}, variables, template) is None


def test_flags_and_exe_are_taken_as_written():
    spec = become_for({"become": True, "become_flags": "-H -E", "become_exe": "/usr/bin/sudo"}, {})
    assert spec.flags == ("-H", "-E") and spec.exe == "/usr/bin/sudo"


def test_templated_settings_are_rendered_with_the_hosts_variables():
    variables = {"app_user": "svc", "vault_pw": "s3cret",
                 "ansible_become_password": "{{ vault_pw }}"}
    spec = become_for({"become": "{{ 1 == 1 }}", "become_user": "{{ app_user }}"}, variables,
                      Templar(variables).template)
    assert (spec.user, spec.password) == ("svc", "s3cret")


def test_the_password_is_never_in_the_repr():
    spec = become_for({"become": True}, {"ansible_become_password": "hunter2-x"})
    assert "hunter2-x" not in repr(spec) and "hunter2-x" not in spec.describe()


def test_a_builtin_method_may_be_written_in_full():
    assert become_for({"become": True, "become_method": "ansible.builtin.su"}, {}).method == "su"


def test_an_unsupported_method_is_an_error_naming_it():
    with pytest.raises(ConnectionSetupError, match="become_method 'doas' is not supported"):
        become_for({"become": True, "become_method": "doas"}, {}, where="play.yml:3: ")


# -- mitogen_via --------------------------------------------------------------------------


def test_mitogen_via_names_another_inventory_host():
    spec = spec_for("b", {"ansible_host": "10.0.0.2", "mitogen_via": "a"})
    assert spec.via == "a" and spec.via_spec is None
    assert spec_for("a", {"mitogen_via": "a"}).via is None  # via itself: no hop


def test_mitogen_via_with_a_user_part_is_refused():
    with pytest.raises(ConnectionSetupError, match="only an inventory host name"):
        spec_for("b", {"mitogen_via": "root@a"})


def test_a_via_chain_is_resolved_hop_by_hop():
    specs = {"a": spec_for("a", {"ansible_host": "10.0.0.1"}),
             "b": spec_for("b", {"ansible_host": "10.0.0.2", "mitogen_via": "a"}),
             "c": spec_for("c", {"ansible_host": "10.0.0.3", "mitogen_via": "b"})}
    resolved = resolve_via("c", specs["c"], specs.__getitem__)
    assert resolved.hostname == "10.0.0.3"
    assert resolved.via_spec.hostname == "10.0.0.2" and resolved.via_spec.via == "a"
    assert resolved.via_spec.via_spec == specs["a"]


def test_a_via_loop_is_an_error_showing_the_loop():
    specs = {"a": spec_for("a", {"mitogen_via": "b"}), "b": spec_for("b", {"mitogen_via": "a"})}
    with pytest.raises(ConnectionSetupError, match="mitogen_via loops: a -> b -> a"):
        resolve_via("a", specs["a"], specs.__getitem__)


def test_ssh_settings_from_variables():
    spec = spec_for("h", {"ansible_host": "x", "ansible_port": "2222", "ansible_user": "u",
                          "ansible_ssh_common_args": "-o A=1", "ansible_ssh_extra_args": "-o B=2",
                          "ansible_timeout": "7", "ansible_ssh_retries": "2"})
    assert spec == ConnectionSpec(transport="ssh", hostname="x", port=2222, user="u",
                                  ssh_args=("-o", "ConnectTimeout=7", "-o", "A=1", "-o", "B=2"),
                                  python="python3", timeout=7.0, retries=2)


def test_the_older_ssh_spellings_of_host_and_port_are_read():
    spec = spec_for("h", {"ansible_ssh_host": "x", "ansible_ssh_port": "2200"})
    assert (spec.hostname, spec.port) == ("x", 2200)
    spec = spec_for("h", {"ansible_host": "y", "ansible_ssh_host": "x", "ansible_port": 22,
                          "ansible_ssh_port": "2200"})
    assert (spec.hostname, spec.port) == ("y", 22)


def test_the_connect_timeout_goes_where_ansibles_ssh_puts_it():
    """After ansible_ssh_args (whose ConnectTimeout wins, ssh keeping the first
    value), before the common and extra args (whose ConnectTimeout does not)."""
    spec = spec_for("h", {"ansible_ssh_args": "-o X=1", "ansible_ssh_common_args": "-o Y=2"})
    assert spec.ssh_args == ("-o", "X=1", "-o", "ConnectTimeout=10", "-o", "Y=2")
    assert spec.retries == 0  # Ansible's reconnection_retries default



def test_the_login_password_variable_wins_over_the_asked_one_and_is_never_shown():
    variables = {"ansible_ssh_pass": "{{ vaulted }}", "vaulted": "pw-7d1e"}
    spec = spec_for("h", variables, password="asked")
    assert spec.password == "pw-7d1e"
    assert "pw-7d1e" not in repr(spec) and "pw-7d1e" not in spec.describe_target()
    assert spec_for("h", {}, password="asked").password == "asked"
    assert spec_for("h", {"ansible_password": ""}, password="asked").password is None


# -- the transport report counts a host's runners together ---------------------------------


def test_a_hosts_calls_are_summed_over_its_identities():
    report = TransportReport()
    report.count_call("h", 1, context="h")
    report.count_call("h", 1, context="h (sudo:app)")
    report.count_call("h", 2, context="h (sudo:app)")
    assert report.calls == {"h": 3}


# -- the planner: a batch per identity --------------------------------------------------


def test_play_level_become_is_one_batch_with_fact_gathering(tmp_path):
    plan = plan_of(tmp_path, """
- hosts: all
  become: true
  become_user: app
  tasks:
    - command: id
    - debug: msg=x
    - command: id
""")
    assert shape(plan) == ["B0-4"]
    gather = plan.program.entries[0].task
    assert (gather.become, gather.become_user) == (True, "app")


def test_a_batch_is_cut_where_the_identity_changes_and_not_for_tasks_that_never_connect(tmp_path):
    plan = plan_of(tmp_path, tasks(
        "- command: id",
        "- command: id",
        "  become: true",
        "- debug: msg=x",
        "- set_fact: y=1",
        "- command: id",
        "  become: true",
        "- command: id",
        "  become: true",
        "  become_user: app",
        "- command: id",
        "  become: true",
        "  become_user: app",
        "  become_method: su"))
    # 0 is the (empty) pre_tasks flush
    assert shape(plan) == ["B1-1", "B2-5", "B6-6", "B7-7"]
    text = explain(plan)
    assert "become identity changes (the connection's user -> become sudo:root)" in text
    assert "become identity changes (become sudo:root -> become sudo:app)" in text


def test_become_vars_of_a_block_count_as_a_change(tmp_path):
    plan = plan_of(tmp_path, tasks(
        "- command: id",
        "- block:",
        "    - command: id",
        "  vars:",
        "    ansible_become: true"))
    assert shape(plan) == ["B1-1", "B2-2"]


def test_a_become_user_written_inside_the_batch_is_checked_by_the_runner(tmp_path):
    """The identity is the controller's to choose: a host whose set_fact did
    write ``who`` stops before the task, which runs in a runner of that user."""
    plan = plan_of(tmp_path, tasks(
        "- set_fact: who=app",
        "- command: id",
        "  become: true",
        "  become_user: '{{ who }}'"))
    assert shape(plan) == ["B1-2"]
    assert plan.steps[0].checks == ((2, ("who",)),)


def test_setting_a_become_variable_inside_the_batch_is_checked_by_the_runner(tmp_path):
    plan = plan_of(tmp_path, tasks(
        "- command: id",
        "- set_fact: ansible_become_user=app",
        "- debug: msg=x",
        "- command: id"))
    # No cut: the runner checks before the last command whether an
    # ansible_become* variable was written, and only then stops there.
    assert shape(plan) == ["B1-4"]
    assert plan.steps[0].checks == ((4, ("ansible_become_user",)),)
    assert "checks before 4 that nothing wrote ansible_become_user" in explain(plan)


def test_role_level_become_reaches_the_roles_tasks(tmp_path):
    role = tmp_path / "roles" / "r" / "tasks"
    role.mkdir(parents=True)
    (role / "main.yml").write_text("- command: id\n")
    plan = plan_of(tmp_path, """
- hosts: all
  gather_facts: false
  roles:
    - role: r
      become: true
      become_user: app
""")
    task = next(e.task for e in plan.program.entries if e.task.action == "command")
    assert (task.become, task.become_user) == (True, "app")


def test_handlers_that_need_different_identities_are_refused(tmp_path):
    with pytest.raises(PlanError, match="handlers that run as different become identities"):
        plan_of(tmp_path, tasks(
            "- command: id",
            "  notify: [h1, h2]",
            head="- hosts: all\n  gather_facts: false\n  handlers:\n"
                 "    - name: h1\n      command: id\n"
                 "    - name: h2\n      command: id\n      become: true\n"))


def test_a_flush_runs_as_its_handlers(tmp_path):
    plan = plan_of(tmp_path, """
- hosts: all
  gather_facts: false
  become: true
  tasks:
    - command: id
      notify: h
  handlers:
    - name: h
      command: id
""")
    assert shape(plan) == ["B0-3"]  # the task and the flushes, one identity


def test_a_flush_whose_handlers_run_as_another_identity_is_cut_off(tmp_path):
    plan = plan_of(tmp_path, """
- hosts: all
  gather_facts: false
  tasks:
    - command: id
      become: true
      notify: h
  handlers:
    - name: h
      command: id
""")
    # 0: the pre_tasks flush, as the handler (the connection's user)
    assert shape(plan) == ["B0-0", "B1-1", "B2-3"]
    assert "become identity changes (become sudo:root -> the connection's user): " \
           "task meta" in explain(plan)


# -- which Ansible connection plugins ioc's transports stand in for ------------------


@pytest.mark.parametrize("written, transport", [
    ("ssh", "ssh"), ("ansible.builtin.ssh", "ssh"), ("ansible.legacy.paramiko_ssh", "ssh"),
    ("smart", "ssh"), ("local", "local"), ("ansible.builtin.local", "local"),
])
def test_ssh_and_local_by_any_of_their_names_connect(written, transport):
    spec = spec_for("h1", {"ansible_connection": written, "ansible_host": "127.0.0.1"})
    assert spec.transport == transport


@pytest.mark.parametrize("written", ["docker", "community.docker.docker", "local_again",
                                     "community.general.ssh"])
def test_any_other_connection_plugin_is_refused_by_name(written):
    with pytest.raises(ConnectionSetupError, match="connection type %r is not supported"
                       % written):
        spec_for("h1", {"ansible_connection": written})


def test_ansible_ssh_retries_reaches_ioc_run_from_the_environment(monkeypatch):
    import argparse

    from ioc.ansible.config import read_settings
    from ioc.cli import connection_vars

    args = argparse.Namespace(remote_user=None, connection=None, timeout=None,
                              private_key_file=None, ssh_common_args=None, ssh_extra_args=None)
    assert "ansible_ssh_retries" not in connection_vars(args, read_settings())
    monkeypatch.setenv("ANSIBLE_SSH_RETRIES", "3")
    assert connection_vars(args, read_settings())["ansible_ssh_retries"] == 3


def test_an_include_vars_named_by_a_value_of_the_batch_is_chosen_on_the_target(tmp_path):
    """No cut before it: the controller ships every file the name can be."""
    plan = plan_of(tmp_path, tasks(
        "- set_fact: os=Debian",
        "- include_vars: 'vars/{{ os }}.yml'",
        "- include_vars: 'vars/{{ os }}[1].yml'",
        "- command: id"))
    # The second's name has a glob character of its own: the controller
    # resolves it, and the runner checks that nothing wrote ``os`` before it.
    assert shape(plan) == ["B1-4"]
    assert plan.steps[0].deferred == (2,)
    assert (3, ("os",)) in plan.steps[0].checks
    assert "include_vars files chosen on the target: 2" in explain(plan)


def test_an_include_vars_with_first_found_over_gathered_facts_is_chosen_on_the_target(tmp_path):
    """geerlingguy.mysql's variables.yml: the loop's terms read the facts the
    play gathers in the same batch; the controller ships every file each name
    can be, and no check stops a host before it. A term the runner cannot
    decide alone (``paths``, a glob character of its own, a name that is not
    the loop item) keeps the controller's answer and its check."""
    plan = plan_of(tmp_path, """
- hosts: all
  tasks:
    - include_vars: "{{ item }}"
      with_first_found:
        - files:
            - "vars/{{ ansible_facts.os_family }}-{{ ansible_facts.distribution_major_version }}.yml"
            - "vars/{{ ansible_facts.os_family }}.yml"
          skip: true
    - include_vars: "{{ item }}"
      with_first_found:
        - "{{ ansible_facts.os_family }}.yml"
        - main.yml
    - include_vars: "{{ item }}"
      with_first_found:
        - files: ["{{ ansible_facts.os_family }}.yml"]
          paths: [vars]
    - include_vars: "{{ item }}"
      with_first_found: ["{{ ansible_facts.os_family }}*.yml"]
    - include_vars: "vars/{{ item | basename }}"
      with_first_found: ["{{ ansible_facts.os_family }}.yml"]
""")
    # 0 Gathering Facts, 1 the flush, then the five include_vars
    assert shape(plan) == ["B0-6"]
    assert plan.steps[0].deferred == (2, 3)
    assert sorted(i for i, _ in plan.steps[0].checks) == [4, 5, 6]
    assert "include_vars files chosen on the target: 2, 3" in explain(plan)
