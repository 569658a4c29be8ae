"""Ansible's jinja2 filters, for the controller and the target alike.

``FILTERS`` maps each name (also as ``ansible.builtin.<name>``) to its
function; :func:`names` lists every filter a template may use, jinja2's
built-ins included, so the controller can reject unknown filters before a run.
Jinja2's own filters are used where Ansible uses them too (``int``, ``float``,
``join``, ``map``, ``select``, ``sort``, ``min``...).

YAML (``to_yaml``, ``to_nice_yaml``, ``from_yaml``, ``from_yaml_all``) uses
the small pure-Python emitter and parser at the end of this module (see
:func:`yaml_load_all` for the subset), on the controller and on every target
alike: a filter's result never depends on whether a target has PyYAML.

Imports only the stdlib and jinja2; runs on Python 3.9+.
"""
import base64
import datetime
import hashlib
import itertools
import json
import math
import os
import re
import shlex
import time
import uuid

import jinja2.filters
from jinja2 import pass_environment
from jinja2.runtime import Undefined

__all__ = ["FILTERS", "FilterError", "names", "yaml_dump", "yaml_load_all"]

FILTERS = {}


class FilterError(ValueError):
    """A filter was given arguments it cannot work with."""


def _register(*aliases):
    def decorate(func):
        for name in aliases:
            FILTERS[name] = func
        return func
    return decorate


def names():
    """Every filter name a template may use (jinja2 built-ins included)."""
    return frozenset(jinja2.filters.FILTERS) | frozenset(FILTERS)


def _text(value):
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return value if isinstance(value, str) else str(value)


def _is_sequence(value):
    return isinstance(value, (list, tuple))


# -- booleans, types, defaults ---------------------------------------------------


@_register("bool")
def to_bool(value):
    """Ansible's truthiness of a string: 'yes', 'on', '1', 'true' (any case)."""
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    if isinstance(value, str):
        value = value.lower()
    return value in ("yes", "on", "1", "true", 1)


@_register("ternary")
def ternary(value, true_val, false_val, none_val=None):
    """``true_val`` if ``value`` is truthy, else ``false_val`` (None: ``none_val``)."""
    if value is None and none_val is not None:
        return none_val
    return true_val if value else false_val


@_register("mandatory")
def mandatory(value, msg=None):
    """``value``, or an UndefinedVariableError if it is undefined."""
    if isinstance(value, Undefined):
        from ioc.agentless_runner.templating import UndefinedVariableError
        if msg is None:
            name = getattr(value, "_undefined_name", None)
            msg = ("Mandatory variable %r not defined." % (name,) if name is not None
                   else "Mandatory variable not defined.")
        raise UndefinedVariableError(msg)
    return value


@_register("type_debug")
def type_debug(value):
    """The name of ``value``'s type (``dict``, ``list``, ``str``...)."""
    return type(value).__name__


@_register("dict")
def to_dict(value):
    """``dict(value)``: a mapping from a list of pairs."""
    return dict(value)


# -- strings and regular expressions ------------------------------------------------


def _flags(ignorecase=False, multiline=False):
    return (re.I if ignorecase else 0) | (re.M if multiline else 0)


@_register("split")
def split(value, separator=None, maxsplit=-1):
    """``str.split`` as a filter: ``'a,b' | split(',')``."""
    return _text(value).split(separator, maxsplit)


@_register("regex_replace")
def regex_replace(value="", pattern="", replacement="", ignorecase=False,
                  multiline=False, count=0, mandatory_count=0):
    """``re.sub`` with Ansible's arguments."""
    value = _text(value)
    compiled = re.compile(pattern, _flags(ignorecase, multiline))
    output, subs = compiled.subn(replacement, value, count=count)
    if mandatory_count and mandatory_count != subs:
        raise FilterError("'%s' should match %d times, but matches %d times in '%s'"
                          % (pattern, mandatory_count, subs, value))
    return output


def _group_refs(args):
    groups = []
    for arg in args:
        named = re.match(r"\\g<(\S+)>", arg)
        numbered = re.match(r"\\(\d+)", arg)
        if named:
            groups.append(named.group(1))
        elif numbered:
            groups.append(int(numbered.group(1)))
        else:
            raise FilterError("Unknown argument")
    return groups


@_register("regex_search")
def regex_search(value, regex, *args, **kwargs):
    """The first match of ``regex`` (None if none); with ``'\\1'``/``'\\g<n>'``
    arguments, the list of those groups."""
    groups = _group_refs(args)
    flags = _flags(kwargs.get("ignorecase", False), kwargs.get("multiline", False))
    match = re.search(regex, _text(value), flags)
    if not match:
        return None
    if not groups:
        return match.group()
    return [match.group(g) for g in groups]


@_register("regex_findall")
def regex_findall(value, regex, multiline=False, ignorecase=False):
    """All non-overlapping matches (``re.findall``)."""
    return re.findall(regex, _text(value), _flags(ignorecase, multiline))


@_register("regex_escape")
def regex_escape(string, re_type="python"):
    """Escape regex metacharacters (``python`` or ``posix_basic``)."""
    string = _text(string)
    if re_type == "python":
        return re.escape(string)
    if re_type == "posix_basic":
        return re.sub(r"([].[^$*\\])", r"\\\1", string)
    raise FilterError("Invalid regex type (%s)" % re_type)


@_register("quote")
def quote(value):
    """Quote for a POSIX shell (``shlex.quote``)."""
    return shlex.quote(_text(value))


_COMMENT_STYLES = {
    "plain": {"decoration": "# "},
    "erlang": {"decoration": "% "},
    "c": {"decoration": "// "},
    "cblock": {"beginning": "/*", "decoration": " * ", "end": " */"},
    "xml": {"beginning": "<!--", "decoration": " - ", "end": "-->"},
}


@_register("comment")
def comment(text, style="plain", **kw):
    """Ansible's ``comment``: ``text`` as a comment block of ``style``.

    As Ansible's filter: a ``prefix`` line before and a ``postfix`` line
    after (the decoration without its trailing space: ``#`` for ``plain``),
    ``beginning``/``end`` lines for ``cblock`` and ``xml``; the keywords
    ``newline``, ``beginning``, ``prefix``, ``prefix_count``, ``decoration``,
    ``postfix``, ``postfix_count`` and ``end`` override the style's.
    """
    if style not in _COMMENT_STYLES:
        raise FilterError("Invalid style %r. Available styles: %s"
                          % (style, ", ".join(_COMMENT_STYLES)))
    style_params = _COMMENT_STYLES[style]
    around = (kw["decoration"] if "decoration" in kw else style_params["decoration"]).rstrip()
    p = {"newline": "\n", "beginning": "", "prefix": around, "prefix_count": 1,
         "decoration": "", "postfix": around, "postfix_count": 1, "end": ""}
    p.update(style_params)
    p.update(kw)
    newline, decoration = p["newline"], p["decoration"]
    beginning = "%s%s" % (p["beginning"], newline) if p["beginning"] else ""
    prefix = ""
    if p["prefix"]:
        line = newline if p["prefix"] == newline else "%s%s" % (p["prefix"], newline)
        prefix = line * int(p["prefix_count"])
    body = ("%s%s" % (decoration, text.replace(newline, newline + decoration))).replace(
        decoration + newline, decoration.rstrip() + newline)
    postfix = newline.join([""] + [p["postfix"]] * int(p["postfix_count"]))
    end = "%s%s" % (newline, p["end"]) if p["end"] else ""
    return beginning + prefix + body + postfix + end


# -- lists and sets -------------------------------------------------------------------


@_register("unique")
@pass_environment
def unique(environment, value, case_sensitive=None, attribute=None):
    """Distinct items in order; jinja2's unique, Ansible's fallback for unhashables."""
    try:
        return list(jinja2.filters.do_unique(
            environment, value, case_sensitive=bool(case_sensitive), attribute=attribute))
    except TypeError:
        if case_sensitive is False or attribute:
            raise FilterError("Jinja2's unique filter failed and we cannot fall back to "
                              "Ansible's version as it does not support the parameters supplied")
    result = []
    for item in value:
        if item not in result:
            result.append(item)
    return result


def _unique(items):
    result = []
    for item in items:
        if item not in result:
            result.append(item)
    return result


@_register("union")
def union(a, b):
    """Items of ``a`` then ``b``, without duplicates."""
    return _unique(list(a) + list(b))


@_register("intersect")
def intersect(a, b):
    """Items of ``a`` also in ``b``, in ``a``'s order, without duplicates."""
    return _unique(x for x in a if x in b)


@_register("difference")
def difference(a, b):
    """Items of ``a`` not in ``b``, without duplicates."""
    return _unique(x for x in a if x not in b)


@_register("symmetric_difference")
def symmetric_difference(a, b):
    """Items in exactly one of ``a`` and ``b``."""
    return union(difference(a, b), difference(b, a))


@_register("flatten")
def flatten(mylist, levels=None, skip_nulls=True):
    """Flatten nested lists (``levels`` deep, all by default); drops nulls."""
    result = []
    for element in mylist:
        if skip_nulls and element in (None, "None", "null"):
            continue
        if _is_sequence(element) and (levels is None or levels >= 1):
            deeper = None if levels is None else int(levels) - 1
            result.extend(flatten(element, levels=deeper, skip_nulls=skip_nulls))
        else:
            result.append(element)
    return result


@_register("zip")
def zip_(*lists):
    """Pairs (tuples as lists) of the items of several lists."""
    return [list(t) for t in zip(*lists)]


@_register("zip_longest")
def zip_longest(*lists, **kwargs):
    """Like ``zip``, padding the shorter lists with ``fillvalue``."""
    fill = kwargs.pop("fillvalue", None)
    return [list(t) for t in itertools.zip_longest(*lists, fillvalue=fill)]


@_register("product")
def product(*lists, **kwargs):
    """Cartesian product (``itertools.product``)."""
    return [list(t) for t in itertools.product(*lists, **kwargs)]


@_register("permutations")
def permutations(value, r=None):
    return [list(t) for t in itertools.permutations(value, r)]


@_register("combinations")
def combinations(value, r):
    return [list(t) for t in itertools.combinations(value, r)]


@_register("extract")
@pass_environment
def extract(environment, item, container, morekeys=None):
    """``container[item]`` (then ``[morekeys...]``): ``map('extract', hostvars)``."""
    if morekeys is None:
        keys = [item]
    elif isinstance(morekeys, list):
        keys = [item] + morekeys
    else:
        keys = [item, morekeys]
    value = container
    for key in keys:
        value = environment.getitem(value, key)
    return value


# -- dictionaries ------------------------------------------------------------------------

_LIST_MERGE = ("replace", "keep", "append", "prepend", "append_rp", "prepend_rp")


def _merge_lists(old, new, list_merge):
    if list_merge == "replace":
        return new
    if list_merge == "keep":
        return old
    if list_merge == "append":
        return old + new
    if list_merge == "prepend":
        return new + old
    kept = [z for z in old if z not in new]
    return kept + new if list_merge == "append_rp" else new + kept


def merge_hash(x, y, recursive=True, list_merge="replace"):
    """``y`` merged over ``x`` (Ansible's merge_hash); neither is modified."""
    if not isinstance(x, dict) or not isinstance(y, dict):
        raise FilterError("failed to combine variables, expected dicts but got a '%s' and a '%s'"
                          % (type(x).__name__, type(y).__name__))
    if x == {} or x == y:
        return dict(y)
    x = dict(x)
    if not recursive and list_merge == "replace":
        x.update(y)
        return x
    for key, y_value in y.items():
        x_value = x.get(key)
        if isinstance(x_value, dict) and isinstance(y_value, dict):
            x[key] = merge_hash(x_value, y_value, recursive, list_merge) if recursive else y_value
        elif isinstance(x_value, list) and isinstance(y_value, list):
            x[key] = _merge_lists(x_value, y_value, list_merge)
        else:
            x[key] = y_value
    return x


@_register("combine")
def combine(*terms, **kwargs):
    """Merge dicts left to right; ``recursive`` and ``list_merge`` as Ansible's."""
    recursive = kwargs.pop("recursive", False)
    list_merge = kwargs.pop("list_merge", "replace")
    if kwargs:
        raise FilterError("'recursive' and 'list_merge' are the only valid keyword arguments")
    if list_merge not in _LIST_MERGE:
        raise FilterError("'%s' is not a valid list_merge value" % (list_merge,))
    dicts = flatten(terms, levels=1)
    if not dicts:
        return {}
    result = dicts[-1]
    for d in reversed(dicts[:-1]):
        result = merge_hash(d, result, recursive, list_merge)
    return dict(result)


@_register("dict2items")
def dict2items(mydict, key_name="key", value_name="value"):
    """``{k: v}`` -> ``[{key: k, value: v}]``."""
    if not isinstance(mydict, dict):
        raise FilterError("dict2items requires a dictionary, got %s instead."
                          % type(mydict).__name__)
    return [{key_name: k, value_name: v} for k, v in mydict.items()]


@_register("items2dict")
def items2dict(mylist, key_name="key", value_name="value"):
    """``[{key: k, value: v}]`` -> ``{k: v}``."""
    if not _is_sequence(mylist):
        raise FilterError("items2dict requires a list, got %s instead."
                          % type(mylist).__name__)
    try:
        return dict((item[key_name], item[value_name]) for item in mylist)
    except KeyError as exc:
        raise FilterError("items2dict requires each dictionary in the list to contain "
                          "the keys '%s' and '%s', missing %s" % (key_name, value_name, exc))
    except TypeError:
        raise FilterError("items2dict requires a list of dictionaries")


# -- JSON and YAML -------------------------------------------------------------------------


def _json_default(value):
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    raise TypeError("Object of type %s is not JSON serializable" % type(value).__name__)


@_register("to_json")
def to_json(value, *args, **kwargs):
    """``json.dumps`` (Python's defaults: ``", "`` and ``": "`` separators)."""
    kwargs.setdefault("default", _json_default)
    return json.dumps(value, *args, **kwargs)


@_register("to_nice_json")
def to_nice_json(value, indent=4, sort_keys=True, *args, **kwargs):
    """Indented, key-sorted JSON."""
    return to_json(value, indent=indent, sort_keys=sort_keys,
                   separators=(",", ": "), *args, **kwargs)


@_register("from_json")
def from_json(value, *args, **kwargs):
    return json.loads(value, *args, **kwargs)


@_register("to_yaml")
def to_yaml(value, *args, **kwargs):
    """YAML with flow style for collections of scalars, as Ansible's to_yaml."""
    kwargs.setdefault("default_flow_style", None)
    return _dump_yaml(value, **kwargs)


@_register("to_nice_yaml")
def to_nice_yaml(value, indent=4, *args, **kwargs):
    """Block-style YAML indented by ``indent``, as Ansible's to_nice_yaml."""
    kwargs.setdefault("default_flow_style", False)
    return _dump_yaml(value, indent=indent, **kwargs)


@_register("from_yaml")
def from_yaml(value):
    """The data of a YAML document (non-strings pass through)."""
    if not isinstance(value, str):
        return value
    docs = yaml_load_all(value)
    if len(docs) > 1:
        raise FilterError("expected a single document in the stream")
    return docs[0] if docs else None


@_register("from_yaml_all")
def from_yaml_all(value):
    """The data of every document in a YAML stream, as a list."""
    if not isinstance(value, str):
        return value
    return yaml_load_all(value)


def _dump_yaml(value, indent=2, default_flow_style=None, sort_keys=True, width=80,
               **kwargs):
    return yaml_dump(value, indent=indent, default_flow_style=default_flow_style,
                     sort_keys=sort_keys, width=width)


# -- encodings, hashes, paths ----------------------------------------------------------------


@_register("b64encode")
def b64encode(string, encoding="utf-8"):
    return base64.b64encode(_text(string).encode(encoding, "surrogateescape")).decode("ascii")


@_register("b64decode")
def b64decode(string, encoding="utf-8"):
    return base64.b64decode(_text(string)).decode(encoding, "surrogateescape")


@_register("hash")
def hash_(data, hashtype="sha1"):
    """Hex digest of ``data`` with any hashlib algorithm."""
    try:
        digest = hashlib.new(hashtype)
    except ValueError:
        raise FilterError("unsupported hash type %s" % (hashtype,))
    digest.update(_text(data).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


@_register("checksum", "sha1")
def checksum(data):
    """SHA-1 hex digest (Ansible's ``checksum``)."""
    return hash_(data, "sha1")


@_register("md5")
def md5(data):
    return hash_(data, "md5")


@_register("to_uuid")
def to_uuid(string, namespace="361E6D51-FAEC-444A-9079-341386DA8E2E"):
    """A name-based UUID in Ansible's namespace."""
    return str(uuid.uuid5(uuid.UUID(str(namespace)), _text(string)))


@_register("basename")
def basename(path):
    return os.path.basename(_text(path))


@_register("dirname")
def dirname(path):
    return os.path.dirname(_text(path))


@_register("realpath")
def realpath(path):
    return os.path.realpath(_text(path))


@_register("expanduser")
def expanduser(path):
    return os.path.expanduser(_text(path))


@_register("expandvars")
def expandvars(path):
    return os.path.expandvars(_text(path))


@_register("relpath")
def relpath(path, start=os.curdir):
    return os.path.relpath(_text(path), start)


@_register("splitext")
def splitext(path):
    """``['name', '.ext']``."""
    return list(os.path.splitext(_text(path)))


@_register("path_join")
def path_join(paths):
    """``os.path.join`` of a list (a single string is returned as is)."""
    if isinstance(paths, str):
        return paths
    return os.path.join(*[_text(p) for p in paths])


# -- math and time ---------------------------------------------------------------------------


@_register("log")
def logarithm(x, base=math.e):
    return math.log10(x) if base == 10 else math.log(x, base)


@_register("pow")
def power(x, y):
    return math.pow(x, y)


@_register("root")
def inversepower(x, base=2):
    return math.sqrt(x) if base == 2 else math.pow(x, 1.0 / float(base))


@_register("to_datetime")
def to_datetime(string, format="%Y-%m-%d %H:%M:%S"):
    """A ``datetime`` parsed with ``format`` (for date arithmetic in templates)."""
    return datetime.datetime.strptime(_text(string), format)


@_register("strftime")
def strftime(string_format, second=None, utc=False):
    """Format ``second`` (epoch; default now) with ``string_format``."""
    convert = time.gmtime if utc else time.localtime
    return time.strftime(string_format, convert(None if second is None else float(second)))


# FQCN aliases: ``x | ansible.builtin.to_json``.
for _name, _func in list(FILTERS.items()) + list(jinja2.filters.FILTERS.items()):
    FILTERS["ansible.builtin." + _name] = FILTERS.get(_name, _func)
FILTERS["d"] = jinja2.filters.FILTERS["default"]
FILTERS["ansible.builtin.d"] = FILTERS["d"]


# ============================================================================================
# YAML without PyYAML
#
# The emitter reproduces PyYAML's SafeDumper output (sorted keys, scalar quoting
# and style rules, ``indent``, flow collections for ``default_flow_style=None``,
# line folding at ``width``) for builtins: dict, list/tuple/set, str, int, float,
# bool, None. The parser reads the YAML subset that data files and command
# outputs use; see yaml_load_all.
# ============================================================================================

_BOOL_RE = re.compile(r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE"
                      r"|on|On|ON|off|Off|OFF)$")
_INT_RE = re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)"
                     r"|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$")
_FLOAT_RE = re.compile(r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?"
                       r"|\.[0-9_]+(?:[eE][-+][0-9]+)?"
                       r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*"
                       r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
_NULL_RE = re.compile(r"^(?:~|null|Null|NULL|)$")
_TIMESTAMP_RE = re.compile(
    r"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"
    r"|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?"
    r":[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$")
_OTHER_RE = re.compile(r"^(?:<<|=|!|&|\*)$")
_BREAKS = "\n\x85\u2028\u2029"
_SPACE_OR_END = "\0 \t\r\n\x85\u2028\u2029"


def _resolves_to_str(text):
    """True if ``text`` written plain would load back as a string."""
    return not any(r.match(text) for r in
                   (_BOOL_RE, _INT_RE, _FLOAT_RE, _NULL_RE, _TIMESTAMP_RE, _OTHER_RE))


class _Analysis(object):
    __slots__ = ("empty", "multiline", "flow_plain", "block_plain", "single_quoted")

    def __init__(self, empty, multiline, flow_plain, block_plain, single_quoted):
        self.empty = empty
        self.multiline = multiline
        self.flow_plain = flow_plain
        self.block_plain = block_plain
        self.single_quoted = single_quoted


def _is_printable(ch):
    return (ch == "\n" or "\x20" <= ch <= "\x7e" or ch == "\x85"
            or ("\xa0" <= ch <= "\ud7ff" or "\ue000" <= ch <= "\ufffd"
                or "\U00010000" <= ch < "\U0010ffff") and ch != "\ufeff")


def _indicators(scalar):
    """``(flow_indicators, block_indicators)`` as PyYAML's analyze_scalar."""
    flow = block = scalar.startswith("---") or scalar.startswith("...")
    preceded_by_space = True
    for index, ch in enumerate(scalar):
        followed_by_space = index + 1 >= len(scalar) or scalar[index + 1] in _SPACE_OR_END
        if index == 0:
            if ch in "#,[]{}&*!|>'\"%@`":
                flow = block = True
            elif ch in "?:":
                flow = True
                block = block or followed_by_space
            elif ch == "-" and followed_by_space:
                flow = block = True
        else:
            if ch in ",?[]{}":
                flow = True
            elif ch == ":":
                flow = True
                block = block or followed_by_space
            elif ch == "#" and preceded_by_space:
                flow = block = True
        preceded_by_space = ch in _SPACE_OR_END
    return flow, block


def _analyze(scalar):
    """PyYAML's analyze_scalar (allow_unicode=True), reduced to what we use."""
    if not scalar:
        return _Analysis(True, False, False, True, True)
    flow_ind, block_ind = _indicators(scalar)
    special = any(not _is_printable(ch) for ch in scalar)
    line_breaks = any(ch in _BREAKS for ch in scalar)
    edge = scalar[0] in " " + _BREAKS or scalar[-1] in " " + _BREAKS
    break_space = space_break = False
    for prev, ch in zip(scalar, scalar[1:]):
        break_space = break_space or (prev in _BREAKS and ch == " ")
        space_break = space_break or (prev == " " and ch in _BREAKS)
    plain = not (edge or break_space or space_break or special or line_breaks)
    single = not (break_space or space_break or special)
    return _Analysis(False, line_breaks, plain and not flow_ind, plain and not block_ind, single)


_ESCAPES = {"\0": "0", "\x07": "a", "\x08": "b", "\x09": "t", "\x0a": "n", "\x0b": "v",
            "\x0c": "f", "\x0d": "r", "\x1b": "e", '"': '"', "\\": "\\", "\x85": "N",
            "\xa0": "_", "\u2028": "L", "\u2029": "P"}


def _float_text(value):
    if value != value:
        return ".nan"
    if value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value).lower()
    if "." not in text and "e" in text:
        text = text.replace("e", ".0e", 1)
    return text


def _scalar_text(value):
    """``(text, is_str)`` as PyYAML's SafeRepresenter writes a scalar."""
    if value is None:
        return "null", False
    if isinstance(value, bool):
        return ("true" if value else "false"), False
    if isinstance(value, int):
        return str(value), False
    if isinstance(value, float):
        return _float_text(value), False
    if isinstance(value, bytes):
        value = value.decode("utf-8", "surrogateescape")
    return str(value), True


class _Emitter(object):
    """A port of the parts of PyYAML's Emitter that SafeDumper output needs."""

    def __init__(self, indent=2, width=80, default_flow_style=None, sort_keys=True):
        self.best_indent = indent if 1 < indent < 10 else 2
        self.best_width = width if width > self.best_indent * 2 else 80
        self.default_flow_style = default_flow_style
        self.sort_keys = sort_keys
        self.out = []
        self.indent = None
        self.indents = []
        self.column = 0
        self.whitespace = True
        self.indention = True
        self.open_ended = False
        self.flow_level = 0
        self.context = (False, False, False, False)  # root, sequence, mapping, simple key

    # -- low-level writing

    def write(self, data):
        self.column += len(data)
        self.out.append(data)

    def write_indicator(self, indicator, need_whitespace, whitespace=False, indention=False):
        data = indicator if self.whitespace or not need_whitespace else " " + indicator
        self.whitespace = whitespace
        self.indention = self.indention and indention
        self.open_ended = False
        self.write(data)

    def write_line_break(self, data="\n"):
        self.whitespace = True
        self.indention = True
        self.out.append(data)
        self.column = 0

    def write_indent(self):
        indent = self.indent or 0
        if (not self.indention or self.column > indent
                or (self.column == indent and not self.whitespace)):
            self.write_line_break()
        if self.column < indent:
            self.whitespace = True
            self.write(" " * (indent - self.column))

    def increase_indent(self, flow=False, indentless=False):
        self.indents.append(self.indent)
        if self.indent is None:
            self.indent = self.best_indent if flow else 0
        elif not indentless:
            self.indent += self.best_indent

    # -- nodes

    def emit_document(self, value):
        self.node(value, root=True)
        self.write_indent()
        if self.open_ended:
            self.write_indicator("...", True)
            self.write_indent()
        return "".join(self.out)

    def node(self, value, root=False, sequence=False, mapping=False, simple_key=False):
        self.context = (root, sequence, mapping, simple_key)
        if isinstance(value, dict):
            items = self.sorted_items(value)
            if self.flow_level or not items or self.flow_style(value.values(), value):
                self.flow_mapping(items)
            else:
                self.block_mapping(items)
        elif isinstance(value, (list, tuple, set, frozenset)):
            items = list(value)
            if self.flow_level or not items or self.flow_style(items, ()):
                self.flow_sequence(items)
            else:
                self.block_sequence(items)
        else:
            self.increase_indent(flow=True)
            self.scalar(value)
            self.indent = self.indents.pop()

    def sorted_items(self, mapping):
        items = list(mapping.items())
        if self.sort_keys:
            try:
                items = sorted(items, key=lambda kv: kv[0])
            except TypeError:  # mixed key types keep their order, as in PyYAML
                pass
        return items

    def flow_style(self, values, keys):
        if self.default_flow_style is not None:
            return self.default_flow_style
        return not any(_is_collection(v) for v in itertools.chain(values, keys))

    def flow_sequence(self, items):
        self.write_indicator("[", True, whitespace=True)
        self.flow_level += 1
        self.increase_indent(flow=True)
        for index, item in enumerate(items):
            if index:
                self.write_indicator(",", False)
            if self.column > self.best_width:
                self.write_indent()
            self.node(item, sequence=True)
        self.indent = self.indents.pop()
        self.flow_level -= 1
        self.write_indicator("]", False)

    def flow_mapping(self, items):
        self.write_indicator("{", True, whitespace=True)
        self.flow_level += 1
        self.increase_indent(flow=True)
        for index, (key, value) in enumerate(items):
            if index:
                self.write_indicator(",", False)
            if self.column > self.best_width:
                self.write_indent()
            if self.is_simple_key(key):
                self.node(key, mapping=True, simple_key=True)
                self.write_indicator(":", False)
            else:
                self.write_indicator("?", True)
                self.node(key, mapping=True)
                if self.column > self.best_width:
                    self.write_indent()
                self.write_indicator(":", True)
            self.node(value, mapping=True)
        self.indent = self.indents.pop()
        self.flow_level -= 1
        self.write_indicator("}", False)

    def block_sequence(self, items):
        indentless = self.context[2] and not self.indention
        self.increase_indent(flow=False, indentless=indentless)
        for item in items:
            self.write_indent()
            self.write_indicator("-", True, indention=True)
            self.node(item, sequence=True)
        self.indent = self.indents.pop()

    def block_mapping(self, items):
        self.increase_indent(flow=False)
        for key, value in items:
            self.write_indent()
            if self.is_simple_key(key):
                self.node(key, mapping=True, simple_key=True)
                self.write_indicator(":", False)
            else:
                self.write_indicator("?", True, indention=True)
                self.node(key, mapping=True)
                self.write_indent()
                self.write_indicator(":", True, indention=True)
            self.node(value, mapping=True)
        self.indent = self.indents.pop()

    def is_simple_key(self, key):
        if _is_collection(key):
            return not key
        text, _ = _scalar_text(key)
        analysis = _analyze(text)
        return len(text) < 128 and not analysis.empty and not analysis.multiline

    # -- scalars

    def scalar(self, value):
        text, is_str = _scalar_text(value)
        style = self.choose_style(text, is_str)
        split = not self.context[3]
        if style == '"':
            self.write_double_quoted(text, split)
        elif style == "'":
            self.write_single_quoted(text, split)
        else:
            self.write_plain(text, split)

    def choose_style(self, text, is_str):
        analysis = _analyze(text)
        simple_key = self.context[3]
        if not is_str or _resolves_to_str(text):
            allowed = analysis.flow_plain if self.flow_level else analysis.block_plain
            if allowed and not (simple_key and (analysis.empty or analysis.multiline)):
                return ""
        if analysis.single_quoted and not (simple_key and analysis.multiline):
            return "'"
        return '"'

    def write_plain(self, text, split=True):
        if self.context[0]:
            self.open_ended = True
        if not text:
            return
        if not self.whitespace:
            self.write(" ")
        self.whitespace = False
        self.indention = False
        for token in re.split("( +)", text):
            if token == " " and split and self.column > self.best_width:
                self.write_indent()  # fold the line at this single space
                self.whitespace = False
                self.indention = False
            elif token:
                self.write(token)

    def write_single_quoted(self, text, split=True):
        self.write_indicator("'", True)
        spaces = breaks = False
        start = end = 0
        while end <= len(text):
            ch = text[end] if end < len(text) else None
            if spaces:
                if ch is None or ch != " ":
                    if (start + 1 == end and self.column > self.best_width and split
                            and start != 0 and end != len(text)):
                        self.write_indent()
                    else:
                        self.write(text[start:end])
                    start = end
            elif breaks:
                if ch is None or ch not in _BREAKS:
                    if text[start] == "\n":
                        self.write_line_break()
                    for br in text[start:end]:
                        self.write_line_break(br)
                    self.write_indent()
                    start = end
            elif ch is None or ch in " " + _BREAKS + "'":
                if start < end:
                    self.write(text[start:end])
                    start = end
            if ch == "'":
                self.write("''")
                start = end + 1
            if ch is not None:
                spaces = ch == " "
                breaks = ch in _BREAKS
            end += 1
        self.write_indicator("'", False)

    def write_double_quoted(self, text, split=True):
        self.write_indicator('"', True)
        start = end = 0
        while end <= len(text):
            ch = text[end] if end < len(text) else None
            if ch is None or ch in '"\\\x85\u2028\u2029\ufeff' or not (
                    "\x20" <= ch <= "\x7e" or "\xa0" <= ch <= "\ud7ff"
                    or "\ue000" <= ch <= "\ufffd"):
                if start < end:
                    self.write(text[start:end])
                    start = end
                if ch is not None:
                    self.write(_escape(ch))
                    start = end + 1
            if (0 < end < len(text) - 1 and (ch == " " or start >= end)
                    and self.column + (end - start) > self.best_width and split):
                self.write(text[start:end] + "\\")
                if start < end:
                    start = end
                self.write_indent()
                self.whitespace = False
                self.indention = False
                if text[start] == " ":
                    self.write("\\")
            end += 1
        self.write_indicator('"', False)


def _escape(ch):
    if ch in _ESCAPES:
        return "\\" + _ESCAPES[ch]
    if ch <= "\xff":
        return "\\x%02X" % ord(ch)
    if ch <= "\uffff":
        return "\\u%04X" % ord(ch)
    return "\\U%08X" % ord(ch)


def _is_collection(value):
    return isinstance(value, (dict, list, tuple, set, frozenset))


def yaml_dump(value, indent=2, default_flow_style=None, sort_keys=True, width=80):
    """``value`` as a YAML document, formatted as PyYAML's SafeDumper would."""
    emitter = _Emitter(indent=indent, width=width, default_flow_style=default_flow_style,
                       sort_keys=sort_keys)
    return emitter.emit_document(value)


# -- the parser ----------------------------------------------------------------------------


class YAMLParseError(FilterError):
    """The text is not YAML, or uses a feature outside the supported subset."""


def _resolve_plain(text):
    """A plain scalar's value under YAML 1.1 (PyYAML's resolver and constructors)."""
    if _NULL_RE.match(text):
        return None
    if _BOOL_RE.match(text):
        return text.lower() in ("yes", "true", "on")
    if _INT_RE.match(text):
        return _construct_int(text)
    if _FLOAT_RE.match(text):
        return _construct_float(text)
    return text


def _sign_and_body(text):
    text = text.replace("_", "")
    if text[0] in "+-":
        return (-1 if text[0] == "-" else 1), text[1:]
    return 1, text


def _sexagesimal(body, cast):
    total = cast(0)
    for part in body.split(":"):
        total = total * 60 + cast(part)
    return total


def _construct_int(text):
    sign, body = _sign_and_body(text)
    if body == "0":
        return 0
    if body.startswith("0b"):
        return sign * int(body[2:], 2)
    if body.startswith("0x"):
        return sign * int(body[2:], 16)
    if ":" in body:
        return sign * _sexagesimal(body, int)
    if body.startswith("0"):
        return sign * int(body, 8)
    return sign * int(body)


def _construct_float(text):
    sign, body = _sign_and_body(text.lower())
    if body == ".inf":
        return sign * float("inf")
    if body == ".nan":
        return float("nan")
    if ":" in body:
        return sign * _sexagesimal(body, float)
    return sign * float(body)


_DQ_ESCAPES = {"0": "\0", "a": "\x07", "b": "\x08", "t": "\t", "\t": "\t", "n": "\n",
               "v": "\x0b", "f": "\x0c", "r": "\r", "e": "\x1b", " ": " ", '"': '"',
               "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0", "L": "\u2028",
               "P": "\u2029"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
#: Stands for an escaped line break inside a double-quoted scalar.
_JOIN = "\x00J\x00"
_LINE_END = (" ", "\t", "\n", "")


class _Reader(object):
    """Recursive-descent reader of one YAML document (see yaml_load_all)."""

    def __init__(self, text):
        self.text = text
        self.pos = 0
        self.escapes = []

    # -- position and whitespace

    def error(self, message):
        line = self.text.count("\n", 0, self.pos) + 1
        return YAMLParseError("from_yaml: %s (line %d)" % (message, line))

    def peek(self, offset=0):
        index = self.pos + offset
        return self.text[index] if index < len(self.text) else ""

    def column(self):
        return self.pos - (self.text.rfind("\n", 0, self.pos) + 1)

    def skip_space(self):
        while self.peek() in (" ", "\t") and self.peek():
            self.pos += 1

    def skip_comment(self):
        self.skip_space()
        if self.peek() == "#":
            end = self.text.find("\n", self.pos)
            self.pos = len(self.text) if end < 0 else end

    def skip_blank_lines(self):
        """Skip spaces, comments and line breaks up to the next content."""
        while True:
            self.skip_comment()
            if self.peek() != "\n":
                return
            self.pos += 1

    def at_line_end(self):
        self.skip_comment()
        return self.peek() in ("\n", "")

    def is_dash(self):
        return self.peek() == "-" and self.peek(1) in _LINE_END

    # -- block collections

    def block_content(self, column):
        """The node that starts at the current position, in column ``column``."""
        if self.is_dash():
            return self.block_sequence(column)
        if self.is_mapping_key():
            return self.block_mapping(column)
        return self.inline_node(column - 1)

    def block_node(self, indent, indentless=False):
        """The value after a ``key:`` (``indentless``) or a ``-`` at ``indent``."""
        self.skip_comment()
        if self.peek() not in ("\n", ""):
            return self.inline_node(indent)
        self.skip_blank_lines()
        if not self.peek():
            return None
        if self.column() > indent:
            return self.block_content(self.column())
        if indentless and self.column() == indent and self.is_dash():
            return self.block_sequence(indent)
        return None

    def block_sequence(self, column):
        items = []
        while self.peek() and self.column() == column and self.is_dash():
            self.pos += 1
            items.append(self.sequence_item(column))
            self.skip_blank_lines()
        self.check_dedent(column)
        return items

    def sequence_item(self, column):
        """The node after ``-``; a compact collection may start on the same line."""
        self.skip_space()
        if self.peek() in ("#", "\n", ""):
            return self.block_node(column)
        if self.is_dash() or self.is_mapping_key():
            return self.block_content(self.column())
        return self.inline_node(column)

    def block_mapping(self, column):
        result = {}
        while self.peek() and self.column() == column and not self.is_dash():
            key = self.mapping_key()
            result[key] = self.block_node(column, indentless=True)
            self.skip_blank_lines()
        self.check_dedent(column)
        return result

    def check_dedent(self, column):
        if self.peek() and self.column() > column:
            raise self.error("bad indentation")

    def is_mapping_key(self):
        if self.peek() in ("[", "{", "&", "*", "!", "|", ">", "?"):
            return False
        start = self.pos
        try:
            self.scalar_key()
            self.skip_space()
            return self.peek() == ":" and self.peek(1) in _LINE_END
        except YAMLParseError:
            return False
        finally:
            self.pos = start

    def mapping_key(self):
        key = self.scalar_key()
        self.skip_space()
        if self.peek() != ":":
            raise self.error("expected ':' after a mapping key")
        self.pos += 1
        return key

    def scalar_key(self):
        if self.peek() == '"':
            return self.double_quoted()
        if self.peek() == "'":
            return self.single_quoted()
        return _resolve_plain(self.plain_line(flow=False))

    # -- scalars and flow collections in block context

    def inline_node(self, indent):
        """A scalar, flow collection or block scalar starting on this line."""
        ch = self.peek()
        self.reject_unsupported(ch)
        if self.is_dash():
            raise self.error("block sequence entries are not allowed in this context")
        if ch in ("|", ">"):
            return self.block_scalar(indent)
        if ch in ("[", "{", '"', "'"):
            value = self.flow_node()
            if not self.at_line_end():
                raise self.error("unexpected text after a value")
            return value
        return self.plain_multiline(indent)

    def reject_unsupported(self, ch):
        if ch and ch in "&*!":
            raise self.error("anchors, aliases and tags are not supported by ioc's YAML reader")
        if ch and ch in "@`%" or ch == "?" and self.peek(1) in _LINE_END:
            raise self.error("a plain scalar cannot start with %r" % ch)

    def plain_line(self, flow):
        """The part of a plain scalar on this line, without trailing spaces."""
        start = self.pos
        while True:
            ch = self.peek()
            if ch in ("\n", "") or flow and ch in ",[]{}":
                break
            nxt = self.peek(1)
            if ch == ":" and (nxt in _LINE_END or flow and nxt in ",[]{}"):
                break
            if ch == "#" and self.pos > start and self.text[self.pos - 1] in " \t":
                break
            self.pos += 1
        return self.text[start:self.pos].rstrip(" \t")

    def plain_multiline(self, indent):
        """A plain scalar; lines indented deeper than ``indent`` continue it."""
        lines = [self.plain_line(flow=False)]
        while self.peek() == "\n":
            mark = self.pos
            blanks = self.next_content_line()
            if (not self.peek() or self.column() <= indent or self.peek() == "#"
                    or self.is_mapping_key()):
                self.pos = mark
                break
            lines.extend([""] * blanks)
            lines.append(self.plain_line(flow=False))
        self.at_line_end()
        return _resolve_plain(lines[0]) if len(lines) == 1 else _fold(lines)

    def next_content_line(self):
        """Move past this line break and any empty lines; return their count."""
        self.pos += 1
        blanks = 0
        while True:
            self.skip_space()
            if self.peek() != "\n":
                return blanks
            blanks += 1
            self.pos += 1

    def single_quoted(self):
        self.pos += 1
        parts = []
        while True:
            ch = self.peek()
            if not ch:
                raise self.error("unterminated single-quoted string")
            self.pos += 1
            if ch != "'":
                parts.append(ch)
            elif self.peek() == "'":
                parts.append("'")
                self.pos += 1
            else:
                return _fold_quoted("".join(parts), [])

    def double_quoted(self):
        self.pos += 1
        parts = []
        escapes = []
        while True:
            ch = self.peek()
            if not ch:
                raise self.error("unterminated double-quoted string")
            if ch == '"':
                self.pos += 1
                return _fold_quoted("".join(parts), escapes)
            if ch == "\\":
                parts.append(self.escape(escapes))
                continue
            parts.append(ch)
            self.pos += 1

    def escape(self, escapes):
        """A placeholder for one escape sequence (kept out of line folding)."""
        code = self.peek(1)
        self.pos += 2
        if code == "\n":
            return _JOIN + "\n"
        if code in _DQ_ESCAPES:
            char = _DQ_ESCAPES[code]
        elif code in _HEX_ESCAPES:
            digits = self.text[self.pos:self.pos + _HEX_ESCAPES[code]]
            self.pos += len(digits)
            try:
                char = chr(int(digits, 16))
            except ValueError:
                raise self.error("bad escape \\%s%s" % (code, digits))
        else:
            raise self.error("unknown escape character %r" % code)
        escapes.append(char)
        return "\x00%d\x00" % (len(escapes) - 1)

    def block_scalar(self, indent):
        """A literal (``|``) or folded (``>``) block scalar."""
        style = self.peek()
        self.pos += 1
        chomp, explicit = self.block_header()
        width = indent + explicit if explicit else None
        lines = []
        while self.peek() == "\n":
            start = self.pos + 1
            if start == len(self.text):
                break
            end = self.text.find("\n", start)
            end = len(self.text) if end < 0 else end
            line = self.text[start:end]
            body = line.lstrip(" ")
            if body:
                if width is None:
                    width = len(line) - len(body)
                if len(line) - len(body) < width or width <= indent:
                    break
            lines.append(line[width:] if width is not None else "")
            self.pos = end
        return _chomp(lines, style, chomp)

    def block_header(self):
        chomp, explicit = "clip", 0
        while self.peek() and self.peek() in "+-0123456789":
            ch = self.peek()
            if ch in "+-":
                chomp = "keep" if ch == "+" else "strip"
            else:
                explicit = int(ch)
            self.pos += 1
        if not self.at_line_end():
            raise self.error("unexpected text after a block scalar indicator")
        return chomp, explicit

    # -- flow context

    def flow_node(self):
        self.skip_flow_space()
        ch = self.peek()
        self.reject_unsupported(ch)
        if ch == "[":
            return self.flow_sequence()
        if ch == "{":
            return self.flow_mapping()
        if ch == '"':
            return self.double_quoted()
        if ch == "'":
            return self.single_quoted()
        return self.flow_plain()

    def skip_flow_space(self):
        while True:
            self.skip_comment()
            if self.peek() != "\n":
                return
            self.pos += 1

    def flow_plain(self):
        words = [self.plain_line(flow=True)]
        while self.peek() == "\n":
            self.skip_flow_space()
            if not self.peek() or self.peek() in ",]}:":
                break
            words.append(self.plain_line(flow=True))
        if len(words) == 1:
            return _resolve_plain(words[0])
        return " ".join(w for w in words if w)

    def flow_sequence(self):
        self.pos += 1
        items = []
        while True:
            self.skip_flow_space()
            if self.peek() == "]":
                self.pos += 1
                return items
            item = self.flow_node()
            self.skip_flow_space()
            if self.peek() == ":":
                self.pos += 1
                item = {item: self.flow_value("]")}
            items.append(item)
            self.flow_separator("]")

    def flow_mapping(self):
        self.pos += 1
        result = {}
        while True:
            self.skip_flow_space()
            if self.peek() == "}":
                self.pos += 1
                return result
            key = self.flow_node()
            self.skip_flow_space()
            value = None
            if self.peek() == ":":
                self.pos += 1
                value = self.flow_value("}")
            result[key] = value
            self.flow_separator("}")

    def flow_value(self, closing):
        self.skip_flow_space()
        return None if self.peek() in (",", closing) else self.flow_node()

    def flow_separator(self, closing):
        self.skip_flow_space()
        if self.peek() == ",":
            self.pos += 1
        elif self.peek() != closing:
            raise self.error("expected ',' or '%s' in a flow collection" % closing)


def _fold(lines):
    """Join the lines of a multi-line scalar: a single break is a space,
    each empty line a newline."""
    out = lines[0]
    pending = 0
    for index, line in enumerate(lines[1:], 1):
        if not line and index < len(lines) - 1:
            pending += 1
            continue
        if out.endswith(_JOIN):
            out = out[:-len(_JOIN)] + line
        else:
            out += ("\n" * pending if pending else " ") + line
        pending = 0
    return out


_UNICODE_BREAK = re.compile("[ \t]*([\x85\u2028\u2029])[ \t]*")


def _fold_quoted(raw, escapes):
    """A quoted scalar's value: fold its line breaks, then apply its escapes."""
    raw = _UNICODE_BREAK.sub(lambda m: "\n" if m.group(1) == "\x85" else m.group(1), raw)
    lines = raw.split("\n")
    if len(lines) > 1:
        lines = ([lines[0].rstrip(" \t")] + [line.strip(" \t") for line in lines[1:-1]]
                 + [lines[-1].lstrip(" \t")])
        raw = _fold(lines)
    raw = raw.replace(_JOIN, "")
    return re.sub("\x00([0-9]+)\x00", lambda m: escapes[int(m.group(1))], raw)


def _fold_block(lines):
    """The folded (``>``) reading of a block scalar's content lines."""
    out = []
    previous = None
    pending = 0
    for line in lines:
        if not line:
            pending += 1
            continue
        if previous is None:
            out.append("\n" * pending)
        elif line[:1] in (" ", "\t") or previous[:1] in (" ", "\t"):
            out.append("\n" * (pending + 1))
        else:
            out.append("\n" * pending if pending else " ")
        out.append(line)
        previous = line
        pending = 0
    return "".join(out)


def _chomp(lines, style, chomp):
    """Join a block scalar's lines and apply its chomping indicator."""
    content = list(lines)
    while content and not content[-1]:
        content.pop()
    trailing = len(lines) - len(content)
    text = "\n".join(content) if style == "|" else _fold_block(content)
    if chomp == "strip" or (not content and chomp == "clip"):
        return text
    if chomp == "keep":
        return text + "\n" * (trailing + 1 if content else trailing)
    return text + "\n"


_DOC_START = re.compile(r"^---(?=[ \t\n]|$)", re.M)
_DOC_END = re.compile(r"^\.\.\.[ \t]*(?:#[^\n]*)?$", re.M)


def _only_comments(text):
    return all(not line.strip() or line.lstrip().startswith("#")
               for line in text.split("\n"))


def _documents(text):
    """The texts of the documents in a stream (directives are dropped)."""
    text = "\n".join(line for line in text.replace("\r\n", "\n").split("\n")
                     if not line.startswith("%"))
    chunks = [_DOC_END.split(chunk)[0] for chunk in _DOC_START.split(text)]
    first, rest = chunks[0], chunks[1:]
    return ([] if _only_comments(first) else [first]) + rest


def _load_document(text):
    reader = _Reader(text)
    reader.skip_blank_lines()
    if not reader.peek():
        return None
    value = reader.block_content(reader.column())
    reader.skip_blank_lines()
    if reader.peek():
        raise reader.error("unexpected content")
    return value


def yaml_load_all(text):
    """The data of every document in ``text`` (ioc's own reader, no PyYAML).

    Supported: block mappings and sequences (indentless sequences under a key,
    compact ``- key: v`` items), flow ``[...]``/``{...}`` collections, plain
    (multi-line folded), single- and double-quoted scalars with escapes, literal
    ``|`` and folded ``>`` block scalars with chomping and indentation
    indicators, comments, ``---``/``...`` document markers, and YAML 1.1 scalar
    resolution (``yes``/``on``/``true`` booleans, ``~``/``null``, ints in
    decimal/octal/hex/binary/sexagesimal, floats incl. ``.inf``/``.nan``).

    Not supported (YAMLParseError): anchors and aliases, tags, complex ``?``
    keys, merge keys. Timestamps stay strings (PyYAML makes dates of them).
    """
    return [_load_document(doc) for doc in _documents(text)]
