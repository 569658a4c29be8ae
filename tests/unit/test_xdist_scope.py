"""scripts/test's units of work under ``--dist loadfile``
(tests/support/scheduling.py): a file each, but a conformance playbook's
ioc-run and mitogen_batch tests share one unit, that of their reference run."""
from collections import defaultdict

from tests.conformance.test_conformance import ENGINES, PLAYBOOKS, _params
from tests.support.scheduling import xdist_scope

FILES = {"ioc-run": "tests/conformance/test_conformance.py",
         "mitogen_batch": "tests/conformance/test_conformance_mitogen_batch.py",
         "mitogen_batch-2.19": "tests/conformance/test_conformance_mitogen_batch.py"}


def test_a_playbooks_front_ends_share_the_unit_of_their_reference_run():
    units, references = defaultdict(set), defaultdict(set)
    for param in _params(ENGINES):
        engine, name = param.values
        nodeid = "%s::test_playbook_conforms[%s]" % (FILES[engine], param.id)
        reference = ("2.19" if engine == "mitogen_batch-2.19" else "2.21", name)
        units[xdist_scope(nodeid)].add(reference)
        references[reference].add(xdist_scope(nodeid))
    # one unit per reference run (ansible-core release, playbook), and back
    assert all(len(of) == 1 for of in units.values()), units
    assert all(len(of) == 1 for of in references.values()), references
    assert {name for core, name in references if core == "2.21"} \
        == {p.stem for p in PLAYBOOKS.glob("*.yml")}
    assert xdist_scope("tests/conformance/test_conformance.py::test_playbook_conforms[loop_control]") \
        == xdist_scope("tests/conformance/test_conformance_mitogen_batch.py::"
                       "test_playbook_conforms[mitogen_batch-loop_control]") \
        != xdist_scope("tests/conformance/test_conformance_mitogen_batch.py::"
                       "test_playbook_conforms[mitogen_batch-2.19-loop_control]")


def test_every_other_test_keeps_its_file_as_its_unit():
    for nodeid in ("tests/integration/test_become.py::test_controller_files_reach_each_identitys_runner",
                   "tests/ansible/test_mitogen_batch_become.py::test_ask_become_pass_reaches_the_runner[2.21]",
                   "tests/unit/test_xdist_scope.py::test_every_other_test_keeps_its_file_as_its_unit",
                   "tests/conformance/test_conformance.py::test_something_else"):
        assert xdist_scope(nodeid) == nodeid.split("::")[0]
