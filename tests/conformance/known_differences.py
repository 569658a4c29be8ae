"""Playbooks on which ioc-run is known to differ from ansible-playbook.

name (playbook file stem) → the exact difference. Each becomes a strict xfail
in test_conformance.py: once the engine is fixed the test XPASSes and fails,
and the entry must go.
"""
KNOWN_DIFFERENCES = {
}
