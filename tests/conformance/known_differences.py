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
KNOWN_DIFFERENCES_PLUGIN: dict = {}


#: ``mitogen_batch`` under ansible-core 2.19 against 2.19's own linear run
#: (the playbooks of test_conformance.PLAYBOOKS_219).
KNOWN_DIFFERENCES_PLUGIN_219: dict = {}
