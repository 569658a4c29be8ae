"""Lookups that read the controller, evaluated before a batch for each host.

The linear strategy templates on the controller, so ``lookup('file')``,
``lookup('env')``, ``lookup('pipe')``, ``with_fileglob`` and friends read the
controller's files, environment and commands, per host and per item (L7.6).
Before a step, for each host, the controller renders every field of every
task in the step that calls such a lookup — with the host's own variables and
each loop item, as the runner will — and records each answer under the key
the runner computes for the same call (``agentless_runner.lookups.key``).
The runner then answers ``lookup()`` from that table.

A task whose lookup arguments depend on values produced inside the same
batch is cut off by the planner first, so its arguments are known here.
"""
from __future__ import annotations

import collections.abc
import datetime
import glob
import json
import logging
import os
import re
import subprocess
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ioc.agentless_runner import results, templating
from ioc.agentless_runner.batch import HostRun, Scope, lookup_scope
from ioc.agentless_runner.loops import loop_terms
from ioc.agentless_runner.lookups import (PURE, TAKE_UNDEFINED, UNDEFINED, LookupUnanswerable,
                                          called, first_undefined, is_undefined, key, listify)
from ioc.agentless_runner.templating import Templar, TemplateError, Verbatim, to_builtin
from ioc.controller import plugins
from ioc.controller.payloads import PayloadCache, Undecryptable, candidates
from ioc.transport.spec import is_true
from ioc.model import Block, Task, to_wire
from ioc.planner.effects import expression_args

LOG = logging.getLogger(__name__)

Plugin = Callable[[List[Any], Dict[str, Any], "LookupContext"], List[Any]]


class LookupError_(Exception):
    """A controller lookup failed; the runner reports it as the task's failure."""


class LookupContext:
    """Where a lookup runs: search paths and the host's variables.

    ``payloads`` (the run's ``PayloadCache``) reads controller files as the
    run reads them (a vault-encrypted one decrypted with the run's secrets,
    as Ansible's loader does) and knows the variables Ansible adds to a
    template file's; without it files are read as they are."""

    def __init__(self, task: Task, basedir: str, templar: Templar,
                 payloads: Optional[PayloadCache] = None) -> None:
        self.task = task
        self.basedir = basedir
        self.templar = templar
        self.payloads = payloads
        #: Called for the task's ``with_<lookup>`` loop, not from a template.
        self.as_with = False
        #: What the plugin said with ``display.warning`` (the task's result has them).
        self.warnings: List[str] = []

    def warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def read_text(self, path: str) -> str:
        """The text of controller file ``path`` (decrypted: a vault's)."""
        if self.payloads is None:
            with open(path, encoding="utf-8", errors="surrogateescape") as handle:
                return handle.read()
        try:
            return self.payloads.read(path)[1].decode("utf-8", "surrogateescape")
        except Undecryptable as exc:
            raise LookupError_(str(exc)) from None

    def template_of(self, src: str, path: str) -> Optional[Dict[str, Any]]:
        """What Ansible adds to template file ``src``'s variables (None: unknown)."""
        return self.payloads.template_of(src, path) if self.payloads is not None else None

    def plugin_variables(self, names: Sequence[str] = ()) -> Dict[str, Any]:
        """What an Ansible lookup plugin run here is given as the task's
        variables: where it finds the files it reads (its
        ``find_file_in_search_path``: ``ansible_search_path``, and
        ``role_path`` for a role's task), ``playbook_dir``, ``groups``, and
        the variables ``names`` its options are read from that the host has,
        as they were written."""
        out: Dict[str, Any] = {"ansible_search_path": list(self.task.search_path or
                                                           (self.basedir,)),
                               "playbook_dir": os.path.abspath(self.basedir)}
        if self.task.role_path:
            out["role_path"] = self.task.role_path
        if self.templar.has_variable("groups"):  # (inventory_hostnames reads them)
            out["groups"] = to_builtin(self.templar.variable("groups"))
        for name in names:  # (as written: ansible-core's set_options does not template them)
            if name not in out and self.templar.has_variable(name):
                out[name] = to_builtin(self.templar.raw_variable(name))
        return out

    def find(self, name: str, subdir: str) -> Optional[str]:
        for candidate in self.search(name, subdir):
            if os.path.exists(candidate):
                return candidate
        return None

    def search(self, name: str, subdir: str) -> List[str]:
        return candidates(self.task, name, subdir, self.basedir)


def _file(terms: List[Any], kwargs: Dict[str, Any], ctx: LookupContext) -> List[Any]:
    out = []
    for term in terms:
        path = ctx.find(str(term), "files")
        if path is None:
            # (ansible-core: "Unable to access the file ...", caused by "File not found...")
            raise LookupError_("Unable to access the file %r: File not found. "
                               "Use -vvvvv to see paths searched." % str(term))
        text = ctx.read_text(path)
        if kwargs.get("rstrip", True):
            text = text.rstrip()
        if kwargs.get("lstrip", False):
            text = text.lstrip()
        out.append(text)
    return out


#: The ``template`` lookup's options that are Jinja settings (its ``overrides``).
_TEMPLATE_SETTINGS = ("variable_start_string", "variable_end_string", "comment_start_string",
                      "comment_end_string", "trim_blocks")


def _template(terms: List[Any], kwargs: Dict[str, Any], ctx: LookupContext) -> List[Any]:
    """ansible-core's ``template`` lookup: each file found in ``templates``,
    rendered with the host's variables, the template variables Ansible adds
    (``template_path``, ``ansible_managed``...) and ``template_vars`` over
    them; what it includes is found on ``ansible_search_path``'s directories
    (each as ``<dir>/templates`` then ``<dir>``) after its own."""
    settings = {name: kwargs[name] for name in _TEMPLATE_SETTINGS if kwargs.get(name) is not None}
    extra = kwargs.get("template_vars") or {}
    out = []
    for term in terms:
        path = ctx.find(str(term), "templates")
        if path is None:
            raise LookupError_("the template file %s could not be found for the lookup" % term)
        source = ctx.read_text(path)
        searchpath = [os.path.dirname(path)]
        for directory in ctx.task.search_path:
            searchpath += [os.path.join(directory, "templates"), directory]
        templar = ctx.templar
        found = ctx.template_of(str(term), path)
        if found is not None:  # (as the runner's template action adds them)
            templar = templar.template_with({
                "template_host": found["template_host"], "template_path": str(term),
                "template_mtime": datetime.datetime(*found["template_mtime"]),
                "template_uid": found["template_uid"],
                "template_run_date": datetime.datetime.now(),
                "template_destpath": None, "template_fullpath": path})
            if not ctx.templar.has_variable("ansible_managed"):
                templar = templar.template_with({"ansible_managed": found["ansible_managed"]},
                                                raw=True)
        if extra:
            templar = templar.template_with(extra)
        # (the native value, as 2.21's lookup: "{{ m() }}" of a macro writing a
        # dict gives the dict, text stays text)
        try:
            out.append(templar.template_file(source, settings,
                                             templating.file_loader(searchpath)))
        except TemplateError as exc:  # (Ansible's error is about the file: its origin)
            exc.file = [path, getattr(exc, "lineno", None)]
            raise
    return out


def _unvault(terms: List[Any], kwargs: Dict[str, Any], ctx: LookupContext) -> List[Any]:
    """ansible-core's ``unvault``: each file's text, decrypted with the run's
    vault secrets (which under mitogen_batch stay in ansible-playbook's own
    process, where the payloads are decrypted: Ansible's plugin, run by the
    dispatcher, has none)."""
    out = []
    for term in terms:
        path = ctx.find(str(term), "files")
        if path is None:
            ctx.warn("Unable to find '%s' in expected paths (use -vvvvv to see paths)" % term)
            raise LookupError_('Unable to find file matching "%s"' % term)  # (stripped, as shown)
        out.append(ctx.read_text(path))
    return out


def _env(terms: List[Any], kwargs: Dict[str, Any], ctx: LookupContext) -> List[Any]:
    """ansible-core's ``env``: a variable's value, else ``default`` (which may
    be undefined, ``undef()``'s own hint then naming the variable)."""
    default = kwargs.get("default", "")
    out = []
    for term in terms:
        name = str(term).split()[0]
        value = os.environ.get(name, default)
        if is_undefined(value) and value[UNDEFINED] == templating.UNDEF_DEFAULT:
            value = {UNDEFINED: "The environment variable %r is not set." % name}
        out.append(value)
    return out


def _run(command: str, ctx: LookupContext) -> str:
    proc = subprocess.run(command, shell=True, cwd=ctx.basedir, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise LookupError_("lookup_plugin.pipe(%s) returned %d" % (command, proc.returncode))
    return proc.stdout


def _pipe(terms: List[Any], kwargs: Dict[str, Any], ctx: LookupContext) -> List[Any]:
    return [_run(str(term), ctx).rstrip() for term in terms]


def _lines(terms: List[Any], kwargs: Dict[str, Any], ctx: LookupContext) -> List[Any]:
    out: List[Any] = []
    for term in terms:
        out.extend(_run(str(term), ctx).splitlines())
    return out


def _fileglob(terms: List[Any], kwargs: Dict[str, Any], ctx: LookupContext) -> List[Any]:
    """ansible-core's ``fileglob``: a term with a directory globs in the first
    place that directory is found (``files`` first; a warning when it is
    nowhere), one without globs ``<dir>/files`` then ``<dir>`` of each
    ``ansible_search_path`` directory until one matches; unsorted (L2.4)."""
    out: List[Any] = []
    for term in terms:
        term = str(term)
        pattern = os.path.basename(term)
        if pattern != term:
            found = ctx.find(os.path.dirname(term), "files")
            if found is None:
                ctx.warn("Unable to find '%s' in expected paths (use -vvvvv to see paths)"
                         % os.path.dirname(term))
            places = [found] if found is not None else []
        else:
            places = []
            for directory in ctx.task.search_path or (ctx.basedir,):
                places += [os.path.join(directory, "files"), directory]
        for place in places:
            matched = [p for p in glob.glob(os.path.join(place, pattern)) if os.path.isfile(p)]
            if matched:
                out.extend(matched)
                break
    return out


def _split_on(terms: Any, splitters: str) -> List[str]:
    """first_found's "magic extra splitting": each text split on ``splitters``."""
    if isinstance(terms, str):
        return re.split("[%s]" % re.escape(splitters), terms)
    out: List[str] = []
    for term in terms:
        out.extend(_split_on(term, splitters))
    return out


def _option_list(value: Any) -> List[Any]:
    """A ``list`` option's value as Ansible's configuration makes it (a text
    is split on commas)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(",")]
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _first_found_options(given: Dict[str, Any]) -> Dict[str, Any]:
    """The plugin's options as ``set_options(direct=given)`` leaves them:
    every option not given is its default."""
    return {"files": _option_list(given.get("files")), "paths": _option_list(given.get("paths")),
            "skip": is_true(given.get("skip", False))}


def _first_found_search(terms: Sequence[Any], options: Dict[str, Any]) -> List[str]:
    """ansible-core's ``first_found._process_terms``: the names to try, in
    order. A dict term sets the options anew (its ``files`` and ``paths``, and
    ``paths`` for the names after it; the last one's ``skip`` holds); each of
    a term's names is tried under each of the paths of the moment."""
    search: List[str] = []
    for term in terms:
        if isinstance(term, collections.abc.Mapping):
            options.update(_first_found_options(dict(term)))
            files = options["files"]
        elif isinstance(term, str):
            files = [term]
        elif isinstance(term, collections.abc.Sequence):
            search.extend(_first_found_search(term, options))
            continue
        else:
            raise LookupError_("Invalid term supplied. A string, dict or list is required, "
                               "not %r)." % type(term).__name__)
        names = _split_on(files, ",;")
        paths = _split_on(options["paths"], ",:;")
        if paths:
            search.extend(os.path.join(path, name) for path in paths for name in names)
        else:
            search.extend(names)
    return search


def _first_found(terms: List[Any], kwargs: Dict[str, Any], ctx: LookupContext) -> List[Any]:
    options = _first_found_options(kwargs)
    search = _first_found_search(terms or options["files"], options)
    # As Ansible's first_found: the subdirectory is named by the task's action
    # (include_vars searches ``vars/``, template ``templates/``); 2.19 names
    # none for a lookup() in a template, only for a with_first_found loop.
    subdir = next((s for s in ("template", "var", "file") if s in ctx.task.action), "file") + "s"
    if results.legacy() and not ctx.as_with:
        subdir = ""
    for candidate in search:
        found = ctx.find(candidate, subdir)
        if found is not None:
            return [found]
    if options["skip"]:
        return []
    raise LookupError_("No file was found when using first_found.")


#: Lookups that read the controller.
PLUGINS: Dict[str, Plugin] = {
    "file": _file, "template": _template, "env": _env, "pipe": _pipe, "lines": _lines,
    "unvault": _unvault,
    "fileglob": _fileglob, "first_found": _first_found,
}

#: Every lookup ioc knows, for the planner's up-front check.
KNOWN = frozenset(PLUGINS) | frozenset(PURE) | {"vars", "varnames"}


class _Recorder:
    """``lookup``/``query`` that really run on the controller and remember the answers."""

    def __init__(self, ctx_for: Callable[[], LookupContext]) -> None:
        self.table: Dict[str, Any] = {}
        self.ctx_for = ctx_for
        #: True while the task's ``with_<lookup>`` loop is evaluated.
        self.as_with = False

    def results(self, plugin: str, given: Sequence[Any], kwargs: Dict[str, Any]) -> List[Any]:
        terms = listify(list(given))
        undefined = first_undefined(terms, kwargs)
        if plugin in PURE:  # (the runner answers it, an undefined term as here)
            return undefined if undefined is not None else PURE[plugin](terms, None)
        table_key = key(plugin, terms, kwargs)
        if undefined is not None and plugin in PLUGINS and plugin not in TAKE_UNDEFINED:
            # ansible-core's own, which take no undefined term: the lookup's value is it
            self.table[table_key] = {"value": undefined}
        if table_key not in self.table:
            ctx: Optional[LookupContext] = None
            try:
                if plugin in PLUGINS:
                    ctx = self.ctx_for()
                    ctx.as_with = self.as_with
                    value = PLUGINS[plugin](terms, dict(kwargs), ctx)
                elif plugin in plugins.names("lookup", frozenset()):
                    # Ansible's own plugin (a collection's...), run here like ours
                    options = to_builtin(_plain_kwargs(kwargs))
                    value = plugins.call("lookup", plugin, to_builtin(terms), options,
                                         self.ctx_for().plugin_variables(
                                             plugins.variables_read("lookup", plugin, options)))
                else:
                    raise KeyError(plugin)
                self.table[table_key] = {"value": value}
            except KeyError:
                self.table[table_key] = {"error": "lookup plugin (%s) not found" % plugin,
                                         "missing": True}
            except LookupError_ as exc:
                # ansible-core's _invoke_lookup wraps the plugin's own error
                self.table[table_key] = {"error": "The lookup plugin '%s' failed: %s"
                                         % (plugin, exc), "plugin": plugin, "cause": str(exc)}
            except (plugins.PluginFailure, OSError, UnicodeError) as exc:
                self.table[table_key] = {"error": str(exc)}
            except TemplateError as exc:  # a template file's own error (the template lookup's)
                self.table[table_key] = {"error": str(exc)}
                if getattr(exc, "file", None):
                    self.table[table_key]["file"] = exc.file
            if ctx is not None and ctx.warnings:  # (the runner adds them to the task's result)
                self.table[table_key]["warnings"] = list(ctx.warnings)
        answer = self.table[table_key]
        if "error" in answer:
            error = (LookupUnanswerable if answer.get("missing") else TemplateError)(answer["error"])
            error.file = answer.get("file")
            raise error
        return answer["value"]

    def lookup(self, plugin: str, *terms: Any, **kwargs: Any) -> Any:
        return called(self.results, plugin, list(terms), kwargs, kwargs.get("wantlist"))

    def query(self, plugin: str, *terms: Any, **kwargs: Any) -> Any:
        return called(self.results, plugin, list(terms), kwargs, True)


def _plain_kwargs(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in kwargs.items() if k not in ("wantlist", "errors")}


def needs_controller(task: Task) -> bool:
    """Whether ``task`` calls a lookup that reads the controller."""
    if task.loop_with is not None and task.loop_with not in PURE:
        return True
    return any(call in text for text in _strings(to_wire(task)) for call in ("lookup(", "query(", "q("))


def collect(hostrun: HostRun, tasks: Sequence[Tuple[str, Task, Tuple[Block, ...]]],
            basedir: str, payloads: Optional[PayloadCache] = None) -> Dict[str, Any]:
    """The lookup answers for one host and the given (file key, task, blocks).

    Answers are kept per task and loop item (``batch.lookup_scope``): each
    task and each item calls a lookup afresh, as ansible-core does; within
    one of them, the same call with the same arguments is answered once.
    """
    tables: Dict[str, Any] = {}
    for file_key, task, blocks in tasks:
        wire = to_wire(task)
        scope = Scope(tuple(to_wire(b) for b in blocks))
        current: List[Templar] = []
        recorder = _Recorder(lambda: LookupContext(task, basedir, current[-1], payloads))
        overlay = Verbatim({"lookup": recorder.lookup, "query": recorder.query, "q": recorder.query})

        def templar_for(item: Optional[int], extra: Optional[Dict[str, Any]] = None) -> Templar:
            recorder.table = tables.setdefault(lookup_scope(file_key, item), {})
            layers = dict(extra or {})
            view = hostrun.variables(wire, scope, layers)
            templar = Templar(_Over(overlay, view))
            current.append(templar)
            return templar

        _render_task(task, wire, hostrun, templar_for, recorder)
    # A plugin that failed now may not when its task runs: an earlier task of
    # the batch may make what it reads (a template on a host whose connection
    # is local writes the file a lookup('file') reads), as Ansible runs it
    # only then. The runner asks for such an answer again (``Lookups.late``).
    # So is one that found nothing (fileglob's [], its warning of a directory
    # found nowhere, first_found's skip): that file may be made by then too.
    for table in tables.values():
        for table_key, answer in table.items():
            if "error" in answer and not answer.get("missing"):
                answer["late"] = True
            elif json.loads(table_key)[0] in _FINDS_FILES and (
                    answer.get("warnings") or answer.get("value") == []):
                answer["late"] = True
    return {k: v for k, v in tables.items() if v}


#: Controller lookups whose answer is the files they find.
_FINDS_FILES = frozenset({"fileglob", "first_found"})


def late(hostrun: HostRun, task: Task, blocks: Tuple[Block, ...], basedir: str,
         plugin: str, terms: Sequence[Any], kwargs: Dict[str, Any],
         payloads: Optional[PayloadCache] = None) -> Dict[str, Any]:
    """The answer to a lookup the runner met that :func:`collect` could not
    foresee (a template whose other values the batch sets: the controller's
    rendering stopped before reaching it), asked for when the task runs:
    ``{"value": ...}`` or ``{"error": ...}``, as a table entry."""
    templar = Templar(hostrun.variables(to_wire(task), Scope(tuple(to_wire(b) for b in blocks))))
    recorder = _Recorder(lambda: LookupContext(task, basedir, templar, payloads))
    try:
        recorder.results(plugin, list(terms), dict(kwargs))
    except TemplateError:
        pass  # (the table holds the error)
    return recorder.table[key(plugin, listify(list(terms)), kwargs)]


class _Over:
    """A read-only mapping: ``top`` first, then ``rest`` (keeps ChainMap's laziness)."""

    def __init__(self, top: Any, rest: Any) -> None:
        self.top, self.rest = top, rest

    def __getitem__(self, name: str) -> Any:
        if name in self.top:
            return self.top[name]
        return self.rest[name]

    def __contains__(self, name: object) -> bool:
        return name in self.top or name in self.rest

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default

    def __iter__(self) -> Any:
        return iter(set(self.top) | set(self.rest))

    def __len__(self) -> int:
        return len(set(self.top) | set(self.rest))


def _render_task(task: Task, wire: Dict[str, Any], hostrun: HostRun,
                 templar_for: Callable[..., Templar], recorder: _Recorder) -> None:
    """Template every field the runner will, per loop item, to trigger the lookups."""
    templar = templar_for(None)
    overlays: List[Optional[Dict[str, Any]]] = [None]
    if task.loop is not None:
        try:
            terms = loop_terms(task.loop, task.loop_with, templar)
            recorder.as_with = True
            items = templar.variables["query"](task.loop_with, *listify(terms)) \
                if task.loop_with is not None else terms
        except TemplateError as exc:
            LOG.debug("loop of %s for lookups: %s", task.location, exc)
            return
        finally:
            recorder.as_with = False
        loop_var = (task.loop_control or {}).get("loop_var", "item")
        overlays = [{loop_var: item} for item in listify(items)]
        try:
            templar.template(task.name)  # the step's name, templated once per host
        except TemplateError as exc:
            LOG.debug("name of %s for lookups: %s", task.location, exc)
    for number, overlay in enumerate(overlays):
        scoped = templar_for(number, overlay) if overlay else templar
        # assert's bare ``that`` items and debug's ``var`` are expressions too
        for value in (task.args, task.name, task.environment, list(task.when or ()),
                      list(task.changed_when or ()), list(task.failed_when or ()),
                      list(expression_args(task))):
            try:
                scoped.template(_as_templates(value))
            except TemplateError as exc:
                LOG.debug("field of %s for lookups: %s", task.location, exc)


def _as_templates(value: Any) -> Any:
    """Bare conditionals become templates so their lookups run too."""
    if isinstance(value, list):
        return [v if not isinstance(v, str) or "{{" in v else "{{ %s }}" % v for v in value]
    return value


def _strings(value: Any) -> List[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
