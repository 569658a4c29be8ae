"""Templar.render_text: whole-file rendering with the template module's conventions."""
import pytest

from ioc.agentless_runner.templating import Templar, TemplateError, UndefinedVariableError


def render(source, extra=None, overrides=None, **variables):
    return Templar(variables).render_text(source, extra=extra, overrides=overrides)


def test_always_a_string_even_for_a_single_expression():
    assert render("{{ l }}", l=[1, 2]) == "[1, 2]"
    assert render("{{ n }}", n=3) == "3"


def test_trim_blocks_on_by_default_and_trailing_newlines_preserved():
    src = "a\n{% for i in l %}\n  {{ i }}\n{% endfor %}\nend\n\n"
    assert render(src, l=[1, 2]) == "a\n  1\n  2\nend\n\n"


def test_trailing_newline_restored_when_a_block_ate_it():
    # Ansible counts the source's trailing newlines and restores them.
    assert render("{% if x %}b{% endif %}\n", x=False) == "\n"


def test_trim_blocks_off_and_lstrip_blocks():
    assert render("{% if true %}\nb\n{% endif %}\n", overrides={"trim_blocks": False}) == "\nb\n"
    assert render("a\n  {% if true %}\nb\n  {% endif %}\n",
                  overrides={"lstrip_blocks": True}) == "a\nb\n"


def test_delimiters_and_newline_sequence():
    out = render("[% if true %]\nb\n[% endif %]\n<<z>>\n", z=3, overrides={
        "block_start_string": "[%", "block_end_string": "%]",
        "variable_start_string": "<<", "variable_end_string": ">>",
        "newline_sequence": "\r\n"})
    assert out == "b\r\n3\r\n"


def test_extra_variables_are_verbatim_and_lazy_vars_resolve():
    out = render("{{ ansible_managed }} {{ y }}", extra={"ansible_managed": "{{ not templated }}"},
                 y="{{ z }}", z=3)
    assert out == "{{ not templated }} 3"


def test_none_renders_empty():
    assert render("[{{ n }}]", n=None) == "[]"


def test_errors():
    with pytest.raises(UndefinedVariableError) as e:
        render("x {{ nope }}")
    assert str(e.value) == "'nope' is undefined"
    with pytest.raises(TemplateError) as e:  # (create_template_error's wording, its line)
        render("x\n{% if %}")
    assert str(e.value) == "Syntax error in template: Expected an expression, got 'end of statement block'"
    assert e.value.lineno == 2
