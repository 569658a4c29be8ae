"""Differences ansible-core's own integration targets found between ``linear``
and ``mitogen_batch`` (issue 18, ``tests/targets/repro/``), each fixed where it
lives and compared here with linear under both supported ansible-core releases
(see test_mitogen_batch.py for the harness).
"""
from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import sys
import time

import pytest

from tests.ansible.test_mitogen_batch import (  # noqa: F401 (fixtures)
    ANSIBLE_CORE, ROOT,
    Ansible, ansible, ansible_python, assert_same_output, find_ansible_python, local_inventory)
from tests.support import users

pytestmark = pytest.mark.integration


def test_a_templated_action_keyword_draws_no_resolved_action_warning(ansible, ansible_python):
    """``action: "{{ name }} ..."`` is resolved when the task runs; the bridge does
    not ask Ansible for ``resolved_action`` before then (Ansible would warn)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            module_name: debug
          tasks:
            - action: "{{ module_name }} msg='this should be debugged'"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "resolved_action" not in batch.stdout + batch.stderr
    assert '"msg": "this should be debugged"' in batch.stdout


def test_assert_shows_its_result_unless_quiet(ansible, ansible_python):
    """Ansible's assert marks its result to be shown at every verbosity (not when quiet)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - assert:
                that: 1 == 1
            - assert:
                that: 1 == 1
                quiet: true
            - assert:
                that: 1 == 2
                fail_msg: not equal
              ignore_errors: true
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "All assertions passed"' in batch.stdout
    assert batch.steps, batch.log


def test_debug_refuses_a_var_that_is_no_text_as_its_argument_spec_does(ansible,
                                                                       ansible_python):
    """debug's ``var`` must be text: a dict, list or number fails the task as the
    action plugin raises it ("Task failed: argument 'var' is of type ..."); an
    expression that raises is "Error while resolving `var` expression"."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - debug:
                var:
                  some_diot:
                    sub_dict:
              ignore_errors: true
              register: result
            - debug:
                var: result
            - debug:
                var: 5
              ignore_errors: true
            - debug:
                var: 5/0
              ignore_errors: true
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "[ERROR]: Task failed: argument 'var' is of type int" in batch.stdout + batch.stderr
    assert "Error while resolving `var` expression: Error rendering expression: division by " \
        "zero" in batch.stdout + batch.stderr
    assert batch.steps, batch.log


def test_an_assert_on_an_undefined_variable_fails_as_the_conditional_error(ansible, ansible_python):
    """An error evaluating one of assert's conditions is the task's error
    ("Error while evaluating conditional"), naming where that condition was
    written, not a module failure."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - assert:
                that:
                  - 1 == 1
                  - not_defined == 1
              ignore_errors: true
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "Error while evaluating conditional: 'not_defined' is undefined" in batch.stdout \
        + batch.stderr
    assert batch.steps, batch.log


def test_task_args_given_as_a_template_are_resolved_as_ansible_does(ansible, ansible_python):
    """Arguments as a template (``assert: "{{ item }}"``) and free-form text for
    an action that takes none run through Ansible's own finalization: its
    warning, its refusals ("does not support raw params", "must resolve to a
    'dict'"); the play's other tasks stay native."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            more: "owner=nobody"
            whole: "msg=from a template"
          tasks:
            - assert: "{{ item }}"
              loop:
                - that: 1 == 1
                - that: true
            - debug:
                garbage {{ "with a template" }}
              ignore_errors: true
            - file: path=/tmp/ioc-never-made {{ more }}
              ignore_errors: true
            - debug: "{{ whole }}"
              ignore_errors: true
            - command: echo free-form stays native
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "does not support raw params" in batch.stdout + batch.stderr
    assert "Using a template for task args is unsafe" in batch.stdout + batch.stderr
    assert len(batch.through_ansible) == 4, batch.log
    assert batch.steps, batch.log


def test_changed_when_failed_when_and_until_fail_tasks_in_linear_words(ansible, ansible_python):
    """The runner decides changed_when/failed_when/until; the bridge applies the
    outcomes to Ansible's own task result as TaskExecutor does: "A 'changed_when'
    expression failed" with the expression's origin, "A 'failed_when' expression
    evaluated to 'True'." (once, not the module's message), and an exhausted
    until on a module that succeeded has no error of its own."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - ping:
              changed_when: boomboomboom
              ignore_errors: true
            - set_fact:
                x: 1
              failed_when: true
              ignore_errors: true
            - file:
                path: /nonexistent/ioc-test
                state: file
              failed_when: true
              ignore_errors: true
            - ping:
              until: 1 == 0
              retries: 1
              delay: 0
              ignore_errors: true
            - ping:
                data: "{{ item }}"
              loop: [1, 2]
              failed_when: item == 2
              changed_when: true
              ignore_errors: true
            - ping:
              changed_when: false
              failed_when: false
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "Error while evaluating conditional: 'boomboomboom' is undefined" in batch.stdout \
        + batch.stderr
    assert batch.steps and not batch.through_ansible, batch.log


def test_a_python_error_in_a_template_is_worded_as_ansibles_rendering_error(ansible,
                                                                           ansible_python):
    """A Python exception raised inside a template or an expression is
    "Error rendering template/expression: <exception>" (lazy containers named as
    Ansible's in it); only an undefined variable in a condition is "Error while
    evaluating conditional"."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            dict_one: {a: 1}
            dict_two: {b: 2}
          tasks:
            - set_fact:
                dict_sum: "{{ dict_one + dict_two }}"
              ignore_errors: true
            - ping:
              changed_when: 1 / 0
              ignore_errors: true
            - assert:
                that: 1 / 0
              ignore_errors: true
            - debug:
                msg: "{{ [1] | map('int') | list + dict_one }}"
              ignore_errors: true
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "Error rendering expression: division by zero" in batch.stdout + batch.stderr
    assert "'_AnsibleLazyTemplateDict' and '_AnsibleLazyTemplateDict'" in batch.stdout \
        + batch.stderr
    assert batch.steps, batch.log


def test_a_modules_uncaught_exception_is_worded_once(ansible, ansible_python):
    """A module that raises: "Task failed: Module failed: <exception>" once (the
    bridge gives Ansible the exception, not the msg the runner made of it; 2.19's
    executor too; a loop item's too), and a changed_when error on it replaces
    that msg, registered too."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - ping:
                data: crash
              ignore_errors: true
            - ping:
                data: "{{ item }}"
              loop: [crash, pong]
              ignore_errors: true
              register: looped
            - debug:
                var: looped.results[0].msg
            - ping:
                data: crash
              changed_when: 1 / 0
              ignore_errors: true
              register: crashed
            - debug:
                var: crashed.msg
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "Module failed: Task failed" not in batch.stdout + batch.stderr
    assert batch.steps, batch.log


def test_until_reads_the_result_as_changed_when_left_it(ansible, ansible_python):
    """``until: r is changed`` with ``changed_when: false`` is never met: the
    task retries and fails as linear's does (until sees the conditions' result)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - ping:
              register: r
              changed_when: false
              until: r is changed
              retries: 2
              delay: 0
              ignore_errors: true
            - ping:
              register: s
              changed_when: true
              until: s is changed
              retries: 2
              delay: 0
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert batch.stdout.count("FAILED - RETRYING") == 2
    assert batch.steps and not batch.through_ansible, batch.log


def test_failed_when_decides_a_task_whose_until_ran_out(ansible, ansible_python):
    """``until`` that is never met on a result ``failed_when`` lets pass: the task
    is not failed (ansible-core's result is failed as failed_when said), in a
    loop too, and the registered value says so (2.21: ``failed: false``)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - command: "true"
              register: r
              until: 1 == 0
              retries: 1
              delay: 0
              failed_when: r.attempts > 6
            - debug:
                var: r.failed
            - command: "true"
              register: s
              loop: [1]
              until: 1 == 0
              retries: 1
              delay: 0
              failed_when: false
            - debug:
                var: s.failed
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "h1                         : ok=4    changed=2" in batch.stdout
    assert batch.steps and not batch.through_ansible, batch.log


def test_loop_labels_and_break_when_as_linear(ansible, ansible_python):
    """Each item is labelled with its loop variable's value (``loop_var: i`` too),
    and ``loop_control.break_when`` ends the loop after the first item it is
    true for (a play variable and the registered item result in scope)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            limit: 2
          tasks:
            - debug:
                var: i
              loop: [1, 2]
              loop_control:
                loop_var: i
            - debug:
                var: item
              loop: [1, 2, 3, 4]
              loop_control:
                break_when: item >= limit
            - ping:
                data: "{{ item }}"
              loop: [a, b, c]
              register: pinged
              loop_control:
                break_when:
                  - pinged.ping == 'b'
            - debug:
                msg: "{{ pinged.results | length }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "(item=1)" in batch.stdout and "(item=3)" not in batch.stdout
    assert '"msg": 2' in batch.stdout
    assert batch.steps and not batch.through_ansible, batch.log


def test_an_include_that_cannot_be_loaded_is_the_steps_failure_for_any_errors_fatal(
        ansible, ansible_python):
    """An include_role of a role that does not exist, on h2 only, under
    any_errors_fatal: the error names where the role's name was written, and
    the play ends for h1 too (linear loads includes before that check)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          any_errors_fatal: true
          tasks:
            - name: include a role that does not exist
              include_role:
                name: non-existent-role
              when: inventory_hostname == 'h2'
            - name: never reached
              debug:
                msg: never
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1", "h2")))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 2, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "never reached" not in batch.stdout
    assert "Origin: <unknown>" not in batch.stdout + batch.stderr
    assert batch.steps, batch.log


def test_a_looped_include_that_cannot_be_loaded_names_where_its_value_was_written(
        ansible, ansible_python):
    """A looped include_role of roles that do not exist, in a block with a
    rescue: each error's ``Origin:`` is where Ansible's templating says the
    role's name came from: the loop item as written (``{{ item }}``, ``{{
    item.n }}``), the play var a loop over ``{{ names }}`` took it from, the
    argument's own template for any other text (``x{{ item }}``)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            names:
              - c
          tasks:
            - block:
                - include_role:
                    name: "{{ item }}"
                  loop:
                    - a
                    - b
                - include_role:
                    name: "x{{ item }}"
                  loop: [a]
              rescue:
                - debug:
                    msg: rescued
            - block:
                - include_role:
                    name: "{{ item }}"
                  loop: "{{ names }}"
              rescue:
                - debug:
                    msg: rescued
            - block:
                - include_role:
                    name: "{{ item.n }}"
                  loop:
                    - n: d
              rescue:
                - debug:
                    msg: rescued
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    shown = batch.stdout + batch.stderr
    assert "Origin: <unknown>" not in shown
    assert shown.count("play.yml:") == 4, shown  # a, b (loop), c (vars), d (item.n)
    assert batch.steps, batch.log


def test_a_templated_throttle_is_templated_by_ansibles_strategy(ansible, ansible_python):
    """A templated ``throttle`` runs its task through Ansible, whose strategy
    templates it per host: a number limits the hosts, anything else stops the
    run as linear's does ("Failed to convert the throttle value to an
    integer."), not with ioc's int() on the template."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            at_once: 1
          tasks:
            - debug:
                msg: one at a time
              throttle: "{{ at_once }}"
            - debug:
                msg: native again
        - hosts: web
          gather_facts: false
          tasks:
            - debug:
              throttle: "{{ 'nope' }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 1, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "Failed to convert the throttle value to an integer" in batch.stdout + batch.stderr
    assert batch.through_ansible, batch.log


def test_a_keyword_value_of_the_wrong_type_fails_the_task_as_ansible_does(ansible, ansible_python):
    """A keyword written with a value Ansible cannot convert (``diff: yes.``,
    ``retries: many``) fails its task when Ansible validates it: that task runs
    through Ansible, the others natively."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - debug: msg="not important"
              diff: yes.
              ignore_errors: true
            - ping:
              until: true
              retries: many
              ignore_errors: true
            - debug:
                msg: native
              diff: yes
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "The value 'yes.' could not be converted to 'bool'" in batch.stdout + batch.stderr
    assert len(batch.through_ansible) == 2 and batch.steps, batch.log


def test_a_templated_python_interpreter_is_templated_before_connecting(ansible, ansible_python):
    """``ansible_python_interpreter: "{{ ansible_playbook_python }}"`` (as
    ansible-test's inventories write it) is the controller's Python, not a
    file named after the template."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - ping:
            - debug:
                msg: "{{ ansible_python_interpreter }}"
    """)
    inventory = ansible.write("hosts.ini", "[web]\nh1 ansible_connection=local "
                              "ansible_python_interpreter='{{ ansible_playbook_python }}'\n")
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "%s"' % ansible_python in batch.stdout
    assert batch.steps and not batch.through_ansible, batch.log


def test_with_force_handlers_a_failed_host_leaves_the_later_plays(ansible, ansible_python):
    """force_handlers runs a failed host's handlers in the section's always;
    when that flush is the play's last step (no handler notified) the host
    still ends the play failed: later plays leave it out, a play all of whose hosts failed stops
    the run, and the exit code is linear's."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - fail:
              when: inventory_hostname == 'h1'
        - hosts: web
          gather_facts: false
          tasks:
            - debug:
                msg: second play
        - hosts: h1
          gather_facts: false
          tasks:
            - fail:
        - hosts: all
          gather_facts: false
          tasks:
            - debug:
                msg: never
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory),
                                 env={"ANSIBLE_FORCE_HANDLERS": "true"})
    assert linear.rc == 2, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert batch.stdout.count('"msg": "second play"') == 1  # h2's only
    assert batch.stdout.count('"msg": "never"') == 1  # h1 failed every play it was in
    assert batch.steps, batch.log


def test_untrusted_arguments_are_not_templated(ansible, ansible_python):
    """``!unsafe`` text in a task's arguments is never templated by Ansible (a
    template in it stays as written; as debug's ``var`` it fails the task):
    those tasks run through Ansible, the trusted ones natively."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            debug_me: hello
          tasks:
            - debug:
                var: !unsafe debug_me
              ignore_errors: true
            - debug:
                msg: !unsafe "{{ not templated }}"
            - debug:
                msg: "{{ debug_me }} templated"
            - debug:
                var: debug_me
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "{{ not templated }}"' in batch.stdout
    assert len(batch.through_ansible) == 2 and batch.steps, batch.log


def test_task_result_is_the_latest_result(ansible, ansible_python):
    """2.21's ``_task.result``: in a loop's ``when`` the previous item's result,
    in ``changed_when``/``failed_when`` this attempt's (2.19 has no ``_task``:
    the defaults apply)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - debug:
              loop: [1, 2, 3]
              when: |
                (_task.result | default({"msg": "First!"})).get("msg") != "First!"
            - ping:
                data: "{{ item }}"
              loop: [a, b]
              changed_when: (_task.result | default({})).get("ping") == 'b'
            - ping:
              failed_when: (_task.result | default(dict(ping='x'))).ping != 'pong'
              ignore_errors: true
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert batch.steps and not batch.through_ansible, batch.log


def test_set_fact_templates_its_keys(ansible, ansible_python):
    """set_fact's keys are templated (Ansible's action does, for dynamic names),
    and a key that is no variable name fails the task as Ansible's action does
    (its words, the key's origin, the help text)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - set_fact:
                "{{ a_key }}": "{{ a_value }}"
              vars:
                a_key: my_key
                a_value: my_value
            - assert:
                that: my_key == "my_value"
            - debug:
                msg: "{{ my_key }}"
            - set_fact:
                "{{ 'true' }}": value
              ignore_errors: true
            - set_fact:
                "{{ 1 }}": value
              register: invalid
              ignore_errors: true
            - debug:
                var: invalid.msg
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "my_value"' in batch.stdout
    assert "Invalid variable name 'true'." in batch.stdout + batch.stderr
    assert "Variable names must be strings starting with a letter" in batch.stdout \
        + batch.stderr
    assert batch.steps and not batch.through_ansible, batch.log


def test_a_connection_plugin_ioc_does_not_drive_runs_the_play_under_linear(ansible,
                                                                            ansible_python):
    """A host whose connection is a plugin other than local or ssh (here one
    from the playbook's ``connection_plugins/``) runs its play under linear,
    the log saying why; a play of other hosts stays native."""
    plugin = ROOT / "tests" / "targets" / "repro" / "connection_plugins" / "local_again.py"
    ansible.write("connection_plugins/local_again.py", plugin.read_text())
    ansible.write("play.yml", """
        - hosts: odd
          gather_facts: false
          tasks:
            - ping:
        - hosts: web
          gather_facts: false
          tasks:
            - ping:
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)) +
                              "[odd]\nh9 ansible_connection=local_again "
                              "ansible_python_interpreter=%s\n" % ansible_python)
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "uses the connection plugin 'local_again'" in batch.log
    assert batch.steps == ["Batch 1-1 on 1 host(s)"], batch.log


def test_hash_behaviour_merge_runs_the_play_under_linear(ansible, ansible_python):
    """``hash_behaviour = merge``: a dict variable merges recursively across
    precedence layers (play vars, set_fact, extra vars); ioc's layers replace,
    so the play runs whole under linear, the log saying why."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            test_hash:
              playbook_vars: from play vars
              nested: {play: 1}
          tasks:
            - set_fact:
                test_hash:
                  nested: {fact: 2}
            - debug:
                var: test_hash
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    extra = ["-e", '{"test_hash": {"extra_args": "from extra vars"}}']
    linear, batch = ansible.both("play.yml", str(inventory), args=extra,
                                 env={"ANSIBLE_HASH_BEHAVIOUR": "merge"})
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"playbook_vars": "from play vars"' in batch.stdout
    assert '"extra_args": "from extra vars"' in batch.stdout
    assert '"fact": 2' in batch.stdout and '"play": 1' in batch.stdout
    assert "hash_behaviour = merge runs through Ansible's linear strategy" in batch.log


def test_inject_invocation_gives_command_results_their_module_args(tmp_path):
    """``INJECT_INVOCATION`` (2.21's setting; 2.19 has none): a command or
    shell result carries ``invocation.module_args`` (every option, defaults
    filled; a no_log task's hidden), as Ansible's module code returns it; the
    tasks stay in their batch."""
    python = find_ansible_python(ANSIBLE_CORE)
    ansible = Ansible(python, tmp_path)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - command: echo LOG_ME_COMMAND
              register: c
            - shell: echo LOG_ME_SHELL
              register: s
            - command: echo DO_NOT_LOG
              no_log: true
            - debug:
                msg: "{{ c.invocation.module_args.keys() | sort }} {{ s.invocation.module_args._raw_params }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory),
                                 env={"ANSIBLE_INJECT_INVOCATION": "1"})
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "'strip_empty_ends'] echo LOG_ME_SHELL" in batch.stdout
    assert "DO_NOT_LOG" not in batch.stdout
    assert batch.steps == ["Batch 1-4 on 1 host(s)"], batch.log


def test_a_filter_only_ansible_has_works_in_a_dynamically_included_file(ansible,
                                                                        ansible_python):
    """The tasks of a dynamic include name a filter ioc's runner proxies to
    Ansible (``password_hash``) that no task of the play named: the runner
    calls it as in a task of the play itself."""
    ansible.write("hashing.yml", """
        - set_fact:
            hashed: "{{ 'secret' | password_hash('sha512', 'saltsalt') }}"
        - debug:
            var: hashed
    """)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - include_tasks: "{{ 'hashing.yml' }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"hashed": "$6$' in batch.stdout
    assert len(batch.steps) == 2, batch.log


def test_a_become_keyword_templated_to_omit_is_the_inherited_one(ansible, ansible_python):
    """``become: '{{ omit }}'`` (and ``become_user``) on a task: the keyword is
    what the task inherits (the play's: become nobody), not unset. (``raw``:
    a module would warn that nobody cannot use the test's directory.)"""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          become: yes
          become_user: nobody
          tasks:
            - raw: whoami
              register: omitted
              become: '{{ omit }}'
            - raw: whoami
              register: omitted_user
              become_user: '{{ omit }}'
            - raw: whoami
              register: explicit_no
              become: false
            - debug:
                msg: "{{ omitted.stdout | trim }} {{ omitted_user.stdout | trim }} {{ explicit_no.stdout | trim }}"
    """)
    inventory = ansible.write("hosts.ini", "[web]\nh1 ansible_connection=local "
                              "ansible_python_interpreter=/usr/bin/python3\n")
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "nobody nobody root"' in batch.stdout
    assert batch.steps, batch.log


#: A throwaway become user of the test below (a fresh one for each run).
CWD_USER = "ioc_cwd_fid"


def test_a_new_become_user_who_cannot_read_the_play_directory_gets_a_remote_tmp(ansible):
    """A command (ioc's own module) as a fresh become user who cannot read the
    play's directory (pytest's, 0700), where a local connection starts it:
    AnsibleModule's ``_set_cwd`` moves to its tmpdir under the user's
    ``remote_tmp``, which it creates with linear's "Module remote_tmp ... did
    not exist and was created" warning (once: the next module finds it), and
    removes the tmpdir when the module exits. ``~/.ansible/tmp`` stays,
    empty, under both strategies. (ansible-core's setup_test_user role:
    "run whoami as the test user".)"""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - shell: whoami; pwd
              become: true
              become_user: %(user)s
              register: who
            - stat:
                path: /
              become: true
              become_user: %(user)s
            - stat:
                path: ~%(user)s/.ansible/tmp
              register: remote_tmp
            - find:
                paths: ~%(user)s/.ansible/tmp
                file_type: any
              register: left
            - debug:
                msg:
                  - "{{ who.stdout_lines[0] }}"
                  - "{{ who.stdout_lines[1]
                        is match(remote_tmp.stat.path ~ '/ansible-moduletmp-') }}"
                  - "{{ remote_tmp.stat.isdir }} {{ remote_tmp.stat.mode }} {{ left.matched }}"
    """ % {"user": CWD_USER})
    inventory = ansible.write("hosts.ini", "[web]\nh1 ansible_connection=local "
                              "ansible_python_interpreter=/usr/bin/python3\n")
    runs = []
    try:
        for strategy in ("linear", "mitogen_batch"):
            users.make_user(CWD_USER)  # (a home without ~/.ansible/tmp)
            runs.append(ansible.run("play.yml", str(inventory), strategy))
    finally:
        users.remove_user(CWD_USER)
    linear, batch = runs
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    home = "/home/%s" % CWD_USER  # (useradd -m)
    assert batch.stderr.count("[WARNING]: Module remote_tmp %s/.ansible/tmp did not exist and "
                              "was created with a mode of 0700" % home) == 1, batch.stderr
    assert '"%s",\n        true,\n        "True 0700 0"' % CWD_USER in batch.stdout, batch.stdout


def test_check_mode_templated_to_omit_is_the_runs_own(ansible, ansible_python):
    """``check_mode: '{{ omit }}'``: the task runs in check mode only when the
    run does (``-C``), as if the keyword were not set."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - copy:
                dest: "{{ playbook_dir }}/foo"
                content: foo
              check_mode: '{{ omit }}'
              register: cmode
              loop: [1, 2]
            - debug:
                msg: "{{ cmode.results | map(attribute='changed') | join(',') }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    foo = ansible.workdir / "foo"
    for args, changed, written in (([], "True,False", True), (["-C"], "True,True", False)):
        linear = ansible.run("play.yml", str(inventory), "linear", args=args)
        assert foo.exists() == written
        foo.unlink(missing_ok=True)
        batch = ansible.run("play.yml", str(inventory), "mitogen_batch", args=args)
        assert foo.exists() == written, args
        foo.unlink(missing_ok=True)
        assert linear.rc == 0, linear.stdout + linear.stderr
        assert_same_output(linear, batch)
        assert '"msg": "%s"' % changed in batch.stdout, args


def test_clear_host_errors_in_an_always_forgives_the_block_failure(ansible, ansible_python):
    """``meta: clear_host_errors`` in the always of a failed block (the play's
    last step; force_handlers makes the block's failure wait for its flush)
    clears the failure the block holds: the run exits 0 and the
    host runs the next play, as under linear."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - block:
                - fail:
              always:
                - meta: clear_host_errors
        - hosts: web
          gather_facts: false
          tasks:
            - debug:
                msg: next play
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory),
                                 env={"ANSIBLE_FORCE_HANDLERS": "true"})
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "next play"' in batch.stdout


def test_clear_host_errors_in_an_always_lets_the_host_go_on_in_its_play(ansible, ansible_python):
    """Not the play's last step: the host that failed in the block goes on
    with the play's next task, and -vv shows ``META: cleared host errors``
    (the batch ended the host at the always's end, and said nothing)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - block:
                - fail:
                  when: inventory_hostname == 'h1'
              always:
                - meta: clear_host_errors
            - debug:
                msg: still here
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1", "h2")))
    linear, batch = ansible.both("play.yml", str(inventory), args=["-vv"])
    assert linear.rc == batch.rc == 0, linear.stdout + linear.stderr + batch.stdout
    shown = [[line for line in out.stdout.splitlines()
              if line.startswith(("TASK", "META:", "ok: [", "fatal: [", "skipping: [", "h1 ", "h2 "))]
             for out in (linear, batch)]
    assert shown[1] == shown[0]
    assert "META: cleared host errors" in shown[1]
    assert 'ok: [h1] => {\n    "msg": "still here"' in batch.stdout


def test_an_explicit_flush_says_at_vv_that_it_triggered_the_handlers(ansible, ansible_python):
    """At -vv linear's ``_execute_meta`` shows "META: triggered running handlers
    for <host>" for each host an explicit ``flush_handlers`` runs for (after
    what it notified; whether or not a handler is notified), and its skip
    reason where its ``when`` is false; the implicit flushes say nothing."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - command: echo notify
              notify: H
            - meta: flush_handlers
            - meta: flush_handlers
              when: inventory_hostname == 'h1'
            - command: echo again
              notify: H
          handlers:
            - name: H
              debug:
                msg: handled
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1", "h2")))
    linear, batch = ansible.both("play.yml", str(inventory), args=["-vv"])
    assert linear.rc == batch.rc == 0, linear.stdout + linear.stderr + batch.stdout
    shown = [[line.split(" => ")[0] for line in out.stdout.splitlines()  # (not timings)
              if line.startswith(("TASK", "RUNNING HANDLER", "META:", "NOTIFIED HANDLER",
                                  "ok: [", "changed: [", "skipping: [", "h1 ", "h2 "))]
             for out in (linear, batch)]
    assert shown[1] == shown[0]
    assert shown[1].count("META: triggered running handlers for h1") == 2
    assert "META: flush_handlers conditional evaluated to False, not running handlers for h2" \
        in shown[1]


def test_each_saved_notification_is_shown_at_vv(ansible, ansible_python):
    """At -vv linear says "Notification for handler <name> has been saved." for
    each notification of a changed result it saves for the next flush, as it
    processes the result (before its status line; after a loop's items, once
    per item that ran, changed or not, once the task changed), each name as
    notified (a listen topic too); not for an unchanged result, nor for a
    handler's notification during a flush (that one applies at once)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - command: echo one
              notify: [H, topic]
            - command: echo "{{ item }}"
              loop: [1, 2]
              changed_when: item != 2 or inventory_hostname == 'h2'
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
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1", "h2")))
    linear, batch = ansible.both("play.yml", str(inventory), args=["-vv"])
    assert linear.rc == batch.rc == 0, linear.stdout + linear.stderr + batch.stdout
    shown = [[line.split(" => ")[0] for line in out.stdout.splitlines()  # (not timings)
              if line.startswith(("TASK", "RUNNING HANDLER", "Notification for handler",
                                  "NOTIFIED HANDLER", "ok: [", "changed: [", "h1 ", "h2 "))]
             for out in (linear, batch)]
    assert shown[1] == shown[0]
    saved = [line for line in shown[1] if line.startswith("Notification for handler")]
    assert saved == ["Notification for handler H has been saved.",
                     "Notification for handler topic has been saved."] * 2 \
        + ["Notification for handler H has been saved."] * 4, shown[1]


def test_an_include_tasks_handler_of_an_included_role_runs_what_it_includes_as_handlers(
        ansible, ansible_python):
    """A handler that is an ``include_tasks``, of a role an ``include_role``
    brings while the play runs: linear announces the included file and runs
    each of its tasks as a handler for the hosts that included it, in order;
    one that fails a host ends that host's handlers (it leaves the play), a
    notification from one is announced as a handler's. (At the play's start
    such a handler sends the whole play to linear; brought later, it runs
    through Ansible with the tasks it includes.)"""
    ansible.write("roles/inc_handler/tasks/main.yml", """
        - command: echo
          notify: handler
    """)
    ansible.write("roles/inc_handler/handlers/main.yml", """
        - name: handler
          include_tasks: included.yml
        - name: later
          debug:
            msg: notified by an included handler
    """)
    ansible.write("roles/inc_handler/handlers/included.yml", """
        - debug:
            msg: first included handler
          changed_when: true
          notify: later
        - fail:
            msg: failed in an included handler
          when: inventory_hostname == 'h2'
        - debug:
            msg: "last included handler, {{ inventory_hostname }}"
    """)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - include_role:
                name: inc_handler
        - hosts: web
          gather_facts: false
          tasks:
            - debug:
                msg: next play
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1", "h2")))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 2, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert batch.rc == 2
    assert "RUNNING HANDLER [inc_handler : debug]" in batch.stdout
    assert '"msg": "last included handler, h1"' in batch.stdout
    assert "last included handler, h2" not in batch.stdout
    assert '"msg": "notified by an included handler"' in batch.stdout


def test_a_tasks_warning_comes_after_what_was_shown_before_it_on_one_pipe(ansible,
                                                                         ansible_python):
    """Display never flushes stdout; linear's worker processes do, as
    multiprocessing flushes the standard streams before it forks one for a
    task. With stdout and stderr on one pipe and stdout block-buffered (as
    under ansible-test), a warning linear gives while it processes a task's
    result (stderr) comes right after the task's banner (stdout), not before
    everything the run printed so far."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - name: first
              debug:
                msg: first
            - name: notify a missing handler
              command: echo x
              notify: no such handler
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory), merged=True,
                                 env={"ANSIBLE_ERROR_ON_MISSING_HANDLER": "false"})
    assert linear.rc == batch.rc == 0, linear.stdout + batch.stdout
    shown = [[line.split(" => ")[0].rstrip(" *") for line in out.stdout.splitlines()
              if line.startswith(("PLAY", "TASK", "[WARNING]: The requested handler",
                                  "ok: [", "changed: ["))]
             for out in (linear, batch)]
    assert shown[1] == shown[0]
    assert shown[1][shown[1].index("TASK [notify a missing handler]") + 1] == (
        "[WARNING]: The requested handler 'no such handler' was not found in either the main "
        "handlers list nor in the listening handlers list")


def test_command_arguments_expand_variables_of_the_tasks_environment(ansible, ansible_python):
    """``command: echo $option`` expands ``$option`` from the task's
    ``environment`` (Ansible's module runs with it applied), non-ASCII too."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - command: echo $option ${other} $unset
              environment:
                option: Zażółć
                other: plain
              register: results
            - debug:
                var: results.stdout
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"results.stdout": "Zażółć plain $unset"' in batch.stdout


#: ``ansible-vault encrypt_string`` of each text, with the password ``vaultpw``.
VAULTED = {"hello vault": """$ANSIBLE_VAULT;1.1;AES256
61373363306636376363313233643830356565346432306264616236366261633334343039666265
3131326330373566383964323561356432363064616139630a303237666263663163306532626631
33333839616464313137343466626564653362353135383035336138303762663364306138313462
3531623563363131390a653663323166386336343034643836666433306565323433373636616238
6666"""}


def vaulted(text: str, indent: int) -> str:
    """A ``!vault`` block scalar of ``text``, its lines indented by ``indent`` spaces
    (as they stand in the test's playbook before it is dedented)."""
    return "!vault |\n" + "\n".join(" " * indent + line
                                     for line in VAULTED[text].splitlines())


def test_a_vaulted_play_variable_reaches_the_batch_decrypted(ansible, ansible_python):
    """A ``!vault`` play variable (password from --vault-password-file) is
    decrypted where a task reads it; the batch that reads it used to fail with
    "cannot unpickle ... _AnsibleTaggedStr" (Ansible's decrypted str)."""
    ansible.write("vault-password.txt", "vaultpw\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            secret_value: %s
          tasks:
            - debug:
                msg: "{{ secret_value }} and {{ secret_value | length }}"
    """ % vaulted("hello vault", 14))
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory),
                                 args=["--vault-password-file", "vault-password.txt"])
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "hello vault and 11"' in batch.stdout
    assert batch.steps and not batch.through_ansible, batch.log


def test_a_vault_value_no_task_reads_needs_no_secret(ansible, ansible_python):
    """Task vars holding a ``!vault`` value that no secret decrypts, read by
    no task: linear never decrypts it; the batch stopped the run at the first
    task ("Attempting to decrypt but no vault secrets found")."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - debug:
                msg: first task
            - vars:
                unused:
                  vaulted_thing: %s
              debug:
                msg: the vaulted value is not used
    """ % vaulted("hello vault", 20))
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "the vaulted value is not used"' in batch.stdout


@pytest.mark.parametrize("layer", ["play vars", "role vars", "group_vars"])
def test_an_undecryptable_vault_value_in_a_play_wide_layer_is_decrypted_only_where_used(
        ansible, ansible_python, layer):
    """A ``!vault`` value no secret decrypts in a layer every task of the play
    reads (the play's vars, an imported role's ``vars/main.yml``, the
    inventory's ``group_vars``): linear runs the tasks that do not use it and
    fails the one that does ("Attempt to use undecryptable variable"); the
    batch stopped the run before the first task ("[ERROR]: Attempting to
    decrypt but no vault secrets found"; filter_core's password_hash.yml).
    The play now runs under linear (-vv says why)."""
    value = vaulted("hello vault", 6 if layer != "play vars" else 18)
    play_vars = ""
    if layer == "play vars":
        play_vars = "vars:\n            secret_var: %s\n          " % value
    elif layer == "role vars":
        ansible.write("roles/holder/vars/main.yml", "plain_var: plain\nsecret_var: %s\n"
                      % value.replace("\n      ", "\n  "))
        ansible.write("roles/holder/tasks/main.yml", "- debug: msg={{ plain_var }}\n")
    else:
        ansible.write("group_vars/all.yml", "secret_var: %s\n" % value.replace("\n      ", "\n  "))
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          %stasks:
            - debug:
                msg: not the secret
            - import_role:
                name: holder
              when: false
            - debug:
                msg: "{{ secret_var }}"
            - debug:
                msg: after
    """ % play_vars)
    if layer != "role vars":
        ansible.write("roles/holder/tasks/main.yml", "- debug: msg=holder\n")
    else:
        ansible.write("play.yml", ansible.workdir.joinpath("play.yml").read_text().replace(
            "              when: false\n", ""))
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 2, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "not the secret"' in batch.stdout
    assert "Attempt to use undecryptable variable" in batch.stdout + batch.stderr
    verbose = ansible.run("play.yml", str(inventory), "mitogen_batch", args=["-vv"])
    assert "runs with the linear strategy" in verbose.stdout and \
        "vault value no secret given decrypts" in verbose.stdout, verbose.stdout


def test_a_role_that_allowed_duplicates_still_completes_for_a_later_include(ansible,
                                                                            ansible_python):
    """``roles: [x]``, ``import_role: x`` with ``allow_duplicates: true``, then
    ``include_role: x`` with ``allow_duplicates: false`` (the roles target's
    end_role.yml): Ansible's play holds one cached role, whose
    ``allow_duplicates`` the import set and the include cleared; both earlier
    occurrences ran and completed it, so the include runs nothing. The batch
    recorded no completion for an occurrence that allowed duplicates when it
    was converted and ran the role a third time."""
    ansible.write("roles/counted/tasks/main.yml", """
        - set_fact:
            runs: "{{ runs | default(0) | int + 1 }}"
    """)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          roles:
            - counted
          tasks:
            - import_role:
                name: counted
                allow_duplicates: true
            - include_role:
                name: counted
                allow_duplicates: false
            - debug:
                msg: "ran {{ runs }} times"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1", "h2")))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert batch.stdout.count('"msg": "ran 2 times"') == 2, batch.stdout


@pytest.mark.parametrize("where", ["play vars", "inventory"])
def test_ansible_facts_modules_chooses_the_fact_gathering_modules(ansible, ansible_python,
                                                                  where):
    """``ansible_facts_modules`` (the variable of ``FACTS_MODULES``) names the
    modules that gather facts, here a module of the playbook's ``library/``
    (the gathering_facts target's verify_merge_facts.yml): the batch ran
    ``setup`` instead, so the play saw Ansible's facts and not the module's."""
    ansible.write("library/my_facts.py", """
        #!/usr/bin/python
        from ansible.module_utils.basic import AnsibleModule
        AnsibleModule(argument_spec={}).exit_json(ansible_facts={"my_fact": "mine"})
    """)
    play_vars = "vars:\n            ansible_facts_modules: [my_facts]\n          " \
        if where == "play vars" else ""
    ansible.write("play.yml", """
        - hosts: web
          %stasks:
            - debug:
                msg: "{{ ansible_facts.my_fact }} {{ ansible_facts.distribution | default('no setup') }}"
    """ % play_vars)
    extra = " ansible_facts_modules='[\"my_facts\"]'" if where == "inventory" else ""
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",))
                              .replace("h1 ", "h1%s " % extra, 1))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "mine no setup"' in batch.stdout, batch.stdout


REFRESH_PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - name: a dynamic host
      add_host:
        name: dyn
        ansible_connection: local
        ansible_python_interpreter: "{{ ansible_playbook_python }}"
      run_once: true
    - block:
        - name: point the inventory at the new file
          file: src=./new.ini dest=./hosts.ini state=link force=yes follow=false
          delegate_to: localhost
          run_once: true
        - meta: refresh_inventory
      always:
        - name: run once on the first host still in the play
          file: src=./old.ini dest=./hosts.ini state=link force=yes follow=false
          delegate_to: localhost
          run_once: true
        - debug:
            msg: "{{ ansible_play_hosts_all }}"
- hosts: all
  gather_facts: false
  tasks:
    - debug:
        msg: "{{ ansible_play_hosts }}"
"""


def write_refresh_project(workdir, python: str) -> None:
    """A play that swaps its inventory file for another (the meta_tasks target's
    refresh.yml and refresh_preserve_dynamic.yml): h1 is in the old file only."""
    line = " ansible_connection=local ansible_python_interpreter=%s\n" % python
    (workdir / "old.ini").write_text("".join(h + line for h in ("h1", "h2", "h3")))
    (workdir / "new.ini").write_text("".join(h + line for h in ("h2", "h3", "h4")))
    (workdir / "hosts.ini").unlink(missing_ok=True)
    (workdir / "hosts.ini").symlink_to("old.ini")
    (workdir / "play.yml").write_text(REFRESH_PLAY)


def test_a_host_refresh_inventory_drops_leaves_the_play(ansible, ansible_python):
    """After ``meta: refresh_inventory`` a play host the new inventory lacks
    runs nothing more (the always's run_once task ran on it: linear runs it
    on h2, the first host left), a host only the new inventory has joins no
    play under way, and an add_host host stays (the next play has it)."""
    write_refresh_project(ansible.workdir, ansible_python)
    linear = ansible.run("play.yml", "hosts.ini", "linear")
    write_refresh_project(ansible.workdir, ansible_python)
    batch = ansible.run("play.yml", "hosts.ini", "mitogen_batch")
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert "changed: [h2 -> localhost]" in linear.stdout, linear.stdout
    assert_same_output(linear, batch)


def test_a_gather_facts_task_for_a_network_os_runs_its_facts_module(ansible, ansible_python):
    """``gather_facts`` with ``ansible_network_os`` set (a task var here): the
    ``smart`` fact module is that OS's ``<os>_facts`` (the gathering_facts
    target's test_module_defaults.yml, ``--tags networking``); the batch ran
    ``setup``."""
    ansible.write("library/ios_facts.py", """
        #!/usr/bin/python
        from ansible.module_utils.basic import AnsibleModule
        m = AnsibleModule(argument_spec={"gather_subset": {"default": "!config"}})
        m.exit_json(ansible_facts={"gather_subset": m.params["gather_subset"]})
    """)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - gather_facts:
              vars:
                ansible_network_os: ios
            - debug:
                msg: "{{ ansible_facts.gather_subset }} {{ ansible_facts.distribution | default('no setup') }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "!config no setup"' in batch.stdout, batch.stdout


def test_a_reserved_loop_variable_of_an_include_is_warned_about_where_it_was_written(
        ansible, ansible_python):
    """``include_role`` looped with ``loop_control: {loop_var: name}``: 2.21
    warns "Found variable using reserved name 'name'." naming where
    ``loop_var`` was written (include_import's test_loop_var_bleed.yaml); the
    batch's warning said ``Origin: <unknown>``."""
    ansible.write("roles/shown/tasks/main.yml", "- debug: msg={{ name }}\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - include_role:
                name: shown
              loop:
                - from_the_loop
              loop_control:
                loop_var: name
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert "Found variable using reserved name 'name'" in linear.stderr
    assert_same_output(linear, batch)


def test_vault_values_stay_vault_encrypted_on_the_runner(ansible, ansible_python):
    """A ``!vault`` value (a play variable, a set_fact argument, a template of
    one variable) is ``vault_encrypted`` on the runner as under linear, also in
    a later play's batch, while a text made from it is not; ``vaulted_file``
    reads the controller's file (the test_core target). The runner lacked the
    test: the controller answered it with the decrypted text (false)."""
    ansible.write("vault-password.txt", "vaultpw\n")
    ansible.write("files/plain.txt", "not a vault\n")
    ansible.write("files/vaulted.txt", VAULTED["hello vault"] + "\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            play_secret: %s
          tasks:
            - set_fact:
                vaulted_value: %s
                templated_value: "{{ play_secret }}"
            - assert:
                that:
                  - vaulted_value is vault_encrypted
                  - templated_value is vault_encrypted
                  - play_secret is vault_encrypted
                  - inventory_hostname is not vault_encrypted
                  - (play_secret ~ '') is not vault_encrypted
                  - (play_secret | upper) is not vault_encrypted
                  - "'files/plain.txt' is not vaulted_file"
                  - "'files/vaulted.txt' is vaulted_file"
        - hosts: web
          gather_facts: false
          tasks:
            - assert:
                that:
                  - vaulted_value is vault_encrypted
                  - templated_value is vault_encrypted
                  - vaulted_value == 'hello vault'
    """ % (vaulted("hello vault", 14), vaulted("hello vault", 18)))
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory),
                                 args=["--vault-password-file", "vault-password.txt"])
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "ok=3" in batch.stdout and "failed=0" in batch.stdout, batch.stdout
    assert batch.steps and not batch.through_ansible, batch.log


def test_fact_gathering_runs_with_the_plays_environment(ansible, ansible_python, tmp_path):
    """The implicit ``Gathering Facts`` inherits the play's ``environment``:
    ``ansible_env`` shows it, under mitogen_batch and ioc-run as under linear."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: true
          environment:
            lola: ido
          tasks:
            - debug:
                var: ansible_facts.env.lola
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"ansible_facts.env.lola": "ido"' in batch.stdout
    assert '"ansible_facts.env.lola": "ido"' in ioc_run_output(ansible, inventory)


def test_a_role_that_already_ran_is_not_run_again_by_a_dependency(ansible, ansible_python):
    """A role listed in the play and as a dependency of two other roles runs
    once (linear skips the tasks of a role that ran, unless it allows
    duplicates); one that allows duplicates runs each time."""
    ansible.write("roles/common/tasks/main.yml", "- debug: msg=common\n")
    ansible.write("roles/again/tasks/main.yml", "- debug: msg=again\n")
    ansible.write("roles/again/meta/main.yml", "allow_duplicates: true\n")
    for name in ("web", "db"):
        ansible.write("roles/%s/meta/main.yml" % name,
                      "dependencies:\n  - name: common\n  - name: again\n")
        ansible.write("roles/%s/tasks/main.yml" % name, "- debug: msg=%s\n" % name)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          roles:
            - common
            - web
            - db
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert batch.stdout.count('"msg": "common"') == 1
    assert batch.stdout.count('"msg": "again"') == 2


def test_a_role_is_deduplicated_per_host_once_it_completed(ansible, ansible_python):
    """Linear skips, per host, the tasks of a role that completed for it: a
    task of it ran (not skipped, not unreachable) and the host got to its
    end. A role skipped the first time (``when``) runs later; one a dependency
    of ``import_role`` and ``include_role`` names after it ran does not; a
    run_once failure completes it for the host that ran it only, so the next
    occurrence runs once on the other host (the ``roles`` target's
    role_complete.yml and no_dupes.yml)."""
    ansible.write("roles/a/tasks/main.yml", "- debug: msg=A\n")
    for name in ("b", "c"):
        ansible.write("roles/%s/meta/main.yml" % name, "dependencies:\n  - name: a\n")
        ansible.write("roles/%s/tasks/main.yml" % name, "- debug: msg=%s\n" % name.upper())
    ansible.write("roles/set_var/tasks/main.yml", "- set_fact:\n    role_set_var: true\n")
    ansible.write("roles/set_once/tasks/main.yml", "- set_fact:\n    once_set: true\n")
    ansible.write("roles/once/tasks/main.yml", """
        - debug:
            msg: "once {{ once_set is defined }}"
          failed_when: once_set is undefined
          run_once: true
    """)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          roles:
            - role: a
              when: role_set_var is defined
            - role: set_var
            - role: a
              when: role_set_var is defined
            - role: a
              when: role_set_var is defined
        - hosts: web
          gather_facts: false
          roles:
            - a
            - b
          tasks:
            - import_role:
                name: c
            - include_role:
                name: c
        - hosts: web
          gather_facts: false
          ignore_errors: true
          roles:
            - once
            - set_once
            - once
            - once
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1", "h2")))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert batch.stdout.count('"msg": "A"') == 4  # h1 and h2, once in each of two plays
    # (include_role's c is not the play's cached c: Role.__eq__ differs, it runs)
    assert batch.stdout.count('"msg": "C"') == 4
    # h1 failed it (ignored): completed there; h2 runs the next one, nobody the third
    assert batch.stdout.count('"msg": "once False"') == 1, batch.stdout
    assert batch.stdout.count('"msg": "once True"') == 1, batch.stdout
    assert 'ok: [h2] => {\n    "msg": "once True"' in batch.stdout
    assert batch.steps, batch.log


def test_a_role_an_ignored_unreachable_host_did_not_complete_runs_again_there(
        ansible, ansible_python):
    """A role whose only task was unreachable (ignore_unreachable) did not
    complete for that host: its next occurrence runs there, and only there
    (the ``roles`` target's role_complete.yml --tags unreachable)."""
    ansible.write("roles/probe/tasks/main.yml", "- ping:\n    data: reachable\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          ignore_unreachable: true
          roles:
            - probe
            - probe
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",))
                              + "fake ansible_host=fake.invalid ansible_connection=ssh\n")
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert batch.stdout.count("UNREACHABLE!") == 2
    assert batch.stdout.count("ok: [h1]") == 1
    assert "ignored=2" in batch.stdout


def test_a_group_made_by_group_by_brings_its_group_vars_to_the_next_task(ansible, ansible_python):
    """group_by puts the host in a new group (with a parent group): the next
    task sees both groups' group_vars beside the playbook, as under linear;
    ioc-run too (the planner cuts the batch after group_by for it)."""
    ansible.write("group_vars/made_child.yml", "from_child: 4\n")
    ansible.write("group_vars/made_parent.yml", "from_parent: 3\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - group_by:
                key: made_child
                parents: made_parent
            - debug:
                msg: "{{ from_child | default('none') }} {{ from_parent | default('none') }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "4 3"' in batch.stdout
    assert '"msg": "4 3"' in ioc_run_output(ansible, inventory)


def ioc_run_output(ansible, inventory) -> str:
    """``ioc-run`` on the same play.yml and inventory: its stdout and stderr."""
    ours = subprocess.run([sys.executable, "-m", "ioc", "-i", str(inventory), "play.yml"],
                          cwd=str(ansible.workdir), capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    return ours.stdout + ours.stderr


def test_a_module_default_that_cannot_be_templated_names_where_it_was_written(
        ansible, ansible_python):
    """A module default whose template fails (an undefined variable): the
    error's chain ends with where the default's value was written under
    ``module_defaults``, as linear's (the module_defaults target); so does a
    task's own argument's, a whole one and one inside a mapping (2.19's
    chain words the first as one error)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - name: untemplatable default
              module_defaults:
                ansible.builtin.ping:
                  data: '{{ busted_invalid_var }}'
              ansible.builtin.ping:
              ignore_errors: true
            - name: untemplatable argument
              ansible.builtin.ping:
                data: '{{ busted_invalid_var }}'
              ignore_errors: true
            - name: untemplatable value in an argument
              ansible.builtin.debug:
                msg:
                  a: '{{ busted_invalid_var }}'
              ignore_errors: true
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    shown = batch.stdout + batch.stderr
    assert "play.yml:7:17" in shown  # the default's value
    assert "play.yml:12:15" in shown and "play.yml:17:14" in shown  # the arguments' values
    assert batch.steps, batch.log


def test_module_defaults_are_merged_natively_as_ansible_merges_them(ansible, ansible_python):
    """module_defaults (play, block, task; a builtin action group; setup's for the
    implicit gathering) reach the task's arguments natively, as Ansible merges them."""
    out = ansible.workdir / "out"
    out.mkdir()
    ansible.write("play.yml", """
        - hosts: web
          module_defaults:
            setup: {gather_subset: ['!all']}
            file: {mode: '0600'}
            group/testgroup: {data: grouped}
          tasks:
            - file: {path: "%(out)s/{{ inventory_hostname }}-a", state: touch}
            - block:
                - file: {path: "%(out)s/{{ inventory_hostname }}-b", state: touch}
                - ping:
                    data: own
                  register: own
              module_defaults:
                file: {mode: "{{ '0640' }}"}
            - ping:
              register: grouped
            - debug: msg="{{ ansible_facts.keys() | length }} {{ own.ping }} {{ grouped.ping }}"
    """ % {"out": out})
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear = ansible.run("play.yml", str(inventory), "linear")
    modes = sorted((p.name, oct(p.stat().st_mode & 0o777)) for p in out.iterdir())
    for path in out.iterdir():
        path.unlink()
    batch = ansible.run("play.yml", str(inventory), "mitogen_batch")
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert modes == sorted((p.name, oct(p.stat().st_mode & 0o777)) for p in out.iterdir()) == [
        ("h1-a", "0o600"), ("h1-b", "0o640")]
    assert "own grouped" in batch.stdout
    assert batch.steps and not batch.through_ansible, batch.log


def test_the_play_port_keyword_reaches_the_native_connection(ansible, ansible_python, sshd):
    """``port:`` is the port of a host without ``ansible_port`` (which wins), as
    Ansible's ssh connection resolves its ``port`` option."""
    ansible.write("play.yml", """
        - hosts: h1
          port: %d
          gather_facts: false
          tasks:
            - command: echo one
        - hosts: h2
          port: 1
          gather_facts: false
          tasks:
            - command: echo two
    """ % sshd.port)
    text = sshd.inventory_ini(["h1", "h2"], group="web", python=ansible_python)
    text = text.replace("h1 ansible_host=%s ansible_port=%d" % (sshd.host, sshd.port),
                        "h1 ansible_host=%s" % sshd.host)
    assert "ansible_port" not in text.splitlines()[1]
    inventory = ansible.write("hosts.ini", text)
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert len(batch.steps) == 2 and not batch.through_ansible, batch.log


def test_a_tasks_own_connection_variables_get_ansibles_own_connection(ansible, ansible_python,
                                                                      sshd):
    """A task (or its block) that sets ``ansible_port``, ``ansible_user``... in its
    vars connects as those say, as under linear: its host's runner was made
    with the host's settings, so the task keeps Ansible's own connection
    (``-vv`` says why) and reaches, here, a closed port: UNREACHABLE."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - command: echo runner
            - block:
                - command: echo elsewhere
                  vars:
                    ansible_python_interpreter: "{{ ansible_playbook_python }}"
              vars:
                ansible_port: 1
            - debug:
                msg: "{{ ansible_play_hosts }}"
    """)
    inventory = ansible.write("hosts.ini", sshd.inventory_ini(["h1", "h2"], group="web",
                                                              python=ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 4, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "UNREACHABLE" in batch.stdout and "port 1: Connection refused" in batch.stdout
    assert "ansible_play_hosts" not in batch.stdout  # (no host is left to run it)
    told = ansible.run("play.yml", str(inventory), "mitogen_batch", args=["-vv"])
    assert "command on h1 connects with Ansible's own connection (the task's vars " \
        "set ansible_port)" in told.stdout, told.stdout


def test_a_lookup_that_fails_for_a_loop_is_worded_as_templating_words_it(ansible,
                                                                         ansible_python):
    """A failing lookup is "The lookup plugin 'dict' failed: <its error>"; a
    with_<lookup> loop's failure is raised from ``invoke_lookup()`` (no origin)
    and a ``loop``'s from the loop as written, neither as "Task failed";
    only an undefined variable waits for ``when`` (the false one fails anyway)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - debug:
                msg: "{{ item }}"
              with_dict: "{{ [1, 2] }}"
              ignore_errors: true
            - debug:
                msg: "{{ item }}"
              with_sequence: count=x
              ignore_errors: true
            - debug:
                msg: "{{ item }}"
              loop: "{{ query('dict', 1) }}"
              ignore_errors: true
            - debug:
                msg: "{{ item }}"
              with_dict: "{{ [3] }}"
              when: false
              ignore_errors: true
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    out = batch.stdout + batch.stderr
    assert "[ERROR]: The lookup plugin 'dict' failed: the 'dict' lookup plugin expects a " \
        "dictionary, got '1'" in out
    assert "invoke_lookup()" in out
    assert "Config 'count' for 'sequence' lookup plugin from 'Direct' has an invalid " \
        "value" in out
    assert "got '3'" in out
    assert "ignored=4" in batch.stdout
    assert batch.steps, batch.log


def test_a_variable_named_like_a_lookup_function_hides_it(ansible, ansible_python):
    """lookup/query/q are Jinja globals to Ansible: a play var or a registered
    result of that name is what a template reads (the planner ships it, the
    runner finds it before the function), while calling lookup() still works."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            lookup: looked
          tasks:
            - command: echo {{ inventory_hostname }}
              register: q
            - debug:
                var: q.stdout
            - debug:
                msg: "{{ lookup }} {{ q.rc }} {{ query('items', [1, 2]) | length }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "looked 0 2"' in batch.stdout
    ours = ioc_run_output(ansible, inventory)
    assert '"q.stdout": "h2"' in ours and '"msg": "looked 0 2"' in ours, ours


def test_debug_var_replaces_undefined_values_and_warns_where_each_template_is(ansible,
                                                                             ansible_python):
    """debug's ``var`` that meets undefined values (its own expression's, or a
    variable's whose template is undefined) prints each as ``<< error N - ... >>``
    and warns "Encountered N template error(s)." once per template, with where
    that template was written (the argument, a task var, a play var's nested
    value); the registered result keeps the text and the warnings. A ``var``
    whose value is ``omit`` prints ``<<Omit>>`` and warns it could not be
    omitted."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            nested: {ok: 1, bad: '{{ nope1 }}'}
            two: '{{ nope1 }} {{ nope2 }}'
          tasks:
            - debug: var=not_defined
            - debug:
                var: nested
            - debug:
                var: two
            - debug:
                var: undefined_template
              vars:
                undefined_template: '{{ not_defined }}'
              register: shown
            - debug:
                var: shown
            - debug:
                var: undefined_template | default('fine')
              vars:
                undefined_template: '{{ not_defined }}'
            - debug:
                var: indirect_omit
              vars:
                indirect_omit: '{{ omit }}'
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "[WARNING]: Encountered 2 template errors.\nerror 1 - 'nope1' is undefined\n" \
        "error 2 - 'nope2' is undefined\nOrigin: %s/play.yml:5:10" % ansible.workdir \
        in batch.stdout + batch.stderr
    assert '"undefined_template": "<< error 1 - \'not_defined\' is undefined >>"' in batch.stdout
    assert '"undefined_template | default(\'fine\')": "fine"' in batch.stdout
    assert '"indirect_omit": "<<Omit>>"' in batch.stdout
    assert "[WARNING]: The result of the `var` expression could not be omitted" in batch.stderr
    assert batch.steps, batch.log


def test_debug_var_in_a_loop_warns_of_undefined_values_once_where_written(ansible,
                                                                         ansible_python):
    """roles target (``vars_scope.yml``): debug's ``var`` meeting an undefined
    value in a loop warns "Encountered 1 template error." with where the
    expression was written, once per message: the loop's result gathers its
    items' warnings, and they are the same warnings (mitogen_batch showed them
    again after the items, without the origin). ``var={{ item }}`` over a
    variable of ``vars_files``: where the item was written (Ansible's templated
    ``var`` is the item, with its origin; mitogen_batch named the argument)."""
    ansible.write("names.yml", "names:\n  - missing_two\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars_files: [names.yml]
          tasks:
            - debug:
                var: missing_one
              loop: [1, 2]
            - debug: var={{ item }}
              loop: '{{ names }}'
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    out = batch.stdout + batch.stderr
    assert out.count("[WARNING]: Encountered 1 template error.") == 2, out  # (one per task)
    assert "error 1 - 'missing_one' is undefined\nOrigin: %s/play.yml:6:14" % ansible.workdir \
        in out, out
    assert "error 1 - 'missing_two' is undefined\nOrigin: %s/names.yml:2:5" % ansible.workdir \
        in out, out
    assert batch.steps, batch.log


def test_a_templated_ignore_errors_that_is_no_boolean_fails_the_task_before_it_runs(
        ansible, ansible_python):
    """``ignore_errors: "{{ ... }}"`` giving no boolean fails the task before its
    action runs ("Error processing keyword 'ignore_errors': The value 5 could
    not be converted to 'bool'."), chained to where the keyword and the value
    were written; 2.21 ignores nothing then (the rescue runs), 2.19's
    strategy reads the written template as true (ignored). A task its
    ``when`` skips is not validated."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            should_ignore_errors: 5
          tasks:
            - block:
                - command: "true"
                  ignore_errors: "{{ should_ignore_errors }}"
              rescue:
                - debug:
                    msg: rescued
            - command: "true"
              ignore_errors: "{{ 2 + 3 }}"
              when: false
            - command: "true"
              ignore_errors: "{{ maybe }}"
              vars:
                maybe: perhaps
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert_same_output(linear, batch)
    out = batch.stdout + batch.stderr
    assert "[ERROR]: Task failed: Error processing keyword 'ignore_errors': The value 5 could " \
        "not be converted to 'bool'." in out
    assert "The value 'perhaps' could not be converted to 'bool'.\nOrigin: %s/play.yml:18:16" \
        % ansible.workdir in out
    assert batch.steps, batch.log


def test_a_condition_written_as_a_template_records_ansibles_deprecation(ansible, ansible_python):
    """A condition that is one template (``when``/``changed_when``/``failed_when``,
    assert's ``that``, the conditions a ``that`` template names, per loop item)
    records "Conditionals should not be surrounded by templating delimiters
    ..." in the task's result: registered as its ``deprecations`` and shown
    with where the condition was written, as 2.19+'s ``evaluate_conditional``;
    a skipped task's ``false_condition`` is the value the template gave."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - assert:
                that: '{{ true }}'
              register: res
            - assert:
                that:
                  - res.deprecations | map(attribute="msg") | select('contains', 'should not be surrounded by templating delimiters') | length == 1
            - assert:
                that: '{{ that_list }}'
              vars:
                that_list:
                  - '{{ 1 == 1 }}'
              register: listed
            - command: "true"
              changed_when: '{{ false }}'
              failed_when: "{{ 1 == 2 }}"
              register: conditions
            - debug:
                msg: skipped
              when: '{{ false }}'
              register: skipped
            - debug:
                msg: "{{ item }}"
              loop: [1, 2]
              when: "{{ item == 1 }}"
              register: looped
            - debug:
                msg: "{{ [listed, conditions, skipped, looped] | map(attribute='deprecations') | map('length') }} {{ skipped.false_condition }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    # (linear's "Deprecation warnings can be disabled" comes before its first
    # deprecation; mitogen_batch's own deprecation drew it at the start)
    assert batch.without_ansible_warnings(batch.stderr) == \
        linear.without_ansible_warnings(linear.stderr)
    assert batch.without_ansible_warnings() == linear.stdout
    assert batch.rc == linear.rc
    assert '"msg": "[1, 2, 1, 2] False"' in batch.stdout
    assert "[DEPRECATION WARNING]: Conditionals should not be surrounded by templating " \
        "delimiters such as {{ }} or {% %}. This feature will be removed from ansible-core " \
        "version 2.23.\nOrigin: " + str(ansible.workdir) + "/play.yml:14:13" in batch.stderr
    assert batch.steps, batch.log


def test_a_results_warnings_come_after_what_was_printed_before_it_and_cacheable_no_is_false(
        ansible, ansible_python):
    """With stdout and stderr on one pipe (``2>&1``, as ansible-test runs a
    target), a result's warning (stderr) comes after the task's banner
    (stdout, block buffered), as linear's worker forks flush both streams; and
    ``set_fact``'s ``cacheable=no`` does not make its facts host facts (the
    next play's ``ansible_facts`` lacks it, as set_fact_cached_2.yml checks).
    A loop's failure is ignored when ``ignore_errors: "{{ item }}"`` held for
    any item (2.21; 2.19 ignores nothing, the host fails); raw's failure is
    "Action failed" (test_looped_errors.yml)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - set_fact: "cacheable=no fact_not_cached='this_should_not_be_cached!'"
            - set_fact:
                fact_cached: cached
                cacheable: "yes"
            - debug:
                var: not_defined_here
        - hosts: web
          gather_facts: false
          tasks:
            - debug:
                var: ansible_facts.fact_not_cached
            - debug:
                var: ansible_facts.fact_cached
            - raw: exit 1
              ignore_errors: "{{ item }}"
              loop: [true, false]
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear = ansible.run("play.yml", str(inventory), "linear", merged=True)
    batch = ansible.run("play.yml", str(inventory), "mitogen_batch", merged=True)
    assert batch.without_ansible_warnings() == linear.without_ansible_warnings(), (
        "--- linear:\n%s\n--- mitogen_batch:\n%s" % (linear.stdout, batch.stdout))
    assert batch.rc == linear.rc
    assert "TASK [debug] ****" in batch.stdout.split("[WARNING]: Encountered 1 template error.")[0]
    assert "object of type 'dict' has no attribute 'fact_not_cached'" in batch.stdout
    assert '"ansible_facts.fact_cached": "cached"' in batch.stdout
    assert "[ERROR]: Task failed: Action failed: non-zero return code" in batch.stdout
    assert batch.steps, batch.log


def test_a_filter_plugin_that_fails_to_load_fails_only_the_task_using_it(ansible, ansible_python):
    """A filter plugin whose own code raises when Ansible loads it (ansible-core's
    templating target): linear fails the task that uses it; mitogen_batch
    stopped the whole run with "Unexpected Exception" while planning."""
    ansible.write("filter_plugins/broken_filter.py", """
        class Broken:
            @property
            def accept_args_markers(self):
                raise Exception('boom')


        class FilterModule:
            def filters(self):
                return {'broken': Broken()}
    """)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - raw: echo {{ '' | broken }}
              ignore_errors: true
              register: error
            - assert:
                that: error is failed
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == batch.rc == 0, batch.stdout + batch.stderr
    assert "Unexpected Exception" not in batch.stdout + batch.stderr
    recap = lambda out: out[out.index("PLAY RECAP"):]  # noqa: E731
    assert recap(batch.stdout) == recap(linear.stdout)
    assert "ignored=1" in recap(batch.stdout)


def test_a_template_sees_ansible_managed_as_the_template_action_makes_it(ansible,
                                                                        ansible_python):
    """``ansible_managed`` (template target, ``ansible_managed.yml``): ansible.cfg's
    setting with ``{file}``/``{uid}``/``{host}`` as the template's path, owner and
    the controller's name, strftime of the file's mtime (not of a ``%n`` in its
    name) and ``{{{{ }}}}`` an expression; a task's own ``ansible_managed``
    variable is not replaced (it may read ``template_path``)."""
    # (deprecation_warnings: the setting is deprecated; mitogen_batch draws its own first)
    ansible.config.write_text("[defaults]\ndeprecation_warnings = False\n"
                              "ansible_managed = by {uid} on {host}: {file} "
                              "%Y ({{{{ 'x' ~ 'y' }}}})\n")
    source = ansible.write("templates/am%n.j2", "{{ ansible_managed }}\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:  # (each run writes its own files: both report them changed)
            - template:
                src: am%n.j2
                dest: "{{ playbook_dir }}/{{ lookup('env', 'ANSIBLE_STRATEGY') }}-configured"
              register: configured
            - template:
                src: am%n.j2
                dest: "{{ playbook_dir }}/{{ lookup('env', 'ANSIBLE_STRATEGY') }}-overridden"
              register: overridden
              vars:
                ansible_managed: "{{ 'over' ~ 'ridden' }} {{ template_path }}"
            - debug:
                msg: "{{ lookup('file', configured.dest) }}|{{ lookup('file', overridden.dest) }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    st = os.stat(source)
    expected = "by %s on %s: am%%n.j2 %s (xy)|overridden am%%n.j2" % (
        pwd.getpwuid(st.st_uid).pw_name, os.uname()[1],
        time.strftime("%Y", time.localtime(st.st_mtime)))
    assert '"msg": "%s"' % expected in batch.stdout, batch.stdout
    assert batch.steps and not batch.through_ansible, batch.log


def test_a_lookup_reads_a_controller_file_an_earlier_task_of_the_batch_wrote(ansible,
                                                                           ansible_python):
    """template target ("a template with no content renders as an empty string"):
    ``lookup('file')`` of what a template on a local host wrote just before, in
    the same batch; Ansible runs the lookup when its task runs. A file that is
    never written is still missing then (``errors='ignore'``: None)."""
    ansible.write("templates/t.j2", "rendered for {{ inventory_hostname }}\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            out: "{{ playbook_dir }}/{{ lookup('env', 'ANSIBLE_STRATEGY') }}"
          tasks:
            - file:
                path: "{{ out }}"
                state: directory
            - template:
                src: t.j2
                dest: "{{ out }}/{{ inventory_hostname }}.txt"
            - debug:
                msg: "{{ lookup('file', out ~ '/' ~ inventory_hostname ~ '.txt') }}"
            - debug:
                msg: "never: {{ lookup('file', playbook_dir ~ '/never.txt', errors='ignore') is none }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1", "h2")))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert batch.stdout.count('"msg": "rendered for h1"') == 1, batch.stdout
    assert batch.stdout.count('"msg": "never: True"') == 2, batch.stdout
    assert batch.steps and not batch.through_ansible, batch.log


def test_a_play_that_runs_with_linear_shows_its_errors_as_linear_does(ansible, ansible_python):
    """A play ioc cannot plan runs with the linear strategy, outside the handling
    of the reason: its errors' chains are linear's (one "Syntax error in
    template: <why>" part, a cause with its parent's origin collapsed), not
    chained to the reason ioc gave up (templating target, undecryptable vault)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - debug:
                msg: "{{ syntax_error }}"
              vars:
                syntax_error: "{{ #'"
              ignore_errors: true
            - debug:
                msg: "{{ undecryptable | to_json }}"
              vars:
                undecryptable: !vault |
                  $ANSIBLE_VAULT;1.1;AES256
                  63326561376261613563313535363635306336343061343735343931396538666263326333316135
                  3364323839336665663238376238336661636630316635360a613537653337363035373261623038
                  30633437653432623936376239376466316434393134393632313163633965353530376361626564
                  3262633163333464330a393161353063326562626665333138373839633165376639343166333561
                  3663
              ignore_errors: true
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    shown = batch.stdout + batch.stderr
    assert "\nSyntax error in template: unexpected char '#' at 3\n" in shown, shown
    assert "\nAttempt to use undecryptable variable: Attempting to decrypt but no vault " \
           "secrets found.\n" in shown, shown


def test_an_action_plugin_beside_the_playbook_overrides_a_native_action(ansible,
                                                                         ansible_python):
    """``action_plugins/debug.py`` beside the playbook is what Ansible runs for
    ``debug`` and ``ansible.legacy.debug`` (defaults given for
    ``ansible.builtin.debug`` do not reach it); ``ansible.builtin.debug`` stays
    Ansible's own, run natively."""
    plugin = (ROOT / "tests" / "targets" / "repro" / "legacy_action_override" / "action_plugins"
              / "debug.py")
    ansible.write("action_plugins/debug.py", plugin.read_text())
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - ansible.legacy.debug:
              module_defaults:
                ansible.builtin.debug:
                  msg: builtin default
            - debug:
            - ansible.builtin.debug:
              module_defaults:
                debug:
                  msg: legacy default
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory), args=["-v"])
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert batch.stdout.count('"msg": "Hello overridden world!"') == 2, batch.stdout
    assert '"msg": "legacy default"' in batch.stdout
    assert "builtin default" not in batch.stdout
    assert "not Ansible's own" in batch.log


def test_a_script_named_through_a_variable_that_calls_a_lookup_is_shipped(ansible,
                                                                          ansible_python):
    """The script's arguments read a group_vars variable that calls
    ``lookup('env', ...)`` (the task's own text has no lookup): the controller
    answers that lookup before the batch, names the script and ships it,
    throttled or not, where it failed "Could not find or access
    'hello_script.py' on the Ansible Controller."."""
    script = ROOT / "tests" / "targets" / "repro" / "script_src_from_lookup_var" / "hello_script.py"
    ansible.write("hello_script.py", script.read_text())
    ansible.write("group_vars/web.yml", """
        word: "{{ lookup('env', 'IOC_TEST_WORD') }}"
    """)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - script: "hello_script.py {{ word }}-{{ inventory_hostname }}"
              register: out
            - block:
                - script: "hello_script.py {{ word }}-throttled"
                  register: throttled
              throttle: 1
            - debug:
                msg: "{{ out.stdout_lines + throttled.stdout_lines }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1", "h2")))
    linear, batch = ansible.both("play.yml", str(inventory), env={"IOC_TEST_WORD": "looked-up"})
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"hello from looked-up-h2",' in batch.stdout
    assert batch.stdout.count('"hello from looked-up-throttled"') == 2, batch.stdout
    assert "Could not find" not in batch.stdout


def test_an_async_job_its_polls_did_not_see_end_fails_as_the_task_executor_words_it(
        ansible, ansible_python):
    """A job still running at its one poll (6 s; async_wrapper kills it at 10 s):
    linear sends ``async_poll``, then ``async_failed`` with TaskExecutor's own
    failure. 2.21: "async task produced unparsable results" (it asks a new
    result's ``ansible_parsed``), no ``[ERROR]``, ``async_result`` the poll's
    exported result (``changed``, ``failed``, ``warnings``, ``deprecations``);
    2.19: "did not complete within the requested time - 6s", an "Action
    failed" error. Job ids are random: compared as ``<jid>``."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - name: over the limit
              command: sleep 20
              async: 6
              poll: 6
              ignore_errors: true
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    for run in (linear, batch):
        run.stdout = re.sub(r"\bj[0-9]+\.[0-9]+\b", "<jid>", run.stdout)
    assert_same_output(linear, batch)
    assert "ASYNC POLL on h1: jid=<jid> started=True finished=False\n" \
        "ASYNC FAILED on h1: jid=<jid>\n" in batch.stdout
    if ansible_python == find_ansible_python(ANSIBLE_CORE):  # 2.21
        assert '"msg": "async task produced unparsable results"' in batch.stdout
        assert '"deprecations": [], "failed": false,' in batch.stdout
        assert "[ERROR]" not in batch.stdout + batch.stderr
    else:
        assert "[ERROR]: Task failed: Action failed: async task did not complete within " \
            "the requested time - 6s" in batch.stdout + batch.stderr
    assert batch.steps, batch.log


def test_a_local_hosts_modules_see_ansible_playbooks_environment(ansible, ansible_python):
    """A local connection's modules run in ansible-playbook's environment
    (``ansible_env``, ``command: env``). The dispatcher had ioc's directory put
    first on ``PYTHONPATH`` for its own imports, and its runner's modules
    inherited it ("<ioc>:<ioc>" here; a ``PYTHONPATH`` where the user had none).
    found by: replace (junit's report of the gathered facts one line longer)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: true
          tasks:
            - debug:
                msg: "gathered {{ ansible_facts.env.PYTHONPATH }}"
            - command: printenv PYTHONPATH
              register: printed
            - debug:
                msg: "printed {{ printed.stdout }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    expected = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    assert '"msg": "gathered %s"' % expected in batch.stdout
    assert '"msg": "printed %s"' % expected in batch.stdout
    assert batch.steps, batch.log


def test_copy_and_template_report_the_file_ansibles_action_uploaded_as_src(ansible,
                                                                             ansible_python):
    """A copy of ``content`` and a template that change their file report, as
    Ansible's copy module does, the file the action uploaded for it as ``src``
    (``~/.ansible/tmp/ansible-tmp-<time>-<pid>-<random>/.source<dest's
    suffix>``, gone when the task ends); an unchanged copy (the file module)
    has none. Compared at -v with the temporary directory's name as
    ``ansible-tmp-<rand>``.
    found by: callback_default (runme.sh's diff of ``src: .../.source.txt``)."""
    ansible.write("t.cfg.j2", "name = {{ inventory_hostname }}\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - copy:
                content: foo
                dest: "{{ playbook_dir }}/out/test_diff.txt"
              register: by_content
            - copy:
                content: foo
                dest: "{{ playbook_dir }}/out/test_diff.txt"
            - template:
                src: t.cfg.j2
                dest: "{{ playbook_dir }}/out/t.cfg"
              register: templated
            - debug:
                msg: "{{ [by_content.src, templated.src] | map('basename') | list }}
                      {{ [by_content.src, templated.src] | select('exists') | list }}"
    """)
    (ansible.workdir / "out").mkdir()
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear = ansible.run("play.yml", str(inventory), "linear", args=["-v"])
    for path in (ansible.workdir / "out").iterdir():
        path.unlink()
    batch = ansible.run("play.yml", str(inventory), "mitogen_batch", args=["-v"])
    assert linear.rc == 0, linear.stdout + linear.stderr
    for run in (linear, batch):
        run.stdout = re.sub(r"ansible-tmp-[0-9.]+-[0-9]+-[0-9]+", "ansible-tmp-<rand>",
                            run.stdout)
    assert_same_output(linear, batch)
    home = os.path.expanduser("~")
    assert '"src": "%s/.ansible/tmp/ansible-tmp-<rand>/.source.txt"' % home in batch.stdout
    # (each was there while its module ran, and is gone)
    assert '"msg": "[\'.source.txt\', \'.source.cfg\'] []"' in batch.stdout, batch.stdout
    assert batch.steps, batch.log


def test_vars_reads_each_variable_as_its_layer_has_it(ansible, ansible_python):
    """``vars`` (deprecated by 2.21, whose warning the default config shows) and
    ``hostvars[host]`` template a play variable's text, never a command's
    registered output: ``vars.p`` of ``p: "{{ 2 + 2 }}"`` is 4 (it was the
    text as written under 2.21's deprecated ``vars``), ``vars.out.stdout`` of
    an output holding ``{{ 1 + 1 }}`` stays that text (it was 2 through
    ``hostvars``, and through ``vars`` without the deprecation)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            p: "{{ 2 + 2 }}"
          tasks:
            - command: echo '{{ "{{" }} 1 + 1 }}'
              register: out
              changed_when: false
            - debug:
                msg: "{{ vars.p }} {{ vars.out.stdout }} {{ hostvars[inventory_hostname].out.stdout }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    # (both show "Deprecation warnings can be disabled ...": the first deprecation's)
    assert batch.without_ansible_warnings(batch.stderr) == \
        linear.without_ansible_warnings(linear.stderr)
    assert batch.without_ansible_warnings() == linear.stdout
    assert batch.rc == linear.rc
    assert '"msg": "4 {{ 1 + 1 }} {{ 1 + 1 }}"' in batch.stdout


def test_trusted_text_crosses_tasks_that_run_through_ansible(ansible, ansible_python):
    """A registered include_vars result's text stays a trusted template through
    Ansible's variables (a task with a templated ``throttle`` runs through
    Ansible): Ansible renders it, and what such a task registers the runner
    renders after it; a command's output stays literal both ways."""
    ansible.write("vars/t.yml", """
        sum: "{{ 1 + 1 }}"
    """)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - include_vars:
                file: vars/t.yml
              register: loaded
            - command: echo '{{ "{{" }} 3 + 3 }}'
              register: out
              changed_when: false
            - name: through Ansible
              debug:
                msg: "{{ loaded.ansible_facts.sum }} {{ out.stdout }}"
              throttle: "{{ 1 }}"
            - name: through Ansible
              include_vars:
                file: vars/t.yml
              register: again
              throttle: "{{ 1 }}"
            - name: through Ansible
              command: echo '{{ "{{" }} 4 + 4 }}'
              register: out2
              changed_when: false
              throttle: "{{ 1 }}"
            - debug:
                msg: "{{ again.ansible_facts.sum }} {{ out2.stdout }} {{ loaded.ansible_facts.sum }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "2 {{ 3 + 3 }}"' in batch.stdout
    assert '"msg": "2 {{ 4 + 4 }} 2"' in batch.stdout
    assert batch.through_ansible, batch.log


def test_copy_and_template_results_have_ansibles_keys_and_upload_src(ansible, ansible_python):
    """template target (``'src' in template_result``): Ansible's copy action uploads
    a changed file to ``<remote_tmp>/ansible-tmp-…/.source<dest's suffix>`` and the
    copy module reports that upload as ``src`` (gone after the task); unchanged,
    check-mode and ``force: false`` results have their own keys (the last: the
    action's ``{changed, dest, src}``)."""
    ansible.write("templates/t.j2", "rendered for {{ inventory_hostname }}\n")
    ansible.write("files/f.txt", "a file\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            out: "{{ playbook_dir }}/{{ lookup('env', 'ANSIBLE_STRATEGY') }}"
          tasks:
            - file: {path: "{{ out }}", state: directory}
            - template: {src: t.j2, dest: "{{ out }}/t.txt"}
              register: changed
            - template: {src: t.j2, dest: "{{ out }}/t.txt"}
              register: same
            - template: {src: t.j2, dest: "{{ out }}/t.txt", force: false}
              register: kept
            - template: {src: t.j2, dest: "{{ out }}/checked.conf"}
              check_mode: true
              register: checked
            - copy: {src: f.txt, dest: "{{ out }}/f"}
              diff: true
              register: copied
            - copy: {src: f.txt, dest: "{{ out }}/f", force: false}
              register: copy_kept
            - debug:
                msg: "{{ item | dict2items | map(attribute='key') | reject('eq', 'invocation') | sort }}"
              loop: ["{{ changed }}", "{{ same }}", "{{ kept }}", "{{ checked }}", "{{ copied }}", "{{ copy_kept }}"]
              loop_control: {label: "{{ item.dest | default('-') | basename }}"}
            - debug:
                msg: "{{ [changed, copied] | map(attribute='src')
                         | map('regex_replace', 'ansible-tmp-[0-9.]+-[0-9]+-[0-9]+/', 'T/') }}
                      {{ changed.src is exists }} {{ copy_kept.src == playbook_dir ~ '/files/f.txt' }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    home = os.path.expanduser("~")
    assert ('"msg": "[\'%s/.ansible/tmp/T/.source.txt\', \'%s/.ansible/tmp/T/.source\']'
            ' False True"' % (home, home)) in batch.stdout, batch.stdout
    assert '"src",\n' in batch.stdout
    assert batch.steps and not batch.through_ansible, batch.log


def test_a_template_includes_imports_and_extends_templates_of_its_search_path(ansible,
                                                                            ansible_python):
    """template target (``import_with_context.j2``, ``for_loop.j2``...): ``{% import %}``,
    ``{% from %}``, ``{% include %}`` and ``{% extends %}`` find their templates as the
    template action's loader does (a role's ``templates/`` and the playbook's), also
    from an included one; a template's errors are the action's, about the file
    ("Syntax error in template" at its line, "Error rendering template" for a
    template found nowhere, with the search path)."""
    ansible.write("templates/qux", '{% set wibble = "WIBBLE " ~ greeting %}\n')
    ansible.write("templates/bar", "Goodbye {{ inventory_hostname }}\n")
    ansible.write("templates/main.j2", "{% import 'qux' as qux with context %}\n"
                  "{{ qux.wibble }}\n{% for x in [1, 2] %}{% include 'nested.j2' %}{% endfor %}\n")
    ansible.write("templates/nested.j2", "{% include 'bar' %} {{ x }}\n")
    ansible.write("templates/base.j2", "<{% block body %}base{% endblock %}>\n")
    ansible.write("roles/r/templates/child.j2", "{% extends 'base.j2' %}"
                  "{% block body %}{% include 'part.j2' %}{% endblock %}\n")
    ansible.write("roles/r/templates/part.j2", "role part")
    ansible.write("roles/r/tasks/main.yml", """
        - template: {src: child.j2, dest: "{{ out }}-child"}
    """)
    ansible.write("templates/missing.j2", "{% include 'nowhere.j2' %}\n")
    ansible.write("templates/syntax.j2", "line\n{% if %}\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            greeting: hi
            out: "{{ playbook_dir }}/{{ lookup('env', 'ANSIBLE_STRATEGY') }}"
          tasks:
            - template: {src: main.j2, dest: "{{ out }}-main"}
            - import_role: {name: r}
            - debug:
                msg: "{{ lookup('file', out ~ '-main') }}|{{ lookup('file', out ~ '-child') }}"
            - template: {src: "{{ item }}", dest: "{{ out }}-failed"}
              loop: [missing.j2, syntax.j2]
              ignore_errors: true
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "WIBBLE hi\\nGoodbye h1 1Goodbye h1 2|<role part>"' in batch.stdout, \
        batch.stdout
    assert "Syntax error in template: Expected an expression" in batch.stdout + batch.stderr
    assert "'nowhere.j2' not found in search paths: " in batch.stdout + batch.stderr
    assert batch.steps and not batch.through_ansible, batch.log


def test_a_lookup_in_a_template_the_template_file_imports_is_answered(ansible, ansible_python):
    """template target (``template_import_macro_globals.j2``): a macro of a
    template that the task's template file imports without context
    (``{% from 'm.j2' import foo %}``) calls ``lookup('lines', ...)`` and
    ``query('env', ...)``: answered for the host as Ansible's lookups are,
    which are globals of its environment (mitogen_batch failed the task:
    "lookup plugins run on the controller")."""
    ansible.write("templates/m.j2", "{% macro foo(bar) -%}\n"
                  "{{ bar }}={{ lookup('lines', 'echo lookedup_' ~ bar) }}"
                  " {{ query('env', 'IOC_FIDELITY_WORD') | first }}\n{%- endmacro %}\n")
    ansible.write("templates/main.j2", "{% from 'm.j2' import foo %}\n{{ foo('bar') }}\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            out: "{{ playbook_dir }}/{{ lookup('env', 'ANSIBLE_STRATEGY') }}"
          tasks:
            - template: {src: main.j2, dest: "{{ out }}-main"}
            - debug:
                msg: "{{ lookup('file', out ~ '-main') }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory),
                                 env={"IOC_FIDELITY_WORD": "said"})
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "bar=lookedup_bar said"' in batch.stdout, batch.stdout
    assert batch.steps and not batch.through_ansible, batch.log


def test_an_undefined_lookup_term_reaches_a_plugin_that_accepts_markers(ansible, ansible_python):
    """assert target (``lookup('yield_terms', '{{ bang }}', 42)[1] == 42``): the
    embedded template of an undefined variable in a lookup's term is an undefined
    value, not an error: a plugin that accepts markers (``accept_args_markers``)
    gets it as a term, one that does not is not called and the lookup's value is
    that undefined term; either fails only where the value is used (with the
    warning about the embedded template, shown also for a task that fails)."""
    ansible.write("lookup_plugins/yield_terms.py", """
        from ansible.plugins.lookup import LookupBase


        class LookupModule(LookupBase):
            accept_args_markers = True

            def run(self, terms, variables=None, **kwargs):
                return terms
    """)
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - assert:
                that: lookup('yield_terms', '{{ bang }}', 42)[1] == 42
            - assert:
                that: lookup('yield_terms', '{{ bang }}', 42)[0] == 42
              ignore_errors: true
            - assert:
                that: lookup('pipe', '{{ bang }}') == 'x'
              ignore_errors: true
            - debug:
                msg: "{{ query('yield_terms', '{{ bang }}', 42) | length }} {{ lookup('pipe', '{{ bang }}') is undefined }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "ok=4" in batch.stdout and "ignored=2" in batch.stdout, batch.stdout
    assert batch.steps and not batch.through_ansible, batch.log


def test_an_untrusted_condition_fails_its_task_as_linear_fails_it(ansible, ansible_python):
    """``when: !unsafe 1 == 0`` (and an ``!unsafe`` ``changed_when``) is text
    Ansible never evaluates: the task fails "A 'when' expression failed:
    Encountered untrusted template or expression." (the conditionals target's
    output_validation_tests.yml). mitogen_batch ran it as a trusted condition
    (the debug was skipped); such a task now runs through Ansible."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - name: untrusted when
              debug:
              when: !unsafe 1 == 0
              ignore_errors: true
              register: result
            - assert:
                that:
                  - result is failed
                  - result.msg is contains 'untrusted template or expression'
            - name: untrusted changed_when
              ping:
              changed_when: !unsafe 1 == 1
              ignore_errors: true
            - name: trusted when
              debug:
                msg: trusted
              when: 1 == 1
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "Encountered untrusted template or expression" in batch.stdout + batch.stderr
    assert batch.steps, batch.log


def test_vars_files_given_as_one_string_is_one_file(ansible, ansible_python):
    """``vars_files: name`` (a string, not a list) is that one file, as
    ``Play.get_vars_files`` makes it: mitogen_batch read it character by
    character (target ``playbook``, vars_files_string.yml); ioc-run reads it too."""
    ansible.write("vars/one.yml", "from_one_file: yep\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars_files: vars/one.yml
          tasks:
            - debug:
                msg: "{{ from_one_file }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "yep"' in batch.stdout
    assert '"msg": "yep"' in ioc_run_output(ansible, inventory)


def test_a_template_of_several_parts_fails_on_an_undefined_value_inside_a_part(ansible,
                                                                             ansible_python):
    """``"{{ [{'key': undefined}] }} text"``: ansible-core finalizes each part, so
    the undefined value inside the list fails the task's arguments; the runner
    joined the parts' text and ran the command (target ``jinja2_native_types``)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - raw: "{{ [{ 'key': nested_and_undefined}] }} second_node"
              register: result
              ignore_errors: true
            - debug:
                msg: "{{ result.msg }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "'nested_and_undefined' is undefined" in batch.stdout
    assert "non-zero return code" not in batch.stdout  # (the command never ran)


def test_groupby_gives_group_tuples_that_storage_makes_lists_with_ansibles_warning(
        ansible, ansible_python):
    """groupby's groups are Ansible's GroupTuple (``grouper``, ``list``; a
    tuple's text) inside a template; a template's final value holding one
    (set_fact, debug's msg, ``ansible._protomatter.finalize``) is a list, with
    the warning "Type 'GroupTuple' is unsupported in variable storage,
    converting to 'list'." naming that template (target ``filter_core``);
    ioc-run's console too."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars:
            fruits: [{name: apple, enjoy: true}, {name: orange, enjoy: false}]
            grouped: "{{ fruits | groupby('enjoy') }}"
          tasks:
            - assert:
                that:
                  - (grouped | selectattr('grouper', 'false'))[0].list == [fruits[1]]
                  - (grouped | ansible._protomatter.finalize) == [[false, [fruits[1]]], [true, [fruits[0]]]]
                  - |
                    ([{'a': 1}] | groupby('a'))[0] | string == "(1, [{'a': 1}])"
            - set_fact:
                stored: "{{ fruits | groupby('enjoy') }}"
            - debug:
                msg: "{{ stored[0] | type_debug }} {{ grouped[0] | type_debug }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    warning = "[WARNING]: Type 'GroupTuple' is unsupported in variable storage, converting to 'list'."
    assert batch.stderr.count(warning) == 2, batch.stdout + batch.stderr
    assert '"msg": "list GroupTuple"' in batch.stdout
    assert len(batch.steps) == 1, batch.log
    ours = ioc_run_output(ansible, inventory)
    assert ours.count(warning) == 2 and '"msg": "list GroupTuple"' in ours, ours


def test_a_filter_given_an_undefined_value_gives_it_back(ansible, ansible_python):
    """ansible-core does not call a filter (but default, mandatory, ternary and
    type_debug) given an undefined argument: that value is its result, so
    ``is undefined`` and ``default`` see it (target ``filter_core``)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - assert:
                that:
                  - not_defined | map('upper') is undefined
                  - not_defined | selectattr('a') is undefined
                  - ([1] | union(not_defined)) is undefined
            - debug:
                msg: "{{ not_defined | upper | default('fell through') }}"
            - debug:
                msg: "{{ not_defined | map('upper') }}"
              ignore_errors: true
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "fell through"' in batch.stdout
    assert "'not_defined' is undefined" in batch.stdout
    assert len(batch.steps) == 1, batch.log


def test_filters_in_a_template_file_that_only_ansible_has_are_run_by_ansible(ansible,
                                                                            ansible_python):
    """A template task's source file names ``fileglob`` (Ansible's, which reads
    the controller): the controller declares the file's plugins to the runner
    as the planner does a task's own templates (target ``filter_core``)."""
    ansible.write("templates/found.j2", "{{ (playbook_dir + '/templates/f*') | fileglob "
                                        "| map('basename') | join(',') }}\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - template:
                src: found.j2
                dest: "{{ playbook_dir }}/out-{{ inventory_hostname }}.txt"
            - debug:
                msg: "{{ lookup('file', playbook_dir + '/out-' + inventory_hostname + '.txt') }}"
            - file:  # (the other strategy's run writes it anew)
                path: "{{ playbook_dir }}/out-{{ inventory_hostname }}.txt"
                state: absent
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"msg": "found.j2"' in batch.stdout


def test_a_filters_exception_is_worded_as_ansibles_filter_plugin_failure(ansible,
                                                                         ansible_python):
    """A filter that raises fails the template "The filter plugin
    'ansible.builtin.<name>' failed: <error>" (target ``filter_core``, "Test
    unsupported hash type"). (An error Ansible's plugin raises as an
    AnsibleError, hash's, is one more "caused by" link in linear's console
    that the runner does not give: reproducer filter_plugin_failure_wording,
    identical in the skeleton.)"""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - debug:
                msg: "{{ 1 | map('upper') }}"
              ignore_errors: true
            - debug:
                msg: "{{ [1] | first | length }}"
              ignore_errors: true
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "The filter plugin 'ansible.builtin.map' failed: 'int' object is not iterable" \
        in batch.stdout
    assert "The filter plugin 'ansible.builtin.length' failed:" in batch.stdout


def test_combine_names_terms_that_are_no_dicts_as_ansibles_lazy_containers(ansible,
                                                                          ansible_python):
    """``[x, [y]] | combine(z)``: "failed to combine variables, expected dicts but
    got a '_AnsibleLazyTemplateList' and a '_AnsibleLazyTemplateDict'.", the
    classes Ansible's filter is given (target ``filter_core``)."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          vars: {x: {a: 1}, y: {b: 1}, z: {c: 1}}
          tasks:
            - debug:
                msg: "{{ [x, [y]] | combine(z) }}"
              ignore_errors: true
            - debug:
                msg: "{{ x | combine(1) }}"
              ignore_errors: true
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert "got a '_AnsibleLazyTemplateList' and a '_AnsibleLazyTemplateDict'." in batch.stdout
    assert "got a '_AnsibleLazyTemplateDict' and a 'int'." in batch.stdout


def test_backslashes_in_a_templates_string_constants_are_kept_as_ansible_lexes_them(
        ansible, ansible_python):
    """Inside ``{{ }}`` ansible-core doubles a string constant's backslashes
    before Jinja reads its escapes: ``'\\2'`` is a backslash and a 2 (regex
    backreferences work); a conditional's and a template file's are Jinja's
    (target ``filter_core``, regex_search)."""
    ansible.write("templates/t.j2", "{{ 'a\\nb' | length }}\n")
    ansible.write("play.yml", r"""
        - hosts: web
          gather_facts: false
          tasks:
            - debug:
                msg: "{{ '\\2' | length }} {{ '\\n' | length }} {{ 'goodbye' | regex_search('(good)(bye)', '\\2', '\\1') }}"
            - assert:
                that:
                  - "'a\\nb' | length == 3"
            - template:
                src: t.j2
                dest: "{{ playbook_dir }}/t-{{ inventory_hostname }}.txt"
            - debug:
                msg: "{{ lookup('file', playbook_dir + '/t-' + inventory_hostname + '.txt') }}"
            - file:  # (the other strategy's run writes it anew)
                path: "{{ playbook_dir }}/t-{{ inventory_hostname }}.txt"
                state: absent
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert """"msg": "2 2 ['bye', 'good']\"""" in batch.stdout
    assert '"msg": "3"' in batch.stdout


def test_allowed_broken_conditionals_pass_with_linears_deprecation(ansible, ansible_python):
    """``ALLOW_BROKEN_CONDITIONALS``: a condition whose result is no boolean
    (assert's ``that: "'broken static'"``) is its truth, with the deprecation
    "Conditional result (True) was derived from value of type 'str' at
    '<where it was written>'. ..." and its help text (the conditionals
    target's second run of broken_conditionals.yml). mitogen_batch failed the
    task as without the setting."""
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - name: use a conditional with a static non-boolean result
              assert:
                that: "'broken static'"
              register: result
            - assert:
                that:
                  - result is not failed
                  - result.deprecations | map(attribute='msg') | select('contains', 'Conditional result (True)') | length == 1
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    env = {"ANSIBLE_ALLOW_BROKEN_CONDITIONALS": "1", "ANSIBLE_DEPRECATION_WARNINGS": "1"}
    linear, batch = ansible.both("play.yml", str(inventory), env=env)
    assert linear.rc == 0, linear.stdout + linear.stderr
    # (Ansible's own "Deprecation warnings can be disabled" line: once in each)
    assert batch.without_ansible_warnings(batch.stderr) == \
        linear.without_ansible_warnings(linear.stderr)
    assert batch.stdout == linear.stdout and batch.rc == linear.rc
    assert "Broken conditionals are currently allowed" in batch.stderr
    assert batch.steps and not batch.through_ansible, batch.log


def test_a_registered_task_error_has_ansibles_exception_not_the_runners_traceback(ansible,
                                                                                 ansible_python):
    """A task whose argument fails to template (filter_core's ``comment(style=
    "invalid")``) or whose template file fails to render: the registered
    result's ``exception`` is Ansible's "(traceback unavailable)" (tracebacks
    are off by default), not the runner's Python traceback."""
    ansible.write("templates/undefined.j2", "{{ nope }}\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - set_fact:
                foo: '{{ "boo" | comment(style="invalid") }}'
              ignore_errors: true
              register: argument_error
            - template: {src: undefined.j2, dest: "{{ playbook_dir }}/out"}
              ignore_errors: true
              register: file_error
            - debug:
                var: argument_error
            - debug:
                msg: "{{ file_error.exception }}"
    """)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    linear, batch = ansible.both("play.yml", str(inventory))
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert_same_output(linear, batch)
    assert '"exception": "(traceback unavailable)"' in batch.stdout
    assert '"msg": "(traceback unavailable)"' in batch.stdout
    assert "Traceback" not in batch.stdout
    assert batch.steps and not batch.through_ansible, batch.log


LOCAL_RELATIVE_PLAY = """
- hosts: web
  gather_facts: false
  tasks:
    - file:
        path: made_{{ inventory_hostname }}
        state: directory
    - copy:
        content: x
        dest: made_{{ inventory_hostname }}/a.txt
    - stat:
        path: made_{{ inventory_hostname }}/a.txt
      register: seen
    - debug:
        msg: "{{ seen.stat.exists }} {{ q('fileglob', 'made_' ~ inventory_hostname ~ '/*.txt') | map('basename') }}"
"""


def test_a_local_connections_relative_paths_are_in_the_plays_directory(ansible, ansible_python):
    """A local connection's modules start in the play's directory, wherever
    ansible-playbook runs (the lookup_fileglob target's issue72873: run from
    the target's directory, its playbook in a subdirectory): ioc's own
    modules (file, copy, stat...) wrote and read relative paths in the
    runner's working directory, the one ansible-playbook was started in."""
    ansible.write("sub/play.yml", LOCAL_RELATIVE_PLAY)
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)))
    made = ansible.workdir / "sub" / "made_h1"
    linear = ansible.run("sub/play.yml", str(inventory), "linear")
    assert (made / "a.txt").read_text() == "x"
    shutil.rmtree(made)
    batch = ansible.run("sub/play.yml", str(inventory), "mitogen_batch")
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert '"msg": "True [\'a.txt\']"' in linear.stdout, linear.stdout
    assert_same_output(linear, batch)
    assert (made / "a.txt").read_text() == "x"
    assert not (ansible.workdir / "made_h1").exists()


INVENTORY_FACT_READS_PLAY = """
- hosts: web
  gather_facts: true
  gather_subset: [min]
  tasks:
    - debug:
        msg: "{{ from_ini }}"
    - debug:
        msg: "{{ from_group_vars }}"
"""


def test_a_fact_read_by_an_inventory_variable_is_reported_where_the_variable_was_written(
        ansible, ansible_python):
    """2.21 reports a deprecated value (a top-level fact) at the template that
    read it: an INI inventory variable's line, a group_vars file's value.
    Both engines reported the task argument that used the variable. Under
    2.19 neither linear nor mitogen_batch prints a deprecation, and ioc-run
    speaks 2.21 whatever ansible-core it finds (as the conformance suite
    compares it): its own are checked there."""
    from tests.ansible.test_ioc_run_ansible_modules import run_ioc

    ansible.write("play.yml", INVENTORY_FACT_READS_PLAY)
    ansible.write("group_vars/web.yml", 'from_group_vars: "{{ ansible_machine }}-gv"\n')
    inventory = ansible.write("hosts.ini", local_inventory(ansible_python, ("h1",)).rstrip("\n")
                              + ' from_ini="{{ ansible_system }}-ini"\n')
    linear = ansible.run("play.yml", str(inventory), "linear")
    assert linear.rc == 0, linear.stdout + linear.stderr
    if "INJECT_FACTS_AS_VARS" in linear.stderr:  # (2.21)
        assert "Origin: %s:2\n" % inventory in linear.stderr
        assert "group_vars/web.yml:1:18" in linear.stderr
    batch = ansible.run("play.yml", str(inventory), "mitogen_batch")
    # (the hint every deprecation brings is among the lines the strategy's own
    # deprecation makes mitogen_batch print: left out of both)
    assert batch.without_ansible_warnings(batch.stderr) == \
        linear.without_ansible_warnings(linear.stderr)
    assert (batch.without_ansible_warnings(), batch.rc) == (linear.stdout, linear.rc)
    ioc = run_ioc(ansible_python, ansible.workdir, "play.yml", str(inventory))
    assert ioc.returncode == 0, ioc.stdout + ioc.stderr
    if "INJECT_FACTS_AS_VARS" in linear.stderr:
        assert ioc.stderr == linear.stderr
    else:
        assert "Origin: %s:2\n" % inventory in ioc.stderr
        assert "group_vars/web.yml:1:18" in ioc.stderr
        assert "play.yml" not in ioc.stderr  # (not at the arguments that used them)
