"""Specification of ioc.loader.parse_extra_vars (the values of ``-e``)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ioc.errors import LoadError
from ioc.loader import parse_extra_vars


def test_key_value_pairs_are_strings() -> None:
    assert parse_extra_vars(["a=1 b=true"]) == {"a": "1", "b": "true"}


def test_key_value_pairs_honour_quotes() -> None:
    assert parse_extra_vars(["msg='hello world' path=\"/a b\""]) == {"msg": "hello world", "path": "/a b"}


def test_json_document_keeps_types() -> None:
    assert parse_extra_vars(['{"n": 1, "l": [1, 2], "b": false}']) == {"n": 1, "l": [1, 2], "b": False}


def test_yaml_document_keeps_types() -> None:
    assert parse_extra_vars(["n: 2"]) == {"n": 2}


def test_at_file_reads_yaml(tmp_path: Path) -> None:
    path = tmp_path / "vars.yml"
    path.write_text("x: 1\nnested: {y: [a]}\n")
    assert parse_extra_vars(["@%s" % path]) == {"x": 1, "nested": {"y": ["a"]}}


def test_at_file_reads_json(tmp_path: Path) -> None:
    path = tmp_path / "vars.json"
    path.write_text('{"x": "json"}')
    assert parse_extra_vars(["@%s" % path]) == {"x": "json"}


def test_later_values_win() -> None:
    assert parse_extra_vars(["a=1 b=1", '{"b": 2}', "b=3 c=3"]) == {"a": "1", "b": "3", "c": "3"}


def test_empty_value_adds_nothing() -> None:
    assert parse_extra_vars(["", "  "]) == {}


def test_bad_yaml_in_file_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yml"
    path.write_text("a: 1\nb: [1,\n")
    with pytest.raises(LoadError) as info:
        parse_extra_vars(["@%s" % path])
    assert str(info.value).startswith("%s:" % path)


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "missing.yml"
    with pytest.raises(LoadError) as info:
        parse_extra_vars(["@%s" % path])
    assert str(path) in str(info.value)


def test_file_that_is_not_a_mapping_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "list.yml"
    path.write_text("- a\n- b\n")
    with pytest.raises(LoadError) as info:
        parse_extra_vars(["@%s" % path])
    assert str(info.value).startswith("%s:1: " % path)


def test_value_that_is_neither_pairs_nor_mapping_is_quoted_in_the_error() -> None:
    with pytest.raises(LoadError) as info:
        parse_extra_vars(["msg=hello world"])
    assert "msg=hello world" in str(info.value)


def test_bad_json_is_an_error_naming_the_value() -> None:
    with pytest.raises(LoadError) as info:
        parse_extra_vars(['{"a": ]'])
    assert '{"a": ]' in str(info.value)
