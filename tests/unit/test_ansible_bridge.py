"""ioc.ansible_bridge without ansible: the version gate and the strategy directory.

(The strategy itself runs under the real ansible-playbook in
tests/ansible/test_mitogen_batch.py.)
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ioc import ansible_bridge

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("version", ["2.19.0", "2.19.4", "2.20.1", "2.21.5", "2.21.0rc1"])
def test_supported_versions_pass_the_gate(version):
    assert ansible_bridge.version_problem(version) is None


@pytest.mark.parametrize("version", ["2.18.6", "2.22.0", "2.17.14", "3.0.0", "devel"])
def test_other_versions_get_one_message_naming_the_range(version):
    assert ansible_bridge.version_problem(version) == (
        "the mitogen_batch strategy supports ansible-core 2.19 to 2.21; this is ansible-core %s"
        % version)


def test_strategy_dir_is_printed_and_holds_the_shim():
    r = subprocess.run([sys.executable, "-m", "ioc.ansible_bridge", "--strategy-dir"],
                       capture_output=True, text=True, timeout=60, cwd="/",
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    directory = Path(r.stdout.strip())
    assert directory == ROOT / "strategy_plugin"
    assert (directory / "mitogen_batch.py").is_file()


def test_importing_the_bridge_does_not_import_ansible():
    code = "import sys, ioc.ansible_bridge; print('ansible' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.stdout.strip() == "False", r.stderr


def test_plain_unwraps_subclasses_into_builtins():
    class Tagged(str):
        pass

    class Number(int):
        pass

    value = ansible_bridge.plain({Tagged("k"): [Tagged("v"), Number(3), (1, 2)], "n": None})
    assert value == {"k": ["v", 3, [1, 2]], "n": None}
    assert type(list(value)[0]) is str and type(value["k"][0]) is str
    assert type(value["k"][1]) is int
