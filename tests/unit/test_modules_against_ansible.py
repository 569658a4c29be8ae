"""ioc's own modules give Ansible's results: the same task through both, compared.

ioc keeps a module of its own only where it is faster *and* equal to
Ansible's module for every option it accepts (docs/modules.md). Each case
here runs one task twice in fresh, identical directories -- once through
ioc's module in the runner, once through Ansible's own module code as the
runner runs it (``tests/support/module_diff.py``, under ansible-core 2.21) --
and compares what a user can observe: the result and the files afterwards.
Hand-written cases pin the behaviours users meet; the property-based ones
draw option combinations from each module's table.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conformance.test_conformance import ansible_python

ROOT = Path(__file__).resolve().parents[2]

#: Result keys that legitimately differ run to run (times) or that only one
#: side sets for reasons outside the module (documented where they arise).
VOLATILE = {"start", "end", "delta", "invocation"}


def run_cases(cases: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([ansible_python(), "-m", "tests.support.module_diff"],
                          input=json.dumps(cases), capture_output=True, text=True,
                          cwd=str(ROOT), env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


#: What ``stat`` reports of the file system rather than of the module: two
#: fresh files never share them.
STAT_VOLATILE = {"atime", "mtime", "ctime", "inode", "version"}


def _warning_text(warning: Any) -> Any:
    """A 2.21 module's structured warning, as the console shows it (its message)."""
    if isinstance(warning, dict) and warning.get("__ansible_type") == "WarningSummary":
        return warning.get("event", {}).get("msg")
    return warning


def observable(outcome: Dict[str, Any]) -> Dict[str, Any]:
    result = {k: v for k, v in outcome["result"].items() if k not in VOLATILE}
    if result.get("warnings"):
        result["warnings"] = [_warning_text(w) for w in result["warnings"]]
    if isinstance(result.get("stat"), dict):
        result["stat"] = {k: v for k, v in result["stat"].items() if k not in STAT_VOLATILE}
    return {"result": result, "tree": outcome["tree"]}


def assert_same(cases: List[Dict[str, Any]]) -> None:
    differ = []
    for case, outcome in zip(cases, run_cases(cases)):
        ioc, ansible = observable(outcome["ioc"]), observable(outcome["ansible"])
        if ioc != ansible:
            differ.append("%s\n  ioc:     %s\n  ansible: %s" % (
                json.dumps(case, sort_keys=True), json.dumps(ioc, sort_keys=True),
                json.dumps(ansible, sort_keys=True)))
    assert not differ, "%d of %d cases differ:\n%s" % (len(differ), len(cases),
                                                       "\n".join(differ))


TEXT = "alpha\nbeta\ngamma\n"

CASES = {
    "command": [
        {"args": {"_raw_params": "echo hello"}},
        {"args": {"_raw_params": "false"}},
        {"args": {"_raw_params": "cat f", "chdir": "@"}, "files": {"f": TEXT}},
        {"args": {"argv": ["printf", "%s|", "a b", "c"]}},
        {"args": {"_raw_params": "touch x", "creates": "@/f", "chdir": "@"}, "files": {"f": ""}},
        {"args": {"_raw_params": "touch x", "removes": "@/nothing", "chdir": "@"}},
        {"args": {"_raw_params": "cat", "stdin": "in put"}},
        {"args": {"_raw_params": "cat", "stdin": "x", "stdin_add_newline": False}},
        {"args": {"_raw_params": "echo '  padded  '", "strip_empty_ends": False}},
        {"args": {"_raw_params": "/nonexistent/binary"}},
        {"args": {"_raw_params": "echo $HOME | wc -c", "_uses_shell": True}},
        {"args": {"_raw_params": "echo x"}, "check": True},
        {"args": {"_raw_params": "touch y", "creates": "@/y", "chdir": "@"}, "check": True},
    ],
    "file": [
        {"args": {"path": "@/d", "state": "directory", "mode": "0750"}},
        {"args": {"path": "@/d/e/f", "state": "directory"}},
        {"args": {"path": "@/f", "state": "file"}, "files": {"f": TEXT}},
        {"args": {"path": "@/missing", "state": "file"}},
        {"args": {"path": "@/t", "state": "touch", "mode": "u=rw,g=r"}},
        {"args": {"path": "@/f", "state": "absent"}, "files": {"f": TEXT}},
        {"args": {"path": "@/nothing", "state": "absent"}},
        {"args": {"path": "@/l", "src": "f", "state": "link"}, "files": {"f": TEXT}},
        {"args": {"path": "@/dangling", "src": "nowhere", "state": "link", "force": True}},
        {"args": {"path": "@/h", "src": "@/f", "state": "hard"}, "files": {"f": TEXT}},
        {"args": {"path": "@/f", "mode": "0600"}, "files": {"f": TEXT}},
        {"args": {"path": "@/f", "mode": "0644"}, "files": {"f": TEXT}},
        {"args": {"path": "@/d", "state": "directory", "mode": "0700"}, "check": True},
        {"args": {"path": "@/f", "state": "directory"}, "files": {"f": TEXT}},
        {"args": {"path": "@/d", "state": "directory", "recurse": True, "mode": "u+rwX"},
         "files": {"d/a": "x", "d/s/": None}},
    ],
    "stat": [
        {"args": {"path": "@/f"}, "files": {"f": TEXT}},
        {"args": {"path": "@/missing"}},
        {"args": {"path": "@/d"}, "files": {"d/": None}},
        {"args": {"path": "@/l"}, "files": {"f": TEXT, "l": {"link": "f"}}},
        {"args": {"path": "@/l", "follow": True}, "files": {"f": TEXT, "l": {"link": "f"}}},
        {"args": {"path": "@/f", "get_checksum": False, "get_mime": False},
         "files": {"f": TEXT}},
        {"args": {"path": "@/f", "checksum_algorithm": "sha256"}, "files": {"f": TEXT}},
    ],
    "lineinfile": [
        {"args": {"path": "@/f", "line": "delta"}, "files": {"f": TEXT}},
        {"args": {"path": "@/f", "line": "beta"}, "files": {"f": TEXT}},
        {"args": {"path": "@/f", "regexp": "^b", "line": "BETA"}, "files": {"f": TEXT}},
        {"args": {"path": "@/f", "regexp": "^zzz", "state": "absent"}, "files": {"f": TEXT}},
        {"args": {"path": "@/f", "regexp": "^g", "state": "absent"}, "files": {"f": TEXT}},
        {"args": {"path": "@/f", "line": "first", "insertbefore": "BOF"}, "files": {"f": TEXT}},
        {"args": {"path": "@/f", "line": "x", "insertafter": "^alpha"}, "files": {"f": TEXT}},
        {"args": {"path": "@/new", "line": "x", "create": True}},
        {"args": {"path": "@/new", "line": "x"}},
        {"args": {"path": "@/f", "regexp": "^(a)lpha", "line": r"\1LPHA", "backrefs": True},
         "files": {"f": TEXT}},
        {"args": {"path": "@/f", "line": "delta"}, "files": {"f": TEXT}, "check": True,
         "diff": True},
        {"args": {"path": "@/f", "line": "delta", "mode": "0600"}, "files": {"f": TEXT}},
        {"args": {"path": "@/f", "search_string": "eta", "line": "BETA"}, "files": {"f": TEXT}},
    ],
    "blockinfile": [
        {"args": {"path": "@/f", "block": "one\ntwo"}, "files": {"f": TEXT}},
        {"args": {"path": "@/f", "block": "one", "marker": "## {mark} X"}, "files": {"f": TEXT}},
        {"args": {"path": "@/f", "block": "one", "insertbefore": "^beta"}, "files": {"f": TEXT}},
        {"args": {"path": "@/f", "state": "absent"},
         "files": {"f": TEXT + "# BEGIN ANSIBLE MANAGED BLOCK\nz\n# END ANSIBLE MANAGED BLOCK\n"}},
        {"args": {"path": "@/new", "block": "x", "create": True}},
        {"args": {"path": "@/f", "block": "one"}, "files": {"f": TEXT}, "check": True,
         "diff": True},
    ],
    "replace": [
        {"args": {"path": "@/f", "regexp": "a", "replace": "A"}, "files": {"f": TEXT}},
        {"args": {"path": "@/f", "regexp": "^(\\w)(\\w+)$", "replace": r"\2\1"},
         "files": {"f": TEXT}},
        {"args": {"path": "@/f", "regexp": "zzz", "replace": "A"}, "files": {"f": TEXT}},
        {"args": {"path": "@/f", "regexp": "a", "replace": "A", "after": "beta"},
         "files": {"f": TEXT}},
        {"args": {"path": "@/f", "regexp": "a", "replace": "A", "before": "beta"},
         "files": {"f": TEXT}},
        {"args": {"path": "@/missing", "regexp": "a", "replace": "A"}},
        {"args": {"path": "@/f", "regexp": "a", "replace": "A"}, "files": {"f": TEXT},
         "check": True},
    ],
    "slurp": [
        {"args": {"src": "@/f"}, "files": {"f": TEXT}},
        {"args": {"src": "@/missing"}},
        {"args": {"src": "@/d"}, "files": {"d/": None}},
    ],
}


@pytest.mark.parametrize("module", sorted(CASES))
def test_ioc_module_gives_ansibles_result(module):
    assert_same([dict(case, module=module) for case in CASES[module]])


# -- property-based: option combinations drawn from each module's table -------------------

_lines = st.sampled_from(["alpha", "beta", "gamma", "delta", "", "  beta  ", "# c"])
_regex = st.sampled_from(["^a", "^beta$", "a", "zzz", "^(\\w+)$", "eta"])
_file = st.lists(_lines, max_size=5).map(lambda ls: "".join(line + "\n" for line in ls))


@st.composite
def lineinfile_case(draw):
    args: Dict[str, Any] = {"path": "@/f"}
    state = draw(st.sampled_from(["present", "absent"]))
    args["state"] = state
    if state == "present" or draw(st.booleans()):
        args["line"] = draw(_lines)
    where = draw(st.sampled_from(["regexp", "search_string", None]))
    if where == "regexp":
        args["regexp"] = draw(_regex)
    elif where == "search_string":
        args["search_string"] = draw(st.sampled_from(["eta", "alpha", "x"]))
    if state == "absent" and "line" not in args and where is None:
        args["line"] = "beta"
    if state == "present":
        anchor = draw(st.sampled_from([None, "insertafter", "insertbefore"]))
        if anchor:
            args[anchor] = draw(st.sampled_from(["BOF", "EOF", "^beta", "^nothing"]))
        if where == "regexp" and draw(st.booleans()):
            args["backrefs"] = True
        if draw(st.booleans()):
            args["firstmatch"] = True
    return {"module": "lineinfile", "args": args, "files": {"f": draw(_file)},
            "check": draw(st.booleans()), "diff": draw(st.booleans())}


@st.composite
def replace_case(draw):
    args: Dict[str, Any] = {"path": "@/f", "regexp": draw(_regex),
                            "replace": draw(st.sampled_from(["X", r"\1", "", "a\nb"]))}
    for bound in ("after", "before"):
        if draw(st.booleans()):
            args[bound] = draw(st.sampled_from(["beta", "alpha", "nope"]))
    return {"module": "replace", "args": args, "files": {"f": draw(_file)},
            "check": draw(st.booleans())}


@st.composite
def file_case(draw):
    state = draw(st.sampled_from(["file", "directory", "touch", "absent", "link"]))
    args: Dict[str, Any] = {"path": draw(st.sampled_from(["@/f", "@/d", "@/new", "@/l"])),
                            "state": state}
    if state == "link":
        args["src"] = draw(st.sampled_from(["f", "d", "missing"]))
        if draw(st.booleans()):
            args["force"] = True
    if state != "absent" and draw(st.booleans()):
        args["mode"] = draw(st.sampled_from(["0600", "0755", "u=rwx,go=rx", "a+r", "0644"]))
    return {"module": "file", "args": args,
            "files": {"f": "x", "d/": None, "l": {"link": "f"}},
            "check": draw(st.booleans())}


@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=True)
@given(st.lists(st.one_of(lineinfile_case(), replace_case(), file_case()),
                min_size=60, max_size=60))
def test_drawn_option_combinations_give_ansibles_result(cases):
    # One draw of 60 cases, so that the reference interpreter starts once.
    assert_same(cases)
