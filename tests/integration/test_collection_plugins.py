"""A collection's filter, test or lookup that ioc does not have works (issue 20, item 3).

community.general's plugins are not ioc's: the runner proxies the filter and
the test to the controller, which runs them with Ansible's own loader, one
round trip per call (``ioc/controller/plugins.py``); the lookup runs on the
controller before the batch, like every lookup that reads the controller.
A name that exists nowhere is still refused before anything runs.
"""
from __future__ import annotations

import json

import pytest

from tests.integration.test_end_to_end import ioc_run
from tests.support.collections import community_general

pytestmark = pytest.mark.integration

PLAY = """
- hosts: web
  gather_facts: false
  tasks:
    - name: a collection filter
      debug:
        msg: "{{ inventory_hostname | community.general.dict_kv('host') }}"
    - name: a collection test, per loop item
      debug:
        msg: "{{ item }} {{ item is community.general.a_module }}"
      loop: ["ansible.builtin.copy", "no.such.module"]
    - name: a collection lookup
      debug:
        msg: "{{ query('community.general.cartesian', [1, 2], ['a']) }}"
    - name: a builtin ioc does not implement
      set_fact:
        human: "{{ 1048576 | human_readable }}"
    - name: its failure is Ansible's
      debug:
        msg: "{{ [1] | community.general.lists_mergeby }}"
      ignore_errors: true
"""


def messages(run, name):
    return [json.dumps(e["result"].get("msg")) for e in run.of("runner_on_ok") + run.of("runner_on_failed")
            if e["task"] == name]


def test_collection_filters_tests_and_lookups_run_in_a_batch(tmp_path, sshd):
    env = {"ANSIBLE_COLLECTIONS_PATH": community_general()}
    run = ioc_run(tmp_path, PLAY, inventory=sshd.inventory_ini(["h1", "h2"], group="web"),
                  env=env)
    assert run.rc == 0, run.stdout + run.stderr
    assert '"msg": {\n        "host": "h1"\n    }' in run.stdout
    assert '"msg": "ansible.builtin.copy True"' in run.stdout
    assert '"msg": "no.such.module False"' in run.stdout
    assert '"msg": [\n        [\n            1,\n            "a"\n        ],' in run.stdout
    assert "The filter plugin 'community.general.lists_mergeby' failed: At least one list " \
           "and index are needed." in run.stdout
    assert run.recap["h1"]["ok"] == 5 and run.recap["h1"]["ignored"] == 1
    # one batch (nothing left the runner for Ansible); the transport report counts
    # each proxied call as the round trip it is: dict_kv, a_module for each of
    # the two items, human_readable, lists_mergeby at least
    assert "ioc: 1 batch(es)" in run.stdout + run.stderr
    assert run.calls["h1"] >= 1 + 5


def test_a_filter_that_exists_nowhere_is_refused_with_its_line(tmp_path, sshd):
    run = ioc_run(tmp_path, PLAY.replace("community.general.dict_kv('host')",
                                         "community.general.no_such_filter"),
                  inventory=sshd.inventory_ini(["h1"], group="web"),
                  env={"ANSIBLE_COLLECTIONS_PATH": community_general()})
    assert run.rc == 4
    assert "[ERROR]: template error while templating string: No filter named " \
           "'community.general.no_such_filter'" in run.stderr
    assert "play.yml:5:7\n" in run.stderr  # the Origin line, then the excerpt


def test_an_action_plugin_of_the_playbook_overriding_debug_is_refused_by_name(tmp_path):
    """``action_plugins/debug.py`` beside the playbook is what Ansible runs for
    ``debug``/``ansible.legacy.debug``; ioc-run runs no action plugin, so it
    refuses those tasks instead of running Ansible's own debug in their place.
    ``ansible.builtin.debug`` is Ansible's own and runs."""
    from tests.integration.test_end_to_end import ROOT

    plugins = tmp_path / "action_plugins"
    plugins.mkdir()
    (plugins / "debug.py").write_text(
        (ROOT / "tests" / "targets" / "repro" / "legacy_action_override" / "action_plugins"
         / "debug.py").read_text())
    builtin = ioc_run(tmp_path, """
        - hosts: localhost
          gather_facts: false
          tasks:
            - ansible.builtin.debug:
                msg: Ansible's own
    """)
    assert builtin.rc == 0, builtin.stdout + builtin.stderr
    assert '"msg": "Ansible\'s own"' in builtin.stdout
    legacy = ioc_run(tmp_path, """
        - hosts: localhost
          gather_facts: false
          tasks:
            - ansible.legacy.debug:
    """)
    assert legacy.rc == 4
    assert ("[ERROR]: ansible.legacy.debug is the action plugin %s, not Ansible's own, "
            "which ioc-run does not run; use ansible-playbook" % (plugins / "debug.py")
            ) in legacy.stderr
    assert "play.yml:5:7\n" in legacy.stderr
