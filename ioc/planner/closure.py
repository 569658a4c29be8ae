"""Which variables a step can read: the closure a batch ships (DESIGN §3).

A batch carries, per host, only the variables its tasks can read — not every
host variable, fact and registered result the host has accumulated. The
planner computes the names each step reads directly (every templated field
of its tasks, and of the handlers a flush in the step may run); the
controller closes that set over the host's actual values, since a variable's
value may itself be a template that reads others.

Some tasks can read anything: ``template`` (the action or the lookup)
renders a file whose variables the template's own context may reach in
ways a scan cannot bound (the planner reads the file only for other hosts'
values and the controller's checks), an Ansible lookup plugin reads the
variables its documentation names, ``vars[...]`` with a computed key, ``lookup('vars', <computed>)`` and
``hostvars[h]`` without a known attribute (for any ``h``: it may be this host). A step holding
one ships everything (``None``).
"""
from __future__ import annotations

from typing import Any, FrozenSet, Iterable, Optional, Sequence, Set

from ioc.planner.dataflow import IOC_LOOKUPS
from ioc.planner.effects import SELF, Effects, HostvarsAccess
from ioc.planner.program import Program

#: Actions whose module reads variables the planner cannot see: a template
#: file, or values (include_vars) that may themselves template any name.
READS_EVERYTHING = frozenset({"template", "include_vars"})


def step_reads(program: Program, effects: Sequence[Effects], start: int,
               end: int) -> Optional[FrozenSet[str]]:
    """Names the tasks ``[start, end)`` (and handlers of a flush there) read; None = all."""
    names: Set[str] = set()
    entries = program.entries[start:end]
    tasks = [(e.task, effects[e.index]) for e in entries]
    if any(e.is_flush for e in entries):
        from ioc.planner.effects import analyze_task
        tasks += [(h, analyze_task(h)) for h in program.handlers]
    for task, eff in tasks:
        if task.action in READS_EVERYTHING or _open_ended(eff):
            return None
        names |= eff.read_names | _loop_variables(task)
        for access in eff.hostvars:
            # hostvars['h1'].x is this host's own x when this host is h1.
            names |= set(access.attrs)
    return frozenset(names)


def _loop_variables(task: Any) -> FrozenSet[str]:
    """A loop's ``loop_var`` and ``index_var`` (the names written): before
    the first item TaskExecutor looks them up among the task's variables, to
    warn of one already in use."""
    if task.loop is None and not task.loop_with:
        return frozenset()
    control = task.loop_control or {}
    return frozenset(name for name in (control.get("loop_var", "item"), control.get("index_var"))
                     if isinstance(name, str) and name)


def other_hostvars(program: Program, effects: Sequence[Effects], start: int,
                   end: int) -> Optional[FrozenSet[str]]:
    """Attributes read on *other* hosts' ``hostvars`` in ``[start, end)``.

    ``frozenset()`` when no other host is read; ``None`` when some access
    reads a whole host (``hostvars[h]`` passed on, iterated, or dumped).
    """
    entries = program.entries[start:end]
    if any("ansible_delegated_vars" in effects[e.index].read_names for e in entries):
        return None  # (it holds the delegate's hostvars, every host's whole)
    if any(c.plugin == "template" for e in entries for c in effects[e.index].lookups):
        return None  # (a file the planner never sees may read any host's)
    return other_attrs(access for entry in entries for access in effects[entry.index].hostvars)


def other_attrs(accesses: Iterable[HostvarsAccess],
                attrs: FrozenSet[str] = frozenset()) -> Optional[FrozenSet[str]]:
    """``attrs`` and what ``accesses`` read on other hosts; None: whole hosts."""
    out: Set[str] = set(attrs)
    for access in accesses:
        if access.host == SELF:
            continue
        if not access.attrs:
            return None
        out |= set(access.attrs)
    return frozenset(out)


def _open_ended(eff: Effects) -> bool:
    # (ansible_delegated_vars holds a delegate's every variable, the play's too)
    if "vars" in eff.read_names or "ansible_delegated_vars" in eff.read_names:
        return True
    # A whole host (hostvars[h] iterated, tested with `in`, passed on) may be
    # this host's own for any h: the plan is every host's, and a computed or
    # named h is this host on one of them.
    if any(not a.attrs for a in eff.hostvars):
        return True
    # (varnames lists the names that match: every name is read; a template
    # lookup renders a file the planner never sees; so does a computed
    # lookup, and Ansible's own lookups (ioc's controller runs them) are
    # given the variables their options are read from, which only the
    # plugin's documentation names)
    return any(c.plugin in ("varnames", "template")
               or (c.plugin in (None, "vars") and not c.static_args)
               or (c.plugin is not None and c.plugin not in IOC_LOOKUPS)
               for c in eff.lookups)
