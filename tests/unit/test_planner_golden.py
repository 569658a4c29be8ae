"""Golden plans: ``golden/plans/<case>.yml`` planned must equal ``<case>.json``.

Each case is a small playbook exercising one barrier rule of
linear-semantics §9 (or one construct that must *not* cut); its expected
file is :func:`ioc.planner.render.plan_to_json` with the def-use graph, as a
list with one entry per play, dumped with ``indent=2, sort_keys=True`` (the
same text as ``ioc-run --plan --plan-format json``).

To (re)write the expected files after an intended planner change::

    IOC_REGENERATE_GOLDEN=1 python3 -m pytest tests/unit/test_planner_golden.py

then read every changed ``.json`` (``git diff tests/unit/golden``) and check
it by hand against §9 before committing: a golden file that encodes a wrong
plan is worse than none. A case without an expected file fails until it is
generated.
"""
from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import pytest

from ioc import loader
from ioc.ansible.modules import attach
from ioc.controller.capabilities import runner_capabilities
from ioc.planner import ControllerStep, explain, plan_play
from ioc.planner.render import plan_graph, plan_to_dot, plan_to_json, relative

PLANS = Path(__file__).parent / "golden" / "plans"
CASES = sorted(p.stem for p in PLANS.glob("*.yml"))
REGENERATE = os.environ.get("IOC_REGENERATE_GOLDEN") == "1"


def plans_of(path):
    caps = runner_capabilities()
    return [plan_play(play, caps) for play in attach(loader.load_playbook(str(path))).plays]


def render_json(path) -> str:
    plans = plans_of(path)
    return json.dumps([plan_to_json(plan, plan_graph(plan)) for plan in plans],
                      indent=2, sort_keys=True) + "\n"


def render_dot(path) -> str:
    return "".join(plan_to_dot(plan, plan_graph(plan)) for plan in plans_of(path))


def test_there_are_cases():
    assert len(CASES) >= 30


@pytest.mark.parametrize("case", CASES)
def test_plan_matches_golden(case):
    actual = render_json(PLANS / ("%s.yml" % case))
    expected_path = PLANS / ("%s.json" % case)
    if REGENERATE:
        expected_path.write_text(actual)
        return
    assert expected_path.exists(), (
        "no expected plan %s; generate it with IOC_REGENERATE_GOLDEN=1 and review it"
        % expected_path.name)
    expected = expected_path.read_text()
    if actual != expected:
        diff = "".join(difflib.unified_diff(
            expected.splitlines(True), actual.splitlines(True),
            fromfile="expected %s" % expected_path.name, tofile="planned %s.yml" % case))
        pytest.fail("plan of %s.yml differs from %s.json:\n%s\n%s" % (
            case, case, diff, "\n".join(explain(p) for p in plans_of(PLANS / ("%s.yml" % case)))),
            pytrace=False)


def test_no_stale_expected_files():
    assert sorted(p.stem for p in PLANS.glob("*.json")) == CASES


@pytest.mark.parametrize("case", ["role_based", "run_once", "handlers_flush", "group_by"])
def test_planning_is_byte_identical_five_times(case):
    path = PLANS / ("%s.yml" % case)
    jsons = {render_json(path) for _ in range(5)}
    dots = {render_dot(path) for _ in range(5)}
    texts = {"\n".join(explain(p) for p in plans_of(path)) for _ in range(5)}
    assert len(jsons) == 1 and len(dots) == 1 and len(texts) == 1


@pytest.mark.parametrize("case", CASES)
def test_golden_output_does_not_depend_on_where_the_playbook_lives(case):
    text = render_json(PLANS / ("%s.yml" % case)) + render_dot(PLANS / ("%s.yml" % case))
    assert str(PLANS) not in text


@pytest.mark.parametrize("case", CASES)
def test_dot_is_one_well_formed_digraph_per_play(case):
    path = PLANS / ("%s.yml" % case)
    dot = render_dot(path)
    assert dot.count("digraph ") == len(plans_of(path))
    assert dot.count("{") == dot.count("}")
    for plan in plans_of(path):
        for number in range(1, len(plan.steps) + 1):
            assert "subgraph cluster_%d {" % number in dot


@pytest.mark.parametrize("case", CASES)
def test_every_cut_is_explained(case):
    """Every step's reason is printed (paths relative); only the last step ends the play."""
    for plan in plans_of(PLANS / ("%s.yml" % case)):
        text = explain(plan)
        for number, step in enumerate(plan.steps, 1):
            assert relative(step.reason, plan.program.play.basedir) in text
            if number < len(plan.steps):
                assert step.reason != "end of play"
        controller = [s for s in plan.steps if isinstance(s, ControllerStep)]
        assert text.count("rule: ") >= len(controller)


#: For each barrier case: what ``explain`` must say about the cut (construct, then rule).
EXPLAINED = {
    "run_once": ["controller step (target, once): run_once: task once (run_once.yml:8)",
                 "rule: only the first active host runs it"],
    "delegate_to_other_host": ["controller step (delegate): delegate_to lb1: task drain",
                               "rule: it runs on another host's connection"],
    "delegate_to_localhost": ["controller step (delegate): delegate_to localhost"],
    "local_action": ["controller step (delegate): delegate_to localhost: task local"],
    "delegate_facts": ["ends: delegate_facts writes another host's facts: task facts delegated",
                       "rule: it writes another host's variables (L7.3)"],
    "add_host": ["controller step (controller, once): add_host runs on the controller",
                 "rule: it changes the inventory"],
    "group_by": ["ends: reads groups (group_by.yml:10) reads other hosts' runtime data (groups)",
                 "controller step (controller, once): group_by runs on the controller"],
    "pause": ["controller step (controller, once): pause runs on the controller",
              "rule: it bypasses the host loop"],
    "meta_end_play": ["meta: end_play acts on the whole play", "(L7.10)"],
    "meta_end_batch": ["meta: end_batch acts on the whole play"],
    "meta_clear_host_errors": ["meta: clear_host_errors acts on the whole play"],
    "meta_clear_facts": ["meta: clear_facts acts on the whole play"],
    "meta_refresh_inventory": ["meta: refresh_inventory acts on the whole play"],
    "meta_reset_connection": ["ends: meta: reset_connection ends the connection: task reset",
                              "rule: the connection is closed"],
    "throttle": ["controller step (target, throttle 1): throttle 1: task one at a time"],
    "ignore_unreachable": ["ends: ignore_unreachable: the next task needs a new connection"],
    "any_errors_fatal_task": ["ends: any_errors_fatal: every host's next task depends on this one: "
                              "task fatal (any_errors_fatal_task.yml:9)", "(L4.5)"],
    "any_errors_fatal_play": ["task two (any_errors_fatal_play.yml:8)"],
    "max_fail_percentage": ["ends: max_fail_percentage: failures are counted after each task",
                            "(L4.6)"],
    "serial": ["serial: 2: every serial batch of hosts runs these same steps"],
    "hostvars_other_host": ["reads other hosts' runtime data (hostvars)"],
    "play_hosts_magic": ["reads other hosts' runtime data (ansible_play_hosts)"],
    "controller_file_runtime": ["checks before 3 that nothing wrote chosen"],
    "lookup_runtime_args": ["checks before 3 that nothing wrote picked",
                            "lookup(pipe)", "'picked' is written by task 2"],
}


@pytest.mark.parametrize("case", sorted(EXPLAINED))
def test_explain_names_the_construct_and_the_rule(case):
    text = "\n".join(explain(p) for p in plans_of(PLANS / ("%s.yml" % case)))
    for expected in EXPLAINED[case]:
        assert expected in text, text
