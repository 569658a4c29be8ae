"""ioc's replayed events → Ansible's callbacks, stats and variables (parent side).

The dispatcher streams the runner's events already in linear order
(``step_start``, per-host ``event``, ``left``, ``step_end``); here each one
becomes what the linear strategy would have done at that point:

* the callback, with Ansible's real ``Host`` and ``Task`` (or ``Handler``)
  objects and a real task result (:func:`ioc.ansible.results.task_result`):
  ``v2_playbook_on_task_start`` (the task's name templated as linear does),
  ``v2_runner_on_start``, ``v2_runner_item_on_*``, ``v2_runner_retry``,
  ``v2_runner_on_ok/failed/skipped/unreachable``, ``v2_on_file_diff``,
  ``v2_playbook_on_notify``;
* the recap counters in ``tqm._stats`` (ok, changed, failures, rescued,
  ignored, skipped, dark);
* the variables in Ansible's variable manager: facts and ``set_fact`` values
  as each result is replayed, registered values, and the authoritative state
  each host's runner reported at the end of its step (``host_left``);
* ``included: <file> for <hosts>`` after an inlined include's results
  (:func:`ioc.ansible.includes.announce_included`); a dynamic include's
  results are kept for :meth:`ioc.ansible.includes.Includes.splice`.
"""
from __future__ import annotations

import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ioc.agentless_runner.handlers import META_WITHOUT_WHEN
from ioc.ansible.convert import BRIDGE_INCLUDES
from ioc.ansible.includes import announce_included
from ioc.ansible.results import task_result
from ioc.ansible.state import PlayState
from ioc.ansible.values import plain, tagged


class EventReplay:
    """Sends the callbacks of one native play's replayed events, as linear would."""

    def __init__(self, state: PlayState) -> None:
        self.state = state
        self.tqm = state.tqm
        self.vm = state.vm
        #: ``meta: end_play`` ran: the iterator ends the play (``PlayRun.finish``).
        self.ended = False
        #: The current step's dynamic include results, as sent to the callbacks.
        self.include_results: List[Any] = []
        #: Per host, the item results of a looped include, until its final result.
        self.include_items: Dict[str, List[Dict[str, Any]]] = {}
        #: Why the run ends after the current step (a notified name no
        #: handler has: ``PlayRun.run`` raises it), or None.
        self.aborted: Optional[str] = None

    def take_include_results(self) -> List[Any]:
        """The include results kept so far (for ``Includes.splice``); none are kept after."""
        results, self.include_results = self.include_results, []
        return results

    def announce_includes(self) -> None:
        """After an inlined include's results: ``included: <file> for <hosts>``."""
        task = self.state.ir_task
        if not self.include_results or task is None or task.include_scope is not None:
            return  # nothing ran, or a dynamic include (Includes.splice announces it)
        announce_included(self.state, self.take_include_results())

    def play_level(self, name: str, args: Sequence[Any]) -> None:
        from ansible.utils.display import Display

        if name == "no_hosts_remaining":
            self.tqm.send_callback("v2_playbook_on_no_hosts_remaining")
        elif name == "warning":
            Display().warning(args[0])

    def step_start(self, key: Tuple[int, int], hosts: List[str], first: Dict[str, Any]) -> None:
        from ansible.playbook.handler import Handler

        self.announce_includes()
        state = self.state
        if key[1] == 0:
            entry = state.program.entry(key[0])
            state.ir_task = entry.task
            self.include_results = []
            if entry.implicit:
                state.task = state.converted.gather if entry.task.action == "gather_facts" \
                    else None
            else:
                state.task = state.converted.origin[id(entry.task)]
        else:
            state.ir_task = state.program.handlers[key[1] - 1]
            state.task = state.handler_objects[key[1] - 1]
        if state.task is None or state.ir_task.action == "meta":
            return
        state.template_name(hosts[0] if hosts else None)
        if isinstance(state.task, Handler):
            self.tqm.send_callback("v2_playbook_on_handler_task_start", state.task)
        else:
            self.tqm.send_callback("v2_playbook_on_task_start", state.task, is_conditional=False)
        # Linear starts a worker process per host now, and multiprocessing
        # flushes the standard streams before it forks one: what Display
        # wrote to stdout (Display never flushes; a pipe's stdout is
        # block-buffered) is out before the task's warnings and errors on
        # stderr.
        sys.stdout.flush()

    def host_event(self, name: str, event: Dict[str, Any]) -> None:
        state = self.state
        host = state.hosts[name]
        kind = event["e"]
        if kind in ("start", "done", "unreachable", "crash"):
            # Linear forks a worker per host and task, and a fork flushes both
            # streams first: what the callbacks wrote to stdout (a pipe: block
            # buffered) comes before a result's warnings on stderr.
            _flush_std_streams()
        if kind == "abort":
            self.aborted = event["msg"]
            return
        if kind == "warn":  # (linear's display.warning while it processes the result)
            from ansible.utils.display import Display

            if event.get("help"):  # (a loop variable's: its name as written, for Origin)
                Display().warning(event["msg"], help_text=event["help"],
                                  obj=_loop_variable(state.task, event.get("obj")))
            else:
                Display().warning(event["msg"])
            return
        if kind == "saved":  # (linear's display.vv while it processes the result)
            from ansible.utils.display import Display

            Display().vv(event["msg"])
            return
        if kind == "notify":  # also from implicit steps (a flush)
            handler = state.handler_objects[event["handler"]]
            self.tqm.send_callback("v2_playbook_on_notify", handler, host)
            return
        task = state.task
        if task is None:
            return
        action = state.ir_task.action
        if kind == "start":
            if event.get("meta"):
                if event["k"][1]:  # a handler (per host, as _execute_meta sends it)
                    self.tqm.send_callback("v2_playbook_on_handler_task_start", task)
                else:
                    self.tqm.send_callback("v2_playbook_on_task_start", task,
                                           is_conditional=False)
                meta = task._get_meta()
                if meta in META_WITHOUT_WHEN and task.when:
                    from ansible.utils.display import Display

                    # (StrategyBase._execute_meta's warning; Display shows it once)
                    Display().warning("%s task does not support when conditional" % meta)
            else:
                self.tqm.send_callback("v2_runner_on_start", host, task)
        elif kind == "item":
            status = event["status"]
            if action in BRIDGE_INCLUDES:  # what each item included
                self.include_items.setdefault(name, []).append(event["result"])
            result = _uncensored(event["result"])
            self.tqm.send_callback("v2_runner_item_on_%s" % status,
                                   task_result(host, as_run(task, result),
                                               result, action, status, item=True))
        elif kind == "retry":
            self.tqm.send_callback("v2_runner_retry",
                                   task_result(host, as_run(task, event["result"]),
                                               event["result"], action, "ok", retry=True))
        elif kind in ("async_poll", "async_ok", "async_failed"):
            # TaskExecutor._poll_async_result's callbacks (the poll's is the
            # async_status pseudo-task's result: the callbacks read its keys only)
            status = "failed" if kind == "async_failed" else "ok"
            self.tqm.send_callback("v2_runner_on_%s" % kind,
                                   task_result(host, as_run(task, event["result"]),
                                               event["result"], action, status))
        elif kind in ("done", "unreachable", "crash"):
            self.final(host, event)

    def final(self, host: Any, event: Dict[str, Any]) -> None:
        """A host's final result for the current task: stats, variables, the callback."""
        task, action = self.state.task, self.state.ir_task.action
        if event["e"] != "done" and not event.get("started"):
            self.tqm.send_callback("v2_runner_on_start", host, task)
        status = event["status"]
        result = _uncensored(event.get("result") or {})
        ignored = bool(event.get("ignored"))
        items = self.include_items.pop(host.name, None)
        if items and isinstance(result.get("results"), list) and \
                len(items) == len(result["results"]):
            # The aggregate keeps the items' public keys only: the include's
            # items as their events had them (what each included).
            result = dict(result, results=items)
        if action == "meta":
            header = result.get("skip_reason") if status == "skipped" else result.get("msg")
            if header and not getattr(task, "implicit", False):
                from ansible.utils.display import Display

                Display().vv("META: %s" % header)
            if status == "ok":
                if result.get("meta") == "end_play":
                    self.ended = True
                return
        elif not (status == "ok" and action in BRIDGE_INCLUDES):
            # An include's ok counts once per file it included (announce_includes).
            self._count(host.name, status, bool(result.get("changed")), ignored,
                        bool(event.get("rescued")))
        if status == "ok":
            self._remember(host.name, result)
        self._apply_register(host.name, result)
        method = {"ok": "v2_runner_on_ok", "skipped": "v2_runner_on_skipped",
                  "failed": "v2_runner_on_failed",
                  "unreachable": "v2_runner_on_unreachable"}[status]
        shown = task_result(host, task if action in BRIDGE_INCLUDES else as_run(task, result),
                            result, action, status, ignored=ignored)
        if action in BRIDGE_INCLUDES:
            self.include_results.append(shown)
        if status == "failed":
            self.tqm.send_callback(method, shown, ignore_errors=ignored)
        else:
            if status == "ok" and result.get("diff") \
                    and (self.state.strategy._diff or task.diff) \
                    and not isinstance(result.get("results"), list):
                self.tqm.send_callback("v2_on_file_diff", shown)
            self.tqm.send_callback(method, shown)

    def _count(self, host: str, status: str, changed: bool, ignored: bool, rescued: bool) -> None:
        stats = self.tqm._stats
        if status == "failed":
            if ignored:
                stats.increment("ok", host)
                stats.increment("ignored", host)
                if changed:
                    stats.increment("changed", host)
            else:
                stats.increment("rescued" if rescued else "failures", host)
        elif status == "unreachable":
            if ignored:
                stats.increment("ok", host)
                stats.increment("ignored", host)
            else:
                stats.increment("dark", host)
        elif status == "skipped":
            stats.increment("skipped", host)
        else:
            stats.increment("ok", host)
            if changed:
                stats.increment("changed", host)

    def _remember(self, host: str, result: Dict[str, Any]) -> None:
        """Facts and set_fact values reach Ansible as soon as the result is replayed."""
        facts = result.get("ansible_facts")
        if not isinstance(facts, dict):
            return
        action = self.state.ir_task.action
        if action in ("setup", "gather_facts"):
            self.vm.set_host_facts(host, plain(facts))
            if action == "gather_facts":  # as Ansible's gather_facts action marks it
                self.vm.set_host_facts(host, {"_ansible_facts_gathered": True})
        elif action == "set_fact":
            # The task's own keys: they carry the origin Ansible's warning about a
            # reserved name points at (file:line:column and the excerpt).
            written = {str(k): k for k in (getattr(self.state.task, "args", None) or {})}
            self.vm.set_nonpersistent_facts(
                host, {written.get(k, k): v for k, v in tagged(facts).items()})
            # (the runner's reading of ``cacheable``: "no" is false, as Ansible's)
            if result.get("ansible_facts_cacheable") or result.get("_ioc_cacheable"):
                self.vm.set_host_facts(host, plain(facts))

    def _apply_register(self, host: str, result: Dict[str, Any]) -> None:
        name = self.state.ir_task.register
        if name:
            # Ansible's own (tagged) name: a reserved-name warning points at the
            # register line (2.21 keeps register as {name: projection})
            given = getattr(self.state.task, "register", None)
            name = next((k for k in given if k == name), name) if isinstance(given, dict) \
                else given if given == name else name
            value = {k: v for k, v in tagged(result).items() if not k.startswith("_ioc_")}
            self.vm.set_nonpersistent_facts(host, {name: value})

    def host_left(self, name: str, end: Dict[str, Any]) -> None:
        """The authoritative state a host's runner reported at the end of its step."""
        state = end.get("state") or {}
        if state.get("facts"):
            self.vm.set_host_facts(name, plain(state["facts"]))
        if state.get("runtime"):
            # What the replay gave Ansible already is not given again (a second
            # set would repeat its reserved-name warning, without the origin).
            known = self.vm._nonpersistent_fact_cache.get(name, {})
            runtime = {k: v for k, v in tagged(state["runtime"]).items()
                       if k not in known or plain(known[k]) != v}
            if runtime:
                self.vm.set_nonpersistent_facts(name, runtime)
        for key, value in (state.get("include_vars") or {}).items():
            self.vm.set_host_variable(name, key, tagged(value))


def _flush_std_streams() -> None:
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # (closed, or a broken pipe: as multiprocessing's own flush)


def as_run(task: Any, result: Mapping[str, Any]) -> Any:
    """The task as the callbacks see a result of it: ``delegate_to`` and ``no_log`` templated.

    Linear's results carry the worker's post-validated task, so the default
    callback labels them ``[web1 -> db1]`` with the host ``delegate_to``
    named, and with none when it named the host itself or was omitted
    (``{{ x | default(omit) }}``). The runner reports the host it delegated
    to in ``_ansible_delegated_vars``. A templated ``no_log`` is what the
    runner made of it: a censored result.
    """
    delegate, no_log = (_templated(getattr(task, k, None)) for k in ("delegate_to", "no_log"))
    # An item its when skips (or fails on: ``_ioc_unvalidated``) never gets
    # post-validated in linear: its task keeps the template, which censors it
    # (item=None); so does this.
    no_log = no_log and not result.get("skipped") and not result.get("_ioc_unvalidated")
    if not (delegate or no_log):
        return task
    copy = task.copy(exclude_parent=True, exclude_tasks=True)
    copy._parent = task._parent
    if delegate:
        host = (result.get("_ansible_delegated_vars") or {}).get("ansible_delegated_host")
        # (a delegate_to that could not be templated stays the task's own, origin-tagged
        # value: the error names where it was written)
        copy.delegate_to = task.delegate_to if host == plain(task.delegate_to) else host
    if no_log:  # the callbacks censor on task.no_log: a template is always true
        copy.no_log = bool(result.get("_ansible_no_log") or "censored" in result)
    return copy


def _uncensored(result: Dict[str, Any]) -> Dict[str, Any]:
    """The whole result the runner censored for a ``no_log`` template whose value
    is false (``results.unvalidated_no_log``), when it sent it along (a failure):
    Ansible censors it on the task's template as linear's callbacks do, and
    still shows its error."""
    whole = result.get("_ioc_uncensored")
    return whole if isinstance(whole, dict) else result


def _templated(value: Any) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def _loop_variable(task: Any, name: Any) -> Any:
    """``name`` as the task's ``loop_control`` has it (``loop_var`` or
    ``index_var``, tagged with where it was written), else ``name`` itself
    (the default ``item``: Display's ``Origin: <unknown>``)."""
    control = getattr(task, "loop_control", None)
    for field in ("loop_var", "index_var"):
        value = getattr(control, field, None)
        if value is not None and value == name:
            return value
    return name

