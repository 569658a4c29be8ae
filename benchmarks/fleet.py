"""Many hosts at once: ioc-run on 10 to 200 inventory hosts with ``-f`` = hosts.

Every host is an inventory name of the one test sshd (``tests/support/sshd.py``),
each with its own ``-o HostKeyAlias=<name>`` so each is a connection (and a
runner) of its own. The play is ``--tasks`` ``command: echo N`` tasks
(``benchmarks/common.py:tasks_play``). Per host count, one run:

    python -m benchmarks.fleet --hosts 10,50,100,200 --tasks 100

Reported: hosts reached (the recap line has ``unreachable=0 failed=0``), the
exit status, wall time, the controller's CPU split into ioc-run's own process
and its ``ssh`` clients, ioc-run's peak RSS, and ioc-run's own CPU per
host-task. The split is exact: ioc-run runs inside a thin wrapper (``--child``)
that, once ioc-run has returned, reaps every child it left and reads
``getrusage`` for itself (``RUSAGE_SELF``: ioc-run's process) and for its
children (``RUSAGE_CHILDREN``: the ssh clients mitogen started). The targets'
CPU (sshd, the runners) is the same machine's but counts in neither.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import tasks_play  # noqa: E402


def child(out: str, argv: List[str]) -> int:
    """Run ioc-run's ``main(argv)`` here, then write this process's accounting to ``out``."""
    from ioc.cli import main as ioc_main

    try:
        rc = ioc_main(argv)
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 1
    while True:  # the ssh clients still running or unreaped count as children once reaped
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out, "w") as handle:
        json.dump({"rc": rc, "own_cpu": own.ru_utime + own.ru_stime,
                   "ssh_cpu": kids.ru_utime + kids.ru_stime,
                   "peak_rss_kib": own.ru_maxrss}, handle)
    sys.stdout.flush()
    return int(rc or 0)


def reached(output: str, hosts: List[str]) -> int:
    """Hosts whose recap line says ``unreachable=0`` and ``failed=0``."""
    count = 0
    wanted = set(hosts)
    for line in output.splitlines():
        name = line.split(":", 1)[0].strip()
        if name in wanted and "ok=" in line and " unreachable=0 " in line + " " \
                and " failed=0 " in line + " ":
            count += 1
    return count


def run_one(sshd, work: Path, hosts: int, tasks: int, forks: Optional[int]) -> Dict[str, object]:
    names = ["f%03d" % n for n in range(hosts)]
    (work / "hosts").write_text(sshd.inventory_ini(names))
    (work / "play.yml").write_text(tasks_play(tasks))
    account = work / "account.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env["PYTHONPATH"] = str(ROOT)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    forks = forks or hosts
    argv = [sys.executable, "-m", "benchmarks.fleet", "--child", str(account), "--",
            "play.yml", "-i", "hosts", "-f", str(forks)]
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=str(work), env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    wall = time.monotonic() - started
    data = json.loads(account.read_text()) if account.exists() else {}
    row: Dict[str, object] = {"hosts": hosts, "forks": forks, "tasks": tasks, "rc": proc.returncode,
                              "reached": reached(proc.stdout, names), "wall": wall}
    row.update(data)
    if data:
        row["ms_per_host_task"] = 1000.0 * data["own_cpu"] / (hosts * tasks)
    if row["reached"] != hosts:
        tail = [line for line in proc.stdout.splitlines() if "UNREACHABLE" in line
                or "fatal" in line][:3]
        row["first_errors"] = tail or proc.stderr.splitlines()[-5:]
    return row


def machine() -> Dict[str, str]:
    import mitogen

    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    ssh = subprocess.run(["ssh", "-V"], capture_output=True, text=True).stderr.strip()
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=str(ROOT),
                         capture_output=True, text=True).stdout.strip()
    return {"cores": str(len(os.sched_getaffinity(0))), "cpu": cpu,
            "kernel": platform.release(), "python": platform.python_version(),
            "mitogen": ".".join(map(str, mitogen.__version__)), "openssh": ssh,
            "ioc": rev or "unknown", "load at start": "%.2f %.2f %.2f" % os.getloadavg()}


def table(rows: List[Dict[str, object]]) -> str:
    lines = ["| hosts | `-f` | reached | rc | wall (s) | ioc-run CPU (s) | ssh clients CPU (s) "
             "| peak RSS (MB) | ioc-run CPU per host-task (ms) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %d | %d | %d | %d | %.1f | %.1f | %.1f | %.0f | %.2f |" % (
            r["hosts"], r["forks"], r["reached"], r["rc"], r["wall"], r.get("own_cpu", 0),
            r.get("ssh_cpu", 0), r.get("peak_rss_kib", 0) / 1024.0, r.get("ms_per_host_task", 0)))
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        return child(argv[1], argv[3:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", default="10,50,100,200",
                        help="comma-separated host counts, one run each")
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--forks", type=int, default=0, help="-f (default: the host count)")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)

    from tests.support.sshd import start_sshd

    info = machine()
    work = Path(tempfile.mkdtemp(prefix="ioc-fleet-"))
    sshd = start_sshd()
    rows = []
    try:
        for hosts in [int(n) for n in args.hosts.split(",") if n]:
            row = run_one(sshd, work, hosts, args.tasks, args.forks or None)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        sshd.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("; ".join("%s: %s" % kv for kv in info.items()))
    print()
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": info, "rows": rows}, indent=1))
    return 0 if all(r["reached"] == r["hosts"] and r["rc"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
