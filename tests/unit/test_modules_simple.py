"""debug, assert and fail."""
import pytest

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext, TaskError
from ioc.agentless_runner.template_errors import TemplateError, UndefinedVariableError


class UndefinedError(UndefinedVariableError):
    """The templar's undefined-variable error, as this fake raises it."""


class FakeTemplar(object):
    """Evaluates expressions as Python against a vars dict."""

    def __init__(self, variables):
        self.variables = variables

    def evaluate(self, expr):
        try:
            return eval(expr, {}, dict(self.variables))
        except NameError as e:
            raise UndefinedError(str(e))

    def conditional(self, expr, origin=None):
        if isinstance(expr, bool):
            return expr
        if "boom" in expr:
            raise RuntimeError("template error in %s" % expr)
        return bool(self.evaluate(expr))


def run(name, args, **ctx):
    return modules.get(name).run(args, ModuleContext(**ctx))


def test_debug_default_and_msg():
    assert run("debug", {}) == {"msg": "Hello world!", "failed": False, "changed": False}
    assert run("debug", {"msg": [1, 2]})["msg"] == [1, 2]
    # above the run's -v count (ansible_verbosity) a debug is skipped, as Ansible's action
    assert run("debug", {"msg": "hi", "verbosity": 2}, task_vars={"ansible_verbosity": 2})["msg"] == "hi"
    assert run("debug", {"msg": "hi", "verbosity": 2}, task_vars={"ansible_verbosity": 1}) == {
        "skipped_reason": "Verbosity threshold not met.", "skipped": True, "failed": False,
        "changed": False}


def test_debug_var_without_templar():
    r = run("debug", {"var": "x"}, task_vars={"x": {"a": 1}})
    assert r["x"] == {"a": 1} and r["changed"] is False
    assert run("debug", {"var": "nope"})["nope"] == "VARIABLE IS NOT DEFINED!"


def test_debug_var_with_templar():
    t = FakeTemplar({"x": 3})
    assert run("debug", {"var": "x + 1"}, templar=t)["x + 1"] == 4


def test_debug_var_replaces_undefined_values_and_warns_per_template():
    """As ansible-core's debug: each undefined value stands as ``<< error N - ... >>``
    and each template that gave some is one warning, with the variable it is in."""
    from ioc.agentless_runner.templating import Templar

    t = Templar({"two": "{{ nope1 }} {{ nope2 }}", "d": {"ok": 1, "bad": "{{ nope1 }}"}})
    r = run("debug", {"var": "missing"}, templar=t)
    assert r["missing"] == "<< error 1 - 'missing' is undefined >>"
    assert r["warnings"] == ["Encountered 1 template error.\nerror 1 - 'missing' is undefined"]
    r = run("debug", {"var": "two"}, templar=t)
    assert r["two"] == "<< error 1 - 'nope1' is undefined >> << error 2 - 'nope2' is undefined >>"
    assert [(w["var"], w["template"]) for w in r["_ioc_marker_warnings"]] == \
        [("two", "{{ nope1 }} {{ nope2 }}")]
    r = run("debug", {"var": "d"}, templar=t)
    assert r["d"] == {"ok": 1, "bad": "<< error 1 - 'nope1' is undefined >>"}
    assert run("debug", {"var": "d.ok"}, templar=t).get("warnings") is None


def test_debug_templar_other_errors_propagate():
    class Broken(object):
        def evaluate(self, expr):
            raise ZeroDivisionError("no")
    with pytest.raises(ZeroDivisionError):
        run("debug", {"var": "x"}, templar=Broken())


def test_debug_var_template_error_is_the_actions_error():
    class Failing(object):
        def evaluate(self, expr):
            raise TemplateError("Error rendering expression: division by zero")
    with pytest.raises(TaskError) as raised:
        run("debug", {"var": "5/0"}, templar=Failing())
    assert raised.value.msg == ("Error while resolving `var` expression: Error rendering "
                                "expression: division by zero")
    assert raised.value.expression == "5/0"


def test_debug_mutually_exclusive_and_bad_verbosity():
    r = run("debug", {"msg": "a", "var": "b"})
    assert r["failed"] and r["msg"] == "parameters are mutually exclusive: msg|var"
    assert run("debug", {"verbosity": "lots"})["failed"] is True


def test_assert_pass_and_fail():
    t = FakeTemplar({"x": 1})
    r = run("assert", {"that": ["x == 1", "x > 0"]}, templar=t)
    # Shown at every verbosity unless quiet, as Ansible's assert marks it.
    assert r == {"changed": False, "msg": "All assertions passed",
                 "_ansible_verbose_always": True}
    r = run("assert", {"that": ["x == 1", "x == 2", "x == 3"]}, templar=t)
    assert r == {"failed": True, "assertion": "x == 2", "evaluated_to": False,
                 "msg": "Assertion failed", "changed": False, "_ansible_verbose_always": True}
    assert "_ansible_verbose_always" not in run("assert", {"that": "x == 1", "quiet": True},
                                                templar=t)


def test_assert_string_that_and_messages():
    t = FakeTemplar({"x": 1})
    assert run("assert", {"that": "x == 1", "success_msg": "ok"}, templar=t)["msg"] == "ok"
    assert run("assert", {"that": "x == 2", "fail_msg": "bad"}, templar=t)["msg"] == "bad"
    assert run("assert", {"that": "x == 2", "msg": "bad2"}, templar=t)["msg"] == "bad2"
    assert run("assert", {"that": "x == 1", "quiet": True}, templar=t)["msg"] == "All assertions passed"


def test_assert_templar_error_propagates():
    with pytest.raises(RuntimeError):
        run("assert", {"that": ["boom"]}, templar=FakeTemplar({}))


def test_assert_missing_that():
    r = run("assert", {}, templar=FakeTemplar({}))
    assert r["failed"] and "that" in r["msg"]


def test_fail():
    assert run("fail", {}) == {"failed": True, "msg": "Failed as requested from task",
                               "changed": False}
    assert run("fail", {"msg": "custom"})["msg"] == "custom"


def test_unknown_option_rejected():
    r = run("fail", {"bogus": 1})
    assert r["failed"] and "Unsupported parameters for (fail) module: bogus" in r["msg"]
