"""The shim that makes ``linear`` mitogen_batch (``linear_is_mitogen_batch/linear.py``),
linked into a strategy directory as the harness links it, under ansible-core 2.21's
``ansible-playbook``: the play runs under mitogen_batch (its dispatcher logs next to
the link) and the targets' modules do not see anything of the shim in their
environment (a local connection's modules have ansible-playbook's: the shim had
put ``IOC_BRIDGE_LOG`` there, one ``ansible_env`` key linear's run lacks, which
made the ``replace`` target's junit report one line longer)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.targets.source import SourceError, find_python313

pytestmark = pytest.mark.integration

SHIM = Path(__file__).resolve().parent / "linear_is_mitogen_batch" / "linear.py"


def test_the_shim_runs_mitogen_batch_and_leaves_the_modules_environment_alone(tmp_path):
    try:
        python = find_python313()
    except SourceError as exc:
        pytest.fail("%s" % exc, pytrace=False)
    strategies = tmp_path / "strategy"
    strategies.mkdir()
    (strategies / "linear.py").symlink_to(SHIM)
    (tmp_path / "hosts").write_text(
        "testhost ansible_connection=local ansible_python_interpreter=%s\n" % python)
    (tmp_path / "play.yml").write_text(
        "- hosts: testhost\n"
        "  gather_facts: true\n"
        "  tasks:\n"
        "    - debug:\n"
        "        msg: \"{{ ansible_facts.env.keys() | select('match', 'IOC_') | list }}\"\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANSIBLE_", "IOC_")) and k != "PYTHONPATH"}
    env.update(ANSIBLE_STRATEGY_PLUGINS=str(strategies), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(
        [python, os.path.join(os.path.dirname(python), "ansible-playbook"), "-i",
         str(tmp_path / "hosts"), str(tmp_path / "play.yml")],
        cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"msg": []' in proc.stdout, proc.stdout
    log = strategies / "ioc-bridge.log"
    assert log.exists() and "Batch" in log.read_text(), "mitogen_batch did not run the play"
