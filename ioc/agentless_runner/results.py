"""Shaping task results the way Ansible's task executor does."""

from ioc.agentless_runner import templating

#: The ``exception`` text of a failure when no traceback is shown (the default).
TRACEBACK_UNAVAILABLE = "(traceback unavailable)"

CENSORED = ("the output has been hidden due to the fact that 'no_log: true' "
            "was specified for this result")


# (the release whose shapes the runner reproduces; in context: the tests read it too)
from ioc.agentless_runner.context import SHAPE, legacy  # noqa: E402,F401


def status_of(result):
    """``unreachable``, ``failed``, ``skipped`` or ``ok`` for one result dict.

    Failed is what ``failed_when`` said when it was evaluated, else
    ``failed`` (ansible-core's ``TaskResult.is_failed``; 2.21's
    ``UnifiedTaskResult.failed``): they differ once ``until`` ran out on a
    result failed_when let pass."""
    if result.get("unreachable"):
        return "unreachable"
    items = result.get("results")
    decided = [item["failed_when_result"] for item in items
               if isinstance(item, dict) and "failed_when_result" in item] \
        if isinstance(items, list) else ()
    if "failed_when_result" in result:
        failed = result["failed_when_result"]
    elif decided:
        failed = any(decided)  # (a loop: as its items' failed_when said)
    else:
        failed = result.get("failed")
    if failed:
        return "failed"
    if result.get("skipped"):
        return "skipped"
    return "ok"


def unreachable_result(msg):
    """What a task that needs its host's connection gives when there is none."""
    return {"changed": False, "msg": msg, "unreachable": True,
            "exception": TRACEBACK_UNAVAILABLE,
            # raised by the engine, not returned by a module (the bridge words it so)
            "_ioc_task_error": True}


#: A failure's ``exception`` as ansible-core records it while tracebacks are
#: off (its default): every failed or unreachable result has one, but a loop's
#: aggregate and a failure that is only ``until`` running out.
NO_TRACEBACK = "(traceback unavailable)"


def with_exception(result):
    """``result`` with the ``exception`` ansible-core gives a failure (what a
    registered value shows), if it has none."""
    if (result.get("failed") or result.get("unreachable")) and "exception" not in result \
            and "results" not in result and not result.get("_ioc_until_exhausted"):
        result["exception"] = NO_TRACEBACK
    return result


#: Actions Ansible runs on the controller: a failure of theirs is the action's
#: (the console's ``_ACTIONS`` is the same set: callbacks may not import the runner).
CONTROLLER_ACTIONS = frozenset({"fail", "assert", "debug", "set_fact", "meta",
                                "validate_argument_spec", "include_vars"})


def with_message(result, action):
    """``result`` with the ``msg`` ansible-core makes for a failure whose action
    gave none (``include_vars`` puts its reason under ``message``, a module may
    say nothing): "Task failed: Module failed: Unknown error." (``Action`` for
    the controller's actions), the text of TaskExecutor's error. Marked
    ``_ioc_msg_made``: the Ansible bridge hands the result on without it, and
    Ansible makes its own."""
    if result.get("failed") and "msg" not in result and "results" not in result \
            and "failed_when_result" not in result and not result.get("_ioc_until_exhausted"):
        kind = "Action" if action in CONTROLLER_ACTIONS or result.get("_ioc_action_failure") \
            else "Module"
        result["msg"] = "Task failed: %s failed: Unknown error." % kind
        result["_ioc_msg_made"] = True
    return result


def failed_result(msg, exception=None, **extra):
    """A failure that did not come from a module (templating, conditionals...)."""
    result = {"failed": True, "msg": msg, "changed": False}
    if exception:
        result["exception"] = exception
    result.update(extra)
    return result


def skipped_result(false_condition):
    """What a task (or item) whose ``when`` was false registers (L2.6, L3.3)."""
    out = {
        "changed": False,
        "failed": False,
        "skipped": True,
        "skip_reason": "Conditional result was False",
        "false_condition": false_condition,
    }
    if legacy():
        del out["failed"]  # 2.19 registers no ``failed`` on a skipped result
    return out


def normalize(result):
    """Fill in the keys every result has: ``changed`` and ``failed`` (ansible-core 2.21
    registers ``failed: false`` on skipped results too), and the ``stdout_lines``/
    ``stderr_lines`` the task executor splits from any ``stdout``/``stderr``."""
    result.setdefault("changed", False)
    for stream in ("stdout", "stderr"):
        if stream in result and stream + "_lines" not in result:
            result[stream + "_lines"] = (result[stream] or "").splitlines() \
                if isinstance(result[stream] or "", str) else []
    if legacy() and result.get("skipped") and not result.get("failed"):
        result.pop("failed", None)
        return result
    result["failed"] = bool(result.get("failed", False))
    return result


def aggregate_loop(results):
    """The registered shape of a looped task from its per-item results (L2.6)."""
    if not results and legacy():
        return {"changed": False, "skipped": True,
                "skipped_reason": "No items in the list", "results": []}
    if not results:
        return {"changed": False, "failed": False, "skipped": True,
                "skip_reason": "No items in the list",
                "skipped_reason": "No items in the list", "results": []}
    failed = any(r.get("failed") for r in results)
    skipped = all(r.get("skipped") for r in results)
    # an unreachable item is not failed: the loop says "All items completed"
    unreachable = any(r.get("unreachable") for r in results)
    if legacy():
        # 2.19: ``skipped`` always, ``failed`` only when true
        out = {"changed": False if skipped else any(r.get("changed") for r in results),
               "results": results, "skipped": skipped}
        if failed:
            out["failed"] = True
        if unreachable:
            out["unreachable"] = True
        out["msg"] = ("One or more items failed" if failed else
                      "All items skipped" if skipped else "All items completed")
        return out
    out = {
        "changed": any(r.get("changed") for r in results),
        "failed": failed,
        "results": results,
    }
    if skipped:
        out["skipped"] = True
        out["changed"] = False
    if unreachable:
        out["unreachable"] = True
    if skipped:
        # (2.21's build_loop_result: all skipped first, even if one failed, as an
        # item whose break_when erred after its ``when`` skipped it)
        out["msg"] = "All items skipped"
    elif failed:
        out["msg"] = "One or more items failed"
    else:
        out["msg"] = "All items completed"
    # 2.21 gathers the items' warnings and deprecations on the loop's result
    for key in ("warnings", "deprecations"):
        gathered = [dict(w) if isinstance(w, dict) else w  # (not the items' own)
                    for r in results for w in (r.get(key) or ())]
        if gathered:
            out[key] = gathered
    return out


def loop_preview(results):
    """2.21's ``_task.loop_result``: the loop's result from the items recorded
    so far (none: all of them skipped, as ``build_loop_result`` has it)."""
    if not results:
        return {"changed": False, "skipped": True, "msg": "All items skipped", "results": []}
    return aggregate_loop(list(results))


#: The keys ansible-core 2.21 puts first in a registered result, in its order
#: (``UnifiedTaskResult.as_result_dict``: its fields as declared, then what the
#: action returned, in the action's order); ``None`` stands for the loop variable
#: and the index variable (named by ``ansible_loop_var``/``ansible_index_var``).
_FIELD_ORDER = ("changed", "failed", "unreachable", "skipped", "warnings", "deprecations",
                "ansible_facts", "async_result", "exception", "finished", "msg", "rc",
                "module_stderr", "module_stdout", "attempts", "retries", "diff",
                "ansible_stats", "ansible_job_id", "skip_reason", "skipped_reason",
                "false_condition", "changed_when_result", "failed_when_result",
                "break_when_result", "changed_when_suppressed_exception",
                "failed_when_suppressed_exception", "break_when_suppressed_exception",
                "ansible_loop_var", "ansible_index_var", None, None, "ansible_loop")
_FIELD_NAMES = frozenset(key for key in _FIELD_ORDER if key is not None)


def fields_set(result):
    """``result`` without the result fields that are None: 2.21 keeps a task's
    result in the fields of its ``UnifiedTaskResult`` (``msg``, ``rc``,
    ``diff``, the loop variable's value...) and ``as_result_dict`` leaves out
    the ones that are None (``debug: msg="{{ none }}"`` registers no ``msg``).
    Other keys keep a None. 2.19: unchanged."""
    if legacy() or not isinstance(result, dict):
        return result
    names = {result.get("ansible_loop_var"), result.get("ansible_index_var")}
    return {key: value for key, value in result.items()
            if value is not None or not (key in _FIELD_NAMES or key in names)}


def ordered(result):
    """``result`` with its keys in the order ansible-core 2.21 registers them
    (a value shown as text, a loop label, shows it): its result fields first,
    then the other keys as they were, a loop's ``results`` last; a field
    that is None left out (:func:`fields_set`). 2.19 keeps the action's
    order: unchanged there."""
    if legacy() or not isinstance(result, dict):
        return result
    result = fields_set(result)
    variables = [result.get("ansible_loop_var"), result.get("ansible_index_var")]
    first = [key if key is not None else variables.pop(0) for key in _FIELD_ORDER]
    out = {key: result[key] for key in first if isinstance(key, str) and key in result}
    out.update((key, value) for key, value in result.items() if key not in out
               and key != "results")
    if "results" in result:
        out["results"] = result["results"]
    return out


def registered(result):
    """What ``register`` keeps of a task's result."""
    out = ordered(public(result))
    if out.get("unreachable") and isinstance(out.get("results"), list) and not legacy():
        # 2.21 registers an unreachable item with failed: false (its line omits it)
        out["results"] = [dict(r, failed=False) if isinstance(r, dict) and r.get("unreachable")
                          else r for r in out["results"]]
    return out


def public(result):
    """The result without internal ``_ansible_*``/``_ioc_*`` keys, as registered."""
    return {k: v for k, v in result.items()
            if not (k.startswith("_ansible_") or k.startswith("_ioc_"))}


#: What a censored result keeps, as ansible-core's ``_task.PRESERVE`` (and
#: ``failed``/``skipped``, which callbacks never print: they carry the status).
#: Not ``_ansible_verbose_always``: a ``no_log`` debug prints no JSON.
_PRESERVED = ("failed", "skipped", "attempts", "retries", "warnings", "deprecations")


def censor(result, no_log=True):
    """What callbacks may see of a ``no_log`` result.

    ``no_log`` false: censored only because the task the callbacks are given
    still holds a templated ``no_log`` whose value is false (2.21, see
    ``unvalidated_no_log``): the result then carries no ``_ansible_no_log``
    (as Ansible's, whose result no_log is ``False or None``), so a loop item
    shows neither "(censored due to no_log)" nor its label: ``(item=None)``.
    """
    marked = no_log or result.get("_ansible_no_log") is True
    out = {"censored": CENSORED, "changed": bool(result.get("changed"))}
    if marked:
        out["_ansible_no_log"] = True  # as Ansible's: a loop item's label says it is censored
    for key in _PRESERVED:
        if key in result:
            out[key] = result[key]
    if "_ansible_delegated_vars" in result:
        # (the host label's: Ansible's comes from the task's delegate_to, never censored)
        out["_ansible_delegated_vars"] = result["_ansible_delegated_vars"]
    if "results" in result:
        out["results"] = [censor(r, no_log) for r in result["results"]]
    return out


#: ansible-core 2.21's deprecated values, by the name the runner records a read
#: of one under: (message, removed in version, help text), as its tags say.
DEPRECATED_VALUES = {
    "facts": ("INJECT_FACTS_AS_VARS default to `True` is deprecated, top-level facts will not "
              "be auto injected after the change.", "2.24",
              "Use `ansible_facts[\"fact_name\"]` (no `ansible_` prefix) instead."),
    "play_hosts": ("The `play_hosts` magic variable is deprecated.", "2.23",
                   "Use `ansible_play_batch` instead."),
    "skipped_reason": ("The 'skipped_reason' value is deprecated.", "2.24",
                       "Use 'skip_reason' instead."),
    "vars": ("The internal \"vars\" dictionary is deprecated.", "2.24",
             "Use the `vars` and `varnames` lookups instead."),
}


def _deprecation(msg, version):
    """One entry of a registered ``deprecations``, as ansible-core's
    ``deprecation_as_dict`` and its deprecator make it (their key order)."""
    return {"msg": msg, "collection_name": "ansible.builtin", "version": version,
            "deprecator": {"resolved_name": "ansible.builtin", "type": None}}


def read_deprecations(result, notices):
    """Record in ``result``'s ``deprecations`` each deprecated value read while
    it was made (``notices``: the names of :data:`DEPRECATED_VALUES`), as 2.21's
    task result records what its ``DeferredWarningContext`` captured, whether
    or not deprecation warnings are shown. 2.19 records none."""
    if legacy():
        return
    entries = [_deprecation(*DEPRECATED_VALUES[n][:2]) for n in notices
               if n in DEPRECATED_VALUES]
    if entries:
        result["deprecations"] = list(result.get("deprecations") or ()) + entries


def unvalidated_no_log(raw, result, task_level, looped):
    """Whether ansible-core 2.21's callbacks censor ``result`` for a ``no_log``
    that is no literal boolean (``raw``, as written: a template), whatever
    value it templates to.

    2.21's ``CallbackTaskResult.result`` censors on ``task.no_log or
    utr.no_log``, ``task`` being the one the worker ran. ``no_log`` gets its
    value only in ``Task.post_validate``, which ``TaskExecutor._execute_internal``
    reaches after ``when``: a task (or a loop item's copy of it, ``loop_item_context``)
    that its ``when`` skipped keeps the template, as does one that failed before
    (``when`` or ``delegate_to`` could not be templated: ``_ioc_unvalidated``),
    and a loop's own task, whose items run on copies (``_run_loop``). A template is a non-empty
    string: true. ``Base.update_result_no_log`` does template it for the
    result (``utr.no_log``), so a false one leaves the result unmarked
    (``censor(..., no_log=False)``). 2.19 censors on a literal boolean only
    (``isinstance(task.no_log, bool)``): ``legacy()`` never gets here.
    """
    if isinstance(raw, bool) or not raw or legacy():
        return False
    if task_level and looped:
        return True
    return bool(result.get("_ioc_unvalidated")) or \
        bool(result.get("skipped")) and "false_condition" in result


def templated_conditionals(result, found):
    """The deprecation ansible-core 2.19+ records in a task's result for each
    condition written as one template whose value was no text, or whose result
    was no boolean with ``ALLOW_BROKEN_CONDITIONALS`` (registered as its
    ``deprecations``); ``_ioc_conditional_templates`` says which condition each
    is about, where it was written (the consoles show its origin), and its
    words and help text (none: the first kind's)."""
    deprecations = list(result.get("deprecations") or [])
    for _, _, message in found:
        deprecations.append(_deprecation(message or templating.CONDITIONAL_AS_TEMPLATE, "2.23"))
    result["deprecations"] = deprecations
    mark_conditional_templates(result, found)


def mark_conditional_templates(result, found):
    """Say which condition each deprecation of a condition in ``result`` is
    about (written as one template, or giving no boolean with
    ``ALLOW_BROKEN_CONDITIONALS``), where it was written, and its words and
    help text (none: the first kind's), in their order."""
    result["_ioc_conditional_templates"] = [
        {"text": text, "origin": origin, "msg": message,
         "help": templating.BROKEN_CONDITIONAL_ALLOWED if message else None}
        for text, origin, message in found]
