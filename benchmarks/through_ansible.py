"""Tasks through Ansible at a distance: Ansible's own ssh connection versus the host's runner.

    python -m benchmarks.through_ansible --before /work/wt/merge --after . --delay-ms 150

One host (the test sshd of tests/support/sshd.py) behind a :class:`DelayProxy`
adding ``--delay-ms`` in each direction. The play: one native task, then
``--tasks`` tasks that run through Ansible's task machinery under
``mitogen_batch`` (``greet``: a module with an action plugin of its own,
as in tests/ansible), then a native task. It runs under ``linear`` (for
reference) and under ``mitogen_batch`` from two ioc trees: ``--before``
(tasks through Ansible connect with Ansible's ssh plugin) and ``--after``
(they use the host's ioc runner through the ``ioc_runner`` connection).
Reported, median of ``--runs``: wall seconds, round trips and connections
counted by the proxy, and the ``ioc_runner`` requests the dispatcher
logged; per task through Ansible, the difference to the same play without
them, divided by their number. Each run starts with no ssh ControlMaster
left from the one before.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from benchmarks.delayproxy import DelayProxy
from tests.ansible.test_mitogen_batch import GREET_ACTION, GREET_MODULE
from tests.realworld.harness import ansible_python

ROOT = Path(__file__).resolve().parents[1]


def play(tasks: int) -> str:
    greets = "".join("    - name: greet %d\n      greet:\n        who: x%d\n" % (n, n)
                     for n in range(tasks))
    return ("- hosts: web\n  gather_facts: false\n  tasks:\n"
            "    - command: echo before\n" + greets + "    - command: echo after\n")


def run_once(workdir: Path, inventory: Path, book: str, strategy: str, tree: Optional[Path],
             proxy: DelayProxy) -> Dict[str, float]:
    masters = Path(tempfile.mkdtemp(dir=str(workdir)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(workdir / "ansible.cfg"), ANSIBLE_STRATEGY=strategy,
               ANSIBLE_HOST_KEY_CHECKING="False", ANSIBLE_FORKS="1",
               ANSIBLE_SSH_CONTROL_PATH_DIR=str(masters))
    log = workdir / ("bridge-%d.log" % time.monotonic_ns())
    if tree is not None:
        env.update(ANSIBLE_STRATEGY_PLUGINS=str(tree / "strategy_plugin"),
                   PYTHONPATH=str(tree), IOC_BRIDGE_LOG=str(log))
    python = ansible_python()
    proxy.reset()
    started = time.monotonic()
    proc = subprocess.run([python, str(Path(python).parent / "ansible-playbook"),
                           "-i", str(inventory), book], cwd=str(workdir), env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit("%s failed:\n%s%s" % (strategy, proc.stdout, proc.stderr))
    totals = proxy.totals()
    for socket in masters.iterdir():  # ControlPersist would keep linear's open a minute
        subprocess.run(["ssh", "-O", "exit", "-o", "ControlPath=%s" % socket, "x"],
                       capture_output=True)
    text = log.read_text() if log.exists() else ""
    return {"wall": wall, "round_trips": float(totals["round_trips"]),
            "connections": float(totals["connections"]),
            "requests": float(len(re.findall(r"ioc_runner \S+: (?:exec|put|fetch)", text)))}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.through_ansible",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True,
                        help="ioc tree whose tasks through Ansible use Ansible's ssh")
    parser.add_argument("--after", type=Path, default=ROOT, help="ioc tree to compare")
    parser.add_argument("--delay-ms", type=float, default=150.0)
    parser.add_argument("--tasks", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)

    from tests.support.sshd import start_sshd

    sshd = start_sshd()
    try:
        with tempfile.TemporaryDirectory(prefix="iocta-") as tmp, \
                DelayProxy(sshd.host, sshd.port, args.delay_ms / 1000.0) as proxy:
            workdir = Path(tmp)
            (workdir / "ansible.cfg").write_text("[defaults]\n")
            (workdir / "library").mkdir()
            (workdir / "library" / "greet.py").write_text(GREET_MODULE)
            (workdir / "action_plugins").mkdir()
            (workdir / "action_plugins" / "greet.py").write_text(GREET_ACTION)
            (workdir / "play.yml").write_text(play(args.tasks))
            (workdir / "none.yml").write_text(play(0))
            inventory = workdir / "hosts.ini"
            inventory.write_text(sshd.inventory_ini(["h1"], python=ansible_python(), group="web")
                                 .replace("ansible_port=%d" % sshd.port,
                                          "ansible_port=%d" % proxy.port))
            engines = [("linear", "linear", None),
                       ("mitogen_batch, before", "mitogen_batch", args.before.resolve()),
                       ("mitogen_batch, after", "mitogen_batch", args.after.resolve())]
            print("%d tasks through Ansible between 2 native ones on 1 host, %g ms one way, "
                  "median of %d; per task: the difference to the play without them, / %d"
                  % (args.tasks, args.delay_ms, args.runs, args.tasks))
            print("%-22s %7s %12s %12s %9s %12s %9s" % (
                "engine", "wall s", "round trips", "connections", "requests",
                "wall s/task", "RTs/task"))
            for label, strategy, tree in engines:
                med = {}
                for book in ("play.yml", "none.yml"):
                    runs: List[Dict[str, float]] = []
                    for _ in range(args.runs):
                        runs.append(run_once(workdir, inventory, book, strategy, tree, proxy))
                        if not proxy.wait_idle(30):
                            raise SystemExit("a connection stayed open after the run")
                    med[book] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                full, none = med["play.yml"], med["none.yml"]
                print("%-22s %7.2f %12d %12d %9d %12.2f %9.1f" % (
                    label, full["wall"], full["round_trips"], full["connections"],
                    full["requests"], (full["wall"] - none["wall"]) / args.tasks,
                    (full["round_trips"] - none["round_trips"]) / args.tasks))
    finally:
        sshd.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
