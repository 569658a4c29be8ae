"""Differences ansible-core's own integration targets found between ``linear``
and ``mitogen_batch`` (issue 18, ``tests/targets/repro/``), each fixed where it
lives and compared here with linear under both supported ansible-core releases
(see test_mitogen_batch.py for the harness).
"""
from __future__ import annotations

import pytest

from tests.ansible.test_mitogen_batch import (  # noqa: F401 (fixtures)
    Ansible, ansible, ansible_python, assert_same_output, local_inventory)

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
