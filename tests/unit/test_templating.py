"""Specification of the target-side Templar (Ansible's templating conventions)."""
import ast
import collections
import pathlib

import pytest

from ioc.agentless_runner import templating
from ioc.agentless_runner.templating import (
    Templar, TemplateError, UndefinedVariableError, Verbatim, is_template)

RUNNER = pathlib.Path(templating.__file__).parent


def render(value, **variables):
    return Templar(variables).template(value)


# -- native values and strings ----------------------------------------------------------


def test_single_expression_returns_a_native_list():
    assert render("{{ x }}", x=[1, 2]) == [1, 2]


def test_single_expression_returns_a_native_int():
    assert render("{{ 1 + 2 }}") == 3


def test_single_expression_returns_a_native_bool():
    assert render("{{ x == 1 }}", x=1) is True


def test_single_expression_returns_none():
    assert render("{{ x }}", x=None) is None


def test_single_expression_returns_a_native_dict():
    assert render("{{ {'a': x} }}", x=1) == {"a": 1}


def test_string_that_looks_like_a_number_stays_a_string():
    assert render("{{ x }}", x="1") == "1"


def test_string_expression_is_not_literal_evaluated():
    assert render("{{ '[1, 2]' }}") == "[1, 2]"


def test_mixed_template_renders_to_a_string():
    assert render("n={{ x }}", x=5) == "n=5"


def test_surrounding_whitespace_makes_a_string():
    assert render(" {{ x }} ", x=5) == " 5 "


def test_one_trailing_newline_keeps_the_native_value_as_ansible():
    # (a YAML folded scalar "key: >" ends in one newline: Ansible's lexer drops
    # it, the template is one expression, its value native; text gets it back)
    assert render("{{ x }}\n", x=5) == 5
    assert render("{{ [0] + x }}\n", x=[1]) == [0, 1]
    assert render("{{ x }}\n", x="a") == "a\n"
    assert render("{{ x }}\n", x="a\n") == "a\n"
    assert render("{{ x }}\n\n", x=5) == "5\n\n"
    assert render("a {{ x }}\n", x=5) == "a 5\n"


def test_two_expressions_render_to_a_string():
    assert render("{{ x }}{{ x }}", x=1) == "11"


def test_dict_in_a_mixed_template_renders_as_python_repr():
    assert render("d={{ d }}", d={"a": 1}) == "d={'a': 1}"


def test_none_renders_empty_inside_a_larger_template():
    assert render("v={{ x }}", x=None) == "v="


def test_string_without_markers_is_returned_unchanged():
    value = "plain {not a template}"
    assert Templar({}).template(value) is value


def test_non_string_scalars_pass_through():
    assert render(5) == 5 and render(None) is None and render(True) is True


def test_dict_values_are_templated_recursively():
    assert render({"a": ["{{ x }}", {"b": "{{ x + 1 }}"}]}, x=1) == {"a": [1, {"b": 2}]}


def test_dict_keys_are_templated():
    assert render({"{{ k }}": 1}, k="name") == {"name": 1}


def test_comment_only_template_renders_none():
    # (ansible-core 2.19 and 2.21: a template with no output part is None)
    assert render("{# note #}") is None


def test_statement_template_renders_a_string():
    assert render("{% for i in l %}{{ i }},{% endfor %}", l=[1, 2]) == "1,2,"


def test_trim_blocks_is_on():
    assert render("{% if true %}\nyes\n{% endif %}\n") == "yes\n"


def test_do_extension_is_enabled():
    assert render("{% set l = [] %}{% do l.append(1) %}{{ l }}") == [1]  # (one output part: native)


def test_loopcontrols_extension_is_enabled():
    template = "{% for i in [1, 2, 3] %}{% if i == 2 %}{% break %}{% endif %}{{ i }}{% endfor %}"
    assert render(template) == 1  # (one output part: native, as 2.21's concat)


def test_generator_results_become_lists():
    assert render("{{ [1, 2] | map('string') }}") == ["1", "2"]


def test_tuples_become_lists():
    assert render("{{ (1, 2) }}") == [1, 2]


def test_jinja_globals_are_available():
    assert render("{{ range(3) | list }}") == [0, 1, 2]


def test_fqcn_filter_names_work():
    assert render("{{ x | ansible.builtin.to_json }}", x=[1]) == "[1]"


# -- lazy, recursive variables ---------------------------------------------------------------


def test_variables_are_templated_when_read():
    assert render("{{ b }}", a=1, b="{{ a }}-x") == "1-x"


def test_variables_resolve_recursively():
    assert render("{{ c }}", a=2, b="{{ a * 2 }}", c="{{ b * 2 }}") == 8


def test_nested_containers_are_templated_on_access():
    assert render("{{ d.k[1] }}", a="A", d={"k": [0, "{{ a }}"]}) == "A"


def test_unused_broken_variables_are_never_templated():
    assert render("{{ ok }}", ok=1, broken="{{ nosuch }}") == 1


def test_unused_broken_nested_values_are_not_templated():
    assert render("{{ d.good }}", d={"good": 1, "bad": "{{ nosuch }}"}) == 1


def test_native_variable_keeps_its_type_through_another_variable():
    assert render("{{ b }}", a=[1], b="{{ a }}") == [1]


def test_self_referencing_variable_is_a_recursive_loop():
    with pytest.raises(TemplateError, match="recursive loop detected in template string: {{ a }}"):
        render("{{ a }}", a="{{ a }}")


def test_mutual_recursion_is_detected():
    with pytest.raises(TemplateError, match="recursive loop detected"):
        render("{{ a }}", a="{{ b }}", b="{{ a }}")


def test_self_referencing_nested_value_is_a_recursive_loop():
    with pytest.raises(TemplateError, match="recursive loop detected"):
        render("{{ d.x }}", d={"x": "{{ d.x }}"})


def test_values_are_cached_per_templar():
    calls = []

    class Counting(collections.abc.Mapping):
        def __getitem__(self, key):
            calls.append(key)
            return {"a": "{{ 1 }}"}[key]

        def __contains__(self, key):
            return key == "a"

        def __iter__(self):
            return iter(["a"])

        def __len__(self):
            return 1

    templar = Templar(Counting())
    assert templar.template("{{ a + a }}") == 2
    assert templar.template("{{ a }}") == 1
    assert calls.count("a") == 1


def test_only_the_keys_read_are_touched():
    class Strict(dict):
        def __getitem__(self, key):
            if key != "wanted":
                raise AssertionError("read %s" % key)
            return dict.__getitem__(self, key)

    variables = Strict(wanted=1, other=2)
    assert Templar(variables).template("{{ wanted }}") == 1


def test_chainmap_layers_are_searched_in_order():
    variables = collections.ChainMap({"a": "high"}, {"a": "low", "b": 1})
    assert Templar(variables).template("{{ a }}{{ b }}") == "high1"


def test_verbatim_layers_are_not_templated():
    variables = collections.ChainMap(Verbatim({"out": "{{ secret }}"}), {})
    assert Templar(variables).template("{{ out }}") == "{{ secret }}"


def test_template_with_layers_verbatim_values():
    base = Templar({"x": 1, "b": "{{ item }}"})
    assert base.template_with({"item": "{{ x }}"}).template("{{ b }}") == "{{ x }}"


def test_template_with_raw_values_are_templated():
    base = Templar({"x": 1})
    assert base.template_with({"y": "{{ x + 1 }}"}, raw=True).template("{{ y }}") == 2


def test_template_with_does_not_change_the_original():
    base = Templar({"x": 1})
    base.template_with({"x": 2})
    assert base.template("{{ x }}") == 1


def test_hostvars_view_of_the_same_variables_works():
    variables = {"a": "{{ 2 }}"}
    variables["hostvars"] = {"h1": variables}
    assert Templar(variables).template("{{ hostvars['h1'].a }}") == 2


# -- undefined values and errors -------------------------------------------------------------


def test_undefined_variable_message():
    with pytest.raises(UndefinedVariableError) as info:
        render("{{ nosuchvar }}")
    assert str(info.value) == "'nosuchvar' is undefined"


def test_undefined_variable_in_a_mixed_template():
    with pytest.raises(UndefinedVariableError, match="'nosuchvar' is undefined"):
        render("x {{ nosuchvar }} y")


def test_undefined_is_a_template_error():
    assert issubclass(UndefinedVariableError, TemplateError)


def test_missing_attribute_message():
    with pytest.raises(UndefinedVariableError) as info:
        render("{{ d.foo }}", d={"a": 1})
    assert str(info.value) == "object of type 'dict' has no attribute 'foo'"  # ansible-core 2.21


def test_missing_key_message():
    with pytest.raises(UndefinedVariableError, match="object of type 'dict' has no attribute 'foo'"):
        render("{{ d['foo'] }}", d={})


def test_undefined_nested_in_a_variable_is_reported():
    with pytest.raises(UndefinedVariableError, match="'nosuch' is undefined"):
        render("{{ a }}", a="{{ nosuch }}")


def test_undefined_inside_a_returned_container_is_reported():
    with pytest.raises(UndefinedVariableError, match="'nosuch' is undefined"):
        render("{{ d }}", d={"k": "{{ nosuch }}"})


def test_undefined_in_a_list_literal_is_reported():
    with pytest.raises(UndefinedVariableError, match="'nosuch' is undefined"):
        render("{{ [nosuch] }}")


def test_attribute_of_undefined_keeps_the_first_name():
    with pytest.raises(UndefinedVariableError, match="'x' is undefined"):
        render("{{ x.y.z }}")


def test_default_filter_handles_undefined():
    assert render("{{ nosuch | default('d') }}") == "d"


def test_default_filter_handles_undefined_attribute_chains():
    assert render("{{ x.y | default(1) }}") == 1


def test_default_boolean_form_replaces_falsy_values():
    assert render("{{ '' | default('d', true) }}") == "d"


def test_d_is_an_alias_of_default():
    assert render("{{ nosuch | d(3) }}") == 3


def test_undefined_used_in_arithmetic_fails():
    with pytest.raises(UndefinedVariableError):
        render("{{ nosuch + 1 }}")


def test_undefined_used_in_a_loop_fails():
    with pytest.raises(UndefinedVariableError):
        render("{% for i in nosuch %}{% endfor %}")


def test_syntax_error_message():
    with pytest.raises(TemplateError) as info:
        render("{{ a b }}")
    message = str(info.value)
    assert message.startswith("template error while templating string: ")
    assert message.endswith(". String: {{ a b }}")


def test_unknown_filter_message():
    with pytest.raises(TemplateError) as info:
        render("{{ 1 | nosuchfilter }}")
    assert "No filter named 'nosuchfilter'" in str(info.value)
    assert 'Could not load "nosuchfilter"' in str(info.value)


def test_unknown_test_message():
    with pytest.raises(TemplateError, match="No test named 'nosuchtest'"):
        render("{{ 1 is nosuchtest }}")


def test_filter_exception_becomes_a_template_error():
    with pytest.raises(TemplateError):
        render("{{ 'not json' | from_json }}")


def test_lookup_is_not_available_on_the_target():
    with pytest.raises(TemplateError, match="lookup plugins run on the controller"):
        render("{{ lookup('file', '/etc/hosts') }}")


def test_query_is_not_available_on_the_target():
    with pytest.raises(TemplateError, match="lookup plugins run on the controller"):
        render("{{ query('items', [1]) }}")


def test_mandatory_fails_the_template_like_ansibles_filter():
    with pytest.raises(TemplateError, match="Mandatory variable 'x' not defined") as info:
        render("{{ x | mandatory }}")
    assert not isinstance(info.value, UndefinedVariableError)


def test_mandatory_custom_message():
    with pytest.raises(TemplateError, match="give x"):
        render("{{ x | mandatory('give x') }}")


# -- evaluate and conditional ---------------------------------------------------------------


def test_evaluate_returns_native_values():
    assert Templar({"x": [1, 2]}).evaluate("x | length") == 2


def test_evaluate_returns_containers():
    assert Templar({"x": {"a": "{{ 1 }}"}}).evaluate("x") == {"a": 1}


def test_evaluate_rejects_trailing_text():
    with pytest.raises(TemplateError):
        Templar({}).evaluate("1 2")


def test_evaluate_handles_closing_braces_in_strings():
    assert Templar({}).evaluate("'}}' ~ 'x'") == "}}x"


def test_conditional_true():
    assert Templar({"x": 1}).conditional("x == 1") is True


def test_conditional_false():
    assert Templar({"x": 1}).conditional("x == 2") is False


def test_conditional_bool_passes_through():
    assert Templar({}).conditional(False) is False


def test_conditional_empty_is_true():
    assert Templar({}).conditional("") is True


def test_conditional_strips_template_braces():
    assert Templar({"x": 1}).conditional("{{ x == 1 }}") is True


def test_a_conditional_embedding_a_template_in_an_expression_is_a_syntax_error():
    # (2.19 and 2.21: never rendered first, an untrusted value could run as an expression)
    with pytest.raises(TemplateError, match="Syntax error in expression. Template delimiters "
                                            "are not supported in expressions"):
        Templar({"x": 1}).conditional("{{ x }} == 1")


def test_conditional_is_defined_on_undefined_is_false():
    assert Templar({}).conditional("x is defined") is False


def test_conditional_is_undefined_on_undefined_is_true():
    assert Templar({}).conditional("x is undefined") is True


def test_conditional_default_on_undefined_works():
    assert Templar({}).conditional("x | default(true)") is True


def test_conditional_undefined_variable_fails():
    with pytest.raises(UndefinedVariableError) as info:
        Templar({}).conditional("nosuchvar")
    assert str(info.value) == "'nosuchvar' is undefined"


def test_conditional_string_result_fails():
    with pytest.raises(TemplateError) as info:
        Templar({}).conditional("'abc'")
    assert str(info.value).startswith(
        "Conditional result (True) was derived from value of type 'str' at ")
    assert str(info.value).endswith("Conditionals must have a boolean result.")


def test_conditional_shows_falsy_result():
    with pytest.raises(TemplateError, match=r"Conditional result \(False\).*type 'str'"):
        Templar({"x": ""}).conditional("x")


def test_conditional_yes_string_fails_like_ansible_2_19():
    with pytest.raises(TemplateError, match="type 'str'"):
        Templar({"foo": "yes"}).conditional("foo")


def test_conditional_integer_result_fails():
    with pytest.raises(TemplateError, match="type 'int'"):
        Templar({}).conditional("1")


def test_conditional_list_result_fails():
    with pytest.raises(TemplateError, match="type 'list'"):
        Templar({"x": [1]}).conditional("x")


def test_conditional_bool_filter_makes_a_boolean():
    assert Templar({"foo": "yes"}).conditional("foo | bool") is True


def test_conditional_on_registered_result():
    variables = {"r": {"rc": 3, "changed": True}}
    assert Templar(variables).conditional("r.rc not in [0, 3]") is False
    assert Templar(variables).conditional("r is changed") is True


# -- is_template and the environment ----------------------------------------------------------


@pytest.mark.parametrize("value", ["{{ x }}", "a {% if %}", "{# c #}", ["{{ x }}"],
                                   {"k": "{{ v }}"}, {"{{ k }}": 1}])
def test_is_template_true(value):
    assert is_template(value) is True


@pytest.mark.parametrize("value", ["plain", "{ x }", 1, None, ["a"], {"k": "v"}])
def test_is_template_false(value):
    assert is_template(value) is False


def test_templar_is_template_method():
    assert Templar({}).is_template("{{ x }}") is True


def test_environment_is_built_once():
    assert templating.environment() is templating.environment()


def test_known_filters_include_ansible_and_jinja_filters():
    assert {"to_yaml", "combine", "default", "map"} <= templating.known_filters()


def test_known_tests_include_ansible_and_jinja_tests():
    assert {"version", "defined", "changed", "match"} <= templating.known_tests()


# -- deprecated values: a template that reads one says so ---------------------------


def test_reading_a_deprecated_name_is_recorded_where_it_was_read():
    facts = templating.Deprecated({"ansible_os": "Linux", "ansible_facts": {"os": "Linux"}},
                                  "facts", kept=frozenset(["ansible_facts"]))
    templar = Templar(collections.ChainMap({"mine": 1}, facts))
    with templating.DeprecatedReads() as reads:
        reads.where = "msg"
        assert templar.template("{{ ansible_facts.os }} {{ mine }}") == "Linux 1"
        assert reads.found == []  # (a kept name, another layer's name)
        assert templar.template("{{ ansible_os }}") == "Linux"
        reads.where = "other"
        templar.template("{{ ansible_os }}")  # (each template that reads it: not cached)
    assert reads.found == [("facts", "msg"), ("facts", "other")]
    templar.template("{{ ansible_os }}")  # nothing records outside a DeprecatedReads
    assert templating.current_reads() is None


def test_a_higher_layer_hides_a_deprecated_name():
    facts = templating.Deprecated({"x": 1}, "facts")
    with templating.DeprecatedReads() as reads:
        assert Templar(collections.ChainMap({"x": 2}, facts)).template("{{ x }}") == 2
    assert reads.found == []


def test_a_deprecated_text_is_recorded_when_a_result_holds_it_and_comes_out_plain():
    reason = templating.DeprecatedText("No items in the list", "skipped_reason")
    templar = Templar(Verbatim({"r": {"skipped": True, "skipped_reason": reason}}))
    with templating.DeprecatedReads() as reads:
        assert templar.template("{{ r is skipped }}") is True
        assert reads.found == []
        out = templar.evaluate("r")
    assert type(out["skipped_reason"]) is str
    assert reads.found == [("skipped_reason", None)]


@pytest.mark.parametrize("name", ["templating.py", "filters.py", "tests_jinja.py"])
def test_runner_files_parse_as_python_3_9(name):
    ast.parse((RUNNER / name).read_text(), feature_version=(3, 9))


@pytest.mark.parametrize("name", ["templating.py", "filters.py", "tests_jinja.py"])
def test_runner_files_import_only_allowed_modules(name):
    allowed = {"jinja2", "markupsafe", "mitogen", "ioc", "yaml"}
    tree = ast.parse((RUNNER / name).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            roots = [(node.module or "").split(".")[0]]
        else:
            continue
        for root in roots:
            assert root in allowed or root in _stdlib(), root


def _stdlib():
    import sys
    return set(sys.stdlib_module_names)


# -- ansible-core 2.21's embedded templates in Jinja constant strings -------------------


def _echo_lookup(name, *terms, **kwargs):
    return [name] + list(terms)


def test_constant_template_is_templated_in_a_conditional_expression():
    with templating.ConstTemplates() as consts:
        assert Templar({"x": 1}).conditional('"du{{ \'de\' }}" == "dude"\n') is True
        assert Templar({}).conditional('dict({"d": "{{ 1 + 1 }}"})["d"] == 2') is True
    assert [conditional for conditional, _ in consts.found] == [True, True]
    assert consts.found[0][1] == '"du{{ \'de\' }}" == "dude"'


def test_constant_template_is_kept_in_a_conditional_template_and_other_templates():
    with templating.ConstTemplates() as consts:
        assert Templar({}).conditional('{{ "du{" + "{\'de\'}}" == "du{{\'de\'}}" }}') is True
        assert Templar({}).template(
            "{% set j = joiner('{{ 1 }}') %}x{{ j() }}{{ j() }}x") == "x{{ 1 }}x"
    assert consts.found == []


def test_lookup_terms_are_templated_but_not_the_lookup_name():
    templar = Templar({"x": 1, "lookup": _echo_lookup})
    with templating.ConstTemplates() as consts:
        value = templar.template(
            "{{ lookup('{{ 1 }}', 'a{{ x }}', ['{{ x }}'], {'{{ k }}': '{{ x }}'}) }}")
    assert value == ["{{ 1 }}", "a1", [1], {"{{ k }}": 1}]
    assert [conditional for conditional, _ in consts.found] == [False] * 3


def test_a_condition_made_of_templates_is_untrusted():
    with pytest.raises(TemplateError, match="^Encountered untrusted template or expression.$"):
        Templar({}).conditional("{{ 'hello' }} == {{ 'world' }}")


def test_a_template_giving_a_variables_text_is_that_expression():
    assert Templar({"item": "1 == 1"}).conditional("{{ item }}") is True
    assert Templar({"item": "1 == 42"}).conditional("{{ item }}") is False
    with pytest.raises(TemplateError, match="untrusted"):
        Templar({}).conditional("{{ '1 == 1' }}")
