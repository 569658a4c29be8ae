"""Focused tests for the differences the real-world roles showed (one per cause).

Each reproduces, on a local two-task play, what a vendored role did
differently under mitogen_batch than under linear; see docs/realworld.md.
"""
from __future__ import annotations

import pytest

from tests.ansible.test_mitogen_batch import Result, ansible, ansible_python, \
    local_inventory  # noqa: F401 (fixtures)

pytestmark = pytest.mark.integration

#: A collection beside the playbook whose ``old_ping`` is a deprecated name
#: of ``ansible.builtin.ping``, as community.mysql.mysql_user now is of
#: ansible.mysql.mysql_user (geerlingguy.mysql's tasks use such names).
RUNTIME = """
plugin_routing:
  modules:
    old_ping:
      redirect: ansible.builtin.ping
      deprecation:
        removal_version: "9.0.0"
        warning_text: Use ansible.builtin.ping instead.
"""


def assert_same_output(linear: Result, batch: Result) -> None:
    """stdout, stderr and exit code equal, ansible-core's own strategy warning aside.

    (Both print "Deprecation warnings can be disabled ..." once when any
    deprecation is shown: the third-party strategy's is one.)
    """
    assert batch.without_ansible_warnings(batch.stderr) == \
        linear.without_ansible_warnings(linear.stderr)
    assert batch.without_ansible_warnings() == linear.stdout
    assert batch.rc == linear.rc


def test_an_include_no_host_reaches_shows_no_warnings_of_its_file(ansible, ansible_python):
    """geerlingguy.nginx on Debian: its Ubuntu file's ``apt_repository`` warned.

    mitogen_batch loads an ``include_tasks`` file with a plain name when it
    converts the play (the tasks join the batch); loading it displayed the
    file's deprecated module names at once, where linear loads the file,
    and warns, only when a host includes it. The warnings now wait for the
    include's results.
    """
    ansible.write("collections/ansible_collections/ioc/legacy/meta/runtime.yml", RUNTIME)
    ansible.write("other_os.yml", """
        - name: a deprecated module name
          ioc.legacy.old_ping:
        """)
    for reaches, count in (("nobody", 0), ("h2", 1)):
        ansible.write("play.yml", """
            - hosts: web
              gather_facts: false
              tasks:
                - include_tasks: other_os.yml
                  when: inventory_hostname == '%s'
                - command: "true"
            """ % reaches)
        inventory = str(ansible.write("hosts", local_inventory(ansible.python)))
        linear, batch = ansible.both("play.yml", inventory)
        assert linear.stderr.count("ioc.legacy.old_ping has been deprecated") == count, \
            linear.stderr
        assert_same_output(linear, batch)
        assert batch.through_ansible == [] and len(batch.steps) == 1, batch.log
