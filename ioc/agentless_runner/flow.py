"""The signals and small values a host's walk through its task tree is made of.

A batch's walk (``batch.HostRun``) unwinds with exceptions: :class:`BatchEnd`
at a fence (the next task is another batch's), :class:`EndHost` and
:class:`EndRole` for the metas; an unrescued failure travels up the block
tree as a :class:`Failure` value, and :class:`Scope` is what encloses a task.
The helpers here are shared by the walk, its loops and its handlers.
"""
import re

from ioc.agentless_runner.templating import TemplateError


class LoopTypeError(Exception):
    """The loop expression did not give a list."""


class BatchEnd(Exception):
    """The next task belongs to a later batch: unwind, recording block state."""


class EndHost(Exception):
    """``meta: end_host`` ran: the host leaves the play without failing."""


class HostUnreachable(Exception):
    """A task needed the host's connection and there is none: the host leaves
    the play at once (no rescue, no always), as in the linear strategy."""


class EndRole(Exception):
    """``meta: end_role`` ran: the host skips the rest of the current role."""


class AbortRun(Exception):
    """The whole run ends here (a changed task notified a name no handler
    has): the walk stops at once, whatever encloses the task."""


class Failure(object):
    """An unrescued failure travelling up the block tree."""

    __slots__ = ("task", "result")

    def __init__(self, task, result):
        self.task = task
        self.result = result


class Scope(object):
    """The lexical context of a task: enclosing blocks, innermost last."""

    __slots__ = ("blocks", "rescuable")

    def __init__(self, blocks=(), rescuable=False):
        self.blocks = blocks
        #: True while any enclosing block has a rescue for this part (L4.3).
        self.rescuable = rescuable

    def enter(self, block, rescuable):
        return Scope(self.blocks + (block,), self.rescuable or rescuable)


def handler_scope(handler, rescuable=False):
    """The scope a (wire) handler is templated in: its role's parameters and
    defaults, as its dependency chain gives them (``role_params``,
    ``role_defaults``), not the blocks around the flush that runs it: linear's
    ``VariableManager.get_vars(task=handler)`` walks the handler's own
    parents and dependency chain. ``rescuable``: the flush's."""
    own = {"params": handler.get("role_params") or {},
           "defaults": handler.get("role_defaults") or {}}
    return Scope((own,), rescuable)


def template_name(task, templar):
    """The task name as the banner shows it, templated for this host (L1.10)."""
    name = task.get("name")
    if not name:
        base = unnamed(task.get("action_written") or task["action"], task["action"],
                       task.get("args") or {})
    else:
        base = safe_template(templar, name)
    if task["action"] == "include_role":
        return base  # (IncludeRole.get_name: never its role's prefix)
    return "%s : %s" % (task["role"], base) if task.get("role") else base


def unnamed(written, action, args):
    """The banner of an unnamed task: its action as written; an ``include_role``
    adds the role's name as written (``include_role : web``), as Ansible does."""
    role = args.get("name") if action == "include_role" else None
    return "%s : %s" % (written, role) if isinstance(role, str) and role else written


def matching_handlers(handlers, name):
    """Numbers of the (wire) handlers ``name`` notifies, in the order linear
    announces them (``StrategyBase.search_handlers_by_notification``): the
    handler blocks (each role's, the play's) last loaded first, each in its
    own order; the first handler answering to ``name``, then every handler
    listening to it, one per handler name."""
    order = _search_order(handlers)
    for number in order:
        if name in _handler_names(handlers[number]):
            yield number
            break
    seen = set()
    for number in order:
        handler = handlers[number]
        if name in handler.get("listen", ()):
            if handler.get("name") and handler["name"] in seen:
                continue
            seen.add(handler.get("name"))
            yield number


def _search_order(handlers):
    """Handler numbers block by block, the last block first (a block: the
    handlers of one role, or the play's own, consecutive in the list)."""
    blocks = []
    for number, handler in enumerate(handlers):
        if blocks and handlers[blocks[-1][0]].get("role") == handler.get("role"):
            blocks[-1].append(number)
        else:
            blocks.append([number])
    return [number for block in reversed(blocks) for number in block]


#: ansible-core's words for a handler whose templated name cannot be
#: templated and that listens to nothing (search_handlers_by_notification).
UNUSABLE_HANDLER = ("Handler '%s' is unusable because it has no listen topics and the name "
                    "could not be templated (host-specific variables are not supported in "
                    "handler names). The error: %s")


def handler_search(handlers):
    """What linear's search by name passes, in its order, up to the last
    handler whose name could not be templated (``name_error``) and that has
    no ``listen``: per handler ``["names", its names]`` or ``["warn", the
    warning]``. Empty when no handler is such (nothing to warn about)."""
    out = []
    for number in _search_order(handlers):
        handler = handlers[number]
        if handler.get("name_error") is not None:
            if not handler.get("listen"):
                out.append(["warn", UNUSABLE_HANDLER % (handler["name"], handler["name_error"])])
        else:
            out.append(["names", _handler_names(handler)])
    while out and out[-1][0] == "names":
        out.pop()
    return out


def search_warnings(search, name):
    """The warnings linear gives while it looks ``name`` up (``search``: from
    :func:`handler_search`): it templates each handler's name until one
    answers, and warns for each it passes that is unusable."""
    for kind, value in search:
        if kind == "warn":
            yield value
        elif name in value:
            return


def _handler_names(handler):
    if not handler.get("name") or handler.get("name_error") is not None:
        return []  # (unnamed, or a name that could not be templated: listen only)
    names = [handler.get("name")]
    if handler.get("role") and handler.get("name"):
        names.append("%s : %s" % (handler["role"], handler["name"]))
    return names


def notification_names(values):
    """A changed result's notifications: its templated ``notify`` entries, one
    that gave a list (``notify: "{{ handlers }}"``, which Ansible's list
    keyword takes whole) giving each of its names."""
    out = []
    for value in values:
        out.extend(value if isinstance(value, list) else (value,))
    return out


def safe_template(templar, value):
    """``value`` templated; where that fails (a name reading an undefined
    variable), each ``{{ ... }}`` that fails is replaced in place by ansible-core
    2.21's marker ``<< error N - <why> >>``."""
    try:
        out = templar.template(value)
    except TemplateError as exc:
        if not isinstance(value, str):
            return "%s << error 1 - %s >>" % (value, exc)
        errors = []

        def marker(match):
            try:
                return str(templar.template(match.group(0)))
            except TemplateError as part:
                errors.append(part)
                return "<< error %d - %s >>" % (len(errors), part)

        out = _EXPRESSION.sub(marker, value)
        if not errors:  # the failure was not in a {{ }} of its own ({% %} blocks...)
            return "%s << error 1 - %s >>" % (value, exc)
    return out if isinstance(out, str) else str(out)


#: A ``{{ ... }}`` expression (not nested in a ``{% %}`` block).
_EXPRESSION = re.compile(r"\{\{.*?\}\}", re.S)


def native_type_name(value):
    for base in (dict, list, str, bool, int, float):
        if isinstance(value, base):
            return base.__name__
    return type(value).__name__


def as_bool(value):
    if isinstance(value, str):
        return value.strip().lower() in ("yes", "on", "1", "true", "y", "t")
    return bool(value)
