"""The controller's answer to plugins the runner does not have.

The runner implements ansible-core's common filters, tests and pure lookups
itself. A template that names any other plugin Ansible can resolve -- a
collection's filter, test or lookup, a builtin ioc lacks -- still runs:

* **filters and tests** are *proxied*: the runner registers a stand-in under
  the name; when a template reaches it, the runner sends the call (name,
  arguments as builtins) up its existing event stream with a reply handle
  (mitogen's ``reply_to``) and waits; the controller's dispatch loop answers
  with the plugin's result, run by Ansible's own loader and Templar
  (``ioc.ansible.plugins``). One round trip per call, only where a template
  reaches it. In the controller process (controller steps, controller-side
  templating) the call is direct.
* **lookups** read the controller anyway: ``ioc.controller.lookups`` runs
  them before the batch and ships the answers, like ioc's own controller
  lookups, so they cost no round trip at all.

The planner's capability check asks :func:`names`: a name ioc has, or one
Ansible resolves, passes; a name that exists nowhere is still a PlanError
with the task's ``file:line``. Which host answers is injected
(:func:`install`, by the CLI or the mitogen_batch dispatcher): this package
does not import ansible.
"""
from __future__ import annotations

import collections.abc
import logging
import threading
from typing import AbstractSet, Any, Dict, Iterator, List, Optional, Protocol, Set

from ioc.agentless_runner import templating

LOG = logging.getLogger(__name__)


class PluginFailure(Exception):
    """A plugin failed; ``str()`` is Ansible's message."""


class PluginHost(Protocol):
    def resolves(self, kind: str, name: str) -> bool: ...

    def call(self, kind: str, name: str, args: List[Any], kwargs: Dict[str, Any],
             variables: Optional[Dict[str, Any]] = None) -> Any: ...


_HOST: List[Optional[PluginHost]] = [None]
_LOCK = threading.Lock()
#: Foreign names the planner accepted, by kind: every batch declares them.
_USED: Dict[str, Set[str]] = {"filter": set(), "test": set(), "lookup": set()}
#: Calls answered and the time spent answering them (for reports and tests).
STATS = {"calls": 0}


def install(host: Optional[PluginHost]) -> None:
    """Make ``host`` answer for plugins ioc lacks (None: nothing does)."""
    _HOST[0] = host
    templating.use_plugin_caller(call if host is not None else None, default=True)


def installed() -> bool:
    return _HOST[0] is not None


class Names(collections.abc.Set):  # type: ignore[type-arg]
    """ioc's own names of one kind, plus every name Ansible resolves (lazily)."""

    def __init__(self, kind: str, own: AbstractSet[str]) -> None:
        self.kind = kind
        self.own = frozenset(own)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if name in self.own:
            return True
        host = _HOST[0]
        if host is None or not host.resolves(self.kind, name):
            return False
        with _LOCK:
            if name not in _USED[self.kind]:
                _USED[self.kind].add(name)
                if self.kind != "lookup":
                    templating.declare_foreign(self.kind, [name])
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self.own | _USED[self.kind])

    def __len__(self) -> int:
        return len(self.own | _USED[self.kind])


def names(kind: str, own: AbstractSet[str]) -> AbstractSet[str]:
    return Names(kind, own)


def declare_used_in(text: str) -> None:
    """Declare the filters and tests of Ansible's that the template ``text`` (a
    ``template`` task's source file, which the planner never sees) names and
    ioc lacks, as the planner's check of a task's templates does; a name
    nothing resolves, or a text that does not parse, fails when the runner
    renders it, as under Ansible."""
    from ioc.planner.support import plugin_names

    own = {"filter": names("filter", templating.known_filters()),
           "test": names("test", templating.known_tests())}
    for kind, name in plugin_names(text) or ():
        _ = name in own[kind]  # (Names declares what Ansible resolves)


def declared() -> Dict[str, List[str]]:
    """The foreign filters and tests every batch's runner must proxy."""
    return {kind: sorted(_USED[kind]) for kind in ("filter", "test") if _USED[kind]}


def declare(names: Dict[str, List[str]]) -> None:
    """Adopt foreign names another process's planner accepted (the mitogen_batch
    dispatcher gets them with each play)."""
    with _LOCK:
        for kind, listed in names.items():
            _USED[kind].update(listed)
            templating.declare_foreign(kind, listed)


def variables_read(kind: str, name: str, kwargs: Dict[str, Any]) -> List[str]:
    """The variables Ansible's plugin ``name`` reads its options from (none
    when nothing answers for Ansible's plugins)."""
    host = _HOST[0]
    reader = getattr(host, "variables_read", None)
    return list(reader(kind, name, kwargs)) if reader is not None else []


def call(kind: str, name: str, args: List[Any], kwargs: Dict[str, Any],
         variables: Optional[Dict[str, Any]] = None) -> Any:
    """Run one plugin call on the controller; raises PluginFailure.
    ``variables``: what a lookup is given as the task's variables (where
    it finds the files it reads: ``ansible_search_path``, ``role_path``)."""
    host = _HOST[0]
    if host is None:
        raise PluginFailure("no plugin named %r: ioc does not have it and nothing on the "
                            "controller answers for Ansible's plugins" % name)
    STATS["calls"] += 1
    if variables:
        return host.call(kind, name, args, kwargs, variables)
    return host.call(kind, name, args, kwargs)


def answer(request: Dict[str, Any]) -> Dict[str, Any]:
    """The reply to a runner's ``{"e": "plugin", ...}`` request."""
    try:
        return {"value": call(request["kind"], request["name"], list(request.get("args") or []),
                              dict(request.get("kwargs") or {}))}
    except PluginFailure as exc:
        return {"error": str(exc)}
    except Exception as exc:  # the task fails with it, the run goes on
        LOG.debug("plugin %s failed", request.get("name"), exc_info=True)
        return {"error": "%s: %s" % (type(exc).__name__, exc)}
