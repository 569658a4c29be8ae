"""Real public roles, unmodified, read the same under linear, mitogen_batch and ioc-run.

Each engine gets a pristine Debian 12 host of its own (tests/realworld/sandbox.py:
a debootstrapped root file system under a fresh overlay, sshd as PID 1, no
systemd) and runs the role's playbook twice. The exit code, the PLAY RECAP,
every task banner and status line, and the host's resulting state (files
under /etc and the role's trees with content, mode and owner; binaries'
modes; installed packages; running processes) must equal linear's, on the
first run and on the idempotent second run.

CI runs :data:`CI_ROLES` (a few minutes); ``python -m tests.realworld`` runs
every vendored role and writes docs/realworld.md.
"""
from __future__ import annotations

import pytest

from tests.realworld.harness import BY_NAME, Runner, apply_twice, differences
from tests.realworld.prepare import collections_ready
from tests.realworld.sandbox import rootfs_ready

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: The roles CI runs: geerlingguy.nginx has packages, templates, a SysV
#: service enabled with update-rc.d, handlers, facts, include_vars by OS and
#: six other-OS include branches, and ioc-run takes it (it refuses the other
#: four roles before connecting: tests/realworld/README.md says why).
CI_ROLES = ("nginx",)


@pytest.fixture(scope="module")
def runner(tmp_path_factory) -> Runner:
    if not (rootfs_ready() and collections_ready()):
        pytest.fail("the real-world suite is not prepared: run scripts/test (it runs "
                    "python -m tests.realworld.prepare)", pytrace=False)
    return Runner(tmp_path_factory.mktemp("realworld"))


@pytest.fixture(scope="module")
def linear(runner):
    return {name: apply_twice(runner, BY_NAME[name], "linear") for name in CI_ROLES}


@pytest.mark.parametrize("role", CI_ROLES)
@pytest.mark.parametrize("engine", ["mitogen_batch", "ioc-run"])
def test_a_real_role_reads_and_leaves_the_host_as_under_linear(runner, linear, role, engine):
    reference = linear[role]
    assert [r.rc for r in reference.runs] == [0, 0], reference.runs[0].stdout[-3000:]
    assert "changed=0" in reference.runs[1].recap()[0], "the role is not idempotent under linear"
    outcome = apply_twice(runner, BY_NAME[role], engine)
    assert differences(reference, outcome) == [], (
        outcome.runs[0].stdout[-4000:] + outcome.runs[0].stderr[-2000:])
    if engine == "mitogen_batch":  # the dispatcher reports its runner calls per host
        assert "runner call(s) for 1 host(s)" in outcome.runs[1].log
