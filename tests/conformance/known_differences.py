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


#: Per engine, playbooks whose console (the default callback's output,
#: ``console.py``) still differs from ansible-playbook's while their events,
#: recap, exit code and files are equal: playbook -> the exact difference.
#: The test checks everything else first, then xfails; once the consoles are
#: equal it fails until the entry goes.
_INJECT = ("2.21's deprecation warning for a top-level fact variable (INJECT_FACTS_AS_VARS, with "
           "the template's origin and excerpt) is not printed")
_PLAY_HOSTS = ("2.21's deprecation warning for the play_hosts magic variable (with the template's "
               "origin) is not printed")
_SKIPPED_REASON = ("2.21's deprecation warning for reading a registered 'skipped_reason' (with "
                   "the template's origin) is not printed")
_NO_LOG_ERROR = ("for a failed no_log task 2.21 prints the failure's own message in its [ERROR] "
                 "line ('Action failed: hidden') though it censors the result")

KNOWN_CONSOLE_DIFFERENCES: dict = {
    "ioc-run": {
        "facts_gathered": _INJECT,
        "play_order_serial": _PLAY_HOSTS,
        "registered_shapes": _SKIPPED_REASON,
        "unreachable_delegate_loop": (
            "for a loop delegated to an unreachable host 2.21 prints 'failed: [h1 -> u1] (item=a)' "
            "and 'fatal: [h1 -> u1]: UNREACHABLE!'; ioc-run prints 'failed: [h1 -> u1(127.0.0.1)] "
            "(item=a)' and 'fatal: [h1]: UNREACHABLE!'"),
        "no_log": _NO_LOG_ERROR + "; ioc-run prints no [ERROR] line: no secret is shown, by design",
    },
    "mitogen_batch": {
        "facts_gathered": _INJECT,
        "play_order_serial": _PLAY_HOSTS,
        "registered_shapes": _SKIPPED_REASON,
        "no_log": _NO_LOG_ERROR + "; mitogen_batch prints '[ERROR]: Unknown error.' (the runner "
                                  "sends the censored result only)",
    },
    "mitogen_batch-2.19": {
        "no_log": _NO_LOG_ERROR.replace("2.21", "2.19") + "; mitogen_batch prints 'Task failed: "
                  "Action failed: Unknown error.' (the runner sends the censored result only)",
        "registered_shapes": "2.19 prints each loop item's 'invocation' (module_args) in a "
                             "registered loop result; mitogen_batch's items have none",
    },
}
