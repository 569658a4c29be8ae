"""Specification of the filters and tests shared by the controller and the target."""
import math
import os
import uuid

import pytest

from ioc.agentless_runner import filters, tests_jinja
from ioc.agentless_runner.templating import Templar, TemplateError


def render(template, **variables):
    return Templar(variables).template(template)


def check(expression, **variables):
    return Templar(variables).evaluate(expression)


# -- defaults, booleans, types ----------------------------------------------------------------


def test_default_keeps_defined_values():
    assert check("x | default(2)", x=1) == 1


def test_default_boolean_form_keeps_truthy_values():
    assert check("'a' | default('d', true)") == "a"


def test_default_without_boolean_keeps_empty_string():
    assert check("'' | default('d')") == ""


@pytest.mark.parametrize("value", ["yes", "on", "1", "true", "True", "YES", 1, True])
def test_bool_true_values(value):
    assert filters.to_bool(value) is True


@pytest.mark.parametrize("value", ["no", "off", "0", "false", "", "maybe", 0, None, 2])
def test_bool_false_values(value):
    assert filters.to_bool(value) is False


def test_int_filter_with_default():
    assert check("'abc' | int(7)") == 7


def test_int_filter_with_base():
    assert check("'ff' | int(base=16)") == 255


def test_float_filter():
    assert check("'1.5' | float") == 1.5


def test_string_filter():
    assert check("5 | string") == "5"


def test_lower_upper_capitalize():
    assert check("'aB' | lower") == "ab"
    assert check("'aB' | upper") == "AB"
    assert check("'aB' | capitalize") == "Ab"


def test_replace_filter():
    assert check("'a-b' | replace('-', '_')") == "a_b"


def test_ternary_true():
    assert check("true | ternary('y', 'n')") == "y"


def test_ternary_false():
    assert check("false | ternary('y', 'n')") == "n"


def test_ternary_none_value():
    assert check("none | ternary('y', 'n', 'null')") == "null"


def test_ternary_none_without_none_value_is_false():
    assert check("none | ternary('y', 'n')") == "n"


def test_mandatory_passes_defined_values():
    assert check("1 | mandatory") == 1


def test_type_debug_names_builtin_types():
    assert check("x | type_debug", x={"a": 1}) == "dict"
    assert check("x | type_debug", x=[1]) == "list"
    assert check("'s' | type_debug") == "str"


def test_list_filter():
    assert check("'ab' | list") == ["a", "b"]


def test_items_filter():
    assert check("{'a': 1} | items | list") == [["a", 1]]


# -- strings and regular expressions ------------------------------------------------------------


def test_split_filter():
    assert check("'a,b' | split(',')") == ["a", "b"]


def test_split_on_whitespace_by_default():
    assert check("'a  b' | split") == ["a", "b"]


def test_regex_replace():
    assert check("'hello world' | regex_replace('o', '0')") == "hell0 w0rld"


def test_regex_replace_with_groups():
    assert check(r"'ab' | regex_replace('(a)(b)', '\\2\\1')") == "ba"


def test_regex_replace_ignorecase():
    assert check("'ABC' | regex_replace('b', 'x', ignorecase=true)") == "AxC"


def test_regex_replace_multiline():
    assert check("'a\nb' | regex_replace('^', '> ', multiline=true)") == "> a\n> b"


def test_regex_replace_count():
    assert check("'aaa' | regex_replace('a', 'b', count=2)") == "bba"


def test_regex_search_returns_the_match():
    assert check("'foo123' | regex_search('[0-9]+')") == "123"


def test_regex_search_no_match_is_none():
    assert check("'foo' | regex_search('[0-9]+')") is None


def test_regex_search_numbered_groups_return_a_list():
    assert check(r"'k=v' | regex_search('(\\w)=(\\w)', '\\2', '\\1')") == ["v", "k"]


def test_regex_search_named_groups_return_a_list():
    assert check(r"'k=v' | regex_search('(?P<key>\\w)=', '\\g<key>')") == ["k"]


def test_regex_search_ignorecase():
    assert check("'ABC' | regex_search('b', ignorecase=true)") == "B"


def test_regex_findall():
    assert check("'a1b22' | regex_findall('[0-9]+')") == ["1", "22"]


def test_regex_escape():
    assert check("'a.b*' | regex_escape") == r"a\.b\*"


def test_regex_escape_posix_basic():
    assert filters.regex_escape("a.b[", re_type="posix_basic") == r"a\.b\["


def test_quote():
    assert check("\"it's\" | quote") == "'it'\"'\"'s'"


def test_quote_none_is_empty():
    assert filters.quote(None) == "''"


def test_join():
    assert check("[1, 2] | join(',')") == "1,2"


# -- lists and sets -----------------------------------------------------------------------------


def test_length_and_count():
    assert check("[1, 2] | length") == 2
    assert check("[1, 2] | count") == 2


def test_length_of_a_variable_dict():
    assert check("d | length", d={"a": "{{ 1 }}", "b": 2}) == 2


def test_first_and_last():
    assert check("[1, 2, 3] | first") == 1
    assert check("[1, 2, 3] | last") == 3


def test_min_and_max():
    assert check("[3, 1, 2] | min") == 1
    assert check("[3, 1, 2] | max") == 3


def test_max_with_attribute():
    assert check("[{'n': 1}, {'n': 5}] | max(attribute='n')") == {"n": 5}


def test_sum():
    assert check("[1, 2, 3] | sum") == 6


def test_unique_keeps_order():
    assert check("[3, 1, 3, 2, 1] | unique") == [3, 1, 2]


def test_unique_handles_unhashable_items():
    assert check("[{'a': 1}, {'a': 1}] | unique") == [{"a": 1}]


def test_union():
    assert check("[1, 2] | union([2, 3])") == [1, 2, 3]


def test_intersect():
    assert check("[1, 2, 2, 3] | intersect([2, 3, 4])") == [2, 3]


def test_difference():
    assert check("[1, 2, 3] | difference([2])") == [1, 3]


def test_symmetric_difference():
    assert check("[1, 2] | symmetric_difference([2, 3])") == [1, 3]


def test_sort():
    assert check("[3, 1, 2] | sort") == [1, 2, 3]


def test_sort_reverse_by_attribute():
    assert check("[{'n': 1}, {'n': 2}] | sort(attribute='n', reverse=true)") == [
        {"n": 2}, {"n": 1}]


def test_map_attribute():
    assert check("[{'n': 1}, {'n': 2}] | map(attribute='n') | list") == [1, 2]


def test_map_filter():
    assert check("['a'] | map('upper') | list") == ["A"]


def test_select_and_reject():
    assert check("[1, 2, 3, 4] | select('odd') | list") == [1, 3]
    assert check("[1, 2, 3, 4] | reject('odd') | list") == [2, 4]


def test_select_with_ansible_test():
    assert check("['ab', 'cd'] | select('match', 'a') | list") == ["ab"]


def test_selectattr_and_rejectattr():
    users = [{"n": "a", "on": True}, {"n": "b", "on": False}]
    assert check("u | selectattr('on') | map(attribute='n') | list", u=users) == ["a"]
    assert check("u | rejectattr('on') | map(attribute='n') | list", u=users) == ["b"]


def test_selectattr_equalto():
    assert check("[{'k': 1}, {'k': 2}] | selectattr('k', 'equalto', 2) | list") == [{"k": 2}]


def test_flatten_all_levels():
    assert check("[1, [2, [3, [4]]]] | flatten") == [1, 2, 3, 4]


def test_flatten_one_level():
    assert check("[1, [2, [3]]] | flatten(levels=1)") == [1, 2, [3]]


def test_flatten_drops_nulls():
    assert check("[1, none, [2]] | flatten") == [1, 2]


def test_zip():
    assert check("[1, 2] | zip(['a', 'b'])") == [[1, "a"], [2, "b"]]


def test_zip_longest():
    assert check("[1, 2] | zip_longest(['a'], fillvalue='-')") == [[1, "a"], [2, "-"]]


def test_product():
    assert check("[1, 2] | product(['a'])") == [[1, "a"], [2, "a"]]


def test_extract_with_map():
    assert check("['a'] | map('extract', {'a': 1}) | list") == [1]


# -- dictionaries --------------------------------------------------------------------------------


def test_combine_overrides_keys():
    assert check("{'a': 1, 'b': 1} | combine({'b': 2})") == {"a": 1, "b": 2}


def test_combine_is_shallow_by_default():
    assert check("{'a': {'x': 1}} | combine({'a': {'y': 2}})") == {"a": {"y": 2}}


def test_combine_recursive():
    assert check("{'a': {'x': 1}} | combine({'a': {'y': 2}}, recursive=true)") == {
        "a": {"x": 1, "y": 2}}


def test_combine_list_merge_append():
    assert check("{'l': [1]} | combine({'l': [2]}, list_merge='append')") == {"l": [1, 2]}


def test_combine_list_merge_prepend_rp():
    assert check("{'l': [1, 2]} | combine({'l': [2, 3]}, list_merge='prepend_rp')") == {
        "l": [2, 3, 1]}


def test_combine_list_of_dicts():
    assert check("[{'a': 1}, {'b': 2}] | combine") == {"a": 1, "b": 2}


def test_combine_rejects_unknown_keywords():
    with pytest.raises(TemplateError):
        check("{} | combine({}, deep=true)")


def test_combine_does_not_modify_its_input():
    original = {"a": {"x": 1}}
    filters.combine(original, {"a": {"y": 2}}, recursive=True)
    assert original == {"a": {"x": 1}}


def test_dict2items():
    assert check("{'a': 1} | dict2items") == [{"key": "a", "value": 1}]


def test_dict2items_custom_names():
    assert check("{'a': 1} | dict2items(key_name='k', value_name='v')") == [{"k": "a", "v": 1}]


def test_dict2items_requires_a_dict():
    with pytest.raises(TemplateError, match="dict2items requires a dictionary"):
        check("[1] | dict2items")


def test_items2dict():
    assert check("[{'key': 'a', 'value': 1}] | items2dict") == {"a": 1}


def test_items2dict_custom_names():
    assert check("[{'k': 'a', 'v': 1}] | items2dict(key_name='k', value_name='v')") == {"a": 1}


# -- JSON -------------------------------------------------------------------------------------------


def test_to_json():
    assert check("{'a': [1, 'x']} | to_json") == '{"a": [1, "x"]}'


def test_to_json_of_a_variable_with_templates():
    assert check("d | to_json", d={"a": "{{ 1 + 1 }}"}) == '{"a": 2}'


def test_to_nice_json_sorts_and_indents():
    assert check("{'b': 1, 'a': [1]} | to_nice_json") == (
        '{\n    "a": [\n        1\n    ],\n    "b": 1\n}')


def test_to_nice_json_indent_argument():
    assert check("{'a': 1} | to_nice_json(indent=2)") == '{\n  "a": 1\n}'


def test_from_json():
    assert check("'{\"a\": [1, null]}' | from_json") == {"a": [1, None]}


# -- YAML --------------------------------------------------------------------------------------------


def test_to_yaml_uses_flow_style_for_scalar_collections():
    assert check("{'b': [1, 2], 'a': 'x'} | to_yaml") == "a: x\nb: [1, 2]\n"


def test_to_nice_yaml_is_block_style_indented_by_four():
    assert check("{'a': {'b': [1, {'c': 2}]}} | to_nice_yaml") == (
        "a:\n    b:\n    - 1\n    -   c: 2\n")


def test_from_yaml():
    assert check("'a: [1, yes]' | from_yaml") == {"a": [1, True]}


def test_from_yaml_all():
    assert check("'a: 1\n---\nb: 2\n' | from_yaml_all") == [{"a": 1}, {"b": 2}]


def test_yaml_filters_take_what_pyyaml_takes():
    """PyYAML is the YAML library, on the controller and on every target."""
    assert filters.from_yaml("a: &x 1\nb: *x\n") == {"a": 1, "b": 1}
    assert filters.from_yaml("v: !unsafe '{{ x }}'") == {"v": "{{ x }}"}
    assert filters.from_yaml_all(None) == []
    assert filters.from_yaml(None) is None
    assert filters.to_yaml(("a", "b")) == "[a, b]\n"
    data = {"a": ["x", "yes", "", "multi\nline\n", {"b": None}], "c": 1.0, "d": "  pad "}
    assert filters.from_yaml(filters.to_nice_yaml(data)) == data


# -- encodings, hashes, paths, math ---------------------------------------------------------------


def test_b64encode_and_decode():
    assert check("'héllo' | b64encode") == "aMOpbGxv"
    assert check("'aMOpbGxv' | b64decode") == "héllo"


def test_hash_default_is_sha1():
    assert check("'abc' | hash") == "a9993e364706816aba3e25717850c26c9cd0d89d"


def test_hash_md5():
    assert check("'abc' | hash('md5')") == "900150983cd24fb0d6963f7d28e17f72"


def test_checksum_md5_sha1():
    assert check("'abc' | checksum") == "a9993e364706816aba3e25717850c26c9cd0d89d"
    assert check("'abc' | sha1") == "a9993e364706816aba3e25717850c26c9cd0d89d"
    assert check("'abc' | md5") == "900150983cd24fb0d6963f7d28e17f72"


def test_to_uuid_is_name_based_in_ansibles_namespace():
    namespace = uuid.UUID("361E6D51-FAEC-444A-9079-341386DA8E2E")
    assert filters.to_uuid("test") == str(uuid.uuid5(namespace, "test"))


def test_basename_dirname_splitext():
    assert check("'/a/b.txt' | basename") == "b.txt"
    assert check("'/a/b.txt' | dirname") == "/a"
    assert check("'/a/b.txt' | splitext") == ["/a/b", ".txt"]


def test_expanduser():
    assert check("'~/x' | expanduser") == os.path.expanduser("~/x")


def test_realpath(tmp_path):
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    assert check("p | realpath", p=str(link)) == os.path.realpath(str(tmp_path))


def test_path_join():
    assert check("['/a', 'b'] | path_join") == "/a/b"


def test_log_pow_root():
    assert check("100 | log(10)") == 2.0
    assert check("2 | pow(3)") == 8.0
    assert check("9 | root") == 3.0


def test_to_datetime_allows_date_arithmetic():
    expression = "(('2020-01-02 00:00:00' | to_datetime) - ('2020-01-01 00:00:00' | to_datetime)).days"
    assert check(expression) == 1


def test_strftime_of_epoch_in_utc():
    assert check("'%Y-%m-%d' | strftime(0, utc=true)") == "1970-01-01"


# -- names ---------------------------------------------------------------------------------------------


def test_filter_names_include_jinja_builtins_and_ours():
    assert {"regex_replace", "combine", "map", "default", "d"} <= filters.names()


def test_filters_have_fqcn_aliases():
    assert filters.FILTERS["ansible.builtin.combine"] is filters.FILTERS["combine"]


def test_test_names_include_jinja_builtins_and_ours():
    assert {"version", "defined", "success", "in"} <= tests_jinja.names()


# ===================================================================================================
# tests (``x is ...``)
# ===================================================================================================


def test_defined_and_undefined_tests():
    assert check("x is defined", x=1) is True
    assert check("x is undefined") is True


def test_none_test():
    assert check("x is none", x=None) is True


def test_match_anchors_at_the_start():
    assert check("'abc' is match('b')") is False
    assert check("'abc' is match('a')") is True


def test_search_finds_anywhere():
    assert check("'abc' is search('b')") is True


def test_regex_test_match_type():
    assert check("'abc' is regex('b')") is True
    assert check("'abc' is regex('b', match_type='match')") is False


def test_match_ignorecase():
    assert check("'ABC' is match('a', ignorecase=true)") is True


@pytest.mark.parametrize("expression", [
    "'1.10' is version('1.9', '>')",
    "'2.0' is version('2.0', '==')",
    "'2.0' is version('2.0.1', 'lt')",
    "'2.0' is version_compare('1.0', 'ge')",
    "'1.0' is version('2.0', '!=')",
    "'1.0a1' is version('1.0', '<', strict=true)",
    "'1.0.0-rc.1' is version('1.0.0', '<', version_type='semver')",
    "'1.0.0-alpha' is version('1.0.0-alpha.1', '<', version_type='semver')",
    "'3.9.1' is version('3.9', '>=')",
])
def test_version_comparisons(expression):
    assert check(expression) is True


def test_version_rejects_unknown_operator():
    with pytest.raises(TemplateError, match="Invalid operator"):
        check("'1' is version('2', '~')")


def test_version_strict_rejects_bad_versions():
    with pytest.raises(TemplateError, match="invalid version number"):
        check("'1.0.x' is version('1.0', strict=true)")


def test_result_tests_on_registered_results():
    ok = {"changed": False, "failed": False}
    assert check("r is success", r=ok) is True
    assert check("r is succeeded", r=ok) is True
    assert check("r is failed", r=ok) is False
    assert check("r is failure", r={"failed": True}) is True
    assert check("r is changed", r={"changed": True}) is True
    assert check("r is change", r=ok) is False
    assert check("r is skipped", r={"skipped": True}) is True
    assert check("r is skip", r=ok) is False


def test_changed_test_looks_into_loop_results():
    assert check("r is changed", r={"results": [{"changed": False}, {"changed": True}]}) is True


def test_result_tests_require_a_dict():
    with pytest.raises(TemplateError, match="expects a dictionary"):
        check("'x' is failed")


def test_subset_superset():
    assert check("[1] is subset([1, 2])") is True
    assert check("[1, 2] is superset([2])") is True


def test_contains_test():
    assert check("[1, 2] is contains(2)") is True


def test_in_test():
    assert check("2 is in([1, 2])") is True


def test_path_tests(tmp_path):
    target = tmp_path / "f"
    target.write_text("x")
    link = tmp_path / "l"
    link.symlink_to(target)
    paths = {"f": str(target), "d": str(tmp_path), "l": str(link)}
    assert check("f is file", **paths) is True
    assert check("d is directory", **paths) is True
    assert check("f is exists", **paths) is True
    assert check("l is link", **paths) is True
    assert check("l is is_link", **paths) is True
    assert check("d is file", **paths) is False
    assert check("'/nonexistent/x' is exists") is False


def test_abs_test():
    assert check("'/a' is abs") is True
    assert check("'a' is abs") is False


def test_truthy_falsy():
    assert check("'x' is truthy") is True
    assert check("'' is falsy") is True
    assert check("'no' is truthy(convert_bool=true)") is False


@pytest.mark.parametrize("expression", [
    "'s' is string", "1 is number", "x is mapping", "[1] is sequence", "[1] is iterable",
    "true is boolean",
])
def test_type_tests(expression):
    assert check(expression, x={"a": 1}) is True


def test_mapping_test_on_variable_dict():
    assert check("x is mapping", x={"a": "{{ 1 }}"}) is True
