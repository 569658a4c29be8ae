"""Ad-hoc commands and a shell through the delay proxy: round trips and wall time.

Per host count (1 and 3 inventory names of the one test sshd, each its own
connection), the best of two runs of: ``ssh host true`` on ioc's own ssh
command line (1 host), ``ioc-ssh host -- true`` (1 host), ``ioc-adhoc all
-a true`` and ansible-core's ``ansible all -a true`` (its ssh connection
with a fresh ControlPath directory each run, so it reuses no master):

    python -m benchmarks.adhoc --delay-ms 150

Reported: wall seconds, round trips and TCP connections counted by the
proxy (``benchmarks/delayproxy.py``), and ioc-adhoc's runner calls per host
(its ``--events`` transport record).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Tuple

from benchmarks.common import hostvars_of, inventory, ioc_ssh_argv
from benchmarks.delayproxy import DelayProxy
from benchmarks.run import find_ansible
from tests.support.sshd import start_sshd



def measure(proxy: DelayProxy, argv: List[str], env: Dict[str, str], cwd: str,
            fresh_control_dir: bool) -> Tuple[float, int, int]:
    best = None
    for _ in range(2):
        extra = {"ANSIBLE_SSH_CONTROL_PATH_DIR": tempfile.mkdtemp()} if fresh_control_dir else {}
        proxy.reset()
        start = time.monotonic()
        proc = subprocess.run(argv, capture_output=True, text=True, env={**env, **extra},
                              stdin=subprocess.DEVNULL, cwd=cwd)
        elapsed = time.monotonic() - start
        proxy.wait_idle(30)
        totals = proxy.totals()
        if proc.returncode != 0:
            raise SystemExit("%s failed:\n%s%s" % (argv, proc.stdout, proc.stderr))
        run = (elapsed, totals["round_trips"], totals["connections"])
        best = run if best is None or run < best else best
    assert best is not None
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay-ms", type=float, default=150.0, help="one-way delay")
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ansible = find_ansible(install=False)
    if ansible.playbook is None:
        raise SystemExit(ansible.error)
    adhoc_ansible = os.path.join(os.path.dirname(ansible.playbook), "ansible")
    env = {**os.environ, "PYTHONPATH": root, "ANSIBLE_HOST_KEY_CHECKING": "False"}
    server = start_sshd()
    try:
        with DelayProxy(server.host, server.port, args.delay_ms / 1000.0) as proxy:
            for count in (1, 3):
                workdir = tempfile.mkdtemp()
                hosts = os.path.join(workdir, "hosts.ini")
                with open(hosts, "w") as stream:
                    stream.write(inventory(["h%d" % i for i in range(count)], host=server.host,
                                           port=proxy.port, user=server.user,
                                           key=server.client_key,
                                           ssh_args=server.host_ssh_args, python=sys.executable))
                with open(hosts) as stream:
                    first = stream.readline()
                events = os.path.join(workdir, "events.jsonl")
                cases = [
                    ("ssh true", ioc_ssh_argv(hostvars_of(first), "true"), False),
                    ("ioc-ssh -- true",
                     [sys.executable, "-m", "ioc.ssh", "-i", hosts, "h0", "--", "true"], False),
                    ("ioc-adhoc -a true", [sys.executable, "-m", "ioc.adhoc", "all", "-i", hosts,
                                           "-a", "true", "--events", events], False),
                    ("ansible -a true", [adhoc_ansible, "all", "-i", hosts, "-a", "true"], True),
                ]
                for label, argv, fresh in cases:
                    if count > 1 and "ssh" in label:
                        continue
                    wall, trips, connections = measure(proxy, argv, env, workdir, fresh)
                    calls = ""
                    if "adhoc" in label:
                        with open(events) as stream:
                            transport = [json.loads(line) for line in stream
                                         if '"transport"' in line][-1]
                        calls = "  runner calls %s" % transport["calls"]
                    print("%d host(s)  %-18s wall %5.2f s  round trips %3d  connections %d%s"
                          % (count, label, wall, trips, connections, calls), flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
