"""Lookups as the target sees them.

*Pure* lookups (``items``, ``list``, ``dict``, ``indexed_items``,
``sequence``, ``subelements``, ``nested``, ``together``, ``vars``: ansible-core's) depend only on their arguments and the host's variables, so they
run right here, also as ``with_<name>`` loops.

Every other lookup reads the *controller* (its files, its environment, its
commands: L7.6). The controller evaluates those before the batch, for this
host, with exactly the arguments the task will use, and ships the answers as
a table keyed by :func:`key`. Here ``lookup()``/``query()`` answer from that
table; a call the controller did not foresee (its arguments depend on values
produced inside the batch, which the planner should have cut before) fails
the task with a message that says so, instead of guessing. An answer that
failed before the batch (the file a lookup reads was not there yet) is asked
for again when its task runs: an earlier task may have made it.
"""
import decimal
import itertools
import json
import re

from jinja2.runtime import Undefined

from ioc.agentless_runner import context
from ioc.agentless_runner.template_errors import TemplateError, UndefinedVariableError
from ioc.agentless_runner.templating import to_builtin, undefined as _undefined

__all__ = ["PURE", "key", "Lookups", "shape"]


def key(plugin, terms, kwargs):
    """The table key of one lookup call (``wantlist`` does not change the answer)."""
    kwargs = {k: v for k, v in kwargs.items() if k not in ("wantlist", "errors")}
    return json.dumps([plugin, list(terms), kwargs], sort_keys=True, default=str)


def listify(terms):
    if isinstance(terms, (list, tuple)):
        return list(terms)
    return [terms]


# Each lookup below does what ansible-core's plugin of that name does, down to
# how it treats odd input (a string where a list is expected is iterated).


def _flatten(terms):
    """One level of flattening (Ansible's ``LookupBase._flatten``)."""
    out = []
    for term in terms:
        if isinstance(term, (list, tuple)):
            out.extend(term)
        else:
            out.append(term)
    return out


def _items(terms, variables):
    return _flatten(terms)


def _dict(terms, variables):
    out = []
    for term in terms:
        if not isinstance(term, dict):
            raise LookupFailure("the 'dict' lookup plugin expects a dictionary, got '%s' of type %s)"
                                % (term, type(term)))
        out.extend({"key": k, "value": v} for k, v in term.items())
    return out


def _indexed_items(terms, variables):
    items = _flatten(terms)
    return [[i, x] for i, x in enumerate(items)]


def _nested(terms, variables):
    if not terms:
        raise LookupFailure("with_nested requires at least one element in the nested list")
    result = terms[0]
    for more in terms[1:]:
        result = [_flatten([x, y]) for x in result for y in more]
    return [_flatten(x) for x in result]


def _together(terms, variables):
    if not terms:
        raise LookupFailure("with_together requires at least one element in each list")
    return [_flatten(row) for row in itertools.zip_longest(*terms)]


def _subelements(terms, variables):
    def fail(msg=""):
        raise LookupFailure("subelements lookup expects a list of two or three items, " + msg)
    if not 2 <= len(terms) <= 3:
        fail()
    if not isinstance(terms[0], (list, dict)) or not isinstance(terms[1], str):
        fail("first a dict or a list, second a string pointing to the subkey")
    keys = terms[1].split(".")
    if isinstance(terms[0], dict):
        if terms[0].get("skipped", False) is not False:
            return []
        elements = list(terms[0].values())
    else:
        elements = terms[0]
    flags = terms[2] if len(terms) == 3 else {}
    if not isinstance(flags, dict) and not all(isinstance(k, str) and k == "skip_missing"
                                               for k in flags):
        # (ansible-core formats its one-flag tuple with %: the flag's name alone)
        fail("the optional third item must be a dict with flags skip_missing")
    out = []
    for element in elements:
        if not isinstance(element, dict):
            raise LookupFailure("subelements lookup expects a dictionary, got '%s'" % (element,))
        if element.get("skipped", False) is not False:
            continue
        skip_missing = _boolean(flags.get("skip_missing", False))
        # Ansible pops the list out of (its copy of) the element: item.0 lacks it
        element = dict(element)
        value, sublist = element, []
        for key in keys:
            last = key == keys[-1]
            if key not in value:
                if skip_missing:
                    continue
                raise LookupFailure("could not find '%s' key in iterated item '%s'" % (key, value))
            if not last:
                if not isinstance(value[key], dict):
                    if skip_missing:
                        continue
                    raise LookupFailure("the key %s should point to a dictionary, got '%s'"
                                        % (key, value[key]))
                value[key] = dict(value[key])
                value = value[key]
            elif not isinstance(value[key], list):
                raise LookupFailure("the key %s should point to a list, got '%s'" % (key, value[key]))
            else:
                sublist = value.pop(key, [])
        out.extend([element, item] for item in sublist)
    return out


def _boolean(value):
    if isinstance(value, bool):
        return value
    return str(value).lower() in ("y", "yes", "on", "1", "true", "t", "1.0")


_NUM = "(0?x?[0-9a-f]+)"
_SHORTCUT = re.compile("^(" + _NUM + "-)?" + _NUM + "(/" + _NUM + ")?(:(.+))?$", re.I)
#: A frozenset as in Ansible: options are checked in its (hash) order, so the
#: first invalid one reported is the one Ansible reports.
_SEQUENCE_FIELDS = frozenset(("start", "end", "stride", "count", "format"))


def _sequence(terms, variables):
    out = []
    for term in terms:
        options = _sequence_options(term)
        out.extend(_one_sequence(options))
    return out


def _sequence_options(term):
    options = {"start": 1, "end": None, "stride": 1, "count": None, "format": "%d"}
    given = {}
    match = _SHORTCUT.match(term)
    if match:
        _, start, end, _, stride, _, fmt = match.groups()
        given = {k: v for k, v in (("start", start), ("end", end), ("stride", stride),
                                   ("format", fmt)) if v is not None}
    else:
        try:
            pairs = _split_kv(term)
        except Exception as exc:
            raise LookupFailure("unknown error parsing with_sequence arguments: %r. Error was: %s"
                                % (term, exc))
        unknown = [k for k in pairs if k not in _SEQUENCE_FIELDS]
        if unknown:
            raise LookupFailure("unrecognized arguments to with_sequence: %s" % unknown)
        given = pairs
    for name in _SEQUENCE_FIELDS:
        if given.get(name) is not None:
            try:
                options[name] = given[name] if name == "format" else _integer(given[name])
            except LookupFailure as exc:
                # (the plugin's options are validated by its config, which names the option)
                raise LookupFailure("Config '%s' for 'sequence' lookup plugin from 'Direct' "
                                    "has an invalid value: %s" % (name, exc)) from exc
    return options


def _split_kv(term):
    """``k=v`` words; a word without ``=`` is Ansible's ``_raw_params``."""
    pairs = {}
    raw = []
    for word in term.split():
        name, eq, value = word.partition("=")
        if eq:
            pairs[name] = value
        else:
            raw.append(word)
    if raw:
        pairs["_raw_params"] = " ".join(raw)
    return pairs


def _integer(value):
    """An option of type integer, as Ansible's config converts it."""
    if isinstance(value, int):
        return int(value)
    try:
        number = decimal.Decimal(value)
        if number == int(number):
            return int(number)
    except (decimal.InvalidOperation, ValueError, TypeError):
        pass
    raise LookupFailure("Invalid value provided for 'integer': %r" % (value,))


def _one_sequence(o):
    if o["count"] is None and o["end"] is None:
        raise LookupFailure("must specify count or end in with_sequence")
    if o["count"] is not None and o["end"] is not None:
        raise LookupFailure("can't specify both count and end in with_sequence")
    if o["count"] is not None:
        if o["count"] == 0:
            return []
        o["end"] = o["start"] + o["count"] * o["stride"] - 1
    if o["stride"] > 0 and o["end"] < o["start"]:
        raise LookupFailure("to count backwards make stride negative")
    if o["stride"] < 0 and o["end"] > o["start"]:
        raise LookupFailure("to count forward don't make stride negative")
    if o["stride"] == 0:
        return []
    if o["format"].count("%") != 1:
        raise LookupFailure("bad formatting string: %s" % o["format"])
    adjust = 1 if o["stride"] >= 0 else -1
    out = []
    for number in range(o["start"], o["end"] + adjust, o["stride"]):
        try:
            out.append(o["format"] % number)
        except (ValueError, TypeError):
            raise LookupFailure("problem formatting %r with %r" % (number, o["format"]))
    return out


def _vars(terms, variables, default=None):
    out = []
    for term in terms:
        if not isinstance(term, str):
            said = "Variable name must be 'str' not %r." % type(term).__name__
            error = LookupFailure("The lookup plugin 'vars' failed: %s" % said,
                                  plugin="vars", cause=said)
            # (a "caused by" of its own, about the term: a value of no known origin)
            error.parts = ["The lookup plugin 'vars' failed", said, str(term), None, None]
            raise error
        if term in variables:
            out.append(variables[term])
        elif default is not None:
            out.append(default)
        else:
            raise UndefinedVariableError("No variable named '%s' was found." % (term,))
    return out


def _varnames(terms, names):
    """ansible.builtin.varnames: the names of the task's variables that each
    regular expression matches (``re.search``), term after term."""
    out = []
    for term in terms:
        if not isinstance(term, str):
            raise LookupFailure('Invalid setting identifier, "%s" is not a string, it is a %s'
                                % (term, type(term)))
        try:
            pattern = re.compile(term)
        except re.error as exc:
            raise LookupFailure('Unable to use "%s" as a search parameter: %s' % (term, exc))
        out.extend(name for name in names if pattern.search(name))
    return out


class LookupFailure(TemplateError):
    """A lookup could not answer; the message is Ansible's where it has one.

    ``plugin`` and ``cause``: the plugin that failed and its own error, once
    the failure is worded as Ansible's templating words it ("The lookup
    plugin 'dict' failed: <cause>")."""

    def __init__(self, message, plugin=None, cause=None, file=None):
        TemplateError.__init__(self, message)
        self.plugin = plugin
        self.cause = cause
        self.file = file  # (see TemplateError.file)


class LookupUnanswerable(LookupFailure):
    """No plugin ran: none has the name, or the controller could not foresee
    the call. ``errors=`` does not apply (Ansible raises before the plugin runs)."""


def called(results, plugin, terms, kwargs, wantlist):
    """``lookup()``/``query()`` of ``results(plugin, terms, kwargs)`` as Ansible's
    ``_invoke_lookup`` makes it: with ``errors='ignore'`` a plugin that raised
    gives None (``[]`` with ``wantlist``) instead of failing the template.

    The plugin sees its terms and options as builtins: a variable's list is
    a list (Ansible's lazy list is one), so ``_flatten`` and the plugins'
    ``isinstance(term, list)`` checks treat ``lookup('indexed_items', var)``
    as ``lookup('indexed_items', [...])``; an undefined value among them
    fails the template whatever ``errors`` says, as it does in Ansible."""
    if plugin in TAKE_UNDEFINED:  # (env's default may be undefined: it is handed on)
        terms = [to_builtin(t) for t in terms]
        kwargs = {n: _builtin_term(v) if n == "default" else to_builtin(v)
                  for n, v in kwargs.items()}
    elif plugin in _OWN_MARKERS_ACCEPTED:  # (an undefined term fails, as a lookup() call's)
        terms, kwargs = [to_builtin(t) for t in terms], {n: to_builtin(v) for n, v in kwargs.items()}
    else:
        terms = [_builtin_term(term) for term in terms]
        kwargs = {name: _builtin_term(value) for name, value in kwargs.items()}
    try:
        values = results(plugin, terms, kwargs)
    except LookupUnanswerable:
        raise
    except TemplateError:
        if kwargs.get("errors", "strict") != "ignore":
            raise
        return [] if wantlist else None
    values = undefined_decoded(values)
    if isinstance(values, Undefined):  # (a plugin that takes no undefined terms)
        return values
    return shape(values, wantlist)


#: The key that stands for an undefined value among a lookup's terms and results
#: (``{UNDEFINED: its message}``): ansible-core 2.21 hands a plugin that accepts
#: markers (``accept_args_markers``) the undefined value itself, and a plugin that
#: does not is not called: the lookup's value is the first undefined term.
UNDEFINED = "__ioc_undefined__"


#: ansible-core's lookups that accept undefined terms (``accept_args_markers``:
#: ``env``'s default, ``first_found``'s terms), which ioc's controller runs itself
#: and which take no undefined term there.
_OWN_MARKERS_ACCEPTED = frozenset({"env", "first_found"})
#: Of those, the ones ioc hands an undefined option to (``env``'s ``default``,
#: its value where the variable is not set).
TAKE_UNDEFINED = frozenset({"env"})


def _builtin_term(value):
    """A term (or option) as the plugin sees it: builtins, or an undefined value
    (a term written as a template of an undefined variable) as :data:`UNDEFINED`."""
    if isinstance(value, Undefined):
        return {UNDEFINED: value._undefined_message}
    return to_builtin(value)


def first_undefined(terms, kwargs):
    """The first undefined term or option (:data:`UNDEFINED`), or None
    (ansible-core's ``get_first_marker_arg``)."""
    for value in list(terms) + list(kwargs.values()):
        if is_undefined(value):
            return value
    return None


def is_undefined(value):
    return isinstance(value, dict) and len(value) == 1 and UNDEFINED in value


def undefined_decoded(value):
    """``value`` with each :data:`UNDEFINED` in it (it, the items of a list, the
    values of a dict) an undefined value again, failing with its message where used."""
    if is_undefined(value):
        return _undefined(value[UNDEFINED])
    if isinstance(value, list):
        return [undefined_decoded(v) for v in value]
    if isinstance(value, dict):
        return {k: undefined_decoded(v) for k, v in value.items()}
    return value


#: Lookups that run on the target: name -> function(terms, variables).
PURE = {
    "items": _items, "list": lambda terms, variables: list(terms), "dict": _dict,
    "indexed_items": _indexed_items, "nested": _nested,
    "together": _together, "subelements": _subelements, "sequence": _sequence,
}


def shape(values, wantlist):
    """What ``lookup()`` returns for a plugin's ``values``, as Ansible shapes it.

    The list itself with ``wantlist`` or when it is empty; its one item; or,
    for several, the items joined with commas when they are all strings, else
    the list.
    """
    if wantlist or not values:
        return values
    if len(values) == 1:
        return values[0]
    if all(isinstance(v, str) for v in values):
        return ",".join(values)
    return values


def unforeseen(plugin, terms):
    """Why a lookup that reads the controller has no answer in the batch."""
    return ("lookup('%s', %s) reads the controller, and its arguments were not known "
            "before this batch started" % (plugin, ", ".join(repr(t) for t in terms)))


class Lookups(object):
    """The ``lookup``/``query`` functions of one host's templates."""

    def __init__(self, table, variables_of, names=None, late=None):
        self.table = table if table is not None else {}
        #: ``(plugin, terms, kwargs) -> table entry``: asks the controller for a
        #: lookup the table lacks (one round trip); None: there is nobody to ask.
        self.late = late
        #: Callable returning the templated variable for ``vars`` lookups.
        self.variables_of = variables_of
        #: Callable returning every variable name the task sees (``varnames``).
        self.names = names

    def results(self, plugin, terms, kwargs):
        """The list a lookup plugin would return."""
        terms = listify(terms)
        undefined = first_undefined(terms, kwargs)
        if undefined is not None and (plugin in PURE or plugin in ("vars", "varnames")):
            return undefined  # (ansible-core's own: they take no undefined terms)
        if plugin == "vars":
            return _vars(terms, _VarView(self.variables_of), kwargs.get("default"))
        try:
            if plugin == "varnames" and self.names is not None:
                return _varnames(terms, self.names())
            if plugin in PURE:
                return PURE[plugin](terms, None)
        except LookupFailure as exc:
            # ansible-core's _invoke_lookup: AnsibleTemplatePluginRuntimeError from the plugin's error
            raise LookupFailure("The lookup plugin '%s' failed: %s" % (plugin, exc),
                                plugin=plugin, cause=str(exc)) from exc
        table_key = key(plugin, terms, kwargs)
        if table_key not in self.table and self.late is not None:
            self.table[table_key] = self.late(plugin, terms, kwargs)
        if table_key not in self.table:
            raise LookupUnanswerable(unforeseen(plugin, terms))
        answer = self.table[table_key]
        if isinstance(answer, dict) and answer.get("late") and self.late is not None:
            # failed before the batch: asked again now that the task runs (an
            # earlier task may have made what it reads), once per task and item
            answer = self.table[table_key] = self.late(plugin, terms, kwargs)
        for text in (answer.get("warnings") or ()) if isinstance(answer, dict) else ():
            context.warn(text)  # (what the controller's plugin said: the task's warnings)
        if isinstance(answer, dict) and "error" in answer:
            if answer.get("missing"):
                raise LookupUnanswerable(answer["error"])
            raise LookupFailure(answer["error"], plugin=answer.get("plugin"),
                                cause=answer.get("cause"), file=answer.get("file"))
        return answer["value"]

    def lookup(self, plugin, *terms, **kwargs):
        return called(self.results, plugin, list(terms), kwargs, kwargs.get("wantlist"))

    def query(self, plugin, *terms, **kwargs):
        return called(self.results, plugin, list(terms), kwargs, True)

    def functions(self):
        return {"lookup": self.lookup, "query": self.query, "q": self.query}


class _VarView(object):
    def __init__(self, variables_of):
        self.variables_of = variables_of

    def __contains__(self, name):
        try:
            self.variables_of(name)
        except KeyError:
            return False
        return True

    def __getitem__(self, name):
        return self.variables_of(name)
