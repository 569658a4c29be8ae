"""The runner's own Jinja tests give what Ansible's test plugins give.

A test the runner does not have is run by Ansible on the controller, one
round trip per use; these are the ones it has natively, judged against
ansible-core's own functions on the same values.
"""
import pytest

from ansible.plugins.test import core, files, uri

from ioc.agentless_runner.tests_jinja import TESTS

ANSIBLES = {**core.TestModule().tests(), **files.TestModule().tests(),
            **uri.TestModule().tests()}

CASES = [
    ("successful", {"failed": False}), ("successful", {"failed": True}),
    ("unreachable", {"unreachable": True}), ("unreachable", {}),
    ("reachable", {"unreachable": True}), ("reachable", {"changed": True}),
    ("timedout", {"timedout": {"period": 3}}), ("timedout", {"timedout": {}}),
    ("timedout", {}),
    ("link_exists", "/proc/self/exe"), ("link_exists", "/nonexistent/x"),
    ("uri", "http://example.com/a"), ("uri", "urn:isbn:1"), ("uri", "plain"),
    ("url", "https://example.com"), ("url", "file:///tmp"), ("url", "mailto:x"),
    ("urn", "urn:isbn:1"), ("urn", "http://example.com"),
]


@pytest.mark.parametrize("name, value", CASES, ids=lambda v: str(v))
def test_a_native_test_answers_as_ansibles(name, value):
    assert TESTS[name](value) == ANSIBLES[name](value)
    assert TESTS["ansible.builtin." + name](value) == ANSIBLES[name](value)


@pytest.mark.parametrize("name", ["unreachable", "reachable", "timedout"])
def test_a_result_test_refuses_what_is_no_result_in_ansibles_words(name):
    with pytest.raises(Exception) as ansible:
        ANSIBLES[name]("text")
    with pytest.raises(Exception) as ours:
        TESTS[name]("text")
    assert str(ours.value) == str(ansible.value)
