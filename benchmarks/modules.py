"""Which of ioc's own modules earn their place: time per task, ioc's vs Ansible's.

    PYTHONPATH=. /root/.pyenv/versions/3.13.0/bin/python3.13 -m benchmarks.modules [-n 50]

Runs the same task arguments through the two paths the runner has, in one
process, on this machine (the target is the machine itself; no network):

* **ioc**: ioc's own module in the runner's process (``actions.run``);
* **ansible**: Ansible's own module code through the runner's warm fork
  server (``ansible_module.run``): the payload Ansible would send, one forked
  child per task;
* **ansible-fresh**: the same in a fresh interpreter per task (what the
  runner does when the fork server cannot start, and roughly what
  ``ansible-playbook`` pays on the target with pipelining).

Prints a Markdown table (median milliseconds per task over ``-n`` runs).
Needs ansible-core importable (it builds the payloads). Not a test.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List


def _cases(root: str) -> Dict[str, Dict[str, Any]]:
    path = os.path.join(root, "f.txt")
    with open(path, "w") as handle:
        handle.write("a\nb\n")
    return {
        "command": {"_raw_params": "true"},
        "file": {"path": os.path.join(root, "d"), "state": "directory", "mode": "0755"},
        "stat": {"path": path},
        "lineinfile": {"path": path, "line": "b"},
        "replace": {"path": path, "regexp": "^zzz$", "replace": "y"},
        "copy": {"src": path, "remote_src": True, "dest": os.path.join(root, "c.txt")},
    }


def _median_ms(func: Callable[[], Any], runs: int) -> float:
    func()  # warm: the fork server starts, payloads are assembled
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        result = func()
        samples.append(time.perf_counter() - start)
        if result.get("failed"):
            raise SystemExit("task failed: %r" % (result,))
    return statistics.median(samples) * 1000


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=50, help="runs per cell")
    args = parser.parse_args(argv)

    from ioc.agentless_runner import actions, ansible_module, forkserver
    from ioc.ansible import modules as ansible_modules

    ansible_modules.init_loader()
    mset = ansible_modules.ModuleSet(internal=ansible_modules.run_wide_args(0))
    blob = mset.files.__getitem__
    root = tempfile.mkdtemp(prefix="ioc-bench-modules-")
    rows = []
    try:
        for name, task_args in _cases(root).items():
            key, why = mset.add(ansible_modules.resolve("ansible.legacy." + name), name)
            if key is None:
                raise SystemExit(why)
            spec = mset.specs[key]
            ctx = actions.Context()

            def ioc() -> Any:
                return actions.run(name, dict(task_args), ctx)

            def ansible() -> Any:
                return ansible_module.run(spec, dict(task_args), ctx, blob)

            ioc_ms = _median_ms(ioc, args.n)
            ansible_ms = _median_ms(ansible, args.n)
            saved = forkserver._SERVER[0]
            forkserver._SERVER[0] = False
            try:
                fresh_ms = _median_ms(ansible, max(5, args.n // 5))
            finally:
                forkserver._SERVER[0] = saved
            rows.append((name, ioc_ms, ansible_ms, fresh_ms))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("| module | ioc's own (ms) | Ansible's, warm fork server (ms) | Ansible's, fresh "
          "interpreter (ms) | fork server / ioc |")
    print("|---|---|---|---|---|")
    for name, ioc_ms, ansible_ms, fresh_ms in rows:
        print("| %s | %.2f | %.1f | %.0f | %.0fx |" % (name, ioc_ms, ansible_ms, fresh_ms,
                                                    ansible_ms / max(ioc_ms, 0.01)))
    print("\nPython %s, %s, load %s" % (sys.version.split()[0], os.uname().release,
                                       " ".join("%.2f" % x for x in os.getloadavg())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
