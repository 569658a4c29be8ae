"""Playbooks on which ioc-run is known to differ from ansible-playbook 2.21.

playbook name (file stem) → the exact difference, as the normalised event
diff shows it ("ansible" = ansible-playbook 2.21 linear, "ioc" = ioc-run).
Each entry becomes a strict xfail in test_conformance.py: once the engine is
fixed, the test XPASSes, fails, and the entry must go.

Differences shared by several playbooks are named once below.
"""

KNOWN_DIFFERENCES: dict = {}


#: The same, for ansible-playbook with ``strategy = mitogen_batch`` (the
#: strategy plugin) against ansible-playbook's linear run.
KNOWN_DIFFERENCES_PLUGIN = {
    "when_errors": (
        "non-boolean when: ansible names where the expression was written, \"... value of "
        "type 'str' at '<work>/when_errors.yml:13:13'. ...\", the bridge the expression, "
        "\"... value of type 'str' at \\\"'abc'\\\". ...\" (the IR it builds from Ansible's "
        "tasks carries no line:column for conditions; ioc-run's loader does)"),
}
