"""Ansible's own filter, test and lookup plugins, run on the controller for the runner.

ioc's runner has its own implementations of ansible-core's common filters,
tests and pure lookups (proven equal: tests/unit/test_filters_against_ansible.py).
Anything else a template names -- a collection's filter
(``community.general.dict_kv``), a builtin ioc does not implement
(``password_hash``), a collection's lookup -- is resolved here by Ansible's
plugin loaders and run by Ansible's own Templar, exactly as
``ansible-playbook`` would run it (argument handling, error messages). Only
builtins go in and come out (``values.plain``), because the values cross
the runner's connection.

Used through ``ioc.controller.plugins`` (which must not import ansible).
"""
from __future__ import annotations

import contextlib
import functools
import os
import re
import threading
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

from ioc.ansible.values import plain, tagged

_LOADER_NAMES = {"filter": "filter_loader", "test": "test_loader", "lookup": "lookup_loader"}

#: Ansible's plugin loaders are not thread-safe (each of linear's workers is
#: a process of its own), and runners ask on threads of their own
#: (``ioc.controller.dispatch``): two first calls of one filter at once had
#: one fail "No filter named 'subelements'" (the loader's caches half-filled
#: by the other). A plugin's first call (its loading) and every ``resolves``
#: take this lock; once loaded, calls run at once (a slow lookup for one
#: host never waits for another's).
_LOADING = threading.Lock()
#: ``(kind, name)`` of the plugins loaded (called once) in this process.
_LOADED: Set[Tuple[str, str]] = set()


class AnsiblePlugins:
    """Resolves and calls Ansible's plugins by name (``ioc.controller.plugins.PluginHost``).

    ``display``: where what Ansible displays while it loads or runs a plugin
    (warnings, deprecations) goes, as ``display(method, args, kwargs)``:
    under mitogen_batch, to the parent's console, where linear would have
    printed it. None leaves it to this process's stderr.
    """

    def __init__(self, display: Optional[Callable[..., None]] = None) -> None:
        self.display = display
        import warnings

        from ansible.parsing.dataloader import DataLoader
        from ansible.plugins.loader import init_plugin_loader

        from ioc.ansible.modules import keep_collection_metadata

        with warnings.catch_warnings():  # already set up inside ansible-playbook
            warnings.simplefilter("ignore")
            keep_collection_metadata()
            init_plugin_loader()
        self._data_loader = DataLoader()

    def resolves(self, kind: str, name: str) -> bool:
        with _LOADING:
            return self._resolves(kind, name)

    def _resolves(self, kind: str, name: str) -> bool:
        from ansible.errors import AnsibleError
        from ansible.plugins import loader

        plugin_loader = getattr(loader, _LOADER_NAMES[kind])
        try:
            if kind == "lookup":
                return bool(plugin_loader.has_plugin(name))
            return plugin_loader.get(name) is not None
        except (KeyError, AnsibleError):
            return False
        except Exception:  # (its own code raised: it is there and fails to load)
            return True  # calling it fails as in Ansible ("... failed to load: ...")

    def variables_read(self, kind: str, name: str, kwargs: Mapping[str, Any]) -> List[str]:
        """The variables plugin ``name`` reads its options from (the ``vars``
        its documentation gives them), and for the ``config`` lookup those of
        the plugin it is asked about (``plugin_type``, ``plugin_name``)."""
        with _LOADING:
            names = _option_variables(kind, name)
            if kind == "lookup" and name in ("config", "ansible.builtin.config") \
                    and isinstance(kwargs.get("plugin_type"), str) \
                    and isinstance(kwargs.get("plugin_name"), str):
                names += _option_variables(kwargs["plugin_type"], kwargs["plugin_name"])
            return sorted(set(names))

    def call(self, kind: str, name: str, args: List[Any], kwargs: Dict[str, Any],
             variables: Optional[Dict[str, Any]] = None) -> Any:
        """The plugin's result as builtins; raises ``PluginFailure`` with Ansible's
        message. ``variables``: the task's, as a lookup is given them."""
        if (kind, name) in _LOADED:
            return self._call(kind, name, args, kwargs, variables)
        with _LOADING:
            try:
                return self._call(kind, name, args, kwargs, variables)
            finally:
                _LOADED.add((kind, name))

    def _call(self, kind: str, name: str, args: List[Any], kwargs: Dict[str, Any],
              variables: Optional[Dict[str, Any]] = None) -> Any:
        from ansible.template import Templar, trust_as_template

        from ioc.controller.plugins import PluginFailure

        if kind in ("filter", "test"):
            from ansible.errors import AnsibleError
            from ansible.plugins import loader

            try:
                getattr(loader, _LOADER_NAMES[kind]).get(name)
            except (KeyError, AnsibleError):
                pass  # (the expression says what Ansible says of it)
            except Exception as exc:  # its own code raised (AnsibleTemplatePluginLoadError's words)
                raise PluginFailure("The %s plugin %r failed to load: %s" % (kind, name, exc)) \
                    from None
        raw: List[Any] = []
        if kind == "filter":  # (its own result seen too: finalizing makes tuples lists)
            expression = "__ioc_seen(__ioc_args[0] | %s(*__ioc_args[1:], **__ioc_kwargs))" % name
        elif kind == "test":
            expression = "__ioc_args[0] is %s(*__ioc_args[1:], **__ioc_kwargs)" % name
        elif any(map(_is_undefined, args)):
            expression = "query(__ioc_name, %s, **__ioc_kwargs)" % ", ".join(
                _undefined_reference(name, arg) if _is_undefined(arg) else "__ioc_args[%d]" % n
                for n, arg in enumerate(args))
        else:
            expression = "query(__ioc_name, *__ioc_args, **__ioc_kwargs)"
        playbook_dir = (variables or {}).get("playbook_dir")
        if playbook_dir and self._data_loader.get_basedir() != playbook_dir:
            # (a relative path a plugin dwims is the playbook's, as under
            # ansible-playbook: the password lookup's file)
            self._data_loader.set_basedir(playbook_dir)
        templar = Templar(loader=self._data_loader, variables=tagged(variables or {}))
        try:
            with _warnings_to(self.display):
                value = templar._engine.extend(marker_behavior=_KeepUndefined()).evaluate_expression(
                    trust_as_template(expression),
                    local_variables={"__ioc_args": tagged(args), "__ioc_kwargs": tagged(kwargs),
                                     "__ioc_name": name, "__ioc_seen": _seen(raw)})
            return _tuples_kept(plain(value), raw[0]) if raw else plain(value)
        except Exception as exc:
            raise PluginFailure(_message(exc)) from None


def _option_variables(plugin_type: str, name: str) -> List[str]:
    """The ``vars`` of the options of Ansible's ``plugin_type`` plugin ``name``
    (none when it does not load)."""
    import ansible.constants as C
    from ansible.plugins import loader

    plugin_loader = getattr(loader, "%s_loader" % plugin_type, None)
    try:
        plugin = plugin_loader.get(name, class_only=True) if plugin_loader is not None else None
    except Exception:  # (its call says what is wrong with it)
        return []
    if plugin is None:
        return []
    definitions = C.config.get_configuration_definitions(
        plugin_type, getattr(plugin, "_load_name", name)) or {}
    return [entry["name"] for option in definitions.values() if isinstance(option, Mapping)
            for entry in option.get("vars") or () if isinstance(entry, Mapping) and entry.get("name")]


def _seen(into: List[Any]) -> Callable[[Any], Any]:
    """A callable an expression hands a value through, which keeps it in
    ``into`` as the template had it (Ansible's call hands a marker on without
    calling: an undefined result is what it was)."""
    def seen(value: Any) -> Any:
        into.append(value)
        return value
    return seen


def _tuples_kept(value: Any, raw: Any) -> Any:
    """``value`` (a filter's result, finalized: ``plain``) with the tuples its
    ``raw`` result had, as a template that reads the result sees them
    (``subelements``' pairs: a list never equals a tuple). A tuple holding a
    text that travels in a wire form of its own (a vault's) stays a list."""
    from ioc.agentless_runner import trust

    if isinstance(value, dict) and isinstance(raw, Mapping):
        return {k: _tuples_kept(v, raw[k]) if k in raw else v for k, v in value.items()}
    if isinstance(value, list) and isinstance(raw, (list, tuple)) and len(raw) == len(value):
        items = [_tuples_kept(v, r) for v, r in zip(value, raw)]
        if isinstance(raw, tuple) and trust.encode(items) is items:
            return tuple(items)
        return items
    return value


def _is_undefined(value: Any) -> bool:
    from ioc.agentless_runner.lookups import is_undefined

    return bool(is_undefined(value))


#: An undefined variable's message, as ansible-core words it.
_UNDEFINED_NAME = re.compile(r"^'([A-Za-z_][A-Za-z0-9_]*)' is undefined$")


def _undefined_reference(plugin: str, term: Any) -> str:
    """The expression whose value is the undefined term ``term`` (the runner's
    ``{UNDEFINED: message}``): the variable it names, which the plugin's templar
    does not define, so ansible-core makes its own marker of it for the plugin."""
    from ioc.agentless_runner.lookups import UNDEFINED
    from ioc.controller.plugins import PluginFailure

    message = str(term[UNDEFINED])
    found = _UNDEFINED_NAME.match(message)
    if found is None or found.group(1).startswith("__ioc_"):
        raise PluginFailure("ioc cannot hand lookup %r the undefined value (%s): only an "
                            "undefined variable" % (plugin, message))
    return found.group(1)


@functools.lru_cache(maxsize=None)
def _keep_undefined_class() -> Any:
    from ansible._internal._templating._jinja_common import UndefinedMarker
    from ansible._internal._templating._marker_behaviors import MarkerBehavior

    from ioc.agentless_runner.lookups import UNDEFINED

    class KeepUndefined(MarkerBehavior):  # type: ignore[misc]
        """A plugin's undefined values (its result, or its own undefined term when it
        takes none) as the runner's ``{UNDEFINED: message}``; any other marker fails."""

        def handle_marker(self, value: Any) -> Any:
            if type(value) is UndefinedMarker:
                return {UNDEFINED: value._as_message()}
            value.trip()

    return KeepUndefined


def _KeepUndefined() -> Any:
    return _keep_undefined_class()()


@contextlib.contextmanager
def _warnings_to(forward: Optional[Callable[..., None]]) -> Iterator[None]:
    """For the time of one plugin call, hand what Ansible displays to ``forward``.

    Ansible's own route for a worker process (``Display._final_q``): each
    proxied display call -- ``_warning``, ``_deprecated``, ``display`` -- goes
    as ``forward(method, args, kwargs)``, and the parent replays it on its
    ``Display``, as the strategy's results thread does for its workers.
    """
    if forward is None:
        yield
        return
    from ansible.utils.display import Display

    display = Display()  # (one per process: calls at once share its route)
    with _ROUTE_LOCK:
        if not _ROUTE:
            _ROUTE.append(display._final_q)
            display._final_q = _Forward(forward)
        _ROUTE.append(None)
    try:
        yield
    finally:
        with _ROUTE_LOCK:
            _ROUTE.pop()
            if len(_ROUTE) == 1:
                display._final_q = _ROUTE.pop()


#: :func:`_warnings_to`'s route: Display's own ``_final_q`` while calls are
#: under way, then one entry per call (the last one out puts it back).
_ROUTE: List[Any] = []
_ROUTE_LOCK = threading.Lock()


class _Forward:
    """The ``send_display`` end of :func:`_warnings_to`."""

    def __init__(self, forward: Callable[..., None]) -> None:
        self.forward = forward

    def send_display(self, method: str, *args: Any, **kwargs: Any) -> None:
        self.forward(method, args, kwargs)


def search_paths() -> Dict[str, List[str]]:
    """Where this process's Ansible looks for filter, test and lookup plugins.

    ``ansible-playbook`` adds the ``filter_plugins/``, ``test_plugins/`` and
    ``lookup_plugins/`` beside the playbook and in each role as it loads
    them (``add_all_plugin_dirs``); the mitogen_batch dispatcher, which runs
    those plugins for the runners, loaded nothing and needs them too
    (:func:`add_search_paths`).
    """
    from ansible.plugins import loader

    return {kind: getattr(loader, name).print_paths().split(os.pathsep)
            for kind, name in _LOADER_NAMES.items()}


def add_search_paths(paths: Mapping[str, Sequence[str]]) -> None:
    """Search ``paths`` (another process's :func:`search_paths`) as well, after
    the directories this process searches already."""
    from ansible.plugins import loader

    for kind, directories in paths.items():
        plugin_loader = getattr(loader, _LOADER_NAMES[kind])
        known = set(plugin_loader.print_paths().split(os.pathsep))
        for directory in directories:
            if directory and directory not in known:
                plugin_loader.add_directory(directory)


def install(display: Optional[Callable[..., None]] = None) -> None:
    """Answer for the plugins ioc lacks from this process (once); see :class:`AnsiblePlugins`."""
    from ioc.controller import plugins

    if not plugins.installed():
        plugins.install(AnsiblePlugins(display))


def _message(exc: BaseException) -> str:
    """Ansible's message for a plugin failure: its own, then each cause's
    (an AnsibleError's ``message`` has them already, as Ansible shows it)."""
    from ansible.errors import AnsibleError

    if isinstance(exc, AnsibleError):
        return str(exc.message)
    parts = [str(getattr(exc, "message", None) or exc)]
    cause = exc.__cause__
    while cause is not None:
        text = str(getattr(cause, "message", None) or cause)
        if text not in parts[-1]:
            parts.append(text)
        cause = cause.__cause__
    return ": ".join(parts)
