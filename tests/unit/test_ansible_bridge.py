"""The mitogen_batch bridge (``ioc.ansible``) without ansible: the version gate,
the strategy directory, plain values and the dispatcher's walks.

(The strategy itself runs under the real ansible-playbook in
tests/ansible/test_mitogen_batch.py.)
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ioc.ansible import hostvars, through_ansible, values
from ioc.ansible.version import version_problem
from tests.conformance.test_conformance import ansible_python

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("version", ["2.19.0", "2.19.4", "2.20.1", "2.21.5", "2.21.0rc1"])
def test_supported_versions_pass_the_gate(version):
    assert version_problem(version) is None


@pytest.mark.parametrize("version", ["2.18.6", "2.22.0", "2.17.14", "3.0.0", "devel"])
def test_other_versions_get_one_message_naming_the_range(version):
    assert version_problem(version) == (
        "the mitogen_batch strategy supports ansible-core 2.19 to 2.21; this is ansible-core %s"
        % version)


@pytest.mark.parametrize("command", [["ioc.ansible", "--strategy-dir"], ["ioc", "--strategy-dir"]],
                         ids=["python -m ioc.ansible", "ioc-run"])
def test_strategy_dir_is_printed_and_holds_the_shim(command):
    """In a checkout (and an editable install) the top-level strategy_plugin/;
    an installed wheel's is checked in tests/integration/test_packaging.py."""
    r = subprocess.run([sys.executable, "-m", *command],
                       capture_output=True, text=True, timeout=60, cwd="/",
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    directory = Path(r.stdout.strip())
    assert directory == ROOT / "strategy_plugin"
    assert (directory / "mitogen_batch.py").is_file()


MODULES = sorted(p.stem for p in (ROOT / "ioc" / "ansible").glob("*.py")
                 if p.stem not in ("__init__", "__main__"))


def test_importing_the_bridge_does_not_import_ansible():
    """Not the package, nor any of its modules: the dispatcher never loads ansible.

    Checked under the Python whose ansible-playbook runs the strategy, where
    ``ansible`` is importable (the last line proves it).
    """
    code = ("import sys\n" + "".join("import ioc.ansible.%s\n" % m for m in MODULES)
            + "print('ansible' in sys.modules)\n"
            + "import ansible.release\nprint('ansible' in sys.modules)\n")
    r = subprocess.run([ansible_python(), "-c", code], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.stdout.split() == ["False", "True"], r.stdout + r.stderr


def test_plain_unwraps_subclasses_into_builtins():
    class Tagged(str):
        pass

    class Number(int):
        pass

    value = values.plain({Tagged("k"): [Tagged("v"), Number(3), (1, 2)], "n": None})
    assert value == {"k": ["v", 3, [1, 2]], "n": None}
    assert type(list(value)[0]) is str and type(value["k"][0]) is str
    assert type(value["k"][1]) is int


# -- the per-task fallback's walk in the dispatcher ----------------------------------

WALK_PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - name: top
      greet:
    - block:
        - debug: msg=one
        - name: in body
          greet:
        - debug: msg=two
      rescue:
        - debug: msg=rescued
    - block:
        - name: always only
          greet:
      always:
        - debug: msg=always
"""


def _walk_setup(tmp_path):
    from ioc import loader
    from ioc.controller.capabilities import runner_capabilities
    from ioc.planner import plan_play

    path = tmp_path / "play.yml"
    path.write_text(WALK_PLAY)
    play = loader.load_playbook(str(path)).plays[0]
    plan = plan_play(play, runner_capabilities(),
                     fallback=lambda t: "lacks greet" if t.action == "greet" else None)
    steps = {plan.entries_of(s)[0].task.name: s for s in plan.steps
             if getattr(s, "where", None) == "ansible"}
    return plan, steps


def _wire(plan, step, blocks=None):
    from ioc.model import WIRE_VERSION
    from ioc.planner import wire_tree

    return {"v": WIRE_VERSION, "host": "h1", "start": step.start, "end": step.end,
            "tree": wire_tree(plan.program.tree, step.start, step.end), "handlers": [],
            "vars": {"inventory": {}, "play": {}, "extra": {}, "magic": {}},
            "state": {"facts": {}, "runtime": {}, "include_vars": {}, "notified": [],
                      "blocks": blocks or {}},
            "options": {}}


FAILED = {"status": "failed", "ignored": False, "changed": False,
          "result": {"failed": True, "msg": "boom"}}


def test_the_walk_finds_who_reaches_a_task_and_whether_a_failure_is_rescued(tmp_path):
    plan, steps = _walk_setup(tmp_path)
    top = through_ansible.ansible_walk(_wire(plan, steps["top"]), steps["top"].index, None)
    assert top.reached is False  # reached, nothing to rescue it
    body = steps["in body"]
    assert through_ansible.ansible_walk(_wire(plan, body), body.index, None).reached is True
    # A host that failed earlier in the block is in its rescue: it skips the body task.
    skipped = through_ansible.ansible_walk(
        _wire(plan, body, {"0": {"phase": "rescue", "failure": None}}), body.index, None)
    assert skipped.reached is None


def test_the_walk_applies_ansibles_outcome_as_the_runner_would(tmp_path):
    plan, steps = _walk_setup(tmp_path)
    top = through_ansible.ansible_walk(_wire(plan, steps["top"]), steps["top"].index, FAILED)
    assert top.events[-1]["status"] == "failed"
    body = steps["in body"]
    rescued = through_ansible.ansible_walk(_wire(plan, body), body.index, FAILED)
    end = rescued.events[-1]
    assert end["status"] == "ok"
    assert end["state"]["blocks"] == {"0": {"phase": "rescue", "failure": None}}
    assert end["state"]["runtime"]["ansible_failed_result"] == {"failed": True, "msg": "boom"}
    always = steps["always only"]
    unrescued = through_ansible.ansible_walk(_wire(plan, always), always.index, FAILED)
    saved = unrescued.events[-1]["state"]["blocks"]["1"]
    assert saved["phase"] == "always" and saved["failure"]["result"]["msg"] == "boom"
    ok = dict(FAILED, status="ok", changed=True, result={"changed": True}, notify=["h"])
    notified = through_ansible.ansible_walk(_wire(plan, steps["top"]), steps["top"].index, ok)
    assert notified.events[-1]["status"] == "ok"
    assert notified.events[-1]["state"]["notified"] == ["h"]
    ignored = dict(FAILED, ignored=True)
    assert through_ansible.ansible_walk(_wire(plan, steps["top"]), steps["top"].index,
                                        ignored).events[-1]["status"] == "ok"


def test_delta_keeps_what_a_task_added_or_replaced():
    before = {"facts": {"a": 1}, "runtime": {"r": {"x": 1}, "same": [1]}, "include_vars": {}}
    after = {"facts": {"a": 1}, "runtime": {"r": {"x": 2}, "same": [1], "new": "v"},
             "include_vars": {}}
    assert hostvars.delta(before, after) == {"runtime": {"r": {"x": 2}, "new": "v"}}
