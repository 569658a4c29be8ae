"""Playbooks on which ioc-run is known to differ from ansible-playbook 2.21.

playbook name (file stem) → the exact difference, as the normalised event
diff shows it ("ansible" = ansible-playbook 2.21 linear, "ioc" = ioc-run).
Each entry becomes a strict xfail in test_conformance.py: once the engine is
fixed, the test XPASSes, fails, and the entry must go.

Differences shared by several playbooks are named once below.
"""

_RUNS_AHEAD = (
    "a host killed by another host's task (h1's shell kills d1's sshd and its sessions after 2 s, "
    "d1's own task of that step is 'true'): 2.21's lockstep starts 'd1 runs ahead' only once h1's "
    "task has ended, so d1 is UNREACHABLE there (ssh: Connection refused; d1 ok=2 changed=2 "
    "unreachable=1) and never reaches 'd1 sleeps'; ioc's runner on d1 runs ahead within its "
    "batch: 'd1 runs ahead' is changed on d1 (it ran, before the kill) and d1 is UNREACHABLE at "
    "'d1 sleeps', the task it was running when its connection was cut (d1 ok=3 changed=3 "
    "unreachable=1). Batching hides the interleaving of hosts only when no task acts on another "
    "host behind the planner's back (linear-semantics section 9); a shell command that does "
    "cannot be seen")

KNOWN_DIFFERENCES: dict = {
    "dead_midplay_ahead": _RUNS_AHEAD,
}


#: The same, for ansible-playbook with ``strategy = mitogen_batch`` (the
#: strategy plugin) against ansible-playbook's linear run.
KNOWN_DIFFERENCES_PLUGIN: dict = {
    "dead_midplay_ahead": _RUNS_AHEAD,
}


#: ``mitogen_batch`` under ansible-core 2.19 against 2.19's own linear run
#: (the playbooks of test_conformance.PLAYBOOKS_219).
KNOWN_DIFFERENCES_PLUGIN_219: dict = {}


#: Per engine, playbooks whose console (the default callback's output,
#: ``console.py``) still differs from ansible-playbook's while their events,
#: recap, exit code and files are equal: playbook -> the exact difference.
#: The test checks everything else first, then xfails; once the consoles are
#: equal it fails until the entry goes.
_NO_LOG_ERROR = ("for a failed no_log task 2.21 prints the failure's own message in its [ERROR] "
                 "line ('Action failed: hidden') though it censors the result")

KNOWN_CONSOLE_DIFFERENCES: dict = {
    "ioc-run": {
        "no_log": _NO_LOG_ERROR + "; ioc-run prints no [ERROR] line: no secret is shown, by design",
    },
    "mitogen_batch": {
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
