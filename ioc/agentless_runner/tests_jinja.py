"""Ansible's jinja2 tests (``x is version('2.0', '>=')``...), target-safe.

``TESTS`` maps each name (also as ``ansible.builtin.<name>``) to its function;
:func:`names` lists every test a template may use, jinja2's built-ins
included. Jinja2's own ``defined``, ``undefined``, ``none``, ``string``,
``number``, ``mapping``, ``sequence``, ``iterable``, ``boolean``, ``in``...
are kept as they are.

Imports only the stdlib, jinja2 and the runner's context; runs on Python 3.9+.
"""
import collections.abc
import math
import os
import re
import urllib.parse

import jinja2.tests

from ioc.agentless_runner.context import as_boolean, legacy, warn
from ioc.agentless_runner.trust import VaultedText

__all__ = ["TESTS", "ControllerAnswers", "TestError", "names"]

TESTS = {}


class TestError(ValueError):
    """A test was applied to a value it cannot judge.

    ``obj``: the value the error is about, where Ansible's test raises with
    ``obj=`` (its error's "caused by" part shows it).
    """

    __test__ = False  # not a pytest test class

    def __init__(self, message, obj=None):
        ValueError.__init__(self, message)
        self.obj = obj


class ControllerAnswers(Exception):
    """This call is Ansible's own test's to answer, on the controller (as a
    plugin ioc lacks is: ``templating._foreign``)."""


def _register(*aliases):
    def decorate(func):
        for name in aliases:
            TESTS[name] = func
        return func
    return decorate


def names():
    """Every test name a template may use (jinja2 built-ins included)."""
    return frozenset(jinja2.tests.TESTS) | frozenset(TESTS)


# -- registered task results --------------------------------------------------------


def _result(value, test):
    if not isinstance(value, collections.abc.Mapping):
        raise TestError("The '%s' test expects a dictionary" % test)
    return value


@_register("failed", "failure")
def failed(result):
    """The registered result failed."""
    return bool(_result(result, "failed").get("failed", False))


@_register("success", "succeeded", "successful")
def success(result):
    """The registered result did not fail (Ansible's message names 'failed')."""
    return not failed(result)


@_register("changed", "change")
def changed(result):
    """The result changed; for a loop, any item changed."""
    result = _result(result, "changed")
    if "changed" in result:
        return bool(result["changed"])
    items = result.get("results")
    # Ansible reads results[0] first: an empty list fails as it does there
    if isinstance(items, collections.abc.Sequence) and not isinstance(items, str) \
            and isinstance(items[0], collections.abc.Mapping):
        return any(r.get("changed") for r in items)
    return False


@_register("skipped", "skip")
def skipped(result):
    """The registered result was skipped."""
    return bool(_result(result, "skipped").get("skipped", False))


@_register("unreachable")
def unreachable(result):
    """The registered result is an unreachable host's."""
    return bool(_result(result, "unreachable").get("unreachable"))


@_register("reachable")
def reachable(result):
    """Not :func:`unreachable` (whose words a non-mapping gets)."""
    return not unreachable(result)


@_register("timedout")
def timedout(result):
    """The task's ``timeout`` ended it (a ``timedout`` with a ``period``)."""
    timed = _result(result, "timedout").get("timedout")
    return bool(timed and bool(timed.get("period")))


def _async_state(result, key):
    """An async result's ``key``; a result that has none (no async task's) is
    taken as true, with Ansible's warning."""
    result = _result(result, key)
    if key in result:
        return bool(result[key])
    warn("The '%s' test expects an async task, but a non-async task was tested" % key)
    return True


@_register("finished")
def finished(result):
    """An async result has finished (``finished`` key)."""
    return _async_state(result, "finished")


@_register("started")
def started(result):
    """An async job was started (``started`` key)."""
    return _async_state(result, "started")


# -- regular expressions ------------------------------------------------------------------


def _regex(value, pattern, ignorecase, multiline, match_type):
    flags = (re.I if ignorecase else 0) | (re.M if multiline else 0)
    compiled = re.compile(pattern, flags)
    return bool(getattr(compiled, match_type)(str(value)))


@_register("match")
def match(value, pattern="", ignorecase=False, multiline=False):
    """``pattern`` matches at the start of ``value``."""
    return _regex(value, pattern, ignorecase, multiline, "match")


@_register("search")
def search(value, pattern="", ignorecase=False, multiline=False):
    """``pattern`` matches anywhere in ``value``."""
    return _regex(value, pattern, ignorecase, multiline, "search")


@_register("regex")
def regex(value="", pattern="", ignorecase=False, multiline=False, match_type="search"):
    """``match_type`` is ``search`` (default), ``match`` or ``fullmatch``."""
    if match_type not in ("search", "match", "fullmatch"):
        if legacy():  # (2.19 calls getattr(re, match_type, 'search'))
            raise TestError("'str' object is not callable")
        raise TestError("Invalid match_type specified. Expected one of: search, match, fullmatch.",
                        obj=match_type)
    return _regex(value, pattern, ignorecase, multiline, match_type)


# -- versions -------------------------------------------------------------------------------

_OPERATORS = {
    "==": "eq", "=": "eq", "eq": "eq", "<": "lt", "lt": "lt", "<=": "le", "le": "le",
    ">": "gt", "gt": "gt", ">=": "ge", "ge": "ge", "!=": "ne", "<>": "ne", "ne": "ne",
}
_LOOSE_COMPONENT = re.compile(r"(\d+|[a-z]+|\.)", re.I)
_STRICT = re.compile(r"^(\d+)\.(\d+)(\.(\d+))?([ab](\d+))?$", re.A)
_SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


def _loose_key(version):
    """distutils' LooseVersion: numbers as ints, letters as strings."""
    parts = [p for p in _LOOSE_COMPONENT.split(version) if p and p != "."]
    return [int(p) if p.isdigit() else p for p in parts]


def _strict_key(version):
    """distutils' StrictVersion: N.N[.N][{a|b}N]; a release sorts after its pre-releases."""
    found = _STRICT.match(version)
    if not found:
        raise TestError("invalid version number '%s'" % version)
    major, minor, _, patch, pre, pre_num = found.groups()
    release = (int(major), int(minor), int(patch or 0))
    prerelease = (1, "", 0) if pre is None else (0, pre[0], int(pre_num))
    return release + prerelease


def _semver_key(version):
    """Semantic Versioning 2.0 precedence (build metadata ignored)."""
    found = _SEMVER.match(version)
    if not found:
        raise TestError("invalid semantic version '%s'" % version)
    major, minor, patch, pre = found.groups()
    if pre is None:
        return (int(major), int(minor), int(patch), 1, ())
    fields = tuple((0, int(f), "") if f.isdigit() else (1, 0, f) for f in pre.split("."))
    return (int(major), int(minor), int(patch), 0, fields)


_VERSION_TYPES = {"loose": _loose_key, "strict": _strict_key,
                  "semver": _semver_key, "semantic": _semver_key, "pep440": None}
_VERSION_TYPE_NAMES = ("loose", "strict", "semver", "semantic", "pep440")


def _compare(a, b, op):
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b,
            "gt": a > b, "ge": a >= b}[op]


@_register("version", "version_compare")
def version(value, version="", operator="eq", strict=None, version_type=None):
    """Compare version strings like Ansible (``loose`` by default)."""
    if strict is not None and version_type is not None:
        raise TestError("Cannot specify both 'strict' and 'version_type'")
    if not value:
        raise TestError("Input version value cannot be empty")
    if not version:
        raise TestError("Version parameter to compare against cannot be empty")
    kind = "strict" if strict else (version_type or "loose")
    if kind not in _VERSION_TYPES:
        raise TestError("Invalid version type (%s). Must be one of %s"
                        % (kind, ", ".join(map(repr, _VERSION_TYPE_NAMES))))
    if kind == "pep440":
        # (Ansible's needs ``packaging``, a library that is not the runner's)
        raise ControllerAnswers()
    if operator not in _OPERATORS:
        raise TestError("Invalid operator type (%s). Must be one of %s"
                        % (operator, ", ".join(map(repr, _OPERATORS))))
    key = _VERSION_TYPES[kind]
    try:
        return _compare(key(str(value)), key(str(version)), _OPERATORS[operator])
    except Exception as exc:
        raise TestError("Version comparison failed: %s" % exc)


# -- collections ----------------------------------------------------------------------------


@_register("subset", "issubset")
def subset(a, b):
    """Every item of ``a`` is in ``b``."""
    return set(a) <= set(b)


@_register("superset", "issuperset")
def superset(a, b):
    """Every item of ``b`` is in ``a``."""
    return set(a) >= set(b)


@_register("contains")
def contains(seq, value):
    """``value in seq`` (the reverse of jinja's ``in``, handy with ``select``)."""
    return value in seq


@_register("any")
def any_(seq):
    return any(seq)


@_register("all")
def all_(seq):
    return all(seq)


# -- values ----------------------------------------------------------------------------------


def _to_bool(value):
    """Ansible's ``boolean(value)`` where it converts; anything else keeps its truthiness."""
    converted = as_boolean(value)
    return bool(value) if converted is None else converted


@_register("vault_encrypted")
def vault_encrypted(value):
    """Whether ``value`` is one vault-encrypted value (a :class:`VaultedText`,
    as ansible-core 2.19+ keeps its ``EncryptedString``): not a text made from
    one. An undefined value fails, as Ansible's test trips its marker."""
    if isinstance(value, jinja2.Undefined):
        value._fail_with_undefined_error()
    ciphertext = value.ciphertext if value.__class__ is VaultedText else None
    # (VaultLib.is_encrypted: ASCII text that starts with the vault header)
    return bool(ciphertext) and ciphertext.isascii() and ciphertext.startswith("$ANSIBLE_VAULT")


@_register("truthy")
def truthy(value, convert_bool=False):
    """Python truthiness; with ``convert_bool`` 'yes'/'no' strings count as bools."""
    return _to_bool(value) if convert_bool else bool(value)


@_register("falsy")
def falsy(value, convert_bool=False):
    return not truthy(value, convert_bool)


@_register("nan", "isnan")
def nan(value):
    return isinstance(value, float) and math.isnan(value)


# -- paths (on the host evaluating the template) -------------------------------------------


@_register("file", "is_file")
def is_file(path):
    return os.path.isfile(str(path))


@_register("directory", "is_dir")
def is_dir(path):
    return os.path.isdir(str(path))


@_register("exists")
def exists(path):
    return os.path.exists(str(path))  # (Ansible's is os.path.exists: no ~ expansion)


@_register("link", "is_link")
def is_link(path):
    return os.path.islink(str(path))


@_register("abs", "is_abs")
def is_abs(path):
    return os.path.isabs(str(path))


@_register("mount", "is_mount")
def is_mount(path):
    return os.path.ismount(str(path))


@_register("same_file", "is_same_file")
def same_file(a, b):
    return os.path.samefile(str(a), str(b))


@_register("link_exists")
def link_exists(path):
    return os.path.lexists(str(path))


def _uri(value, schemes=None):
    try:
        parsed = urllib.parse.urlparse(value)
        return all([parsed.scheme is not None, parsed.path is not None,
                    not schemes or parsed.scheme in schemes])
    except Exception:  # (Ansible's: anything urlparse refuses is no URI)
        return False


@_register("uri")
def is_uri(value, schemes=None):
    """``value`` parses as a URI (with one of ``schemes``, when given)."""
    return _uri(value, schemes)


@_register("url")
def is_url(value, schemes=None):
    """A URI with a network location (or a ``file:`` one)."""
    if not _uri(value, schemes):
        return False
    parsed = urllib.parse.urlparse(value)
    return bool(parsed.netloc or parsed.scheme == "file")


@_register("urn")
def is_urn(value):
    return _uri(value, ["urn"])


# FQCN aliases: ``x is ansible.builtin.version('2', '>=')``.
for _name, _func in list(TESTS.items()) + list(jinja2.tests.TESTS.items()):
    TESTS["ansible.builtin." + _name] = TESTS.get(_name, _func)
