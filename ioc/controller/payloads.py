"""Controller files a batch needs (``copy src=``, ``template``, ``script``...).

Ansible reads these on the controller (L7.6). Before a batch starts, the
controller templates each such task's ``src`` with the host's variables —
exactly the values the runner will have, since they are built by the same
code from the same state — resolves it on Ansible's search path, and ships
the content with the batch **by content hash, once per host per run**: a
1,000-item ``copy`` loop of one file sends the file once, and a later batch
that needs it again sends only its name.

Large files stream instead. A ``copy`` source of :data:`STREAM_MIN` bytes
or more is not shipped: its entry carries the content's SHA-1 and size, and
the runner, which compares that with ``dest`` first (as Ansible's copy
compares checksums), asks for the content only when ``dest`` differs. It
then arrives from mitogen's ``FileService`` on the controller in 128 KiB
chunks with 1 MiB in flight per connection, so the controller never holds
the file and an unchanged file is never sent at all.

A ``src`` that cannot be known before the batch (it reads values produced
inside the batch) is the planner's business: it must cut before the task.
If one slips through, the runner fails that task with a clear message rather
than guessing. One kind needs no cut: an ``include_vars`` whose file name is
a template (``{{ ansible_os_family }}.yml`` after the gathering of the same
batch) gets every file its name could be (:func:`candidates_of`: the
template parts as globs, in each directory of the search path), within
:data:`CANDIDATES_MAX` files and :data:`CANDIDATES_BYTES`; the runner
templates the name and picks the first in the search order.
"""
from __future__ import annotations

import functools
import glob
import hashlib
import logging
import os
import re
import shlex
import stat
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Protocol, Sequence, Set, Tuple

import mitogen.core

from ioc.agentless_runner import results, searchpath, templating
from ioc.agentless_runner.batch import HostRun, Scope
from ioc.agentless_runner.templating import Templar, TemplateError
from ioc.controller import plugins
from ioc.model import Block, Task, to_wire
from ioc.planner.effects import named_per_item

LOG = logging.getLogger(__name__)

#: A ``copy`` source this large (bytes) streams on demand (see above).
STREAM_MIN = 1 << 20

#: Where each action names its controller file, and the search subdirectory.
SOURCES = {
    "copy": ("src", "files"),
    "template": ("src", "templates"),
    "unarchive": ("src", "files"),
    "script": (None, "files"),
    "include_vars": ("file", "vars"),
}


#: What an action plugin puts before ``AnsibleFileNotFound``'s words (copy's
#: catches and wraps it; unarchive's fails its result with the error's text).
_MISSING_PREFIX = {"copy": "Unexpected AnsibleActionFail error: ", "unarchive": "Task failed: "}
#: Actions whose plugin raises when the file is missing: their ``[ERROR]`` is
#: ``Task failed: <msg>``, not ``Action failed``/``Module failed``.
_RAISES_MISSING = frozenset({"copy", "template", "script", "unarchive"})


def wants_controller_file(task: Task) -> bool:
    if task.action not in SOURCES:
        return False
    if task.action in ("copy", "unarchive") and _truthy(task.args.get("remote_src")):
        return False
    arg, _ = SOURCES[task.action]
    return arg is None or task.args.get(arg) is not None or "_raw_params" in task.args \
        or (task.action == "include_vars" and task.args.get("dir") is not None)


class Undecryptable(ValueError):
    """A vault-encrypted controller file that none of the run's secrets decrypts."""


@dataclass
class _Blob:
    digest: str
    content: bytes


@dataclass
class PayloadCache:
    """Files read from the controller, and which host has which content."""

    #: abs path -> (digest, content, mode, mtime_ns, size) read once per run.
    files: Dict[str, Tuple[str, bytes, int, int, int]] = field(default_factory=dict)
    sent: Dict[str, Set[str]] = field(default_factory=dict)
    #: abs path -> (digest, mode, mtime_ns, size) of the files that stream.
    hashed: Dict[str, Tuple[str, int, int, int]] = field(default_factory=dict)
    #: Paths a runner may ask the controller's FileService for (Connector.serve_files).
    streamed: Set[str] = field(default_factory=set)
    #: The run's vault, ``(data, path) -> plaintext``: a vault-encrypted file
    #: (``include_vars``, ``copy``, ``template`` sources) ships decrypted, as
    #: Ansible's loader reads it; without it the file ships as it is.
    decrypt: Optional[Callable[[bytes, str], bytes]] = field(default=None, repr=False)
    #: Paths that were vault-encrypted: their entries say so (an include_vars
    #: of one hides its result, as Ansible's does).
    vaulted: Set[str] = field(default_factory=set)
    #: ``(src, path) -> variables``: what Ansible's template action adds for the
    #: template ``src`` found at ``path`` (``ioc.ansible.template_vars``: its host,
    #: owner, mtime and the configured ``ansible_managed``); a ``template`` entry
    #: carries them (``"template"``). None: the front end gave none, and a
    #: template task fails saying so.
    template_vars: Optional[Callable[[str, str], Dict[str, Any]]] = field(default=None, repr=False)
    #: ``(src, path) -> (mtime_ns, uid, variables)``: template_vars, asked once per file version.
    templates: Dict[Tuple[str, str], Tuple[int, int, Dict[str, Any]]] = field(default_factory=dict)

    def streams(self, path: str) -> bool:
        """Whether ``path`` is big enough to stream (and no vault file, which ships decrypted)."""
        st = os.stat(path)
        if st.st_size < STREAM_MIN:
            return False
        cached = self.hashed.get(path)
        if cached and cached[2:] == (st.st_mtime_ns, st.st_size):
            return True  # known to stream: no second look at its header per host
        with open(path, "rb") as handle:
            return not handle.read(64).lstrip().startswith(b"$ANSIBLE_VAULT;")

    def template_of(self, src: str, path: str) -> Optional[Dict[str, Any]]:
        """:attr:`template_vars` of template ``src`` at ``path`` (None without them)."""
        if self.template_vars is None:
            return None
        st = os.stat(path)
        cached = self.templates.get((src, path))
        if cached and cached[:2] == (st.st_mtime_ns, st.st_uid):
            return cached[2]
        found = self.template_vars(src, path)
        self.templates[(src, path)] = (st.st_mtime_ns, st.st_uid, found)
        return found

    def hash(self, path: str) -> Tuple[str, int, int]:
        """``(digest, mode, size)`` of a file that streams, read in blocks, never held."""
        st = os.stat(path)
        cached = self.hashed.get(path)
        if cached and cached[2:] == (st.st_mtime_ns, st.st_size):
            return cached[0], cached[1], st.st_size
        sha1 = hashlib.sha1()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha1.update(block)
        digest = sha1.hexdigest()
        self.hashed[path] = (digest, stat.S_IMODE(st.st_mode), st.st_mtime_ns, st.st_size)
        self.streamed.add(path)
        return digest, stat.S_IMODE(st.st_mode), st.st_size

    def read(self, path: str) -> Tuple[str, bytes, int]:
        st = os.stat(path)
        cached = self.files.get(path)
        if cached and cached[3:] == (st.st_mtime_ns, st.st_size):
            return cached[0], cached[1], cached[2]
        with open(path, "rb") as handle:
            content = handle.read()
        if self.decrypt is not None and content.lstrip().startswith(b"$ANSIBLE_VAULT;"):
            try:
                content = self.decrypt(content, path)
            except ValueError as exc:  # the task fails with it, as under Ansible
                raise Undecryptable("%s." % str(exc).rstrip(".")) from None
            self.vaulted.add(path)
        digest = hashlib.sha1(content).hexdigest()
        self.files[path] = (digest, content, stat.S_IMODE(st.st_mode), st.st_mtime_ns, st.st_size)
        return digest, content, stat.S_IMODE(st.st_mode)


class ModulePayloads(Protocol):
    """Ansible's module payloads (``ioc.ansible.modules.ModuleSet``), as the controller sees them."""

    #: module key -> the runner's spec of it.
    specs: Dict[str, Dict[str, Any]]
    #: digest -> content of every file some spec names.
    files: Dict[str, bytes]

    def digests(self, key: str) -> List[str]:
        """Every file digest module ``key`` needs on the target."""

    def prepare(self, keys: Iterable[str]) -> None:
        """Build the payloads of ``keys`` if they are not built yet."""


def collect_modules(cache: PayloadCache, connection: str, modules: ModulePayloads,
                    keys: Sequence[str], blobs: Dict[str, mitogen.core.Blob]
                    ) -> Dict[str, Dict[str, Any]]:
    """Specs of modules ``keys``; their files the connection lacks go into ``blobs``.

    Files are shared across modules (``module_utils/basic.py``...) and, like
    controller files, cross the network once per connection per run.
    """
    modules.prepare(keys)
    sent = cache.sent.setdefault(connection, set())
    for key in keys:
        for digest in modules.digests(key):
            if digest not in sent:
                blobs[digest] = mitogen.core.Blob(modules.files[digest])
                sent.add(digest)
    specs: Dict[str, Dict[str, Any]] = {}
    pending = list(keys)
    while pending:  # a dispatching action (service, async) brings the specs it chooses from
        key = pending.pop()
        if key not in specs:
            specs[key] = modules.specs[key]
            pending += specs[key].get("candidates", {}).values()
    return specs


def collect(cache: PayloadCache, host: str, hostrun: HostRun,
            tasks: Sequence[Tuple[str, Task, Tuple[Block, ...]]],
            basedir: str) -> Tuple[Dict[str, Dict[str, Any]], Dict[str, mitogen.core.Blob]]:
    """``files`` (per task index: src -> entry) and new ``blobs`` for one host."""
    files: Dict[str, Dict[str, Any]] = {}
    blobs: Dict[str, mitogen.core.Blob] = {}
    sent = cache.sent.setdefault(host, set())
    for key, task, blocks in tasks:
        hostrun.answer_lookups_of(key)  # a lookup may name the file (with_first_found)
        entries = {src: _entry(cache, task, src, basedir, blobs, sent)
                   for src in _sources(hostrun, key, task, blocks)}
        if entries:
            files[key] = entries
    return files, blobs


def _sources(hostrun: HostRun, key: str, task: Task, blocks: Tuple[Block, ...]) -> List[str]:
    """Every templated ``src`` the task will name on this host (per loop item)."""
    wire = to_wire(task)
    scope = Scope(tuple(to_wire(b) for b in blocks))
    templar = Templar(hostrun.variables(wire, scope))
    # Only the arguments that name the file: another argument may read a
    # value set earlier in the same batch (a role's set_fact for ``dest``).
    naming = _naming_args(task)
    overlays: List[Optional[Dict[str, Any]]] = [None]
    if task.loop is not None and named_per_item(naming):
        try:
            items = hostrun.loop_items(wire, templar)
        except TemplateError as exc:
            LOG.debug("loop of %s not known before the batch: %s", task.location, exc)
            return []
        loop_var = (task.loop_control or {}).get("loop_var", "item")
        overlays = [{loop_var: item} for item in items]
    out: List[str] = []
    for number, overlay in enumerate(overlays):
        hostrun.answer_lookups_of(key, number if overlay else None)
        scoped = Templar(hostrun.variables(wire, scope, overlay)) if overlay else templar
        try:
            src = source_arg(task, scoped.template(naming))
        except TemplateError as exc:
            LOG.debug("src of %s not known before the batch: %s", task.location, exc)
            continue
        finally:
            hostrun.answer_lookups_of(key)
        if src and src not in out:
            out.append(src)
    return out


def _naming_args(task: Task) -> Dict[str, Any]:
    """The task's arguments :func:`source_arg` reads, untemplated."""
    arg, _ = SOURCES[task.action]
    keys: Tuple[str, ...] = (arg, "_raw_params") if arg is not None else ("cmd", "_raw_params")
    if task.action == "include_vars":
        keys += ("dir",)
    return {k: task.args[k] for k in keys if k in task.args}


def source_arg(task: Task, args: Dict[str, Any]) -> Optional[str]:
    """The controller path an action names, from its templated arguments."""
    arg, _ = SOURCES[task.action]
    if task.action == "include_vars":  # its action strips a free-form name's newline
        if args.get("dir"):
            return str(args["dir"])
        value = args.get("file", args.get("_raw_params"))
        return None if value is None else str(value).rstrip("\n")
    if arg is not None:
        value = args.get(arg, args.get("_raw_params"))
        return None if value is None else str(value)
    command = args.get("cmd") or args.get("_raw_params") or ""
    words = shlex.split(str(command))
    return words[0] if words else None


def search_path(task: Task, src: str, basedir: str) -> List[str]:
    """Ansible's lookup order for a relative ``src`` of ``task``'s action."""
    _, sub = SOURCES[task.action]
    return candidates(task, src, sub, basedir)


def candidates(task: Task, name: str, subdir: str, basedir: str) -> List[str]:
    """Where Ansible looks for controller file ``name`` of ``task``, in order,
    each place once (:func:`search_stack`, :func:`searchpath.candidates`)."""
    if os.path.isabs(name):
        return [name]
    seen: List[str] = []
    for candidate in searchpath.candidates(search_stack(task), subdir, name, basedir,
                                           results.legacy()):
        candidate = os.path.normpath(candidate)
        if candidate not in seen:
            seen.append(candidate)
    return seen


def not_found(task: Task, name: str, subdir: str, basedir: str) -> str:
    """Ansible's message for controller file ``name`` of ``task`` found nowhere."""
    legacy = results.legacy()
    searched = [] if os.path.isabs(name) else \
        searchpath.candidates(search_stack(task), subdir, name, basedir, legacy)
    return searchpath.not_found(name, searched, legacy)


#: ansible-core's test that a search path entry is a role's ``tasks`` directory.
_RE_TASKS = re.compile(r"(?:^|%s)+tasks%s?$" % (os.path.sep, os.path.sep))


def search_stack(task: Task) -> List[List[Optional[str]]]:
    """``task``'s search stack as :func:`searchpath.candidates` takes it: its
    role's directory, then its own file's (Ansible's ``get_search_path``),
    each with the ``tasks`` directory above it where ``DataLoader`` takes the
    entry for a role's (``_is_role``). ioc knows a task's own role, not the
    roles that depend on it: those Ansible searches too are not here."""
    paths = [task.role_path] if task.role_path else []
    task_dir = os.path.dirname(task.location.path)
    if task_dir not in paths:
        paths.append(task_dir)
    stack: List[List[Optional[str]]] = []
    for path in paths:
        upath = os.path.normpath(os.path.abspath(os.path.expandvars(os.path.expanduser(path))))
        parent = os.path.dirname(upath)
        stack.append([upath, parent if parent.endswith("/tasks") and _is_role(path) else None])
    return stack


@functools.lru_cache(maxsize=1024)
def _is_role(path: str) -> bool:
    """ansible-core's ``DataLoader._is_role``: a ``tasks`` directory with a
    ``main`` file, or a directory (or its parent) with ``tasks/main`` or
    ``meta/main``. Asked for every host's payloads of every task that names a
    controller file: the answer (up to 18 ``stat`` calls) is kept per path
    for the run, as a role's layout does not change under it."""
    parent = os.path.dirname(path)
    untasked = [os.path.join(path, main) for main in ("main.yml", "main.yaml", "main")]
    tasked = [os.path.join(base, sub, main) for base in (path, parent)
              for sub in ("tasks", "meta") for main in ("main.yml", "main.yaml", "main")]
    return bool(_RE_TASKS.search(path) and any(map(os.path.exists, untasked))) \
        or any(map(os.path.exists, tasked))


def vars_dir(task: Task, name: str) -> str:
    """The directory ``include_vars: dir=name`` reads, found as ansible-core's
    action finds it: in the role (its ``vars/``), else beside the task's file;
    never on the search path."""
    if task.role_path:
        if name.split("/")[0] == "vars":
            inside = os.path.join(task.role_path, name)
            return inside if os.path.exists(inside) else name
        return os.path.join(task.role_path, "vars", name)
    return os.path.join(os.path.dirname(task.location.path), name)


def late_entry(cache: PayloadCache, host: str, task: Task, src: str,
               basedir: str) -> Dict[str, Any]:
    """The runner's second request for controller file ``src`` of ``task``,
    missing when its batch was prepared: ``{"entry": ..., "blobs": ...}``
    as they are now (found, or missing again: the entry says why)."""
    blobs: Dict[str, mitogen.core.Blob] = {}
    entry = _entry(cache, task, src, basedir, blobs, cache.sent.setdefault(host, set()))
    entry.pop("late", None)
    return {"entry": entry, "blobs": blobs}


def _vars_dir_entry(cache: PayloadCache, task: Task, src: str,
                    blobs: Dict[str, mitogen.core.Blob], sent: Set[str]) -> Dict[str, Any]:
    path = vars_dir(task, src)
    if not os.path.isdir(path):
        return {"kind": "missing", "path": path, "msg": "%s %s" % (
            path, "is not a directory" if os.path.exists(path) else "directory does not exist")}
    # (Ansible's include_vars walks with followlinks=True: a linked directory's files are read)
    return _dir_entry(cache, path, blobs, sent, follow=True)


def _entry(cache: PayloadCache, task: Task, src: str, basedir: str,
           blobs: Dict[str, mitogen.core.Blob], sent: Set[str]) -> Dict[str, Any]:
    if task.action == "include_vars" and task.args.get("dir") is not None:
        try:
            return _vars_dir_entry(cache, task, src, blobs, sent)
        except Undecryptable as exc:
            return {"kind": "error", "msg": str(exc)}
    candidates = search_path(task, src, basedir)
    path = next((c for c in candidates if os.path.exists(c)), None)
    if path is None:
        entry: Dict[str, Any] = {"kind": "missing", "msg": _MISSING_PREFIX.get(task.action, "") + not_found(
            task, src, SOURCES[task.action][1], basedir)}
        if task.action in _RAISES_MISSING:
            entry["raised"] = True
        # An earlier task of the batch may write it (a template on a host whose
        # connection is local, a delegated command): the runner asks again when
        # the task runs, as Ansible reads the file then (:func:`late_entry`).
        entry["late"] = True
        return entry
    stream = task.action == "copy"
    try:
        if os.path.isdir(path):
            return _dir_entry(cache, path, blobs, sent, stream)
        entry = _file_entry(cache, path, blobs, sent, stream)
        if task.action == "template":
            template = cache.template_of(src, path)
            if template is not None:
                entry["template"] = template
            entry["loader"] = _template_loader(cache, task, path, basedir, blobs, sent)
            # (its filters and tests only Ansible has: the runner gets their proxies)
            plugins.declare_used_in(cache.read(path)[1].decode("utf-8", "replace"))
        return entry
    except Undecryptable as exc:
        return {"kind": "error", "msg": str(exc)}


def template_searchpath(task: Task, path: str, basedir: str) -> List[str]:
    """The directories Ansible's template action gives Jinja's loader for the
    template file at ``path`` (``{% include %}``, ``{% import %}``,
    ``{% extends %}``): ``ansible_search_path`` (``Task.search_path``: its roles'
    directories, its file's, the playbook's), the playbook's directory and the
    template's own, each as ``<dir>/templates`` then ``<dir>``."""
    dirs = list(task.search_path) + [basedir, os.path.dirname(path)]
    found: List[str] = []
    for directory in dirs:
        found += [os.path.join(directory, "templates"), directory]
    return found


def _template_loader(cache: PayloadCache, task: Task, path: str, basedir: str,
                     blobs: Dict[str, mitogen.core.Blob], sent: Set[str]) -> Dict[str, Any]:
    """What the runner's Jinja loader for template ``path`` finds: every template
    the file names in ``{% include/import/from/extends %}`` (and they name, and so
    on), by name, as Jinja's ``FileSystemLoader`` finds it on
    :func:`template_searchpath`, shipped like the template; a name found nowhere
    is ``missing``. A name that is an expression (known only when rendering) is
    not here: the runner asks for it then (``searchpath`` is sent for that)."""
    searchpath = template_searchpath(task, path, basedir)
    files: Dict[str, Dict[str, Any]] = {}
    todo = [path]
    while todo:
        for name in _referenced_templates(cache, todo.pop()):
            if name in files:
                continue
            found = templating.find_template(searchpath, name)
            if found is None:
                files[name] = {"kind": "missing"}
                continue
            try:
                files[name] = _file_entry(cache, found, blobs, sent)
            except Undecryptable as exc:
                files[name] = {"kind": "error", "msg": str(exc), "path": found}
                continue
            todo.append(found)
    return {"searchpath": searchpath, "files": files}


def _referenced_templates(cache: PayloadCache, path: str) -> List[str]:
    """The constant template names the file at ``path`` refers to; none when it
    cannot be read as text (rendering reports that)."""
    try:
        text = cache.read(path)[1].decode("utf-8")
    except (UnicodeDecodeError, Undecryptable, OSError):
        return []
    return templating.referenced_templates(text)


def _ship(cache: PayloadCache, path: str, blobs: Dict[str, mitogen.core.Blob],
          sent: Set[str], stream: bool = False) -> Dict[str, Any]:
    """The entry fields of one file: shipped with the batch, or (large) streamed on demand."""
    if stream and cache.streams(path):
        digest, mode, size = cache.hash(path)
        return {"mode": mode, "digest": digest, "stream": path, "size": size}
    digest, content, mode = cache.read(path)
    if digest not in sent:
        blobs[digest] = mitogen.core.Blob(content)
        sent.add(digest)
    if path in cache.vaulted:
        return {"mode": mode, "digest": digest, "vaulted": True}
    return {"mode": mode, "digest": digest}


def _file_entry(cache: PayloadCache, path: str, blobs: Dict[str, mitogen.core.Blob],
                sent: Set[str], stream: bool = False) -> Dict[str, Any]:
    return dict(_ship(cache, path, blobs, sent, stream), kind="file", path=path)


def _dir_entry(cache: PayloadCache, root: str, blobs: Dict[str, mitogen.core.Blob],
               sent: Set[str], stream: bool = False, follow: bool = False) -> Dict[str, Any]:
    entries: List[Dict[str, Any]] = []
    for rel in _walk(root, follow):
        full = os.path.join(root, rel)
        if os.path.isdir(full):
            entries.append({"rel": rel, "mode": stat.S_IMODE(os.stat(full).st_mode), "dir": True})
        else:
            entries.append(dict(_ship(cache, full, blobs, sent, stream), rel=rel))
    return {"kind": "dir", "path": root, "mode": stat.S_IMODE(os.stat(root).st_mode),
            "entries": entries}


def _walk(root: str, follow: bool = False) -> Iterable[str]:
    for dirpath, dirnames, filenames in os.walk(root, followlinks=follow):
        dirnames.sort()
        for name in dirnames + sorted(filenames):
            yield os.path.relpath(os.path.join(dirpath, name), root)


#: At most this many candidate files, and bytes, for one deferred include_vars
#: (more: none are shipped, and the runner leaves the choice to the controller).
CANDIDATES_MAX = 64
CANDIDATES_BYTES = 1 << 20


def candidates_of(cache: PayloadCache, host: str, task: Task, patterns: Sequence[str],
                  basedir: str, blobs: Dict[str, mitogen.core.Blob]) -> Dict[str, Any]:
    """Every file an ``include_vars`` name matching one of ``patterns`` (globs,
    ``dataflow.deferred_patterns``) can be.

    ``stack`` and ``basedir``: what the runner builds the templated name's
    search list from (:func:`searchpath.candidates`, as :func:`candidates`
    does here); ``found``: each existing file matching the pattern in one of
    the search path's directories, by path, shipped like any controller
    file; None when there are too many, or a directory matches (the runner
    then leaves the choice to the controller).
    """
    bases = [os.path.dirname(c) for c in candidates(task, "x", "vars", basedir)]
    found: Optional[Dict[str, Any]] = {}
    size = 0
    sent = cache.sent.setdefault(host, set())
    for base, pattern in [(b, p) for b in bases for p in patterns]:
        for path in sorted(glob.glob(os.path.join(glob.escape(base), pattern))):
            path = os.path.normpath(path)
            if found is None or path in found:
                continue
            if os.path.isdir(path) or len(found) >= CANDIDATES_MAX:
                found = None
                continue
            size += os.path.getsize(path)
            if size > CANDIDATES_BYTES:
                found = None
                continue
            try:
                found[path] = _file_entry(cache, path, blobs, sent)
            except Undecryptable as exc:
                found[path] = {"kind": "error", "msg": str(exc), "path": path}
    return {"patterns": list(patterns), "stack": search_stack(task), "basedir": basedir,
            "found": found}


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("yes", "on", "1", "true", "y", "t")
    return bool(value)
