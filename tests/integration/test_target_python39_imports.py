"""The runner imports cleanly on a real Python 3.9 (the oldest target).

The 3.9 interpreter runs with ``-I -S``: no site-packages at all, so the only
things importable are the stdlib, this checkout and the four pure-Python
packages a target gets from the controller (jinja2, markupsafe, PyYAML's pure
part, and mitogen — whose ``mitogen.core`` every mitogen context already has),
and Ansible's package, whose ``module_utils`` the controller forwards with the
batch that needs them (``validate_argument_spec``). They are the
controller's installed copies, linked into a temporary directory; nothing is
installed into the 3.9 interpreter.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import ansible
import jinja2
import markupsafe
import mitogen
import pytest
import yaml

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "ioc" / "agentless_runner"

PROBE = r"""
import importlib, json, sys, traceback
sys.path[:0] = [sys.argv[1], sys.argv[2]]
out = {"version": list(sys.version_info[:2]), "errors": {}, "origins": {}}
for name in sys.argv[3:]:
    try:
        importlib.import_module(name)
    except BaseException:
        out["errors"][name] = traceback.format_exc()
for name in ("jinja2", "markupsafe", "mitogen"):
    mod = sys.modules.get(name)
    if mod is not None:
        out["origins"][name] = mod.__file__
print(json.dumps(out))
"""


def runner_modules():
    names = []
    for path in sorted(RUNNER.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


@pytest.fixture(scope="module")
def target_site(tmp_path_factory):
    site = tmp_path_factory.mktemp("py39-site")
    for mod in (jinja2, markupsafe, mitogen, yaml, ansible):
        src = Path(mod.__file__).parent
        os.symlink(src, site / src.name)
    return site


def test_runner_imports_under_python39(python39, target_site):
    modules = runner_modules()
    assert "ioc.agentless_runner" in modules
    assert "ioc.agentless_runner.modules" in modules
    r = subprocess.run(
        [python39, "-I", "-S", "-B", "-c", PROBE, str(ROOT), str(target_site), *modules],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        cwd=str(target_site),
    )
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["version"] == [3, 9]
    failures = "\n".join("--- %s\n%s" % kv for kv in result["errors"].items())
    assert not result["errors"], "runner modules fail to import on Python 3.9:\n" + failures
    for name, origin in result["origins"].items():
        assert origin.startswith(str(target_site)), (name, origin)


def test_probe_sees_only_what_a_target_has(python39, target_site):
    """networkx and the controller's code are not importable there."""
    r = subprocess.run(
        [python39, "-I", "-S", "-B", "-c", PROBE, str(ROOT), str(target_site),
         "networkx", "mitogen.core"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0, r.stderr
    errors = json.loads(r.stdout)["errors"]
    assert set(errors) == {"networkx"}
