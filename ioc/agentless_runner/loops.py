"""Loops on the target: a task's items, each with its own ``when``, retries and result.

A mixin of :class:`ioc.agentless_runner.batch.HostRun`. ``loop``/``with_*``
give the items; every item runs as a single execution of the task
(``run_single``) with the loop variables, ``loop_control`` (``loop_var``,
``index_var``, ``label``, ``pause``, ``extended``, ``break_when``) and the previous item's
registered result in scope (L2.7), and is reported as it ends.
"""
import time
from contextlib import nullcontext

from ioc.agentless_runner import results, templating
from ioc.agentless_runner.flow import LoopTypeError, as_bool, native_type_name, safe_template
from ioc.agentless_runner.lookups import listify
from ioc.agentless_runner.template_errors import conditional_error_text
from ioc.agentless_runner.templating import (DeprecatedReads, Templar, TemplatedConditionals,
                                             TemplateError, current_reads)


#: The fields of ``loop_control`` Ansible templates once per task (``always_post_validate``).
_POST_VALIDATED = ("loop_var", "index_var", "pause", "extended", "extended_allitems")


#: ``with_<lookup>`` loops whose plugin takes undefined terms, which
#: TaskExecutor's call leaves out (``invoked_as_with``).
_OMIT_UNDEFINED = frozenset({"first_found", "ansible.builtin.first_found"})


def loop_terms(loop, kind, templar):
    """The items of a ``loop`` (``kind`` None), or the terms a ``with_<kind>``
    loop hands its lookup: templated, an undefined one left out where the
    plugin takes them (``first_found``: "{{ missing }}foo" is no candidate)."""
    if kind in _OMIT_UNDEFINED:
        return templating.template_omitting_undefined(templar, loop)
    return templar.template(loop)


class LoopRun(object):
    """The items of one looped task (see the module doc)."""

    def loop_items(self, task, templar):
        items = loop_terms(task["loop"], task.get("loop_with"), templar)
        kind = task.get("loop_with")
        if kind is not None:
            # with_<lookup>: the loop terms go to the lookup, which returns the items.
            query = templar.variables["query"]
            try:
                items = query(kind, *listify(items))
            except TemplateError as exc:
                # TaskExecutor calls the lookup from the expression ``invoke_lookup()``
                exc.loop_with = True
                raise
        if not isinstance(items, list):
            raise LoopTypeError("The `loop` value must resolve to a 'list', not '%s'."
                                % native_type_name(items))
        return items

    @staticmethod
    def loop_control(task, templar):
        """``loop_control`` as TaskExecutor post-validates it before the first
        item: ``loop_var``, ``index_var``, ``pause`` and ``extended`` are
        templated with the task's variables (``label`` and ``break_when``
        are evaluated per item)."""
        control = dict(task.get("loop_control") or {})
        for name in _POST_VALIDATED:
            if isinstance(control.get(name), str):
                control[name] = templar.template(control[name])
        return control

    @staticmethod
    def item_overlay(control, items, index):
        """The loop variables item ``index`` of ``items`` is run with."""
        loop_var = control.get("loop_var", "item")
        overlay = {loop_var: items[index], "ansible_loop_var": loop_var}
        index_var = control.get("index_var")
        if index_var:
            overlay[index_var] = index
            overlay["ansible_index_var"] = index_var
        if control.get("extended"):
            overlay["ansible_loop"] = _loop_info(
                items, index, allitems=as_bool(control.get("extended_allitems", True)))
        return overlay

    def run_loop(self, key, task, scope, templar, items):
        control = self.loop_control(task, templar)
        loop_var = control.get("loop_var", "item")
        index_var = control.get("index_var")
        pause = float(control.get("pause") or 0)
        register = task.get("register")
        item_results = []
        loop_conditionals = []
        loop_markers = []  # (debug's, where each template is: the loop's warnings gather them)
        ignore_any = False
        #: the loop's ignore_unreachable as its items' values combine (None: none yet)
        ignore_unreachable = None
        notify = []
        label_failed = None  # the label's templating error, for the callbacks
        live = {}
        # ``delegate_to`` naming the loop item: the controller runs one item
        # per call on that item's delegate, handing over the earlier results.
        only = self.options.get("item_slice")
        if only is None or not only.get("index"):  # (once, before the first item)
            for warning in loop_variable_warnings(loop_var, index_var, templar.variables):
                self.emit(dict(warning, e="warn", k=key))
        if only is not None:
            item_results = list(only.get("prior") or ())
            notify = list(only.get("notify") or ())
            if register and item_results:
                live[register] = item_results[-1]
        for index, item in enumerate(items):
            if only is not None and index != only["index"]:
                continue
            if index and pause:
                time.sleep(pause)
            self._item = index
            overlay = dict(live)
            if not results.legacy():
                # 2.21's ``_task``: ``_task.result`` is the latest recorded result,
                # in a loop's ``when`` the previous item's (undefined for the first).
                overlay["_task"] = {"result": item_results[-1]} if item_results else {}
                # ``_task.loop_result``: the loop's result as it stands (the items so far)
                overlay["_task"]["loop_result"] = results.loop_preview(item_results)
                self._loop_so_far = item_results
            overlay.update(self.item_overlay(control, items, index))
            item_templar = Templar(self.variables(task, scope, overlay))
            # What ansible-core records on every result of this item, its
            # retries included: the loop variables and the label.
            item_keys = {loop_var: item, "ansible_loop_var": loop_var}
            if index_var:
                item_keys[index_var] = index
                item_keys["ansible_index_var"] = index_var
            if "ansible_loop" in overlay:
                item_keys["ansible_loop"] = overlay["ansible_loop"]
            label = control.get("label")
            label_error = None
            if label is not None and results.legacy():
                item_keys["_ansible_item_label"] = safe_template(item_templar, label)
            elif label is not None:
                # 2.21 templates the label once the item's (or attempt's) result
                # is recorded: the registered variable is that result.
                self._labeller = self._item_labeller(task, scope, overlay, item_keys, item, label)
            else:
                item_keys["_ansible_item_label"] = item  # 2.21 labels every item: its value
            # (each item's result records the conditions written as a template it
            # evaluated, as each of TaskExecutor's item runs; the loop's has them all)
            with TemplatedConditionals() as conditionals, \
                    DeprecatedReads() if self.deprecated else nullcontext() as reads:
                try:
                    result = self.run_single(key, task, scope, item_templar, overlay, item_keys)
                finally:
                    self._labeller = None
            if conditionals.found:
                results.templated_conditionals(result, conditionals.found)
                loop_conditionals.extend(conditionals.found)
            if reads is not None and reads.found:
                # (each item's result records what it read, as each of TaskExecutor's
                # item runs; the task's own recorder has them all, to show; after its
                # conditions' deprecations: ``when`` is evaluated before the arguments)
                results.read_deprecations(result, [notice for notice, _ in reads.found])
                task_reads = current_reads()
                if task_reads is not None:
                    task_reads.found.extend(r for r in reads.found if r not in task_reads.found)
            if not results.legacy() and not ignore_any \
                    and task.get("ignore_errors") is not None:
                # 2.21: the loop's failure is ignored when ignore_errors held for any
                # item it ran (each item's task is post-validated with its item); an
                # item its ``when`` skipped is not, so only a literal boolean holds
                # for it (TaskContext._record_result)
                ignore = task.get("ignore_errors")
                ignore_any = ignore if isinstance(ignore, bool) else \
                    not result.get("skipped") and self._truthy(ignore, item_templar)
            if task.get("ignore_unreachable") is not None:
                ignore_unreachable = self._item_ignore_unreachable(
                    task, result, item_templar, ignore_unreachable)
            if label is not None and not results.legacy():
                item_keys["_ansible_item_label"], label_error = \
                    self._item_labeller(task, scope, overlay, item_keys, item, label)(result)
            result.update(item_keys)
            if label_error is not None:
                result.setdefault("warnings", []).append(label_error["text"])
                result["_ioc_label_error"] = label_failed = label_error
            stop = self._break_when(task, control, result, overlay, scope)
            self._emit_diff(key, task, result, item_templar)
            status = results.status_of(result)
            self.emit({"e": "item", "k": key,
                       "status": "failed" if status == "unreachable" else status,
                       "result": self._visible(task, result, item_templar)})
            if results.status_of(result) == "ok":
                self.apply_effects(task, result)
            loop_markers.extend(result.get("_ioc_marker_warnings") or ())
            item_results.append(results.ordered(results.public(result)))
            if register:
                live[register] = item_results[-1]  # L2.7: the previous item's result
            if not result.get("skipped"):
                # ansible-core keeps each ran item's templated notify and applies
                # them all when the task as a whole changed
                notify.extend(safe_template(item_templar, n) for n in task.get("notify", ()))
            if stop:
                break
        self._item = self._loop_so_far = None
        if only is not None and not only.get("final"):
            return {"_ioc_partial": {"item": item_results[-1] if len(item_results) > len(
                only.get("prior") or ()) else None, "notify": notify}}
        out = results.aggregate_loop(item_results)
        if not results.legacy() and task.get("ignore_errors") is not None:
            out["_ioc_ignore_errors"] = ignore_any
        if ignore_unreachable is not None:
            out["_ioc_ignore_unreachable"] = ignore_unreachable
        if loop_conditionals and results.legacy():
            results.templated_conditionals(out, loop_conditionals)
        elif loop_conditionals:  # (2.21: among the items' deprecations it gathered)
            results.mark_conditional_templates(out, loop_conditionals)
        if loop_markers and out.get("warnings"):
            out["_ioc_marker_warnings"] = loop_markers
        if label_failed is not None:
            out["_ioc_label_error"] = label_failed  # (also among the loop's warnings)
        if task.get("notify"):
            out["_ioc_notify"] = notify
        return out

    def _item_ignore_unreachable(self, task, result, templar, so_far):
        """The loop's ignore_unreachable after this item's ``result``: 2.21 ignores
        an unreachable loop when the keyword held for any item it ran (each
        item's task post-validated with its item; a skipped item's holds only
        as a literal boolean); 2.19 takes the first unreachable item's value,
        and a later unreachable item's false clears it (TaskExecutor.run)."""
        value = task.get("ignore_unreachable")
        if not results.legacy():
            held = value if isinstance(value, bool) else \
                not result.get("skipped") and bool(self._truthy(value, templar))
            return bool(so_far) or held
        if not result.get("unreachable"):
            return so_far
        held = bool(self._truthy(value, templar))
        return held if so_far is None else so_far and held

    def _item_labeller(self, task, scope, overlay, item_keys, item, label):
        """A function of an item's result: (its label, the label's warning or
        None), as 2.21's ``TaskContext._populate_item_label``: the label is
        templated with the task's register naming that result; one that
        cannot be templated warns and the item's value labels it."""
        register = task.get("register")

        def label_of(result):
            seen = dict(overlay)
            if register:
                seen[register] = results.public(dict(result, **item_keys))
            try:
                return Templar(self.variables(task, scope, seen)).template(label), None
            except TemplateError as exc:
                return item, self._label_warning(task, exc)
        return label_of

    @staticmethod
    def _label_warning(task, exc):
        """The warning of a loop_control label that cannot be templated, as
        2.21's ``display.error_as_warning`` makes it: its words (the registered
        ``warnings`` entry), the error and where the label was written (for
        the callbacks' ``Origin:`` excerpt)."""
        origins = (task.get("origins") or {}).get("label") or ("",)
        return {"text": "Failed to template loop_control label: %s" % (exc,),
                "error": str(exc), "origin": origins[0] or None}

    def _break_when(self, task, control, result, overlay, scope):
        """``loop_control.break_when`` after an item: True ends the loop there.

        Evaluated with the item's variables and its registered result; 2.21
        records the outcome on the item's result (``break_when_result``), and
        an error fails the item and ends the loop.
        """
        conditions = control.get("break_when")
        if not conditions:
            return False
        if not isinstance(conditions, (list, tuple)):
            conditions = [conditions]
        bound = dict(overlay)
        if task.get("register"):
            bound[task["register"]] = results.public(result)
        templar = Templar(self.variables(task, scope, bound))
        number = 0
        try:
            stop = True
            for number, condition in enumerate(conditions):
                if not templar.conditional(condition):
                    stop = False
                    break
        except TemplateError as exc:
            self._break_when_error(task, result, conditional_error_text(exc), number,
                                   conditions[number])
            return True
        if not results.legacy():
            result["break_when_result"] = stop
        return stop

    @staticmethod
    def _break_when_error(task, result, text, number, condition):
        """The item's result when its break_when cannot be evaluated, as 2.21's
        ``set_break_when_result``: failed, the error text its
        ``break_when_result``, the exception it had (every failed result has
        one) moved to ``break_when_suppressed_exception`` and the error its
        own. The callbacks get the error's words and the expression's origin
        (``_ioc_break_when_error``: the [ERROR] line, its ``Origin:``) and the
        bridge what the result was before (to apply the error to Ansible's)."""
        result["break_when_result"] = text
        if results.legacy():
            result["failed"] = True
            return
        before = dict((k, result[k]) for k in ("failed", "exception") if k in result)
        if result.get("failed") or "exception" in result:
            result["break_when_suppressed_exception"] = result.pop("exception", None) or \
                results.TRACEBACK_UNAVAILABLE
        result["failed"] = True
        result["exception"] = results.TRACEBACK_UNAVAILABLE
        origins = (task.get("origins") or {}).get("break_when") or ()
        result["_ioc_break_when_error"] = {
            "error": "A 'break_when' expression failed: %s" % text,
            "expression": condition if isinstance(condition, str) else None,
            "origin": (origins[number] if number < len(origins) else None) or None,
            "before": before}


def _loop_info(items, index, allitems=True):
    length = len(items)
    info = {
        "index": index + 1, "index0": index, "first": index == 0,
        "last": index == length - 1, "length": length,
        "revindex": length - index, "revindex0": length - index - 1,
    }
    if allitems:
        info["allitems"] = items
    if index:
        info["previtem"] = items[index - 1]
    if index < length - 1:
        info["nextitem"] = items[index + 1]
    return info


#: What ``TaskContext.start_loop`` sets: 2.21 warns of a loop variable named so.
_RESERVED_LOOP_VARIABLES = frozenset({"ansible_index_var", "ansible_loop", "ansible_loop_var"})

#: ``C.COMMON_CONNECTION_VARS``: also reserved for 2.21.
_CONNECTION_VARIABLES = frozenset({
    "ansible_connection", "ansible_host", "ansible_module_compression", "ansible_password",
    "ansible_pipelining", "ansible_port", "ansible_private_key_file",
    "ansible_shell_executable", "ansible_shell_type", "ansible_timeout", "ansible_user"})

_LOOP_VARIABLE_HELP = ("You should set the `%s` value in the `loop_control` option for the task "
                       "to something else to avoid variable collisions and unexpected behavior.")


def loop_variable_warnings(loop_var, index_var, variables):
    """The warnings TaskExecutor gives before a loop's first item of a loop
    variable that collides (``_check_loop_control`` in 2.21: ``loop_var`` and
    ``index_var`` already among the task's variables, reserved or the same;
    2.19: ``loop_var`` already in use): each ``{"msg", "help", "obj"}``, ``obj``
    the variable's name (``display.warning(obj=...)``: the console's
    ``Origin:`` part)."""
    if results.legacy():
        if loop_var in variables:
            return [{"msg": "The loop variable %r is already in use." % loop_var,
                     "help": _LOOP_VARIABLE_HELP % "loop_var", "obj": loop_var}]
        return []
    named = [("loop_var", loop_var), ("index_var", index_var)]
    values = [value for _, value in named if value]
    out = []
    for option, value in named:
        if not value:
            continue
        if value in variables:
            conflict = "already in use"
        elif value in _RESERVED_LOOP_VARIABLES or value in _CONNECTION_VARIABLES:
            conflict = "reserved"
        elif values.count(value) > 1:
            conflict = "used more than once"
        else:
            continue
        out.append({"msg": "The variable %r is %s." % (value, conflict),
                    "help": _LOOP_VARIABLE_HELP % option, "obj": value})
    return out

