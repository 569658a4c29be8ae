"""YAML reading that remembers where every mapping was written.

Playbooks, roles, vars files and YAML inventories are read with
:class:`LocatedLoader`. Mappings come back as :class:`LocatedDict` (a ``dict``
with a ``location`` and the line of each key); everything else stays a plain
builtin, so the data can be handed to any code that expects ordinary YAML.
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping

import yaml

from ioc.errors import LoadError, YamlSyntaxError
from ioc.model import Location, verbatim

__all__ = ["LocatedDict", "LocatedLoader", "load_yaml_file", "location_of", "key_location",
           "plain", "written_vars", "written_text", "value_origins", "item_locations", "value_location", "set_vault", "set_text_kinds", "yaml_error"]

#: The run's vault decryption, ``(data, source) -> plaintext`` (raising with
#: Ansible's message); set once by the front end (:func:`set_vault`), as
#: Ansible's own loader holds the run's vault secrets.
_VAULT: list = []


def set_vault(decrypt: Any) -> None:
    """Decrypt vault-encrypted files and ``!vault`` values with ``decrypt`` from now on."""
    _VAULT[:] = [decrypt]


#: How ``!unsafe`` text (``untrusted(text, origin)``) and a decrypted ``!vault``
#: value (``vaulted(text, ciphertext, origin)``) are kept. The front end installs the
#: runner's ``UntrustedText`` and ``VaultedText`` (:func:`set_text_kinds`; the
#: loader may not import the runner, DESIGN §1), which carry both to the
#: runner: untrusted text is never templated nor evaluated there, a vault
#: value is ``vault_encrypted``. Else untrusted text is kept
#: :func:`ioc.model.verbatim` and a vault value is its text.
#: A template a layer of variables holds is ``written(text, origin)``: the
#: runner's ``WrittenTemplate`` reports a deprecated value it reads where it
#: was written, as 2.21 does (:func:`written_vars`); else the text itself.
_TEXT_KINDS: dict = {"untrusted": lambda text, origin: verbatim(text),
                     "vaulted": lambda text, ciphertext, origin: text,
                     "written": lambda text, origin: text}


def set_text_kinds(untrusted: Any, vaulted: Any, written: Any = None) -> None:
    """Keep ``!unsafe`` text as ``untrusted(text, origin)``, a ``!vault`` value
    as ``vaulted(text, ciphertext, origin)`` and a variable's template as
    ``written(text, origin)`` from now on."""
    _TEXT_KINDS.update(untrusted=untrusted, vaulted=vaulted)
    if written is not None:
        _TEXT_KINDS["written"] = written


def _decrypt(data: bytes, where: Location) -> str:
    if not _VAULT:
        raise LoadError("Attempting to decrypt but no vault secrets found", where)
    try:
        return _VAULT[0](data, where.path).decode("utf-8")
    except (ValueError, UnicodeDecodeError) as exc:
        raise LoadError(str(exc), where) from None
    except Exception as exc:  # the decryptor's own failure (holds no secret)
        raise LoadError(str(exc), where) from None


class LocatedDict(dict):  # type: ignore[type-arg]
    """A mapping read from YAML, with the file, 1-based line and column it starts at.

    ``key_lines`` maps each scalar key to the (line, column) it was written
    at, so that an error about one key can point at that key rather than at
    the mapping.
    """

    location: Location
    key_lines: dict[Any, tuple[int, int]]
    #: Per scalar key, where its value starts (1-based line and column); for a
    #: list value, where each item starts. Ansible names these positions in
    #: some errors (a non-boolean ``when``, ``path:line:col``).
    value_marks: dict[Any, Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.location = Location("<unknown>")
        self.key_lines = {}
        self.value_marks = {}
        #: Keys whose value (or an item of it) was written ``!unsafe``.
        self.unsafe_keys: frozenset[str] = frozenset()


class LocatedLoader(yaml.SafeLoader):
    """A SafeLoader whose mappings are :class:`LocatedDict`.

    ``source_path`` names the file in every location; ``!unsafe`` strings load
    as plain strings and ``!vault`` values are decrypted (:func:`set_vault`).
    """

    def __init__(self, stream: Any, source_path: str = "<string>") -> None:
        super().__init__(stream)
        self.source_path = source_path


def _construct_mapping(loader: LocatedLoader, node: yaml.MappingNode) -> Iterator[LocatedDict]:
    data = LocatedDict()
    data.location = Location(loader.source_path, node.start_mark.line + 1,
                             node.start_mark.column + 1)
    yield data
    data.update(loader.construct_mapping(node))
    data.key_lines = {
        key.value: _mark(key)
        for key, _ in node.value
        if isinstance(key, yaml.ScalarNode)
    }
    data.value_marks = {
        key.value: [_mark(item) for item in value.value]
        if isinstance(value, yaml.SequenceNode) else _mark(value)
        for key, value in node.value
        if isinstance(key, yaml.ScalarNode)
    }
    data.unsafe_keys = frozenset(
        key.value for key, value in node.value
        if isinstance(key, yaml.ScalarNode) and (value.tag == "!unsafe" or (
            isinstance(value, yaml.SequenceNode) and any(v.tag == "!unsafe" for v in value.value))))


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def refuse_unsafe_conditions(ds: Mapping[str, Any], where: Location) -> None:
    """A conditional keyword written ``!unsafe`` is text Ansible never evaluates:
    the task fails ("Encountered untrusted template or expression."). ioc's
    conditions carry no trust to the runner, so ioc-run refuses it before
    anything runs (mitogen_batch runs such a task through Ansible)."""
    for key in ("when", "changed_when", "failed_when", "until"):
        if key in getattr(ds, "unsafe_keys", ()):
            raise LoadError("%s written !unsafe: Ansible never evaluates untrusted text and "
                            "fails the task ('Encountered untrusted template or expression.'); "
                            "ioc-run cannot carry that to the target: drop !unsafe, or run the "
                            "play with ansible-playbook and the mitogen_batch strategy" % key,
                            value_location(ds, key, location_of(ds, where)))


def value_origins(ds: Mapping[str, Any], key: str, count: int) -> tuple[str, ...]:
    """``path:line:col`` of the value of ``key`` (of each item of a list value).

    Exactly ``count`` entries; ``""`` where the position is unknown.
    """
    marks = getattr(ds, "value_marks", {}).get(key)
    path = getattr(getattr(ds, "location", None), "path", None)
    if marks is None or path is None:
        return ("",) * count
    marks = marks if isinstance(marks, list) else [marks] * count
    out = tuple("%s:%d:%d" % (path, line, col) for line, col in marks[:count])
    return out + ("",) * (count - len(out))


def value_location(ds: Mapping[str, Any], key: str, default: Location) -> Location:
    """Where the value of ``key`` starts (where a list value's first item does)."""
    mark = getattr(ds, "value_marks", {}).get(key)
    mark = mark[0] if isinstance(mark, list) and mark else mark
    where = location_of(ds, default)
    return Location(where.path, *mark) if isinstance(mark, tuple) else where


def item_locations(ds: Mapping[str, Any], key: str) -> tuple[Location, ...]:
    """Where each item of the list value of ``key`` starts (``()`` if unknown)."""
    marks = getattr(ds, "value_marks", {}).get(key)
    path = getattr(getattr(ds, "location", None), "path", None)
    if not isinstance(marks, list) or path is None:
        return ()
    return tuple(Location(path, line, col) for line, col in marks)


def _construct_unsafe(loader: LocatedLoader, node: yaml.Node) -> Any:
    """``!unsafe``: text Ansible never templates nor evaluates, each string kept
    as untrusted, knowing where it was written (see :func:`set_text_kinds`)."""
    origin = Location(loader.source_path, *_mark(node)).origin
    if isinstance(node, yaml.ScalarNode):
        return _untrusted(loader.construct_scalar(node), origin)
    if isinstance(node, yaml.SequenceNode):
        return _untrusted(loader.construct_sequence(node, deep=True), origin)
    return _untrusted(loader.construct_mapping(node, deep=True), origin)  # type: ignore[arg-type]


def _untrusted(value: Any, origin: str) -> Any:
    if isinstance(value, str):
        return _TEXT_KINDS["untrusted"](value, origin)
    if isinstance(value, list):
        return [_untrusted(v, origin) for v in value]
    if isinstance(value, dict):
        return {k: _untrusted(v, origin) for k, v in value.items()}
    return value


def _construct_vault(loader: LocatedLoader, node: yaml.Node) -> Any:
    where = Location(loader.source_path, *_mark(node))
    if not isinstance(node, yaml.ScalarNode):
        raise LoadError("!vault must be a string", where)
    ciphertext = str(loader.construct_scalar(node))
    # (the decrypted text keeps its ciphertext: the vault_encrypted test is true of it)
    return _TEXT_KINDS["vaulted"](_decrypt(ciphertext.encode("utf-8"), where), ciphertext,
                                  where.origin)


LocatedLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
LocatedLoader.add_constructor("!unsafe", _construct_unsafe)
LocatedLoader.add_constructor("!vault", _construct_vault)


def written_text(value: Any, origin: str) -> Any:
    """``value``, a variable's, kept with ``origin`` when it is a template
    (see ``_TEXT_KINDS``)."""
    if value.__class__ is str and ("{{" in value or "{%" in value) and origin:
        return _TEXT_KINDS["written"](value, origin)
    return value


def written_vars(ds: Mapping[str, Any]) -> dict:
    """The variables ``ds`` (a mapping read from YAML) holds, as :func:`plain`
    makes them, each one whose value is a template kept with where it was
    written (see ``_TEXT_KINDS``)."""
    out = plain(ds)
    for name, value in out.items():
        if value.__class__ is str and ("{{" in value or "{%" in value):
            out[name] = written_text(value, value_origins(ds, name, 1)[0])
    return out  # type: ignore[no-any-return]


def plain(value: Any) -> Any:
    """``value`` with every :class:`LocatedDict` inside turned into a ``dict``.

    Variables leave the controller (pickled to the target, where only
    builtins can be unpickled): every loader that produces *values* (vars,
    vars_files, role vars/defaults, inventory and extra vars) returns them
    through this. Lists are copied too, so no located mapping hides in one.
    """
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def load_yaml_text(text: str, path: str) -> Any:
    """Parse one YAML document; ``path`` is only used in locations and errors."""
    loader = LocatedLoader(text, source_path=path)
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        parsed = _libyaml_error(text) or exc
        raise yaml_error(parsed, path) from parsed
    except yaml.YAMLError as exc:
        raise LoadError("YAML parsing failed: %s" % exc, Location(path)) from exc
    finally:
        loader.dispose()


def _libyaml_error(text: str) -> Any:
    """The error libyaml's parser reports for ``text`` (as ansible-core parses
    with it, its wording is Ansible's), or None without libyaml."""
    if not getattr(yaml, "__with_libyaml__", False):
        return None
    try:
        yaml.load(text, Loader=yaml.CSafeLoader)  # noqa: S506 - parsed only for its error
    except yaml.MarkedYAMLError as exc:
        return exc
    except yaml.YAMLError:
        return None
    return None


def yaml_error(exc: yaml.MarkedYAMLError, path: str) -> YamlSyntaxError:
    """A YAML syntax error worded and placed as ansible-core 2.21 words it
    (``YAML parsing failed: While parsing ... .`` at the problem's line and
    column). Raise it ``from exc``: a front end with ansible-core adds
    Ansible's own hints (quotes, colons, tabs) from the parser's error."""
    mark = exc.problem_mark or exc.context_mark
    text = " ".join(part for part in (exc.context, exc.problem, exc.note) if part).strip()
    text = " ".join(text.split()) or "invalid YAML"
    text = text[0].upper() + text[1:]
    if not text.endswith("."):
        text += "."
    where = Location(path, mark.line + 1, mark.column + 1) if mark is not None else Location(path)
    return YamlSyntaxError("YAML parsing failed: %s" % text, where)


def load_yaml_file(path: str) -> Any:
    """Read a YAML file; an empty file gives ``None``.

    Raises :class:`LoadError` naming ``path:line`` on a syntax error, and
    naming ``path`` when the file cannot be read. Callers that know *who*
    referenced the file should check that it exists first, to report the
    referencing line instead.
    """
    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise LoadError("cannot read file: %s" % _reason(exc), Location(path)) from exc
    if text.lstrip().startswith("$ANSIBLE_VAULT;"):
        text = _decrypt(text.encode("utf-8"), Location(path))
    return load_yaml_text(text, path)


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


def location_of(obj: Any, default: Location) -> Location:
    """The location ``obj`` was read from, or ``default`` for non-mappings."""
    location = getattr(obj, "location", None)
    return location if isinstance(location, Location) else default


def key_location(mapping: Mapping[Any, Any], key: Any, default: Location) -> Location:
    """The location of ``key`` inside ``mapping`` (its own line when known)."""
    where = location_of(mapping, default)
    marks = getattr(mapping, "key_lines", None) or {}
    mark = marks.get(key)
    return Location(where.path, *mark) if mark else where

