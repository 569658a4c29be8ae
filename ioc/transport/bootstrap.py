"""Getting the runner onto a target without waiting on the network.

A new mitogen context imports what it lacks from the controller, one round
trip per module. Over a 150 ms link that is seconds before the first task.
So the controller:

* makes its own ``ioc``, ``jinja2``, ``markupsafe``, PyYAML and ``ansible``
  (the ``module_utils`` a runner module such as ``validate_argument_spec``
  imports) authoritative
  (mitogen *overrides*): the target never runs a different version it
  happens to have installed, and never probes its own site-packages first;
* *blocks* the optional imports that are expected to fail (the C speedups of
  markupsafe and PyYAML), so the target refuses them itself instead of
  asking and waiting for a "no" -- PyYAML then runs its pure-Python part,
  exactly as on a host without libyaml;
* sends the runner's import closure right after the connection is up
  (``forward_modules``), ahead of the first call on the same stream, so the
  call finds every module already there; the implementation of each module
  (``apt``, ``user``...) travels with the first batch that uses it, so a
  target never receives code it will not run;
* prepares that closure (source, compression) in a background thread while
  SSH is still connecting, so the first call is not held up by it;
* keeps what mitogen's import scan found for each module (it compiles the
  module's source to read its imports: most of a run's controller CPU
  before the first call) in a small file of the user's cache directory,
  valid while the module's file is unchanged (:class:`_ScanCache`), and
  likewise each module's compressed source and mitogen's stripped core
  (:class:`_KeptBuilds`).
"""
from __future__ import annotations

import atexit
import functools
import importlib
import logging
import os
import pkgutil
import sys
import threading
from typing import Any, Dict, FrozenSet, Iterable, List, Set, Tuple

import mitogen.core
import mitogen.imports
import mitogen.master
import mitogen.parent

from ioc.transport import cachefile
from ioc.agentless_runner import modules as runner_modules, spawning

LOG = logging.getLogger(__name__)

#: Packages the target always takes from the controller.
OVERRIDES = ("ioc", "jinja2", "markupsafe", "yaml", "ansible")
#: Imports the runner may attempt that must fail fast on the target.
BLOCKS = ("markupsafe._speedups", "yaml.cyaml", "yaml._yaml", "_yaml")
#: Imported lazily by jinja2 (the first template error rewrites a traceback),
#: or by name (extensions), so no import scan finds them.
LAZY = ("jinja2.debug", "jinja2.ext", "markupsafe._native")
#: Runner modules only an intermediary runs (sent when it starts its relay).
INTERMEDIARY_ONLY = ("relay",)
#: Shared by the module implementations.
MODULE_HELPERS = ("ioc.agentless_runner.modules._common",)


class _ScanCache(mitogen.master.ModuleFinder):
    """mitogen's import scanner, whose findings outlive the process.

    ``find_related_imports`` compiles a module's source to list the names
    its bytecode imports (and their parents), then keeps those this process
    has loaded (mitogen's ``_reject_related_module``, which reads
    ``sys.modules``). The list before that filter depends only on the
    source: this keeps it per module in
    ``<cache>/ioc/imports-<python>-<mitogen>.json`` with the path, size and
    modification time of the file it came from, believes an entry only while
    the file still has them, and filters it in this process as mitogen
    does. The file is written when the process ends, if it learnt
    something, by replacing it whole.
    """

    def __init__(self, path: str) -> None:
        super().__init__()
        self._path = path
        self._known: Dict[str, List[Any]] = cachefile.load(path)
        self._learnt = False

    def find_related_imports(self, fullname: str) -> List[str]:
        related = self._related_cache.get(fullname)
        if related is not None:
            return related  # type: ignore[no-any-return]
        modpath, source, _ = self.get_module_source(fullname)
        if source is None:
            return []
        stamp = _stamp(modpath)
        entry = self._known.get(fullname)
        if stamp is not None and entry is not None and entry[:3] == stamp:
            names = entry[3]
        else:
            names = self._imported_names(fullname, modpath, source)
            if stamp is not None:
                self._known[fullname] = stamp + [names]
                self._learnt = True
        return self._related_cache.setdefault(fullname, sorted(  # type: ignore[no-any-return]
            {mitogen.core.to_text(name) for name in names
             if not self._reject_related_module(fullname, name)}))

    def _imported_names(self, fullname: str, modpath: str, source: Any) -> List[str]:
        """Every name ``fullname``'s bytecode imports, and its parents' names:
        mitogen's ``find_related_imports`` before its filter."""
        names = list(self.generate_parent_names(fullname))
        for level, modname, namelist in mitogen.imports.codeobj_imports(
                compile(source, modpath, "exec")):
            if level == -1:
                modnames = [modname, "%s.%s" % (fullname, modname)]
            else:
                modnames = ["%s%s" % (self.resolve_relpath(fullname, level), modname)]
            names.extend(modnames)
            names.extend("%s.%s" % (mname, name) for mname in modnames for name in namelist)
        return sorted(set(mitogen.core.to_text(name) for name in names))

    def save(self) -> None:
        if self._learnt:
            cachefile.save(self._path, self._known)


def _stamp(path: Any) -> Any:
    """``[path, size, mtime_ns]`` of a module's file, None if it has none."""
    if not isinstance(path, str) or not os.path.isabs(path):
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [path, st.st_size, st.st_mtime_ns]


def _scan_cache_path() -> str:
    return cachefile.path_of("imports-%d.%d-%s.json" % (
        sys.version_info[0], sys.version_info[1], ".".join(map(str, mitogen.__version__))))


#: The import scanner of this process, for every router and closure.
_FINDER = _ScanCache(_scan_cache_path())
atexit.register(_FINDER.save)


class _KeptBuilds:
    """What mitogen sends for each module of the runner's closure, and its
    own first stage's source, kept between runs.

    mitogen compresses each module it sends (zlib at level 9) and strips
    its own core's source (``minimize_source``: a tokenizer pass) once per
    process: ~0.15 s of every cold run's controller CPU for the same bytes.
    This keeps the compressed source of each module, and the stripped core,
    in ``<cache>/ioc/sent-<python>-<mitogen>.json``, each with the path, size
    and modification time of its file (for a package, also of its directory,
    whose files mitogen lists as its submodules), believed only while the
    file still has them. A module's related imports are mitogen's finder's,
    found in this process as mitogen finds them.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._known: Dict[str, Any] = {}
        self._loaded = False
        self._learnt = False
        self._lock = threading.Lock()

    def _entries(self) -> Dict[str, Any]:
        if not self._loaded:
            self._known = cachefile.load(self._path)
            self._loaded = True
        return self._known

    @staticmethod
    def _stamp(path: Any, is_pkg: bool) -> Any:
        stamp = _stamp(path)
        if stamp is not None and is_pkg:
            directory = _stamp(os.path.dirname(path))
            stamp = None if directory is None else stamp + directory[1:]
        return stamp

    def fill(self, responder: mitogen.master.ModuleResponder, names: Iterable[str]) -> None:
        """Put each of ``names`` whose kept build is still its file's into
        ``responder``'s cache, as ``_build_tuple`` would have made it."""
        import base64

        with self._lock:
            known = self._entries()
        for name in names:
            entry = known.get(name)
            if not isinstance(entry, list) or len(entry) != 3 or name in responder._cache:
                continue
            path, source, is_pkg = responder._finder.get_module_source(name)
            if source is None or self._stamp(path, is_pkg) != entry[0]:
                continue
            related = [mitogen.core.to_text(n) for n in responder._finder.find_related(name)
                       if not responder.policy.denied(n)]
            responder._cache[name] = (mitogen.core.to_text(name), entry[1],
                                      mitogen.core.to_text(path),
                                      mitogen.core.Blob(base64.b64decode(entry[2])), related)

    def learn(self, responder: mitogen.master.ModuleResponder, names: Iterable[str]) -> None:
        """Keep what ``responder`` built for ``names`` (sources it sends only)."""
        import base64

        with self._lock:
            known = self._entries()
            for name in names:
                built = responder._cache.get(name)
                if built is None or built[3] is None or name in known:
                    continue
                path, _, is_pkg = responder._finder.get_module_source(name)
                stamp = self._stamp(path, is_pkg)
                if stamp is None or path != built[2]:
                    continue
                known[name] = [stamp, built[1], base64.b64encode(bytes(built[3])).decode("ascii")]
                self._learnt = True

    def core_source(self, build: Any) -> str:
        """mitogen's stripped core source (``build()`` makes it)."""
        import inspect

        stamp = _stamp(inspect.getsourcefile(mitogen.core))
        with self._lock:
            kept = self._entries().get(" core")
        if stamp is not None and isinstance(kept, list) and len(kept) == 2 and kept[0] == stamp:
            return str(kept[1])
        source = build()
        if stamp is not None:
            with self._lock:
                self._known[" core"] = [stamp, source]
                self._learnt = True
        return source  # type: ignore[no-any-return]

    def save(self) -> None:
        with self._lock:
            if self._learnt:
                cachefile.save(self._path, self._known)
                self._learnt = False


_BUILDS = _KeptBuilds(cachefile.path_of("sent-%d.%d-%s.json" % (
    sys.version_info[0], sys.version_info[1], ".".join(map(str, mitogen.__version__)))))
atexit.register(_BUILDS.save)


def configure(router: mitogen.master.Router) -> None:
    """Set the import policy; must run before the first connection."""
    for prefix in OVERRIDES:
        router.responder.whitelist_prefix(prefix)
    for prefix in BLOCKS:
        router.responder.blacklist_prefix(prefix)
    # One import scan per module and process: the responder reads the
    # imports of each module it sends (compiling its source), as
    # closure_of() does to choose them.
    router.responder._finder = _FINDER
    _lighten_spawning()


def _lighten_spawning() -> None:
    """Make each connection's start cost the controller less, the same command run.

    mitogen (0.3)'s ``Connection.get_boot_command`` re-reads (``inspect``),
    strips and compresses its first stage's source for every connection
    (~2 ms; a 200-host run pays it 200 times): the command is kept per
    (first stage, Python argv, remote name, length of the preamble),
    everything it is made of. This process also applies
    :func:`ioc.agentless_runner.spawning.lighten` (ssh started without
    forking the controller, a first stage that ends with its interpreter),
    as intermediaries and runners starting ``become`` children do.
    """
    if getattr(mitogen.parent, "_ioc_lightened", False):
        return
    spawning.lighten()
    boot_command = mitogen.parent.Connection.get_boot_command
    commands: Dict[Tuple[Any, ...], List[str]] = {}
    lock = threading.Lock()

    def kept_boot_command(self: mitogen.parent.Connection) -> List[str]:
        key = (type(self)._first_stage, tuple(self.get_python_argv()),
               self.options.remote_name, len(self.get_preamble()))
        with lock:
            known = commands.get(key)
        if known is None:
            known = boot_command(self)
            with lock:
                commands[key] = known
        return list(known)

    core_source = mitogen.parent._get_core_source
    mitogen.parent._get_core_source = lambda: _BUILDS.core_source(core_source)
    mitogen.parent.Connection.get_boot_command = kept_boot_command  # type: ignore[method-assign]
    mitogen.parent._ioc_lightened = True  # type: ignore[attr-defined]


def _ours(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in OVERRIDES) and \
        not any(name == b or name.startswith(b + ".") for b in BLOCKS)


@functools.lru_cache(maxsize=None)
def _related(router_finder: mitogen.master.ModuleFinder, name: str) -> FrozenSet[str]:
    return frozenset(n for n in router_finder.find_related(name) if _ours(n)) | {name}


def closure_of(names: Iterable[str]) -> Tuple[str, ...]:
    """``names`` and what they import from our packages, parents first."""
    found: Set[str] = set()
    for name in names:
        found |= _related(_FINDER, name)
    return tuple(sorted(found, key=lambda n: (n.count("."), n)))


def entry_points() -> Tuple[str, ...]:
    """The runner's own modules (not the module implementations, which are per batch)."""
    package = importlib.import_module("ioc.agentless_runner")
    return tuple("ioc.agentless_runner." + info.name
                 for info in pkgutil.iter_modules(package.__path__)
                 if not info.ispkg and info.name not in INTERMEDIARY_ONLY) \
        + ("ioc.agentless_runner.modules",)


@functools.lru_cache(maxsize=1)
def runner_closure() -> Tuple[str, ...]:
    """Every module the runner imports before it runs its first task."""
    return closure_of(entry_points() + LAZY)


def action_modules(actions: Iterable[str]) -> Tuple[str, ...]:
    """The module implementations (and their imports) behind ``actions``."""
    names = ["ioc.agentless_runner.modules." + runner_modules.MODULES[a]
             for a in set(actions) if a in runner_modules.MODULES]
    for name in names:  # mitogen finds the imports of modules this process has loaded
        importlib.import_module(name)
    return closure_of(list(MODULE_HELPERS) + names) if names else ()


def warm(router: mitogen.master.Router) -> threading.Thread:
    """Prepare the runner closure for sending while connections are being made.

    mitogen builds a module's message (source, compression, related imports)
    the first time a context needs it, on its broker thread, ahead of
    whatever is queued behind it; doing it now overlaps that work with the
    SSH handshake. mitogen offers no public call for it, so this reaches into
    ``ModuleResponder._build_tuple``, which caches what it builds.
    """
    def build() -> None:
        names = runner_closure()
        try:
            _BUILDS.fill(router.responder, names)
        except Exception:  # (then mitogen builds them all)
            LOG.debug("could not read the kept builds", exc_info=True)
        for name in names:
            try:
                router.responder._build_tuple(name)
            except Exception:  # the real send reports any problem
                LOG.debug("could not prepare %s", name, exc_info=True)
        _BUILDS.learn(router.responder, names)
    thread = threading.Thread(target=build, name="ioc-warm-modules", daemon=True)
    thread.start()
    return thread


def preload(router: mitogen.master.Router, context: mitogen.core.Context,
            names: Iterable[str] = ()) -> None:
    """Queue ``names`` (default: the runner closure) to ``context`` ahead of any call.

    mitogen remembers what each context has been sent, so repeating a name
    costs nothing.
    """
    router.responder.forward_modules(context, list(names) or list(runner_closure()))


def sizes(router: mitogen.master.Router, names: Iterable[str]) -> List[Tuple[str, int]]:
    """Compressed size of each module, for diagnostics and tests."""
    return [(n, len(router.responder._build_tuple(n)[3])) for n in names]
