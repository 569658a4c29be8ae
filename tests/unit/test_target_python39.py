"""Code that runs on the target must be Python 3.9 syntax (DESIGN §4).

``ast.parse(..., feature_version=(3, 9))`` rejects most syntax newer than
3.9 (``match``, ``except*``...). It is best effort: it lets parenthesised
context managers and starred annotations through, and it cannot see 3.10+
*library* use. tests/integration/test_target_python39_imports.py compiles and
imports the same code under a real 3.9 interpreter for that.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "ioc" / "agentless_runner"


def target_files():
    files = sorted(p for p in RUNNER.rglob("*.py") if "__pycache__" not in p.parts)
    # ioc/__init__.py (if any) runs on the target too, before the runner.
    if (ROOT / "ioc" / "__init__.py").is_file():
        files.insert(0, ROOT / "ioc" / "__init__.py")
    return files


FILES = target_files()


def test_runner_code_exists():
    assert (RUNNER / "__init__.py").is_file()
    assert (RUNNER / "modules" / "__init__.py").is_file()


@pytest.mark.parametrize("path", FILES, ids=[p.relative_to(ROOT).as_posix() for p in FILES])
def test_parses_as_python39(path):
    source = path.read_text(encoding="utf-8")
    try:
        ast.parse(source, filename=str(path), feature_version=(3, 9))
    except SyntaxError as exc:
        pytest.fail("%s:%s: not Python 3.9 syntax: %s" % (
            path.relative_to(ROOT), exc.lineno, exc.msg), pytrace=False)


@pytest.mark.parametrize("source", [
    "match x:\n    case 1:\n        pass\n",
    "try:\n    pass\nexcept* ValueError:\n    pass\n",
])
def test_feature_version_rejects_newer_syntax(source):
    """The check above has teeth: this interpreter accepts the syntax, 3.9 does not."""
    ast.parse(source)
    with pytest.raises(SyntaxError):
        ast.parse(source, feature_version=(3, 9))
