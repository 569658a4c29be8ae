"""ansible-core's own integration targets: the fast part of the comparison, for CI.

Each target of :data:`SAMPLE` runs through ansible-test twice — stock
``linear``, then ``mitogen_batch`` as the strategy ``linear`` would be — with
the harness of ``tests/targets/harness.py``, and must end identical: same exit
code, same PLAY RECAPs, same skeleton of stdout and of stderr. The sample is
targets of record that are identical today and quick (the whole sample takes
a few minutes on 2 cores); the full run of every target of record is one command
(``docs/conformance.md``).

On a failure the message is the harness's first difference; both console logs
stay in pytest's ``tmp_path`` for inspection.
"""
from __future__ import annotations

import pytest

from tests.targets.harness import CANDIDATE, Harness
from tests.targets.source import SourceError, find_python313

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: Identical and quick in the full run of docs/conformance.md, with plays
#: mitogen_batch runs natively: includes and imports under a dynamic parent,
#: variable inheritance into roles and includes, registered results,
#: add_host (hosts added at run time, tasks through Ansible between batches),
#: assert's conditions and messages, task keywords, undefined values.
SAMPLE = (
    "include_when_parent_is_dynamic",
    "import_tasks",
    "var_inheritance",
    "register",
    "add_host",
    "assert",
    "tasks",
    "undefined",
    "lookup_first_found",
    "lookup_template",
)


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    try:
        python = find_python313()
        runner = Harness(tmp_path_factory.mktemp("targets"), python=python, candidate=CANDIDATE)
    except SourceError as exc:
        pytest.fail("%s" % exc, pytrace=False)
    with runner:
        yield runner


@pytest.mark.parametrize("target", SAMPLE)
def test_target_is_identical_under_mitogen_batch(harness, target):
    outcome = harness.run(target)
    assert outcome.baseline is not None and outcome.baseline.rc == 0, outcome.line()
    assert outcome.candidate is not None and outcome.candidate.native_plays > 0, (
        "mitogen_batch planned no play natively: the shim did not take the place of linear "
        "(%s)" % outcome.line())
    assert outcome.result == "identical", outcome.line()
