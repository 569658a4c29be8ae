"""Every built-in module honours the module contract and parses as Python 3.9."""
import ast
import glob
import os

import pytest

from ioc.agentless_runner import modules

MODULE_DIR = os.path.dirname(modules.__file__)
STDLIB_OK = {"ioc"}


@pytest.mark.parametrize("name", sorted(modules.MODULES))
def test_contract(name):
    mod = modules.get(name)
    assert isinstance(mod.OPTIONS, frozenset) and all(isinstance(o, str) for o in mod.OPTIONS)
    assert isinstance(mod.SUPPORTS_CHECK_MODE, bool)
    assert callable(mod.run)


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(MODULE_DIR, "*.py"))))
def test_python39_syntax_and_stdlib_imports(path):
    with open(path) as f:
        tree = ast.parse(f.read(), filename=path, feature_version=(3, 9))
    for node in ast.walk(tree):
        assert not isinstance(node, ast.BinOp) or not isinstance(node.op, ast.BitOr) or \
            not _is_type_union(node), "X | Y union in %s" % path
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            top = node.module.split(".")[0]
            if node.module.startswith("ansible.module_utils."):
                continue  # Ansible's target-side library, forwarded with the batch
            assert top in STDLIB_OK or top in _stdlib(), "%s imports %s" % (path, node.module)
        if isinstance(node, ast.Import):
            for alias in node.names:
                assert alias.name.split(".")[0] in _stdlib(), "%s imports %s" % (path, alias.name)


def _is_type_union(node):
    names = {"str", "int", "bytes", "list", "dict", "None", "float", "bool", "tuple"}
    sides = [node.left, node.right]
    return any(isinstance(s, ast.Name) and s.id in names for s in sides) or \
        any(isinstance(s, ast.Constant) and s.value is None for s in sides)


def _stdlib():
    import sys
    return set(getattr(sys, "stdlib_module_names", ())) or {
        "os", "sys", "re", "json", "stat", "time", "datetime", "shutil", "subprocess",
        "tempfile", "hashlib", "glob", "shlex", "pwd", "grp", "errno", "fnmatch",
        "functools", "importlib", "socket", "struct", "platform", "getpass",
        "configparser", "fcntl"}
