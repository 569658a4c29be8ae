"""Under mitogen_batch, a collection's filter, test and lookup stay in the batch.

Before, a task using a plugin ioc does not implement left the batch and ran
through Ansible per task; now the planner accepts it, the runner proxies the
filter and test to the dispatcher, which runs them with Ansible's loader, and
the lookup runs before the batch. The output must read exactly like linear's.
"""
from __future__ import annotations

from tests.ansible.test_mitogen_batch import ansible, ansible_python, assert_same_output  # noqa: F401
from tests.integration.test_collection_plugins import PLAY
from tests.support.collections import community_general


#: Without the failing task: how a failure is *displayed* (linear's "caused by"
#: chain) is issue 18's error-results class, not this mechanism's.
PASSING = PLAY[:PLAY.index("    - name: its failure is Ansible's")]


def test_collection_plugins_run_in_the_batch_and_read_like_linear(ansible, ansible_python, sshd):
    ansible.write("play.yml", PASSING)
    inventory = ansible.write("hosts.ini", sshd.inventory_ini(["h1", "h2"], group="web",
                                                              python=ansible_python))
    env = {"ANSIBLE_COLLECTIONS_PATH": community_general()}
    linear, batch = ansible.both("play.yml", str(inventory), env=env)
    assert linear.rc == 0, linear.stdout + linear.stderr
    assert len(batch.steps) == 1, batch.log
    assert not batch.through_ansible, batch.log
    assert_same_output(linear, batch)
