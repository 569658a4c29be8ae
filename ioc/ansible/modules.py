"""Ansible's own module code, packaged for the runner.

A task whose action is a *plain module* (Ansible would run it with the
``normal`` action plugin: no action plugin of its own) runs on the target
from Ansible's module code. This module decides which tasks those are,
exactly as ``TaskExecutor._get_action_handler_with_module_context`` does,
and builds each module's AnsiballZ payload with ``module_common``'s own
functions (``recursive_finder`` walks the ``module_utils`` it imports,
``_add_module_to_zip`` adds the module), so the target runs the bytes
``ansible-playbook`` would have sent.

The payload is split into files by content digest (:class:`ModuleSet`):
``ansible/module_utils/basic.py`` is the same for every module and crosses
the network once per host per run. The runner
(``ioc.agentless_runner.ansible_module``) reassembles the zip and runs
Ansible's wrapper with it.

Only Python modules ("new-style", AnsiballZ) run this way. Binary,
old-style (``key=value`` args file), ``WANT_JSON`` and PowerShell modules
are reported by :meth:`ModuleSet.add` as not supported, with the reason;
the front end runs those through Ansible or refuses them.
"""
from __future__ import annotations

import atexit
import contextlib
import datetime
import functools
import hashlib
import io
import json
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence,
                    Tuple)

from ioc.transport import cachefile


@dataclass(frozen=True)
class Resolved:
    """What an action runs as, per Ansible's plugin loaders."""

    #: The module's fully qualified name (``ansible.builtin.getent``).
    fqcn: str
    #: The module file on the controller.
    path: str
    #: None when the action is a plain module; else why not (the action plugin).
    action_plugin: Optional[str] = None


@dataclass
class ModuleSet:
    """Module payloads for the runner: specs by module key, files by digest."""

    #: key -> wire spec (see ioc/agentless_runner/ansible_module.py).
    specs: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    #: digest -> file content, zlib-compressed (digests start with ``z``).
    files: Dict[str, bytes] = field(default_factory=dict)
    #: The ``_ansible_*`` arguments that are the same for every task of the run.
    internal: Dict[str, Any] = field(default_factory=dict)
    #: Build payloads when they are first shipped (:meth:`prepare`), not when
    #: a task is marked: walking a module's ``module_utils`` costs ~0.5 s of
    #: CPU, which ``--plan`` and modules a run never reaches need not pay.
    #: ``mitogen_batch`` builds at once: its dispatcher, which ships them, has
    #: not the parent's plugin paths.
    lazy: bool = False
    #: key -> (what to build, module name), while :attr:`lazy` defers it.
    pending: Dict[str, Tuple[Resolved, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.internal = _plain(self.internal)

    def add(self, resolved: Resolved, module_name: str) -> Tuple[Optional[str], Optional[str]]:
        """Package ``resolved``; ``(key, None)`` or ``(None, why it cannot run)``."""
        key = "%s@%s" % (resolved.fqcn, resolved.path)
        if key in self.specs or key in self.pending:
            return key, None
        try:
            _check_style(resolved)
        except _Unsupported as exc:
            return None, str(exc)
        self.pending[key] = (resolved, module_name)
        if not self.lazy:
            self.prepare([key])
        return key, None

    def prepare(self, keys: Iterable[str]) -> None:
        """Build the payloads of ``keys`` (and of the modules they dispatch to) not built yet."""
        for key in keys:
            if key in self.pending:
                resolved, module_name = self.pending.pop(key)
                spec = _build(resolved, module_name, self.files)
                spec["internal"] = self.internal
                self.specs[key] = _plain(spec)
            self.prepare(self.specs[key].get("candidates", {}).values())

    def add_dispatch(self, action: str) -> Tuple[Optional[str], Optional[str]]:
        """An action plugin whose module the runner picks (or prepares) on the target.

        ``service`` and ``package`` choose their module from a fact
        (``service_mgr``, ``pkg_mgr``: ``setup`` is asked on the target when
        facts were not gathered), ``shell`` runs ``command`` with a flag,
        ``unarchive`` copies the archive over first. Every candidate module
        Ansible could resolve travels with the batch (they share their
        ``module_utils``) and ``ioc.agentless_runner.ansible_actions`` does
        what the action plugin does.
        """
        from ansible.errors import AnsibleError

        key = "dispatch:" + action
        if key in self.specs:
            return key, None
        names, required = dispatch_candidates(action)
        candidates: Dict[str, str] = {}
        for name in names:
            try:
                resolved = resolve("ansible.legacy." + name, quiet=True) if _installed(name) else None
            except AnsibleError:  # removed from its collection (atomic_container): not a candidate
                resolved = None
            if resolved is None:  # (the action runs the module itself, whatever its plugin)
                continue
            sub, why = self.add(resolved, name)
            if sub is None:
                if name in required:
                    return None, why
                continue
            candidates[name] = sub
        missing = [name for name in required if name not in candidates]
        if missing:
            return None, "ansible.legacy.%s cannot be found" % missing[0]
        self.specs[key] = {"dispatch": action, "candidates": candidates}
        return key, None

    def add_async(self, inner: str) -> Tuple[Optional[str], Optional[str]]:
        """``inner`` (a module key) run as an ``async`` job: with ``async_wrapper``,
        which starts it, and ``async_status``, which polls it (on the target)."""
        key = "async:" + inner
        if key in self.specs:
            return key, None
        candidates = {"module": inner}
        legacy_argv = False
        for name in ("async_wrapper", "async_status"):
            resolved = resolve("ansible.legacy." + name, quiet=True)
            if resolved is None:
                return None, "ansible.legacy.%s cannot be found" % name
            sub, why = self.add(resolved, name)
            if sub is None:
                return None, why
            candidates[name] = sub
            if name == "async_wrapper":
                with open(resolved.path, "rb") as handle:
                    # 2.19/2.20: <jid> <time_limit> <modulescript> <argsfile> [-preserve_tmp]
                    legacy_argv = b"<modulescript> <argsfile>" in handle.read()
        self.specs[key] = {"dispatch": "async", "candidates": candidates,
                           "legacy_argv": legacy_argv}
        return key, None

    def digests(self, key: str) -> List[str]:
        """Every file digest the module ``key`` needs on the target."""
        self.prepare([key])
        spec = self.specs[key]
        if "dispatch" in spec:
            out: List[str] = []
            for sub in spec["candidates"].values():
                out += [d for d in self.digests(sub) if d not in out]
            return out
        return [spec["wrapper"]] + [digest for _, digest in spec["entries"]]

    def closure(self, key: str) -> List[str]:
        """``key`` and the keys of the modules it dispatches to."""
        spec = self.specs[key]
        return [key] + list(spec.get("candidates", {}).values())

    def merge(self, other: "ModuleSet") -> None:
        self.specs.update(other.specs)
        self.files.update(other.files)
        self.pending.update(other.pending)


class _Unsupported(Exception):
    """A module the runner cannot run from Ansible's code (the message says why)."""


def resolve(action: str, collections: Optional[Sequence[str]] = None,
            quiet: bool = False) -> Optional[Resolved]:
    """How Ansible would run ``action``; None when no module of that name exists.

    Mirrors ``TaskExecutor._get_action_handler_with_module_context``: a
    module that names an action plugin, or an action plugin of the action's
    own name, means controller work (``action_plugin`` is set); otherwise the
    ``normal`` action runs the module. ``quiet``: no deprecation warning (a
    candidate of a dispatched action, which the user did not name).
    """
    from ansible.plugins.loader import action_loader, module_loader

    module = module_loader.find_plugin_with_context(action, collection_list=collections,
                                                    ignore_deprecated=quiet)
    if not module.resolved:
        return None
    plugin = None
    if module.action_plugin:
        plugin = module.action_plugin
    elif action_loader.has_plugin(action, collection_list=collections):
        found = action_loader.find_plugin_with_context(action, collection_list=collections)
        name = str.__str__(found.resolved_fqcn or action)
        if name not in ("ansible.builtin.normal", "ansible.legacy.normal"):
            plugin = name
    # (plain text: ``action`` may carry its origin, which never travels)
    return Resolved(fqcn=str.__str__(module.resolved_fqcn or action),
                    path=str.__str__(module.plugin_resolved_path),
                    action_plugin=None if plugin is None else str.__str__(plugin))


def _as_written(task: Any) -> str:
    """``task``'s action as written, tagged with where (as Ansible's loader
    gets it from the task's YAML: what it displays about the name, such as
    a deprecated module's routing, names that place)."""
    from ioc.ansible.errors import _origin
    from ioc.model import Location

    written = task.action_written or task.action
    where = (task.origins or {}).get("action") or ("",)
    origin = _origin(Location.parse(where[0])) if where[0] else None
    return written if origin is None else origin.tag(written)


def foreign_action_plugin(action: str,
                          collections: Optional[Sequence[str]] = None) -> Optional[str]:
    """The path of the action plugin Ansible runs for ``action`` (as written)
    when it is not one of Ansible's own; None when it is or there is none.

    ``action_plugins/`` beside the playbook or in a role override a name
    unqualified and as ``ansible.legacy.*`` (not ``ansible.builtin.*``):
    ``TaskExecutor`` runs what ``action_loader`` finds for the name as written.
    """
    import os

    from ansible.plugins.loader import action_loader

    found = action_loader.find_plugin_with_context(action, collection_list=collections)
    path = found.plugin_resolved_path if found.resolved else None
    if not path or os.path.dirname(os.path.realpath(path)) == _own_action_plugins():
        return None
    return str(path)


@functools.lru_cache(maxsize=None)
def _own_action_plugins() -> str:
    """The directory of ansible-core's own action plugins, found without
    importing them (``ansible.plugins.action`` brings ``module_common`` and
    the executor: 0.1 s of a cold ``ioc-run`` whose play needs neither)."""
    import os

    import ansible.plugins  # (the loader's own package: imported already)

    return os.path.realpath(os.path.join(os.path.dirname(ansible.plugins.__file__), "action"))


#: Actions the runner completes on the target around Ansible's module (see
#: :meth:`ModuleSet.add_dispatch`); each names its required candidates.
DISPATCHED = ("service", "package", "shell", "command", "unarchive", "dnf", "yum",
              "async_status")
#: ioc's own modules whose Ansible counterpart is a module (or runs one, as
#: ``command``/``shell``): with ``INJECT_INVOCATION`` its result carries
#: ``invocation.module_args`` (every option, defaults filled, no_log values
#: masked), which only Ansible's module code has; ioc's do not return it.
INVOCATION_MODULES = frozenset({"command", "shell", "file", "lineinfile", "blockinfile",
                                "replace", "stat", "slurp"})


def inject_invocation() -> bool:
    """``INJECT_INVOCATION`` (ansible-core 2.21; 2.19 has no such setting)."""
    from ansible import constants as C

    try:
        return bool(C.config.get_config_value("INJECT_INVOCATION"))
    except Exception:
        return False
#: Actions whose ``async`` the runner starts under Ansible's ``async_wrapper``:
#: plain modules (the ``normal`` action) and the ``command``/``shell`` actions.
#: Ansible's other async actions (``service``, ``package``, ``dnf``, ``uri``)
#: run more than their module and are refused by name.
ASYNC_ACTIONS = frozenset({"command", "shell"})


def dispatch_candidates(action: str) -> Tuple[List[str], Tuple[str, ...]]:
    """The modules ``action``'s plugin may run, and those it cannot do without."""
    if action == "service":
        return ["systemd", "sysvinit", "openwrt_init", "service", "setup"], ("service", "setup")
    if action == "package":
        from ansible.module_utils.facts.system.pkg_mgr import PKG_MGRS
        names = sorted({manager["name"] for manager in PKG_MGRS} | {"dnf5"})
        return names + ["setup"], ("setup",)
    if action in ("shell", "command"):
        return ["command"], ("command",)
    if action in ("dnf", "yum"):  # yum is the dnf action (ansible.builtin's routing)
        return ["dnf", "dnf5", "yum", "setup"], ("setup",)
    if action == "unarchive":
        return ["unarchive"], ("unarchive",)
    if action == "async_status":
        return ["async_status"], ("async_status",)
    raise ValueError("no dispatch for %s" % action)


def async_requested(value: Any) -> bool:
    """Whether a task's ``async`` may start a job (a template decides on the target)."""
    if value is None or value is False:
        return False
    try:
        return int(value) != 0
    except (TypeError, ValueError):
        return True


def async_module(modules: "ModuleSet", action: str,
                 collections: Optional[Sequence[str]] = None) -> Tuple[Optional[str], Optional[str]]:
    """The module key of ``action`` run as an ``async`` job; ``(None, why)`` when refused.

    Ansible's ``normal``, ``command`` and ``shell`` actions start their module
    under ``async_wrapper``; every other action either does not support
    ``async`` (Ansible fails the task) or runs more than one module.
    """
    short = action
    for prefix in ("ansible.builtin.", "ansible.legacy."):
        short = short[len(prefix):] if short.startswith(prefix) else short
    why = "async with %s: ioc runs async only for plain modules, command and shell" % action
    if short == "shell":
        inner, why_not = modules.add_dispatch("shell")
    else:
        resolved = resolve("ansible.legacy.command" if short == "command" else action,
                           collections)
        if resolved is None or (resolved.action_plugin is not None and short != "command"):
            if resolved is not None and _refuses_async(resolved.action_plugin):
                why = ("async with %s: This action (%s) does not support async. (Ansible "
                       "fails the task when it runs)" % (action, action))
            return None, why
        inner, why_not = modules.add(resolved, short.rpartition(".")[2])
    if inner is None:
        return None, why_not
    return modules.add_async(inner)


#: ansible.builtin's action plugins that accept ``async`` (they say so in ``run``).
_BUILTIN_ASYNC_PLUGINS = frozenset({"command", "shell", "dnf", "yum", "package", "service", "uri",
                                    "normal"})


def _refuses_async(plugin: Optional[str]) -> bool:
    """Whether ansible.builtin's action plugin ``plugin`` fails every ``async`` task."""
    builtin = ("ansible.builtin.", "ansible.legacy.")
    return bool(plugin) and str(plugin).startswith(builtin) and \
        str(plugin).rpartition(".")[2] not in _BUILTIN_ASYNC_PLUGINS


def _installed(name: str) -> bool:
    """Whether ``ansible.legacy.<name>`` is there without asking the loader, which
    warns about a redirect into a collection that is not installed."""
    import importlib.util

    from ansible.utils.collection_loader._collection_finder import _get_collection_metadata

    routing = _get_collection_metadata("ansible.builtin").get("plugin_routing", {})
    redirect = routing.get("modules", {}).get(name, {}).get("redirect")
    if not redirect:
        return True
    collection = ".".join(redirect.split(".")[:2])
    try:
        return importlib.util.find_spec("ansible_collections." + collection) is not None
    except ImportError:
        return False


def run_wide_args(verbosity: int) -> Dict[str, Any]:
    """The ``_ansible_*`` arguments ``ActionBase._update_module_args`` adds for every task."""
    from ansible import constants as C
    from ansible.release import __version__

    out: Dict[str, Any] = {
        "_ansible_debug": bool(C.DEFAULT_DEBUG),
        "_ansible_verbosity": verbosity,
        "_ansible_version": __version__,
        "_ansible_syslog_facility": C.DEFAULT_SYSLOG_FACILITY,
        "_ansible_selinux_special_fs": list(C.DEFAULT_SELINUX_SPECIAL_FS),
        "_ansible_socket": None,
        "_ansible_shell_executable": "/bin/sh",
        "_ansible_keep_remote_files": False,
        "_ansible_tmpdir": None,
        "_ansible_remote_tmp": "~/.ansible/tmp",
        "_ansible_ignore_unknown_opts": False,
        "_ansible_target_log_info": None,
    }
    try:
        from ansible.module_utils._internal import _traceback
        out["_ansible_tracebacks_for"] = list(_traceback.traceback_for())
    except (ImportError, AttributeError):  # pragma: no cover - older releases
        pass
    try:
        out["_ansible_inject_invocation"] = C.config.get_config_value("INJECT_INVOCATION")
    except Exception:  # 2.19 has no such setting
        pass
    return out


_LOADER_READY: List[bool] = []
_PLAYBOOK_DIRS: List[str] = []


def keep_collection_metadata() -> None:
    """Keep each collection's parsed ``runtime.yml`` between runs.

    Ansible's collection finder parses ``ansible.builtin``'s routing
    (``ansible_builtin_runtime.yml``, ~10k lines) in every process that
    resolves a plugin: 0.15-0.2 s of a cold ``ioc-run``. ansible-core names
    ``_meta_yml_to_dict`` as the function tools may replace "to cache the
    output"; this one keeps it by the text's digest in
    ``<cache>/ioc/collection-meta/`` (what ``BaseLoader`` gives is text,
    lists and dicts: JSON keeps it whole). A replacement someone else made
    is left in place.
    """
    try:
        from ansible.utils.collection_loader import _collection_finder as finder
        from ansible.utils.collection_loader import _collection_meta as meta
    except ImportError:  # pragma: no cover - a release without the hook
        return
    parse: Callable[[Any, Any], Any] = meta._meta_yml_to_dict
    if getattr(finder, "_meta_yml_to_dict", None) is not parse:
        return

    def meta_yml_to_dict(yaml_string_data: Any, content_id: Any) -> Any:
        raw = yaml_string_data if isinstance(yaml_string_data, bytes) \
            else str(yaml_string_data).encode("utf-8", "surrogateescape")
        path = cachefile.path_of("collection-meta/%s.json" % hashlib.sha256(raw).hexdigest())
        kept = cachefile.load(path)
        if isinstance(kept.get("routing"), dict):
            return kept["routing"]
        routing = parse(yaml_string_data, content_id)
        cachefile.save(path, {"routing": routing})
        return routing

    finder._meta_yml_to_dict = meta_yml_to_dict


def playbook_dirs(paths: List[str]) -> None:
    """The playbooks' directories, whose ``collections/`` Ansible's collection
    finder searches (as ``ansible-playbook`` sets them): now, or as the
    loader is set up (:func:`init_loader`), which may come later."""
    _PLAYBOOK_DIRS[:] = list(paths)
    if _LOADER_READY:
        from ansible.utils.collection_loader import AnsibleCollectionConfig

        AnsibleCollectionConfig.playbook_paths = list(paths)


def init_loader(collections_paths: Iterable[str] = (), library: Iterable[str] = ()) -> None:
    """Set up Ansible's plugin loaders outside ``ansible-playbook`` (for ioc-run).

    ``library`` are extra module directories (``library/`` beside the
    playbook and in each role), searched before the builtin modules, as
    Ansible adds them when it loads a play and its roles.
    """
    from ansible.plugins.loader import add_all_plugin_dirs, init_plugin_loader, module_loader

    if not _LOADER_READY:  # Ansible's collection finder can be set up once per process
        keep_collection_metadata()
        init_plugin_loader(list(collections_paths))
        _LOADER_READY.append(True)
        if _PLAYBOOK_DIRS:
            playbook_dirs(_PLAYBOOK_DIRS)
    for path in library:
        module_loader.add_directory(path, with_subdir=False)
        add_all_plugin_dirs(path.rsplit("/library", 1)[0] if path.endswith("/library") else path)


_DATE = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)


def _build(resolved: Resolved, module_name: str, files: Dict[str, bytes]) -> Dict[str, Any]:
    """Ansible's AnsiballZ payload for ``resolved``, as a wire spec."""
    from ansible.executor import module_common as mc

    with open(resolved.path, "rb") as handle:
        data = handle.read()
    try:
        fqn = mc._get_ansible_module_fqn(resolved.path)
    except ValueError:  # a module in a role's or playbook's library/
        fqn = "ansible.legacy.%s" % module_name
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        metadata = _walk_module_utils(mc, module_name, fqn, resolved.path, data, zf)
    entries = _split(buf.getvalue(), files)
    wrapper = mc._get_ansiballz_code("#!/usr/bin/python").encode("utf-8")
    wrapper_digest = _store(wrapper, files)
    return {"name": module_name, "fqn": fqn, "fqcn": resolved.fqcn,
            "profile": metadata.serialization_profile, "wrapper": wrapper_digest,
            "entries": entries, "date_time": list(_DATE.utctimetuple()[:6])}


def _check_style(resolved: Resolved) -> None:
    """Only Python (AnsibleZ) modules run in the runner; the others are refused by name."""
    from ansible.executor import module_common as mc

    with open(resolved.path, "rb") as handle:
        data = handle.read()
    if mc._is_binary(data):
        raise _Unsupported("module %s is a binary module" % resolved.fqcn)
    if mc.REPLACER in data:
        return
    if mc.NEW_STYLE_PYTHON_MODULE_RE.search(data):
        return
    if resolved.path.endswith(".ps1"):
        raise _Unsupported("module %s is a PowerShell module" % resolved.fqcn)
    raise _Unsupported("module %s is not a Python (AnsiballZ) module" % resolved.fqcn)


def _walk_module_utils(mc: Any, module_name: str, fqn: str, path: str, data: bytes,
                       zf: zipfile.ZipFile) -> Any:
    """``recursive_finder`` + ``_add_module_to_zip``, as ``_find_module_utils`` calls them."""
    from ansible._internal._ansiballz import _builder
    from ansible._internal._datatag._tags import Origin

    if mc.REPLACER in data:
        data = data.replace(mc.REPLACER, b"from ansible.module_utils.basic import *")
    extensions = _builder.ExtensionManager.create(task_vars={})
    with _parsed_once(mc):
        metadata = mc.recursive_finder(module_name, fqn, Origin(path=path).tag(data), zf, _DATE,
                                       extensions)
    mc._add_module_to_zip(zf, _DATE, fqn, data, path, extensions)
    return metadata


#: What ``recursive_finder`` parses, kept for the process: syntax trees by
#: (name, source) and ``ModuleDepFinder`` results (what a file imports) by
#: (name, source or tree, package init). ``recursive_finder`` parses every
#: ``module_utils`` file a module reaches, and every module reaches
#: ``basic`` and the files behind it: the nine modules of
#: benchmarks/role_modules.py parsed 635 files, 141 of them different
#: (1.5 s of the parent's CPU, before the play's first task can start).
_TREES: Dict[Tuple[str, bytes], Any] = {}
_FINDERS: Dict[Tuple[str, Any, bool], Any] = {}


class _KnownDeps:
    """What ``ModuleDepFinder`` found in a file, as an earlier run kept it
    (:class:`_DepsFile`): its ``submodules``, ``optional_imports`` and
    ``embeds`` (2.21's ``EmbeddedResource``: package and resource); its
    ``tree`` (read only for a module itself, not a ``module_utils`` file)
    is parsed when asked for."""

    def __init__(self, module_fqn: str, source: Any, found: List[Any]) -> None:
        self._name, self._source = module_fqn, source
        submodules, optional, embeds = found
        self.submodules = {tuple(m) for m in submodules}
        self.optional_imports = {tuple(m) for m in optional}
        if embeds:
            from ansible.module_utils.embed import EmbeddedResource

            self.embeds = {EmbeddedResource(*e) for e in embeds}
        else:
            self.embeds = set()

    @property
    def tree(self) -> Any:
        from ansible.executor import module_common as mc

        return mc._compile_module_ast(self._name, self._source)


class _DepsFile:
    """``ModuleDepFinder``'s findings across runs: a file's imports depend
    only on its name and source, so they are kept by name and the source's
    digest in ``<cache>/ioc/module-deps-<ansible-core>.json`` (parsing every
    ``module_utils`` file a play's modules reach was a second of the
    strategy's CPU before the first task, every run). Only for sources
    given as text or bytes (2.21; 2.19 hands the finder a tree)."""

    def __init__(self) -> None:
        self._path = ""
        self._known: Dict[str, Any] = {}
        self._learnt = False

    def _key(self, module_fqn: str, source: Any, is_pkg_init: bool) -> str:
        if not self._path:
            from ansible.release import __version__

            self._path = cachefile.path_of("module-deps-%s.json" % __version__)
            self._known = cachefile.load(self._path)
            atexit.register(self.save)
        data = source if isinstance(source, bytes) else str(source).encode("utf-8",
                                                                            "surrogateescape")
        return "%s %d %s" % (module_fqn, bool(is_pkg_init), hashlib.sha1(data).hexdigest())

    def get(self, module_fqn: str, source: Any, is_pkg_init: bool) -> Optional[_KnownDeps]:
        found = self._known.get(self._key(module_fqn, source, is_pkg_init))
        if not isinstance(found, list) or len(found) != 3:
            return None
        return _KnownDeps(module_fqn, source, found)

    def learn(self, module_fqn: str, source: Any, is_pkg_init: bool, finder: Any) -> None:
        embeds = []
        for embed in getattr(finder, "embeds", ()):
            if type(embed).__name__ != "EmbeddedResource":
                return  # (something this cannot keep: the file is parsed each run)
            embeds.append([embed.package, embed.resource])
        self._known[self._key(module_fqn, source, is_pkg_init)] = [
            sorted(list(m) for m in finder.submodules),
            sorted(list(m) for m in finder.optional_imports), sorted(embeds)]
        self._learnt = True

    def save(self) -> None:
        if self._learnt:
            cachefile.save(self._path, self._known)
            self._learnt = False


_DEPS = _DepsFile()


@contextlib.contextmanager
def _parsed_once(mc: Any) -> Iterator[None]:
    """``module_common``'s parsing, answered from :data:`_TREES` and
    :data:`_FINDERS` for a file seen before: the same name and bytes give the
    same tree, and the finder reads nothing else; their results are only
    read. (ansible-core 2.19 hands the finder a tree, 2.21 the source.)"""
    compile_ast, finder_class = mc._compile_module_ast, mc.ModuleDepFinder

    def tree_of(module_name: str, source_code: Any) -> Any:
        key = (module_name, bytes(source_code) if isinstance(source_code, bytes)
               else str(source_code).encode("utf-8", "surrogateescape"))
        tree = _TREES.get(key)
        if tree is None:
            tree = _TREES[key] = compile_ast(module_name, source_code)
        return tree

    def finder(module_fqn: str, module_data: Any, is_pkg_init: bool = False) -> Any:
        # (a tree is one of _TREES', kept alive there: its id names it)
        data_key = bytes(module_data) if isinstance(module_data, bytes) else id(module_data)
        key = (module_fqn, data_key, bool(is_pkg_init))
        found = _FINDERS.get(key)
        text = isinstance(module_data, (bytes, str))
        if found is None and text:
            found = _DEPS.get(module_fqn, module_data, bool(is_pkg_init))
        if found is None:
            # (its __init__ names its class through the module's global)
            mc.ModuleDepFinder = finder_class
            try:
                found = finder_class(module_fqn, module_data, is_pkg_init=is_pkg_init)
            finally:
                mc.ModuleDepFinder = finder
            if text:
                _DEPS.learn(module_fqn, module_data, bool(is_pkg_init), found)
        _FINDERS[key] = found
        return found

    mc._compile_module_ast, mc.ModuleDepFinder = tree_of, finder
    try:
        yield
    finally:
        mc._compile_module_ast, mc.ModuleDepFinder = compile_ast, finder_class


def _split(payload: bytes, files: Dict[str, bytes]) -> List[List[str]]:
    """The zip's members as ``[name, digest]``, contents stored in ``files``."""
    out: List[List[str]] = []
    with zipfile.ZipFile(io.BytesIO(payload)) as zf:
        for info in zf.infolist():
            out.append([info.filename, _store(zf.read(info), files)])
    return out


def _store(content: bytes, files: Dict[str, bytes]) -> str:
    """Keep ``content`` zlib-compressed under ``z<sha1>`` (Ansible deflates its zip too)."""
    digest = "z" + hashlib.sha1(content).hexdigest()
    if digest not in files:
        files[digest] = zlib.compress(content, 6)
    return digest


def _plain(value: Any) -> Any:
    """Builtins only (Ansible tags its strings; mitogen ships builtins only)."""
    return json.loads(json.dumps(value))


def modules_of(specs: Mapping[str, Dict[str, Any]]) -> List[str]:
    """The module names of ``specs`` (for diagnostics)."""
    return sorted(spec["fqcn"] for spec in specs.values())


# -- ioc-run: the IR's tasks that run Ansible's modules --------------------------------


class Attacher:
    """Marks the IR tasks that run Ansible's own module code (``ioc-run``).

    The same rule as the ``mitogen_batch`` converter: a plain module that
    ioc does not implement, or whose options ioc's module does not all take,
    runs Ansible's module; fact gathering is Ansible's ``setup``. Modules
    with an action plugin of their own stay ioc's (or are refused by the
    planner, naming the task). ``library/`` beside the playbook and in each
    role is searched first, as Ansible does; their ``filter_plugins/``,
    ``test_plugins/``, ``lookup_plugins/`` too (``add_plugin_dirs``).
    """

    def __init__(self, native_actions: Iterable[str],
                 native_options: Mapping[str, Iterable[str]], verbosity: int = 0) -> None:
        self.native = frozenset(native_actions)
        self.options = native_options
        self.modules = ModuleSet(internal=run_wide_args(verbosity), lazy=True)
        self._plugin_dirs: set = set()
        self._defaults: Any = None
        #: What Ansible displayed while resolving the tasks of a statically
        #: known include (a deprecated module's routing), by the include's
        #: ``_ioc_included``: linear loads an included file, and so shows
        #: them, only when a host reaches the include (:meth:`loaded`).
        self.deferred: Dict[str, List[Tuple[str, Tuple[Any, ...], Dict[str, Any]]]] = {}
        self._loading: List[str] = []

    def playbook(self, playbook: Any) -> Any:
        """``playbook`` with ``Task.module``/``Play.gather_module`` set where they apply."""
        import dataclasses
        import os

        base = os.path.dirname(os.path.abspath(playbook.path))
        self.add_plugin_dirs(base)
        return dataclasses.replace(playbook, plays=tuple(self.play(p) for p in playbook.plays))

    def play(self, play: Any) -> Any:
        import dataclasses

        sections = {name: self.nodes(getattr(play, name))
                    for name in ("pre_tasks", "tasks", "post_tasks", "handlers")}
        gather = self.fact_module() if play.gather_facts else None
        gather_args = dict(play.gather_args)
        if play.module_defaults:
            # the implicit gathering is a task of the play: its module_defaults
            # (gather_facts', then setup's) apply (PlayIterator, gather_facts.py)
            gather_args = self.with_defaults(play.module_defaults, "gather_facts", gather_args,
                                             search_list(play), play.location)
        return dataclasses.replace(play, gather_module=gather, gather_args=gather_args, **sections)

    def nodes(self, nodes: Sequence[Any]) -> Tuple[Any, ...]:
        import dataclasses
        from ioc.model import Block

        out = []
        for node in nodes:
            if isinstance(node, Block):
                included = (node.include.args or {}).get("_ioc_included") \
                    if node.include is not None else None
                with self._displayed_later(included):
                    out.append(dataclasses.replace(node, block=self.nodes(node.block),
                                                   rescue=self.nodes(node.rescue),
                                                   always=self.nodes(node.always)))
            else:
                out.append(self.task(node))
        return tuple(out)

    @contextlib.contextmanager
    def _displayed_later(self, included: Any) -> Iterator[None]:
        """Keep what Ansible displays meanwhile for when ``included`` is loaded
        (None: display it now, as Ansible does while loading a playbook)."""
        if included is None:
            yield
            return
        from ansible.utils.display import Display

        shown = Display()
        outermost = not self._loading
        self._loading.append(str(included))
        if outermost:
            for method in ("deprecated", "warning"):
                def keep(*args: Any, _method: str = method, **kwargs: Any) -> None:
                    self.deferred.setdefault(self._loading[-1], []).append(
                        (_method, args, kwargs))
                setattr(shown, method, keep)
        try:
            yield
        finally:
            self._loading.pop()
            if outermost:
                for method in ("deprecated", "warning"):
                    delattr(shown, method)

    def loaded(self, included: str) -> None:
        """Display what was kept for ``included`` (once: it is loaded now)."""
        from ansible.utils.display import Display

        shown = Display()
        for method, args, kwargs in self.deferred.pop(included, ()):
            getattr(shown, method)(*args, **kwargs)

    def task(self, task: Any) -> Any:
        import dataclasses
        import os

        from ansible.errors import AnsibleError
        from ioc.errors import PlanError

        if task.role_path:
            self.add_plugin_dirs(task.role_path)
        collections = search_list(task)
        if task.module_defaults and task.action not in _NO_DEFAULTS:
            written = task.action_written or task.action
            args = self.with_defaults(task.module_defaults, written, task.args, collections,
                                      task.location)
            task = dataclasses.replace(task, args=args)
        qualified = (task.action_written or "").startswith(("ansible.builtin.", "ansible.legacy."))
        try:
            written = task.action_written or task.action
            plugin = (foreign_action_plugin(written, None if qualified else collections)
                      if task.action in self.native and task.action != "meta" else None)
            if plugin is not None:
                raise AnsibleError(
                    "%s is the action plugin %s, not Ansible's own, which ioc-run does not "
                    "run; use ansible-playbook" % (written, plugin))
            if async_requested(task.async_val):
                key, why = async_module(self.modules, task.action,
                                         None if qualified else collections)
                if key is None:
                    raise PlanError(str(why), task.location)
            else:
                key = self.module_key(_as_written(task), task.args,
                                      None if qualified else collections)
        except AnsibleError as exc:  # a module its collection removed, a broken redirect
            raise PlanError(str(getattr(exc, "message", exc)), task.location) from None
        return task if key is None else dataclasses.replace(task, module=key)

    def with_defaults(self, layers: Sequence[Mapping[str, Any]], action: str,
                      args: Mapping[str, Any], collections: Optional[Sequence[str]],
                      where: Any) -> Dict[str, Any]:
        """``args`` with the ``module_defaults`` ``layers`` that apply to ``action``
        under them, as Ansible finalises a task's arguments."""
        from ansible.errors import AnsibleError
        from ioc.ansible import module_defaults as md
        from ioc.errors import PlanError

        if self._defaults is None:
            self._defaults = md.PlayDefaults()
        try:
            view = self._defaults.task_view(layers)
            fqcn = md.action_fqcn(action, collections)
            if fqcn is None:
                raise PlanError("module_defaults: the action %s does not resolve to a module "
                                "(a templated action cannot take module_defaults in ioc-run)"
                                % action, where)
            short = fqcn.rpartition(".")[2]
            fact = "ansible.builtin.setup" if fqcn in ("ansible.builtin.gather_facts",) else None
            merged = md.apply_defaults(fqcn, view, args, fact_module=fact)
            picked = md.picked_with_defaults(short, fqcn, view, dispatch_candidates)
            if picked is not None:
                raise PlanError(
                    "module_defaults for %s: %s applies them to the module it picks "
                    "on the target, which ioc-run does not do; set the options on the "
                    "task or use ansible-playbook" % (picked, fqcn), where)
        except md.TemplatedDefaults as exc:
            raise PlanError(
                "module_defaults for %s is a template as a whole (%s): ioc-run applies "
                "defaults written as a mapping (its values may be templates); write it as a "
                "mapping or use ansible-playbook" % (action, exc.args[0]), where) from None
        except AnsibleError as exc:  # an action or group that does not resolve
            raise PlanError(str(getattr(exc, "message", exc)), where) from None
        return merged

    def module_key(self, action: str, args: Mapping[str, Any],
                   collections: Optional[Sequence[str]] = None) -> Optional[str]:
        """The key of the module ``action`` runs (None: ioc's own, or an action
        plugin's work). ``action`` may carry its origin (:func:`_as_written`):
        only Ansible's loader sees it, never what travels to a runner."""
        written, action = action, str.__str__(action)
        listed = [c for c in collections or () if c not in ("ansible.builtin", "ansible.legacy")]
        if listed and "." not in action:
            own = resolve(action, listed, quiet=True)
            if own is not None:  # a listed collection has a module of that name
                if own.action_plugin is not None:
                    from ansible.errors import AnsibleError
                    raise AnsibleError(
                        "%s resolves to %s, whose action plugin %s ioc-run does not run; use "
                        "ansible-playbook" % (action, own.fqcn, own.action_plugin))
                return self._module(own, action)
        short = action
        for prefix in ("ansible.builtin.", "ansible.legacy."):
            if short.startswith(prefix):
                short = short[len(prefix):]
        if short in ("gather_facts", "setup"):
            return self.fact_module()
        if short in DISPATCHED and not (short in self.native and self._accepts(short, args)):
            return self.modules.add_dispatch(short)[0]
        if short == "meta" or (short in self.native and self._accepts(short, args)):
            return None
        resolved = resolve(written, collections)
        return None if resolved is None else self._module(resolved, short)

    def _module(self, resolved: Resolved, action: str) -> Optional[str]:
        if resolved.action_plugin is not None:
            return None
        key, _ = self.modules.add(resolved, action.rpartition(".")[2])
        return key

    def fact_module(self) -> Optional[str]:
        resolved = resolve("ansible.legacy.setup")
        if resolved is None:
            return None
        key, _ = self.modules.add(resolved, "setup")
        return key

    def add_plugin_dirs(self, path: str) -> None:
        """Search the plugin directories in ``path`` (``library/``,
        ``filter_plugins/``, ``test_plugins/``, ``lookup_plugins/``, ...), as
        Ansible does for the playbook's directory and each role it loads
        (``add_all_plugin_dirs``)."""
        import os
        from ansible.plugins.loader import add_all_plugin_dirs

        if path not in self._plugin_dirs and os.path.isdir(path):
            self._plugin_dirs.add(path)
            add_all_plugin_dirs(path)

    def _accepts(self, action: str, args: Mapping[str, Any]) -> bool:
        accepted = self.options.get(action)
        return accepted is None or not isinstance(args, Mapping) or all(
            not isinstance(k, str) or k.startswith("_") or k in accepted or "{{" in k
            for k in args)


#: Actions ``module_defaults`` do not reach in ioc-run (nothing to default).
_NO_DEFAULTS = frozenset(("meta", "include_tasks", "include_role", "import_tasks", "import_role"))


def search_list(task: Any) -> Optional[List[str]]:
    """Where a task's short action name is looked up, as Ansible builds the list:
    a collection role's own collection, the ``collections`` keyword (a role's
    meta/main.yml), then ``ansible.builtin`` (collection role) or
    ``ansible.legacy`` (``_ensure_default_collection``, ``Role._load_role_data``)."""
    role_collection = getattr(task, "role_collection", None)  # (a Play has none)
    names = [role_collection] if role_collection else []
    names += [c for c in task.collections or () if c not in names]
    if names and "ansible.builtin" not in names and "ansible.legacy" not in names:
        names.append("ansible.builtin" if role_collection else "ansible.legacy")
    return names or None


def attacher_for_ioc_run(native_actions: Iterable[str], native_options: Mapping[str, Iterable[str]],
                         verbosity: int = 0) -> Attacher:
    """The :class:`Attacher` for ``ioc-run``: Ansible's module library, set up here.

    ansible-core is a dependency of ioc; a broken installation without it is
    an :class:`~ioc.errors.IocError` that says so, before anything runs.
    """
    try:
        import ansible.plugins.loader  # noqa: F401
    except ImportError as exc:
        from ioc.errors import IocError
        raise IocError("ioc-run needs ansible-core for Ansible's modules (%s): "
                       "pip install 'ansible-core>=2.19'" % exc)
    init_loader()
    return Attacher(native_actions, native_options, verbosity)


def attach(playbook: Any, verbosity: int = 0) -> Any:
    """``playbook`` as ``ioc-run`` runs it: the tasks that run Ansible's modules marked.

    For callers that plan a loaded playbook themselves (tests, benchmarks);
    ``ioc-run`` keeps its :class:`Attacher` for what dynamic includes load.
    """
    from ioc.controller.capabilities import runner_capabilities

    caps = runner_capabilities()
    return attacher_for_ioc_run(caps.actions, caps.options, verbosity).playbook(playbook)
