"""Cuts that follow from data flow (DESIGN §3, linear-semantics §9).

Inside a batch a host's own values flow freely: the runner has them. Two
kinds of reads cannot wait for the runner:

* reads of **other hosts' runtime data** (``hostvars`` of another host's
  facts or registered values, ``ansible_play_hosts``, ``groups`` after
  ``add_host``/``group_by``): they show the other hosts' state at the start of
  the step, which exists only at a step boundary — cut before the reader;
* what the **controller** evaluates before a batch for each host: arguments
  of lookups that read the controller, the ``src`` of ``copy``,
  ``template``, ``script`` and ``unarchive`` (with the loop that feeds it),
  and the ``become*`` keywords (they choose the runner the batch goes to).
  If such an argument reads a variable written earlier *in the same batch*,
  the controller cannot know it yet — cut before the task, so the value is
  carried state when the next batch starts.
"""
from __future__ import annotations

import re

from typing import AbstractSet, Any, FrozenSet, List, Optional, Sequence

from ioc.model import Task
from ioc.planner.effects import (Effects, Origin, analyze_program, classify, definite_keys,
                                 effective_writes, loop_names, named_per_item, satisfies,
                                 value_refs)
from ioc.planner.program import Entry, Program
from ioc.planner.schedule import IDENTITY_NEUTRAL, CheckRule, DataRule, DeferredRule

#: Actions whose controller file the controller resolves per host (see
#: ``controller/payloads.py``), with the arguments that may name it.
CONTROLLER_FILE_ARGS = {"copy": ("src",), "template": ("src",), "unarchive": ("src",),
                        "script": ("_raw_params",),
                        "include_vars": ("_raw_params", "file", "dir")}
#: Lookups that run on the target (pure): they never need a cut.
PURE_LOOKUPS = frozenset({"items", "list", "dict", "indexed_items", "nested",
                          "together", "subelements", "sequence", "vars", "varnames"})


def data_rule(program: Program, effects: Optional[Sequence[Effects]] = None) -> DataRule:
    """The scheduler's data-flow cut rule for ``program``."""
    effects = effects if effects is not None else analyze_program(program)
    writes = effective_writes(program, effects)
    origins = classify(program, effects)

    def rule(entry: Entry, start: int) -> Optional[str]:
        index = entry.index
        where = "%s (%s)" % (entry.task.display_name, entry.task.location)
        cross = sorted(n for n, o in origins[index].items() if o is Origin.CROSS_HOST)
        if cross:
            return "%s reads other hosts' runtime data (%s)" % (where, ", ".join(cross))
        # Only what the runner cannot check: a lookup with side effects must
        # run once, with the right values; groups change on the controller.
        # The rest is checked by the runner (check_rule), a cut only for a
        # host that did write it.
        needed = cut_reads(entry.task, effects[index])
        if not needed:
            return None
        written = _writers(writes, start, index, needed)
        if written:
            what = "the become settings of the task" if all(
                n in BECOME_VARS for n, _ in written) else _what(entry.task, effects[index])
            return "%s: the controller evaluates %s before a batch, and %s" % (
                where, what, "; ".join(
                    "'%s' is written by task %d" % (name, at) for name, at in written))
        return None

    return rule


def check_rule(program: Program, effects: Optional[Sequence[Effects]] = None) -> CheckRule:
    """What a batch from ``start`` checks on the target before ``entry``: the
    names the controller read to prepare the task (its controller files'
    names, side-effect-free lookups' arguments, its ``become*`` keywords, and
    the ``ansible_become*`` variables for a task that connects, which choose
    the runner) that an earlier task of the batch may write. The runner
    stops a host before the task only if something it ran did write one
    (``Batch.checks``); the controller then prepares the task afresh and runs
    the rest of that host's batch. A cut instead would cost every host a
    round trip for a write that seldom happens (a role's include_vars may set
    anything, so every later template's name was suspect)."""
    effects = effects if effects is not None else analyze_program(program)
    writes = effective_writes(program, effects)

    def rule(entry: Entry, start: int) -> FrozenSet[str]:
        index = entry.index
        task = entry.task
        names = set(controller_reads(task, effects[index], deferrable(task, effects[index])))
        names -= cut_reads(task, effects[index])
        if entry.is_flush or task.action not in IDENTITY_NEUTRAL:
            names |= BECOME_VARS
        if task.delegate_to is not None and not entry.is_flush:
            # (a delegated suspension point: its delegates were worked out
            # when the batch started, see delegate_rule)
            names |= {r.name for r in effects[index].reads if r.field == "delegate_to"}
        if effects[index].opaque_files:  # (a template file nobody read may read any name)
            names |= set().union(*writes[start:index])
        return frozenset(name for name, _ in _writers(writes, start, index, names))

    return rule


#: Controller lookups without side effects: called again for a host the
#: runner stops, they answer the same (``pipe``, ``lines``, ``password`` and
#: unknown plugins may not).
QUIET_LOOKUPS = frozenset({"file", "template", "env", "fileglob", "first_found", "unvault"})
#: Every lookup ioc runs itself (the runner, or the controller's own code,
#: ``ioc.controller.lookups``); any other is Ansible's plugin.
IOC_LOOKUPS = PURE_LOOKUPS | QUIET_LOOKUPS | {"pipe", "lines"}


def cut_reads(task: Task, effects: Effects) -> FrozenSet[str]:
    """Names whose writes inside a batch must cut it before ``task``: the
    arguments of its lookups with side effects, and the inventory's groups."""
    names = set()
    for call in effects.lookups:
        if call.plugin not in PURE_LOOKUPS and call.plugin not in QUIET_LOOKUPS:
            names |= set(call.reads)
    return frozenset((names | (controller_reads(task, effects) & {"groups", "group_names"}))
                     - loop_names(task))


def deferrable(task: Task, effects: Effects) -> bool:
    """Whether the controller can leave the file an ``include_vars`` names to
    the runner: one file (no ``dir``, no controller lookup), its name a
    template whose literal text has no glob character, or the item of a
    ``with_first_found`` loop over such names (:func:`deferred_patterns`).
    The controller then ships every file the name could be
    (``Batch.deferred``); the runner templates the name when it gets there
    and picks, in Ansible's search order (a name the shipped set cannot
    answer stops the host's call before the task, and the controller runs
    the rest of its batch from there)."""
    if task.action != "include_vars" or "dir" in task.args:
        return False
    calls = list(effects.lookups)
    if task.loop is not None and task.loop_with == "first_found" and calls \
            and calls[-1].field == "loop" and calls[-1].plugin == "first_found":
        calls.pop()  # (the loop's own call, last: effects._lookup_loop; the runner answers it)
    if any(call.plugin not in PURE_LOOKUPS for call in calls):
        return False
    return deferred_patterns(task) is not None


def deferred_patterns(task: Task) -> Optional[List[str]]:
    """The globs the file of a deferrable ``include_vars`` can match (see
    :func:`deferrable`; None: it is not one).

    Without a loop, its templated name's (:func:`name_pattern`). Looped
    ``with_first_found`` with ``include_vars: "{{ item }}"``: each name of
    its terms, a string or a dict of ``files`` (a name or a list of them)
    and a boolean ``skip``; the literal text of a name has no glob
    character and no ``,`` or ``;`` (first_found splits a name there), and
    nothing else (``paths``, a nested list) is taken. Ansible's first_found
    looks for each name in order on the task's search path with the
    action's subdirectory (``vars``), as include_vars looks for its own
    name; the runner does the same among the shipped files."""
    name = task.args.get("file", task.args.get("_raw_params"))
    if not isinstance(name, str):
        return None
    if task.loop is None:
        pattern = name_pattern(name)
        return [pattern] if pattern is not None else None
    loop_var = str((task.loop_control or {}).get("loop_var") or "item")
    if task.loop_with != "first_found" \
            or re.fullmatch(r"\{\{\s*%s\s*\}\}" % re.escape(loop_var), name.strip()) is None:
        return None
    names: List[Any] = []
    for term in task.loop if isinstance(task.loop, list) else [task.loop]:
        if isinstance(term, dict):
            if not set(term) <= {"files", "skip"} or not isinstance(term.get("skip", False), bool):
                return None
            files = term.get("files")
            names.extend(files if isinstance(files, list) else [files])
        else:
            names.append(term)
    patterns: List[str] = []
    for each in names:
        if not isinstance(each, str) or not each:
            return None
        literal = "".join(_TEMPLATE_PARTS.split(each))
        if any(c in literal for c in ",;*?[]{}"):
            return None
        pattern = name_pattern(each) if literal != each else each
        if pattern is None:
            return None
        if pattern not in patterns:
            patterns.append(pattern)
    return patterns or None


#: The template parts of a file name (``{{ ... }}``, ``{% ... %}``).
_TEMPLATE_PARTS = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)


def name_pattern(name: str) -> Optional[str]:
    """The glob a templated file name can match: each template part a ``*``
    (None: no template in it, or glob characters in its literal text)."""
    parts = _TEMPLATE_PARTS.split(name.rstrip("\n"))
    if len(parts) == 1 or any(c in part for part in parts for c in "*?[]{}"):
        return None
    return "*".join(parts)


def deferred_rule(program: Program, effects: Optional[Sequence[Effects]] = None) -> DeferredRule:
    """Whether the file ``entry`` names is left to the runner in a batch from
    ``start``: :func:`deferrable`, and its name reads a variable an earlier
    task of the batch may write (else the controller knows it)."""
    effects = effects if effects is not None else analyze_program(program)
    writes = effective_writes(program, effects)

    def rule(entry: Entry, start: int) -> bool:
        task = entry.task
        if not deferrable(task, effects[entry.index]):
            return False
        if task.loop is not None:  # (with_first_found: what its terms read)
            names = {r.name for r in effects[entry.index].reads if r.field == "loop"}
        else:
            names = set(value_refs(task.args.get("file", task.args.get("_raw_params")),
                                   "args").names)
        return bool(_writers(writes, start, entry.index, names))

    return rule


def controller_reads(task: Task, effects: Effects, deferred: bool = False) -> FrozenSet[str]:
    """Variables the controller must know to prepare ``task`` for a host
    (``deferred``: not the name of the file it reads, nor the terms of the
    ``with_first_found`` loop that names it, see :func:`deferrable`)."""
    names = set()
    for call in effects.lookups:
        if call.plugin not in PURE_LOOKUPS \
                and not (deferred and call.field == "loop" and call.plugin == task.loop_with):
            names |= set(call.reads)
    remote = str(task.args.get("remote_src", "")).lower() in ("yes", "true", "1")
    for arg in CONTROLLER_FILE_ARGS.get(task.action, ()) if not deferred else ():
        if task.args.get(arg) is not None and not remote:
            names |= set(value_refs(task.args.get(arg), "args").names)
            if named_per_item(task.args.get(arg)):
                names |= {r.name for r in effects.reads if r.field == "loop"}
    names |= {r.name for r in effects.reads if r.field in BECOME_FIELDS}
    # (a template lookup's file: the controller renders it before the batch)
    names |= {r.name for r in effects.reads if r.field == "lookup_file"}
    return frozenset(names - loop_names(task))


#: Variables that override the become keywords (Ansible's connection variables).
BECOME_VARS = frozenset({"ansible_become", "ansible_become_user", "ansible_become_method",
                         "ansible_become_flags", "ansible_become_exe",
                         "ansible_become_password", "ansible_become_pass"})
#: Keywords that choose the identity (the runner) a batch runs in.
BECOME_FIELDS = frozenset({"become", "become_user", "become_method", "become_flags",
                           "become_exe"})


def _writers(writes: Sequence[AbstractSet[str]], start: int, stop: int,
             names: AbstractSet[str]) -> List[tuple]:
    found = {}
    for index in range(start, stop):
        for name in names:
            if satisfies(writes[index], name):
                found[name] = index
    return sorted(found.items())


def _what(task: Task, effects: Effects) -> str:
    plugins = sorted({c.plugin or "?" for c in effects.lookups if c.plugin not in PURE_LOOKUPS})
    if plugins:
        return "lookup(%s)" % ", ".join(plugins)
    if any(r.field in BECOME_FIELDS for r in effects.reads):
        return "the become settings of the task"
    return "the controller file of %s" % task.action


def decidable_on_target(task: Task, effects: Effects) -> bool:
    """Whether a runner can tell, without the controller, if a host reaches
    ``task`` (a task run through Ansible, see ``Batch.suspend``): it has a
    ``when`` and no lookup of its needs the controller (their answers are
    made for tasks the runner runs; a side-effecting one must run once)."""
    return bool(task.when) and task.include_scope is None and task.action != "meta" \
        and all(call.plugin in PURE_LOOKUPS for call in effects.lookups)


#: What a delegated task sees of its delegate's connection
#: (``controller/play.py`` ``_delegated_vars``, as ansible-core sets them): a
#: runner deciding the task's ``when`` inside its host's batch sees the
#: host's own.
DELEGATE_CONNECTION_VARS = frozenset({"ansible_host", "ansible_port", "ansible_user",
                                      "ansible_delegated_host", "ansible_delegated_vars",
                                      "ansible_ssh_host", "ansible_ssh_port", "ansible_ssh_user"})


def delegate_rule(program: Program, effects: Optional[Sequence[Effects]] = None) -> DeferredRule:
    """Whether a task that would be a controller step only because of its
    ``delegate_to`` can stay inside the batch from ``start`` as a suspension
    point (``Batch.delegated``).

    The runner must decide alone whether a host reaches it (a ``when``,
    :func:`decidable_on_target`, that reads nothing of the delegate's
    connection), and the controller must know, when the batch starts, which
    hosts each host delegates it to (a host of the batch that some host
    delegates it to stops there too, so the task runs on it in linear's
    order): ``delegate_to`` reads no value an earlier task of the batch
    writes by name, and no other host's variables. One that a task may
    write without naming it (``include_vars``, a templated ``set_fact``) is
    checked on the target (``check_rule``): a host that did write it stops
    there, and the controller runs the task for it with its new value.
    """
    effects = effects if effects is not None else analyze_program(program)
    writes = effective_writes(program, effects)

    def rule(entry: Entry, start: int) -> bool:
        task, found = entry.task, effects[entry.index]
        if not decidable_on_target(task, found):
            return False
        if any(r.field == "when" and r.name in DELEGATE_CONNECTION_VARS for r in found.reads):
            return False
        if any(access.field == "delegate_to" for access in found.hostvars):
            return False
        names = {r.name for r in found.reads if r.field == "delegate_to"}
        return not (names & {"hostvars", "vars"}) and not any(
            writes[at] & definite_keys(name)
            for at in range(start, entry.index) for name in names)

    return rule
