"""Ansible's jinja2 filters, for the controller and the target alike.

``FILTERS`` maps each name (also as ``ansible.builtin.<name>``) to its
function; :func:`names` lists every filter a template may use, jinja2's
built-ins included, so the controller can reject unknown filters before a run.
Jinja2's own filters are used where Ansible uses them too (``int``, ``float``,
``join``, ``map``, ``select``, ``sort``, ``min``...).

YAML (``to_yaml``, ``to_nice_yaml``, ``from_yaml``, ``from_yaml_all``) is
PyYAML's, called as Ansible calls it. The controller's PyYAML travels to
every target with the runner (its pure-Python part: ``ioc.controller.
bootstrap``), so a filter's result never depends on what a target has
installed.

Imports the stdlib, jinja2, PyYAML and the runner's ``context`` and ``trust``;
runs on Python 3.9+.
"""
import base64
import collections
import collections.abc
import datetime
import hashlib
import itertools
import json
import math
import os
import random
import re
import shlex
import time
import uuid

import jinja2.filters
import yaml
from jinja2 import pass_environment
from jinja2.runtime import Undefined

from ioc.agentless_runner.context import legacy
from ioc.agentless_runner.trust import VaultedText


__all__ = ["FILTERS", "FilterError", "GroupTuple", "names"]

FILTERS = {}


class FilterError(ValueError):
    """A filter was given arguments it cannot work with.

    ``obj`` and ``help_text``: the value the error is about and what to do,
    where Ansible's filter raises with them (its error's "caused by" part
    shows them).
    """

    def __init__(self, message, obj=None, help_text=None):
        ValueError.__init__(self, message)
        self.obj = obj
        self.help_text = help_text


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
    """``value`` as text the way Ansible's ``to_text`` makes it: ``str()`` of a
    non-string (``None`` is ``'None'``)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return value if isinstance(value, str) else str(value)


def _is_sequence(value):
    return isinstance(value, (list, tuple))


def _class(value):
    """How Ansible's messages name a value's type: ``<class 'str'>``."""
    return "<class '%s'>" % type(value).__name__


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
    """``value``, or a FilterError if it is undefined (Ansible's is a filter
    failure, not an undefined variable: ``default`` does not catch it)."""
    if isinstance(value, Undefined):
        if msg is None:
            name = getattr(value, "_undefined_name", None)
            msg = ("Mandatory variable %r not defined." % (name,) if name is not None
                   else "Mandatory variable not defined.")
        raise FilterError(_text(msg))
    return value


@_register("type_debug")
def type_debug(value):
    """The name of ``value``'s type (``dict``, ``list``, ``str``...): a trusted
    text's is ``str``, as Ansible names its tagged str by its native type."""
    if isinstance(value, str):
        return "str"
    return type(value).__name__


# -- strings and regular expressions ------------------------------------------------


def _flags(ignorecase=False, multiline=False):
    return (re.I if ignorecase else 0) | (re.M if multiline else 0)


@_register("split")
def split(value, separator=None, maxsplit=-1):
    """``str.split`` as a filter: ``'a,b' | split(',')`` (a string only, as Ansible's)."""
    return str.split(value, separator, maxsplit)


@_register("regex_replace")
def regex_replace(value="", pattern="", replacement="", ignorecase=False,
                  multiline=False, count=0, mandatory_count=0):
    """``re.sub`` with Ansible's arguments."""
    value = _text(value)
    compiled = re.compile(pattern, _flags(ignorecase, multiline))
    output, subs = compiled.subn(replacement, value, count=count)
    if mandatory_count and mandatory_count != subs:
        # (Ansible's message reports ``count``, not the matches: kept as users see it)
        raise FilterError("'%s' should match %d times, but matches %d times in '%s'"
                          % (pattern, mandatory_count, count, value))
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
    if re_type == "posix_extended":
        raise FilterError("Regex type (%s) not yet implemented" % re_type)
    raise FilterError("Invalid regex type (%s)" % re_type)


@_register("quote")
def quote(value):
    """Quote for a POSIX shell (``shlex.quote``)."""
    return shlex.quote("" if value is None else _text(value))


_COMMENT_STYLES = {
    "plain": {"decoration": "# "},
    "erlang": {"decoration": "% "},
    "c": {"decoration": "// "},
    "cblock": {"beginning": "/*", "decoration": " * ", "end": " */"},
    "xml": {"beginning": "<!--", "decoration": " - ", "end": "-->"},
}


@_register("comment")
def comment(text, style="plain", **options):
    """``text`` as a comment block: Ansible's styles and every one of its options.

    By default a line of the decoration without its trailing space frames the
    text (``#``, then ``# line`` per line, then ``#``); ``beginning`` and
    ``end`` add lines around that, ``prefix``/``postfix`` (``*_count`` times)
    replace the framing lines, ``newline`` is the line separator.
    """
    if style not in _COMMENT_STYLES:
        raise FilterError("Invalid style %r." % (style,), obj=style,
                          help_text="Available styles: %s" % ", ".join(_COMMENT_STYLES))
    params = _COMMENT_STYLES[style]
    frame = options.get("decoration", params["decoration"]).rstrip()
    p = {"newline": "\n", "beginning": "", "prefix": frame, "prefix_count": 1,
         "decoration": "", "postfix": frame, "postfix_count": 1, "end": ""}
    p.update(params)
    p.update(options)
    newline, decoration = p["newline"], p["decoration"]
    head = "%s%s" % (p["beginning"], newline) if p["beginning"] else ""
    if p["prefix"]:
        line = newline if p["prefix"] == newline else p["prefix"] + newline
        head += line * int(p["prefix_count"])
    body = (decoration + text.replace(newline, newline + decoration)).replace(
        decoration + newline, decoration.rstrip() + newline)
    tail = newline.join([""] + [p["postfix"] for _ in range(p["postfix_count"])])
    if p["end"]:
        tail += newline + p["end"]
    return head + body + tail


# -- lists and sets -------------------------------------------------------------------


class GroupTuple(collections.namedtuple("GroupTuple", ("grouper", "list"))):
    """One group of ``groupby``: ansible-core's ``GroupTuple`` (2.19+), a named
    tuple as jinja2's own, whose ``grouper`` and ``list`` a template may read
    and whose text is a tuple's (``(1, [{'a': 1}])``). A template's final value
    holding one is converted to a list (``templating.to_builtin``)."""

    __slots__ = ()

    def __repr__(self):
        return tuple.__repr__(self)


@_register("groupby")
@pass_environment
def groupby(environment, value, *args, **kwargs):
    """jinja2's ``groupby``, each group an Ansible :class:`GroupTuple`."""
    return [GroupTuple(group.grouper, group.list)
            for group in jinja2.filters.sync_do_groupby(environment, value, *args, **kwargs)]


@_register("unique")
@pass_environment
def unique(environment, value, case_sensitive=None, attribute=None):
    """Distinct items in order; jinja2's unique, Ansible's fallback for unhashables."""
    try:
        return list(jinja2.filters.do_unique(
            environment, value, case_sensitive=bool(case_sensitive), attribute=attribute))
    except jinja2.exceptions.UndefinedError as exc:
        # an item without the attribute: Ansible's unique fails with the
        # lookup's words, an error of the filter rather than an undefined value
        raise FilterError(str(exc)) from None
    except TypeError as exc:
        if case_sensitive is False or attribute:
            raise FilterError("Jinja2's unique filter failed and we cannot fall back to "
                              "Ansible's version as it does not support the parameters "
                              "supplied.") from exc
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


# Ansible computes these with sets when every item is hashable, so the
# result comes in a set's iteration order (ints by value, strings by their
# hash, which changes from process to process), and in list order otherwise.


@_register("union")
def union(a, b):
    """Items of ``a`` and ``b``, without duplicates."""
    try:
        return list(set(a) | set(b))
    except TypeError:
        return _unique(list(a) + list(b))


@_register("intersect")
def intersect(a, b):
    """Items of ``a`` also in ``b``, without duplicates."""
    try:
        return list(set(a) & set(b))
    except TypeError:
        return _unique(x for x in a if x in b)


@_register("difference")
def difference(a, b):
    """Items of ``a`` not in ``b``, without duplicates."""
    try:
        return list(set(a) - set(b))
    except TypeError:
        return _unique(x for x in a if x not in b)


@_register("symmetric_difference")
def symmetric_difference(a, b):
    """Items in exactly one of ``a`` and ``b``."""
    try:
        return list(set(a) ^ set(b))
    except TypeError:
        both = intersect(a, b)
        return [x for x in union(a, b) if x not in both]


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
    """Tuples of the items of several lists (Ansible's: ``list(zip(...))``)."""
    return list(zip(*lists))


@_register("zip_longest")
def zip_longest(*lists, **kwargs):
    """Like ``zip``, padding the shorter lists with ``fillvalue``."""
    fill = kwargs.pop("fillvalue", None)
    return list(itertools.zip_longest(*lists, fillvalue=fill))


@_register("product")
def product(*lists, **kwargs):
    """Cartesian product (``itertools.product``)."""
    return list(itertools.product(*lists, **kwargs))


@_register("permutations")
def permutations(value, r=None):
    return list(itertools.permutations(value, r))


@_register("combinations")
def combinations(value, r):
    return list(itertools.combinations(value, r))


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
    for number, key in enumerate(keys):
        found = environment.getitem(value, key)
        kind = _type_name(value)
        following = keys[number + 1] if number + 1 < len(keys) else None
        if isinstance(found, Undefined) and (kind == "list" or kind == "dict" and (
                isinstance(following, int) or (key and not isinstance(key, str)))):
            # an index past a list's end, a key a dict lacks that an index
            # follows, or a true non-text key a dict lacks: jinja's getitem
            # falls back to getattr, and Ansible's undefined value names that
            # attribute (a false one, 0 or None, keeps jinja's "no element")
            found = environment.undefined(
                hint="object of type %r has no attribute %r" % (_type_name(value), key),
                obj=value, name=key)
        value = found
    return value


def _type_name(obj):
    """The builtin type name Ansible names a container by (its lazy ones too)."""
    if isinstance(obj, collections.abc.Mapping):
        return "dict"
    if isinstance(obj, collections.abc.Sequence) and not isinstance(obj, (str, bytes)):
        return "list"
    return type(obj).__name__


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
    if list_merge not in _LIST_MERGE:
        raise FilterError("merge_hash: 'list_merge' argument can only be equal to 'replace', "
                          "'keep', 'append', 'prepend', 'append_rp' or 'prepend_rp'")
    if not isinstance(x, dict) or not isinstance(y, dict):
        raise FilterError("failed to combine variables, expected dicts but got a '%s' and a '%s'."
                          % (type(x).__name__, type(y).__name__))
    if x == {} or x == y:
        return dict(y)
    if y == {}:
        return x
    x = dict(x)
    if not recursive and list_merge == "replace":
        x.update(y)
        return x
    for key, y_value in y.items():
        if key not in x:
            x[key] = y_value
            continue
        x_value = x[key]
        if isinstance(x_value, dict) and isinstance(y_value, dict):
            x[key] = merge_hash(x_value, y_value, recursive, list_merge) if recursive else y_value
        elif isinstance(x_value, list) and isinstance(y_value, list):
            x[key] = _merge_lists(x_value, y_value, list_merge)
        else:
            x[key] = y_value
    return x


@_register("combine")
def combine(*terms, **kwargs):
    """Merge dicts left to right; ``recursive`` and ``list_merge`` as Ansible's.

    ``[d1, d2] | combine`` merges a list of dicts; a single term comes back
    as it is, whatever it is, as in Ansible.
    """
    recursive = kwargs.pop("recursive", False)
    list_merge = kwargs.pop("list_merge", "replace")
    if kwargs:
        raise FilterError("'recursive' and 'list_merge' are the only valid keyword arguments")
    dicts = flatten(terms, levels=1)
    if not dicts:
        return {}
    if len(dicts) == 1:
        return dicts[0]
    result = dicts[-1]
    for d in reversed(dicts[:-1]):
        if not isinstance(d, dict) or not isinstance(result, dict):
            # (Ansible's terms, and what it merged of them, are its lazy containers)
            raise FilterError("failed to combine variables, expected dicts but got a '%s' and "
                              "a '%s'." % (_lazy_type_name(d), _lazy_type_name(result)))
        result = merge_hash(d, result, recursive, list_merge)
    return result


def _lazy_type_name(value):
    """The class name of ``value`` as a filter of ansible-core 2.19+ is given it:
    a list, dict or tuple is its lazy container."""
    if isinstance(value, dict):
        return "_AnsibleLazyTemplateDict"
    if isinstance(value, tuple):
        return "_AnsibleLazyAccessTuple"
    if isinstance(value, list):
        return "_AnsibleLazyTemplateList"
    return type(value).__name__


@_register("dict2items")
def dict2items(mydict, key_name="key", value_name="value"):
    """``{k: v}`` -> ``[{key: k, value: v}]``."""
    if not isinstance(mydict, dict):
        raise FilterError("dict2items requires a dictionary, got %s instead." % _class(mydict))
    return [{key_name: k, value_name: v} for k, v in mydict.items()]


@_register("items2dict")
def items2dict(mylist, key_name="key", value_name="value"):
    """``[{key: k, value: v}]`` -> ``{k: v}``."""
    if not _is_sequence(mylist):
        raise FilterError("items2dict requires a list, got %s instead." % _class(mylist))
    try:
        return dict((item[key_name], item[value_name]) for item in mylist)
    except KeyError:
        raise FilterError("items2dict requires each dictionary in the list to contain the "
                          "keys '%s' and '%s', got %s instead." % (key_name, value_name, mylist))
    except TypeError:
        raise FilterError("items2dict requires a list of dictionaries, got %s instead." % mylist)


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


class _Dumper(yaml.SafeDumper):
    """Ansible's ``AnsibleDumper`` for plain data: any mapping is a dict, any
    other collection a list, and a ``str`` subclass (a template's Markup) a
    string.

    Ansible dumps with libyaml's emitter (PyYAML's ``CSafeDumper``, which
    every PyYAML wheel carries); the target runs PyYAML's pure-Python one.
    They differ in two places, and this emitter does as libyaml does: a
    document that is a plain scalar ends without ``...``, and NEL (U+0085)
    and characters beyond U+FFFF are not printable (the scalar is written
    double-quoted, with escapes).
    """

    def write_plain(self, text, split=True):
        yaml.SafeDumper.write_plain(self, text, split)
        self.open_ended = False

    def analyze_scalar(self, scalar):
        analysis = yaml.SafeDumper.analyze_scalar(self, scalar)
        if any(ch == "\x85" or ch > "\uffff" for ch in scalar):
            analysis.allow_flow_plain = analysis.allow_block_plain = False
            analysis.allow_single_quoted = analysis.allow_block = False
        return analysis


_Dumper.add_multi_representer(str, yaml.SafeDumper.represent_str)
_Dumper.add_multi_representer(collections.abc.Mapping, yaml.SafeDumper.represent_dict)
_Dumper.add_multi_representer(collections.abc.Collection, yaml.SafeDumper.represent_list)

#: ansible-core 2.21's ``to_yaml(vault_behavior=...)``: what a vault value
#: (``!vault``) dumps as. 2.19 has no such parameter and keeps it encrypted.
_VAULT_BEHAVIORS = ("decrypt", "keep_encrypted", "redact", "fail")


def _represent_vaulted(dumper, data):
    """A vault value as ansible-core's ``AnsibleDumper`` dumps it under the
    dumper's ``vault_behavior``: its ciphertext as a ``!vault |`` scalar (never
    its text, unless told to decrypt), ``<redacted>``, or an error."""
    behavior = dumper.vault_behavior
    if behavior == "decrypt":
        return dumper.represent_str(str.__str__(data))
    if behavior == "keep_encrypted":
        return dumper.represent_scalar("!vault", data.ciphertext, style="|")
    if behavior == "redact":
        return dumper.represent_str("<redacted>")
    raise FilterError("Attempted to dump a vaulted value", obj=data)


_Dumper.add_representer(VaultedText, _represent_vaulted)
#: A dumper per vault behavior (yaml.dump makes its dumper from a class).
_DUMPERS = {behavior: type("_Dumper", (_Dumper,), {"vault_behavior": behavior})
            for behavior in _VAULT_BEHAVIORS}


@_register("to_yaml")
def to_yaml(value, *args, default_flow_style=None, **kwargs):
    """Terse flow-style YAML: ``yaml.dump`` as Ansible's ``to_yaml`` calls it.

    A vault value is dumped as 2.21's ``vault_behavior`` says (by default
    decrypted); 2.19 always keeps it encrypted, and fails as ``yaml.dump``
    does on a ``vault_behavior`` argument."""
    if legacy():
        behavior = "keep_encrypted"
    else:
        behavior = kwargs.pop("vault_behavior", None)
        if behavior and behavior not in _VAULT_BEHAVIORS:
            raise FilterError("The vault parameter must be one of %s" % ", ".join(_VAULT_BEHAVIORS))
        behavior = behavior or "decrypt"
    return yaml.dump(value, Dumper=_DUMPERS[behavior], allow_unicode=True,
                     default_flow_style=default_flow_style, **kwargs)


@_register("to_nice_yaml")
def to_nice_yaml(value, indent=4, *args, default_flow_style=False, **kwargs):
    """Verbose multi-line YAML, indented by ``indent``."""
    return to_yaml(value, indent=indent, default_flow_style=default_flow_style, **kwargs)


def _safe_loader():
    """SafeLoader plus Ansible's ``!unsafe`` tag (the value, as text), failing
    on a character YAML forbids with libyaml's words, as Ansible's does."""
    class Loader(yaml.SafeLoader):
        def check_printable(self, data):
            try:
                yaml.SafeLoader.check_printable(self, data)
            except yaml.reader.ReaderError as exc:
                exc.reason = "control characters are not allowed"
                # libyaml counts the position in bytes of the UTF-8 text
                exc.position = len(data[:exc.position].encode("utf-8", "surrogatepass"))
                raise

    Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))
    return Loader


_Loader = _safe_loader()


@_register("from_yaml")
def from_yaml(value):
    """The data of a YAML document (None stays None; other non-strings pass through)."""
    if not isinstance(value, str):
        return value
    return yaml.load(value, Loader=_Loader)


@_register("from_yaml_all")
def from_yaml_all(value):
    """The data of every document in a YAML stream, as a list (None: an empty list)."""
    if value is None:
        return []
    if not isinstance(value, str):
        return value
    return list(yaml.load_all(value, Loader=_Loader))


# -- encodings, hashes, paths ----------------------------------------------------------------


@_register("b64encode")
def b64encode(string, encoding="utf-8", urlsafe=False):
    """Base64 of the text in ``encoding`` (``urlsafe``: ``-`` and ``_``), as Ansible's."""
    func = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return func(_text(string).encode(encoding, "surrogateescape")).decode("ascii")


@_register("b64decode")
def b64decode(string, encoding="utf-8", urlsafe=False):
    """The text base64 ``string`` holds in ``encoding`` (``urlsafe``: ``-`` and ``_``)."""
    func = base64.urlsafe_b64decode if urlsafe else base64.b64decode
    data = func(_text(string).encode("utf-8", "surrogateescape"))
    return data.decode(encoding, "surrogateescape")


@_register("hash")
def hash_(data, hashtype="sha1"):
    """Hex digest of ``data`` with any hashlib algorithm."""
    try:
        digest = hashlib.new(hashtype)
    except Exception as exc:
        raise FilterError(str(exc))
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
    try:
        space = uuid.UUID(namespace)
    except (AttributeError, ValueError) as exc:
        raise FilterError("Invalid value '%s' for 'namespace': %s" % (_text(namespace), exc))
    return str(uuid.uuid5(space, _text(string)))


# Ansible calls os.path's functions on the value as it is: anything but a
# string (or bytes) fails with os.path's TypeError.


@_register("basename")
def basename(path):
    return os.path.basename(path)


@_register("dirname")
def dirname(path):
    return os.path.dirname(path)


@_register("realpath")
def realpath(path):
    return os.path.realpath(path)


@_register("expanduser")
def expanduser(path):
    return os.path.expanduser(path)


@_register("expandvars")
def expandvars(path):
    return os.path.expandvars(path)


@_register("relpath")
def relpath(path, start=os.curdir):
    return os.path.relpath(path, start)


@_register("splitext")
def splitext(path):
    """``['name', '.ext']``."""
    return list(os.path.splitext(path))


@_register("path_join")
def path_join(paths):
    """``os.path.join`` of a list (a single string is returned as is)."""
    if isinstance(paths, str):
        return os.path.join(paths)
    if _is_sequence(paths):
        return os.path.join(*paths)
    raise FilterError("|path_join expects string or sequence, got %s instead." % _class(paths))


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
    return datetime.datetime.strptime(string, format)


@_register("strftime")
def strftime(string_format, second=None, utc=False):
    """Format ``second`` (epoch; default now) with ``string_format``."""
    if second is None:
        second = time.time()
    else:
        try:
            second = float(second)
        except Exception:
            raise FilterError("Invalid value for epoch value (%s)" % (second,))
    zone = datetime.timezone.utc if utc else None
    return datetime.datetime.fromtimestamp(second, tz=zone).strftime(string_format)


@_register("random")
def rand(end, start=None, step=None, seed=None):
    """Ansible's ``random`` (in place of jinja2's): a number of
    ``range(start, end, step)``, or an element of a sequence; the same ones
    for the same ``seed``."""
    chooser = random.SystemRandom() if seed is None else random.Random(seed)
    if isinstance(end, int):
        return chooser.randrange(start or 0, end, step or 1)
    if hasattr(end, "__iter__"):
        if start or step:
            raise FilterError("start and step can only be used with integer values")
        return chooser.choice(end)
    raise FilterError("random can only be used on sequences and integers")


# FQCN aliases: ``x | ansible.builtin.to_json``.
for _name, _func in list(FILTERS.items()) + list(jinja2.filters.FILTERS.items()):
    FILTERS["ansible.builtin." + _name] = FILTERS.get(_name, _func)
FILTERS["d"] = jinja2.filters.FILTERS["default"]
FILTERS["ansible.builtin.d"] = FILTERS["d"]
