"""Metas and handlers on the target: notifications, flushes, and the metas a host acts on.

A mixin of :class:`ioc.agentless_runner.batch.HostRun`: the walk calls
:meth:`HandlerRun.run_meta` for a ``meta`` task and the methods here keep the
host's notified handlers and run a flush in definition order (L5.2-L5.8),
stopping before a handler the runner does not run itself (``"foreign"``:
the controller has it run elsewhere and resumes the flush).
"""
from ioc.agentless_runner import results
from ioc.agentless_runner.flow import BatchEnd, EndHost, EndRole, AbortRun, \
    handler_scope, matching_handlers, safe_template, search_warnings, template_name
from ioc.agentless_runner.templating import Templar

#: ansible-core's words for a notified name no handler has nor listens to
#: (StrategyBase._process_pending_results).
MISSING_HANDLER = ("The requested handler '%s' was not found in either the main handlers list "
                   "nor in the listening handlers list")
#: What linear shows at -vv for each notification of a changed result it saves
#: for the next flush (StrategyBase._process_pending_results: the first
#: handler found answers; not while the host runs handlers).
SAVED_NOTIFICATION = "Notification for handler %s has been saved."
#: Metas whose `when` ansible-core does not evaluate (and warns that it does not).
META_WITHOUT_WHEN = frozenset({"noop", "refresh_inventory", "reset_connection"})
#: What the skip_reason of a skipped meta adds (strategy/__init__.py _execute_meta).
_META_SKIP_SUFFIX = {
    "flush_handlers": ", not running handlers for %(host)s",
    "clear_facts": ", not clearing facts and fact cache for %(host)s",
    "clear_host_errors": ", not clearing host error state for %(host)s",
    "end_batch": ", continuing current batch",
    "end_play": ", continuing play",
    "end_host": ", continuing execution for %(host)s",
    "end_role": ", continuing role %(role)s for %(host)s",
}


#: The ``msg`` of a meta that acted (strategy/__init__.py _execute_meta), shown
#: at -vv as ``META: <msg>``.
_META_MSG = {
    "noop": "noop",
    "clear_facts": "facts cleared",
    "clear_host_errors": "cleared host errors",
    "end_batch": "ending batch",
    "end_play": "ending play",
    "end_host": "ending play for %(host)s",
    "end_role": "ending role %(role)s for %(host)s",
    "refresh_inventory": "inventory successfully refreshed",
}


#: Linear's error for a handler that is ``meta: flush_handlers`` (_execute_meta).
FLUSH_AS_HANDLER = "flush_handlers cannot be used as a handler"


class HandlerRun(object):
    """Notifications, flushes and metas of one host's walk (see the module doc)."""

    def run_meta(self, node, scope, key=None):
        """A meta task at ``node``; ``key``: a meta handler's step key."""
        task = node["t"]
        action = task["args"].get("_raw_params")
        handler = key is not None
        key = key or [node["i"], 0]
        if action == "flush_handlers" and self.options.get("flush_resume") and not handler:
            # The controller resumes a flush this host stopped in (or that it
            # already finished: then there is nothing to do here).
            return self.resume_flush(node, scope)
        templar = Templar(self.variables(task, scope))
        if not node.get("implicit"):
            # noop, refresh_inventory and reset_connection ignore `when` (Ansible warns)
            skipped = None if action in META_WITHOUT_WHEN else self.check_when(task, templar)
            self.emit({"e": "start", "k": key, "name": template_name(task, templar),
                       "meta": action})
            if skipped is not None:
                if not skipped.get("failed"):
                    skipped = self._meta_skipped(action, task)
                self.emit({"e": "done", "k": key, "status": results.status_of(skipped),
                           "result": skipped, "ignored": False, "rescued": False})
                return None
        if action == "flush_handlers" and handler:
            # linear raises it once the handler's banner is out: the run ends
            self.emit({"e": "abort", "k": key, "msg": FLUSH_AS_HANDLER})
            raise AbortRun()
        if action == "flush_handlers":
            return self.flush_handlers(node, scope)
        # noop and end_host act here; play-wide metas and reset_connection are
        # acted on by the controller when it sees this result.
        result = {"meta": action}
        if action in _META_MSG and not node.get("implicit"):
            result["msg"] = _META_MSG[action] % {"host": self.host, "role": task.get("role")}
        self.emit({"e": "done", "k": key, "status": "ok", "result": result,
                   "ignored": False, "rescued": False})
        if action == "clear_host_errors":
            self.errors_cleared += 1
        if action == "end_host":
            raise EndHost()
        if action == "end_role":
            raise EndRole()
        return None

    def _meta_skipped(self, action, task):
        """The linear strategy's result for a meta whose `when` is false."""
        reason = "%s conditional evaluated to False" % action
        msg = action
        suffix = _META_SKIP_SUFFIX.get(action)
        if suffix:
            reason += suffix % {"host": self.host, "role": task.get("role")}
        if action == "end_host":
            msg = ("end_host conditional evaluated to false, continuing execution for %s"
                   % self.host)
        return {"changed": False, "skipped": True, "skip_reason": reason, "msg": msg}

    def flush_handlers(self, node, scope):
        """Run notified handlers in definition order (L5.2–L5.6).

        ``self.notified`` holds names notified by tasks, and the numbers of
        handlers a handler notified that could not run in its flush: those
        were announced already (a notify event) and run at the next flush
        without another one, as a handler's ``notified_hosts`` in Ansible.
        """
        index = node["i"]
        pending = self.notified
        self.notified = []
        queued = set(n for n in pending if isinstance(n, int))
        for name in pending:
            if not isinstance(name, int):
                self._queue_handlers(name, index, queued)
        self._drop_once_handlers(queued)
        if not node.get("implicit"):
            # After the notify events, as linear's _execute_meta sends them
            # before its -vv "META:" line.
            self.emit({"e": "done", "k": [index, 0], "status": "ok",
                       "result": {"msg": "triggered running handlers for %s" % self.host},
                       "ignored": False, "rescued": False})
        return self.run_queued(index, scope, queued)

    def resume_flush(self, node, scope):
        """Go on with the flush this host stopped in (``self.flushing``)."""
        if self.flushing is None:
            return None
        queued = set(self.flushing)
        self.flushing = None
        self._drop_once_handlers(queued)
        return self.run_queued(node["i"], scope, queued)

    def _drop_once_handlers(self, queued):
        """L5.8: a run_once handler runs on the notified hosts up to the first
        whose variables make its run_once true (the controller chose them when
        the flush's step started); the others drop it."""
        for number, hosts in (self.options.get("once_handlers") or {}).items():
            if self.host not in hosts:
                queued.discard(int(number))

    def run_queued(self, index, scope, queued):
        """Run the queued handlers in definition order, up to the next foreign one.

        A handler marked ``"foreign"`` runs elsewhere (through Ansible, for
        every host notified of it) once every host has run the handlers
        before it (L5.4): the host stops before the first queued handler at
        or after the first foreign handler from ``flush_from`` on, keeps its
        queue (``flushing``) and the controller resumes the flush later.
        """
        start = self.options.get("flush_from", 0)
        bound = None
        for number, handler in enumerate(self.handlers):
            if number >= start and handler.get("foreign"):
                bound = number
                break
        for number, handler in enumerate(self.handlers):
            if number not in queued:
                continue
            if self.stops_before(number, bound):
                self.flushing = sorted(queued)
                raise BatchEnd()
            queued.discard(number)
            failure = self.run_handler(index, number, handler, scope, queued)
            if failure is not None:
                if scope.rescuable:
                    # An explicit flush in a block with a rescue: the rescue
                    # takes the host, and the handlers it was still to run
                    # stay notified (announced already) for the next flush.
                    self.notified.extend(n for n in sorted(queued) if n not in self.notified)
                return failure
        return None

    def stops_before(self, number, bound):
        """Whether the flush stops before queued handler ``number`` (``bound``: the
        first foreign handler not yet passed, or None)."""
        return bound is not None and number >= bound

    def _matching_handlers(self, name):
        return matching_handlers(self.handlers, name)

    def _queue_handlers(self, name, index, queued):
        """Queue every handler answering to ``name``; emit notify events."""
        for number in self._matching_handlers(name):
            if number not in queued:
                queued.add(number)
                self.emit({"e": "notify", "k": [index, 0], "handler": number})

    def run_handler(self, index, number, handler, scope, queued):
        key = [index, 1 + number]
        scope = handler_scope(handler, scope.rescuable)
        self.file_key = "h%d" % number
        self._in_flush = (number, queued, key)
        try:
            if handler["action"] == "meta":  # (linear's _execute_meta, as a task's)
                return self.run_meta({"i": index, "t": handler}, scope, key=key)
            return self.run_task(key, handler, scope, is_handler=True)
        finally:
            self._in_flush = None

    def _notify_from_handler(self, name):
        """L5.6: a handler's notification applies at once, inside its step.

        A later-defined handler runs in this flush; an earlier one (or the
        handler itself) is announced now and runs at the next flush.
        """
        number, queued, key = self._in_flush
        for other in self._matching_handlers(name):
            if other in queued or other in self.notified:
                continue  # already notified for this host: no event
            self.emit({"e": "notify", "k": key, "handler": other})
            if other > number:
                queued.add(other)
            else:
                self.notified.append(other)

    def check_notified(self, key, names):
        """A changed result's notifications each name a handler or a listen
        topic of the play (``notifiable``, from the controller; None: it
        cannot tell, as when a handler's name is templated). Linear looks
        each name up as it processes the result: one no handler answers to
        ends the whole run there (``ERROR_ON_MISSING_HANDLER``, the default;
        the result is never shown), or is a warning before the result; one
        that a handler answers to is saved for the next flush, which -vv
        shows (``saved_notices``: the controller's -v count is 2 or more),
        unless a handler notifies it (then it applies at once, L5.6).
        """
        known = self.options.get("notifiable")
        if known is None:
            return
        for name in names:
            for warning in search_warnings(self.options.get("handler_search") or (), name):
                self.emit({"e": "warn", "k": key, "msg": warning})
            if name in known:
                if self.options.get("saved_notices") and self._in_flush is None:
                    self.emit({"e": "saved", "k": key, "msg": SAVED_NOTIFICATION % name})
                continue
            msg = MISSING_HANDLER % name
            if self.options.get("missing_handler") == "warn":
                self.emit({"e": "warn", "k": key, "msg": msg})
                continue
            self.emit({"e": "abort", "k": key, "msg": msg})
            raise AbortRun()

    def add_notifications(self, task, templar, names=None):
        """Queue the task's notifications; ``names`` are a loop's, templated per item."""
        if names is None:
            names = [safe_template(templar, n) for n in task.get("notify", ())]
        for name in names:
            if self._in_flush is not None:
                self._notify_from_handler(name)
            elif name not in self.notified:
                self.notified.append(name)
