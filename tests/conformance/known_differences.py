"""Playbooks on which ioc-run is known to differ from ansible-playbook 2.21.

playbook name (file stem) → the exact difference, as the normalised event
diff shows it ("ansible" = ansible-playbook 2.21 linear, "ioc" = ioc-run).
Each entry becomes a strict xfail in test_conformance.py: once the engine is
fixed, the test XPASSes, fails, and the entry must go.

Differences shared by several playbooks are named once below.
"""

_UNTIL_UNDEFINED = ("an undefined variable in `until` fails the task at once in 2.21 ({'changed': "
                    "False, 'msg': \"Task failed: An 'until' expression failed: Error while "
                    "evaluating conditional: 'nosuch_until' is undefined\"}, no retry, not counted "
                    "changed); ioc takes it as a false condition: it retries (runner_retry), then "
                    "fails with the command's own result (attempts 1, changed: true, counted changed)")
_LABEL_UNDEFINED = ("an undefined variable in loop_control.label: 2.21 prints '[WARNING]: Failed to "
                    "template loop_control label: 'nosuch_label' is undefined' (with its origin) "
                    "once and labels each item with the item itself ('(item=a)'); ioc labels every "
                    "item '(item=<< error 1 - 'nosuch_label' is undefined >>)' and warns nothing")
_MISSING_HANDLER = ("a changed task notifying a name no handler has nor listens to: 2.21 aborts the "
                    "whole run there ('[ERROR]: The requested handler 'no such handler' was not "
                    "found in either the main handlers list nor in the listening handlers list', "
                    "ignore_errors notwithstanding: no result event for the task, no handler, no "
                    "later play, no stats, exit code 1); ioc drops the unknown name silently and "
                    "runs on (H runs, the next play runs, exit code 0)")
_FATAL_ALWAYS = ("any_errors_fatal on a task (%s) inside a block with an always section: when h2 "
                 "fails it, 2.21 runs the always on h1, h2 and h3 before the play stops (h1, h3 "
                 "ok+1, not failed); ioc runs it on h2 only (h1 and h3 stop at once)")
_IGNORED_UNREACHABLE_FATAL = (
    "an ignored unreachable result (ignore_unreachable) under the play's any_errors_fatal: 2.21 "
    "ends the run after that task (no further task, no later play, exit code 0, u1 ok=1 "
    "ignored=1); ioc goes on with the play (the next tasks, u1 unreachable at the next task that "
    "connects, exit code 4)")

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
    "unreachable_ignored_fatal": _IGNORED_UNREACHABLE_FATAL,
    "any_errors_fatal_task_always": _FATAL_ALWAYS % "its own keyword",
    "any_errors_fatal_include": _FATAL_ALWAYS % "given by include_tasks' apply",
    "undefined_conditions": (
        "an undefined variable in changed_when/failed_when: 2.21's result has msg \"Task failed: "
        "Action failed: A 'changed_when' (resp. 'failed_when') expression failed: Error while "
        "evaluating conditional: ... is undefined\", ioc-run's has msg ''; and " + _UNTIL_UNDEFINED),
    "undefined_when_label": _LABEL_UNDEFINED + "; and where a when per item fails on an undefined "
                            "variable ioc-run prints '[ERROR]: Task failed: Action failed: One or "
                            "more items failed' with the task's origin before 'fatal: [h1]', "
                            "2.21 no [ERROR] line",
    "handlers_missing_name": _MISSING_HANDLER,
    "handlers_include_role_loop": (
        "the handlers of a role brought in by include_role run after the play's handlers in 2.21 "
        "(include_role adds them to the play's handler list when it runs): RUNNING HANDLER [play "
        "handler] comes first, then [notifier : role handler] and [notifier : role listener]; "
        "ioc-run runs the role's handlers first, as for a role of `roles:`"),
}


#: The same, for ansible-playbook with ``strategy = mitogen_batch`` (the
#: strategy plugin) against ansible-playbook's linear run.
KNOWN_DIFFERENCES_PLUGIN: dict = {
    "dead_midplay_ahead": _RUNS_AHEAD,
    "unreachable_ignored_fatal": _IGNORED_UNREACHABLE_FATAL,
    "any_errors_fatal_task_always": _FATAL_ALWAYS % "its own keyword",
    "any_errors_fatal_include": _FATAL_ALWAYS % "given by include_tasks' apply",
    "undefined_conditions": _UNTIL_UNDEFINED,
    "undefined_when_label": _LABEL_UNDEFINED,
    "handlers_missing_name": _MISSING_HANDLER,
}


#: ``mitogen_batch`` under ansible-core 2.19 against 2.19's own linear run
#: (the playbooks of test_conformance.PLAYBOOKS_219).
KNOWN_DIFFERENCES_PLUGIN_219: dict = {}


#: Per engine, playbooks whose console (the default callback's output,
#: ``console.py``) still differs from ansible-playbook's while their events,
#: recap, exit code and files are equal: playbook -> the exact difference.
#: The test checks everything else first, then xfails; once the consoles are
#: equal it fails until the entry goes.
_CHAIN = ("2.21 follows the [ERROR] line of a templating error with 'Task failed.' and the "
          "chain of its causes ('<<< caused by >>>'), each with its own origin and excerpt: %s; "
          "ioc prints the [ERROR] line and the task's origin only")
_INJECT = ("2.21's deprecation warning for a top-level fact variable (INJECT_FACTS_AS_VARS, with "
           "the template's origin and excerpt) is not printed")
_PLAY_HOSTS = ("2.21's deprecation warning for the play_hosts magic variable (with the template's "
               "origin) is not printed")
_SKIPPED_REASON = ("2.21's deprecation warning for reading a registered 'skipped_reason' (with "
                   "the template's origin) is not printed")
_NO_LOG_ERROR = ("for a failed no_log task 2.21 prints the failure's own message in its [ERROR] "
                 "line ('Action failed: hidden') though it censors the result")
_BLOCK_KEYWORDS_CHAIN = _CHAIN % ("the action's line, the argument value's column, the block var's "
                                  "column; the block's when column; for environment 'Error "
                                  "processing keyword 'environment'.' with 'Origin: <unknown>' and "
                                  "the value, then the variable's column")

KNOWN_CONSOLE_DIFFERENCES: dict = {
    "ioc-run": {
        "ignore_errors_templating": _CHAIN % "the action's line, the argument value's column",
        "undefined_variables": _CHAIN % "the action's line, the argument value's column",
        "loop_undefined": _CHAIN % "the loop expression's column",
        "undefined_vars_args": _CHAIN % "the action's line, the argument value's column, the "
                                        "task var's column",
        "undefined_block_keywords": _BLOCK_KEYWORDS_CHAIN,
        "undefined_notify_delegate": _CHAIN % "delegate_to's column (ioc-run keeps no origin of it)",
        "facts_gathered": _INJECT,
        "play_order_serial": _PLAY_HOSTS,
        "registered_shapes": _SKIPPED_REASON,
        "loop_when_results_per_item": (
            "for a command whose failed_when is true 2.21's [ERROR] line reads 'Task failed: Module "
            "failed: A 'failed_when' expression evaluated to 'True'.'; ioc-run's reads 'Task "
            "failed: Action failed: ...'"),
        "unreachable_delegate_loop": (
            "for a loop delegated to an unreachable host 2.21 prints 'failed: [h1 -> u1] (item=a)' "
            "and 'fatal: [h1 -> u1]: UNREACHABLE!'; ioc-run prints 'failed: [h1 -> u1(127.0.0.1)] "
            "(item=a)' and 'fatal: [h1]: UNREACHABLE!'"),
        "no_log": _NO_LOG_ERROR + "; ioc-run prints no [ERROR] line: no secret is shown, by design",
    },
    "mitogen_batch": {
        "ignore_errors_templating": _CHAIN % "the action's line, the argument value's column",
        "undefined_variables": _CHAIN % "the action's line, the argument value's column",
        "undefined_vars_args": _CHAIN % "the action's line, the argument value's column, the "
                                        "task var's column",
        "undefined_block_keywords": _BLOCK_KEYWORDS_CHAIN,
        "undefined_notify_delegate": _CHAIN % "the action's line and the argument value's "
                                              "column; for notify the keyword's",
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
