"""STYLE: the controller side is type-checked by mypy in CI (this test).

The configuration is ``[tool.mypy]`` in pyproject.toml: every module of
``ioc`` and ``strategy_plugin`` but the runner, which is Python 3.9 target
code kept free of annotations-only imports.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_controller_side_type_checks():
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary",
                           "--cache-dir", str(ROOT / ".mypy_cache")],
                          cwd=str(ROOT), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
