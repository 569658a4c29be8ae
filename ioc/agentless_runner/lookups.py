"""Lookups as the target sees them.

*Pure* lookups (``items``, ``list``, ``dict``, ``indexed_items``,
``sequence``, ``subelements``, ``nested``, ``together``, ``flattened``,
``vars``) depend only on their arguments and the host's variables, so they
run right here, also as ``with_<name>`` loops.

Every other lookup reads the *controller* (its files, its environment, its
commands: L7.6). The controller evaluates those before the batch, for this
host, with exactly the arguments the task will use, and ships the answers as
a table keyed by :func:`key`. Here ``lookup()``/``query()`` answer from that
table; a call the controller did not foresee (its arguments depend on values
produced inside the batch, which the planner should have cut before) fails
the task with a message that says so, instead of guessing.
"""
import itertools
import json

from ioc.agentless_runner.templating import TemplateError

__all__ = ["PURE", "key", "Lookups"]


def key(plugin, terms, kwargs):
    """The table key of one lookup call (``wantlist`` does not change the answer)."""
    kwargs = {k: v for k, v in kwargs.items() if k not in ("wantlist", "errors")}
    return json.dumps([plugin, list(terms), kwargs], sort_keys=True, default=str)


def listify(terms):
    if isinstance(terms, (list, tuple)):
        return list(terms)
    return [terms]


def _items(terms, variables):
    out = []
    for term in terms:
        out.extend(term if isinstance(term, list) else [term])
    return out


def _dict(terms, variables):
    out = []
    for term in terms:
        if not isinstance(term, dict):
            raise LookupFailure("with_dict expects a dict")
        out.extend({"key": k, "value": v} for k, v in term.items())
    return out


def _indexed_items(terms, variables):
    return [[i, x] for i, x in enumerate(_items(terms, variables))]


def _flattened(terms, variables):
    out = []

    def walk(value):
        if isinstance(value, (list, tuple)):
            for v in value:
                walk(v)
        elif value is not None:
            out.append(value)
    walk(terms)
    return out


def _nested(terms, variables):
    lists = [t if isinstance(t, list) else [t] for t in terms]
    return [list(combo) for combo in itertools.product(*lists)]


def _together(terms, variables):
    lists = [t if isinstance(t, list) else [t] for t in terms]
    return [list(row) for row in itertools.zip_longest(*lists)]


def _subelements(terms, variables):
    if len(terms) < 2:
        raise LookupFailure("subelements lookup expects a list and a key")
    items, name = terms[0], terms[1]
    flags = terms[2] if len(terms) > 2 and isinstance(terms[2], dict) else {}
    if isinstance(items, dict):
        items = list(items.values())
    out = []
    for item in items:
        value = item
        for part in str(name).split("."):
            if not isinstance(value, dict) or part not in value:
                if flags.get("skip_missing"):
                    value = None
                    break
                raise LookupFailure("could not find '%s' key in iterated item '%s'" % (name, item))
            value = value[part]
        if value is None:
            continue
        if not isinstance(value, list):
            raise LookupFailure("the key %s should point to a list, got '%s'" % (name, value))
        out.extend([item, sub] for sub in value)
    return out


def _sequence(terms, variables):
    out = []
    for term in terms:
        out.extend(_one_sequence(term))
    return out


def _one_sequence(term):
    params = {"start": "1", "end": None, "count": None, "stride": "1", "format": "%d"}
    text = str(term).strip()
    if text and "=" not in text.split()[0]:
        first, _, rest = text.partition(" ")
        bounds, _, fmt = first.partition("/")
        start, dash, end = bounds.rpartition("-") if "-" in bounds[1:] else ("1", "-", bounds)
        params.update(start=start or "1", end=end)
        if fmt:
            params["format"] = fmt
        text = rest
    for word in text.split():
        name, _, value = word.partition("=")
        params[name] = value
    start, stride = int(params["start"], 0), int(params["stride"], 0)
    if params["count"] is not None:
        end = start + (int(params["count"], 0) - 1) * stride
    elif params["end"] is not None:
        end = int(params["end"], 0)
    else:
        raise LookupFailure("must specify count or end in with_sequence")
    step = stride if stride else 1
    stop = end + (1 if step > 0 else -1)
    return [params["format"] % i for i in range(start, stop, step)]


def _vars(terms, variables, default=None):
    out = []
    for term in terms:
        if term in variables:
            out.append(variables[term])
        elif default is not None:
            out.append(default)
        else:
            raise LookupFailure("No variable found with this name: %s" % term)
    return out


class LookupFailure(TemplateError):
    """A lookup could not answer; the message is Ansible's where it has one."""


#: Lookups that run on the target: name -> function(terms, variables).
PURE = {
    "items": _items, "list": lambda terms, variables: list(terms), "dict": _dict,
    "indexed_items": _indexed_items, "flattened": _flattened, "nested": _nested,
    "together": _together, "subelements": _subelements, "sequence": _sequence,
}


class Lookups(object):
    """The ``lookup``/``query`` functions of one host's templates."""

    def __init__(self, table, variables_of):
        self.table = table or {}
        #: Callable returning the templated variable for ``vars`` lookups.
        self.variables_of = variables_of

    def results(self, plugin, terms, kwargs):
        """The list a lookup plugin would return."""
        terms = listify(terms)
        if plugin == "vars":
            return _vars(terms, _VarView(self.variables_of), kwargs.get("default"))
        if plugin in PURE:
            return PURE[plugin](terms, None)
        table_key = key(plugin, terms, kwargs)
        if table_key not in self.table:
            raise LookupFailure(
                "lookup('%s', %s) reads the controller, and its arguments were not known "
                "before this batch started" % (plugin, ", ".join(repr(t) for t in terms)))
        answer = self.table[table_key]
        if isinstance(answer, dict) and "error" in answer:
            raise LookupFailure(answer["error"])
        return answer["value"]

    def lookup(self, plugin, *terms, **kwargs):
        values = self.results(plugin, list(terms), kwargs)
        if kwargs.get("wantlist"):
            return values
        if len(values) == 1:
            return values[0]
        return ",".join(str(v) for v in values)

    def query(self, plugin, *terms, **kwargs):
        return self.results(plugin, list(terms), kwargs)

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
