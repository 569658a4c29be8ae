"""What ioc-run's console prints for results, against what the default callback prints."""
from __future__ import annotations

import io

from ioc.agentless_runner.flow import safe_template
from ioc.agentless_runner.templating import Templar
from ioc.callbacks.base import Status, TaskView
from ioc.callbacks.console import Console


def test_a_looped_debug_prints_its_items_and_no_line_of_its_own():
    """ansible-core prints nothing for a loop's overall ok result (debug's too)."""
    out = io.StringIO()
    console = Console(out=out, err=io.StringIO())
    task = TaskView(name="debug", action="debug", location="p.yml:3:7")
    console.runner_result("h1", task, Status.OK, {
        "changed": False, "msg": "All items completed",
        "results": [{"msg": "x", "item": 1, "ansible_loop_var": "item"}]})
    assert out.getvalue() == ""


def test_an_undefined_variable_in_a_name_is_marked_where_it_stands():
    templar = Templar({"known": "k"})
    assert safe_template(templar, "a {{ known }} {{ nope }} b {{ other }}") == \
        "a k << error 1 - 'nope' is undefined >> b << error 2 - 'other' is undefined >>"
    assert safe_template(templar, "{{ known }}") == "k"


def test_a_location_reads_back_from_each_way_it_is_written():
    from ioc.model import Location

    for text in ("a.yml", "a.yml:3", "a.yml:3:7", "/x:1/a.yml:3"):
        assert Location.parse(text).origin == text
    assert Location.parse("a.yml:3:7") == Location("a.yml", 3, 7)
    assert TaskView(name="t", action="debug", location="a.yml:3:7").task_path == "a.yml:3"


# -- lines ansible-playbook 2.21 prints, each found by the conformance console comparison --


def _console():
    out, err = io.StringIO(), io.StringIO()
    return Console(out=out, err=err), out, err


def test_a_no_log_result_prints_no_json_and_its_items_no_value():
    """Ansible keeps only a few keys of a no_log result (not _ansible_verbose_always) and
    labels its items "(censored due to no_log)"."""
    from ioc.agentless_runner.results import censor

    console, out, _ = _console()
    task = TaskView(name="debug", action="debug", location="p.yml:3:7")
    console.runner_result("h1", task, Status.OK, censor(
        {"msg": "s3cret", "_ansible_verbose_always": True, "changed": False}))
    console.runner_item("h1", task, Status.OK, censor(
        {"msg": "s3cret", "item": "s3cret", "_ansible_verbose_always": True}))
    assert out.getvalue() == "ok: [h1]\nok: [h1] => (item=(censored due to no_log))\n"


def test_a_changed_debug_says_changed():
    """changed_when on debug: "changed", though debug's result prints only its msg."""
    console, out, _ = _console()
    task = TaskView(name="d", action="debug", location="p.yml:3:7")
    console.runner_result("h1", task, Status.OK,
                          {"msg": "y", "changed": True, "_ansible_verbose_always": True})
    assert out.getvalue().startswith('changed: [h1] => {\n    "msg": "y"\n}')


def test_errors_where_ansible_words_them_otherwise_or_shows_none():
    console, out, _ = _console()
    task = TaskView(name="t", action="debug", location="p.yml:3:7")
    # failed_when made the failure: its words, not the result's msg
    console.runner_result("h1", task, Status.FAILED, {
        "msg": "hello", "failed": True, "failed_when_result": True})
    assert "[ERROR]: Task failed: Action failed: A 'failed_when' expression evaluated " \
        "to 'True'.\nOrigin: p.yml:3:7\n" in out.getvalue()
    # until ran out: the action did not fail, there is no error to show
    console, out, _ = _console()
    command = TaskView(name="c", action="command", location="p.yml:3:7")
    console.runner_result("h1", command, Status.FAILED, {
        "msg": "", "failed": True, "attempts": 2, "_ioc_until_exhausted": True})
    assert out.getvalue() == 'fatal: [h1]: FAILED! => {"attempts": 2, "msg": ""}\n'
    # a loop's unreachable aggregate: its items showed their errors
    console, out, _ = _console()
    console.runner_result("u1", command, Status.UNREACHABLE, {
        "msg": "All items completed", "unreachable": True, "results": [{"unreachable": True}]})
    assert "[ERROR]" not in out.getvalue() and "UNREACHABLE!" in out.getvalue()
    # Gathering Facts (a task Ansible adds) has no origin to show
    console, out, _ = _console()
    facts = TaskView(name="Gathering Facts", action="gather_facts", location="p.yml:1:3",
                     implicit=True)
    console.runner_result("u1", facts, Status.UNREACHABLE, {"msg": "gone", "unreachable": True})
    assert out.getvalue().startswith("[ERROR]: Task failed: gone\nfatal: [u1]: UNREACHABLE!")


def test_a_warning_shows_once_per_run_as_ansibles_display_does():
    console, _, err = _console()
    console.warning("noop task does not support when conditional")
    console.warning("noop task does not support when conditional")
    assert err.getvalue() == "[WARNING]: noop task does not support when conditional\n"
