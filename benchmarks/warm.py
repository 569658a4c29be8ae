"""Warm repeats of the 100-task play through ``ioc-run --persist``'s daemon.

    python -m benchmarks.warm [--delay-ms 150] [--hosts 1 10] [--runs 5]

Starts the test suite's sshd (tests/support/sshd.py) behind the delay proxy
(benchmarks/delayproxy.py), as ``benchmarks.run`` does (every host the same
sshd, ``-o HostKeyAlias=<name>`` making each its own connection, forks 10),
with a daemon directory of its own (``XDG_RUNTIME_DIR`` in a temp dir). Per
host count: one cold run without ``--persist`` (for comparison), one run
with ``--persist`` (cold: it starts the daemon and connects), then ``--runs``
warm repeats. For each it prints the wall time of the ``ioc-run`` process
and the round trips the proxy counted during it (sum over connections, max
per connection in brackets, connections opened). The daemon is stopped at
the end (``--persist-stop``).
"""
from __future__ import annotations

import argparse
import os
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--delay-ms", type=int, default=150)
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    server = start_sshd()
    work = Path(tempfile.mkdtemp(prefix="ioc-warm-"))
    (work / "rt").mkdir(mode=0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(work / "rt"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    (work / "play.yml").write_text(tasks_play())
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

                def once(extra: List[str]) -> Dict[str, float]:
                    proxy.reset()
                    known = {c["id"] for c in proxy.connections()}
                    t0 = time.monotonic()
                    proc = subprocess.run(base + extra, cwd=str(work), env=env,
                                          capture_output=True, text=True,
                                          stdin=subprocess.DEVNULL, timeout=600)
                    wall = time.monotonic() - t0
                    if proc.returncode != 0:
                        raise RuntimeError(proc.stdout[-2000:] + proc.stderr[-2000:])
                    if not extra:
                        proxy.wait_idle(30)
                    conns = proxy.connections()
                    return {"wall": wall, "rt": sum(c["round_trips"] for c in conns),
                            "rt_max": max((c["round_trips"] for c in conns), default=0),
                            "opened": sum(1 for c in conns if c["id"] not in known)}

                def show(label: str, r: Dict[str, float]) -> None:
                    print("%d ms  hosts=%-3d %-22s wall=%.2fs round trips=%d (%d) "
                          "connections opened=%d" % (args.delay_ms, count, label, r["wall"],
                                                      r["rt"], r["rt_max"], r["opened"]),
                          flush=True)

                show("cold (no --persist)", once([]))
                show("--persist, first", once(["--persist"]))
                warm = [once(["--persist"]) for _ in range(args.runs)]
                for r in warm:
                    show("--persist, warm", r)
                print("%d ms  hosts=%-3d warm median: wall=%.2fs round trips=%d (%d), %d runs"
                      % (args.delay_ms, count, median([r["wall"] for r in warm]),
                         median([r["rt"] for r in warm]), median([r["rt_max"] for r in warm]),
                         len(warm)), flush=True)
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
