"""Conformance of mitogen_batch (ansible-core 2.21, and 2.19 for PLAYBOOKS_219):
the same playbooks and checks as test_conformance.py, against the same
reference runs: scripts/test gives a playbook's tests in both files to one
worker, which runs ansible-playbook once for them (README.md)."""
from __future__ import annotations

import pytest

from tests.conformance.test_conformance import _params, check_playbook

pytestmark = pytest.mark.conformance


@pytest.mark.parametrize("engine, name", list(_params(("mitogen_batch", "mitogen_batch-2.19"))))
def test_playbook_conforms(engine, name, tmp_path, request):
    check_playbook(engine, name, tmp_path, request)
