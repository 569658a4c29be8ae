"""A play compiled into the linear strategy's flattened task list (L1.1).

Every task of the play gets an *index* in the order the linear strategy walks
it: ``Gathering Facts``, ``pre_tasks``, an implicit handler flush, the roles'
and the play's ``tasks``, a flush, ``post_tasks``, a flush; inside a block its
tasks, then its rescue, then its always section. The index is the step key the
runner reports and the replay orders by, so it must be identical on every host.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Any, Dict, FrozenSet, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import dataclasses
import functools

from ioc.errors import PlanError
from ioc.model import Block, Location, Node, Play, Task, to_wire
from ioc.planner.tags import TagFilter

SECTIONS = ("pre_tasks", "tasks", "post_tasks")


@dataclass(frozen=True)
class Entry:
    """One numbered task of the play."""

    index: int
    task: Task
    section: str
    #: Tasks the linear strategy adds itself: fact gathering and flushes.
    implicit: bool = False

    @property
    def is_flush(self) -> bool:
        return self.task.action == "meta" and self.task.args.get("_raw_params") == "flush_handlers"


@dataclass(frozen=True)
class NumberedBlock:
    id: int
    block: Block
    body: Tuple["Numbered", ...]
    rescue: Tuple["Numbered", ...]
    always: Tuple["Numbered", ...]
    #: The include task heading a statically known include (see Block.include).
    include: Optional[Entry] = None


Numbered = Union[Entry, NumberedBlock]


@dataclass(frozen=True)
class Program:
    play: Play
    tree: Tuple[Numbered, ...]
    entries: Tuple[Entry, ...]
    #: For each entry index, its enclosing blocks, outermost first.
    parents: Tuple[Tuple[Block, ...], ...] = ()
    #: Indices of include tasks heading a statically inlined include.
    include_heads: Tuple[int, ...] = ()
    #: Handlers ioc does not run natively (the mitogen_batch bridge runs them
    #: through Ansible, see ``schedule``): (handler number, why), by number.
    foreign_handlers: Tuple[Tuple[int, str], ...] = ()

    @property
    def handlers(self) -> Tuple[Task, ...]:
        return self.play.handlers

    @property
    def foreign_handler_numbers(self) -> FrozenSet[int]:
        return frozenset(number for number, _ in self.foreign_handlers)

    def entry(self, index: int) -> Entry:
        return self.entries[index]

    @functools.cached_property
    def forced_flush_blocks(self) -> FrozenSet[str]:
        """The ids (as the runner keys its blocks) of the blocks that wrap a
        section for ``force_handlers`` (L5.7). They are ioc's, not the play's:
        a host in such a block's ``always`` with a failure is a failed host to
        linear (its iterator has no such block), though it still runs the flush."""
        return frozenset(str(node.id) for node in self.tree
                         if isinstance(node, NumberedBlock) and node.block.implicit
                         and any(isinstance(e, Entry) and e.implicit and e.is_flush
                                 for e in node.always))


def compile_play(play: Play, tags: Optional[TagFilter] = None) -> Program:
    """Number ``play``'s tasks in linear order (pure; same play, same numbers).

    Tasks ``tags`` filters out are left out altogether: they are not reached.
    """
    tags = tags or TagFilter()
    numberer = _Numberer()
    tree: list[Numbered] = []
    for section in SECTIONS:
        nodes: Tuple[Node, ...] = tuple(_select(getattr(play, section), tags))
        if section == "pre_tasks" and play.gather_facts and tags.selects(_gather_tags(play)):
            tree.append(numberer.entry(gather_task(play.location, play.become,
                                                   play.gather_module, play.environment,
                                                   play.gather_args), section,
                                       implicit=True))
        if play.force_handlers and nodes:
            # L5.7: force_handlers wraps the section in a block whose always
            # holds the flush, so a host that failed still runs its handlers.
            tree.append(numberer.node(_forced_flush(play, nodes), section))
            continue
        tree.extend(numberer.node(node, section) for node in nodes)
        tree.append(numberer.entry(flush_task(play.location), section, implicit=True))
    return Program(play=play, tree=tuple(tree), entries=tuple(numberer.entries),
                   parents=tuple(numberer.parents), include_heads=tuple(numberer.include_heads))


def _gather_tags(play: Play) -> frozenset:
    """Fact gathering carries the play's tags, or ``always`` when it has none (L7.9)."""
    return frozenset(play.tags) if play.tags else frozenset({"always"})


def _select(nodes: Tuple[Node, ...], tags: TagFilter) -> list:
    """``nodes`` without the tasks ``tags`` filters out (blocks left empty go too)."""
    if tags.everything and not _has_never(nodes):
        return list(nodes)  # the common case: nothing to filter, keep the IR as it is
    out: list = []
    for node in nodes:
        if isinstance(node, Task):
            if tags.selects(frozenset(node.tags)):
                out.append(node)
            continue
        pruned = dataclasses.replace(
            node, block=tuple(_select(node.block, tags)), rescue=tuple(_select(node.rescue, tags)),
            always=tuple(_select(node.always, tags)),
            include=node.include if node.include is None or tags.selects(frozenset(node.include.tags))
            else None)
        if node.include is not None and pruned.include is None:
            continue  # a filtered include: its tasks are never included
        if pruned.block or pruned.rescue or pruned.always or pruned.include is not None:
            out.append(pruned)
    return out


def _has_never(nodes: Tuple[Node, ...]) -> bool:
    for node in nodes:
        if isinstance(node, Task):
            if "never" in node.tags:
                return True
        elif _has_never(node.block + node.rescue + node.always) or (
                node.include is not None and "never" in node.include.tags):
            return True
    return False


class _ImplicitFlush(Task):
    """Marker type: the flush of a force_handlers section (numbered as implicit)."""


def _forced_flush(play: Play, nodes: Tuple[Node, ...]) -> Block:
    return Block(block=nodes, always=(_ImplicitFlush(**_fields(flush_task(play.location))),),
                 location=play.location, implicit=True)


def _fields(task: Task) -> dict:
    return {f.name: getattr(task, f.name) for f in dataclasses.fields(task)}


def gather_task(location: Location, become: Optional[Mapping[str, Any]] = None,
                module: Optional[str] = None, environment: Any = None,
                args: Optional[Mapping[str, Any]] = None) -> Task:
    """The implicit fact gathering; it runs under the play's ``become`` and with its
    ``environment`` (as in Ansible: ``ansible_env`` shows the play's variables), with
    ``args`` (the play's ``gather_subset``, ``gather_timeout``, ``fact_path``)."""
    return Task(action="gather_facts", args=dict(args or {}), location=location, name="Gathering Facts",
                module=module, environment=environment, **dict(become or {}))


def flush_task(location: Location) -> Task:
    return Task(action="meta", args={"_raw_params": "flush_handlers"}, location=location)


class _Numberer:
    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.parents: list[Tuple[Block, ...]] = []
        self.blocks = 0
        self.stack: Tuple[Block, ...] = ()
        self.include_heads: list[int] = []

    def entry(self, task: Task, section: str, implicit: bool = False) -> Entry:
        entry = Entry(len(self.entries), task, section, implicit)
        self.entries.append(entry)
        self.parents.append(self.stack)
        return entry

    def node(self, node: Node, section: str) -> Numbered:
        if isinstance(node, Task):
            return self.entry(node, section, implicit=isinstance(node, _ImplicitFlush))
        block_id = self.blocks
        self.blocks += 1
        include = self.entry(node.include, section) if node.include is not None else None
        if include is not None:
            self.include_heads.append(include.index)
        outer, self.stack = self.stack, self.stack + (node,)
        try:
            return NumberedBlock(
                id=block_id,
                block=node,
                include=include,
                body=tuple(self.node(n, section) for n in node.block),
                rescue=tuple(self.node(n, section) for n in node.rescue),
                always=tuple(self.node(n, section) for n in node.always),
            )
        finally:
            self.stack = outer


def walk(tree: Tuple[Numbered, ...]) -> Iterator[Entry]:
    """Every entry of ``tree`` in index order."""
    for node in tree:
        if isinstance(node, Entry):
            yield node
        else:
            if node.include is not None:
                yield node.include
            for part in (node.body, node.rescue, node.always):
                yield from walk(part)


def span(node: Numbered) -> Tuple[int, int]:
    """The ``[first, last]`` task indices a node covers; (-1, -1) if empty."""
    indices = [e.index for e in walk((node,))]
    return (indices[0], indices[-1]) if indices else (-1, -1)


def wire_tree(tree: Tuple[Numbered, ...], start: int, end: int,
              suspend: AbstractSet[int] = frozenset()) -> list:
    """The runner's view of ``tree`` for the tasks in ``[start, end)``.

    Nodes wholly before ``start`` are dropped (they ran in an earlier batch).
    The first node at or after ``end`` becomes a *fence*: a host that reaches
    it stops there and reports where it stands in each enclosing block, so the
    next batch resumes it exactly (in a rescue, in an always, with a failure).
    The batch's last task is followed by a fence too: a host stays where
    linear's iterator leaves it, inside the blocks around that task, until
    the next batch. What a dynamic include there includes is spliced in right
    after it, inside those blocks; a host that another host's failure marks
    failed (any_errors_fatal) goes to the rescue of the innermost of them.
    A task in ``suspend`` (a suspension point, ``Batch.suspend``) comes
    without its arguments, marked ``suspend``: the runner only decides
    whether the host reaches it.
    """
    out: list = []
    for node in tree:
        first, last = span(node)
        if first < 0 or last < start:
            continue
        if first >= end:
            out.append({"fence": first})
            break
        out.append(_wire_node(node, start, end, suspend))
        if isinstance(node, Entry) and node.index == end - 1:
            out.append({"fence": end})
            break
    return out


def _wire_node(node: Numbered, start: int, end: int, suspend: AbstractSet[int]) -> dict:
    if isinstance(node, Entry):
        wire = {"i": node.index, "t": to_wire(node.task)}
        if node.index in suspend:
            wire["t"].pop("module", None)
            wire["t"].update(args={}, suspend=True)
        if node.implicit:
            wire["implicit"] = True
        return wire
    block = node.block
    wire = {"b": node.id, "block": wire_tree(node.body, start, end, suspend)}
    if node.include is not None:
        wire["include"] = {"i": node.include.index, "t": to_wire(node.include.task)}
    wire["rescue"] = wire_tree(node.rescue, start, end, suspend)
    wire["always"] = wire_tree(node.always, start, end, suspend)
    if node.rescue:
        # Known even when the rescue lies outside the range: whether a block
        # *has* a rescue decides where a failure goes and how it counts (L4.3).
        wire["rescuable"] = True
    if block.vars:
        wire["vars"] = to_wire(block.vars)
    if block.params:
        wire["params"] = to_wire(block.params)
    if block.defaults:
        wire["defaults"] = to_wire(block.defaults)
    if block.role and block.implicit:
        wire["role"] = block.role
    if block.hosts:
        wire["hosts"] = list(block.hosts)
    if block.role_key:
        wire["role_key"] = block.role_key
    if block.role_repeats:
        wire["role_repeats"] = True
    if block.role_end:
        wire["role_end"] = True
    return wire


#: How deep blocks and dynamic includes may nest (the runner recurses per level).
MAX_NESTING = 100


def too_deep(program: "Program", index: int) -> Optional[str]:
    """The error for a dynamic include at ``index`` nested too deep, or None.

    An include that includes itself with nothing to end it would go on until
    Python's recursion limit broke the runner (linear: "maximum recursion
    depth exceeded" and a traceback); here its hosts fail at the include.
    """
    depth = len(program.parents[index])
    if depth < MAX_NESTING:
        return None
    return ("%s is nested %d blocks and includes deep (at most %d): an include that includes "
            "itself without a condition that ends it?"
            % (program.entry(index).task.location, depth, MAX_NESTING))


def splice_after(play: Play, task: Task, blocks: Tuple[Block, ...], included: Sequence[Any]) -> Play:
    """``play`` with ``blocks`` right after ``task`` (found by identity).

    Handlers an ``include_role`` brought are added (after the play's own, so
    existing handler numbers stay valid), the defaults and vars of a public
    one over the play's roles' (Ansible's ``play.roles`` gains it), and its
    role's names (``role_names``, ``dependent_role_names``: ``play.roles``
    gains the role when the include runs).
    """
    found = []

    def nodes(seq: Tuple[Any, ...]) -> Tuple[Any, ...]:
        out: List[Any] = []
        for node in seq:
            if isinstance(node, Block):
                node = dataclasses.replace(node, block=nodes(node.block), rescue=nodes(node.rescue),
                                           always=nodes(node.always))
                out.append(node)
            else:
                out.append(node)
                if node is task:
                    found.append(node)
                    out.extend(blocks)
        return tuple(out)

    pre_tasks, tasks, post_tasks = (nodes(play.pre_tasks), nodes(play.tasks), nodes(play.post_tasks))
    if not found:
        raise PlanError("dynamic include not found in its play", task.location)
    known = {h.location for h in play.handlers}
    handlers = list(play.handlers)
    defaults, exported = dict(play.role_defaults), dict(play.role_vars)
    role_names, dependent_role_names = list(play.role_names), list(play.dependent_role_names)
    for inc in included:
        handlers.extend(h for h in inc.handlers if h.location not in known)
        known.update(h.location for h in inc.handlers)
        defaults.update(inc.role_defaults)
        exported.update(inc.role_vars)
        role_names.extend(inc.role_names)
        dependent_role_names.extend(inc.dependent_role_names)
    return dataclasses.replace(play, handlers=tuple(handlers),
                               role_defaults=defaults, role_vars=exported,
                               role_names=tuple(role_names),
                               dependent_role_names=tuple(dependent_role_names),
                               pre_tasks=pre_tasks, tasks=tasks, post_tasks=post_tasks)
