"""Task results between ioc and Ansible, in the shapes each ansible-core release uses.

**ioc → Ansible** (:func:`task_result`): a result the runner reported (a
plain dict) becomes the object Ansible's callbacks receive from the linear
strategy — on 2.21 a ``HostTaskResult`` around a ``UnifiedTaskResult``
(built with ``from_action_result_dict``/``from_module_result_dict``, the
error wording ``TaskExecutor`` gives a failure, loop items as
``loop_results``, what a dynamic include included as fields); on 2.19/2.20
a ``_RawTaskResult`` over the dict as that release's ``TaskExecutor`` leaves
it (``include``/``include_args`` keys, its error wording per loop item, its
retry counts). A failure of the connection before the task ran (a failed
become, ``_ioc_task_error``) is worded as ``TaskExecutor`` words an
``AnsibleError`` its connection raised.

**Ansible → ioc** (:func:`outcome`): a result of a task Ansible ran for the
dispatcher becomes the outcome the dispatcher applies (status, ignored,
changed, the public result), plus what a rescue gets as
``ansible_failed_result``/``ansible_failed_task``.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ioc.agentless_runner.results import DEPRECATED_VALUES, NO_TRACEBACK
from ioc.agentless_runner.templating import (CONDITIONAL_AS_TEMPLATE, CONST_TEMPLATE,
                                             CONST_TEMPLATE_HELP)
from ioc.ansible.convert import BRIDGE_INCLUDES
from ioc.ansible.errors import _origin, engine_exception
from ioc.model import Location
from ioc.ansible.values import plain

#: Stands for the action of a result the runner marked as an action plugin's own
#: failure (``_ioc_action_failure``: its half of dnf, package, unarchive, ...).
ACTION_FAILURE = "<action plugin>"
#: Results of these are "Action failed", not "Module failed" (as ioc's console says).
_ACTIONS = frozenset({"fail", "assert", "debug", "set_fact", "meta", "include_vars", "raw",
                      "add_host", "group_by", "pause", "gather_facts", "validate_argument_spec",
                      ACTION_FAILURE})


def outcome(ansible_result: Any) -> Tuple[str, Dict[str, Any], Any, Any]:
    """(host, outcome, Ansible's own result dict, the failed task as linear saves it).

    The last two are what linear gives a rescue as ``ansible_failed_result``
    and ``ansible_failed_task`` (2.21: ``dump_attrs()``, 2.19: ``serialize()``).
    """
    utr = getattr(ansible_result, "utr", None)
    task = ansible_result.task
    if utr is not None:  # ansible-core 2.21: HostTaskResult
        failed, unreachable = bool(utr.failed), bool(utr.unreachable)
        skipped, changed = bool(utr.skipped), bool(utr.changed)
        ignored = bool(utr.ignore_errors) if failed else \
            bool(utr.ignore_unreachable) if unreachable else False
        raw = utr.as_result_dict()
        failed_task = task.dump_attrs()
    else:  # 2.19/2.20: _RawTaskResult, the task's own keywords decide (as their strategy)
        failed, unreachable = ansible_result.is_failed(), ansible_result.is_unreachable()
        skipped, changed = ansible_result.is_skipped(), ansible_result.is_changed()
        ignored = bool(task.ignore_errors) if failed else \
            bool(task.ignore_unreachable) if unreachable else False
        raw = ansible_result._return_data
        failed_task = task.serialize()
    status = "failed" if failed else "unreachable" if unreachable else \
        "skipped" if skipped else "ok"
    result = {k: v for k, v in plain(raw or {}).items() if not str(k).startswith("_ansible_")}
    return plain(ansible_result.host.name), {"status": status, "ignored": ignored,
                                             "changed": changed, "result": result}, \
        raw, failed_task


def task_result(host: Any, task: Any, result: Dict[str, Any], action: str, status: str,
                ignored: bool = False, retry: bool = False, item: bool = False) -> Any:
    """A task result as Ansible's callbacks receive it, for this ansible-core.

    A dynamic include's result (and each of its loop items') also says what
    it included, as TaskExecutor's does: ``IncludedFile.process_include_results``
    reads it (``include``/``include_args`` keys on 2.19, fields on 2.21).
    """
    data = _public(result)
    if status == "unreachable" and task.ignore_unreachable is not ignored:
        task = _post_validated(task, ignore_unreachable=ignored)
    keyword = result.get("_ioc_error_keyword")
    if isinstance(keyword, list) and keyword and keyword[0] != "environment":
        keyword = list(keyword[:3]) + [host]  # (the host's own variables name the value's origin)
    if result.get("_ioc_conditional_templates") and isinstance(data.get("deprecations"), list):
        data["deprecations"] = _conditional_deprecations(task, data["deprecations"],
                                                         result["_ioc_conditional_templates"])
    if result.get("_ioc_const_warnings"):
        data["warnings"] = _const_warnings(task, result["_ioc_const_warnings"]) \
            + list(data.get("warnings") or [])
    if result.get("_ioc_marker_warnings") and isinstance(data.get("warnings"), list):
        data["warnings"] = _marker_warnings(task, data["warnings"],
                                            result["_ioc_marker_warnings"], host)
    if result.get("_ioc_warning_causes") and isinstance(data.get("warnings"), list):
        data["warnings"] = _caused_warnings(data["warnings"], result["_ioc_warning_causes"])
    include = action in BRIDGE_INCLUDES
    if status == "failed":
        data.setdefault("failed", True)
    elif status == "skipped":
        data.setdefault("skipped", True)
    elif status == "unreachable":
        data.setdefault("unreachable", True)
    try:
        from ansible._internal import _task
        from ansible._internal._task import HostTaskResult
    except ImportError:  # ansible-core 2.19/2.20
        if isinstance(data.get("warnings"), list):
            data["warnings"] = _warning_summaries_219(data["warnings"])
        if result.get("_ioc_loop_error") and status == "failed":
            data = _loop_error_219(task, data, result["_ioc_loop_error"])
        elif result.get("_ioc_task_error") and status in ("failed", "unreachable"):
            data = _engine_error_219(task, data, _error_object(task, result),
                                     result.get("_ioc_error_help"), keyword,
                                     _error_argument(result))
        elif result.get("_ioc_raised") and status == "failed":
            data = _action_fail_219(task, data)
        if include:
            _include_keys_219(result, data, action, item, task)
        _uncaught_exception_219(data, result)
        _mark_engine_failures_219(data, result)
        if result.get("_ioc_action_failure"):
            action = ACTION_FAILURE  # worded as an action plugin's own failure
            if isinstance(data.get("msg"), list):
                data["msg"] = tuple(data["msg"])  # as the plugin made it (dnf's is a tuple)
        return _raw_task_result(host, task, data, action, status, retry)
    utr_class = _task.UnifiedTaskResult
    items = data.pop("results", None) if task.loop is not None or task.loop_with else None
    engine = bool(result.get("_ioc_task_error")) and status in ("failed", "unreachable")
    raised = bool(result.get("_ioc_raised")) and status == "failed"
    loop_error = result.get("_ioc_loop_error") if status == "failed" else None
    if loop_error:
        # The loop's items could not be had: TaskExecutor.run's result of the error.
        utr = utr_class._create_from_exception(_loop_exception(task, data, loop_error),
                                               source_is_module=False)
    elif engine:
        # The connection failed before the task ran (become): TaskExecutor's words.
        utr = _engine_error(utr_class, task, data, _error_object(task, result),
                            _error_argument(result), keyword,
                            result.get("_ioc_error_help"))
    elif raised:
        # The action plugin raised AnsibleActionFail (an argument its spec refuses).
        utr = _action_fail(utr_class, task, data)
    elif result.get("_ioc_action_failure"):
        # An action plugin's own failure (the runner's half of dnf, package, ...):
        # "Action failed", its msg as the plugin made it (dnf's is a tuple).
        if isinstance(data.get("msg"), list):
            data["msg"] = tuple(data["msg"])
        utr = utr_class.from_action_result_dict(data)
        if result.get("_ioc_no_error"):
            # TaskExecutor's own failure of an async job its polls did not see end:
            # a new result that carries no error (no [ERROR] line)
            utr.exception = None
    else:
        # (an item's break_when error comes after TaskExecutor._execute's words, below)
        utr = _utr_after(utr_class, task, data, result, action, broken=False)
    if (engine or raised or loop_error) and data.get("warnings") and not utr.warnings:
        # what templating displayed while the task ran (a constant's embedded
        # template), shown before the error as 2.21's Display shows it
        utr._extend_warnings(_task._convert_warnings(data["warnings"]))
    if include:
        _include_fields(utr, result, action, task)
    if isinstance(items, list):
        given = result.get("results")
        raw_items: List[Any] = list(given) if isinstance(given, list) else []
        raw_items += [{}] * (len(items) - len(raw_items))
        utr.loop_results = [_utr_after(utr_class, task, dict(item), raw, action)
                            if isinstance(item, dict) else item
                            for item, raw in zip(items, raw_items)]
        if include:
            for index, (raw, item_utr) in enumerate(zip(result.get("results") or (),
                                                        utr.loop_results)):
                if isinstance(raw, dict):
                    _include_fields(item_utr, raw, action, task, index)
    elif items is not None:
        utr.result_data["results"] = items
    if isinstance(items, list):
        # 2.21 builds a loop's overall result from its items: it has no error of its own.
        utr.exception = None
    elif utr.failed and utr.exception and not engine and not raised and not loop_error and \
            (data.get("msg") or result.get("_ioc_conditions") or action == "include_vars"
             or result.get("_ioc_module_exception") or result.get("_ioc_msg_made")):
        # As TaskExecutor._execute words it: "Task failed: <...>" with the task's origin.
        from ansible.errors import AnsibleTaskError

        try:
            try:
                utr.maybe_raise_on_result()
            except Exception as ex:
                raise AnsibleTaskError(obj=task.get_ds()) from ex
        except AnsibleTaskError as atex:
            utr = utr_class._create_from_exception(atex, accept_result_contribution=True,
                                                   source_is_module=False)
    if result.get("_ioc_break_when_error") and not (loop_error or engine or raised):
        _break_when_error(utr, task, result["_ioc_break_when_error"])
    if result.get("_ioc_label_error"):
        _label_warnings([utr] + list(utr.loop_results or ()), task, result["_ioc_label_error"])
    if result.get("_ioc_deprecations"):
        utr._extend_deprecations(_deprecations(task, result["_ioc_deprecations"]))
    utr.ignore_errors = ignored
    return HostTaskResult(host=host, task=task, utr=utr)


def _post_validated(task: Any, **fields: Any) -> Any:
    """A copy of ``task`` with ``fields`` as the worker's post-validated task has
    them (linear's strategy rebuilds the result's task from the worker's task
    fields): the default callback reads ``result.task.ignore_unreachable``
    ("...ignoring"), a templated or looped value decided by the runner."""
    copy = task.copy(exclude_parent=True, exclude_tasks=True)
    copy._parent = task._parent
    for name, value in fields.items():
        setattr(copy, name, value)
    return copy


def _label_warnings(utrs: List[Any], task: Any, error: Mapping[str, Any]) -> None:
    """2.21: the runner's warning that the loop_control label could not be
    templated, as ``TaskContext._populate_item_label`` gives it
    (``display.error_as_warning`` with the label's origin and excerpt)."""
    from ansible._internal._errors import _error_factory, _error_utils
    from ansible.errors import AnsibleError
    from ansible.module_utils._internal import _errors, _messages

    label = getattr(getattr(task, "loop_control", None), "label", None)
    context = _error_utils.SourceContext.from_value(label)
    cause = _error_factory.ControllerEventFactory.from_exception(
        AnsibleError(error.get("error")), False)
    warning = _messages.WarningSummary(event=_messages.Event(
        msg="Failed to template loop_control label.",
        formatted_source_context=str(context) if context else None,
        chain=_messages.EventChain(
            msg_reason=_errors.MSG_REASON_DIRECT_CAUSE,
            traceback_reason=_errors.TRACEBACK_REASON_EXCEPTION_DIRECT_WARNING, event=cause)))
    for utr in utrs:
        if utr._warnings:
            utr._warnings = [warning if getattr(w, "event", None) is not None and
                             w.event.msg == error.get("text") else w for w in utr._warnings]


def _const_warnings(task: Any, entries: List[Mapping[str, Any]]) -> List[Any]:
    """The warning ansible-core 2.21's templating gives of each Jinja constant
    string holding a template that it templated (the runner's
    ``_ioc_const_warnings``), with where the template it is in was written
    (the task's own tagged text, else the origin the runner knew) and the help text of a conditional's or of a lookup's term; an entry with a
    ``msg`` is that other warning of 2.19+'s templating (a value converted for
    variable storage: "Type 'GroupTuple' is unsupported ..."), no help; shown before
    the task's own warnings, as 2.21's Display shows them while the task runs."""
    from ansible._internal._errors import _error_utils
    from ansible.module_utils._internal import _messages

    from ansible._internal._datatag._tags import Origin

    out: List[Any] = []
    for entry in entries:
        written = _condition_text(task, entry.get("text"))
        if written is not None and Origin.is_tagged_on(written):
            context = _error_utils.SourceContext.from_value(written)
        else:
            origin = _origin(Location.parse(entry["origin"])) if entry.get("origin") else None
            context = _error_utils.SourceContext.from_origin(origin) if origin is not None else None
        out.append(_messages.WarningSummary(event=_messages.Event(
            msg=entry.get("msg") or CONST_TEMPLATE,
            formatted_source_context=str(context) if context else None,
            help_text=None if entry.get("msg") else
            CONST_TEMPLATE_HELP[bool(entry.get("conditional"))])))
    return out


def _condition_text(task: Any, text: Any) -> Any:
    """The task's own argument or condition (when, changed_when, failed_when,
    until) whose text, stripped as a condition is, is ``text``; None if none."""
    found = _argument(task, text, stripped=True)
    if found is not None or not isinstance(text, str):
        return found
    for conditions in (getattr(task, "changed_when", None), getattr(task, "failed_when", None)):
        for condition in conditions if isinstance(conditions, list) else [conditions]:
            if isinstance(condition, str) and condition.strip() == text:
                return condition
    return None


def _marker_warnings(task: Any, warnings: List[Any], markers: List[Mapping[str, Any]],
                     host: Any = None) -> List[Any]:
    """``warnings`` with each of debug's "Encountered N template error(s)." (the
    runner's ``_ioc_marker_warnings``) as ``ReplacingMarkerBehavior.emit_warnings``
    makes it: a warning about the template the undefined values came from,
    which names where that template was written."""
    from ansible._internal._errors import _error_utils
    from ansible.module_utils._internal import _messages

    summaries: Dict[Any, Any] = {}
    for marker in markers:
        source = _template_source(task, marker.get("var"), marker.get("template"))
        if marker.get("var") is None:
            source = _loop_item_source(task, host, marker.get("template")) or source
        context = _error_utils.SourceContext.from_value(source) if source is not None else None
        summaries.setdefault(marker.get("text"), _messages.WarningSummary(event=_messages.Event(
            msg=str(marker.get("text")),
            formatted_source_context=str(context) if context else None)))
    return [summaries.get(w, w) if isinstance(w, str) else w for w in warnings]


def _warning_summaries_219(warnings: List[Any]) -> List[Any]:
    """2.19/2.20: a result's warnings as its callbacks read them, each a
    ``WarningSummary`` (``TaskExecutor._apply_task_result_compat`` makes one
    of each text an action returned; the default callback fails on text)."""
    from ansible.module_utils._internal import _messages

    return [w if isinstance(w, _messages.WarningSummary)
            else _messages.WarningSummary(event=_messages.Event(msg=str(w))) for w in warnings]


def _caused_warnings(warnings: List[Any], causes: List[Mapping[str, Any]]) -> List[Any]:
    """``warnings`` with each a module raised from an error (``error_as_warning``:
    the runner's ``_ioc_warning_causes``) as the module's ``WarningSummary``,
    its event and chain of causes as the module encoded them: the console
    shows them in full."""
    from ansible.module_utils._internal import _messages

    def event_of(data: Mapping[str, Any]) -> Any:
        chain = data.get("chain")
        return _messages.Event(
            msg=str(data.get("msg") or ""),
            formatted_source_context=data.get("formatted_source_context"),
            formatted_traceback=data.get("formatted_traceback"),
            help_text=data.get("help_text"),
            chain=_messages.EventChain(
                msg_reason=str(chain.get("msg_reason") or ""),
                traceback_reason=str(chain.get("traceback_reason") or ""),
                event=event_of(chain.get("event") or {}),
                follow=bool(chain.get("follow", True))) if isinstance(chain, Mapping) else None,
            events=tuple(event_of(e) for e in data.get("events") or ()
                         if isinstance(e, Mapping)) or None)

    summaries = {cause.get("text"): _messages.WarningSummary(event=event_of(cause["event"]))
                 for cause in causes if isinstance(cause.get("event"), Mapping)}
    return [summaries.get(w, w) if isinstance(w, str) else w for w in warnings]


def _conditional_deprecations(task: Any, deprecations: List[Any],
                              conditions: List[Mapping[str, Any]]) -> List[Any]:
    """``deprecations`` whose entries the runner made, one per condition it found
    written as a template, in their order (a loop's among its items' other
    deprecations), are the deprecation ``evaluate_conditional`` gives
    (``_display.deprecated(obj=conditional)``): ansible-core's words, with
    where the condition was written (the task's own tagged text, else the
    origin the runner knew)."""
    summaries = iter(_conditional_summaries(task, conditions))
    # (a condition written as a template, or one that gave no boolean with
    # ALLOW_BROKEN_CONDITIONALS: the runner's entry carries the condition's words)
    words = {condition.get("msg") or CONDITIONAL_AS_TEMPLATE for condition in conditions}
    return [next(summaries) if isinstance(entry, dict)
            and entry.get("msg") in words else entry
            for entry in deprecations]


def _conditional_summaries(task: Any, conditions: List[Mapping[str, Any]]) -> List[Any]:
    from ansible._internal._errors import _error_utils
    from ansible.module_utils._internal import _deprecator, _messages

    own: List[Any] = []
    for condition in conditions:
        written = _written_text(task, condition.get("text"))
        context = _error_utils.SourceContext.from_value(written) if written is not None else None
        origin = _origin(Location.parse(condition["origin"])) if condition.get("origin") else None
        if context is None and origin is not None:
            context = _error_utils.SourceContext.from_origin(origin)
        own.append(_messages.DeprecationSummary(
            event=_messages.Event(msg=condition.get("msg") or CONDITIONAL_AS_TEMPLATE,
                                  formatted_source_context=str(context) if context else None,
                                  help_text=condition.get("help")),
            version="2.23", deprecator=_deprecator.ANSIBLE_CORE_DEPRECATOR))
    return own


def _written_text(task: Any, text: Any) -> Any:
    """The task's own origin-tagged ``text``: one of its arguments or keywords
    (:func:`_argument`), else a value in its or its blocks' vars (a list of
    conditions assert's ``that`` names)."""
    from ansible._internal._datatag._tags import Origin

    found = _argument(task, text)
    if found is not None and Origin.is_tagged_on(found):
        return found
    control = getattr(task, "loop_control", None)
    for conditions in (getattr(task, "changed_when", None), getattr(task, "failed_when", None),
                       getattr(control, "break_when", None) if control is not None else None):
        for condition in conditions if isinstance(conditions, list) else [conditions]:
            if isinstance(condition, str) and condition == text \
                    and Origin.is_tagged_on(condition):
                return condition
    holder = task
    while holder is not None:
        found = _equal_text(getattr(holder, "vars", None) or {}, text)
        if found is not None:
            return found
        holder = getattr(holder, "_parent", None)
    return None


def _template_source(task: Any, variable: Any, template: Any) -> Any:
    """The task's own (origin-tagged) text of ``template``: debug's ``var`` when
    ``variable`` is None, else the first equal text in the raw value of
    ``variable`` (the task's and its blocks' vars, its role's, the play's)."""
    from ansible._internal._datatag._tags import Origin

    if variable is None:
        candidates = [(getattr(task, "args", None) or {}).get("var")]
    else:
        candidates = _written_variable(task, variable)
    for candidate in candidates:
        pending = [candidate]
        while pending:
            value = pending.pop(0)
            if isinstance(value, str):
                if (variable is None or value == template) and Origin.is_tagged_on(value):
                    return value
            elif isinstance(value, Mapping):
                pending[:0] = list(value.values())
            elif isinstance(value, (list, tuple)):
                pending[:0] = list(value)
    return None


_BARE_NAME = re.compile(r"^\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$")


def _loop_item_source(task: Any, host: Any, template: Any) -> Any:
    """debug's ``var`` written as the loop variable (``var={{ item }}``) of a
    loop over one variable (``loop: '{{ names }}'``): the item of that
    variable's value equal to ``template``, with its origin tag (Ansible's
    templated ``var`` is the item itself, tagged where it was written); None
    otherwise."""
    from ansible._internal._datatag._tags import Origin

    written = (getattr(task, "args", None) or {}).get("var")
    control = getattr(task, "loop_control", None)
    loop_var = getattr(control, "loop_var", None) or "item"
    var_name = _BARE_NAME.match(written.strip()) if isinstance(written, str) else None
    loop_name = _BARE_NAME.match(task.loop.strip()) if isinstance(task.loop, str) else None
    manager = getattr(task, "_variable_manager", None)
    if var_name is None or var_name.group(1) != loop_var or loop_name is None \
            or manager is None or host is None or not isinstance(template, str):
        return None
    variables = manager.get_vars(play=_play_of(task), host=host, task=task)
    items = variables.get(loop_name.group(1))
    for item in items if isinstance(items, list) else ():
        if isinstance(item, str) and item == template and Origin.is_tagged_on(item):
            return item
    return None


def _deprecations(task: Any, reads: List[Mapping[str, Any]]) -> List[Any]:
    """2.21's deprecation warnings for the deprecated values the task's templates
    read (the runner's ``_ioc_deprecations``), as ``DeprecatedAccessAuditContext``
    makes them: the tag's words, with the origin of the argument that read it."""
    from ansible._internal._datatag._tags import Origin
    from ansible._internal._errors import _error_utils
    from ansible.module_utils._internal import _messages
    from ansible.vars import manager

    from ansible.module_utils._internal import _deprecator
    from ansible.module_utils._internal._datatag._tags import Deprecated

    tags = {"facts": getattr(manager, "_DEPRECATE_TOP_LEVEL_FACT_TAG", None),
            "play_hosts": getattr(manager.VariableManager, "_PLAY_HOSTS_DEPRECATED_TAG", None),
            "vars": getattr(manager, "_DEPRECATE_VARS", None)}
    core = getattr(_deprecator, "ANSIBLE_CORE_DEPRECATOR", None)  # (2.19 has none)
    if core is not None:  # UnifiedTaskResult.set_skipped's deprecate_value (no tag of its own)
        msg, version, help_text = DEPRECATED_VALUES["skipped_reason"]
        tags["skipped_reason"] = Deprecated(msg=msg, help_text=help_text, version=version,
                                            deprecator=core)
    out = []
    for read in reads:
        tag = tags.get(str(read.get("n")))
        if tag is None:
            continue
        args = getattr(task, "args", None) or {}
        template = args.get(read["arg"]) if read.get("arg") else None
        msg = tag.msg
        context = None
        if template is not None and Origin.is_tagged_on(template):
            context = _error_utils.SourceContext.from_value(template)
        elif read.get("origin") and _origin(Location.parse(read["origin"])) is not None:
            # (a condition's: the runner names where it was written)
            context = _error_utils.SourceContext.from_origin(_origin(Location.parse(read["origin"])))
        elif isinstance(template, str):
            msg = "While processing %r: %s" % (template, tag.msg)  # (as 2.21 without an origin)
        out.append(_messages.DeprecationSummary(
            event=_messages.Event(msg=msg, help_text=tag.help_text,
                                  formatted_source_context=str(context) if context else None,
                                  formatted_traceback=tag.formatted_traceback),
            version=tag.version, date=tag.date, deprecator=tag.deprecator))
    return out


#: The messages of the deprecations the runner registers for deprecated values read.
_READ_DEPRECATIONS = frozenset(words[0] for words in DEPRECATED_VALUES.values())


def _without_read_deprecations(data: Dict[str, Any]) -> Dict[str, Any]:
    """``data`` without the deprecations the runner registered for deprecated
    values its templates read: the callbacks get Ansible's own, with where
    the read was written (``_ioc_deprecations``, shown once for the task)."""
    deprecations = data.get("deprecations")
    if not isinstance(deprecations, list):
        return data
    kept = [d for d in deprecations
            if not (isinstance(d, dict) and d.get("msg") in _READ_DEPRECATIONS)]
    if len(kept) == len(deprecations):
        return data
    data = dict(data)
    if kept:
        data["deprecations"] = kept
    else:
        del data["deprecations"]
    return data


def _public(result: Dict[str, Any]) -> Dict[str, Any]:
    """``result`` without ioc's internal keys (its loop items' too), the ``msg``
    the runner made for a failure that had none, and without
    the ``exception`` text the runner registers for a failure (Ansible makes
    its own error summary for the callbacks from the failure itself)."""
    def public(one: Dict[str, Any]) -> Dict[str, Any]:
        made = one.get("_ioc_msg_made")  # (Ansible makes that msg itself)
        return {k: v for k, v in one.items()
                if not k.startswith("_ioc_") and not (made and k == "msg")}

    data = _without_read_deprecations(public(result))
    if data.get("exception") == NO_TRACEBACK:
        del data["exception"]  # (a loop's items keep theirs: callbacks see them as registered)
    if isinstance(data.get("results"), list):
        data["results"] = [_without_read_deprecations(public(item))
                           if isinstance(item, dict) else item for item in data["results"]]
    return data


def _include_target(raw: Mapping[str, Any], action: str, task: Any = None,
                    index: Optional[int] = None) -> Tuple[Optional[str], Dict[str, Any]]:
    """(file, arguments) a runner's include result names, as TaskExecutor splits them.

    Each text argument carries the origin Ansible's templating gives it
    (:func:`_templated_origin`): an error loading the include (a role that
    does not exist) names where its value was written. ``index``: the loop
    item's position, when ``raw`` is one item's result."""
    written = (getattr(task, "args", None) or {}) if task is not None else {}
    item = _written_item(task, raw, index) if task is not None else None
    args = {k: _templated_origin(task, v, written.get(k), item)
            for k, v in (raw.get("_ioc_include_args") or {}).items()}
    if action == "include_tasks":
        name = args.pop("_raw_params", None)
        return (name if name is not None else raw.get("_ioc_included")), args
    return None, args


_BARE_VARIABLE = re.compile(r"^\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$")


def _templated_origin(task: Any, value: Any, template: Any, item: Any) -> Any:
    """Text ``value`` (``template`` templated) with the origin Ansible's templating
    gives it: a value taken whole from a variable keeps the origin of where that
    was written (``_post_render_mutation``), any other has the template's.

    The value's own text is found by equality: ``template`` itself (a literal),
    a text of the loop ``item`` as written (``{{ item }}``, ``{{ item.name }}``),
    the written value of the variable a bare ``{{ name }}`` names."""
    from ansible._internal._datatag._tags import Origin

    if not isinstance(value, str) or not isinstance(template, str):
        return value
    if template == value:
        return template
    bare = _BARE_VARIABLE.match(template)
    for source in [item] + (_written_variable(task, bare.group(1)) if bare else []):
        found = _equal_text(source, value)
        if found is not None:
            return found
    origin = Origin.get_tag(template)
    return origin.tag(value) if origin is not None else value


def _equal_text(source: Any, text: str) -> Any:
    """The first origin-tagged text equal to ``text`` in ``source`` (breadth first)."""
    from ansible._internal._datatag._tags import Origin

    pending = [source]
    while pending:
        value = pending.pop(0)
        if isinstance(value, str):
            if value == text and Origin.is_tagged_on(value):
                return value
        elif isinstance(value, Mapping):
            pending.extend(value.values())
        elif isinstance(value, (list, tuple)):
            pending.extend(value)
    return None


def _written_item(task: Any, raw: Mapping[str, Any], index: Optional[int]) -> Any:
    """The loop item of result ``raw`` as written (origin-tagged): the ``index``th
    of the task's ``loop`` list, or of the written value of the variable a bare
    ``loop: "{{ name }}"`` names, when it equals the item the runner looped
    over; None when it was not written so (a lookup, a filter)."""
    loop_var = raw.get("ansible_loop_var")
    if not loop_var or index is None or loop_var not in raw:
        return None
    if getattr(task, "loop_with", None):
        return None
    loop = getattr(task, "loop", None)
    lists = [loop] if isinstance(loop, list) else []
    bare = _BARE_VARIABLE.match(loop) if isinstance(loop, str) else None
    if bare:
        lists += [v for v in _written_variable(task, bare.group(1)) if isinstance(v, list)]
    for written in lists:
        if index < len(written) and written[index] == raw[loop_var]:
            return written[index]
    return None


def _include_fields(utr: Any, raw: Mapping[str, Any], action: str, task: Any = None,
                    index: Optional[int] = None) -> None:
    """2.21: what an include (or the ``index``th loop item of it) included, on its
    UnifiedTaskResult."""
    if "_ioc_include_args" not in raw:
        return  # skipped or failed: nothing included
    utr.include_file, utr.include_args = _include_target(raw, action, task, index)
    loop_var = raw.get("ansible_loop_var")
    if loop_var:
        # (the name as loop_control wrote it, tagged with where: the included
        # tasks' variables carry it, and Ansible's reserved-name warning
        # about it names that place)
        written = getattr(getattr(task, "loop_control", None), "loop_var", None)
        utr.loop_var = written if written is not None and written == loop_var else loop_var
        utr.loop_item = raw.get(loop_var)
        index_var = raw.get("ansible_index_var")
        if index_var:
            utr.loop_index_var, utr.loop_index = index_var, raw.get(index_var)
        if "ansible_loop" in raw:
            utr.loop_extended = raw["ansible_loop"]
        # 2.21 templates a label for every item (the item itself by default).
        utr.loop_item_label = raw.get("_ansible_item_label", raw.get(loop_var))


def _include_keys_219(raw: Mapping[str, Any], data: Dict[str, Any], action: str,
                      item: bool, task: Any = None) -> None:
    """2.19: the ``include``/``include_args`` keys its TaskExecutor returns, per item too
    (``item``: ``raw`` is one loop item's result)."""
    pairs: List[Tuple[Any, Dict[str, Any], Optional[int]]] = [(raw, data, None)]
    if isinstance(raw.get("results"), list) and isinstance(data.get("results"), list):
        pairs += [(source, out, index) for index, (source, out)
                  in enumerate(zip(raw["results"], data["results"]))]
    for source, out, index in pairs:
        if not isinstance(source, dict) or "_ioc_include_args" not in source:
            continue
        if item or out is not data:
            out.pop("changed", None)  # an item is TaskExecutor's dict as it is
        name, args = _include_target(source, action, task, index)
        if name is not None:
            out["include"] = name
        out["include_args"] = args


def _error_object(task: Any, result: Mapping[str, Any]) -> Any:
    """What a runner's task error is about, as the task wrote it (origin-tagged):
    the value of the argument it names, else the argument equal to its expression."""
    option = result.get("_ioc_error_option")
    if option is not None:
        return (task.args or {}).get(option)
    origin = result.get("_ioc_error_file")
    if isinstance(origin, list) and len(origin) == 2:  # a controller file's (a template's)
        from ansible._internal._datatag._tags import Origin

        return Origin(path=origin[0], line_num=origin[1])
    written = result.get("_ioc_error_value_origin")
    if isinstance(written, str):  # (a value a template gave: an !unsafe one's origin)
        return _origin(Location.parse(written))
    return _argument(task, result.get("_ioc_error_expr"))


def _argument(task: Any, expression: Any, stripped: bool = False) -> Any:
    """The task's own argument equal to ``expression`` (it carries Ansible's origin tag).

    An action's error about one of its arguments (assert's ``that``) names
    where that argument was written, as Ansible's does; None when no argument
    is that text. ``stripped``: one whose text stripped is ``expression`` (a
    condition, as ansible-core evaluates it) will do too.
    """
    if not isinstance(expression, str):
        return None
    # its arguments, loop, delegate_to, conditions and notify (and the when its blocks pass on)
    pending: List[Any] = [task.args or {}, task.loop, task.when, task.delegate_to, task.until,
                          task.notify]
    parent = getattr(task, "_parent", None)
    while parent is not None:
        pending.append(getattr(parent, "when", None))
        parent = getattr(parent, "_parent", None)
    while pending:
        value = pending.pop()
        if isinstance(value, Mapping):
            pending.extend(value.values())
            pending.extend(value.keys())  # (set_fact's templated keys)
        elif isinstance(value, (list, tuple)):
            pending.extend(value)
        elif isinstance(value, str) and (value == expression
                                         or stripped and value.strip() == expression):
            return value
    return None


def _error_argument(result: Mapping[str, Any]) -> Any:
    """The runner's ``_ioc_error_arg``, with its ``_ioc_error_plugin`` (a
    plugin's error about a value) as a fifth item and its
    ``_ioc_error_cause_file`` (a template lookup's file, which the error is
    about) as a sixth, when it has them."""
    failed = result.get("_ioc_error_arg")
    plugin = result.get("_ioc_error_plugin")
    file = result.get("_ioc_error_cause_file")
    if not isinstance(failed, list):
        return failed
    if file:
        return list(failed) + [plugin, file]
    return list(failed) + [plugin] if plugin else failed


def _argument_exception(task: Any, failed: Any, legacy: bool = False) -> Optional[BaseException]:
    """The chain ansible-core raises for task argument ``failed`` = [name, variable
    whose value failed, the keys down to the innermost failing value, the
    chain's three messages] that could not be templated: about the task's
    action, the argument's value and the variable's (else the innermost
    value's; origin-tagged values: Ansible's display names where each was
    written; a default of ``module_defaults`` where that was written); None if
    ``failed`` is not that error's. ``legacy``: as 2.19 chains it. A fifth
    item of ``failed``: [the plugin's part, its own words, the text of the value
    they are about, their help text, that value's origin] (a plugin's error
    about a value, a part of its own: "Origin: <unknown>" when the value has
    none). A sixth: ``[path, line or None]`` of a controller file the error
    is about (a template lookup's)."""
    from ansible.errors import AnsibleError

    if not isinstance(failed, list) or len(failed) not in (4, 5, 6):
        return None
    name, variable, path, (finalization, resolving, cause) = failed[:4]
    plugin = failed[4] if len(failed) >= 5 else None
    file = failed[5] if len(failed) == 6 else None
    value = (task.args or {}).get(name)
    if value is None and name not in (task.args or {}):
        value = _module_default(task, name)
    found = _variable_value(task, variable)
    if found is None:  # the innermost mapping value whose template failed
        found = value
        for key in list(path)[1:]:
            found = found.get(key) if isinstance(found, Mapping) else None
    source = value if found is None else found
    if file:  # the error of a template lookup's file: about the file
        from ansible._internal._datatag._tags import Origin

        found = source = Origin(path=file[0], line_num=file[1])
    try:
        try:
            try:
                if plugin:
                    raise _plugin_exception(plugin, resolving if legacy and source is value
                                            else None, source)
                if legacy and source is value:
                    # (2.19 words a template failing where it was written as one error)
                    raise AnsibleError("%s: %s" % (resolving, cause), obj=value)
                raise AnsibleError(cause, obj=source)
            except AnsibleError as ex:
                if legacy and source is value:
                    raise
                raise AnsibleError(resolving + ".", obj=value) from ex
        except AnsibleError as ex:
            raise AnsibleError(finalization + ".", obj=task.action) from ex
    except AnsibleError as error:
        return error


def _plugin_exception(plugin: Sequence[Any], resolving: Optional[str], source: Any) -> BaseException:
    """A plugin's error about a value (``plugin``: see :func:`_argument_exception`)
    as templating raises it: "The <kind> plugin '<name>' failed." about the
    failing template (``source``; after ``resolving``'s words when given: 2.19's
    one error), caused by the plugin's own, about the value (its origin, else
    the value itself: "Origin: <unknown>")."""
    from ansible.errors import AnsibleError

    head, said, obj, help_text, origin = list(plugin) + [None] * (5 - len(plugin))
    written = _origin(Location.parse(origin)) if origin else obj
    try:
        try:
            raise AnsibleError(said, obj=written, help_text=help_text)
        except AnsibleError as ex:
            words = "%s: %s." % (resolving, head) if resolving else head + "."
            raise AnsibleError(words, obj=source) from ex
    except AnsibleError as error:
        return error


def _module_default(task: Any, name: str) -> Any:
    """The (origin-tagged) value the task's ``module_defaults`` give its argument
    ``name`` (the converter merged them into the arguments the runner
    templated: ``Converter.module_defaults``); None if they give none."""
    from ioc.ansible import module_defaults as md

    if not getattr(task, "module_defaults", None):
        return None
    try:
        return md.apply_defaults(str(task.resolved_action), task, {}).get(name)
    except md.TemplatedDefaults:
        return None


def _written_variable(task: Any, variable: str) -> List[Any]:
    """The raw (origin-tagged) values written for ``variable``, nearest first:
    the task's and its blocks' vars, its role's, the play's."""
    candidates = [_variable_value(task, variable)]
    role = getattr(task, "_role", None)
    if role is not None:
        candidates.append((role.get_vars(include_params=False) or {}).get(variable))
    play = _play_of(task)
    if play is not None:
        candidates.append((play.vars or {}).get(variable))
    return [c for c in candidates if c is not None]


def _variable_value(task: Any, variable: Any) -> Any:
    """The (origin-tagged) value of the task's or an enclosing block's var
    ``variable``, else of its role's ``vars/``, the play's ``vars`` or its
    role's ``defaults/``, in that order of precedence (where ansible-core's
    error about a variable's value says it was written)."""
    if variable is None:
        return None
    holder, play = task, None
    while holder is not None:
        found = (getattr(holder, "vars", None) or {}).get(variable)
        if found is not None:
            return found
        play = play or getattr(holder, "_play", None)
        holder = getattr(holder, "_parent", None)
    role = getattr(task, "_role", None)
    layers = [getattr(role, "_role_vars", None), getattr(play, "vars", None),
              getattr(role, "_default_vars", None)]
    for layer in layers:
        found = layer.get(variable) if isinstance(layer, Mapping) else None
        if found is not None:
            return found
    return None


def _keyword_exception(task: Any, message: str, keyword: Any) -> Optional[BaseException]:
    """The chain ansible-core raises for an ``environment`` (``keyword`` =
    ["environment", the failing name, the variable whose value failed]) that
    could not be templated: "Error processing keyword 'environment'." about the
    whole value, caused by the error where its template was written."""
    from ansible.errors import AnsibleError

    head, _, cause = message.partition(": ")
    if not isinstance(keyword, list) or len(keyword) not in (3, 4) \
            or head != "Error processing keyword %r" % (keyword[0],):
        return None
    if keyword[0] != "environment":
        return _conversion_exception(task, keyword[0], head, cause, keyword[2],
                                     keyword[3] if len(keyword) > 3 else None)
    _, name, variable = keyword
    environment = task.environment
    written = None
    for layer in environment if isinstance(environment, list) else [environment]:
        if isinstance(layer, Mapping) and name in layer:
            written = layer[name]
    source = _variable_value(task, variable)
    try:
        try:
            raise AnsibleError(cause, obj=written if source is None else source)
        except AnsibleError as ex:
            raise AnsibleError(head + ".", obj=environment) from ex
    except AnsibleError as error:
        return error


def _conversion_exception(task: Any, name: str, head: str, cause: str,
                          variable: Any, host: Any = None) -> BaseException:
    """The chain ``post_validate`` raises for a templated keyword whose value is
    not of its type (ignore_errors: 5): "Error processing keyword ..." about the
    written template, caused by "The value ... could not be converted ..."
    about the value (with its origin when the template is one variable's value:
    the task's, its blocks', the play's or the host's own)."""
    from ansible.errors import AnsibleError

    source = _variable_value(task, variable)
    if source is None and variable is not None:
        play = _play_of(task)
        source = (play.vars or {}).get(variable) if play is not None else None
    if source is None and variable is not None and host is not None:
        source = (getattr(host, "vars", None) or {}).get(variable)  # (add_host's, inventory's)
    written = getattr(task, name, None)
    try:
        try:
            try:
                # (raised while handling the conversion's TypeError, as Ansible's: the
                # display then keeps the two messages apart even at one origin)
                raise TypeError(cause)
            except TypeError:
                # (a value of an expression is where the template was written)
                raise AnsibleError(cause, obj=written if source is None else source)
        except AnsibleError as ex:
            raise AnsibleError(head + ".", obj=written) from ex
    except AnsibleError as error:
        return error


def _play_of(task: Any) -> Any:
    """The play of a task (its outermost block's)."""
    holder = task
    while getattr(holder, "_parent", None) is not None:
        holder = holder._parent
    return getattr(holder, "_play", None)


def _engine_error(utr_class: Any, task: Any, data: Dict[str, Any], obj: Any = None,
                  argument: Any = None, keyword: Any = None, help_text: Any = None) -> Any:
    """A result as TaskExecutor makes it from an AnsibleError its connection (or the
    action, about its argument ``obj``, with its ``help_text``) raised; ``argument``:
    [name, variable, path] of an argument that could not be templated, ``keyword``:
    the same for a keyword (their chains)."""
    from ansible.errors import AnsibleError, AnsibleTaskError

    message = str(data.get("msg", ""))
    if message.startswith("Task failed: "):
        message = message[len("Task failed: "):]
    try:
        try:
            chained = _argument_exception(task, argument) if argument else \
                _keyword_exception(task, message, keyword) if keyword else None
            if chained is not None:
                raise chained
            raise _engine_exception(message, data, obj, help_text)
        except (AnsibleError, _timeout_error()) as ex:
            raise AnsibleTaskError(obj=task.get_ds()) from ex
    except AnsibleTaskError as atex:
        utr = utr_class._create_from_exception(atex, accept_result_contribution=True,
                                               source_is_module=False)
    # A loop item keeps what identifies it (TaskExecutor's loop item context).
    for key in ("item", "ansible_loop_var", "ansible_index_var", "ansible_loop"):
        if key in data:
            utr.result_data[key] = data[key]
    if "_ansible_item_label" in data:
        utr.loop_item_label = data["_ansible_item_label"]
    return utr


#: What identifies a loop item's result; an engine error keeps it.
_ITEM_KEYS = ("item", "ansible_loop_var", "ansible_index_var", "ansible_loop",
              "_ansible_item_label", "_ansible_no_log")


def _loop_exception(task: Any, data: Dict[str, Any], error: Mapping[str, Any]) -> BaseException:
    """The exception ``TaskExecutor.run`` catches when a loop's items cannot be
    had (an undefined variable it defers to after ``when``: not this).

    A lookup plugin's failure is templating's ``AnsibleTemplatePluginRuntimeError``
    from the plugin's error; a ``with_<lookup>`` loop's is raised while
    evaluating ``invoke_lookup()``, as ``_get_loop_items`` calls the lookup
    (an expression without origin), any other is about the loop as written.
    """
    from ansible._internal._datatag._tags import TrustedAsTemplate
    from ansible._internal._templating._engine import TemplateEngine
    from ansible._internal._templating._errors import AnsibleTemplatePluginRuntimeError
    from ansible._internal._templating._jinja_plugins import _DirectCall
    from ansible.errors import AnsibleError

    def failure() -> AnsibleError:
        if not error.get("plugin"):
            item = error.get("item")
            about = task.loop[item] if isinstance(item, int) and isinstance(task.loop, list) \
                and item < len(task.loop) else task.loop  # (the item whose template failed)
            return AnsibleError(str(data.get("msg", "")), obj=about)
        try:
            try:
                # (from None: on 2.19, called while handling the ImportError that chose it)
                raise AnsibleError(str(error.get("cause"))) from None
            except AnsibleError as cause:
                raise AnsibleTemplatePluginRuntimeError("lookup", error["plugin"]) from cause
        except AnsibleTemplatePluginRuntimeError as ex:
            if not error.get("with"):
                ex.obj = task.loop
            return ex

    if not error.get("with"):
        return failure()

    @_DirectCall.mark
    def invoke_lookup() -> Any:
        raise failure()

    try:
        TemplateEngine().evaluate_expression(
            expression=TrustedAsTemplate().tag("invoke_lookup()"),
            local_variables=dict(invoke_lookup=invoke_lookup))
    except AnsibleError as ex:
        return ex
    raise AssertionError("invoke_lookup() raised nothing")


def _loop_error_219(task: Any, data: Dict[str, Any], error: Mapping[str, Any]) -> Dict[str, Any]:
    """2.19: the result dict ``TaskExecutor.run`` makes of :func:`_loop_exception`,
    marked as ``_engine_error_219``'s."""
    from ansible._internal._errors import _error_utils

    out = _error_utils.result_dict_from_exception(_loop_exception(task, data, error))
    out["_ioc_engine_error"] = True
    return out


def _action_fail(utr_class: Any, task: Any, data: Dict[str, Any]) -> Any:
    """The result TaskExecutor makes of an ``AnsibleActionFail`` the action plugin
    raised with the runner's ``msg``: "Task failed: <msg>", the failure and the
    msg its only contribution."""
    from ansible.errors import AnsibleActionFail, AnsibleTaskError

    message = str(data.get("msg", ""))
    if message.startswith("Task failed: "):  # (unarchive's: the error's own words)
        message = message[len("Task failed: "):]
    try:
        try:
            raise AnsibleActionFail(message)
        except AnsibleActionFail as ex:
            raise AnsibleTaskError(obj=task.get_ds()) from ex
    except AnsibleTaskError as atex:
        utr = utr_class._create_from_exception(atex, accept_result_contribution=True,
                                               source_is_module=False)
    if message != data.get("msg"):
        utr.msg = data["msg"]  # (unarchive's result keeps TaskExecutor's words)
    return utr


def _timeout_error() -> Any:
    from ansible._internal._errors._task_timeout import TaskTimeoutError
    return TaskTimeoutError


def _engine_exception(message: str, data: Dict[str, Any], obj: Any,
                      help_text: Any = None) -> BaseException:
    """The exception TaskExecutor caught: the task's ``timeout`` (its result keys, its
    deprecated ``timedout.frame``), else an AnsibleError with ``message``."""
    timedout = data.get("timedout")
    if isinstance(timedout, dict) and "period" in timedout:
        return _timeout_error()(timedout["period"])
    if data.get("unreachable"):
        from ansible.errors import AnsibleConnectionFailure

        return AnsibleConnectionFailure(message, obj=obj)
    return engine_exception(message, obj, help_text if isinstance(help_text, str) else None)


def _engine_error_219(task: Any, data: Dict[str, Any], obj: Any = None,
                      help_text: Any = None, keyword: Any = None,
                      argument: Any = None) -> Dict[str, Any]:
    """2.19: the result dict TaskExecutor makes from its connection's AnsibleError
    (a failed become; the action's, about its argument ``obj``; an argument
    or keyword that could not be templated: their chains, as ``_engine_error``),
    marked so ``_raw_task_result`` leaves it as it is."""
    from ansible._internal._errors import _error_utils
    from ansible.errors import AnsibleError, AnsibleTaskError

    message = str(data.get("msg", ""))
    if message.startswith("Task failed: "):
        message = message[len("Task failed: "):]
    chained = _argument_exception(task, argument, legacy=True) if argument else \
        _keyword_exception(task, message, keyword) if keyword else None
    innermost = chained
    while innermost is not None and innermost.__cause__ is not None:
        innermost = innermost.__cause__
    if innermost is not None:
        # (raised while handling the ImportError that chose 2.19: not its cause)
        innermost.__suppress_context__ = True
    try:
        try:
            if chained is not None:  # (an argument, a keyword: their chains)
                raise chained
            # (from None: called while handling the ImportError that chose 2.19)
            raise _engine_exception(message, data, obj, help_text) from None
        except (AnsibleError, _timeout_error()) as ex:
            raise AnsibleTaskError(obj=task.get_ds()) from ex
    except AnsibleTaskError as atex:
        out = _error_utils.result_dict_from_exception(atex, accept_result_contribution=True)
    out.setdefault("changed", False)
    out.update({k: data[k] for k in _ITEM_KEYS if k in data})
    if "results" in data:
        out["results"] = data["results"]
    if data.get("warnings") and not out.get("warnings"):
        out["warnings"] = data["warnings"]  # (what templating displayed as the task ran)
    out["_ioc_engine_error"] = True
    return out


def _action_fail_219(task: Any, data: Dict[str, Any]) -> Dict[str, Any]:
    """2.19: the result dict TaskExecutor makes of an ``AnsibleActionFail`` the
    action plugin raised with the runner's ``msg``, marked as ``_engine_error_219``'s."""
    from ansible._internal._errors import _error_utils
    from ansible.errors import AnsibleActionFail, AnsibleTaskError

    try:
        try:
            # (from None: called while handling the ImportError that chose 2.19)
            raise AnsibleActionFail(str(data.get("msg", ""))) from None
        except AnsibleActionFail as ex:
            raise AnsibleTaskError(obj=task.get_ds()) from ex
    except AnsibleTaskError as atex:
        out = _error_utils.result_dict_from_exception(atex, accept_result_contribution=True)
    out["_ioc_engine_error"] = True
    return out


def _raw_task_result(host: Any, task: Any, data: Dict[str, Any], action: str,
                     status: str, retry: bool = False) -> Any:
    """2.19/2.20: the ``_RawTaskResult`` a worker sends, over the result dict.

    ``TaskQueueManager.send_callback`` turns it into the callbacks' copy
    (``as_callback_task_result``: no ``failed``/``skipped`` keys, internal keys
    stripped, ``no_log`` censored), as for linear's own results. A failure is
    worded as 2.19's ``TaskExecutor._execute`` words it, per loop item too
    (``_execute`` runs once per item): ``exception`` becomes the error summary
    of "Task failed: Action failed: <msg>" / "Module failed: <msg>" with the
    task's origin.

    Every loop item has an ``_ansible_item_label`` (2.19 always templates one). A
    retry (``v2_runner_retry``) is 2.19's: ``attempts`` is the attempt that
    failed (2.21 and ioc count the one about to run), and inside a loop it
    carries no loop variable (2.19 adds that once the item is done).
    """
    from ansible.executor.task_result import _RawTaskResult

    _drop_changed_when_result_219(data)
    if data.get("results") == [] and "skipped_reason" in data:  # an empty loop: 2.19's words
        data.pop("skip_reason", None)
    if "ansible_loop_var" in data and not retry:  # 2.19 labels every item
        data.setdefault("_ansible_item_label", data.get(data["ansible_loop_var"]))
    if retry:
        if isinstance(data.get("attempts"), int):
            data["attempts"] -= 1
        loop_var = data.pop("ansible_loop_var", None)
        for key in (loop_var, "ansible_index_var", data.get("ansible_index_var"),
                    "_ansible_item_label"):
            if key:
                data.pop(key, None)
    engine = data.pop("_ioc_engine_error", False)
    items = data.get("results") if task.loop or task.loop_with else None
    if isinstance(items, list):
        data["results"] = [_engine_error_219(task, item) if engine and isinstance(item, dict)
                           and item.get("failed") else _result_dict_219(task, item, action)
                           for item in items]
        for item in data["results"]:
            if isinstance(item, dict):
                item.pop("_ioc_engine_error", None)
    elif (status == "failed" or data.get("failed")) and not engine:
        # (failed, yet not a failure: until ran out on a result failed_when let pass)
        data = _executor_failure_219(task, data, action)
    return _RawTaskResult(host, task, data, task.dump_attrs())


def _drop_changed_when_result_219(data: Dict[str, Any]) -> None:
    """2.19 only sets ``changed`` from changed_when; an error it keeps as text."""
    if not isinstance(data.get("changed_when_result"), str):
        data.pop("changed_when_result", None)


def _uncaught_exception_219(data: Dict[str, Any], raw: Mapping[str, Any]) -> None:
    """A failed result of a module's uncaught exception as the module returned
    it (:func:`_uncaught_exception`), so 2.19's executor words "Task failed:
    Module failed: <exception>" once, not around the runner's msg (each loop
    item comes here as a result of its own)."""
    uncaught = raw.get("_ioc_module_exception")
    if isinstance(uncaught, str) and data.get("failed"):
        whole = _uncaught_exception(data, uncaught)
        data.clear()
        data.update(whole)


def _mark_engine_failures_219(data: Dict[str, Any], raw: Mapping[str, Any]) -> None:
    """Mark the results (and loop items) that the module returned unfailed and
    changed_when/failed_when/until failed: 2.19 words them "Action failed"."""
    pairs = [(raw, data)]
    if isinstance(raw.get("results"), list) and isinstance(data.get("results"), list):
        pairs += list(zip(raw["results"], data["results"]))
    for source, out in pairs:
        if not isinstance(source, Mapping) or not isinstance(out, dict):
            continue
        conditions = source.get("_ioc_conditions")
        if out.get("failed") and (source.get("_ioc_until_exhausted") or
                                  (conditions and not conditions["before"].get("failed"))):
            out["_ioc_engine_failure"] = True


def _result_dict_219(task: Any, item: Any, action: str) -> Any:
    """One loop item's result as 2.19 keeps it in ``results``."""
    if not isinstance(item, dict):
        return item
    item = dict(item)
    _drop_changed_when_result_219(item)
    if "ansible_loop_var" in item:
        item.setdefault("_ansible_item_label", item.get(item["ansible_loop_var"]))
    return _executor_failure_219(task, item, action) if item.get("failed") else item


def _executor_failure_219(task: Any, data: Dict[str, Any], action: str) -> Dict[str, Any]:
    """A failed result dict as 2.19's TaskExecutor._execute leaves it."""
    from ansible._internal._errors import _captured, _error_utils
    from ansible.errors import AnsibleTaskError

    engine_failure = data.pop("_ioc_engine_failure", False)
    if action not in _ACTIONS and not engine_failure:
        # ActionBase._execute_module normalises a module's result (a failed one: a
        # failure changed_when/failed_when/until made is the action's).
        _captured.AnsibleModuleCapturedError.normalize_result_exception(data)
    try:
        try:
            _captured.AnsibleActionCapturedError.maybe_raise_on_result(data)
        except Exception as ex:
            raise AnsibleTaskError(obj=task.get_ds()) from ex
    except AnsibleTaskError as atex:
        data = _error_utils.result_dict_from_exception(atex, accept_result_contribution=True)
        data.setdefault("changed", False)
    return data


#: What the runner's changed_when/failed_when add to an action's result.
_CONDITION_RESULTS = ("changed_when_result", "failed_when_result",
                      "changed_when_suppressed_exception", "failed_when_suppressed_exception")


def _utr_after(utr_class: Any, task: Any, data: Dict[str, Any], raw: Mapping[str, Any],
               action: str, broken: bool = True) -> Any:
    """2.21: the UnifiedTaskResult of what the action returned, then what
    TaskExecutor does to it: ``changed_when``/``failed_when`` through its own
    ``set_*_when_result`` (their outcomes are the runner's, an error names the
    expression's origin) and an exhausted ``until`` failing it."""
    from ansible.errors import AnsibleError

    conditions = raw.get("_ioc_conditions") if isinstance(raw, Mapping) else None
    exhausted = isinstance(raw, Mapping) and raw.get("_ioc_until_exhausted")
    if conditions:
        data = {k: v for k, v in data.items()
                if k not in _CONDITION_RESULTS and k not in ("changed", "failed", "exception",
                                                               "msg")}
        data.update(conditions["before"])
    if exhausted:
        data["failed"] = False
    broke = raw.get("_ioc_break_when_error") if isinstance(raw, Mapping) else None
    if broke:
        data = {k: v for k, v in data.items()
                if k not in ("break_when_result", "break_when_suppressed_exception", "failed",
                             "exception")}
        data.update(broke["before"])
    uncaught = raw.get("_ioc_module_exception") if isinstance(raw, Mapping) else None
    if isinstance(uncaught, str) and data.get("failed"):
        data = _uncaught_exception(data, uncaught)
    utr = _utr(utr_class, data, action)
    if conditions and utr.exception is None:
        # The action returned the module's result without an error: an error
        # the conditions raise is the action's ("Action failed"), as linear's.
        utr.is_module = False
    for field, value, error, expression in (conditions or {}).get("applied", ()):
        setter = utr.set_changed_when_result if field == "changed_when" \
            else utr.set_failed_when_result
        if error:
            value = AnsibleError(str(value), obj=_condition(task, field, expression))
        setter(value)
    if exhausted:
        utr.failed = True
    if broke and broken:
        _break_when_error(utr, task, broke)
    return utr


def _break_when_error(utr: Any, task: Any, broke: Mapping[str, Any]) -> None:
    """What 2.21's ``UnifiedTaskResult.set_break_when_result`` does to an
    item's result with the error of its break_when expression (the runner's
    words, the task's own origin-tagged expression), but ending the loop:
    the runner ended it already, and this runs outside a TaskContext."""
    from ansible._internal._errors import _error_factory
    from ansible.errors import AnsibleError
    from ansible.module_utils._internal import _messages, _traceback

    text = broke["error"].split(": ", 1)[1]
    control = getattr(task, "loop_control", None)
    expression = None
    for condition in _as_conditions(getattr(control, "break_when", None)):
        if isinstance(condition, str) and condition == broke.get("expression"):
            expression = condition
    try:
        raise AnsibleError("A 'break_when' expression failed.", obj=expression) \
            from AnsibleError(text, obj=expression)
    except AnsibleError as ex:
        wrapped = ex
    if utr.exception:
        utr.break_when_suppressed_exception = utr.exception
    utr.failed = True
    utr.exception = _messages.ErrorSummary(event=_error_factory.ControllerEventFactory.from_exception(
        wrapped, _traceback.is_traceback_enabled(_traceback.TracebackEvent.ERROR)))
    utr.break_when_result = text


def _uncaught_exception(data: Dict[str, Any], message: str) -> Dict[str, Any]:
    """A module's result for an exception it did not catch, as the module
    returned it: the exception's event and no msg. The runner words a msg from
    it for ioc's console; Ansible words its own from the event ("Task failed:
    Module failed: <message>", or a changed_when error's in its place)."""
    from ansible.module_utils._internal import _messages

    data = {k: v for k, v in data.items() if k != "msg"}
    traceback = data.get("exception")
    data["exception"] = _messages.ErrorSummary(event=_messages.Event(
        msg=message, formatted_traceback=traceback if isinstance(traceback, str)
        and traceback != NO_TRACEBACK else None))
    return data


def _condition(task: Any, field: str, expression: Any) -> Any:
    """The task's own ``field`` condition equal to ``expression`` (with its origin tag)."""
    for condition in _as_conditions(getattr(task, field, None)):
        if isinstance(condition, str) and condition == expression:
            return condition
    return None


def _as_conditions(value: Any) -> Any:
    if value is None:
        return ()
    return value if isinstance(value, (list, tuple)) else (value,)


def _utr(utr_class: Any, data: Dict[str, Any], action: str) -> Any:
    """A 2.21 UnifiedTaskResult from ioc's result dict (an action's or a module's)."""
    if action in _ACTIONS:
        return utr_class.from_action_result_dict(data)
    module_data = {k: v for k, v in data.items() if not k.startswith("_ansible_")}
    utr = utr_class.from_module_result_dict(module_data)
    for key, value in data.items():
        if key == "_ansible_no_log":
            utr.no_log = bool(value)
        elif key == "_ansible_item_label":
            utr.loop_item_label = value
        elif key == "_ansible_verbose_always":
            utr.verbose_always = bool(value)
        elif key == "_ansible_verbose_override":
            utr.verbose_override = bool(value)
        elif key == "_ansible_delegated_vars":
            utr.callback_delegated_vars_subset = value
    return utr
