"""``-e`` / ``--extra-vars`` values → one dict of extra variables."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ioc.errors import LoadError
from ioc.loader.kv import parse_kv
from ioc.loader.yamlsrc import load_yaml_file, load_yaml_text, plain
from ioc.model import Location

__all__ = ["parse_extra_vars"]


def parse_extra_vars(values: Sequence[str]) -> dict[str, Any]:
    """Merge ``-e`` values, later ones winning key by key (top level only).

    Each value is ``@file`` (a YAML or JSON file of variables), a YAML/JSON
    mapping (``{"a": 1}``, ``a: 1``) or ``k=v k2='v 2'`` pairs, whose values
    stay strings as in Ansible. Raises :class:`LoadError` naming the file and
    line, or quoting the value that could not be understood.
    """
    merged: dict[str, Any] = {}
    for value in values:
        merged.update(_one(value))
    return merged


def _one(value: str) -> Mapping[str, Any]:
    text = value.strip()
    if not text:
        return {}
    if text.startswith("@"):
        return _from_file(text[1:])
    if text[0] in "[{":
        return _document(text, value)
    pairs = parse_kv(text)
    if "_raw_params" not in pairs:
        return pairs
    return _document(text, value)


def _from_file(path: str) -> Mapping[str, Any]:
    data = load_yaml_file(path)
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise LoadError("extra vars file must contain a mapping", Location(path, 1))
    return plain(data)  # type: ignore[no-any-return]


def _document(text: str, original: str) -> Mapping[str, Any]:
    data = load_yaml_text(text, "<extra vars %r>" % original)
    if not isinstance(data, Mapping):
        raise LoadError(
            "invalid extra vars %r: expected k=v pairs, a YAML/JSON mapping or @file" % original
        )
    return plain(data)  # type: ignore[no-any-return]
