"""Warm repeats of the 100-task play through ``ioc-run --persist``'s daemon.

    python -m benchmarks.warm [--delay-ms 150] [--hosts 1 10] [--runs 5]
                              [--strategy mitogen_batch]

``--strategy mitogen_batch`` runs the play with ansible-core 2.21's
``ansible-playbook`` (Python 3.13, tests/realworld/harness.py's
``ansible_python``) and the ``mitogen_batch`` strategy instead of
``ioc-run``: ``IOC_PERSIST=60`` in its environment stands for ``--persist``
(the "client" CPU is then ``ansible-playbook``'s, its workers' and, in the
cold run, the dispatcher subprocess's).

Starts the test suite's sshd (tests/support/sshd.py) behind the delay proxy
(benchmarks/delayproxy.py), as ``benchmarks.run`` does (every host the same
sshd, ``-o HostKeyAlias=<name>`` making each its own connection, forks 10),
with a daemon directory of its own (``XDG_RUNTIME_DIR`` in a temp dir). Per
host count: one cold run without ``--persist`` (for comparison), one run
with ``--persist`` (cold: it starts the daemon and connects), then ``--runs``
warm repeats. For each it prints the wall time of the ``ioc-run`` process
and the round trips the proxy counted during it (sum over connections, max
per connection in brackets, connections opened), and the CPU time of the
client process, of the daemon and of the targets (every process under the
sshd, the tasks' commands included: on this one machine the targets' work
competes with the controller's for the same CPUs) during the run. The daemon is stopped at
the end (``--persist-stop``).
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import inventory, median, tasks_play  # noqa: E402
from benchmarks.delayproxy import DelayProxy  # noqa: E402
from tests.support.sshd import start_sshd  # noqa: E402

FORKS = 10


def children_cpu() -> float:
    """User and system CPU of the finished children (the ioc-run client)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def daemon_cpu(work: Path) -> float:
    """User and system CPU the daemon serving ``work``'s runs has used so far
    (0 when none runs). Its own process only: the ssh clients it started
    are idle in a warm run."""
    directory = str(work / "rt" / "ioc")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
            if b"ioc.warmd" in argv and directory.encode() in argv:
                with open("/proc/%s/stat" % pid) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            continue
    return 0.0


def targets_cpu(sshd_pid: int) -> float:
    """User and system CPU of every process under the sshd (the runners), their
    waited-for children (the tasks' commands) included."""
    children: Dict[int, List[int]] = {}
    stats: Dict[int, List[str]] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(pid)] = fields
        children.setdefault(int(fields[1]), []).append(int(pid))
    total, todo = 0, list(children.get(sshd_pid, ()))
    while todo:
        pid = todo.pop()
        todo += children.get(pid, ())
        total += sum(int(v) for v in stats[pid][11:15])
    return total / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--delay-ms", type=int, default=150)
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--strategy", choices=["ioc-run", "mitogen_batch"], default="ioc-run",
                        help="run the play with ioc-run, or with ansible-playbook's "
                             "mitogen_batch strategy (IOC_PERSIST for --persist)")
    args = parser.parse_args()
    server = start_sshd()
    work = Path(tempfile.mkdtemp(prefix="ioc-warm-"))
    (work / "rt").mkdir(mode=0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(work / "rt"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    (work / "play.yml").write_text(tasks_play())
    if args.strategy == "mitogen_batch":
        from tests.realworld.harness import ansible_python

        python = ansible_python()
        (work / "ansible.cfg").write_text("[defaults]\n")
        env = {k: v for k, v in env.items() if not k.startswith("ANSIBLE_")}
        env.update(ANSIBLE_CONFIG=str(work / "ansible.cfg"), ANSIBLE_STRATEGY="mitogen_batch",
                   ANSIBLE_STRATEGY_PLUGINS=str(ROOT / "strategy_plugin"))
    try:
        with DelayProxy(server.host, server.port, args.delay_ms / 1000.0) as proxy:
            for count in args.hosts:
                names = ["b%02d" % (i + 1) for i in range(count)]
                (work / "hosts.ini").write_text(inventory(
                    names, host=server.host, port=proxy.port, user=server.user,
                    key=server.client_key, ssh_args=server.host_ssh_args,
                    python=sys.executable))
                base = [sys.executable, "-m", "ioc", "play.yml", "-i", "hosts.ini",
                        "-f", str(FORKS)]
                if args.strategy == "mitogen_batch":
                    base = [python, str(Path(python).parent / "ansible-playbook"),
                            "play.yml", "-i", "hosts.ini", "-f", str(FORKS)]

                def once(extra: List[str]) -> Dict[str, float]:
                    run_env, cold = env, not extra
                    if args.strategy == "mitogen_batch" and extra:
                        run_env = dict(env, IOC_PERSIST="60")  # (ansible-playbook's --persist)
                        extra = []
                    proxy.reset()
                    known = {c["id"] for c in proxy.connections()}
                    daemon0 = daemon_cpu(work)
                    target0 = targets_cpu(server.process.pid)
                    client0 = children_cpu()
                    t0 = time.monotonic()
                    proc = subprocess.run(base + extra, cwd=str(work), env=run_env,
                                          capture_output=True, text=True,
                                          stdin=subprocess.DEVNULL, timeout=600)
                    wall = time.monotonic() - t0
                    client = children_cpu() - client0
                    daemon = max(0.0, daemon_cpu(work) - daemon0)  # (0: none, or it ended)
                    target = targets_cpu(server.process.pid) - target0
                    if proc.returncode != 0:
                        raise RuntimeError(proc.stdout[-2000:] + proc.stderr[-2000:])
                    if cold:
                        proxy.wait_idle(30)
                    conns = proxy.connections()
                    return {"wall": wall, "rt": sum(c["round_trips"] for c in conns),
                            "rt_max": max((c["round_trips"] for c in conns), default=0),
                            "opened": sum(1 for c in conns if c["id"] not in known),
                            "client_cpu": client, "daemon_cpu": daemon,
                            "target_cpu": target,
                            "up_kib": sum(c["bytes_c2s"] for c in conns) / 1024.0}

                def show(label: str, r: Dict[str, float]) -> None:
                    print("%d ms  hosts=%-3d %-22s wall=%.2fs round trips=%d (%d) "
                          "KiB up=%.0f connections opened=%d  CPU: client %.2fs, daemon %.2fs, "
                          "targets %.2fs"
                          % (args.delay_ms, count, label, r["wall"], r["rt"], r["rt_max"],
                             r["up_kib"], r["opened"], r["client_cpu"], r["daemon_cpu"], r["target_cpu"]),
                          flush=True)

                show("cold (no --persist)", once([]))
                show("--persist, first", once(["--persist"]))
                warm = [once(["--persist"]) for _ in range(args.runs)]
                for r in warm:
                    show("--persist, warm", r)
                print("%d ms  hosts=%-3d warm median: wall=%.2fs round trips=%d (%d), CPU: "
                      "client %.2fs, daemon %.2fs, targets %.2fs; %d runs; load %s"
                      % (args.delay_ms, count, median([r["wall"] for r in warm]),
                         median([r["rt"] for r in warm]), median([r["rt_max"] for r in warm]),
                         median([r["client_cpu"] for r in warm]),
                         median([r["daemon_cpu"] for r in warm]),
                         median([r["target_cpu"] for r in warm]), len(warm),
                         " ".join("%.1f" % v for v in os.getloadavg())), flush=True)
                subprocess.run([sys.executable, "-m", "ioc", "--persist-stop"], cwd=str(work),
                               env=env, capture_output=True, timeout=120)
                proxy.wait_idle(30)
    finally:
        subprocess.run([sys.executable, "-m", "ioc", "--persist-stop"], cwd=str(work), env=env,
                       capture_output=True, timeout=120)
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
