"""How pytest-xdist shares the suite out between workers (``scripts/test``:
``-n 2 --dist loadfile``).

Under ``loadfile`` a test file is one unit of work, run whole by one worker,
so that a file's module fixtures (the become tests' accounts, ...) never run
on two workers at once. One exception: the conformance tests of one playbook,
ioc-run's in ``test_conformance.py`` and mitogen_batch's in
``test_conformance_mitogen_batch.py``, are a unit of their own, so that one
worker runs both and the reference ``ansible-playbook`` run they are compared
with is made once per run (``_references`` in
``tests/conformance/test_conformance.py``), not once per file's worker.
tests/conftest.py's ``pytest_xdist_make_scheduler`` installs it.

(xdist's own ``--dist loadgroup`` with ``xdist_group`` marks would say the
same, but with pytest 9.2 and pytest-xdist 3.8 it groups nothing.)
"""
from __future__ import annotations

import re

#: The conformance files whose tests of one playbook share a reference run.
CONFORMANCE_FILES = ("tests/conformance/test_conformance.py",
                     "tests/conformance/test_conformance_mitogen_batch.py")
#: A conformance test's id (``_params`` in test_conformance.py): ``<name>``
#: (ioc-run), ``mitogen_batch-<name>`` (both against ansible-core 2.21's run)
#: and ``mitogen_batch-2.19-<name>`` (against 2.19's own run).
_CONFORMANCE_TEST = re.compile(r"test_playbook_conforms\[(?:mitogen_batch-)?(?P<reference>.+)\]")


def xdist_scope(nodeid: str) -> str:
    """The unit of work of the test ``nodeid``: its file, but a conformance
    test's is its reference run: ``conformance:<name>`` (ioc-run and
    mitogen_batch) or ``conformance:2.19-<name>`` (mitogen_batch-2.19)."""
    path, _, rest = nodeid.partition("::")
    if path in CONFORMANCE_FILES:
        m = _CONFORMANCE_TEST.fullmatch(rest)
        if m:
            return "conformance:" + m.group("reference")
    return path


def make_scheduler(config, log):
    """xdist's ``loadfile`` scheduler with :func:`xdist_scope`'s units."""
    from xdist.scheduler import LoadFileScheduling

    class PlaybookScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

    return PlaybookScheduling(config, log)
