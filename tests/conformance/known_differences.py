"""Playbooks on which ioc-run is known to differ from ansible-playbook 2.21.

playbook name (file stem) → the exact difference, as the normalised event
diff shows it ("ansible" = ansible-playbook 2.21 linear, "ioc" = ioc-run).
Each entry becomes a strict xfail in test_conformance.py: once the engine is
fixed, the test XPASSes, fails, and the entry must go.

Differences shared by several playbooks are named once below.
"""

DELEGATE_VARS = (
    "under delegate_to: h2, ansible prints \"h1 via h2\" for {{ ansible_host }} (the "
    "delegate's), ioc \"h1 via unset\"; and set_fact with delegate_facts: true gives the "
    "fact to h2 only in ansible (h1 prints \"h1 unset\"), to h1 as well in ioc (\"h1 h1\")")

KNOWN_DIFFERENCES = {
}


#: The same, for ansible-playbook with ``strategy = mitogen_batch`` (the
#: strategy plugin) against ansible-playbook's linear run.
KNOWN_DIFFERENCES_PLUGIN = {
    "when_errors": (
        "non-boolean when: ansible names where the expression was written, \"... value of "
        "type 'str' at '<work>/when_errors.yml:13:13'. ...\", the bridge the expression, "
        "\"... value of type 'str' at \\\"'abc'\\\". ...\" (the IR it builds from Ansible's "
        "tasks carries no line:column for conditions; ioc-run's loader does)"),
}


#: ``mitogen_batch`` under ansible-core 2.19 against 2.19's own linear run
#: (the playbooks of test_conformance.PLAYBOOKS_219).
KNOWN_DIFFERENCES_PLUGIN_219 = {
    # ioc's runner shapes results as ansible-core 2.21 does; a value registered
    # and read in the same batch never passes through the bridge.
    "changed_failed_when": (
        "command with a non-zero rc: 2.19 says \"msg\": \"non-zero return code\", ioc "
        "(2.21's command module) \"The command exited with a non-zero return code.\", in the "
        "callback result and in the registered r1"),
    "registered_shapes": (
        "registered results as 2.21 shapes them: a skipped result (r_skip, and a skipped loop "
        "item) has \"failed\": false, which 2.19 has not; the loop result r_loop has "
        "\"failed\": false and no \"skipped\": false (2.19: the other way round); the empty "
        "loop's r_empty has \"failed\": false and \"skip_reason\" beside 2.19's "
        "\"skipped_reason\""),
}
