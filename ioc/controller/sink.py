"""Where replayed runner events become callbacks and recap counts (``ioc-run``).

The replay (:mod:`ioc.replay`) releases each host's events in linear order;
:class:`PlaySink` turns them into the callback calls the linear strategy
makes (task banners once per task, per-host results, items, retries, diffs,
notifications, ``included:`` lines after the step) and counts the recap.
``mitogen_batch`` forwards them to Ansible's own callbacks instead
(``ioc.ansible.dispatcher.ForwardingSink``).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from ioc.agentless_runner.handlers import META_WITHOUT_WHEN
from ioc.callbacks import Callback, Stats, Status, TaskView
from ioc.controller.stepping import Stepper
from ioc.errors import RunAborted
from ioc.planner import Plan
from ioc.replay import Event, Key, StepSink

#: Events that end a host's part of a step.
FINAL_EVENTS = frozenset({"done", "unreachable", "crash", "abort"})
#: Events whose callbacks Ansible's workers send as the task runs (through the
#: results thread), not the strategy as it processes the host's result.
_FROM_WORKERS = frozenset({"start", "item", "retry", "async_poll", "async_ok", "async_failed"})


class PlaySink(StepSink):
    """Turns replayed runner events into callbacks and recap counts."""

    def __init__(self, plan: Plan, callbacks: Callback, stats: Stats,
                 stepper: Optional[Stepper] = None) -> None:
        self.plan = plan
        #: ``--step``: asks the user before each task (None: no ``--step``).
        self.stepper = stepper
        self.callbacks = callbacks
        self.stats = stats
        self.view: Optional[TaskView] = None
        self.ends: Dict[str, Event] = {}
        #: Hosts whose include ran in the current step, by included file (L7.8).
        self.included: Dict[str, List[str]] = {}
        #: Why the run ends after the current step (an ``abort`` event), or None.
        self.aborted: Optional[str] = None

    def step_start(self, key: Key, hosts: Sequence[str], first: Event) -> None:
        entry = self.plan.program.entry(key[0])
        if key[1] == 0:
            task = entry.task
            name = first.get("name") or task.display_name
            self.view = TaskView(name=name, action=task.action, location=task.location.origin,
                                 args=task.args, implicit=entry.implicit)
            label = "TASK: %s" % task.display_name
        else:
            handler = self.plan.program.handlers[key[1] - 1]
            name = first.get("name") or handler.display_name
            self.view = TaskView(name=name, action=handler.action, location=handler.location.origin,
                                 is_handler=True, args=handler.args)
            label = "HANDLER: %s" % handler.display_name
        if self.stepper is not None and not self.stepper.decide(key, hosts, label):
            return  # --step: "no" leaves no trace of the task, not even its banner
        if self.view.action != "meta":  # (a meta's banner comes per host: host_event)
            self.callbacks.task_start(self.view)

    def shown(self, event: Event) -> bool:
        """Whether callbacks see ``event``. Once a host's result ended the run
        (``abort``), linear processes no more results: of the other hosts of
        the step, only what their workers send as it happens still shows (the
        start of the task, its items, retries and async polls), never their
        results (and no later step: the run ends with this one)."""
        return self.aborted is None or (event["e"] in _FROM_WORKERS and not event.get("meta"))

    def host_event(self, host: str, event: Event) -> None:
        assert self.view is not None
        kind = event["e"]
        if not self.shown(event):
            return
        if kind == "abort":
            self.aborted = event["msg"]
        elif kind == "warn":
            if event.get("help"):  # (display.warning with obj and help_text: an untagged obj)
                self.callbacks.warning("%s\nOrigin: <unknown>\n\n%s\n\n%s\n"
                                       % (event["msg"], event.get("obj"), event["help"]))
            else:
                self.callbacks.warning(event["msg"])
        elif kind == "saved":  # (linear's display.vv while it processes the result)
            self.callbacks.display(event["msg"], 2)
        elif kind == "start":
            if event.get("meta"):
                self.callbacks.task_start(self.view)  # per host, like linear (L5.3)
                self._meta_when_warning(event)
            else:
                self.callbacks.runner_on_start(host, self.view)
        elif kind == "item":
            self.callbacks.runner_item(host, self.view, Status(event["status"]),
                                       _shown(event["result"]))
        elif kind == "retry":
            self.callbacks.runner_retry(host, self.view, event["result"])
        elif kind in ("async_poll", "async_ok", "async_failed"):
            getattr(self.callbacks, "runner_" + kind)(host, self.view, event["result"])
        elif kind == "diff":
            self.callbacks.on_file_diff(host, self.view, event["result"])
        elif kind == "notify":
            handler = self.plan.program.handlers[event["handler"]]
            self.callbacks.on_notify(host, TaskView(name=handler.display_name, action=handler.action,
                                                    location=handler.location.origin, is_handler=True))
        elif kind in FINAL_EVENTS:
            self._final(host, event)

    def _meta_when_warning(self, event: Event) -> None:
        """Linear warns, after the banner, that these meta tasks ignore ``when``."""
        key = event["k"]
        task = self.plan.program.entry(key[0]).task if key[1] == 0 else \
            self.plan.program.handlers[key[1] - 1]
        action = (task.args or {}).get("_raw_params")
        if task.when and action in META_WITHOUT_WHEN:
            self.callbacks.warning("%s task does not support when conditional" % action)

    def _final(self, host: str, event: Event) -> None:
        assert self.view is not None
        if event["e"] != "done" and not event.get("started"):
            self.callbacks.runner_on_start(host, self.view)
        status = Status(event["status"])
        is_meta = self.view.action == "meta"
        if is_meta and status is Status.OK:
            return  # meta results are not shown or counted (L7.10)
        dynamic = self.plan.program.entry(event["k"][0]).task.include_scope is not None \
            if event["k"][1] == 0 else False
        if not is_meta and not (dynamic and status is Status.OK):
            # A dynamic include counts ok once per file it included, after
            # the step (L7.8); its own ok is not counted.
            self.stats.record(host, status.value, bool(event["result"].get("changed")),
                              ignored=bool(event.get("ignored")), rescued=bool(event.get("rescued")))
        if status is Status.OK and "_ioc_included" in event["result"] and not dynamic:
            self.included.setdefault(event["result"]["_ioc_included"], []).append(host)
        self.callbacks.runner_result(host, self.view, status, _shown(event["result"]),
                                     ignored=bool(event.get("ignored")))

    def host_left(self, host: str, event: Event) -> None:
        self.ends[host] = event

    def step_end(self, key: Key) -> None:
        """``included: file for h1, h2`` comes after every result of the step;
        a run a result of it aborted ends here."""
        if self.aborted is not None:
            raise RunAborted(self.aborted)
        for included, hosts in self.included.items():
            self.callbacks.playbook_on_include(included, hosts)
        self.included = {}


#: The runner's notes to the callbacks: how the ``[ERROR]`` line words a
#: failure — the action raised it (``Task failed: <msg>``), an action
#: plugin's own failure (``Task failed: Action failed: <msg>``), or none at
#: all: ``until`` ran out, the action itself did not fail, or (2.21) an async
#: job was still running when its polls ran out; where the engine's
#: error is (a ``when``/``until``/``changed_when``/``failed_when`` expression's
#: origin: the "caused by" part); a changed_when/failed_when expression's error
#: (the action's); a break_when expression's error (the item's); a loop_control label that could not be templated (its warning);
#: debug's "Encountered N template error(s)." warnings (where each template is);
#: the conditions written as a template (their deprecation warnings);
#: the deprecated values the task's templates read (their deprecation warnings);
#: the Jinja constant strings with templates that were templated (their warnings);
#: the causes of a module's warnings raised from an error (their full text);
#: an unreachable host's connection was lost while its batch ran (ioc-adhoc
#: --retries tries again only hosts never connected); what the engine's error
#: says to do (its help text: an untrusted value's); a loop's items that could
#: not be had (a with_<lookup> plugin's failure has no origin); where an error
#: is about (a loop item whose template failed).
_FOR_CALLBACKS = frozenset({"_ioc_raised", "_ioc_action_failure", "_ioc_until_exhausted",
                            "_ioc_error_origin", "_ioc_condition_error", "_ioc_label_error",
                            "_ioc_break_when_error",
                            "_ioc_marker_warnings", "_ioc_conditional_templates",
                            "_ioc_deprecations", "_ioc_const_warnings", "_ioc_error_chain",
                            "_ioc_warning_causes", "_ioc_lost", "_ioc_no_error", "_ioc_uncensored",
                            "_ioc_error_help", "_ioc_loop_error", "_ioc_error_at"})


def _shown(result: Dict[str, Any]) -> Dict[str, Any]:
    """A result as callbacks get it: without the runner's ``_ioc_*`` notes to the controller."""
    if not any(k.startswith("_ioc_") for k in result):
        return result
    return {k: v for k, v in result.items()
            if not k.startswith("_ioc_") or k in _FOR_CALLBACKS}
