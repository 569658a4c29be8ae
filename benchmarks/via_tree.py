"""A tree of intermediaries: N hosts behind K ``mitogen_via`` hosts over a slow link.

Every host is an inventory name of the one test sshd (``tests/support/sshd.py``)
with its own ``-o HostKeyAlias=<name>``. The hosts form K groups
(``rack0``...); each group's first host is its intermediary (the inventory
says so with ``ioc_via_auto=true``, see docs/ioc-run.md) and is reached
through a delay proxy (``benchmarks/delayproxy.py``, ``--delay-ms`` one
way); the others are reached from their intermediary's runner straight to
the sshd, with no delay: only the controller -> intermediary links are slow,
and the proxy counts what crosses them. Measured:

* **baseline**: one ``ssh true`` through the proxy, and without it;
* **connect**: every host's runner started and answering (the connector
  ioc-run and mitogen_batch share, ``ioc.transport.connector``, asked for
  every host at once as a step's workers ask), wall time, round trips and
  bytes over the delayed links; once at the delay and once at 0 ms, so
  the link's share (the difference) stands apart from the CPU this one
  machine spends starting N runners;
* **copy**: ``ioc-run`` of a play that copies a ``--size`` file to every
  host, and of the same play without the copy: the bytes over the delayed
  links, and the difference (what the file cost).

    python -m benchmarks.via_tree --hosts 100 --intermediaries 4 --delay-ms 150
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.delayproxy import DelayProxy  # noqa: E402
from benchmarks.fleet import machine  # noqa: E402


def names(hosts: int, racks: int) -> List[List[str]]:
    """Host names per group; each group's first is its intermediary."""
    per = [hosts // racks + (1 if r < hosts % racks else 0) for r in range(racks)]
    return [["r%dn%03d" % (r, n) for n in range(per[r])] for r in range(racks)]


def inventory(sshd: Any, groups: List[List[str]], slow_port: int) -> str:
    """An INI inventory: one group per rack, the intermediaries on ``slow_port``."""
    lines: List[str] = []
    for number, group in enumerate(groups):
        lines.append("[rack%d]" % number)
        for position, name in enumerate(group):
            port = slow_port if position == 0 else sshd.port
            lines.append(" ".join([
                name, "ansible_host=%s" % sshd.host, "ansible_port=%d" % port,
                "ansible_user=%s" % sshd.user,
                "ansible_ssh_private_key_file=%s" % sshd.client_key,
                "ansible_ssh_common_args=%s" % shlex.quote(sshd.host_ssh_args(name)),
                "ansible_python_interpreter=%s" % sys.executable]))
    lines += ["[all:vars]", "ioc_via_auto=true"]
    return "\n".join(lines) + "\n"


def ssh_true(sshd: Any, port: int) -> float:
    argv = sshd.ssh_argv("true")
    argv[argv.index("-p") + 1] = str(port)
    started = time.monotonic()
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, capture_output=True)
    return time.monotonic() - started


def connect_all(sshd: Any, groups: List[List[str]], delay: float, work: Path) -> Dict[str, Any]:
    """Start every host's runner at once through a proxy of ``delay``; the numbers."""
    from ioc.agentless_runner import entry
    from ioc.inventory import via_group_head
    from ioc.loader.inventory import load_inventory
    from ioc.inventory import host_vars
    from ioc.transport.connector import Connector
    from ioc.transport.spec import resolve_via, spec_for

    hosts = [h for group in groups for h in group]
    with DelayProxy(sshd.host, sshd.port, delay) as proxy:
        (work / "connect.ini").write_text(inventory(sshd, groups, proxy.port))
        inv = load_inventory([str(work / "connect.ini")])

        def variables(name: str) -> Dict[str, Any]:
            found = host_vars(inv, name)
            head = via_group_head(inv, name)
            return dict(found, mitogen_via=head) if head else found

        specs = {h: resolve_via(h, spec_for(h, variables(h)),
                                lambda hop: spec_for(hop, variables(hop))) for h in hosts}
        connector = Connector(forks=len(hosts))
        connector.expect_intermediaries({g[0] for g in groups})
        answered: Dict[str, float] = {}
        errors: List[str] = []
        started = time.monotonic()

        def connect(name: str) -> None:
            try:
                connector.context(name, specs[name]).call(entry.runner_info)
                answered[name] = time.monotonic() - started
            except Exception as exc:  # (reported: the row says how many answered)
                errors.append("%s: %s" % (name, exc))

        threads = [threading.Thread(target=connect, args=(h,)) for h in hosts]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.monotonic() - started
        totals = proxy.totals()
        connector.shutdown()
    first = [answered[g[0]] for g in groups if g[0] in answered]
    return {"delay_ms": delay * 1000, "hosts": len(hosts), "answered": len(answered),
            "wall": wall, "first_layer": max(first) if first else None,
            "round_trips": totals["round_trips"], "bytes": totals["bytes"],
            "connections": totals["connections"], "errors": errors[:3]}


def copy_run(sshd: Any, groups: List[List[str]], delay: float, size: int, work: Path,
             with_copy: bool) -> Dict[str, Any]:
    """ioc-run of a play copying a ``size``-byte file to every host (or not): bytes
    over the delayed links."""
    hosts = [h for group in groups for h in group]
    (work / "payload.bin").write_bytes(os.urandom(size))
    copy = ("    - copy: {src: payload.bin, dest: \"%s/{{ inventory_hostname }}.bin\"}\n"
            % (work / "out")) if with_copy else ""
    (work / "play.yml").write_text("- hosts: all\n  gather_facts: false\n  tasks:\n"
                                   "    - command: \"true\"\n" + copy)
    shutil.rmtree(work / "out", ignore_errors=True)
    (work / "out").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env["PYTHONPATH"] = str(ROOT)
    with DelayProxy(sshd.host, sshd.port, delay) as proxy:
        (work / "hosts").write_text(inventory(sshd, groups, proxy.port))
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "ioc", "play.yml", "-i", "hosts",
                               "-f", str(len(hosts))], cwd=str(work), env=env,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL)
        wall = time.monotonic() - started
        proxy.wait_idle(30)
        totals = proxy.totals()
    copied = sum(1 for h in hosts if (work / "out" / ("%s.bin" % h)).is_file()
                 and (work / "out" / ("%s.bin" % h)).stat().st_size == size)
    return {"copy": with_copy, "rc": proc.returncode, "wall": wall, "copied": copied,
            "bytes": totals["bytes"], "bytes_c2s": totals["bytes_c2s"],
            "connections": totals["connections"],
            "tail": proc.stdout.splitlines()[-3:] if proc.returncode else []}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--intermediaries", type=int, default=2)
    parser.add_argument("--delay-ms", type=float, default=150)
    parser.add_argument("--size", type=int, default=1 << 20, help="bytes of the copied file")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)

    from tests.support.sshd import start_sshd

    delay = args.delay_ms / 1000.0
    groups = names(args.hosts, args.intermediaries)
    info = machine()
    work = Path(tempfile.mkdtemp(prefix="ioc-via-"))
    sshd = start_sshd()
    out: Dict[str, Any] = {"machine": info}
    try:
        with DelayProxy(sshd.host, sshd.port, delay) as proxy:
            out["ssh_true"] = ssh_true(sshd, proxy.port)
        out["ssh_true_0"] = ssh_true(sshd, sshd.port)
        out["connect"] = connect_all(sshd, groups, delay, work)
        out["connect_0"] = connect_all(sshd, groups, 0.0, work)
        out["run"] = copy_run(sshd, groups, delay, args.size, work, False)
        out["run_copy"] = copy_run(sshd, groups, delay, args.size, work, True)
        out["load_at_end"] = "%.2f %.2f %.2f" % os.getloadavg()
    finally:
        sshd.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=1), file=sys.stderr)
    print(report(args, out))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    c, r = out["connect"], out["run_copy"]
    return 0 if c["answered"] == args.hosts and r["rc"] == 0 and r["copied"] == args.hosts else 1


def report(args: argparse.Namespace, out: Dict[str, Any]) -> str:
    c, c0 = out["connect"], out["connect_0"]
    run, copy = out["run"], out["run_copy"]
    link = c["wall"] - c0["wall"]
    link_ssh = out["ssh_true"] - out["ssh_true_0"]
    lines = [
        "; ".join("%s: %s" % kv for kv in out["machine"].items())
        + "; load at end: %s" % out["load_at_end"], "",
        "%d hosts behind %d intermediaries, %g ms one way on the controller -> "
        "intermediary links only" % (args.hosts, args.intermediaries, args.delay_ms), "",
        "| measure | value |", "|---|---|",
        "| `ssh true` through the delay / without | %.2f s / %.2f s |"
        % (out["ssh_true"], out["ssh_true_0"]),
        "| connect every host: wall at the delay / at 0 ms | %.2f s / %.2f s (%d/%d answered) |"
        % (c["wall"], c0["wall"], c["answered"], c["hosts"]),
        "| ... the link's share (the difference) | %.2f s = %.1f x `ssh true`'s (%.2f s) |"
        % (link, link / link_ssh if link_ssh > 0 else float("nan"), link_ssh),
        "| ... first layer (the intermediaries) answered after | %.2f s |" % (c["first_layer"] or 0),
        "| ... wall at the delay / `ssh true` | %.1f x |" % (c["wall"] / out["ssh_true"]),
        "| ... over the delayed links: round trips, KiB | %d, %.0f |"
        % (c["round_trips"], c["bytes"] / 1024.0),
        "| ioc-run, one `command` task: wall, KiB over the delayed links | %.1f s, %.0f |"
        % (run["wall"], run["bytes"] / 1024.0),
        "| ... with a %d KiB `copy` too: wall, KiB, hosts with the file | %.1f s, %.0f, %d/%d |"
        % (args.size // 1024, copy["wall"], copy["bytes"] / 1024.0, copy["copied"], args.hosts),
        "| the copy's bytes over the delayed links (the difference) | %.2f MiB (%.2f x the file; "
        "%d x without intermediaries) |" % ((copy["bytes"] - run["bytes"]) / 1048576.0,
                                            (copy["bytes"] - run["bytes"]) / float(args.size),
                                            args.hosts),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
