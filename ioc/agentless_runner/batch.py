"""The batch executor: one batch of a play, for one host, on that host.

The controller calls :func:`run_batch` once per host per batch. It walks the
play's task tree in the linear strategy's order (block → rescue → always),
runs the tasks whose index lies in ``[start, end)`` and decides every per-host
question locally: ``when``, loops, ``until``, ``changed_when``/``failed_when``,
``ignore_errors``, rescue/always, notifications and handler runs. Each step of
the host's progress is sent to the controller as an event *as it happens*;
the last event carries the host's state for the next batch.

Events (plain dicts; ``k`` is the step key ``[task index, sub]``, where sub is
0 for the task itself and ``1 + n`` for handler ``n`` run by a flush)::

    {"e": "start", "k": k, "name": templated_name}
    {"e": "item",  "k": k, "status": s, "result": r}      # per loop item
    {"e": "retry", "k": k, "result": r}                   # per failed attempt
    {"e": "notify", "k": k, "handler": n}                 # at a flush
    {"e": "warn",  "k": k, "msg": m}                      # a notified name no handler has
    {"e": "abort", "k": k, "msg": m}                      # ... that ends the run, instead of done
    {"e": "done",  "k": k, "status": s, "result": r, "ignored": b, "rescued": b}
    {"e": "end",   "status": "ok"|"failed"|"ended"|"aborted", "state": {...}}

``s`` is ``ok``, ``failed`` or ``skipped``. Results in events are censored for
``no_log`` tasks; the state keeps the real values, because later tasks read
them exactly as Ansible's variable manager would.
"""
import contextlib
import os
import re
import time
from collections import ChainMap

import mitogen.core

from ioc.agentless_runner import (actions, ansible_actions, ansible_module, asyncjob, context,
                                  lifeline, results, searchpath, templating, transfer, trust)
from ioc.agentless_runner.flow import (BatchEnd, EndHost, EndRole, Failure, HostUnreachable,
                                       LoopTypeError, AbortRun,
                                       Scope, as_bool, notification_names, safe_template,
                                       template_name)
from ioc.agentless_runner.handlers import HandlerRun
from ioc.agentless_runner.lookups import LookupFailure, Lookups, listify, key as lookup_key
from ioc.agentless_runner.loops import LoopRun
from ioc.agentless_runner.template_errors import (UndefinedVariableError, UntrustedTemplateError,
                                                  conditional_error_text)
from ioc.agentless_runner.templating import (Deprecated, DeprecatedReads,
                                             DeprecatedText, Templar, TemplateError, UndefinedVariableError,
                                             Results, Verbatim, current_reads, is_template,
                                             to_builtin,
                                             TemplatedConditionals, ConstTemplates, StorageConversions,
                                             unwrapped_condition)

WIRE_VERSION = 1
OMIT = context.OMIT


#: run_batch calls this runner process has served in the controller's current
#: run: the transport report and the tests count round trips from the
#: target's side, not the controller's. A runner kept across runs (``ioc-run
#: --persist``) counts each run apart: the batch names its run.
CALLS = [0]
RUN = [None]

#: Controller file contents by sha1, kept for the life of the runner so each
#: file crosses the network once per host per run (see controller/payloads.py).
BLOBS = {}


@mitogen.core.takes_econtext
def run_batch(batch, sender, econtext=None):
    """Run ``batch`` (built by ``ioc.controller.play``) and stream events to ``sender``.

    ``econtext`` (mitogen's, passed by its dispatcher) ties the runner's
    life to its controller's: see :mod:`ioc.agentless_runner.lifeline`.
    """
    if batch.get("v") != WIRE_VERSION:
        raise ValueError("ioc runner speaks wire version %d, got %r"
                         % (WIRE_VERSION, batch.get("v")))
    batch = trust.decode(batch)  # (the controller's trusted text, see trust.py)
    run = (batch.get("options") or {}).get("run")
    if run != RUN[0]:
        RUN[0] = run
        CALLS[0] = 0
    CALLS[0] += 1
    local_dir = (batch.get("options") or {}).get("local_dir")
    if local_dir and os.access(local_dir, os.X_OK):
        # A local connection's modules start in the play's directory
        # (ActionBase._low_level_execute_command): ioc's own modules run in
        # this process, which serves one host, and a relative path is there.
        os.chdir(local_dir)
    plugins = batch.get("plugins") or {}
    for kind in plugins:
        templating.declare_foreign(kind, plugins[kind])
    # (always: a test of its own may leave a call to Ansible's, see ControllerAnswers)
    templating.use_plugin_caller(_controller_caller(sender))
    if econtext is not None:
        lifeline.install(econtext)
        transfer.attach(econtext)
        lifeline.watch(econtext, (batch.get("options") or {}).get("keepalive", 0))
        BLOBS.update(transfer.relayed(batch.get("relay")))
    HostRun(batch, lifeline.guard(sender.send), ask=_asker(sender)).run()


def _asker(sender):
    """Send an event that wants an answer and wait for it: one round trip.

    The event travels on the batch's own event stream with a reply handle
    (mitogen's ``reply_to``); the controller answers it from its dispatch
    loop (a plugin call) or when its replay reaches it (``--step``).
    """
    def ask(event):
        CALLS[0] += 1  # (a round trip of its own: the transport report counts it)
        return sender.context.send_await(
            mitogen.core.Message.pickled(event, handle=sender.dst_handle))
    return ask


def _controller_caller(sender):
    """Ask the controller to run a plugin ioc lacks (``ioc.controller.plugins.answer``)."""
    ask = _asker(sender)

    def call(kind, name, args, kwargs):
        answer = ask({"e": "plugin", "kind": kind, "name": name, "args": args, "kwargs": kwargs})
        if "error" in answer:
            raise TemplateError(answer["error"])
        return trust.decode(answer["value"])
    return call


def runner_info():
    """Where this runner came from and what it runs on, for diagnostics."""
    import sys
    return {"python": list(sys.version_info[:3]), "executable": sys.executable,
            "source": __file__, "calls": CALLS[0]}


class HostRun(HandlerRun, LoopRun):
    """The state of one host while its batch runs (its loops and handlers: the mixins)."""

    def __init__(self, batch, emit, ask=None):
        self.emit = emit
        self.host = batch["host"]
        self.start = batch["start"]
        self.end = batch["end"]
        self.tree = batch["tree"]
        self.handlers = batch.get("handlers", [])
        self.options = batch.get("options", {})
        #: ``--step``: sends an ``ask`` event before each task and returns the
        #: user's answer (see :meth:`take_step`); None when nobody is asked.
        self.ask = ask if self.options.get("step") else None
        #: Asks the controller for a file that was missing when it prepared the
        #: batch (see :meth:`controller_files`); None on the controller itself.
        self.ask_controller = ask
        #: Entries this host does not run at all (no event): ``gathering =
        #: smart`` leaves out fact gathering where facts are gathered already.
        self.skip = frozenset(self.options.get("skip") or ())
        results.SHAPE[0] = self.options.get("shape", "2.21")
        #: The deprecated values whose reads a task reports ("facts": the
        #: top-level fact names, "play_hosts"), as ansible-core tags them.
        self.deprecated = frozenset(self.options.get("deprecated") or ())
        #: Whether the consoles show those reads (a task's result records them either way).
        self.show_deprecations = not self.options.get("quiet_deprecations")
        templating.BROKEN_CONDITIONALS[0] = bool(self.options.get("allow_broken_conditionals"))
        layers = batch["vars"]
        self.inventory = layers.get("inventory", {})
        #: The connection variables TaskExecutor adds where nothing sets them
        #: (PlayContext.update_vars): below every layer, not in hostvars.
        self.connection = layers.get("connection", {})
        self.play_vars = layers.get("play", {})
        self.extra = layers.get("extra", {})
        self.magic = dict(layers.get("magic", {}))
        self.magic["omit"] = OMIT
        #: A delegated task's delegate (``ansible_delegated_vars``): its name,
        #: its own layers, magic variables and connection defaults; None when
        #: the task runs on this host's connection (see :meth:`delegated_vars`).
        self.delegate = layers.get("delegate")
        state = batch.get("state", {})
        self.facts = dict(state.get("facts", {}))
        self.runtime = dict(state.get("runtime", {}))
        if "skipped_reason" in self.deprecated:
            for name, value in self.runtime.items():
                if _empty_loop(value):  # (registered in an earlier batch: the wire is plain)
                    self.runtime[name] = _deprecate_skipped_reason(value)
        self._results = Results(self.runtime)  # (the layer of set_fact and register)
        #: ``include_vars`` values: above task vars, below set_fact (L6.3).
        self.included = dict(state.get("include_vars", {}))
        self.notified = list(state.get("notified", []))
        self.blocks_in = dict(state.get("blocks", {}))
        self.blocks_out = {}
        #: Role occurrence key (``role_key`` of a block) -> "ran" once a task
        #: of it ran for this host (not skipped, not unreachable), "done" once
        #: the host got to the end of an occurrence after that: linear's
        #: ``Role._had_task_run`` and ``_completed``, for this play.
        self.roles = dict(state.get("roles", {}))
        #: How many ``meta: clear_host_errors`` this walk ran: one run inside a
        #: block's rescue or always forgives the failure that block holds.
        self.errors_cleared = 0
        self._facts_layer = None
        BLOBS.update(batch.get("blobs") or {})
        #: Specs of Ansible's modules this batch's tasks run (their files are
        #: blobs): module key -> spec, see ansible_module.py.
        self.modules = batch.get("modules") or {}
        #: Controller files per task ("<index>" or "h<handler>"): src -> entry.
        self.files = batch.get("files") or {}
        self.file_key = None
        #: Answers of controller-side lookups for this host (see lookups.py),
        #: per task and loop item: ``"<file key>:<item index or ->"`` -> table.
        self.lookup_table = batch.get("lookups") or {}
        #: The loop item being run (its index), None outside a loop's items.
        self._item = None
        self._loop_so_far = None  # the items a loop has run so far (while it runs)
        #: What this batch wrote: the end event reports only that (the
        #: controller merges it into what it keeps for the host).
        self.written = {"facts": {}, "runtime": {}, "include_vars": {}}
        #: Facts a ``delegate_facts`` task gathered for its delegate (L7.3),
        #: and the values a ``set_fact`` with ``delegate_facts`` set for it.
        self.delegated_facts = {}
        self.delegated_runtime = {}
        #: (handler number, queued numbers, step key) while a flush runs a handler.
        self._in_flush = None
        #: The handlers still queued in a flush this host stopped in, before a
        #: handler the runner does not run (``"foreign"``: the controller has
        #: it run elsewhere, then resumes the flush with ``flush_resume``).
        self.flushing = state.get("flushing")
        #: The suspension point this host stopped at (see :meth:`reaches`),
        #: and whether it stopped before a task it runs after all (``checks``:
        #: an ``ansible_become*`` variable changed, it needs another runner).
        self.suspended = None
        self.before = False
        #: Per task index, names the controller prepared it from (``wrote``).
        self.checks = self.options.get("checks") or {}
        #: Delegated suspension points this host stops at whatever its
        #: ``when``: another host delegates the task to it (it runs there
        #: before this host's next task, as under linear), or the controller
        #: could not template its ``delegate_to`` (it fails there).
        self.wait_at = frozenset(self.options.get("wait_at") or ())
        #: include_vars files this batch decides: task index -> candidates.
        self.candidates = batch.get("candidates") or {}

    # -- the walk ------------------------------------------------------------

    def run(self):
        status = "ok"
        try:
            if self.run_nodes(self.tree, Scope()) is not None:
                status = "failed"
        except BatchEnd:
            pass
        except EndHost:
            status = "ended"
        except HostUnreachable:
            status = "unreachable"
        except AbortRun:
            status = "aborted"
        end = {"e": "end", "status": status, "state": self.state(), "calls": CALLS[0]}
        if self.suspended is not None and status == "ok":
            end["suspended"] = self.suspended
            if self.before:
                end["before"] = True
        if transfer.FETCHED[0]:  # bytes streamed from the controller during this batch
            end["streamed"], transfer.FETCHED[0] = transfer.FETCHED[0], 0
        self.emit(end)

    def state(self):
        state = {
            "facts": self.written["facts"],
            "runtime": self.written["runtime"],
            "include_vars": self.written["include_vars"],
            "notified": self.notified,
            "blocks": self.blocks_out,
            "roles": self.roles,
        }
        if self.delegated_facts:
            state["delegated_facts"] = self.delegated_facts
        if self.delegated_runtime:
            state["delegated_runtime"] = self.delegated_runtime
        if self.flushing is not None:
            state["flushing"] = self.flushing
        return state

    def run_nodes(self, nodes, scope):
        """Run nodes in order; return the first unrescued Failure, or None."""
        for node in nodes:
            if "fence" in node:
                raise BatchEnd()
            if "block" in node:
                failure = self.run_block(node, scope)
            else:
                failure = self.run_task_node(node, scope)
            if failure is not None:
                return failure
        return None

    def run_task_node(self, node, scope):
        index = node["i"]
        if index < self.start:
            return None
        if index >= self.end:
            raise BatchEnd()
        if index in self.skip:
            return None
        task = node["t"]
        if any(self.wrote(name) for name in self.checks.get(str(index), ())):
            # The controller prepared this task (its files, its identity...)
            # from a value this call changed: it prepares it afresh and runs
            # the rest of the batch (a suspension point: it runs the task for
            # this host when every host has reached it).
            self.suspended, self.before = index, not task.get("suspend")
            raise BatchEnd()
        if task["action"] == "meta":
            return self.run_meta(node, scope)
        self.file_key = str(index)
        choice = self.candidates.get(str(index))
        if choice is not None and not self.pick_file(task, scope, choice):
            # (the controller resolves the name, and runs the rest of the batch)
            self.suspended, self.before = index, True
            raise BatchEnd()
        if task.get("suspend") and (index in self.wait_at or self.reaches(task, scope)):
            # Ansible (or the controller, delegating it) runs it for this
            # host; the controller then resumes the batch
            self.suspended = index
            raise BatchEnd()
        return self.run_task([index, 0], task, scope)

    def wrote(self, name):
        """Whether this call may have written variable ``name``."""
        written = self.written
        if name in written["runtime"] or name in written["include_vars"]:
            return True
        facts = written["facts"]  # (as modules return them: ansible_os_family, getent_passwd)
        return name in facts or (name == "ansible_facts" and bool(facts))

    def pick_file(self, task, scope, choice):
        """The file of an ``include_vars`` whose name this batch decides: the
        first of the shipped candidates on the search path (``choice``, see
        controller/payloads.py ``candidates_of``), as the controller would
        have resolved it. False when the candidates cannot answer for the
        name (it leaves their pattern, or there were too many to ship)."""
        if task.get("loop") is not None:
            return self.pick_first_found(task, scope, choice)
        if not self.reaches(task, scope):
            return True  # skipped: nothing to read
        args = task.get("args") or {}
        try:
            name = Templar(self.variables(task, scope)).template(
                args.get("file", args.get("_raw_params")))
        except Exception:
            return True  # the task fails with the error itself
        name = str(name).rstrip("\n")
        found = choice.get("found")
        if found is None or not _answerable(name, choice):
            return False
        searched = searchpath.candidates(choice["stack"], "vars", name, choice["basedir"],
                                         results.legacy())
        entry = next((found[p] for p in map(os.path.normpath, searched) if p in found), None)
        if entry is None:
            entry = {"kind": "missing",
                     "msg": searchpath.not_found(name, searched, results.legacy())}
        self.files.setdefault(self.file_key, {})[name] = entry
        return True

    def pick_first_found(self, task, scope, choice):
        """:meth:`pick_file` for ``include_vars: "{{ item }}"`` looped
        ``with_first_found`` (``dataflow.deferred_patterns``): the lookup's
        answer, as the controller would have given it (``controller/lookups.py``
        ``_first_found``), from the shipped candidates: the first name (in
        order) found on the search path (its ``vars`` subdirectory first, as
        Ansible's first_found for include_vars), as the loop's one item, its
        file shipped for include_vars to read; none with ``skip``; else the
        plugin's error. False when the candidates cannot answer (a term that
        is not a name or a dict of ``files`` and ``skip``, a name outside
        their patterns): the controller answers it."""
        found = choice.get("found")
        if found is None:
            return False
        try:
            terms = [to_builtin(t) for t in listify(Templar(self.variables(task, scope))
                                                     .template(task["loop"]))]
        except Exception:
            return False  # (an undefined term...: the controller's to decide, as before)
        names, skip = [], False
        for term in terms:
            if isinstance(term, dict):
                if not set(term) <= {"files", "skip"} \
                        or not isinstance(term.get("skip", False), bool):
                    return False
                skip = term.get("skip", False)  # (the last dict's: first_found's set_options)
                files = term.get("files")
                names.extend(files if isinstance(files, list) else [files])
            else:
                names.append(term)
        if not all(isinstance(name, str) for name in names):
            return False
        answer = None
        for name in names:
            if not _answerable(name, choice) or any(c in name for c in ",;"):
                return False
            searched = searchpath.candidates(choice["stack"], "vars", name, choice["basedir"],
                                             results.legacy())
            path = next((p for p in map(os.path.normpath, searched) if p in found), None)
            if path is not None:
                answer = {"value": [path]}
                self.files.setdefault(self.file_key, {})[path] = found[path]
                break
        if answer is None and skip:
            answer = {"value": []}
        elif answer is None:
            cause = "No file was found when using first_found."
            answer = {"error": "The lookup plugin 'first_found' failed: %s" % cause,
                      "plugin": "first_found", "cause": cause}
        table = self.lookup_table.setdefault(lookup_scope(self.file_key, None), {})
        table[lookup_key("first_found", terms, {})] = answer
        return True

    def reaches(self, task, scope):
        """Whether this host runs ``task`` (a suspension point: Ansible runs it).

        False only when its ``when`` is false (for every loop item): then the
        runner reports it skipped itself, as for any task, and never runs its
        action. Anything it cannot decide here (an error, ``_task.result`` in
        a loop's ``when``) is Ansible's to decide.
        """
        try:
            templar = Templar(self.variables(task, scope))
            if task.get("loop") is None:
                skipped = self.check_when(task, templar)
                return not (skipped is not None and skipped.get("skipped"))
            if any("_task" in str(cond) for cond in task.get("when", ())):
                return True
            items = self.loop_items(task, templar)
            control = self.loop_control(task, templar)
            for index in range(len(items)):
                overlay = self.item_overlay(control, items, index)
                skipped = self.check_when(task, Templar(self.variables(task, scope, overlay)))
                if not (skipped is not None and skipped.get("skipped")):
                    return True
            return False
        except Exception:
            return True

    def run_block(self, block, scope):
        """A block; a role's block also ends where ``meta: end_role`` says (L7.10).

        An occurrence of a role (``role_key``) is not reached by a host for
        which that role completed (linear's iterator skips each of its tasks)
        unless it allows duplicates (``role_repeats``); it completes when the
        host gets to its end after a task of it ran."""
        key = block.get("role_key")
        if key is None:
            return self._run_block_of_role(block, scope)
        bid = str(block["b"])
        if bid not in self.blocks_in and self.roles.get(key) == "done" \
                and not block.get("role_repeats"):
            self.blocks_out[bid] = {"phase": "skipped", "failure": None}
            return None
        failure = self._run_block_of_role(block, scope)
        if failure is None and self.roles.get(key) == "ran":
            self.roles[key] = "done"
        return failure

    def role_ran(self, scope):
        """A task ran for this host (a result not skipped, not unreachable): its
        role's occurrence (the innermost ``role_key`` around it) ran."""
        for block in reversed(scope.blocks):
            key = block.get("role_key")
            if key is not None:
                if self.roles.get(key) != "done":
                    self.roles[key] = "ran"
                return

    def _run_block_of_role(self, block, scope):
        # meta: end_role ends the whole occurrence of its role: the block that
        # holds it (role_end), else (none encloses it) the role's own block
        if not (block.get("role_end") or block.get("role") and not any(
                outer.get("role_end") for outer in scope.blocks)):
            return self._run_block(block, scope)
        try:
            return self._run_block(block, scope)
        except EndRole:
            # The rest of the role is not reached, in this batch or a later one.
            self.blocks_out[str(block["b"])] = {"phase": "skipped", "failure": None}
            return None

    def _run_block(self, block, scope):
        """block → rescue → always, resumable across batch boundaries.

        A saved phase of ``block`` with a failure means the controller
        stopped this host while it was inside the block (``any_errors_fatal``,
        ``max_fail_percentage``): it goes straight to the rescue (L4.5).
        """
        if "hosts" in block and self.host not in block["hosts"]:
            return None  # a dynamic include's tasks, included by other hosts only (L7.8)
        bid = str(block["b"])
        phase, failure = self._resume(bid)
        if phase == "skipped":
            # Its include was skipped: the host never reaches it. Keep saying so
            # for as long as later batches still cover part of the block.
            self.blocks_out[bid] = {"phase": "skipped", "failure": None}
            return None
        if phase == "block" and failure is None and block.get("include"):
            # (inside the block: an include block holds its include's
            # parameters, which the include itself sees too)
            outcome = self.run_include(block["include"], scope.enter(block, False))
            if outcome == "skipped":
                self.blocks_out[bid] = {"phase": "skipped", "failure": None}
                return None
            if isinstance(outcome, Failure):
                return outcome
        has_rescue = bool(block.get("rescuable"))
        plain = scope.enter(block, False)
        try:
            if phase == "block" and failure is None:
                failure = self.run_nodes(block["block"], scope.enter(block, has_rescue))
                if failure is not None and has_rescue:
                    self._enter_rescue(failure)
            if phase == "block" and failure is not None and has_rescue:
                phase, failure = "rescue", None
                failure = self.run_nodes(block["rescue"], plain)
            elif phase == "rescue" and failure is None:
                failure = self.run_nodes(block["rescue"], plain)
            phase = "always"
            cleared = self.errors_cleared
            always_failure = self.run_nodes(block.get("always", ()), plain)
            if self.errors_cleared != cleared:
                failure = None  # linear clears the host's fail state (L7.10)
        except BatchEnd:
            self.blocks_out[bid] = {"phase": phase, "failure": _failure_wire(failure)}
            raise
        return always_failure or failure

    def run_include(self, node, scope):
        """The include task heading an inlined include: "ran", "skipped" (also
        when it failed and the failure was ignored) or a Failure."""
        index = node["i"]
        if index < self.start:
            return "ran"  # an earlier batch ran it (a skip would have been recorded)
        if index >= self.end:
            raise BatchEnd()
        self.file_key = str(index)
        status = []
        failure = self.run_task([index, 0], node["t"], scope, report=status.append)
        if failure is not None:
            return failure
        # (an include that failed, its failure ignored, included nothing: linear
        # adds no blocks for it, and the host goes on after it)
        return "skipped" if status in (["skipped"], ["failed"]) else "ran"

    def _resume(self, bid):
        saved = self.blocks_in.pop(bid, None)
        if not saved:
            return "block", None
        wire = saved.get("failure")
        failure = Failure(wire["task"], wire["result"]) if wire else None
        return saved["phase"], failure

    def _enter_rescue(self, failure):
        """Expose the failure to the rescue section (L4.1); the values persist."""
        self.set_runtime({"ansible_failed_task": failure.task,
                          "ansible_failed_result": failure.result})

    # -- variables -------------------------------------------------------------

    def answer_lookups_of(self, file_key, item=None):
        """Answer ``lookup()`` from the table of task ``file_key`` (and loop item
        ``item``): the controller, reading a task's file names before the batch."""
        self.file_key, self._item = file_key, item

    def variables(self, task, scope, overlay=None):
        """The host's variables for ``task``, highest precedence first (L6.3).

        Values that came out of templating or modules (registered results,
        facts, set_fact values, loop items) are ``Verbatim``: Ansible never
        templates them a second time, so a command printing ``{{ x }}`` stays
        literal; but registered and set_fact values are ``Results``, whose
        trusted text (what include_vars loaded) is templated when read.
        """
        magic = dict(self.magic)
        if task.get("role_path"):
            magic.update(_role_vars(task))
        if task.get("search_path"):
            magic["ansible_search_path"] = list(task["search_path"])
        maps = [Verbatim(overlay)] if overlay else []
        maps.extend(self._layers(task, scope, magic, self._own_layers()))
        view = ChainMap(*(maps + [self.connection]))
        # hostvars[this host] is every variable but the magic ones that hold
        # views themselves (hostvars, vars): no cycle for templates to walk.
        own = ChainMap(*[m for m in maps if m is not magic],
                       {k: v for k, v in magic.items() if k not in ("hostvars", "vars")})
        magic["hostvars"] = dict(self.magic.get("hostvars") or {}, **{self.host: own})
        # vars is every variable, its own "vars" a copy of them but that one
        # (VariableManager copies each into it, itself last): no cycle for a
        # template rendering it whole to walk.
        visible = {k: v for k, v in magic.items() if k != "vars"}
        inner = ChainMap(*[visible if m is magic else m for m in view.maps])
        everything = ChainMap({"vars": inner}, *inner.maps)
        if "vars" in self.deprecated:
            # 2.21 tags it deprecated: a template reading it warns (below magic,
            # the layer of the name it replaces)
            view.maps.insert(view.maps.index(magic) + 1,
                             Deprecated({"vars": everything}, "vars"))
        else:
            magic["vars"] = everything
        if task.get("delegate_to") is not None:
            magic["ansible_delegated_vars"] = self.delegated_vars(task, scope, magic)
        table = self.lookup_table.get(lookup_scope(self.file_key, None)) or {}
        if self._item is not None:
            table = ChainMap(self.lookup_table.get(lookup_scope(self.file_key, self._item)) or {},
                             table)
        # lookup/query/q are Jinja globals to Ansible: a variable of that name
        # (play vars, a registered result) hides them, and vars does not hold them.
        functions = Lookups(table, _evaluator(view), lambda: list(view),
                            self._late_lookup(self.file_key)).functions()
        return ChainMap(*view.maps, functions)

    def _own_layers(self):
        """This host's own layers (what a delegate has in their place)."""
        return {"runtime": self._results, "include_vars": self.included,
                "facts": self.facts_layer(), "inventory": self.inventory}

    def _layers(self, task, scope, magic, host):
        """The layers of ``task``'s variables but loop variables, highest first,
        with ``host``'s own layers (:meth:`_own_layers`) in their places."""
        maps = [magic]
        if "play_hosts" in self.deprecated and "play_hosts" in magic:
            maps.append(Deprecated({"play_hosts": magic.pop("play_hosts")}, "play_hosts"))
        maps.append(self.extra)
        if task.get("vars") and task.get("action") in _INCLUDE_ACTIONS:
            # (an include's own vars are include parameters: Task.get_include_params)
            maps.append(task["vars"])
        maps.extend(b["params"] for b in reversed(scope.blocks) if b.get("params"))
        maps.append(host["runtime"])
        if host["include_vars"]:
            maps.append(host["include_vars"])
        if task.get("vars"):
            maps.append(task["vars"])
        maps.extend(b["vars"] for b in reversed(scope.blocks) if b.get("vars"))
        maps.append(self.play_vars)
        maps.append(Deprecated(host["facts"], "facts", _KEPT_FACTS)
                    if "facts" in self.deprecated else Verbatim(host["facts"]))
        maps.append(host["inventory"])
        maps.extend(b["defaults"] for b in reversed(scope.blocks) if b.get("defaults"))
        return maps

    def delegated_vars(self, task, scope, magic):
        """``ansible_delegated_vars`` of a delegated ``task``: {delegate: its variables}.

        What ``VariableManager.get_delegated_vars_and_hostname`` gives: the
        delegate's variables in the task's play and scope (its inventory,
        facts, include_vars and set_fact layers in place of this host's; the
        play's, blocks' and task's vars; its magic variables and ``hostvars``),
        with ``inventory_hostname`` this host's, and no loop variables. Then
        the defaults ``PlayContext.set_task_and_variable_override`` writes
        into that dict before the ``when``: ``ansible_host`` (the delegate's
        name), ``ansible_port`` and ``ansible_user`` where the delegate has
        none. A ``delegate_to`` the planner left in the batch names this host
        itself (``{{ inventory_hostname }}``).
        """
        shipped = self.delegate
        if shipped is None:
            name, host, defaults = self.host, self._own_layers(), {}
            theirs = {}
        else:
            name, defaults, theirs = shipped["name"], shipped["defaults"], shipped["magic"]
            facts = dict(shipped["facts"])
            facts["ansible_facts"] = {_strip_prefix(k): v for k, v in shipped["facts"].items()}
            host = {"runtime": Results(shipped["runtime"]),
                    "include_vars": shipped["include_vars"], "facts": facts,
                    "inventory": shipped["inventory"]}
        own = {k: v for k, v in magic.items() if k not in _NOT_DELEGATED}
        own.update(theirs, inventory_hostname=self.host)
        if "play_hosts" in self.magic:
            own["play_hosts"] = self.magic["play_hosts"]
        layers = self._layers(task, scope, own, host)
        # (its "vars": every one of them but itself, as the host's own)
        own["vars"] = ChainMap(*[dict(own) if m is own else m for m in layers])
        view = ChainMap(*layers)
        transport = view.get("ansible_connection") or defaults.get("transport") or "ssh"
        fixed = {}
        if not any(k in view for k in ("ansible_%s_host" % transport, "ansible_ssh_host",
                                       "ansible_host")):
            fixed["ansible_host"] = name
        if not any(k in view for k in ("ansible_%s_port" % transport, "ansible_ssh_port",
                                       "ansible_port")):
            fixed["ansible_port"] = 5986 if transport == "winrm" else defaults.get("port")
        if not any(view.get(k) for k in ("ansible_%s_user" % transport, "ansible_ssh_user",
                                         "ansible_user")):
            fixed["ansible_user"] = defaults.get("user")
        view.maps.insert(0, fixed)
        return {name: view}

    def facts_layer(self):
        if self._facts_layer is None:
            layer = dict(self.facts)
            layer["ansible_facts"] = {_strip_prefix(k): v for k, v in self.facts.items()}
            self._facts_layer = layer
        return self._facts_layer

    def set_runtime(self, values):
        """set_fact/register values: visible at once, and reported to the controller."""
        self.runtime.update(values)
        self.written["runtime"].update(values)

    def add_facts(self, facts):
        self.facts.update(facts)
        self.written["facts"].update(facts)
        self._facts_layer = None

    # -- one task --------------------------------------------------------------

    def run_task(self, key, task, scope, is_handler=False, report=None):
        """Run a task (or handler) at step ``key``; return Failure or None.

        ``report``, if given, receives the final status (ok/failed/skipped).
        """
        templar = Templar(self.variables(task, scope))
        name = template_name(task, templar)
        if self.ask is not None and not self.take_step(key, name):
            return None
        self.emit({"e": "start", "k": key, "name": name})
        with DeprecatedReads() if self.deprecated else contextlib.nullcontext() as reads, \
                TemplatedConditionals() as conditionals, ConstTemplates() as consts, \
                context.PluginWarnings() as said, StorageConversions() as stored:
            result = results.with_exception(self.execute(key, task, scope, templar))
        if said.found:
            result["warnings"] = said.found + list(result.get("warnings") or ())
        if conditionals.found:
            results.templated_conditionals(
                result, [(text, origin or _that_origin(task, text), message)
                         for text, origin, message in conditionals.found])
        if reads is not None and reads.found and "results" not in result:
            # (after the conditions': ``when`` is evaluated before the arguments; a
            # loop's are its items', gathered: what its expression read is not recorded)
            results.read_deprecations(result, [notice for notice, _ in reads.found])
        if "_ioc_partial" in result:
            # One item of a loop delegated per item: the controller runs the
            # next item on its delegate and this task ends with the last one.
            self.emit(dict(result["_ioc_partial"], e="partial", k=key))
            return None
        item_notify = result.pop("_ioc_notify", None)
        status = results.status_of(result)
        if status == "ok" and result.get("changed") and item_notify is None and task.get("notify"):
            item_notify, number = [], 0
            try:  # (TaskExecutor templates a changed task's notify: an error fails the task)
                for number, notified in enumerate(task["notify"]):
                    item_notify.append(templar.template(notified))
            except TemplateError as exc:
                message = "Error processing keyword 'notify': %s" % exc
                result = results.with_exception(results.failed_result(
                    "Task failed: " + message, _ioc_task_error=True,
                    _ioc_error_expr=task["notify"][number]))
                written = _nth((task.get("origins") or {}).get("notify") or (), number)
                if written:  # (the console's "caused by": where the name was written)
                    result["_ioc_error_chain"] = [[message, written]]
                status = "failed"
        if status == "ok" and result.get("changed") and task.get("notify"):
            if item_notify is None:
                item_notify = [safe_template(templar, n) for n in task["notify"]]
            item_notify = notification_names(item_notify)
            self.check_notified(key, item_notify)  # (before anything else, as linear)
        # (a task whose ignore_errors is no boolean failed on it: 2.21 ignores nothing
        # then, 2.19's strategy reads the keyword as written: a template is true)
        # (a loop's: whether any item's held, as 2.21's)
        ignored = status == "failed" and (
            result["_ioc_ignore_errors"] if "_ioc_ignore_errors" in result else
            self._truthy(task.get("ignore_errors"), templar)
            if (result.get("_ioc_error_keyword") or [None])[0] not in _BOOLEAN_KEYWORDS
            else results.legacy())
        if task.get("register"):
            registered = results.registered(result)
            self.set_runtime({task["register"]: registered})
            if "skipped_reason" in self.deprecated and _empty_loop(registered):
                # (here only: what goes back to the controller stays plain)
                self.runtime[task["register"]] = _deprecate_skipped_reason(registered)
        if status == "ok":
            self.apply_effects(task, result)
            if result.get("changed"):
                self.add_notifications(task, templar, item_notify)
        if report is not None:
            report(status)
        if reads is not None and reads.found and self.show_deprecations:
            result["_ioc_deprecations"] = _deprecations(task, reads.found)
        if consts.found or stored.found:  # (not registered: Ansible's Display shows them)
            result["_ioc_const_warnings"] = _const_warnings(task, consts.found) \
                + _storage_warnings(task, stored.found)
        if "results" not in result:
            self._emit_diff(key, task, result, templar)
        if status in ("ok", "failed"):
            self.role_ran(scope)
        if status == "unreachable":
            # Not rescued, no always (L1.8); ignore_unreachable lets the host go on
            # (a loop's: as its items' values combine, see loops.py).
            ignore = result.pop("_ioc_ignore_unreachable") if "_ioc_ignore_unreachable" in result \
                else self._truthy(task.get("ignore_unreachable"), templar)
            self.emit({"e": "unreachable", "k": key, "status": status, "started": True,
                       "result": self._visible(task, result, templar, task_level=True),
                       "ignore": bool(ignore)})
            if ignore:
                return None
            raise HostUnreachable()
        rescued = status == "failed" and not ignored and scope.rescuable
        self.emit({"e": "done", "k": key, "status": status,
                   "result": self._visible(task, result, templar, task_level=True),
                   "ignored": ignored, "rescued": rescued})
        if status == "failed" and not ignored:
            return Failure(failed_task_wire(task, templar), results.public(result))
        return None

    def take_step(self, key, name):
        """``--step``: may this task run? The user answers once per task for
        every host that reaches it, before its ``when`` is looked at, as the
        linear strategy's ``_take_step`` asks. "n" leaves no trace of the task;
        "c" runs it and every task after it without asking."""
        answer = self.ask({"e": "ask", "k": key, "name": name})
        if answer == "c":
            self.ask = None
        return answer in ("y", "c")

    def execute(self, key, task, scope, templar):
        """Loop or single run; the returned result is already aggregated."""
        if task.get("loop") is None:
            return self.run_single(key, task, scope, templar)
        try:
            items = self.loop_items(task, templar)
        except TemplateError as exc:
            if not isinstance(exc, UndefinedVariableError):
                # TaskExecutor.run defers only an undefined variable (to after
                # `when`); any other error is the task's result as it is,
                # about the list item whose template failed when there is one
                item = None if getattr(exc, "plugin", None) else \
                    _failing_item(templar, task.get("loop"))
                failed = results.failed_result(str(exc), _ioc_loop_error={
                    "with": bool(getattr(exc, "loop_with", False)),
                    "plugin": getattr(exc, "plugin", None), "cause": getattr(exc, "cause", None),
                    "item": item})
                written = _nth((task.get("origins") or {}).get("loop_items") or (), item) \
                    if item is not None else None
                if written:  # (ioc-run's console: the error is about the item)
                    failed["_ioc_error_at"] = written
                return failed
            # L2.3: an undefined loop is skipped when `when` is false.
            skipped = self.check_when(task, templar)
            if skipped is not None:
                return skipped
            # (raised by the engine, not the action: the bridge words it as TaskExecutor)
            failed = results.failed_result(_task_failed(exc), _ioc_task_error=True,
                                           _ioc_error_expr=task.get("loop"))
            written = _nth((task.get("origins") or {}).get("loop") or (), 0)
            if written:  # (ioc-run's console: the "caused by" names the loop expression)
                failed["_ioc_error_chain"] = [[str(exc), written]]
            return failed
        except LoopTypeError as exc:
            return results.failed_result(str(exc))
        return self.run_loop(key, task, scope, templar, items)

    def check_when(self, task, templar):
        """None when every `when` holds; the skip result otherwise (or a failure)."""
        origins = task.get("when_origins") or ()
        reads = current_reads()
        for number, cond in enumerate(task.get("when", ())):
            origin = origins[number] if number < len(origins) else None
            if reads is not None:
                reads.where = ("at", origin or None)  # (a deprecated value read names it)
            try:
                if not templar.conditional(cond, origin=origin or None):
                    # (a condition that is one template: the value it gave, as Ansible's)
                    return results.skipped_result(False if unwrapped_condition(cond) else cond)
            except TemplateError as exc:
                error = conditional_error_text(exc)
                if not results.legacy():  # (2.21 says which keyword; 2.19 does not)
                    error = "A 'when' expression failed: %s" % error
                failed = results.failed_result(
                    "Task failed: %s" % error,
                    _ioc_task_error=True, _ioc_error_expr=cond,
                    _ioc_error_origin=origin or None, _ioc_unvalidated=True)
                written = getattr(exc, "origin", None)
                if isinstance(exc, UntrustedTemplateError) and written:
                    # (an !unsafe value the condition gave: the error is about it)
                    failed.update(_ioc_error_origin=written, _ioc_error_value_origin=written,
                                  _ioc_error_help=exc.help_text)
                return failed
        if reads is not None:
            reads.where = None
        return None

    def run_single(self, key, task, scope, templar, overlay=None, item_keys=None):
        """One execution: `when`, then the action with until/retries."""
        return results.with_exception(results.with_message(
            self._run_single(key, task, scope, templar, overlay, item_keys), task["action"]))

    def _run_single(self, key, task, scope, templar, overlay, item_keys):
        undelegated = (self.options.get("delegate_error") or {}).get(str(key[0]))
        if undelegated is not None and key[1] == 0:
            # delegate_to could not be templated: the task fails before its `when`
            message, written = undelegated
            failed = results.failed_result(
                "Task failed: %s" % message, _ioc_task_error=True, _ioc_error_expr=written,
                _ansible_delegated_vars={"ansible_delegated_host": written, "ansible_host": written},
                _ioc_unvalidated=True)
            origin = _nth((task.get("origins") or {}).get("delegate_to") or (), 0)
            if origin:  # (the console's "caused by": where delegate_to was written)
                failed["_ioc_error_chain"] = [[message, origin]]
            return failed
        skipped = self.check_when(task, templar)
        if skipped is not None:
            return skipped
        invalid = _invalid_keyword(task, templar)
        if invalid is not None:
            return invalid
        try:
            retries, delay = self._retry_settings(task, templar)
        except TemplateError as exc:
            return results.failed_result(str(exc))
        attempt = 0
        while True:
            attempt += 1
            result = self.run_action(task, templar, key)
            if result.get("unreachable"):
                return result  # no changed/failed_when, no retry: nothing ran
            if result.get("_ioc_task_error"):
                # ansible-core raises these: no changed/failed_when, no retry
                # (the marker stays: the Ansible bridge words them as its engine does)
                return result
            if retries > 1:
                result["attempts"] = attempt  # until sees reg.attempts (ansible-core)
            bound = dict(overlay or {})
            if task.get("register"):
                bound[task["register"]] = results.public(result)
            if not results.legacy():
                bound["_task"] = self._task_projections(result)  # 2.21: this attempt's
            check = Templar(self.variables(task, scope, bound))
            self.apply_result_conditions(task, result, check)
            if retries <= 1:
                return result
            if task.get("register"):
                # until sees the result as changed_when/failed_when left it (ansible-core
                # binds the one result dict they change)
                bound[task["register"]] = results.public(result)
                if not results.legacy():
                    bound["_task"] = self._task_projections(result)
                check = Templar(self.variables(task, scope, bound))
            try:
                if self.until_met(task, result, check):
                    return result
            except _ConditionFailed as failure:
                # ansible-core raises it: the attempt's result is dropped, no retry
                return failure.result
            if attempt >= retries:
                result["attempts"] = retries - 1
                # Failed by the engine, not by the action (the bridge says so to Ansible).
                result["_ioc_until_exhausted"] = not result.get("failed")
                result["failed"] = True
                if "failed_when_result" in result and not results.legacy():
                    # 2.21's UnifiedTaskResult.failed: what failed_when said wins
                    result["failed"] = bool(result["failed_when_result"])
                return result
            # ansible-core reports the attempt about to run (2..retries+1)
            result["attempts"] = attempt + 1
            result["retries"] = retries
            shown = dict(result, **item_keys) if item_keys else result
            labeller = getattr(self, "_labeller", None)
            if item_keys and labeller is not None:  # (2.21: templated with this attempt's result)
                shown["_ansible_item_label"] = labeller(result)[0]
            self.emit({"e": "retry", "k": key, "result": self._visible(task, shown, templar)})
            time.sleep(delay)

    def _retry_settings(self, task, templar):
        """(total runs, delay); total 1 means no retrying (L3.1)."""
        until, retries = task.get("until"), task.get("retries")
        if until is None and retries is None:
            return 1, 0
        count = 3 if retries is None else int(templar.template(retries))
        delay = task.get("delay")
        delay = 5 if delay is None else float(templar.template(delay))
        return max(count, 0) + 1, delay

    def until_met(self, task, result, templar):
        """Whether the attempt ends the retries; an ``until`` expression that
        cannot be evaluated raises :class:`_ConditionFailed` with the task's
        failure, as ansible-core's ``TaskExecutor`` raises it out of the attempt
        loop (2.21 words it "An 'until' expression failed", 2.19 not)."""
        until = task.get("until")
        if until is None:
            return not result.get("failed")
        origins = (task.get("origins") or {}).get("until") or ()
        for number, cond in enumerate(until):
            try:
                if not templar.conditional(cond, written=_nth(origins, number)):
                    return False
            except TemplateError as exc:
                error = conditional_error_text(exc)
                if not results.legacy():
                    error = "An 'until' expression failed: %s" % error
                raise _ConditionFailed(results.failed_result(
                    _task_failed(error), _ioc_task_error=True, _ioc_error_expr=cond,
                    _ioc_error_origin=_nth(origins, number)))
        return True

    def apply_result_conditions(self, task, result, templar):
        """changed_when, then failed_when, with the register bound (L3.2).

        As ansible-core 2.21's task result: ``<name>_when_result`` records the
        outcome (or the error text); an error in changed_when fails the task
        and failed_when is not evaluated; an existing exception (every failed
        result has one) moves to ``<name>_when_suppressed_exception`` when the
        expression errs or, for failed_when, whenever it is evaluated (2.19:
        only when failed_when is false).
        """
        if result.get("skipped"):
            return
        # What the action returned and each outcome, for the Ansible bridge: it
        # applies them to Ansible's own task result as TaskExecutor does (its
        # error wording and the origin of the expression that erred).
        before = dict((k, result[k]) for k in _CONDITION_KEYS if k in result)
        applied = []
        for field, key in (("changed_when", "changed"), ("failed_when", "failed")):
            conds = task.get(field)
            if not conds:
                continue
            if not applied:
                result["_ioc_conditions"] = {"before": before, "applied": applied}
            if field == "failed_when" and not results.legacy():
                self._suppress_exception(result, field)
            current, number = None, 0
            written = (task.get("origins") or {}).get(field) or ()
            try:
                value = True
                for number, current in enumerate(conds):
                    if not templar.conditional(current, written=_nth(written, number)):
                        value = False
                        break
            except TemplateError as exc:
                failed_before = bool(result.get("failed"))
                if field == "changed_when" and not results.legacy():
                    self._suppress_exception(result, field)
                result["failed"] = True
                result[field + "_result"] = conditional_error_text(exc)
                applied.append([field, result[field + "_result"], True,
                                current if isinstance(current, str) else None])
                if not results.legacy():
                    self._condition_error(task, result, field, number, failed_before)
                return
            applied.append([field, value, False, None])
            if field == "failed_when" and not value and results.legacy():
                # 2.19 moves the exception aside only when failed_when clears the failure
                self._suppress_exception(result, field)
            result[key] = value
            result[field + "_result"] = value
            if field == "failed_when" and value and not result.get("msg") \
                    and not results.legacy():
                result["msg"] = ("Task failed: Action failed: A 'failed_when' expression "
                                 "evaluated to 'True'.")

    def _task_projections(self, result):
        """2.21's ``_task`` once an attempt's result is recorded: ``result`` is
        it, and in a loop ``loop_result`` the loop's result with it as the
        last item (``TaskContext.build_loop_result(preview=True)``)."""
        current = results.public(result)
        out = {"result": current}
        if self._loop_so_far is not None:
            out["loop_result"] = results.loop_preview(list(self._loop_so_far) + [current])
        return out

    @staticmethod
    def _condition_error(task, result, field, number, failed_before):
        """2.21: the failure a changed_when/failed_when expression that cannot be
        evaluated makes (TaskExecutor raises it as the result's own error): a
        result without a msg of its own (or whose msg is only the words of the
        module's uncaught exception) takes the error's words. The callbacks
        get the error (``_ioc_condition_error``: its words, whether the action
        had failed already) and where the expression was written
        (``_ioc_error_origin``) for the [ERROR] line and its excerpts."""
        error = "A '%s' expression failed: %s" % (field, result[field + "_result"])
        if not result.get("msg") or "_ioc_module_exception" in result:
            result["msg"] = "Task failed: %s failed: %s" % (
                "Module" if failed_before else "Action", error)
        result["_ioc_condition_error"] = [error, failed_before]
        origin = _nth((task.get("origins") or {}).get(field) or (), number)
        if origin:
            result["_ioc_error_origin"] = origin

    @staticmethod
    def _suppress_exception(result, field):
        if result.get("failed") or "exception" in result:
            result[field + "_suppressed_exception"] = result.pop("exception", None) or \
                results.TRACEBACK_UNAVAILABLE

    def run_action(self, task, templar, key=None):
        """Template the arguments and run the action; failures become results.

        ``timeout`` bounds the action; ``async`` starts it as a job and, with
        ``poll``, waits for it here (:mod:`ioc.agentless_runner.asyncjob`).
        """
        if task.get("without_connection") is not None:
            # The host has no runner (unreachable, no usable Python): a task that
            # needs one is where linear reports it; those that need none run here.
            return dict(task["without_connection"])
        try:
            args = _drop_omitted(self._template_args(task, templar))
            try:
                env, env_warnings = _environment(task, templar)
            except TemplateError as exc:
                error = TemplateError("Task failed: Error processing keyword 'environment': %s"
                                      % exc)
                error.chain, error.keyword = _environment_chain(task, templar, exc)
                raise error
            check_mode = self._flag(task, "check_mode", templar, self.options.get("check", False))
            diff_mode = self._flag(task, "diff", templar, self.options.get("diff", False))
            limit, interval, timeout = self._async_settings(task, templar)
        except TemplateError as exc:
            failed = results.failed_result(  # (Ansible's, tracebacks off: not the runner's)
                str(exc), exception=results.TRACEBACK_UNAVAILABLE, _ioc_task_error=True)
            if getattr(exc, "argument", None) is not None:  # (the bridge's chain)
                failed["_ioc_error_arg"] = [exc.argument, getattr(exc, "variable", None),
                                            getattr(exc, "path", [exc.argument]),
                                            list(exc.causes)]
            if getattr(exc, "keyword", None):  # (the bridge's chain)
                failed["_ioc_error_keyword"] = exc.keyword
            if getattr(exc, "plugin", None):  # (the bridge's chain: the plugin's own part)
                failed["_ioc_error_plugin"] = exc.plugin
            if getattr(exc, "file", None):  # (the bridge's chain: the error's own origin)
                failed["_ioc_error_cause_file"] = list(exc.file)
            chain = getattr(exc, "chain", None) or _argument_chain(
                task, exc, self._play_var_origin(templar, getattr(exc, "variable", None)))
            if chain:
                failed["_ioc_error_chain"] = chain
            return failed
        ctx = actions.Context(check_mode=check_mode, diff_mode=diff_mode,
                              start_dir=self.options.get("local_dir"),
                              environment=env, templar=templar, task_vars=templar.variables,
                              no_log=self._truthy(task.get("no_log"), templar),
                              files=self.controller_files(),
                              origin_of=lambda text: _that_origin(task, text))

        def call():
            if task.get("module"):
                return self.run_ansible_module(task, args, ctx, limit)
            return actions.run(task["action"], args, ctx)

        result = results.normalize(asyncjob.with_timeout(timeout, call))
        if "_ioc_fetch" in result and self.ask_controller is not None:
            result = self.deliver_fetch(key, result)
        if env_warnings:
            result["warnings"] = env_warnings + list(result.get("warnings") or ())
        option = result.get("_ioc_error_option")
        if option is not None:  # an action's error about an option's value
            written = _nth((task.get("origins") or {}).get("arg:%s" % option) or (), 0)
            said = str(result["msg"])[len("Task failed: "):]
            resolving, _, cause = said.partition(": ")
            if written and option == "var" and resolving == "Error while resolving `var` expression":
                # (debug's action raises this about the argument, from the
                # templating error: both say where var was written)
                result["_ioc_error_chain"] = [[resolving + ".", written],
                                              [cause, written, None,
                                               result.get("_ioc_error_help")]]
            elif written:  # (ioc-run's console: the "caused by" names where it was written)
                result["_ioc_error_chain"] = [[said, written]]
        origin = result.get("_ioc_error_file")
        if origin:  # (ioc-run's console: the "caused by" names the file, as the bridge does)
            result["_ioc_error_chain"] = [[str(result["msg"])[len("Task failed: "):],
                                           origin[0] if not origin[1] else "%s:%d" % tuple(origin)]]
        for marker in result.get("_ioc_marker_warnings") or ():
            marker["origin"] = _template_origin(task, templar, marker)
        if result.get("_ioc_task_error") and task["action"] == "assert" \
                and isinstance(result.get("_ioc_error_expr"), str):
            # a condition ansible-core could not evaluate (untrusted, a test
            # plugin that failed...): the console's "caused by" names where it
            # was written
            written = result.get("_ioc_error_value_origin") or \
                _text_origin(task, result["_ioc_error_expr"].strip())
            if written:
                result["_ioc_error_chain"] = [[str(result["msg"])[len("Task failed: "):],
                                               written, None, result.get("_ioc_error_help")]]
        if limit > 0 and interval > 0 and not result.get("skipped") and not result.get("failed"):
            result = results.normalize(self.poll_async(key, task, templar, result, limit,
                                                       interval, ctx))
        return result

    def deliver_fetch(self, key, result):
        """A fetched file, written by the controller before the task ends (one
        round trip): under linear the file is there when the host's next task
        starts, which may read it, or remove its directory when the target is
        the controller (a local connection); and a failure to write it
        (a directory in the way, a checksum mismatch) is the task's own, which
        ``failed_when``, ``ignore_errors`` and rescue see. The answer is the
        result as Ansible's fetch action gives it (``ioc.controller.fetched``)."""
        return self.ask_controller({"e": "fetch", "k": key, "result": result})["result"]

    @staticmethod
    def _async_settings(task, templar):
        """``(async, poll, timeout)`` in seconds, templated as Ansible's integer fields."""
        def number(field, default):
            value = task.get(field)
            if value is None:
                return default
            value = templar.template(value)
            try:
                return int(value)
            except (TypeError, ValueError):
                raise TemplateError("Task failed: the field '%s' has an invalid value (%s), "
                                    "and could not be converted to int."
                                    % (field.replace("async_val", "async"), value))
        return number("async_val", 0), number("poll", 15), number("timeout", 0)

    def run_ansible_module(self, task, args, ctx, limit=0):
        """Ansible's own module for ``task``, from the payload shipped with the batch."""
        spec = self.modules.get(task["module"])
        if spec is None:
            return results.failed_result("ioc: no payload for module %s was shipped to this host"
                                         % task["module"])
        if spec.get("dispatch") == "async":
            if limit > 0:
                ctx.launch_async = asyncjob.Launcher(
                    limit, self.modules[spec["candidates"]["async_wrapper"]], blob,
                    spec.get("legacy_argv", False))
            spec = self.modules[spec["candidates"]["module"]]
        return ansible_actions.run(task["action"], spec, args, ctx, blob, self.modules,
                                   self.facts)

    def poll_async(self, key, task, templar, launched, limit, interval, ctx):
        """Wait for an async job as Ansible's task executor does; stream its polls."""
        status_key = self.modules[task["module"]]["candidates"]["async_status"]

        def run_status(args, status_ctx):
            # a new interpreter each poll, as Ansible's: it reads the job's file
            # after the interpreter's start-up, not at once (ASYNC POLL or not)
            return ansible_module.run(self.modules[status_key], args, status_ctx, blob,
                                      fresh=True)

        def emit_poll(result):
            self.emit({"e": "async_poll", "k": key,
                       "result": self._visible(task, dict(result), templar)})

        final = asyncjob.poll(launched, limit, interval, ctx, run_status, emit_poll)
        self.emit({"e": "async_failed" if final.get("failed") else "async_ok", "k": key,
                   "result": self._visible(task, dict(final), templar)})
        return final

    def _emit_diff(self, key, task, result, templar):
        """``on_file_diff`` comes before the result it belongs to (L3.5)."""
        if "diff" not in result or not result.get("diff"):
            return
        try:
            diff_mode = self._flag(task, "diff", templar, self.options.get("diff", False))
        except TemplateError:
            return
        if diff_mode and not self._truthy(task.get("no_log"), templar):
            self.emit({"e": "diff", "k": key, "result": dict(result)})

    def _play_var_origin(self, templar, name):
        """Where the play var ``name`` was written, if the value the task read
        is that one (no layer above the play's defines it); else None."""
        origin = (self.options.get("var_origins") or {}).get(name) if name else None
        if origin is None:
            return None
        return origin if _defining_layer(templar.variables, name) is self.play_vars else None

    @staticmethod
    def _template_args(task, templar):
        """The templated arguments; an error names the argument as ansible-core 2.21 does."""
        args = task.get("args", {})
        out = {}
        reads = current_reads()
        for name, value in args.items():
            if reads is not None:
                reads.where = name  # (a deprecated value read names the argument)
            try:
                out[name] = _assert_that(value, templar) if name == "that" and \
                    task["action"] == "assert" else templar.template(value)
                if task["action"] == "set_fact":
                    out[name] = trust.written(value, out[name])
            except TemplateError as exc:
                causes = ("Finalization of task args for 'ansible.builtin.%s' failed"
                          % task["action"], "Error while resolving value for %r" % name, str(exc))
                error = TemplateError("Task failed: %s: %s: %s" % causes)
                # where the console's "caused by" chain points: the argument, and the
                # variable whose value failed (ansible-core's origin of the error)
                error.argument, error.variable = name, getattr(exc, "variable", None)
                if isinstance(exc, LookupFailure) and not getattr(exc, "parts", None):
                    # (a lookup plugin's failure has no origin of its own: 2.21's
                    # error is about the argument, whatever variable called it)
                    error.variable = None
                error.causes = causes
                # a plugin's error about a value (a filter's, a test's; a lookup's parts)
                plugin = getattr(exc, "parts", None) or getattr(exc, "plugin", None)
                error.plugin = plugin if isinstance(plugin, list) else None  # (not a lookup's name)
                error.file = getattr(exc, "file", None)  # (a template lookup's file's error)
                error.path = _failing_path(templar, value, [str(name)])
                raise error
        if reads is not None:  # (debug templates its var when it runs)
            reads.where = "var" if task["action"] == "debug" and "var" in args else None
        if task["action"] == "debug" and isinstance(out.get("var"), str) \
                and not templating.trusted_result(args.get("var")):
            out["_ioc_untrusted_var"] = True  # (the text a template built is no expression)
        return out

    def _late_lookup(self, file_key):
        """Asks the controller for a lookup of task ``file_key`` it could not
        answer before the batch (see ``Lookups.late``); None on the controller."""
        if self.ask_controller is None or file_key is None:
            return None

        def late(plugin, terms, kwargs):
            return self.ask_controller({"e": "lookup", "k": file_key, "plugin": plugin,
                                        "terms": list(terms), "kwargs": dict(kwargs)})
        return late

    def controller_files(self):
        """The current task's shipped controller files, with their content.

        A file missing when the controller prepared the batch is asked for
        again now, when its task runs (one round trip): an earlier task may
        have written it, as Ansible reads it only then.
        """
        files = self.files.get(self.file_key) or {}
        for src, entry in list(files.items()):
            if entry.get("late") and self.ask_controller is not None:
                answer = self.ask_controller({"e": "file", "k": self.file_key, "src": src})
                if answer.get("entry") is not None:
                    BLOBS.update(answer.get("blobs") or {})
                    files[src] = entry = answer["entry"]
                else:
                    files[src] = entry = dict(entry, late=False)
        return {src: _with_content(entry) for src, entry in files.items()}

    # -- effects ---------------------------------------------------------------

    def apply_effects(self, task, result):
        """Facts and set_fact values of an ok result become host variables."""
        facts = result.get("ansible_facts")
        if not facts or task["action"] == "debug":
            # (debug: var=ansible_facts shows them; Ansible's debug action sets
            # none, ansible/ansible#74060)
            return
        if task["action"] == "set_fact" and self.options.get("delegate_facts"):
            # L7.3: the delegate gets them (as its set_fact values), not this host
            self.delegated_runtime.update(facts)
        elif task["action"] == "set_fact":
            self.set_runtime(facts)
            if result.get("_ioc_cacheable"):
                self.add_facts(facts)
        elif task["action"] == "include_vars":
            self.included.update(facts)
            self.written["include_vars"].update(facts)
        elif self.options.get("delegate_facts"):
            self.delegated_facts.update(facts)
        else:
            self.add_facts(facts)

    # -- small helpers -----------------------------------------------------------

    def _visible(self, task, result, templar, task_level=False):
        """What the callbacks see of ``result`` (an item's, an attempt's, or with
        ``task_level`` the task's own): its fields that are set
        (``results.fields_set``), censored for ``no_log``."""
        shown = results.fields_set(dict(result))
        # A result may hide itself: include_vars of a vault-encrypted file.
        if self._truthy(task.get("no_log"), templar) or result.get("_ansible_no_log") is True:
            return results.censor(shown)
        looped = task.get("loop") is not None
        if results.unvalidated_no_log(task.get("no_log"), result, task_level, looped):
            censored = results.censor(shown, no_log=False)
            if results.status_of(result) in ("failed", "unreachable") \
                    and not (task_level and looped):
                # 2.21's callbacks still show its error (the result's ``exception``
                # is kept): the no_log's value is false, nothing here is secret
                # (a loop's own result has no error: its items showed theirs)
                censored["_ioc_uncensored"] = shown
            return censored
        return shown

    def _truthy(self, value, templar):
        if value is None:
            return False
        try:
            return as_bool(templar.template(value))
        except TemplateError:
            return False

    def _flag(self, task, keyword, templar, default):
        """A boolean keyword; templated to ``omit``, the value the task inherits
        (``omitted``: Ansible's ``set_to_context``), else ``default``."""
        value = task.get(keyword)
        if value is None:
            return default
        value = templar.template(value)
        if value == OMIT:
            value = (task.get("omitted") or {}).get(keyword)
            if value is None:
                return default
            value = templar.template(value)
        return as_bool(value)


#: The keys of an action's result that changed_when/failed_when may change.
_CONDITION_KEYS = ("changed", "failed", "exception", "msg")


def _answerable(name, choice):
    """Whether the shipped candidates (``choice``) answer for file ``name``:
    a relative name matching one of their patterns (an empty one names a
    directory)."""
    return bool(name) and not os.path.isabs(name) and not name.startswith("~") \
        and any(_matches(name, pattern) for pattern in choice["patterns"])


def _matches(name, pattern):
    """Whether a templated file name is one the glob ``pattern`` found (its
    ``*`` never crosses a ``/`` nor matches a leading dot)."""
    if os.path.isabs(name) or any(part.startswith(".") for part in name.split("/")):
        return False
    return re.fullmatch("[^/]*".join(re.escape(p) for p in pattern.split("*")), name) is not None


def failed_task_wire(task, templar=None):
    """``ansible_failed_task``: the task's serialized dict (its name templated, as
    the strategy templates it before the task runs)."""
    name = task.get("name") or ""
    if templar is not None and name:
        name = safe_template(templar, name)
    return {"name": name, "action": task["action"],
            "args": task.get("args", {}), "when": list(task.get("when", ())),
            "register": task.get("register"), "location": task.get("location")}


def _with_content(entry):
    entry = dict(entry)
    if entry.get("kind") == "file" and not entry.get("stream"):
        entry["content"] = _blob(entry)
        if entry.get("loader") is not None:  # the templates a template names
            entry["loader"] = dict(entry["loader"], files={
                name: _with_content(found) for name, found in entry["loader"]["files"].items()})
    elif entry.get("kind") == "dir":  # (a streamed file is fetched by copy if it must)
        entry["entries"] = [dict(e, content=_blob(e)) if "digest" in e and not e.get("stream")
                            else e for e in entry["entries"]]
    return entry


def _blob(entry):
    try:
        return blob(entry["digest"])
    except KeyError:
        raise ValueError("controller file %s was not shipped (digest %s)"
                         % (entry.get("path"), entry.get("digest")))


def lookup_scope(file_key, item):
    """The key of one task's (and loop item's) controller lookup answers.

    ansible-core calls a lookup at every rendering: each task, and each item
    of a loop, gets answers of its own (the controller evaluates them per
    task and item, see ``controller/lookups.py``).
    """
    return "%s:%s" % (file_key, "-" if item is None else item)


def _failure_wire(failure):
    if failure is None:
        return None
    return {"task": failure.task, "result": failure.result}


def _task_failed(exc):
    """A templating error that fails the task, worded as ansible-core 2.21 does."""
    return "Task failed: %s" % (exc,)


def _defining_layer(variables, name):
    """The layer of ``variables`` (a ChainMap of layers, nested) whose value
    of ``name`` is the one read; None if none defines it."""
    for layer in getattr(variables, "maps", None) or ():
        if isinstance(layer, ChainMap):
            found = _defining_layer(layer, name)
            if found is not None:
                return found
        elif name in layer:
            return layer
    return None


def _argument_chain(task, exc, play_var_origin=None):
    """The [message, origin] links 2.21 chains under "Task failed." for an
    argument that could not be templated (the action's keyword, the argument's
    value, the variable whose value failed, as the loader recorded them, or
    ``play_var_origin`` for a play var); [] when one of the first two is
    unknown."""
    argument = getattr(exc, "argument", None)
    causes = getattr(exc, "causes", None)
    if argument is None or causes is None:
        return []
    origins = task.get("origins") or {}
    action = _nth(origins.get("action") or (), 0)
    written = _nth(origins.get("arg:%s" % argument) or origins.get("arg:*") or (), 0)
    if not action or not written:
        return []
    variable = getattr(exc, "variable", None)
    source = (_nth(origins.get("var:%s" % variable) or (), 0) or play_var_origin) if variable \
        else _nth(origins.get("arg:%s" % ".".join(getattr(exc, "path", [argument]))) or (), 0)
    plugin = getattr(exc, "plugin", None)
    if plugin:  # a plugin's error about a value: a part of its own, at the value's origin
        head, said, obj, help_text, origin = plugin
        return [[causes[0] + ".", action], [causes[1] + ".", written],
                [head + ".", source or written], [said, origin, obj, help_text]]
    file = getattr(exc, "file", None)
    if file:  # (a template lookup's file's own error: about the file)
        source = file[0] if not file[1] else "%s:%d" % tuple(file)
    return [[causes[0] + ".", action], [causes[1] + ".", written], [causes[2], source or written]]


def _failing_item(templar, loop):
    """The index of the first item of a ``loop`` list whose template fails
    (where ansible-core's error about the loop points); None otherwise."""
    if not isinstance(loop, list):
        return None
    for number, item in enumerate(loop):
        try:
            templar.template(item)
        except TemplateError:
            return number
    return None


def _failing_path(templar, value, path):
    """``path`` ([an argument's name]) followed by the keys down to the innermost
    mapping value of ``value`` whose template fails: where 2.21 says the error
    was written."""
    while isinstance(value, dict):
        for key, inner in value.items():
            try:
                templar.template(inner)
            except TemplateError:
                path, value = path + [str(key)], inner
                break
        else:
            break
    return path


def _environment_chain(task, templar, exc):
    """``(links, keyword)`` for an ``environment`` that could not be templated:
    2.21 chains "Error processing keyword 'environment'." about the whole value
    (no origin: it prints the value) to the error where the failing template was
    written (``links`` for ioc-run's console, [] when unknown); ``keyword`` is
    ["environment", the failing name, the variable whose value failed] for the
    bridge (None when no single name failed)."""
    environment = task.get("environment")
    if not isinstance(environment, dict):
        return [], None
    for name, value in environment.items():
        try:
            templar.template(value)
        except TemplateError as failed:
            variable = getattr(failed, "variable", None)
            origins = task.get("origins") or {}
            written = _nth(origins.get("env:%s" % name) or (), 0)
            source = _nth(origins.get("var:%s" % variable) or (), 0) if variable else None
            links = [["Error processing keyword 'environment'.", "", [environment]],
                     [str(exc), source or written]] if written else []
            return links, ["environment", name, variable]
    return [], None


class _ConditionFailed(Exception):
    """A condition could not be evaluated: ``result`` is the task's failure."""

    def __init__(self, result):
        Exception.__init__(self, result.get("msg"))
        self.result = result


#: The names of the facts layer that are not deprecated top-level facts.
_KEPT_FACTS = frozenset(("ansible_facts", "ansible_local"))
#: Actions whose own ``vars`` are include parameters (for themselves too).
_INCLUDE_ACTIONS = frozenset(("include_tasks", "include_role"))
#: Magic variables of a delegated task that are not its delegate's: what the
#: controller sets of the delegate's connection for the task itself
#: (``ansible_delegated_host`` and its ``ansible_host``/port/user), those
#: not among VariableManager's (``omit``, ``ansible_search_path``: TaskExecutor
#: adds it to the task's variables), and the views made for this host.
_NOT_DELEGATED = frozenset(("ansible_delegated_host", "ansible_host", "ansible_port",
                            "ansible_user", "omit", "ansible_search_path", "vars",
                            "ansible_delegated_vars", "play_hosts"))


def _empty_loop(value):
    """A registered empty loop: 2.21 deprecates its ``skipped_reason``."""
    return type(value) is dict and value.get("results") == [] and \
        value.get("skipped_reason") == "No items in the list"


def _deprecate_skipped_reason(value):
    return dict(value, skipped_reason=DeprecatedText(value["skipped_reason"], "skipped_reason"))


def _deprecations(task, found):
    """The task's reads of deprecated values, for the controller to show as
    2.21 does: each as ``{"n": notice, "arg": argument read in (or None),
    "origin": where the template that read it was written (or None),
    "words": [message, removed in version, help text]}``;
    ``found`` names an argument, or ``("at", origin)`` (a condition)."""
    origins = task.get("origins") or {}
    out = []
    for notice, where in found:
        words = list(results.DEPRECATED_VALUES.get(notice) or ())
        if isinstance(where, tuple):
            out.append({"n": notice, "arg": None, "origin": where[1], "words": words})
        else:
            written = origins.get("arg:" + where) or origins.get("arg:*") if where else None
            out.append({"n": notice, "arg": where, "origin": _nth(written or (), 0),
                        "words": words})
    return out


def _const_warnings(task, found):
    """``[{"conditional", "origin", "text"}]``: each Jinja constant string that
    held a template and was templated (:class:`ConstTemplates`), with the text
    of the template or expression it is in and where that was written, when it
    is one of the task's conditions or arguments (where ansible-core 2.21's
    warning points)."""
    out = []
    for conditional, source in found:
        entry = {"conditional": conditional, "origin": _text_origin(task, source),
                 "text": source}
        if entry not in out:
            out.append(entry)
    return out


def _storage_warnings(task, found):
    """``[{"msg", "origin", "text"}]``: each value a template's final value held
    that Ansible's variable storage does not (:class:`StorageConversions`), as
    the ``_ioc_const_warnings`` entry of its warning (``msg``: ansible-core's
    text), with the template's text and where that was written."""
    return [{"msg": message, "origin": _text_origin(task, source), "text": source}
            for message, source in found]


def _text_origin(task, source):
    """Where the task's condition or argument whose text is ``source`` (as
    templated: stripped when a condition) was written, or None."""
    if not isinstance(source, str):
        return None
    origins = task.get("origins") or {}
    fields = [(task.get("when") or (), task.get("when_origins") or ())]
    fields += [(task.get(f) or (), origins.get(f) or ()) for f in ("changed_when", "failed_when", "until")]
    for values, written in fields:
        for number, value in enumerate(values if isinstance(values, list) else [values]):
            if isinstance(value, str) and source in (value, value.strip()):
                return _nth(written, number)
    return _arg_origin(task.get("args") or {}, "arg:", origins, source)


def _arg_origin(mapping, prefix, origins, source):
    for name, value in mapping.items():
        if isinstance(value, str) and source in (value, value.strip()):
            return _nth(origins.get(prefix + str(name)) or origins.get("arg:*") or (), 0)
        if isinstance(value, list):
            for number, item in enumerate(value):
                if isinstance(item, str) and source in (item, item.strip()):
                    return _nth(origins.get("%s%s[]" % (prefix, name)) or (), number)
        if isinstance(value, dict):
            found = _arg_origin(value, "%s%s." % (prefix, name), origins, source)
            if found:
                return found
    return None


def _that_origin(task, text):
    """Where assert's ``that`` condition ``text`` was written (``that`` itself,
    or the item of its list that is ``text``)."""
    if task["action"] != "assert":
        return None
    that = (task.get("args") or {}).get("that")
    origins = task.get("origins") or {}
    if that == text:
        return _nth(origins.get("arg:that") or (), 0)
    if isinstance(that, list) and text in that:
        return _nth(origins.get("arg:that[]") or (), that.index(text))
    return None


def _assert_that(value, templar):
    """assert's ``that`` as its action plugin's ``finalize_task_arg`` leaves it:
    the conditions as written (each is evaluated as a condition, not templated
    first); a text that is one template giving a list is that list, its
    conditions as written."""
    if not isinstance(value, str) or not (value.startswith(("{{", "{%", "{#"))
                                          and value.endswith(("}}", "%}", "#}"))):
        return value
    try:
        resolved = templar.lazy(value)
    except TemplateError:
        return value
    raw = getattr(resolved, "_raw", None) if not isinstance(resolved, list) else resolved
    return list(raw) if isinstance(raw, (list, tuple)) else value


#: The keywords the runner templates that ansible-core validates as booleans
#: before the action runs (``FieldAttribute(isa='bool')``, strictly).
_BOOLEAN_KEYWORDS = ("ignore_errors",)
_FIRST_VARIABLE = re.compile(r"^\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\b")


def _invalid_keyword(task, templar):
    """The task's failure when a templated boolean keyword is no boolean, as
    ansible-core's ``post_validate`` raises it before the action runs
    ("Error processing keyword 'ignore_errors': The value 5 could not be
    converted to 'bool'."); None when each is one. ``_ioc_error_keyword``
    ([keyword, None, the variable whose value it is: the expression's first
    name, when the value is that variable's, as a filter such as ``default``
    lets Ansible's tagged value through]) lets the bridge chain the error to
    where each was written. A
    static value Ansible cannot convert never reaches the runner (the
    converter sends such a task through Ansible)."""
    for keyword in _BOOLEAN_KEYWORDS:
        value = task.get(keyword)
        if not (isinstance(value, str) and is_template(value)):
            continue
        try:
            templated = templar.template(value)
        except TemplateError:
            continue  # (read as before: false)
        if templated is None or context.as_boolean(templated) is not None:
            continue
        message = "Error processing keyword %r: The value %r could not be converted to " \
                  "'bool'." % (keyword, templated)
        first, variable = _FIRST_VARIABLE.match(value.strip()), None
        if first is not None:
            try:
                if templar.template("{{ %s }}" % first.group(1)) == templated:
                    variable = first.group(1)
            except TemplateError:
                pass
        return results.failed_result(
            "Task failed: " + message, _ioc_task_error=True,
            _ioc_error_keyword=[keyword, None, variable])
    return None


def _template_origin(task, templar, marker):
    """Where the template of one of debug's "Encountered N template error(s)."
    warnings was written, as the loader recorded it (ioc-run's console): the
    ``var`` argument, or a variable whose whole raw value is that template;
    None when unknown (the bridge asks Ansible's tagged values instead)."""
    origins = task.get("origins") or {}
    variable = marker.get("var")
    if variable is None:
        return _nth(origins.get("arg:var") or origins.get("arg:*") or (), 0)
    found = _find_raw(templar.variables, variable)
    if found == marker.get("template"):
        return _nth(origins.get("var:%s" % variable) or (), 0)
    return None


def _find_raw(variables, name):
    """The raw value of ``name`` in a ChainMap of layers (Verbatim ones too), or None."""
    try:
        value = variables[name]
    except (KeyError, TypeError):
        return None
    return value if isinstance(value, str) else None


def _nth(origins, number):
    """The origin of condition ``number`` (None if unknown)."""
    return (origins[number] if number < len(origins) else None) or None


def _role_vars(task):
    """A role task's magic variables, as ``VariableManager`` sets them."""
    role = task.get("role")
    collection = task.get("role_collection")
    short = role[len(collection) + 1:] if collection and role and \
        role.startswith(collection + ".") else role
    return {"role_path": task["role_path"], "role_name": short, "ansible_role_name": role,
            "ansible_collection_name": collection}


def _strip_prefix(name):
    """A fact's name in ``ansible_facts`` (``namespace_facts``: ``ansible_local`` keeps it)."""
    return name[8:] if name.startswith("ansible_") and name != "ansible_local" else name


def _evaluator(view):
    """Templated value of one variable of ``view`` (for the ``vars`` lookup)."""
    def value(name):
        try:
            return Templar(view).evaluate(name)
        except UndefinedVariableError:
            raise KeyError(name)
    return value


#: Ansible's fact gathering actions (``C._ACTION_FACT_GATHERING``).
_FACT_GATHERING = frozenset(prefix + name for prefix in ("", "ansible.builtin.", "ansible.legacy.")
                            for name in ("setup", "gather_facts"))


def _environment(task, templar):
    """``(variables, warnings)``: the task's ``environment`` as Ansible's
    ``Task._post_validate_environment`` makes it.

    The keyword is a list (the play's, the blocks' and the task's own layers,
    outermost first: a later name wins); a layer is a mapping, whose values
    are templated one by one, or a template giving one. An omitted value or
    layer is left out, and so is a value whose template reads an undefined
    ``ansible_env`` (a fact only gathering makes; ``ansible_facts.env`` too
    for gathering itself, by Ansible's own precedence of ``and``/``or``).
    """
    value = task.get("environment")
    if value is None:
        return {}, []
    env, warnings = {}, []
    reads = current_reads()
    outer = reads.where if reads is not None else None
    for layer in value if isinstance(value, list) else [value]:
        if isinstance(layer, dict):
            for name, text in layer.items():
                if reads is not None:  # (each value is a template of its own, where written)
                    reads.where = ("at", text.origin) \
                        if text.__class__ is trust.WrittenTemplate and text.origin else None
                try:
                    templated = templar.template(text)
                except UndefinedVariableError as exc:
                    said = str(exc)
                    if task.get("action") in _FACT_GATHERING and "ansible_facts.env" in said \
                            or "ansible_env" in said:
                        continue
                    raise
                finally:
                    if reads is not None:
                        reads.where = outer
                if templated != OMIT:
                    env[name] = templated
            continue
        templated = templar.template(layer)
        if templated == OMIT:
            continue
        if isinstance(templated, dict):
            env.update(templated)
        else:  # (Ansible's display warning; here the result's, at its task)
            warnings.append("could not parse environment value, skipping: %s" % (value,))
    return env, warnings


def _drop_omitted(value):
    if isinstance(value, dict):
        return {k: _drop_omitted(v) for k, v in value.items() if v != OMIT}
    if isinstance(value, list):
        return [_drop_omitted(v) for v in value if v != OMIT]
    return value


def blob(digest):
    """The content of a shipped file (KeyError when it was never shipped)."""
    return bytes(BLOBS[digest])
