"""Jinja2 templating with Ansible's conventions; runs on the target.

What a caller must know:

* :class:`Templar` wraps a read-only mapping of *raw* variables. Values are
  templated lazily, when a template reads them, and cached per Templar; so a
  play var ``b: "{{ a }}-x"`` resolves at the moment it is used. A variable
  that refers to itself fails with ``recursive loop detected``.
* A string that is exactly one ``{{ expression }}`` yields the expression's
  native value (list, dict, int, None...); any other template renders to a
  str. Strings without template markers are returned unchanged, without a
  jinja call.
* Values in a layer wrapped in :class:`Verbatim` are used as they are and never
  templated again: use it for data that is already the result of templating or
  that came from a module (facts, loop items), so that a command's output
  containing ``{{`` is not evaluated. In a :class:`Results` layer (registered
  and set_fact values) only a :class:`~ioc.agentless_runner.trust.TrustedText`
  is templated, when read (a string include_vars loaded), as ansible-core
  templates the text it trusts wherever it is.
* Results returned by :meth:`Templar.template`, :meth:`Templar.evaluate` and
  :meth:`Templar.conditional` are plain builtins (dict, list, str, int...).
* ``lookup()``/``query()`` run on the controller only; on the target they fail.

Imports only the stdlib, jinja2 and markupsafe; runs on Python 3.9+.
"""
import ast
import collections
import collections.abc
import datetime
import functools
import itertools
import os
import re
import threading
import types

import jinja2
import jinja2.loaders
import jinja2.meta
import jinja2.runtime
import jinja2.utils
import jinja2.ext
import jinja2.lexer
from jinja2 import nodes
from jinja2.nativetypes import NativeCodeGenerator
from jinja2.parser import Parser
from jinja2.runtime import Undefined

from ioc.agentless_runner.context import LOCAL, Recorder
from ioc.agentless_runner.filters import FILTERS, GroupTuple
from ioc.agentless_runner.template_errors import (ConditionalResultError, TemplateError,
                                                  UndefinedVariableError, UntrustedTemplateError)
from ioc.agentless_runner.tests_jinja import TESTS, ControllerAnswers, TestError
from ioc.agentless_runner.trust import TrustedText, UntrustedText, VaultedText, WrittenTemplate

__all__ = [
    "TemplateError",
    "UndefinedVariableError",
    "Templar",
    "Verbatim",
    "Results",
    "Deprecated",
    "DeprecatedReads",
    "DeprecatedText",
    "ReplacingMarkers",
    "TemplatedConditionals",
    "ConstTemplates",
    "unwrapped_condition",
    "is_template",
]

#: The context variable the single-expression form stores its value in.
_RESULT = "__ioc_result"
_MARKERS = ("{{", "{%", "{#")
_UNKNOWN_PLUGIN = re.compile(r"^No (filter|test) named '([^']+)'\.?$")
#: Filters that must see lazy containers and Undefined as they are: the
#: undefined-aware ones, and those that only iterate (keeping access lazy).
_KEEP_LAZY = frozenset((
    "default", "d", "mandatory", "length", "count", "first", "last",
    "map", "select", "reject", "selectattr", "rejectattr",
    # extract(container) reads one key of a possibly huge mapping (hostvars).
    "extract",
))


def is_template(value):
    """True if ``value`` (or any string nested in it) holds template markers."""
    if isinstance(value, str):
        return any(marker in value for marker in _MARKERS)
    if isinstance(value, collections.abc.Mapping):
        return any(is_template(k) or is_template(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(is_template(v) for v in value)
    return False


class Verbatim(collections.abc.Mapping):
    """A layer of variables whose values are final and never templated.

    Wraps ``mapping`` without copying it; put it in the ChainMap handed to
    :class:`Templar` (or use :meth:`Templar.template_with`).
    """

    __slots__ = ("mapping",)

    def __init__(self, mapping):
        self.mapping = mapping

    def __getitem__(self, key):
        return self.mapping[key]

    def __iter__(self):
        return iter(self.mapping)

    def __len__(self):
        return len(self.mapping)

    def __contains__(self, key):
        return key in self.mapping


class Results(Verbatim):
    """A :class:`Verbatim` layer of results (registered values, set_fact
    values) where a :class:`TrustedText` is templated when read: the text of
    a vars file include_vars loaded stays a template in its registered result.
    Keep one per mapping: it remembers which values hold none (a large
    command output is looked through once, not at each read)."""

    __slots__ = ("_holds",)

    def __init__(self, mapping):
        Verbatim.__init__(self, mapping)
        self._holds = {}

    def holds_template(self, name, raw):
        """Whether ``raw``, the value of ``name`` here, holds a trusted template."""
        known = self._holds.get(name)
        if known is not None and known[0] is raw:
            return known[1]
        holds = _holds_trusted_template(raw)
        self._holds[name] = (raw, holds)
        return holds


def _holds_trusted_template(value):
    """Whether a :class:`TrustedText` holding a template is in ``value``."""
    if value.__class__ is TrustedText:
        return is_template(value)
    if isinstance(value, (dict, list)):
        items = value.values() if isinstance(value, dict) else value
        # (a container of none, e.g. a command's output lines, is not walked item by item)
        if _HOLDERS.isdisjoint(map(type, items)):
            return False
        return any(_holds_trusted_template(v) for v in items)
    return False


#: The types a trusted template may be, or be in, in a result.
_HOLDERS = frozenset((dict, list, TrustedText))


class Deprecated(Verbatim):
    """A :class:`Verbatim` layer whose names are deprecated (but ``kept``).

    A template that reads one of them records ``notice`` in the thread's
    :class:`DeprecatedReads` (if any), as ansible-core 2.21 records a read of
    a value tagged ``Deprecated``: only a name this layer provides counts, not
    the same name from a layer of higher precedence.
    """

    __slots__ = ("notice", "kept")

    def __init__(self, mapping, notice, kept=()):
        Verbatim.__init__(self, mapping)
        self.notice = notice
        self.kept = kept

    def read(self, name):
        reads = getattr(LOCAL, "reads", None)
        if reads is not None and name not in self.kept:
            reads.add(self.notice)


class DeprecatedText(str):
    """A deprecated str value (a registered ``skipped_reason``): a template
    whose result holds it records ``notice`` (see :func:`to_builtin`). Keep it
    off the wire: it is not a builtin."""

    def __new__(cls, text, notice):
        self = str.__new__(cls, text)
        self.notice = notice
        return self

    def read(self):
        reads = getattr(LOCAL, "reads", None)
        if reads is not None:
            reads.add(self.notice)


# This thread's recorders (``reads``, ``conditionals``, ``consts``, ``markers``,
# ``storage``) are slots of the runner's one thread-local, ``context.LOCAL``.


class DeprecatedReads(Recorder):
    """Records, while active on this thread, which deprecated values templates
    read, and where: ``found`` lists ``(notice, where)`` once each, in order.

    ``where`` is the top-level template the caller is templating (an
    argument's name, ``("at", origin)`` of a condition or a template file, or
    None); setting it starts another. ``inner``, while set, is the origin of
    the variable's template being rendered inside it (``("at", origin)``):
    2.21 reports a read at the innermost template, and only the first read
    of each deprecated value per top-level template
    (``DeprecatedAccessAuditContext``)."""

    slot = "reads"

    def __init__(self):
        self.found = []
        self._where = None
        self.inner = None
        self._noted = set()

    @property
    def where(self):
        return self._where

    @where.setter
    def where(self, value):
        self._where = value
        self._noted = set()

    def add(self, notice):
        if notice in self._noted:
            return
        self._noted.add(notice)
        entry = (notice, self.inner if self.inner is not None else self._where)
        if entry not in self.found:
            self.found.append(entry)


def _record(conditionals, entry):
    if entry not in conditionals.found:
        conditionals.found.append(entry)


class TemplatedConditionals(Recorder):
    """Records, while active on this thread, the conditions written as one
    template (``when: "{{ x == 1 }}"``) whose value was no text: ansible-core
    2.19+ evaluates them, and its task result records the deprecation
    "Conditionals should not be surrounded by templating delimiters ..."
    (:data:`CONDITIONAL_AS_TEMPLATE`); and, with :data:`BROKEN_CONDITIONALS`,
    those whose result was no boolean (their deprecation). ``found`` lists
    ``(condition, origin, message)`` once each, in order (``message`` None:
    the first kind's)."""

    slot = "conditionals"

    def __init__(self):
        self.found = []


class ConstTemplates(Recorder):
    """Records, while active on this thread, each Jinja constant string that
    held a template and was templated (ansible-core 2.21's embedded templates:
    every such constant of a conditional expression, and those passed as a
    lookup's terms anywhere), as 2.21 warns of each ("Jinja constant strings
    should not contain embedded templates. ..."). ``found`` lists
    ``(conditional, source)`` in order: whether it was a conditional's (the
    warning's help text differs), and the top-level text being templated or
    evaluated (where Ansible's warning points: the origin of that text)."""

    slot = "consts"

    def __init__(self):
        self.found = []
        #: The text of each template or expression being run, innermost last.
        self.sources = []

    def add(self, conditional):
        self.found.append((conditional, self.sources[-1] if self.sources else None))



class StorageConversions(Recorder):
    """Records, while active on this thread, each value of a type Ansible's
    variable storage does not hold (groupby's :class:`GroupTuple`) that a
    template's final value held and that was converted to a list, as
    ansible-core 2.19+'s finalization converts it with the warning
    :func:`unsupported_in_storage` gives. ``found`` lists ``(message, source)``
    once each, in order: ``source`` is the text of the template or expression
    that gave it (where Ansible's warning points), or None."""

    slot = "storage"

    def __init__(self):
        self.found = []
        #: The text of each template or expression being run, innermost last.
        self.sources = []

    def add(self, message, source):
        entry = (message, source)
        if entry not in self.found:
            self.found.append(entry)


def unsupported_in_storage(value, target):
    """ansible-core's warning of a value converted when a template's value is finalized."""
    return "Type %r is unsupported in variable storage, converting to %r." % (
        type(value).__name__, target.__name__)


#: ansible-core 2.21's warning of a Jinja constant string holding a template
#: that was templated, and its help texts (in a conditional, elsewhere).
CONST_TEMPLATE = "Jinja constant strings should not contain embedded templates. " \
    "This feature will be disabled by default in ansible-core 2.23."
CONST_TEMPLATE_HELP = (
    "Use inline expressions, for example: `msg: \"{{ lookup('env', '{{ a_var }}') }}\"` "
    "becomes `msg: \"{{ lookup('env', a_var) }}\"`",
    "Use inline expressions, for example: `when: \"{{ a_var }}\" == 42` becomes "
    "`when: a_var == 42`")


#: ansible-core's deprecation of a condition written as a template (2.19+).
CONDITIONAL_AS_TEMPLATE = "Conditionals should not be surrounded by templating delimiters " \
    "such as {{ }} or {% %}."
#: Ansible's ``ALLOW_BROKEN_CONDITIONALS`` (one item, set per batch): a
#: condition whose result is no boolean is its truth, with a deprecation,
#: instead of an error.
BROKEN_CONDITIONALS = [False]
#: The help text of that deprecation (ansible-core's ``_BROKEN_CONDITIONAL_ALLOWED_FRAGMENT``).
BROKEN_CONDITIONAL_ALLOWED = "Broken conditionals are currently allowed because the " \
    "`ALLOW_BROKEN_CONDITIONALS` configuration option is enabled."


def current_reads():
    """The DeprecatedReads recording on this thread, or None."""
    return getattr(LOCAL, "reads", None)


# -- undefined values ------------------------------------------------------------


def _native_type_name(obj):
    """The builtin type name ansible-core names a value by ('dict', 'list', 'str'...)."""
    if isinstance(obj, (_AnsibleLazyTemplateDict, collections.abc.Mapping)) and not isinstance(obj, dict):
        return "dict"
    if isinstance(obj, _AnsibleLazyTemplateList):
        return "list"
    for base in (dict, list, str, bool, int, float, tuple):
        if isinstance(obj, base):
            return base.__name__
    return type(obj).__name__


#: The classes of ansible-core's own lazy containers, which a template
#: reading a variable's list or dict sees (its error messages name them).
_ANSIBLE_LAZY_CLASS = "ansible._internal._templating._lazy_containers.%s object"


def _object_type_repr(obj):
    """Jinja's ``object_type_repr`` of ``obj`` as ansible-core's templating
    has it: a variable's list or dict is one of its lazy containers."""
    if isinstance(obj, (_AnsibleLazyTemplateDict, _AnsibleLazyTemplateList)):
        return _ANSIBLE_LAZY_CLASS % type(obj).__name__
    return jinja2.utils.object_type_repr(obj)


class _StrictUndefined(jinja2.StrictUndefined):
    """Any use fails, except ``is defined``, ``default`` and ``mandatory``.

    Attribute and item access chain (``x.y`` where x is undefined stays
    undefined and keeps the message about ``x``), as Ansible's does, so that
    ``x.y | default(1)`` and ``x.y is defined`` work.
    """

    __slots__ = ()

    @property
    def _undefined_message(self):
        if self._undefined_hint:
            return self._undefined_hint
        name, obj = self._undefined_name, self._undefined_obj
        if obj is jinja2.utils.missing:
            return "%r is undefined" % (name,)
        # ansible-core's Marker hint, for any name that is true (an element 1
        # too); a false one (element 0, key '') keeps Jinja's own words, which
        # name the class of the value as ansible-core has it
        if name:
            return "object of type %r has no attribute %r" % (_native_type_name(obj), name)
        if not isinstance(name, str):
            return "%s has no element %r" % (_object_type_repr(obj), name)
        return "%r has no attribute %r" % (_object_type_repr(obj), name)

    def __getattr__(self, name):
        if name[:2] == "__":
            raise AttributeError(name)
        return self

    def __getitem__(self, key):
        return self


def _fail_undefined(value):
    """Raise the user-facing error for an Undefined ``value``."""
    try:
        value._fail_with_undefined_error()
    except jinja2.UndefinedError as exc:
        error = UndefinedVariableError(str(exc))
        error.variable = getattr(exc, "variable", None)  # (a variable's undefined value's)
        raise error from None


class _Marker(_StrictUndefined):
    """An undefined value a template gave while :class:`ReplacingMarkers` is
    active: it travels on (``default`` and ``is defined`` still see it) and
    remembers where it came from, as ansible-core 2.21's ``UndefinedMarker``
    (``source``: the variable whose raw value was templated, None for the
    expression itself, and that template's text)."""

    __slots__ = ("_ioc_source",)


def _as_marker(value, source):
    if value.__class__ is _Marker:
        return value
    marker = _Marker(hint=value._undefined_hint, obj=value._undefined_obj,
                     name=value._undefined_name, exc=value._undefined_exception)
    marker._ioc_source = source
    return marker


class ReplacingMarkers(Recorder):
    """While active on this thread, an undefined value that reaches the end of
    templating is replaced by ``<< error N - <message> >>`` instead of failing,
    as ansible-core's ``ReplacingMarkerBehavior`` does for ``debug``'s ``var``.

    ``found`` lists ``(message, variable, template)`` per replacement, in
    order; :meth:`warnings` groups them as ansible-core's ``emit_warnings``."""

    slot = "markers"

    def __init__(self):
        self.found = []
        #: (variable, template) of each template being rendered, innermost last.
        self.rendering = []

    def source(self):
        return self.rendering[-1] if self.rendering else (None, None)

    def replace(self, value):
        """The text that stands for undefined ``value`` (numbered, recorded)."""
        variable, template = value._ioc_source if value.__class__ is _Marker \
            else self.source()
        message = value._undefined_message
        self.found.append((message, variable, template))
        return "<< error %d - %s >>" % (len(self.found), message)

    def warnings(self):
        """``[{"text", "var", "template"}]``: one warning per run of consecutive
        replacements from the same template ("Encountered N template
        error(s)." and each one's message), with where that template is."""
        out = []
        for number, (message, variable, template) in enumerate(self.found, 1):
            line = "\nerror %d - %s" % (number, message)
            if out and out[-1]["template"] == template:
                out[-1]["count"] += 1
                out[-1]["lines"] += line
                continue
            out.append({"count": 1, "lines": line, "var": variable, "template": template})
        return [{"text": "Encountered %d template error%s.%s"
                 % (w["count"], "s" if w["count"] > 1 else "", w["lines"]),
                 "var": w["var"], "template": w["template"]} for w in out]


class _OmittingMarkers(ReplacingMarkers):
    """:class:`ReplacingMarkers` whose stand-in is a token
    :func:`template_omitting_undefined` finds again."""

    TOKEN = "\x00ioc-undefined\x00"

    def replace(self, value):
        ReplacingMarkers.replace(self, value)
        return self.TOKEN


#: What :func:`template_omitting_undefined` leaves out.
_OMITTED = object()


def template_omitting_undefined(templar, value):
    """``value`` templated as ansible-core hands a ``with_<lookup>`` loop's
    terms to a plugin that takes undefined ones (``first_found``'s
    ``_recurse_terms`` with ``omit_undefined``): a term, list item or dict
    value whose template met an undefined value is left out, at any depth."""
    with _OmittingMarkers():
        templated = templar.template(value)
    kept = _omit_undefined(templated)
    return [] if kept is _OMITTED else kept


def _omit_undefined(value):
    if isinstance(value, str):
        return _OMITTED if _OmittingMarkers.TOKEN in value else value
    if isinstance(value, dict):
        pairs = ((k, _omit_undefined(v)) for k, v in value.items())
        return {k: v for k, v in pairs if v is not _OMITTED}
    if isinstance(value, (list, tuple)):
        kept = [v for v in map(_omit_undefined, value) if v is not _OMITTED]
        return tuple(kept) if isinstance(value, tuple) else kept
    return value


def _markers():
    return getattr(LOCAL, "markers", None)


# -- conversion of results to builtins ---------------------------------------------


def to_builtin(value, source=None):
    """``value`` with lazy containers, tuples, sets and iterators made builtin.

    Templates every still-untemplated nested value; an Undefined anywhere
    raises :class:`UndefinedVariableError`. This is the finalization of a
    template's value: a :class:`GroupTuple` becomes a list, recorded for
    Ansible's warning (:class:`StorageConversions`) with ``source``, the text
    of the template that gave it (a lazy container's item: its own).
    """
    return _builtin(value, _STORE, source)


#: The str subclasses a template's value keeps (ansible-core's tags on a value).
_KEPT_TEXT = frozenset((TrustedText, UntrustedText, VaultedText))

#: What :func:`_builtin` makes of a GroupTuple: a list, recorded (a template's
#: final value); itself (a filter's argument); a list (a plugin's argument,
#: which crosses to the controller).
_STORE, _ARG, _PLAIN = range(3)


def _builtin(value, mode, source):
    if value is None or type(value) in (str, int, bool, float):
        return value
    if isinstance(value, Undefined):
        markers = _markers()
        if markers is not None:
            return markers.replace(value)
        _fail_undefined(value)
    if isinstance(value, str):
        if value.__class__ in _KEPT_TEXT:
            return value  # (ansible-core's template of one value keeps its tags)
        if value.__class__ is DeprecatedText:
            value.read()
        return str.__str__(value)
    if isinstance(value, _AnsibleLazyTemplateDict):
        return {_builtin(k, mode, source): _builtin(v, mode, value.item_source(k, source))
                for k, v in value.items()}
    if isinstance(value, collections.abc.Mapping):
        return {_builtin(k, mode, source): _builtin(v, mode, source) for k, v in value.items()}
    if isinstance(value, (bytes, bytearray)):
        return value
    if isinstance(value, _AnsibleLazyTemplateList):
        return [_builtin(v, mode, value.item_source(i, source)) for i, v in enumerate(value)]
    if value.__class__ is GroupTuple:
        if mode == _ARG:
            return GroupTuple(_builtin(value.grouper, mode, source),
                              _builtin(value.list, mode, source))
        if mode == _STORE:
            recorder = getattr(LOCAL, "storage", None)
            if recorder is not None:
                recorder.add(unsupported_in_storage(value, list), source)
    if mode == _ARG and isinstance(value, tuple):  # (a filter's tuples reach the next one)
        return tuple(_builtin(v, mode, source) for v in value)
    if isinstance(value, jinja2.environment.TemplateModule):
        try:  # (an imported template as a value: its text, as finalizing makes it)
            return "".join(map(str, value._body_stream))
        except jinja2.UndefinedError as exc:
            raise _translate(exc, source) from None
    if isinstance(value, (list, tuple, set, frozenset,
                          collections.abc.Iterator, collections.abc.MappingView,
                          types.GeneratorType)):
        return [_builtin(v, mode, source) for v in value]
    return value


#: The filters that are given an undefined argument (ansible-core's
#: ``accept_args_markers``); any other returns the first one it is given.
_TAKE_UNDEFINED = frozenset(("default", "d", "mandatory", "ternary", "type_debug"))


def _filter_plugin(name, func):
    """``func`` as ansible-core runs a filter plugin: an exception it raises
    fails the template as "The filter plugin '<name>' failed: <error>", named
    as the template wrote it (in ``ansible.builtin``); an undefined value it
    met stays that (its own error)."""
    fqcn = name if "." in name else "ansible.builtin." + name

    @functools.wraps(func)
    def call(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (TemplateError, jinja2.UndefinedError, RecursionError):
            raise
        except Exception as exc:
            raise _plugin_error("filter", fqcn, exc) from None

    return call


def _plugin_error(kind, fqcn, exc):
    """"The <kind> plugin '<fqcn>' failed: <exc>"; ``plugin`` ([its first part,
    the plugin's own words, the text of the value its error is about, its help
    text]) when the plugin's error is about a value (``obj``) or says what to
    do: ansible-core shows that as a "caused by" part of its own, whose
    ``Origin: <unknown>`` is a value no origin is known of (a template's
    constant)."""
    error = TemplateError("The %s plugin '%s' failed: %s" % (kind, fqcn, exc))
    obj, help_text = getattr(exc, "obj", None), getattr(exc, "help_text", None)
    if obj is not None or help_text:
        # (a vault value's text never travels: its origin says which it is)
        text = None if obj is None or obj.__class__ is VaultedText else str(obj)
        error.plugin = ["The %s plugin '%s' failed" % (kind, fqcn), str(exc), text, help_text,
                        getattr(obj, "origin", None) or None]
    return error


def _undefined_through(func):
    """Wrap a filter as ansible-core invokes a plugin that does not accept
    markers: given an undefined argument (at the top level), it is not called
    and that argument is its value (``not_defined | map('upper') is undefined``;
    used any further, it fails as that undefined value)."""
    skip = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        for value in itertools.chain(args[skip:], kwargs.values()):
            if isinstance(value, Undefined):
                return value
        return func(*args, **kwargs)

    return wrapper


def _listing(func):
    """Wrap a filter so a generator it returns is a list, as Ansible's plugin
    wrapper makes it: ``reject(...) | length`` works."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        result = func(*args, **kwargs)
        return list(result) if isinstance(result, types.GeneratorType) else result

    return wrapper


def _now(utc=False, fmt=None):
    """Ansible's ``now()``: the current datetime (naive; UTC with ``utc``),
    formatted by ``fmt`` when given."""
    if utc:
        value = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    else:
        value = datetime.datetime.now()
    return value.strftime(fmt) if fmt else value


def _materializing(func):
    """Wrap a filter so it receives builtins instead of lazy containers."""
    skip = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        args = args[:skip] + tuple(_arg_to_builtin(a) for a in args[skip:])
        kwargs = {k: _arg_to_builtin(v) for k, v in kwargs.items()}
        return func(*args, **kwargs)

    return wrapper


def _arg_to_builtin(value):
    if isinstance(value, Undefined):
        return value
    return _builtin(value, _ARG, None)


def _finalize_filter(value):
    """``ansible._protomatter.finalize``: the value as a template's final value
    is finalized (ansible-core's test filter), here within the template being run."""
    recorder = getattr(LOCAL, "storage", None)
    return to_builtin(value, recorder.sources[-1] if recorder is not None and recorder.sources
                      else None)


# -- lazy containers ----------------------------------------------------------------


class _AnsibleLazyTemplateDict(collections.abc.Mapping):
    """A raw mapping whose values are templated when first read.

    Named as Ansible's lazy dict: Python's own error messages name the type
    (``unsupported operand type(s) for +: '_AnsibleLazyTemplateDict' ...``)."""

    __slots__ = ("_raw", "_templar", "_done", "_active", "_keys", "_var", "_results")
    __hash__ = None

    def __init__(self, raw, templar, var=None, results=False):
        self._raw = raw
        self._templar = templar
        #: The variable whose raw value this is (where a failing template was written).
        self._var = var
        #: A result's (see :class:`Results`): only its TrustedText is templated.
        self._results = results
        self._done = {}
        self._active = set()
        #: templated key -> raw key, or None when no key is a template.
        self._keys = None
        if not results and any(isinstance(k, str) and is_template(k) for k in raw):
            self._keys = {to_builtin(templar.lazy(k)): k for k in raw}

    def __getitem__(self, key):
        try:
            return self._done[key]
        except KeyError:
            pass
        raw_key = key if self._keys is None else self._keys[key]
        results = self._results
        if self._raw.__class__ is collections.ChainMap:
            # variables seen as one mapping (hostvars[host], vars): each is
            # taken as its layer has it, a result's text never templated
            found = _find(self._raw, raw_key)
            if found is None:
                raise KeyError(key)
            raw, layer = found
            if layer is not None:
                if layer.__class__ is not Results or not layer.holds_template(raw_key, raw):
                    self._done[key] = raw
                    return raw
                results = True
        else:
            raw = self._raw[raw_key]
        if key in self._active:
            raise _recursion_error(raw)
        self._active.add(key)
        templar = self._templar
        outer, templar._current = templar._current, self._var
        try:
            value = templar.lazy(raw, results)
        finally:
            self._active.discard(key)
            templar._current = outer
        self._done[key] = value
        return value

    def __contains__(self, key):
        try:
            return key in (self._raw if self._keys is None else self._keys)
        except TypeError:
            return False

    def __iter__(self):
        return iter(self._raw if self._keys is None else self._keys)

    def __len__(self):
        return len(self._raw)

    def __repr__(self):
        return repr(_builtin(self, _ARG, None))

    __str__ = __repr__

    def copy(self):
        return _builtin(self, _ARG, None)

    def item_source(self, key, source):
        """The text of the template item ``key`` was written as, else ``source``."""
        raw = self._raw[key if getattr(self, "_keys", None) is None else self._keys[key]]
        return raw if isinstance(raw, str) and is_template(raw) else source


class _AnsibleLazyTemplateList(collections.abc.Sequence):
    """A raw list whose items are templated when first read (named as Ansible's)."""

    __slots__ = ("_raw", "_templar", "_done", "_var", "_results")
    __hash__ = None

    def __init__(self, raw, templar, var=None, results=False):
        self._raw = raw
        self._templar = templar
        self._done = {}
        self._var = var
        self._results = results  # (see _AnsibleLazyTemplateDict)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._raw)))]
        if index < 0:
            index += len(self._raw)
        try:
            return self._done[index]
        except KeyError:
            pass
        templar = self._templar
        outer, templar._current = templar._current, self._var
        try:
            value = templar.lazy(self._raw[index], self._results)
        finally:
            templar._current = outer
        self._done[index] = value
        return value

    def __len__(self):
        return len(self._raw)

    def __eq__(self, other):
        if isinstance(other, (list, _AnsibleLazyTemplateList)):
            return list(self) == list(other)
        return NotImplemented

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __add__(self, other):
        return list(self) + list(other)

    def __radd__(self, other):
        return list(other) + list(self)

    def __mul__(self, count):
        return list(self) * count

    def __repr__(self):
        return repr(_builtin(self, _ARG, None))

    __str__ = __repr__

    def copy(self):
        return _builtin(self, _ARG, None)

    def item_source(self, key, source):
        """The text of the template item ``key`` was written as, else ``source``."""
        raw = self._raw[key if getattr(self, "_keys", None) is None else self._keys[key]]
        return raw if isinstance(raw, str) and is_template(raw) else source


def _recursion_error(raw):
    return TemplateError("recursive loop detected in template string: %s" % (raw,))


# -- the environment ---------------------------------------------------------------


#: The names a template calls lookups by.
_LOOKUP_FUNCTIONS = ("lookup", "query", "q")


#: ansible-core's ``undef()`` without a hint says this.
UNDEF_DEFAULT = "Mandatory variable has not been overridden"


def _undef(hint=None):
    """ansible-core's ``undef()`` global: an undefined value (a variable that
    must be overridden) whose use fails with ``hint``, or its own words."""
    if isinstance(hint, Undefined):
        _fail_undefined(hint)
    if hint is not None and not isinstance(hint, str):
        raise TemplateError("The 'hint' argument must be of type 'str' or 'NoneType', not %r."
                            % (_native_type_name(hint),))
    return _StrictUndefined(hint=hint) if hint else _SourcelessUndefined(hint=UNDEF_DEFAULT)


class _SourcelessUndefined(_StrictUndefined):
    """``undef()``'s value without a hint: its error names no variable whose
    template gave it (ansible-core's marker has no template source)."""

    __slots__ = ()

    def _fail_with_undefined_error(self, *args, **kwargs):
        error = UndefinedVariableError(self._undefined_message)
        error.variable = ""  # (not None: no enclosing variable is named either)
        raise error


class _VariableUndefinedError(jinja2.UndefinedError):
    """Jinja's error for a :func:`_undefined_variable` used: ``variable`` is
    the variable whose template met the undefined value (where the error is)."""

    def __init__(self, message, variable):
        jinja2.UndefinedError.__init__(self, message)
        self.variable = variable


def _undefined_variable(exc):
    """The value of a variable whose template met an undefined value (``exc``):
    as ansible-core (2.14+) templates variables lazily, ``default`` and ``is
    defined`` see it as undefined, and any other use fails with that error,
    about the variable whose template met it."""
    variable = getattr(exc, "variable", None)
    return _StrictUndefined(hint=str(exc),
                            exc=lambda message: _VariableUndefinedError(message, variable))


def _lookup_on_target(*args, **kwargs):
    raise TemplateError(
        "lookup plugins run on the controller; lookup()/query() cannot be "
        "used in a template evaluated on the target")


def _finalize(value):
    """Ansible renders None as an empty string inside a larger template (and,
    under :class:`ReplacingMarkers`, an undefined value as its replacement).
    A container part that holds an undefined value fails as that value
    (``{{ [{'key': undefined}] }} text``: ansible-core finalizes each part)."""
    if isinstance(value, Undefined):
        markers = _markers()
        if markers is not None:
            return markers.replace(value)
    elif isinstance(value, (list, tuple, dict)) and _markers() is None:
        nested = _nested_undefined(value)
        if nested is not None:
            _fail_undefined(nested)
    return "" if value is None else value


class _Context(jinja2.runtime.Context):
    """Jinja's context whose ``get_all`` (an ``{% import ... with context %}``, a
    macro's caller) layers its variables instead of copying them, as ansible-core's
    ``AnsibleContext`` does: a copy would read (and template, and warn about)
    every variable of the host."""

    def get_all(self):
        layers = [layer for layer in (self.vars, self.parent) if layer]
        return collections.ChainMap({}, *layers)

    def derived(self, locals=None):
        context = _shared_context(self.environment, self.name, {}, self.get_all(), locals)
        context.eval_ctx = self.eval_ctx
        context.blocks.update((k, list(v)) for k, v in self.blocks.items())
        return context


def _shared_context(environment, name, blocks, variables, locals, globals=None):
    """Jinja's ``new_context(shared=True)`` with ``locals`` layered over the
    variables rather than merged into a copy of them (see :class:`_Context`)."""
    layer = {k: v for k, v in (locals or {}).items() if v is not jinja2.utils.missing}
    parent = collections.ChainMap(layer, variables) if layer else variables
    return environment.context_class(environment, parent, name, blocks, globals=globals)


class _Template(jinja2.Template):
    """Jinja's template whose contexts for an include or import with context
    layer the includer's variables (:func:`_shared_context`)."""

    def new_context(self, vars=None, shared=False, locals=None):
        if shared and vars is not None:
            return _shared_context(self.environment, self.name, self.blocks, vars, locals,
                                   self.globals)
        return jinja2.Template.new_context(self, vars, shared, locals)


def _nested_undefined(value):
    """The first undefined value inside a plain container ``value``, or None
    (a lazy container's own text templates, and fails on, its items)."""
    if isinstance(value, Undefined):
        return value
    if isinstance(value, dict):
        items = [v for pair in value.items() for v in pair]
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        return None
    for item in items:
        found = _nested_undefined(item)
        if found is not None:
            return found
    return None


class _EscapingLexer(jinja2.lexer.Lexer):
    """ansible-core's ``AnsibleLexer``: the backslashes of a string constant
    inside ``{{ }}`` are doubled before Jinja reads its escapes, so a
    playbook's ``'\\1'`` is a backslash and a 1 (a regex backreference), as
    in the YAML around it; not in ``{% %}``, an expression (a conditional)
    or a template file (:func:`_text_environment`)."""

    def tokeniter(self, *args, **kwargs):
        in_variable = False
        for token in super().tokeniter(*args, **kwargs):
            kind = token[1]
            if kind == jinja2.lexer.TOKEN_VARIABLE_BEGIN:
                in_variable = True
            elif kind == jinja2.lexer.TOKEN_VARIABLE_END:
                in_variable = False
            elif in_variable and kind == jinja2.lexer.TOKEN_STRING:
                token = token[0], kind, token[2].replace("\\", "\\\\")
            yield token


_ESCAPING_LEXERS = {}


class _Environment(jinja2.Environment):
    """The runner's Environment: a playbook's templates are lexed as
    ansible-core lexes them (:class:`_EscapingLexer`) unless
    ``escape_backslashes`` is off (a template file's overlay)."""

    escape_backslashes = True

    @property
    def lexer(self):
        if not self.escape_backslashes:
            return jinja2.lexer.get_lexer(self)
        key = (self.block_start_string, self.block_end_string, self.variable_start_string,
               self.variable_end_string, self.comment_start_string, self.comment_end_string,
               self.line_statement_prefix, self.line_comment_prefix, self.trim_blocks,
               self.lstrip_blocks, self.newline_sequence, self.keep_trailing_newline)
        lexer = _ESCAPING_LEXERS.get(key)
        if lexer is None:
            lexer = _ESCAPING_LEXERS[key] = _EscapingLexer(self)
        return lexer


@functools.lru_cache(maxsize=None)
def environment():
    """The process-wide jinja2 Environment with Ansible's settings."""
    env = _Environment(
        trim_blocks=True,
        # As Ansible's: the lexer drops a single trailing newline (so that
        # "{{ expr }}\n", a YAML block scalar's, is one expression with its
        # native value), and _render puts back the newlines a text lost.
        keep_trailing_newline=False,
        autoescape=False,
        undefined=_StrictUndefined,
        finalize=_finalize,
        extensions=[jinja2.ext.do, jinja2.ext.loopcontrols],
    )
    env.context_class = _Context
    env.template_class = _Template
    env.filters.update(FILTERS)
    env.filters["ansible._protomatter.finalize"] = _finalize_filter
    for name, func in list(env.filters.items()):
        if name not in _KEEP_LAZY:
            func = _materializing(func)
        func = _listing(func)
        if name.replace("ansible.builtin.", "", 1) not in _TAKE_UNDEFINED:
            func = _undefined_through(func)
        env.filters[name] = _filter_plugin(name, func)
    env.tests.update({name: _test_plugin(name, func) for name, func in TESTS.items()})
    env.globals.update(lookup=_lookup_on_target, query=_lookup_on_target,
                       q=_lookup_on_target, now=_now, undef=_undef)
    env.globals[_CONST] = _embedded_const
    return env


class _NativeCodeGenerator(NativeCodeGenerator):
    """Jinja's native code generator with ansible-core 2.21's constants: text
    written in a template stays text (Jinja's would literal_eval "1" to 1)."""

    def _output_const_repr(self, group):
        group = list(group)
        if len(group) == 1:
            return repr(group[0])
        return repr("".join(map(str, group)))


def _native_finalize(value):
    """:func:`_finalize` keeping None (the concat drops it, as Ansible's)."""
    if value is None:
        return None
    return _finalize(value)


def _native_concat(values):
    """The value of a template of several parts, as ansible-core 2.21's
    ``AnsibleEnvironment.concat`` gives it: None parts dropped, then no part:
    None; one: that part's own value (``{% for x in [1] %}{{ x }}{% endfor %}``
    is 1); more: their text, joined. An undefined part fails as it would as text."""
    parts = []
    for value in values:
        if value is None:
            continue
        if isinstance(value, Undefined):
            str(value)  # (raises: a strict undefined has no text)
        parts.append(value)
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    return "".join(map(str, parts))


@functools.lru_cache(maxsize=None)
def _native_environment():
    """:func:`environment` for templates of several parts, whose value is
    native (see :func:`_native_concat`)."""
    env = environment().overlay(finalize=_native_finalize)
    env.code_generator_class = _NativeCodeGenerator
    env.concat = _native_concat
    return env


def _test_plugin(name, func):
    """``func`` as Ansible runs a test plugin: a value it cannot judge fails
    "The test plugin '<name>' failed: <why>", named as the template wrote it
    (in ``ansible.builtin``), not as a template's rendering error; a call it
    leaves to Ansible's own plugin (:class:`ControllerAnswers`) goes to the
    controller."""
    fqcn = name if "." in name else "ansible.builtin." + name

    @functools.wraps(func)
    def call(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except ControllerAnswers:
            return _foreign("test", fqcn)(*args, **kwargs)
        except TestError as exc:
            raise _plugin_error("test", fqcn, exc) from None
    return call


#: A template's first line that changes the Jinja settings it is rendered
#: with (ansible-core's ``JINJA2_OVERRIDE``), and the settings it may name.
JINJA2_OVERRIDE = "#jinja2:"
_OVERRIDE_FIELDS = frozenset((
    "block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
    "comment_start_string", "comment_end_string", "line_statement_prefix",
    "line_comment_prefix", "trim_blocks", "lstrip_blocks", "newline_sequence",
    "keep_trailing_newline"))


def template_overrides(source, overrides=None):
    """``source`` without its ``#jinja2: key: value, ...`` first line, and
    ``overrides`` (a template action's options) with that line's settings
    over them: ansible-core's ``_extract_template_overrides`` (each value a
    Python literal). A malformed line, or start strings that are not all
    different, is ansible-core's "Syntax error in template" (TemplateError)."""
    settings = dict(overrides or {})
    try:
        if source.startswith(JINJA2_OVERRIDE):
            eol = source.find("\n")
            if eol == -1:
                raise ValueError("Missing newline after %r override." % JINJA2_OVERRIDE)
            line, source = source[len(JINJA2_OVERRIDE):eol], source[eol + 1:]
            for pair in line.split(","):
                if not pair.strip():
                    raise ValueError("Empty %r override pair not allowed." % JINJA2_OVERRIDE)
                if ":" not in pair:
                    raise ValueError("Missing key-value separator `:` in %r override pair %r."
                                     % (JINJA2_OVERRIDE, pair))
                key, value = pair.split(":", 1)
                key = key.strip()
                if key not in _OVERRIDE_FIELDS:
                    raise ValueError("Invalid %r override key %r." % (JINJA2_OVERRIDE, key))
                # (leading blanks stripped, as Python 3.10+'s literal_eval does)
                settings[key] = ast.literal_eval(value.lstrip(" \t"))
        starts = [settings.get(name, default) for name, default in (
            ("block_start_string", "{%"), ("variable_start_string", "{{"),
            ("comment_start_string", "{#"))]
        if len(set(starts)) != 3:
            raise ValueError("Block, variable and comment start strings must be different.")
    except (ValueError, SyntaxError) as exc:
        raise TemplateError("Syntax error in template: %s" % exc) from None
    return source, settings


@functools.lru_cache(maxsize=32)
def _text_environment(overrides):
    """An overlay of :func:`environment` for whole-file templates (``overrides`` sorted items)."""
    settings = {"trim_blocks": True, "keep_trailing_newline": False}
    settings.update(overrides)
    env = environment().overlay(**settings)
    env.escape_backslashes = False  # (Ansible's template action: escape_backslashes=False)
    return env


def _trailing_newlines(text):
    """How many '\\n' end ``text``."""
    return len(text) - len(text.rstrip("\n"))


# -- plugins ioc does not have: answered by the controller ----------------------------

#: Per thread: ``call(kind, name, args, kwargs)`` that runs a plugin ioc lacks
#: (the runner's channel to the controller, see ``batch.run_batch``).
_CALLER = threading.local()
#: The process-wide fallback (on the controller: Ansible's plugins, directly).
_DEFAULT_CALLER = [None]


def use_plugin_caller(call, default=False):
    """Route calls of foreign plugins to ``call`` in this thread (or, with
    ``default``, in every thread that set none)."""
    if default:
        _DEFAULT_CALLER[0] = call
    else:
        _CALLER.call = call


def declare_foreign(kind, names):
    """Make each of ``names`` (``kind`` is ``filter`` or ``test``) a stand-in that
    the controller answers (``ioc.controller.plugins``). ioc's own stay."""
    env = environment()
    table = env.filters if kind == "filter" else env.tests
    for name in names:
        if name not in table:
            table[name] = _foreign(kind, name)


def _foreign(kind, name):
    def proxy(*args, **kwargs):
        call = getattr(_CALLER, "call", None) or _DEFAULT_CALLER[0]
        if call is None:
            raise TemplateError("the %s plugin %r runs on the controller, which this "
                                "template cannot reach" % (kind, name))
        args = [_plugin_arg(a) for a in args]
        kwargs = dict((k, _plugin_arg(v)) for k, v in kwargs.items())
        try:
            return call(kind, name, args, kwargs)
        except TemplateError:
            raise
        except Exception as exc:
            raise TemplateError(str(exc)) from None
    proxy.__name__ = name
    return proxy


def _plugin_arg(value):
    """Only builtins cross to the controller; an undefined argument fails here,
    as Ansible fails a plugin given one."""
    if isinstance(value, Undefined):
        _fail_undefined(value)
    return _builtin(value, _PLAIN, None)


def known_filters():
    """Names of every filter a template may use."""
    return frozenset(environment().filters)


def known_tests():
    """Names of every test a template may use."""
    return frozenset(environment().tests)


class _Compiled(object):
    """A compiled template; ``native`` when its value is read from _RESULT."""

    __slots__ = ("template", "native")

    def __init__(self, template, native):
        self.template = template
        self.native = native


def _native_template(env, expr):
    """A template that stores the value of ``expr`` in the _RESULT variable."""
    assign = nodes.Assign(nodes.Name(_RESULT, "store"), expr)
    root = nodes.Template([assign])
    root.set_lineno(1)
    root.set_environment(env)
    return env.from_string(root)


#: The Jinja globals that call a lookup plugin (the first argument names it).
_LOOKUP_CALLS = ("lookup", "query", "q")
#: The global :func:`_embedded_const` is known by in compiled templates.
_CONST = "__ioc_const"


def _embedded_consts(node, conditional, term=False):
    """``node`` (a parsed template or expression) with each Jinja constant
    string holding a template replaced by a call of :func:`_embedded_const`,
    where ansible-core 2.21 templates it (its ``visit_Const`` and
    ``_access_const``): every one in a conditional expression; elsewhere only
    a lookup's terms (its arguments but the plugin's name, and the items of a
    list, tuple or dict written there). Rewrites ``node`` in place."""
    if isinstance(node, nodes.Const):
        if type(node.value) is str and is_template(node.value) and (conditional or term):
            call = nodes.Call(nodes.Name(_CONST, "load"),
                              [node, nodes.Const(conditional)], [], None, None)
            call.set_lineno(node.lineno)
            return call
        return node
    lookup = not conditional and isinstance(node, nodes.Call) \
        and isinstance(node.node, nodes.Name) and node.node.name in _LOOKUP_CALLS
    container = isinstance(node, (nodes.List, nodes.Tuple, nodes.Dict, nodes.Pair))
    for field, value in node.iter_fields():
        if isinstance(value, nodes.Node):
            inner = term and container and not (isinstance(node, nodes.Pair) and field == "key")
            setattr(node, field, _embedded_consts(value, conditional, inner))
        elif isinstance(value, list):
            setattr(node, field, [
                _embedded_consts(v, conditional,
                                 (lookup and field == "args" and number > 0)
                                 or (term and container))
                if isinstance(v, nodes.Node) else v
                for number, v in enumerate(value)])
    return node


def undefined(message):
    """An undefined value that fails with ``message`` where it is used."""
    return environment().undefined(hint=message)


@jinja2.pass_context
def _embedded_const(context, value, conditional):
    """The value of a Jinja constant string that holds a template, where
    ansible-core 2.21 templates it (see :func:`_embedded_consts`): templated
    with the variables of the template it is in, and recorded for the warning
    2.21 gives of each (:class:`ConstTemplates`)."""
    consts = getattr(LOCAL, "consts", None)
    if consts is not None:
        consts.add(conditional)
    templar = getattr(context.parent, "_templar", None)
    if templar is None:
        return value
    try:
        return templar.lazy(value)
    except UndefinedVariableError as exc:  # 2.21's marker: fails where it is used (a
        return undefined(str(exc))        # lookup that accepts markers takes it)


@functools.lru_cache(maxsize=4096)
def _compile_template(source, overrides=()):
    """``overrides``: a ``#jinja2:`` line's settings (sorted items)."""
    env, native = environment(), _native_environment()
    if overrides:
        env, native = env.overlay(**dict(overrides)), native.overlay(**dict(overrides))
    return _compile_in(env, native, source)


@functools.lru_cache(maxsize=32)
def _file_environments(overrides):
    """:func:`environment` and :func:`_native_environment` for a template
    file whose value is native (the ``template`` lookup's: backslashes as
    written), with ``overrides`` (sorted items)."""
    env = environment().overlay(**dict(overrides))
    native = _native_environment().overlay(**dict(overrides))
    env.escape_backslashes = native.escape_backslashes = False
    return env, native


def _compile_in(env, native, source):
    """``source`` compiled in ``env``; its value native (``native``'s) unless
    it is one expression, whose value is the expression's."""
    root = _embedded_consts(env.parse(source), False)
    body = root.body
    if (len(body) == 1 and isinstance(body[0], nodes.Output)
            and len(body[0].nodes) == 1
            and not isinstance(body[0].nodes[0], nodes.TemplateData)):
        return _Compiled(_native_template(env, body[0].nodes[0]), True)
    return _Compiled(native.from_string(root), False)


@functools.lru_cache(maxsize=4096)
def _compile_expression(source, conditional=False):
    """A bare expression, compiled; ``conditional``: a conditional expression,
    whose constant strings that hold templates are templated."""
    env = environment()
    parser = Parser(env, source, state="variable")
    expr = parser.parse_expression()
    if not parser.stream.eos:
        raise jinja2.TemplateSyntaxError(
            "chunk after expression", parser.stream.current.lineno, None, None)
    return _Compiled(_native_template(env, _embedded_consts(expr, conditional)), True)


def _translate(exc, source, kind="template"):
    """The TemplateError a user sees for a jinja or Python exception.

    ``kind`` is "template" or "expression" (a bare expression: a condition,
    ``evaluate``). A Python error raised while rendering is Ansible's
    "Error rendering <kind>." with the exception as its cause, which the
    error chain shows as "Error rendering <kind>: <exception>"."""
    if isinstance(exc, jinja2.UndefinedError):
        error = UndefinedVariableError(str(exc))
        error.variable = getattr(exc, "variable", None)  # (a variable's undefined value's)
        return error
    if isinstance(exc, RecursionError):
        return _recursion_error(source)
    if isinstance(exc, jinja2.TemplateError):
        message = exc.message or str(exc)
        unknown = _UNKNOWN_PLUGIN.match(message)
        if unknown:
            message = 'Could not load "%s": \'%s\'' % (unknown.group(2), message)
        return TemplateError("template error while templating string: %s. String: %s"
                             % (message, source))
    return TemplateError("Error rendering %s: %s" % (kind, exc))


class ShippedLoader(jinja2.BaseLoader):
    """Jinja's ``FileSystemLoader`` over the controller's template search path for
    a template file ``src``, answered from the files the controller found there
    and shipped (``shipped``: ``{"searchpath": [...], "files": {name: entry}}``,
    ``ioc.controller.payloads._template_loader``)."""

    def __init__(self, shipped, src):
        self.files = shipped.get("files") or {}
        self.searchpath = shipped.get("searchpath") or []
        self.src = src

    def get_source(self, environment, template):
        found = self.files.get(template)
        if found is None:
            raise jinja2.TemplateError(
                "ioc: the template %r that %s names is not known before the task runs "
                "(a name built by an expression): the controller ships the templates a "
                "template names as constants" % (template, self.src))
        if found.get("kind") == "error":
            raise jinja2.TemplateError(found["msg"])
        if found.get("kind") != "file":
            raise jinja2.TemplateNotFound(template, "%r not found in search path%s: %s" % (
                template, "s" if len(self.searchpath) != 1 else "",
                ", ".join(repr(p) for p in self.searchpath)))
        try:
            text = found["content"].decode("utf-8")
        except UnicodeDecodeError:
            raise jinja2.TemplateError("Template source files must be utf-8 encoded")
        return text, found.get("path"), lambda: True


def file_loader(searchpath):
    """Jinja's loader of the templates a template file includes, imports or
    extends, over the directories ``searchpath`` (the controller's, where the
    files are: the ``template`` lookup's)."""
    return jinja2.FileSystemLoader(searchpath)


def find_template(searchpath, name):
    """The file Jinja's ``FileSystemLoader`` over ``searchpath`` finds for ``name``
    (the first), or None."""
    try:
        pieces = jinja2.loaders.split_template_path(name)
    except jinja2.TemplateNotFound:
        return None
    for directory in searchpath:
        candidate = os.path.join(directory, *pieces)
        if os.path.isfile(candidate):
            return candidate
    return None


def referenced_templates(text):
    """The names a template ``text`` includes, imports or extends as constants
    (Jinja's ``meta.find_referenced_templates``; names built by an expression are
    not known before rendering); none when it is no Jinja text with the default
    delimiters (rendering says what is wrong with it)."""
    try:
        parsed = environment().parse(text)
    except jinja2.TemplateError:
        return []
    return [name for name in jinja2.meta.find_referenced_templates(parsed)
            if isinstance(name, str)]


def _file_error(exc, source):
    """:func:`_translate` for a template file (``render_text``), as ansible-core's
    ``create_template_error`` words it: "Syntax error in template: <jinja's
    message>" for what Jinja cannot compile (``lineno``: its line), an
    undefined variable's own message, "Error rendering template: <error>" for
    anything else (a template it includes that is found nowhere too)."""
    if isinstance(exc, jinja2.TemplateSyntaxError):
        error = TemplateError("Syntax error in template: %s" % (exc.message or exc))
        error.lineno = exc.lineno
        return error
    if isinstance(exc, (jinja2.UndefinedError, RecursionError)):
        return _translate(exc, source)
    if isinstance(exc, jinja2.TemplateError):
        return TemplateError("Error rendering template: %s" % (exc.message or exc))
    return _translate(exc, source)


# -- the Templar -------------------------------------------------------------------


class _Scope(collections.abc.Mapping):
    """What a template's context sees: the variables, lazily, then the globals."""

    __slots__ = ("_templar", "_globals")

    def __init__(self, templar, env_globals):
        self._templar = templar
        self._globals = env_globals

    def __getitem__(self, key):
        try:
            return self._templar.variable(key)
        except KeyError:
            return self._globals[key]

    def __contains__(self, key):
        return self._templar.has_variable(key) or key in self._globals

    def __iter__(self):
        return iter(set(self._templar.variable_names()) | set(self._globals))

    def __len__(self):
        return len(set(self._templar.variable_names()) | set(self._globals))


def _find(mapping, key):
    """``(value, layer)`` for ``key`` in ``mapping``, or None if absent: ``layer``
    is the Verbatim layer that holds it, None if its value is raw."""
    if isinstance(mapping, collections.ChainMap):
        for layer in mapping.maps:
            found = _find(layer, key)
            if found is not None:
                return found
        return None
    if key in mapping:
        return mapping[key], mapping if isinstance(mapping, Verbatim) else None
    return None


class Templar(object):
    """Templates values against one host's raw variables.

    ``variables`` is a read-only Mapping (typically a ChainMap of layers,
    highest precedence first). It is never copied; only the keys a template
    reads are touched, and their templated values are cached on this Templar.
    """

    def __init__(self, variables):
        self._variables = variables
        self._cache = {}
        self._resolving = set()
        self._scope = _Scope(self, environment().globals)
        #: The variable whose raw value is being templated (None: the caller's own value).
        self._current = None

    # -- public API

    @property
    def variables(self):
        """The raw (untemplated) variables this Templar reads."""
        return self._variables

    def template(self, value):
        """``value`` with every template in it evaluated, as builtins.

        Strings without markers come back unchanged (the same object); a
        string that is exactly one ``{{ expr }}`` yields the native value.
        """
        if isinstance(value, str) and not is_template(value):
            return value
        return to_builtin(self.lazy(value), value if isinstance(value, str) else None)

    def evaluate(self, expression, conditional=False):
        """The native value of a bare jinja ``expression`` (no braces);
        ``conditional``: a conditional expression (its constant strings that
        hold templates are templated, as ansible-core 2.21 does)."""
        try:
            compiled = _compile_expression(expression, conditional)
        except jinja2.TemplateError as exc:
            raise _translate(exc, expression, "expression") from None
        return to_builtin(self._run(compiled, expression, "expression"), expression)

    def conditional(self, condition, origin=None, written=None):
        """Evaluate a ``when``-style condition; the result must be a bool.

        ``origin`` is where it was written (named when its value is not a
        boolean); ``written`` is that only for :class:`TemplatedConditionals`.

        A bool passes through; None and '' are true (an empty condition);
        a string is a bare expression, ``{{ }}`` around it is tolerated.
        """
        if isinstance(condition, bool):
            return condition
        if condition is None or condition == "":
            return True
        if condition.__class__ is UntrustedText:
            raise UntrustedTemplateError(condition.origin)
        if isinstance(condition, str):
            result, templated = self._condition_value(condition)
            conditionals = getattr(LOCAL, "conditionals", None)
            # (Ansible's templating of the whole condition gave no text: no expression)
            if conditionals is not None and templated:
                _record(conditionals, (condition, written or origin, None))
        else:
            result = to_builtin(self.lazy(condition))
        if not isinstance(result, bool):
            # ansible-core names where the condition was written, when known
            message = ("Conditional result (%s) was derived from value of type '%s' at "
                       "%r. Conditionals must have a boolean result."
                       % (bool(result), type(result).__name__, origin or condition))
            if not BROKEN_CONDITIONALS[0]:
                raise ConditionalResultError(message)
            conditionals = getattr(LOCAL, "conditionals", None)
            if conditionals is not None:
                _record(conditionals, (condition, written or origin, message))
            return bool(result)
        return result

    def _condition_value(self, condition):
        """The value of a condition string, as ansible-core 2.21's
        ``_normalize_and_evaluate_conditional`` gives it: a condition that is
        all template is templated (its constant strings as any template's),
        and a text it gives is the expression evaluated, when it is trusted
        (the value of a variable: ``that: '{{ item }}'``); a template made of
        several (``{{ 'a' }} == {{ 'b' }}``) gives no trusted text. Any other
        condition is a conditional expression (its constant strings that hold
        templates are templated); one that Jinja cannot parse as an expression
        because it embeds templates (``"{{ a }} == 1"``) is a syntax error. Returns ``(value, templated)``:
        ``templated`` when the condition is all template and its value no text
        (which 2.19+ deprecates)."""
        text = condition.strip()
        if _all_template(text):
            if unwrapped_condition(text):
                value = self.evaluate(text[2:-2])
                if not isinstance(value, str):
                    return value, True
                if value.__class__ is UntrustedText:
                    raise UntrustedTemplateError(value.origin)
                if not _variable_reference(text[2:-2]):
                    raise UntrustedTemplateError()
                return self.evaluate(value.strip(), conditional=True), False
            value = self.template(text)
            if isinstance(value, str):
                raise UntrustedTemplateError()
            return value, True
        if is_template(text):
            try:
                _compile_expression(text, True)
            except jinja2.TemplateSyntaxError as exc:
                # (2.19 and 2.21 never render such a condition first: an
                # untrusted value in it could run as an expression)
                raise TemplateError("Syntax error in expression. Template delimiters are not "
                                    "supported in expressions: %s" % (exc.message or exc,))
        return self.evaluate(text, conditional=True), False

    def is_template(self, value):
        """True if ``value`` holds template markers (see :func:`is_template`)."""
        return is_template(value)

    def template_with(self, extra, raw=False):
        """A Templar that sees ``extra`` over this one's variables.

        ``extra`` is layered, not copied. Its values are taken verbatim
        (loop items, registered results) unless ``raw`` is true.
        """
        layer = extra if raw else Verbatim(extra)
        return Templar(collections.ChainMap(layer, self._variables))

    def render_text(self, source, extra=None, overrides=None, loader=None):
        """Render a whole template file to a str, as Ansible's template module does.

        ``extra`` (taken verbatim, e.g. ``ansible_managed`` and the
        ``template_*`` variables) is layered over this Templar's variables.
        ``overrides`` are jinja Environment settings: ``trim_blocks``
        (default True), ``lstrip_blocks``, ``newline_sequence`` and the
        ``*_start_string``/``*_end_string`` delimiters. The result is always
        a str, never a native value, and keeps as many trailing newlines as
        ``source`` has (Ansible's ``preserve_trailing_newlines``). ``loader``
        (a jinja2 loader) finds the templates it includes, imports or extends.
        """
        templar = self.template_with(extra) if extra else self
        source, overrides = template_overrides(source, overrides)
        env = _text_environment(tuple(sorted(overrides.items())))
        if loader is not None:
            env = env.overlay(loader=loader)
            # An imported template (``{% from 'x.j2' import m %}``, no context)
            # sees the environment's globals only: the host's lookups are among
            # them, as Ansible's are globals of its environment. (overlay()
            # shares the dict: this overlay's own copy.)
            env.globals = dict(env.globals, **{name: templar._scope[name]
                                                for name in _LOOKUP_FUNCTIONS})
        try:
            template = env.from_string(source)
        except jinja2.TemplateError as exc:
            raise _file_error(exc, source) from None
        context = template.new_context(templar._scope, shared=True)
        try:
            result = env.concat(template.root_render_func(context))
        except TemplateError:
            raise
        except Exception as exc:  # every other failure is the template's fault
            raise _file_error(exc, source) from None
        missing = _trailing_newlines(source) - _trailing_newlines(result)
        if missing > 0:
            result += env.newline_sequence * missing
        return result

    def template_file(self, source, overrides=None, loader=None):
        """The value of a whole template file as ansible-core's ``template``
        lookup gives it (its engine's ``template`` with backslashes as
        written): one expression's own value, else the text, with as many
        trailing newlines as ``source`` has. ``overrides`` are the lookup's
        delimiters and ``trim_blocks``, under the file's own ``#jinja2:``
        line; ``loader`` (a jinja2 loader) finds the templates it includes,
        imports or extends. Errors are worded as the template action's
        (:meth:`render_text`): "Error rendering template: ..." for one it
        includes that is found nowhere."""
        source, settings = template_overrides(source, overrides)
        env, native = _file_environments(tuple(sorted(settings.items())))
        if loader is not None:
            lookups = {name: self._scope[name] for name in _LOOKUP_FUNCTIONS}
            env, native = env.overlay(loader=loader), native.overlay(loader=loader)
            # (an imported template sees the globals only: see render_text)
            env.globals = dict(env.globals, **lookups)
            native.globals = dict(native.globals, **lookups)
        try:
            compiled = _compile_in(env, native, source)
        except jinja2.TemplateError as exc:
            raise _file_error(exc, source) from None
        result = to_builtin(self._run(compiled, source, translate=_file_error), source)
        if isinstance(result, str):
            missing = _trailing_newlines(source) - _trailing_newlines(result)
            if missing > 0:
                result += env.newline_sequence * missing
        return result

    # -- used by the lazy scope and containers

    def variable(self, name):
        """The templated value of variable ``name`` (lazy containers inside)."""
        try:
            return self._cache[name]
        except KeyError:
            pass
        found = _find(self._variables, name)
        if found is None:
            raise KeyError(name)
        raw, layer = found
        if layer.__class__ is Deprecated:
            layer.read(name)
            # (not cached: each template that reads it must say so; ``vars``,
            # every variable, is read as each one's layer has it)
            return self.lazy(raw) if raw.__class__ is collections.ChainMap else raw
        if layer is None or layer.__class__ is Results and layer.holds_template(name, raw):
            try:
                value = self._resolve(name, raw, results=layer is not None)
            except UndefinedVariableError as exc:  # (its reader may default it, or test it)
                value = _undefined_variable(exc)
        else:
            value = raw
        self._cache[name] = value
        return value

    def raw_variable(self, name):
        """Variable ``name`` as its layer holds it, untemplated (None: none)."""
        found = _find(self._variables, name)
        return None if found is None else found[0]

    def has_variable(self, name):
        return name in self._cache or name in self._variables

    def variable_names(self):
        return iter(self._variables)

    def lazy(self, raw, results=False):
        """``raw`` templated one level deep; containers become lazy views.
        ``results``: ``raw`` is a result's (see :class:`Results`)."""
        if isinstance(raw, str):
            if raw.__class__ is UntrustedText or results and raw.__class__ is not TrustedText:
                return raw
            return self._render(raw) if is_template(raw) else raw
        if isinstance(raw, collections.abc.Mapping):
            return _AnsibleLazyTemplateDict(raw, self, self._current, results)
        if isinstance(raw, (list, tuple)):
            return _AnsibleLazyTemplateList(raw, self, self._current, results)
        return raw

    # -- internals

    def _resolve(self, name, raw, results=False):
        if name in self._resolving:
            raise _recursion_error(raw)
        self._resolving.add(name)
        outer, self._current = self._current, name
        # (a deprecated value this template reads is reported where it was written)
        reads = getattr(LOCAL, "reads", None) if raw.__class__ is WrittenTemplate \
            and raw.origin else None
        if reads is not None:
            inner, reads.inner = reads.inner, ("at", raw.origin)
        try:
            return self.lazy(raw, results)
        except TemplateError as exc:
            if getattr(exc, "variable", None) is None:
                exc.variable = name  # the innermost variable whose value failed
            raise
        finally:
            self._resolving.discard(name)
            self._current = outer
            if reads is not None:
                reads.inner = inner

    def _render(self, source):
        overrides = ()
        if source.startswith(JINJA2_OVERRIDE):  # (any template may start with one)
            body, settings = template_overrides(source)
            source, overrides = body, tuple(sorted(settings.items()))
        try:
            compiled = _compile_template(source, overrides)
        except jinja2.TemplateError as exc:
            raise _translate(exc, source) from None
        result = self._run(compiled, source)
        if isinstance(result, str):
            # Ansible's preserve_trailing_newlines: a text ends with as many
            # newlines as its template (a native value keeps none it lost)
            missing = _trailing_newlines(source) - _trailing_newlines(result)
            if missing > 0:
                result += "\n" * missing
        return result

    def _run(self, compiled, source, kind="template", translate=None):
        """``translate(exc, source)``: the TemplateError for another failure
        (default: :func:`_translate`'s, of ``kind``)."""
        template = compiled.template
        context = template.new_context(self._scope, shared=True)
        markers = _markers()
        if markers is not None:
            markers.rendering.append((self._current, source))
        consts = getattr(LOCAL, "consts", None)
        if consts is not None:
            consts.sources.append(source)
        storage = getattr(LOCAL, "storage", None)
        if storage is not None:
            storage.sources.append(source)
        try:
            if not compiled.native:
                return template.environment.concat(template.root_render_func(context))
            for _ in template.root_render_func(context):
                pass
        except TemplateError:
            raise
        except Exception as exc:  # every other failure is the template's fault
            if translate is not None:
                raise translate(exc, source) from None
            raise _translate(exc, source, kind) from None
        finally:
            if markers is not None:
                markers.rendering.pop()
            if consts is not None:
                consts.sources.pop()
            if storage is not None:
                storage.sources.pop()
        result = context.vars[_RESULT]
        if isinstance(result, Undefined):
            if markers is not None:  # (it travels on: replaced where it ends up)
                return _as_marker(result, (self._current, source))
            _fail_undefined(result)
        return result


def unwrapped_condition(condition):
    """True when ``condition`` is one ``{{ expression }}`` that is evaluated as
    that expression (the value Ansible's templating of the whole condition
    gives, which 2.19+ deprecates when it is no text)."""
    if not isinstance(condition, str):
        return False
    text = condition.strip()
    if not (text.startswith("{{") and text.endswith("}}")):
        return False
    inner = text[2:-2]
    return not is_template(inner) and "}}" not in inner


def trusted_result(value):
    """Whether the text templating ``value`` (a task argument as written) gives
    is trusted, as ansible-core 2.21 tracks trust: text written in the playbook
    is, and so is the value of a variable (``'{{ item }}'``); a text a
    template builds (``'{{ "name" }}'``, a concatenation, a filter's) is not,
    and cannot be evaluated as an expression (debug's ``var``)."""
    if not isinstance(value, str) or not is_template(value):
        return True
    return unwrapped_condition(value) and _variable_reference(value.strip()[2:-2])


def _all_template(text):
    """ansible-core's ``is_possibly_all_template``: ``text`` starts and ends
    with Jinja delimiters."""
    return text.startswith(_MARKERS) and text.endswith(("%}", "}}", "#}"))


@functools.lru_cache(maxsize=1024)
def _variable_reference(expression):
    """Whether ``expression`` reads a variable (``item``, ``x.y``, ``x['y']``):
    the value of a variable written in a playbook is trusted, as ansible-core
    trusts it, while a text a template builds is not."""
    try:
        node = Parser(environment(), expression, state="variable").parse_expression()
    except jinja2.TemplateError:
        return False
    while isinstance(node, (nodes.Getattr, nodes.Getitem)):
        node = node.node
    return isinstance(node, nodes.Name)
