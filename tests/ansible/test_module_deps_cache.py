"""The strategy keeps what Ansible's ``ModuleDepFinder`` found in each
``module_utils`` file between runs (ioc/ansible/modules.py, ``_DepsFile``):
a run with the kept findings must build the very payloads a run without
them builds, and parse no ``module_utils`` file to do it."""
import json
import os
import subprocess

import pytest

from tests.ansible.test_mitogen_batch import ROOT
from tests.support.interpreters import find_python313

SCRIPT = r"""
import json, sys
from ansible.executor import module_common as mc
from ioc.ansible import modules

parsed = []
compile_ast = mc._compile_module_ast
def counting(name, source):
    parsed.append(name)
    return compile_ast(name, source)
mc._compile_module_ast = counting

modules.init_loader()
built = modules.ModuleSet()
for action in ("ansible.builtin.apt", "ansible.builtin.user", "ansible.builtin.copy",
               "ansible.builtin.lineinfile"):
    key, why = built.add(modules.resolve(action), action.rsplit(".", 1)[1])
    assert why is None, why
print(json.dumps({"specs": built.specs, "files": sorted(built.files), "parsed": parsed}))
"""


def _build(python, cache):
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), PYTHONPATH=str(ROOT))
    proc = subprocess.run([python, "-c", SCRIPT], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_run_with_the_kept_findings_builds_the_same_payloads_parsing_only_the_modules(
        tmp_path):
    python = find_python313()
    if python is None:
        pytest.fail("no Python 3.13 with ansible-core 2.21 (scripts/test installs it)")
    cold = _build(python, tmp_path)
    kept = list((tmp_path / "ioc").glob("module-deps-*.json"))
    assert len(kept) == 1
    warm = _build(python, tmp_path)
    assert warm["specs"] == cold["specs"] and warm["files"] == cold["files"]
    # (without the file every module_utils file a module reaches is parsed;
    # with it, only each module itself, for its metadata)
    assert len(cold["parsed"]) > 40
    assert sorted(warm["parsed"]) == sorted(
        spec["fqn"] for spec in warm["specs"].values())


def test_a_changed_module_utils_file_is_parsed_again(tmp_path):
    """The findings are kept by the source's digest: a kept entry for other
    bytes of the same file is never used."""
    python = find_python313()
    cold = _build(python, tmp_path)
    path = next((tmp_path / "ioc").glob("module-deps-*.json"))
    kept = json.loads(path.read_text())
    # the same keys with every digest changed: as if every file had changed
    path.write_text(json.dumps({k.rsplit(" ", 1)[0] + " 0" * 1 + "bad": v
                                for k, v in kept.items()}))
    again = _build(python, tmp_path)
    assert again["specs"] == cold["specs"]
    assert len(again["parsed"]) == len(cold["parsed"])
