"""Runner calls and wall time of a 100-task play over real SSH, batched and per task.

    python -m benchmarks.hundred_tasks [--hosts 1 3]

Starts the test suite's throwaway sshd (tests/support/sshd.py), writes a play
of 100 `command` tasks, and runs `ioc-run` on it in both modes for each host
count, printing the runner calls each host's runner counted and the wall time.
No added latency: for latency see `python -m benchmarks.run`.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.sshd import start_sshd  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 3])
    args = parser.parse_args()
    server = start_sshd()
    try:
        work = Path(tempfile.mkdtemp(prefix="ioc-hundred-"))
        names = ["h%d" % n for n in range(1, max(args.hosts) + 1)]
        (work / "hosts.ini").write_text(server.inventory_ini(names, group="web"))
        tasks = "\n".join("    - name: task %d\n      command: echo %d\n      changed_when: false"
                          % (n, n) for n in range(100))
        (work / "play.yml").write_text("- hosts: web\n  gather_facts: false\n  tasks:\n" + tasks + "\n")
        for count in args.hosts:
            for mode in ([], ["--per-task"]):
                events = work / "events.jsonl"
                argv = [sys.executable, "-m", "ioc", str(work / "play.yml"), "-i",
                        str(work / "hosts.ini"), "-l", ",".join(names[:count]),
                        "--events", str(events)] + mode
                started = time.monotonic()
                proc = subprocess.run(argv, capture_output=True, text=True, cwd=str(ROOT))
                elapsed = time.monotonic() - started
                transport = [json.loads(line) for line in events.read_text().splitlines()
                             if '"transport"' in line][-1]
                print("hosts=%d mode=%-10s rc=%d wall=%.2fs runner calls=%s"
                      % (count, mode[0] if mode else "batch", proc.returncode, elapsed,
                         transport["calls"]))
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
