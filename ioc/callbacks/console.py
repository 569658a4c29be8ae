"""Console output that reads like ansible-core's ``default`` stdout callback."""
from __future__ import annotations

import difflib
import json
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, TextIO

from ioc.callbacks.base import Callback, Status, TaskView

#: Keys Ansible keeps when it prints a ``debug`` result that has ``msg``.
_DEBUG_ALLOWED = frozenset({"msg", "exception", "warnings", "deprecations"})
_DEBUG_HIDDEN = ("changed", "failed", "skipped", "invocation", "skip_reason",
                 "ansible_loop_var", "ansible_index_var", "ansible_loop")
#: Never printed: ``failed``/``skipped`` are dropped from what callbacks see
#: (Ansible's ``TaskResult.clean_copy``) and the traceback goes to [ERROR].
_NOT_DUMPED = frozenset({"failed", "skipped", "exception", "invocation"})
#: Actions whose failures 2.19 words as "Action failed" rather than "Module failed"
#: (the runner's ``results.CONTROLLER_ACTIONS``: callbacks may not import the runner).
_ACTIONS = frozenset({"fail", "assert", "debug", "set_fact", "meta", "validate_argument_spec",
                      "include_vars", "raw"})

#: ansible-core 2.21's warning of a Jinja constant string holding a template
#: that it templated, and its help texts (a lookup's term, a conditional's);
#: the runner's words (``agentless_runner.templating.CONST_TEMPLATE``).
_CONST_TEMPLATE = "Jinja constant strings should not contain embedded templates. " \
    "This feature will be disabled by default in ansible-core 2.23."
_CONST_TEMPLATE_HELP = (
    "Use inline expressions, for example: `msg: \"{{ lookup('env', '{{ a_var }}') }}\"` "
    "becomes `msg: \"{{ lookup('env', a_var) }}\"`",
    "Use inline expressions, for example: `when: \"{{ a_var }}\" == 42` becomes "
    "`when: a_var == 42`")

#: ansible-core 2.19+'s deprecation of a condition written as one template.
_CONDITIONAL_AS_TEMPLATE = "Conditionals should not be surrounded by templating delimiters " \
    "such as {{ }} or {% %}."

_COLORS = {"ok": "0;32", "changed": "0;33", "error": "0;31", "skip": "0;36",
           "unreachable": "1;31", "warn": "1;35", "banner": "", "debug": "1;30",
           "deprecate": "0;35", "verbose": "0;34"}


class Console(Callback):
    """Prints banners, per-host lines and the PLAY RECAP.

    ``verbosity`` follows ansible-playbook's ``-v`` count: at 1 every result
    is printed as JSON, as ``debug`` results always are. ``source_context``
    renders a task's ``path:line:col`` as the ``Origin:`` line and source
    excerpt that follow a task's ``[ERROR]:`` line (ioc-run passes
    ansible-core's); without it only the ``Origin:`` line is printed.
    """

    columns = 79

    def __init__(self, out: Optional[TextIO] = None, err: Optional[TextIO] = None,
                 verbosity: int = 0, color: Optional[bool] = None,
                 source_context: Optional[Callable[[str], str]] = None,
                 task_error: Optional[Callable[[str, str, str, Optional[str], Optional[str]], str]] = None,
                 error_chain: Optional[Callable[[List[Any], str], str]] = None
                 ) -> None:
        # (None: the streams of the moment, not of import time: ioc-run
        # --persist's daemon gives each run its client's)
        self.out: TextIO = out if out is not None else sys.stdout
        self.err: TextIO = err if err is not None else sys.stderr
        self.verbosity = verbosity
        self._errors: Set[str] = set()
        self._warned: Set[str] = set()
        self._deprecated: Set[str] = set()
        self.color = self.out.isatty() if color is None else color
        self.source_context = source_context or (lambda origin: "Origin: %s" % origin)
        #: (message, task origin, cause origin, "Action"/"Module" when the action's
        #: result carries the error, else None) -> the error with its "caused by"
        #: chain, as Ansible formats it (ioc-run passes ansible-core's); None: no chain.
        self.task_error = task_error
        #: ([(message, origin[, value])] outermost first, task origin) -> the error with its
        #: "caused by" chain, as Ansible formats it; None: no chain.
        self.error_chain = error_chain
        #: The live progress line on the terminal (ioc.callbacks.progress): erased
        #: before each line printed here. None: there is none.
        self.progress: Optional[Any] = None

    # -- plumbing ----------------------------------------------------------

    def _print(self, text: str, color: str = "", stderr: bool = False) -> None:
        if self.color and color and _COLORS.get(color):
            text = "\n".join("\033[%sm%s\033[0m" % (_COLORS[color], line)
                             for line in text.split("\n"))
        stream = self.err if stderr else self.out
        if self.progress is None:
            stream.write(text + "\n")
            stream.flush()
            return
        with self.progress.hidden():
            stream.write(text + "\n")
            stream.flush()

    def banner(self, message: str) -> None:
        message = message.strip()
        stars = "*" * max(self.columns - len(message), 3)
        self._print("\n%s %s" % (message, stars))

    def _verbose(self, result: Dict[str, Any]) -> bool:
        return self.verbosity > 0 or bool(result.get("_ansible_verbose_always"))

    def dump(self, result: Dict[str, Any]) -> str:
        indent = 4 if (result.get("_ansible_verbose_always") or self.verbosity > 2) else None
        shown = {k: v for k, v in result.items()
                 if not k.startswith("_ansible_") and not k.startswith("_ioc_")
                 and k not in _NOT_DUMPED and not (k == "diff" and self.verbosity < 3)}
        return json.dumps(shown, indent=indent, ensure_ascii=False, sort_keys=True,
                          default=str)

    @staticmethod
    def clean(result: Dict[str, Any], task: TaskView) -> Dict[str, Any]:
        """Ansible's ``_clean_results``: debug shows only what it was asked to."""
        if task.action != "debug":
            return result
        if "msg" in result:
            return {k: v for k, v in result.items() if k in _DEBUG_ALLOWED or k.startswith("_")}
        return {k: v for k, v in result.items() if k not in _DEBUG_HIDDEN}

    # -- events --------------------------------------------------------------

    def play_start(self, name: str, hosts: Sequence[str]) -> None:
        self.banner("PLAY [%s]" % name if name else "PLAY")

    def task_start(self, task: TaskView) -> None:
        prefix = "RUNNING HANDLER" if task.is_handler else "TASK"
        self.banner("%s [%s]" % (prefix, task.name))

    def runner_result(self, host: str, task: TaskView, status: Status, result: Dict[str, Any],
                      ignored: bool = False) -> None:
        host = host_label(host, result)
        # (before clean: debug's keeps only what it was asked to show, not "results")
        looped = "results" in result and isinstance(result.get("results"), list)
        if status is Status.OK and task.action in ("include_tasks", "include_role"):
            # The default callback returns from an include's ok before it
            # handles warnings: what its condition or arguments deprecated
            # (a top-level fact read by its when) is never shown.
            return
        raw, changed = result, bool(result.get("changed"))  # (debug's clean drops "changed")
        result = self._warnings(self.clean(result, task))
        if status is Status.OK:
            if looped:
                return
            line = "%s: [%s]" % ("changed" if changed else "ok", host)
            if self._verbose(result):
                line += " => %s" % self.dump(result)
            self._print(line, "changed" if changed else "ok")
        elif status is Status.SKIPPED:
            line = "skipping: [%s]" % host
            if self._verbose(result):
                # (a loop's: without its items, as _process_items deletes them:
                # ``{"changed": false, "msg": "All items skipped"}``)
                line += " => %s" % self.dump({k: v for k, v in result.items()
                                               if not (looped and k == "results")})
            self._print(line, "skip")
        elif status is Status.FAILED:
            if not looped or task.action == "debug":
                if not looped:  # (a loop's result has no error of its own: its items showed theirs)
                    self._error(raw, task)
                self._print("fatal: [%s]: FAILED! => %s" % (host, self.dump(result)), "error")
            if ignored:
                self._print("...ignoring", "skip")
        elif status is Status.UNREACHABLE:
            if not looped:  # (a loop's items showed their errors)
                self._error(raw, task)
            self._print("fatal: [%s]: UNREACHABLE! => %s" % (host, self.dump(result)),
                        "unreachable")
            if ignored:
                self._print("...ignoring", "skip")

    def runner_item(self, host: str, task: TaskView, status: Status, result: Dict[str, Any]) -> None:
        host = host_label(host, result)
        raw, changed = result, bool(result.get("changed"))  # (debug's clean drops "changed")
        result = self.clean(result, task)
        label = item_label(raw)  # (Ansible's item label is kept apart from what clean drops)
        if status is Status.OK and task.action in ("include_tasks", "include_role"):
            return  # an include's items print as its ``included:`` lines
        self._warnings(raw)  # (before the item's line, as the default callback)
        result = self._warnings(result, show=False)
        if status is Status.OK:
            line = "%s: [%s] => (item=%s)" % ("changed" if changed else "ok", host, label)
            if self._verbose(result):
                line += " => %s" % self.dump(result)
            self._print(line, "changed" if changed else "ok")
        elif status is Status.SKIPPED:
            line = "skipping: [%s] => (item=%s) " % (host, label)
            if self._verbose(result):
                line += " => %s" % self.dump(result)
            self._print(line, "skip")
        else:
            self._error(raw, task)
            self._print("failed: [%s] (item=%s) => %s" % (host, label, self.dump(result)), "error")

    def runner_retry(self, host: str, task: TaskView, result: Dict[str, Any]) -> None:
        left = int(result.get("retries", 0)) - int(result.get("attempts", 0))
        line = "FAILED - RETRYING: [%s]: %s (%d retries left)." % (host, task.name, left)
        if self.verbosity > 0:
            line += " Result was: %s" % self.dump(result)
        self._print(line, "warn")

    def runner_async_poll(self, host: str, task: TaskView, result: Dict[str, Any]) -> None:
        self._print("ASYNC POLL on %s: jid=%s started=%s finished=%s" % (
            host, result.get("ansible_job_id"), result.get("started"), result.get("finished")),
            "debug")

    def runner_async_ok(self, host: str, task: TaskView, result: Dict[str, Any]) -> None:
        self._print("ASYNC OK on %s: jid=%s" % (host, result.get("ansible_job_id")), "debug")

    def runner_async_failed(self, host: str, task: TaskView, result: Dict[str, Any]) -> None:
        jid = result.get("ansible_job_id")
        if not jid and isinstance(result.get("async_result"), dict):
            jid = result["async_result"].get("ansible_job_id")
        self._print("ASYNC FAILED on %s: jid=%s" % (host, jid), "debug")

    def on_file_diff(self, host: str, task: TaskView, result: Dict[str, Any]) -> None:
        if result.get("changed") and result.get("diff"):
            text = format_diff(result["diff"])
            if text:
                # Display ends a message with a newline unless it has one
                self._print(text[:-1] if text.endswith("\n") else text)

    def on_notify(self, host: str, handler: TaskView) -> None:
        if self.verbosity > 1:
            self._print("NOTIFIED HANDLER %s for %s" % (handler.name, host))

    def playbook_on_include(self, included: str, hosts: Sequence[str],
                            item: Any = None) -> None:
        label = "" if item is None else " => (item=%s)" % (item,)
        self._print("included: %s for %s%s" % (included, ", ".join(hosts), label), "skip")

    def no_hosts_matched(self) -> None:
        self._print("skipping: no hosts matched", "skip")

    def no_hosts_remaining(self) -> None:
        self.banner("NO MORE HOSTS LEFT")

    def display(self, message: str, verbosity: int) -> None:
        if self.verbosity >= verbosity:
            self._print(message, "verbose")

    def warning(self, message: str) -> None:
        if message in self._warned:
            return  # Ansible's Display shows a warning once per run
        self._warned.add(message)
        self._print("[WARNING]: %s" % message, "warn", stderr=True)

    def stats(self, stats: Any) -> None:
        self.banner("PLAY RECAP")
        for host in sorted(stats.hosts):
            c = stats.summarize(host)
            self._print("%-26s : %s %s %s %s %s %s %s" % (
                host,
                _count("ok", c["ok"]), _count("changed", c["changed"]),
                _count("unreachable", c["unreachable"]), _count("failed", c["failures"]),
                _count("skipped", c["skipped"]), _count("rescued", c["rescued"]),
                _count("ignored", c["ignored"])))
        self._print("")

    def transport_report(self, report: Any) -> None:
        for line in report.lines(verbose=self.verbosity > 0):
            self._print(line)

    def _warnings(self, result: Dict[str, Any], show: bool = True) -> Dict[str, Any]:
        """Shows the result's warnings, then its deprecation warnings; returns it
        without them (the default callback's ``_handle_warnings`` pops them:
        they are not dumped)."""
        if show and result.get("_ioc_deprecations"):
            self._deprecations(result["_ioc_deprecations"])
        for entry in (result.get("_ioc_const_warnings") or ()) if show else ():
            # (2.21's Display shows each while the task runs: before its own;
            # one with a msg: another of its templating's, a value converted
            # for variable storage, which has no help text)
            text = entry.get("msg") or _CONST_TEMPLATE
            if entry.get("origin"):
                text += "\n%s" % self.source_context(entry["origin"])
            if entry.get("msg"):
                self.warning(text + "\n")
            else:
                self.warning("%s\n\n%s\n" % (text,
                                                _CONST_TEMPLATE_HELP[bool(entry.get("conditional"))]))
        if "warnings" not in result:
            if show and result.get("_ioc_conditional_templates"):
                self._conditional_deprecations(result["_ioc_conditional_templates"])
            return {k: v for k, v in result.items() if k != "deprecations"}
        label = result.get("_ioc_label_error") or {}
        markers = {m.get("text"): m.get("origin") for m in result.get("_ioc_marker_warnings") or ()}
        causes: Dict[Any, Dict[str, Any]] = {
            c.get("text"): c["event"] for c in result.get("_ioc_warning_causes") or ()
            if isinstance(c, dict) and isinstance(c.get("event"), dict)}
        for warning in (result.get("warnings") or ()) if show else ():
            if isinstance(warning, str) and warning in causes:
                # a module's warning raised from an error: its chain of causes
                self.warning(_event_text(causes[warning]))
            elif label and warning == label.get("text") and label.get("origin"):
                # the loop_control label the runner could not template: where it is
                self.warning("%s\n%s\n" % (warning, self.source_context(label["origin"])))
            elif isinstance(warning, str) and markers.get(warning):
                # debug's undefined values: where the template that gave them is
                self.warning("%s\n%s\n" % (warning, self.source_context(markers[warning])))
            else:
                self.warning(str(warning))
        if show and result.get("_ioc_conditional_templates"):
            self._conditional_deprecations(result["_ioc_conditional_templates"])
        return {k: v for k, v in result.items() if k not in ("warnings", "deprecations")}

    def _conditional_deprecations(self, conditions: Sequence[Dict[str, Any]]) -> None:
        """The deprecation of each condition written as one template (2.19+'s
        ``evaluate_conditional``), with where it was written when known."""
        for condition in conditions:
            text = "[DEPRECATION WARNING]: %s This feature will be removed from ansible-core " \
                   "version 2.23." % (condition.get("msg") or _CONDITIONAL_AS_TEMPLATE)
            if condition.get("origin"):
                text += "\n%s\n" % self.source_context(condition["origin"])
            if condition.get("help"):  # (ALLOW_BROKEN_CONDITIONALS' deprecation)
                text += "\n%s\n" % condition["help"]
            self.warning("Deprecation warnings can be disabled by setting "
                         "`deprecation_warnings=False` in ansible.cfg.")
            if text not in self._deprecated:
                self._deprecated.add(text)
                self._print(text, "deprecate", stderr=True)

    def _deprecations(self, reads: Sequence[Dict[str, Any]]) -> None:
        """2.21's ``[DEPRECATION WARNING]`` for each deprecated value the task's
        templates read: the tag's words (as the runner gives them), the origin and excerpt of the argument
        that read it, the help text; once per run each (Display dedups)."""
        for read in reads:
            words = read.get("words")
            if not words:
                continue
            msg, version, help_text = words
            text = "[DEPRECATION WARNING]: %s This feature will be removed from ansible-core " \
                   "version %s." % (msg, version)
            if read.get("origin"):
                text += "\n%s\n" % self.source_context(read["origin"])
            text += "\n%s\n" % help_text
            self.warning("Deprecation warnings can be disabled by setting "
                         "`deprecation_warnings=False` in ansible.cfg.")
            if text not in self._deprecated:
                self._deprecated.add(text)
                self._print(text, "deprecate", stderr=True)

    def _error(self, result: Dict[str, Any], task: TaskView) -> None:
        """ansible-core's ``[ERROR]: Task failed:`` block: the message, ``Origin:``
        and the source excerpt, then a blank line; on stdout, as the default
        callback prints it (``display_failed_stderr`` is off by default)."""
        # (a result censored for a no_log template whose value is false: 2.21
        # shows its error, the runner sends it beside the censored result)
        result = result.get("_ioc_uncensored") or result
        if "censored" in result or result.get("_ioc_until_exhausted") or result.get("_ioc_no_error"):
            # (until ran out: Ansible has no error to show, the action did not fail;
            # 2.21's failure of an async job still running when its polls ran out has none)
            return
        # include_vars puts its reason under "message": Ansible then has none
        msg = str(result["msg"]) if "msg" in result else "Unknown error."
        # Whose failure 2.21 names: the module's when the module itself failed
        # (a result of a module, not of one of the controller's own actions).
        module_failed = not (task.action in _ACTIONS or result.get("_ioc_action_failure"))
        captured = None  # "Action"/"Module": whose result carries the error
        if result.get("_ioc_condition_error"):
            # a changed_when/failed_when expression that could not be evaluated: the
            # error is the action's (the module's, had it failed already), whatever msg says
            cause, failed_before = result["_ioc_condition_error"]
            captured = _kind(failed_before and module_failed)
            msg = "Task failed: %s failed: %s" % (captured, cause)
        elif result.get("failed_when_result") is True:
            # The failure is the expression's, whatever the result's own msg; the
            # module's when it had failed already (its exception moved aside).
            msg = "Task failed: %s failed: A 'failed_when' expression evaluated to 'True'." % (
                _kind("failed_when_suppressed_exception" in result and module_failed))
        elif result.get("_ioc_raised") or result.get("unreachable"):
            # the action (or the connection) raised: no "Action failed"
            msg = msg if msg.startswith("Task failed: ") else "Task failed: %s" % msg
        elif not msg.startswith("Task failed: "):
            # a module's or action's own failure; engine-side errors say so already
            msg = "Task failed: %s failed: %s" % (_kind(module_failed), msg)
        # A task Ansible adds itself (Gathering Facts) has no origin: no Origin: lines;
        # an error the controller met (an include's file missing) is shown whole.
        broke = result.get("_ioc_break_when_error")
        loop_error = result.get("_ioc_loop_error") or {}
        if loop_error.get("with") and loop_error.get("plugin"):
            # a with_<lookup> loop's plugin failed: TaskExecutor called it from the
            # expression ``invoke_lookup()``, which has no origin (results._loop_exception)
            text = "[ERROR]: %s\nOrigin: <unknown>\n\ninvoke_lookup()\n" % result.get("msg")
        elif broke:
            # an item's break_when expression that could not be evaluated: its error
            # is the item's own (its module's moved aside), where the expression is
            text = "[ERROR]: %s\n%s\n" % (broke["error"], self.source_context(
                broke.get("origin") or task.location))
        elif "_ioc_error" in result:
            text = "[ERROR]: %s" % result["_ioc_error"]
        elif result.get("_ioc_error_at"):
            # an error the controller met, at a place of its own (where an
            # include_role's missing role was named)
            text = "[ERROR]: %s\n%s\n" % (result.get("msg"),
                                           self.source_context(result["_ioc_error_at"]))
        elif task.implicit:
            text = "[ERROR]: %s" % msg
        elif result.get("_ioc_error_chain") and self.error_chain is not None:
            # an argument that could not be templated: the action's, the argument's
            # and the failing variable's origins
            chain = self.error_chain(list(result["_ioc_error_chain"]), task.location)
            text = "[ERROR]: %s\n" % chain.rstrip("\n")
        elif result.get("_ioc_error_origin") and self.task_error is not None:
            # the engine's error (a when/until/changed_when/failed_when expression's)
            chain = self.task_error(cause if captured else msg, task.location,
                                    result["_ioc_error_origin"], captured,
                                    result.get("_ioc_error_help"))
            text = "[ERROR]: %s\n" % chain.rstrip("\n")  # (a blank line after, as above)
        else:
            text = "[ERROR]: %s\n%s\n" % (msg, self.source_context(task.location))
        if text not in self._errors:  # Display shows an error once per run
            self._errors.add(text)
            self._print(text, "error")


def _kind(module: bool) -> str:
    """How 2.21 names what failed: "Module" or "Action" (``_captured_error_message``)."""
    return "Module" if module else "Action"


def format_diff(diff: Any) -> str:
    """A module's ``diff`` as the default callback prints it (``_get_diff``)."""
    parts = []
    for one in diff if isinstance(diff, list) else [diff]:
        if not isinstance(one, dict):
            continue
        for key, message in (("dst_binary", "diff skipped: destination file appears to be binary"),
                             ("src_binary", "diff skipped: source file appears to be binary"),
                             ("dst_larger", "diff skipped: destination file size is greater than %d"),
                             ("src_larger", "diff skipped: source file size is greater than %d")):
            if one.get(key):
                parts.append((message % one[key] if "%d" in message else message) + "\n")
        if "before" in one and "after" in one:
            before, after = _diff_text(one["before"]), _diff_text(one["after"])
            lines = difflib.unified_diff(
                before.splitlines(True), after.splitlines(True),
                fromfile="before: %s" % one["before_header"] if "before_header" in one else "before",
                tofile="after: %s" % one["after_header"] if "after_header" in one else "after",
                fromfiledate="", tofiledate="", n=3)
            text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                           for line in lines)
            if text:
                parts.append(text + "\n")  # (a blank line after a diff, as Ansible's)
        if one.get("prepared"):
            parts.append(str(one["prepared"]))
    return "".join(parts)


def _diff_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, indent=4) + "\n"


def host_label(host: str, result: Dict[str, Any]) -> str:
    """``h1``, or ``h1 -> h3`` / ``h1 -> h3(10.0.0.3)`` for a delegated result."""
    delegated = result.get("_ansible_delegated_vars")
    if not delegated:
        return host
    target = delegated.get("ansible_delegated_host", host)
    label = "%s -> %s" % (host, target)
    address = delegated.get("ansible_host", target)
    return label if address == target else "%s(%s)" % (label, address)


def item_label(result: Dict[str, Any]) -> Any:
    """``(item=...)`` text: the loop_control label, else the loop variable
    (Ansible's ``_get_item_label``: nothing of a ``no_log`` item)."""
    if result.get("_ansible_no_log"):
        return "(censored due to no_log)"
    if "_ansible_item_label" in result:
        return result["_ansible_item_label"]
    return result.get(result.get("ansible_loop_var", "item"))


def _count(name: str, value: int) -> str:
    return "%s=%-4s" % (name, value)


def _brief(messages: List[str]) -> str:
    """``_event_utils.deduplicate_message_parts``."""
    parts = list(reversed(messages))
    message = parts.pop(0)
    for part in parts:
        message = part if part.endswith(message) else "%s: %s" % (part.rstrip(". "), message)
    return message


def _event_text(event: Dict[str, Any]) -> str:
    """A module's encoded event as 2.21's Display shows it in a warning
    (``_event_formatting.format_event``, without traceback): each link of its
    chain that cannot be collapsed on a line of its own, after the reason
    (``<<< caused by >>>``), the brief message first."""
    def message(one: Dict[str, Any]) -> str:
        text = str(one.get("msg") or "")
        context, help_text = one.get("formatted_source_context"), one.get("help_text")
        if help_text and not context and "\n" not in text and "\n" not in help_text:
            return "%s %s" % (text, help_text)
        lines = [text] + ([context] if context else []) + (["", help_text] if help_text else [])
        return "\n".join(lines)

    segments: List[str] = []
    briefs: List[str] = []
    current: Any = event
    while isinstance(current, dict):
        messages = [str(current.get("msg") or "")]
        chain = current.get("chain")
        while isinstance(chain, dict) and chain.get("follow") \
                and isinstance(chain.get("event"), dict):
            nxt = chain["event"]
            if nxt.get("formatted_source_context") or nxt.get("help_text"):
                if (nxt.get("formatted_source_context"), nxt.get("help_text")) != \
                        (current.get("formatted_source_context"), current.get("help_text")):
                    break
            inner = nxt.get("chain")
            if isinstance(inner, dict) and chain.get("msg_reason") != inner.get("msg_reason"):
                break
            messages.append(str(nxt.get("msg") or ""))
            chain = inner
        briefs.extend(messages)
        segments.append(message(dict(current, msg=_brief(messages))) + "\n")
        if isinstance(chain, dict) and chain.get("follow") and isinstance(chain.get("event"), dict):
            segments.append("\n%s\n\n" % chain.get("msg_reason"))
            current = chain["event"]
        else:
            current = None
    if len(segments) > 1:
        segments.insert(0, _brief(briefs) + "\n\n")
    text = "".join(segments).strip()
    return text + "\n" if "\n" in text else text

