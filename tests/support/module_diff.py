"""Run the same module task through ioc's own module and through Ansible's, side by side.

Run with an interpreter that has ansible-core (the reference) and this
checkout on ``PYTHONPATH``; reads a JSON list of cases on stdin and writes a
JSON list of outcomes on stdout. Each case::

    {"module": "lineinfile", "args": {"path": "@/f", "line": "x"},
     "files": {"f": "a\\n", "d/": null, "l": {"link": "f"}},
     "check": false, "diff": false}

runs twice, each time in a fresh directory built from ``files`` (a value of
None makes a directory, a ``{"link": target}`` a symlink, a string a file);
``@`` in arguments stands for that directory. The outcome holds both
results and both directory trees afterwards, with the directory written as
``@`` again, so the caller compares them as they are.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
from typing import Any, Dict


def _build(root: str, files: Dict[str, Any]) -> None:
    for rel, spec in sorted(files.items()):
        path = os.path.join(root, rel.rstrip("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if spec is None:
            os.makedirs(path, exist_ok=True)
        elif isinstance(spec, dict) and "link" in spec:
            os.symlink(spec["link"], path)
        else:
            with open(path, "w") as handle:
                handle.write(spec)
            if isinstance(spec, str) and rel.endswith(".sh"):
                os.chmod(path, 0o755)


def _tree(root: str) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for base, dirs, names in os.walk(root):
        for name in sorted(dirs + names):
            path = os.path.join(base, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = {"link": os.readlink(path)}
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = {"dir": True, "mode": oct(stat.S_IMODE(st.st_mode))}
            else:
                with open(path, "rb") as handle:
                    data = handle.read()
                out[rel] = {"mode": oct(stat.S_IMODE(st.st_mode)),
                            "content": data.decode("utf-8", "replace")}
    return out


def _substitute(value: Any, root: str) -> Any:
    if isinstance(value, str):
        return value.replace("@", root) if value.startswith("@") else value
    if isinstance(value, list):
        return [_substitute(v, root) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, root) for k, v in value.items()}
    return value


def _unsubstitute(value: Any, root: str) -> Any:
    if isinstance(value, str):
        return value.replace(root, "@")
    if isinstance(value, list):
        return [_unsubstitute(v, root) for v in value]
    if isinstance(value, dict):
        return {k: _unsubstitute(v, root) for k, v in value.items()}
    return value


def main() -> int:
    from ioc.agentless_runner import actions, ansible_module, results
    from ioc.ansible import modules

    modules.init_loader()
    mset = modules.ModuleSet(internal=modules.run_wide_args(0))
    outcomes = []
    for case in json.load(sys.stdin):
        name = case["module"]
        key, why = mset.add(modules.resolve("ansible.legacy." + name), name)
        if key is None:
            raise SystemExit(why)
        outcome = {}
        for engine in ("ioc", "ansible"):
            root = tempfile.mkdtemp(prefix="ioc-diff-")
            old = os.getcwd()
            try:
                _build(root, case.get("files") or {})
                os.chdir(root)
                args = _substitute(case["args"], root)
                ctx = actions.Context(check_mode=case.get("check", False),
                                      diff_mode=case.get("diff", False))
                if engine == "ioc":
                    action = name
                    if args.get("_uses_shell"):  # ioc's command module is shell too
                        action, args = "shell", {k: v for k, v in args.items()
                                                 if k != "_uses_shell"}
                    result = results.normalize(actions.run(action, dict(args), ctx))
                else:
                    result = results.normalize(
                        ansible_module.run(mset.specs[key], dict(args), ctx, mset.files.__getitem__))
                outcome[engine] = {"result": _unsubstitute(result, root), "tree": _tree(root)}
            finally:
                os.chdir(old)
                shutil.rmtree(root, ignore_errors=True)
        outcomes.append(outcome)
    json.dump(outcomes, sys.stdout, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
