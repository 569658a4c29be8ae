"""Controller memory and bytes sent for one large ``copy`` to many hosts, run twice.

Every host is an inventory name of one test sshd (``tests/support/sshd.py``),
each with its own ``HostKeyAlias`` so each is a connection of its own. The
same playbook (``copy: src=big.bin dest=<dir>/<host>.bin``) runs twice per
front end: the first run sends the file, the second finds it in place.
Reported per run: wall time, the peak resident memory of the controller's
process tree (the front end and its children: ssh clients, mitogen_batch's
dispatcher; sampled every 50 ms from /proc), and for ioc-run the bytes its
transport report counts.

    python -m benchmarks.copy_memory --hosts 10 --mib 50

(``mitogen_batch`` needs ansible-core 2.21 in pyenv's Python 3.13, as the
tests do.)
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.interpreters import find_python313  # noqa: E402
from tests.support.sshd import start_sshd  # noqa: E402

PLAY = """- hosts: all
  gather_facts: false
  tasks:
    - copy: src=big.bin dest={dest}/{{{{ inventory_hostname }}}}.bin
"""


def _tree_rss_kib(root: int) -> int:
    """Resident memory of ``root`` and every process below it (KiB)."""
    parents: Dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as handle:
                    stat = handle.read()
                parents[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
            except (OSError, ValueError):
                continue
    tree, changed = {root}, True
    while changed:
        added = {pid for pid, ppid in parents.items() if ppid in tree} - tree
        changed = bool(added)
        tree |= added
    total = 0
    for pid in tree:
        try:
            with open("/proc/%d/status" % pid) as handle:
                total += next((int(line.split()[1]) for line in handle
                               if line.startswith("VmRSS:")), 0)
        except OSError:
            continue
    return total


def measure(argv: List[str], cwd: Path, env: Dict[str, str]) -> Tuple[float, int, str]:
    """Run ``argv``: (seconds, peak KiB of its process tree, output)."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=str(cwd), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
    peak = [0]

    def sample() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss_kib(proc.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out = proc.communicate()[0]
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit("%s failed (%d):\n%s" % (argv[0], proc.returncode, out[-3000:]))
    return time.monotonic() - started, peak[0], out


def main(args_list: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--mib", type=int, default=50)
    args = parser.parse_args(args_list)
    work = Path(tempfile.mkdtemp(prefix="ioc-copy-memory-"))
    sshd = start_sshd()
    try:
        (work / "big.bin").write_bytes(os.urandom(args.mib * 2 ** 20))
        python313 = find_python313()
        rows = []
        for front in ("ioc-run", "mitogen_batch"):
            if front == "mitogen_batch" and python313 is None:
                continue
            dest = work / ("dest-" + front)
            dest.mkdir()
            (work / "play.yml").write_text(PLAY.format(dest=dest))
            hosts = ["h%d" % n for n in range(args.hosts)]
            python = sys.executable if front == "ioc-run" else python313
            (work / "hosts").write_text(sshd.inventory_ini(hosts, python=python))
            env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
            env["PYTHONPATH"] = str(ROOT)
            if front == "ioc-run":
                argv = [sys.executable, "-m", "ioc", "play.yml", "-i", "hosts",
                        "--events", "events.jsonl"]
            else:
                argv = [python313, os.path.join(os.path.dirname(python313), "ansible-playbook"),
                        "play.yml", "-i", "hosts"]
                env.update(ANSIBLE_STRATEGY_PLUGINS=str(ROOT / "strategy_plugin"),
                           ANSIBLE_STRATEGY="mitogen_batch", ANSIBLE_HOST_KEY_CHECKING="False")
            for run in ("first", "second"):
                seconds, peak, out = measure(argv, work, env)
                sent = ""
                if front == "ioc-run":
                    for line in (work / "events.jsonl").read_text().splitlines():
                        event = json.loads(line)
                        if event["event"] == "transport":
                            sent = "%.1f MiB" % (sum(event["sent"].values()) / 2 ** 20)
                rows.append((front, run, seconds, peak / 1024, sent,
                             out.count("changed: ["), out.count("ok: [")))
        print("| front end | run | wall (s) | controller peak RSS (MB) | sent | changed | ok |")
        print("|---|---|---|---|---|---|---|")
        for front, run, seconds, peak_mb, sent, changed, ok in rows:
            print("| %s | %s | %.1f | %.0f | %s | %d | %d |"
                  % (front, run, seconds, peak_mb, sent or "n/a", changed, ok))
    finally:
        sshd.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
