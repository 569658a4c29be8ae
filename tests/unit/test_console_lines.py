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
