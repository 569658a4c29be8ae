"""Controller CPU to prepare one step's runner calls for a fleet, no hosts contacted.

    python -m benchmarks.wire_build [--hosts 200] [--tasks 100]

Writes an inventory of ``--hosts`` local hosts and a play of ``--tasks``
`command` tasks that notify a handler (21 handlers), plans it with ioc's
planner and times building every host's call payload (``PlayExecutor._wire``)
for each step of the plan: the controller's per-step work that grows with
the fleet. Prints the best of three runs, in CPU seconds.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import List, Optional, Sequence

from ioc import loader
from ioc.callbacks import Callback
from ioc.controller.state import RunOptions
from ioc.controller.playbook import PlaybookRun


def write_play(where: Path, hosts: int, tasks: int) -> None:
    (where / "hosts.ini").write_text(
        "[web]\n" + "".join("h%d ansible_connection=local\n" % i for i in range(hosts)))
    body = "".join("    - name: t%d\n      command: echo {{ inventory_hostname }}\n"
                   "      notify: h\n" % i for i in range(tasks))
    handlers = "".join("    - name: %s\n      debug: msg=x\n" % name
                       for name in ["h"] + ["o%d" % i for i in range(20)])
    (where / "play.yml").write_text("- hosts: web\n  gather_facts: false\n  tasks:\n" + body
                                    + "  handlers:\n" + handlers)


def measure(where: Path, runs: int = 3) -> "tuple[int, int, float]":
    book = loader.load_playbook(str(where / "play.yml"))
    inventory = loader.load_inventory([str(where / "hosts.ini")])
    run = PlaybookRun(book, inventory, {}, Callback(), RunOptions())
    hosts: List[str] = list(inventory.hosts)
    executor = run._executor(run.plans[0], hosts, connector=None)  # type: ignore[arg-type]
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        for step in executor.plan.steps:
            # a fresh executor state per step, as PlayExecutor.run gives it
            executor._hostvars = {}
            executor._shape = (None, None, {})
            for host in hosts:
                executor._wire(host, step, hosts)
        best = min(best, time.process_time() - start)
    return len(executor.plan.steps), len(hosts), best


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.wire_build", description=__doc__)
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--tasks", type=int, default=100)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ioc-wire-") as tmp:
        write_play(Path(tmp), args.hosts, args.tasks)
        steps, hosts, cpu = measure(Path(tmp))
    print("%d step(s) x %d hosts: %.3f s controller CPU to build every call (best of 3)"
          % (steps, hosts, cpu))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
