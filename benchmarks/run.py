"""ioc against Ansible and Mitogen, side by side, in one command.

    python -m benchmarks.run            # the default matrix, < 45 minutes
    python -m benchmarks.run --quick    # the issue's target cells, one run each, < 10 minutes

Runs the same plays -- ``tasks100`` (100 ``command`` tasks), ``loop100`` (one
``command`` task over 100 items) and ``realistic`` (playbooks/realistic.yml)
-- under

* ``ioc``            -- ``ioc-run`` (this checkout, ``python -m ioc``);
* ``ioc-per-task``   -- ``ioc-run --per-task`` (one runner call per task);
* ``ansible``        -- ``ansible-playbook``, linear strategy, pipelining on,
                        ControlPersist on (Ansible's default ssh_args);
* ``mitogen_linear`` -- ``ansible-playbook`` with Mitogen for Ansible's
                        ``mitogen_linear`` strategy;
* ``mitogen_batch``  -- ``ansible-playbook`` with this project's strategy
                        plugin, skipped ("not built yet") until
                        ``strategy_plugin/mitogen_batch.py`` exists;

against one real sshd (tests/support/sshd.py) behind a delay proxy
(benchmarks/delayproxy.py) at several one-way delays, with 1 and 10
inventory hosts (10 names on the one sshd, each with ``-o
HostKeyAlias=<name>`` so each is its own connection; the proxy's connection
count checks that). Every run pays its own connection setup: a fresh
ControlPath directory per run, and the ControlPersist masters a run leaves
behind are closed (and counted) before the next one.

Per cell it reports the median wall time over its runs, the controller's CPU
time (user+sys of the whole child process tree, from
``getrusage(RUSAGE_CHILDREN)`` deltas; this process is a child subreaper,
so daemonised ssh ControlPersist masters are reaped and counted too), round
trips and bytes (from the proxy), and writes ``docs/benchmarks.md``.

Not part of the test suite. See benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import ctypes
import dataclasses
import datetime
import glob
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
from typing import Dict, List, Optional, Sequence, Tuple

from benchmarks.common import (REALISTIC, ROOT, hostvars_of, inventory, ioc_ssh_argv,
                               loop_play, median, realistic_task_count, tasks_play)
from benchmarks.delayproxy import DelayProxy

TOOLS = ("ioc", "ioc-per-task", "ansible", "mitogen_linear", "mitogen_batch")
PLAYS = ("tasks100", "loop100", "realistic")
DELAYS_MS = (0, 25, 150)
HOSTS = (1, 10)
ANSIBLE_PYTHON_VERSION = "3.13.0"
ANSIBLE_REQUIREMENT = "ansible-core>=2.21,<2.22"
MITOGEN_BATCH = ROOT / "strategy_plugin" / "mitogen_batch.py"
#: Forks for every tool (ioc-run -f, ansible -f): all hosts at once.
FORKS = 10
#: One run may take at most this long.
RUN_TIMEOUT = 900

#: The default matrix leaves out the slowest cells of plain Ansible: linear
#: Ansible with 10 hosts is run at 25 ms only (the issue's 10-host target).
#: (tool, delay_ms, hosts) -> reason.
DEFAULT_SKIPS = {
    ("ansible", 0, 10): "left out of the default matrix (time); --full runs it",
    ("ansible", 150, 10): "left out of the default matrix (time); --full runs it",
}
#: --quick: the cells the issue's targets name, and plain Ansible only at 0 ms.
QUICK_CELLS = ((0, 1), (25, 10), (150, 1))
QUICK_ANSIBLE_CELLS = ((0, 1),)


# -----------------------------------------------------------------------------
# process accounting


def become_subreaper() -> bool:
    """Orphaned descendants (ssh ControlPersist masters) are re-parented to us."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def reap_orphans() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


# -----------------------------------------------------------------------------
# environment


@dataclasses.dataclass
class Ansible:
    python: Optional[str]
    playbook: Optional[str]
    version: str = ""
    mitogen_version: str = ""
    strategy_dir: str = ""
    error: str = ""


def find_ansible(install: bool) -> Ansible:
    """ansible-core 2.21 and mitogen in pyenv's 3.13 (installed if missing and allowed)."""
    try:
        prefix = subprocess.run(["pyenv", "prefix", ANSIBLE_PYTHON_VERSION], capture_output=True,
                                text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        return Ansible(None, None, error="pyenv %s not found: %s" % (ANSIBLE_PYTHON_VERSION, exc))
    python = os.path.join(prefix, "bin", "python")
    probe = ("import ansible.release, mitogen, ansible_mitogen, os; "
             "print(ansible.release.__version__); print('.'.join(map(str, mitogen.__version__))); "
             "print(os.path.dirname(ansible_mitogen.__file__))")
    r = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    if r.returncode != 0 and install:
        print("installing %s and mitogen into %s" % (ANSIBLE_REQUIREMENT, python), file=sys.stderr)
        subprocess.run([python, "-m", "pip", "install", "-q", ANSIBLE_REQUIREMENT, "mitogen"],
                       check=False)
        r = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return Ansible(None, None, error="ansible-core/mitogen not importable in %s: %s"
                       % (python, r.stderr.strip()[-500:]))
    version, mitogen_version, am = r.stdout.split()
    return Ansible(python, os.path.join(prefix, "bin", "ansible-playbook"), version,
                   mitogen_version, os.path.join(am, "plugins", "strategy"))


def git_rev() -> str:
    def git(*args):
        return subprocess.run(["git", *args], cwd=str(ROOT), capture_output=True,
                              text=True).stdout.strip()
    rev = git("rev-parse", "--short", "HEAD")
    if not rev:  # an exported tree (git archive): say which commit it is
        return os.environ.get("IOC_GIT_REV", "unknown")
    if git("status", "--porcelain", "--", "ioc"):
        rev += " (+ uncommitted changes under ioc/)"
    return rev


def machine() -> Dict[str, str]:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "unknown"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = "%.1f GiB" % (int(line.split()[1]) / 1024 / 1024)
    except OSError:
        pass
    try:
        load = "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        load = "unknown"
    return {"nproc": str(len(os.sched_getaffinity(0))), "memory": mem, "cpu": model,
            "kernel": platform.release(), "load at start": load}


# -----------------------------------------------------------------------------
# one run


@dataclasses.dataclass
class Cell:
    tool: str
    play: str
    delay_ms: int
    hosts: int
    runs: List[Dict[str, float]] = dataclasses.field(default_factory=list)
    skipped: str = ""
    failed: str = ""

    def med(self, key: str) -> Optional[float]:
        return median([r[key] for r in self.runs])


class Bench:
    def __init__(self, args, ansible: Ansible) -> None:
        self.args = args
        self.ansible = ansible
        self.tmp = tempfile.mkdtemp(prefix="iocb-", dir="/tmp")
        self.sshd = None
        self.proxies: Dict[int, DelayProxy] = {}
        self.books: Dict[str, Path] = {}
        self.baseline: Dict[int, Dict[str, float]] = {}

    # -- setup --------------------------------------------------------------------

    def __enter__(self) -> "Bench":
        from tests.support.sshd import start_sshd

        self.sshd = start_sshd()
        books = Path(self.tmp) / "plays"
        books.mkdir()
        (books / "tasks100.yml").write_text(tasks_play())
        (books / "loop100.yml").write_text(loop_play())
        self.books = {"tasks100": books / "tasks100.yml", "loop100": books / "loop100.yml",
                      "realistic": REALISTIC}
        (Path(self.tmp) / "ansible.cfg").write_text("[defaults]\n")
        return self

    def __exit__(self, *exc) -> None:
        for proxy in self.proxies.values():
            proxy.stop()
        if self.sshd is not None:
            self.sshd.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def proxy(self, delay_ms: int) -> DelayProxy:
        if delay_ms not in self.proxies:
            self.proxies[delay_ms] = DelayProxy(self.sshd.host, self.sshd.port,
                                                delay_ms / 1000.0).start()
        return self.proxies[delay_ms]

    def inventory(self, delay_ms: int, hosts: int) -> Path:
        path = Path(self.tmp) / ("hosts-%d-%d.ini" % (delay_ms, hosts))
        if not path.exists():
            names = ["b%02d" % (i + 1) for i in range(hosts)]
            s = self.sshd
            path.write_text(inventory(names, host=s.host, port=self.proxy(delay_ms).port,
                                      user=s.user, key=s.client_key,
                                      ssh_args=s.host_ssh_args, python=sys.executable))
        return path

    # -- baseline -------------------------------------------------------------------

    def ssh_true(self, delay_ms: int, runs: int = 3) -> Dict[str, float]:
        """``ssh host true`` with ioc's ssh options, through the proxy."""
        line = self.inventory(delay_ms, 1).read_text().splitlines()[0]
        argv = ioc_ssh_argv(hostvars_of(line), "true")
        proxy = self.proxy(delay_ms)
        walls, rts = [], []
        for _ in range(runs):
            proxy.reset()
            t0 = time.monotonic()
            subprocess.run(argv, check=True, capture_output=True, stdin=subprocess.DEVNULL,
                           timeout=60)
            walls.append(time.monotonic() - t0)
            proxy.wait_idle(30)
            rts.append(proxy.totals()["round_trips"])
        self.baseline[delay_ms] = {"wall": median(walls), "round_trips": median(rts)}
        return self.baseline[delay_ms]

    # -- runs -------------------------------------------------------------------------

    def argv_env(self, tool: str, play: str, inv: Path, rundir: Path) -> Tuple[list, dict]:
        extra = json.dumps({"base_dir": str(rundir / "files" / "{{ inventory_hostname }}")})
        book = str(self.books[play])
        env = dict(os.environ)
        # Users' machines keep .pyc caches; a sandbox's PYTHONDONTWRITEBYTECODE
        # would make every run recompile ansible, mitogen and ioc from source.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if tool.startswith("ioc"):
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
            argv = [sys.executable, "-m", "ioc", book, "-i", str(inv), "-f", str(FORKS),
                    "-e", extra]
            if tool == "ioc-per-task":
                argv.append("--per-task")
            return argv, env
        cp = rundir / "cp"
        cp.mkdir()
        env.update(
            ANSIBLE_CONFIG=str(Path(self.tmp) / "ansible.cfg"),
            ANSIBLE_PIPELINING="True",
            ANSIBLE_SSH_ARGS="-C -o ControlMaster=auto -o ControlPersist=60s",
            ANSIBLE_SSH_CONTROL_PATH_DIR=str(cp),
            ANSIBLE_HOST_KEY_CHECKING="False",
            ANSIBLE_FORKS=str(FORKS),
            ANSIBLE_RETRY_FILES_ENABLED="False",
            ANSIBLE_LOCAL_TEMP=str(rundir / "ansible-tmp"),
            ANSIBLE_DEPRECATION_WARNINGS="False",
            ANSIBLE_NOCOLOR="1",
        )
        env.pop("PYTHONPATH", None)
        if tool == "mitogen_linear":
            env.update(ANSIBLE_STRATEGY_PLUGINS=self.ansible.strategy_dir,
                       ANSIBLE_STRATEGY="mitogen_linear")
        elif tool == "mitogen_batch":
            env.update(ANSIBLE_STRATEGY_PLUGINS=str(MITOGEN_BATCH.parent),
                       ANSIBLE_STRATEGY="mitogen_batch", PYTHONPATH=str(ROOT))
        return [self.ansible.playbook, "-i", str(inv), book, "-f", str(FORKS), "-e", extra], env

    def close_masters(self, rundir: Path) -> None:
        """Ask every ControlPersist master the run left behind to exit."""
        for sock in glob.glob(str(rundir / "cp" / "*")):
            subprocess.run(["ssh", "-o", "ControlPath=%s" % sock, "-O", "exit", "x"],
                           capture_output=True, stdin=subprocess.DEVNULL, timeout=30)

    def run_once(self, tool: str, play: str, delay_ms: int, hosts: int) -> Dict[str, float]:
        inv = self.inventory(delay_ms, hosts)
        proxy = self.proxy(delay_ms)
        rundir = Path(tempfile.mkdtemp(prefix="run-", dir=self.tmp))
        argv, env = self.argv_env(tool, play, inv, rundir)
        reap_orphans()
        proxy.reset()
        cpu0 = children_cpu()
        t0 = time.monotonic()
        proc = subprocess.run(argv, env=env, cwd=str(rundir), capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT)
        wall = time.monotonic() - t0
        self.close_masters(rundir)
        idle = proxy.wait_idle(30)
        reap_orphans()
        cpu = children_cpu() - cpu0
        totals = proxy.totals()
        conns = proxy.connections()
        shutil.rmtree(rundir, ignore_errors=True)
        if proc.returncode != 0:
            raise RuntimeError("%s exited %d:\n%s\n%s" % (" ".join(argv[:3]), proc.returncode,
                                                       proc.stdout[-2000:], proc.stderr[-2000:]))
        return {"wall": wall, "cpu": cpu, "round_trips": totals["round_trips"],
                "rt_max": max((c["round_trips"] for c in conns), default=0),
                "bytes": totals["bytes"], "connections": totals["connections"],
                "left_open": 0 if idle else totals["open"]}

    def warm_up(self, tool: str) -> str:
        """One untimed 1-task run at 0 ms: .pyc caches written, files in the page cache."""
        path = Path(self.tmp) / "plays" / "warmup.yml"
        path.write_text(tasks_play(1))
        self.books["warmup"] = path
        try:
            self.run_once(tool, "warmup", 0, 1)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            return str(exc)
        return ""

    def cell(self, tool: str, play: str, delay_ms: int, hosts: int, runs: int,
             budget: float, skip: str = "") -> Cell:
        cell = Cell(tool, play, delay_ms, hosts)
        if skip:
            cell.skipped = skip
            return cell
        spent = 0.0
        for i in range(runs):
            try:
                result = self.run_once(tool, play, delay_ms, hosts)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                cell.failed = str(exc)
                break
            cell.runs.append(result)
            spent += result["wall"]
            if spent >= budget:
                break
        return cell


# -----------------------------------------------------------------------------
# the report

READING = """## Reading the numbers

* Round trips are the robust columns; wall and CPU time carry the noise of a
  shared 2-CPU machine (see the load average above). With one run per cell
  (`--quick`), differences under ~20% in seconds mean little.
* ioc's extra round trips over `ssh true` are its bootstrap (mitogen's
  first stage, the module upload, the call); they are paid once per host,
  whatever the play's size: compare `tasks100` with `realistic`.
* With 10 hosts on 2 CPUs a controller busy for longer than the proxy's
  quiet gap (1.5 x delay: 37 ms at 25 ms) while the server's answer arrives
  can be counted as an extra turn; the 10-host counts at 25 ms are upper
  bounds by a turn or two per connection.
"""


def fmt_s(v: Optional[float]) -> str:
    if v is None:
        return "-"
    return "%.2f" % v if v < 10 else "%.1f" % v


def fmt_kb(v: Optional[float]) -> str:
    return "-" if v is None else "%.0f" % (v / 1024)


def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    if a is None or b is None or b == 0:
        return None
    return a / b


def render(cells: List[Cell], bench: Bench, meta: Dict[str, object]) -> str:
    out = []
    w = out.append
    w("# Benchmarks: ioc vs Ansible vs Mitogen")
    w("")
    if meta.get("quick"):
        w("> **This is a `--quick` run**: one run per cell (no median), only the cells the "
          "issue's targets name, and plain Ansible only at 0 ms. `python -m benchmarks.run` "
          "runs the default matrix with the median of up to 3 runs per cell (plain Ansible: 1).")
        w("")
    w("Generated by `%s` on %s in %.1f minutes. How it measures: "
      "[benchmarks/README.md](../benchmarks/README.md)."
      % (meta["command"], meta["date"], meta["minutes"]))
    w("")
    w("## Machine and versions")
    w("")
    for k, v in meta["machine"].items():
        w("* %s: %s" % (k, v))
    for k, v in meta["versions"].items():
        w("* %s: %s" % (k, v))
    w("")
    w("Every host is the same local sshd (tests/support/sshd.py) behind the delay proxy "
      "(benchmarks/delayproxy.py): *delay* is added in each direction, so a round trip "
      "costs 2 x delay more. Forks: %d for every tool. Target Python: %s." % (FORKS, sys.executable))
    w("")

    w("## Baseline: `ssh host true` with ioc's ssh options")
    w("")
    w("| delay (one way) | wall s | round trips | floor wall s (ssh true + one call) | floor RTs |")
    w("|---|---|---|---|---|")
    for d in sorted(bench.baseline):
        b = bench.baseline[d]
        w("| %d ms | %s | %d | %s | %d |" % (d, fmt_s(b["wall"]), b["round_trips"],
                                            fmt_s(floor_wall(bench, d)), b["round_trips"] + 1))
    w("")

    w("## Results")
    w("")
    w("Per cell: median wall time (s), controller CPU (s, user+sys of the whole process "
      "tree), round trips (sum over connections; max per connection in brackets), KiB "
      "through the proxy both ways, ssh connections seen, runs. Round trips at 0 ms are "
      "counted with a zero quiet gap and can be off by a few (see the proxy's docstring).")
    for play in PLAYS:
        pcells = [c for c in cells if c.play == play]
        if not pcells:
            continue
        w("")
        w("### %s" % {"tasks100": "tasks100: 100 `command` tasks",
                      "loop100": "loop100: one `command` task, 100 loop items",
                      "realistic": "realistic: playbooks/realistic.yml (%d tasks incl. the handler)"
                      % realistic_task_count()}[play])
        w("")
        w("| delay | hosts | tool | wall s | CPU s | round trips | KiB | conns | runs |")
        w("|---|---|---|---|---|---|---|---|---|")
        for c in sorted(pcells, key=lambda c: (c.delay_ms, c.hosts, TOOLS.index(c.tool))):
            if c.skipped or c.failed or not c.runs:
                why = c.skipped or ("FAILED: " + c.failed.splitlines()[0][:120])
                w("| %d ms | %d | %s | %s | | | | | |" % (c.delay_ms, c.hosts, c.tool, why))
                continue
            w("| %d ms | %d | %s | %s | %s | %d (%d) | %s | %d | %d |" % (
                c.delay_ms, c.hosts, c.tool, fmt_s(c.med("wall")), fmt_s(c.med("cpu")),
                c.med("round_trips"), c.med("rt_max"), fmt_kb(c.med("bytes")),
                c.med("connections"), len(c.runs)))

    w("")
    w("## Ratios")
    w("")
    w("ioc against `mitogen_linear` (x faster = mitogen_linear wall / ioc wall; CPU = ioc "
      "CPU / mitogen_linear CPU) and against the floor (ioc wall / (`ssh true` + one call)).")
    w("")
    w("| play | delay | hosts | x faster than mitogen_linear | ioc CPU / mitogen_linear CPU "
      "| ioc / floor | ioc RTs (max/conn) - floor RTs |")
    w("|---|---|---|---|---|---|---|")
    index = {(c.tool, c.play, c.delay_ms, c.hosts): c for c in cells}
    for c in sorted((c for c in cells if c.tool == "ioc" and c.runs),
                    key=lambda c: (PLAYS.index(c.play), c.delay_ms, c.hosts)):
        m = index.get(("mitogen_linear", c.play, c.delay_ms, c.hosts))
        mw = m.med("wall") if m and m.runs else None
        mc = m.med("cpu") if m and m.runs else None
        fl = floor_wall(bench, c.delay_ms)
        b = bench.baseline.get(c.delay_ms)
        w("| %s | %d ms | %d | %s | %s | %s | %s |" % (
            c.play, c.delay_ms, c.hosts, fmt_x(ratio(mw, c.med("wall"))),
            fmt_frac(ratio(c.med("cpu"), mc)), fmt_x(ratio(c.med("wall"), fl)),
            "%+d" % (c.med("rt_max") - b["round_trips"] - 1) if b else "-"))

    w("")
    for line in READING.rstrip("\n").splitlines():
        w(line)
    w("")
    w("## The issue's targets")
    w("")
    w("| target | measured | |")
    w("|---|---|---|")
    for text, measured, met in targets(index, bench):
        w("| %s | %s | %s |" % (text, measured, {True: "**met**", False: "not met",
                                                  None: "not measured"}[met]))
    w("")
    failed = [c for c in cells if c.failed]
    if failed:
        w("## Failures")
        w("")
        for c in failed:
            w("* %s / %s / %d ms / %d hosts:" % (c.tool, c.play, c.delay_ms, c.hosts))
            w("")
            w("  ```")
            w("\n".join("  " + line for line in c.failed.splitlines()[-25:]))
            w("  ```")
        w("")
    return "\n".join(out) + "\n"


def fmt_x(v: Optional[float]) -> str:
    return "-" if v is None else "%.1fx" % v


def fmt_frac(v: Optional[float]) -> str:
    if v is None:
        return "-"
    return "1/%.1f" % (1 / v) if 0 < v < 1 else "%.2fx" % v


def floor_wall(bench: Bench, delay_ms: int) -> Optional[float]:
    b = bench.baseline.get(delay_ms)
    return None if b is None else b["wall"] + 2 * delay_ms / 1000.0


def targets(index, bench) -> List[Tuple[str, str, Optional[bool]]]:
    out = []

    def get(tool, delay, hosts, play="tasks100"):
        c = index.get((tool, play, delay, hosts))
        return c if c is not None and c.runs else None

    ioc = get("ioc", 150, 1)
    fl = floor_wall(bench, 150)
    if ioc and fl:
        r = ioc.med("wall") / fl
        out.append(("150 ms, 1 host, 100 tasks, cold start: ioc within 1.3x of the floor",
                    "%.2f s vs floor %.2f s: %.2fx" % (ioc.med("wall"), fl, r), r <= 1.3))
    else:
        out.append(("150 ms, 1 host, 100 tasks, cold start: ioc within 1.3x of the floor",
                    "-", None))
    for delay, hosts, speed in ((0, 1, 10), (25, 10, 15)):
        ioc, mit = get("ioc", delay, hosts), get("mitogen_linear", delay, hosts)
        label = "%d ms, %d host%s, 100 tasks: ioc >= %dx faster than mitogen_linear" % (
            delay, hosts, "s" if hosts > 1 else "", speed)
        label_cpu = "%d ms, %d host%s, 100 tasks: ioc CPU <= 1/20 of mitogen_linear's" % (
            delay, hosts, "s" if hosts > 1 else "")
        if ioc and mit:
            x = mit.med("wall") / ioc.med("wall")
            out.append((label, "%.2f s vs %.2f s: %.1fx" % (ioc.med("wall"), mit.med("wall"), x),
                        x >= speed))
            c = ioc.med("cpu") / mit.med("cpu") if mit.med("cpu") else None
            out.append((label_cpu, "%.2f s vs %.2f s: %s" % (ioc.med("cpu"), mit.med("cpu"),
                                                           fmt_frac(c)),
                        None if c is None else c <= 1 / 20))
        else:
            out += [(label, "-", None), (label_cpu, "-", None)]
    return out


# -----------------------------------------------------------------------------


def plan(args, ansible: Ansible) -> List[Tuple[str, str, int, int, str]]:
    """(tool, play, delay_ms, hosts, skip reason) in run order."""
    cells = []
    delays = args.delays or DELAYS_MS
    hostcounts = args.hosts or HOSTS
    tools = args.tools or TOOLS
    plays = args.plays or PLAYS
    for delay in delays:
        for hosts in hostcounts:
            if args.quick and not args.delays and not args.hosts and (delay, hosts) not in QUICK_CELLS:
                continue
            for play in plays:
                for tool in tools:
                    skip = ""
                    if tool in ("ansible", "mitogen_linear", "mitogen_batch") and ansible.error:
                        skip = "not available: " + ansible.error
                    elif tool == "mitogen_batch" and not MITOGEN_BATCH.exists():
                        skip = "not built yet (no strategy_plugin/mitogen_batch.py)"
                    elif tool == "ansible" and not args.full and not args.tools:
                        if args.quick and (delay, hosts) not in QUICK_ANSIBLE_CELLS:
                            skip = "left out of --quick (minutes per run)"
                        elif not args.quick:
                            skip = DEFAULT_SKIPS.get((tool, delay, hosts), "")
                    cells.append((tool, play, delay, hosts, skip))
    return cells


def csv_ints(text: str) -> List[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def csv_names(allowed):
    def parse(text: str) -> List[str]:
        names = [x.strip() for x in text.split(",") if x.strip()]
        bad = [n for n in names if n not in allowed]
        if bad:
            raise argparse.ArgumentTypeError("unknown: %s (choose from %s)"
                                             % (", ".join(bad), ", ".join(allowed)))
        return names
    return parse


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="one run per cell, the issue's target cells only (< 10 min)")
    parser.add_argument("--full", action="store_true",
                        help="also the slow plain-Ansible cells the default leaves out")
    parser.add_argument("--runs", type=int,
                        help="runs per cell (default 3, plain Ansible 1; --quick 1)")
    parser.add_argument("--budget", type=float, default=45.0,
                        help="stop repeating a cell once its runs took this many seconds "
                             "(default 45)")
    parser.add_argument("--delays", type=csv_ints, help="one-way delays in ms (default 0,25,150)")
    parser.add_argument("--hosts", type=csv_ints, help="host counts (default 1,10)")
    parser.add_argument("--tools", type=csv_names(TOOLS), help=", ".join(TOOLS))
    parser.add_argument("--plays", type=csv_names(PLAYS), help=", ".join(PLAYS))
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"),
                        help="report file (default docs/benchmarks.md)")
    parser.add_argument("--json", help="also write the raw results as JSON")
    parser.add_argument("--no-install", action="store_true",
                        help="do not pip-install ansible-core/mitogen when missing")
    args = parser.parse_args(argv)
    runs = args.runs or (1 if args.quick else 3)

    started = time.monotonic()
    if not become_subreaper():
        print("warning: cannot become a child subreaper; CPU of daemonised ssh masters "
              "is not counted", file=sys.stderr)
    ansible = find_ansible(install=not args.no_install)
    todo = plan(args, ansible)
    versions = {
        "controller Python (ioc)": sys.version.split()[0],
        "ioc": git_rev(),
        "mitogen (ioc)": _mitogen_version(),
        "ansible-core": ansible.version or ansible.error,
        "Python (ansible-playbook)": ANSIBLE_PYTHON_VERSION,
        "mitogen (Ansible)": ansible.mitogen_version or "-",
        "OpenSSH": subprocess.run(["ssh", "-V"], capture_output=True,
                                  text=True).stderr.strip(),
    }
    meta = {"command": "python -m benchmarks.run" + "".join(
                " " + a for a in (argv if argv is not None else sys.argv[1:])),
            "quick": args.quick, "machine": machine(), "versions": versions,
            "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "minutes": 0.0}
    cells: List[Cell] = []
    with Bench(args, ansible) as bench:
        for delay in sorted({d for _, _, d, _, _ in todo}):
            b = bench.ssh_true(delay)
            print("ssh true at %d ms: %.2fs, %d round trips" % (delay, b["wall"],
                                                                b["round_trips"]),
                  file=sys.stderr, flush=True)
        for tool in dict.fromkeys(t for t, _, _, _, skip in todo if not skip):
            error = bench.warm_up(tool)
            print("warm-up %s: %s" % (tool, error.splitlines()[0] if error else "ok"),
                  file=sys.stderr, flush=True)
        for tool, play, delay, hosts, skip in todo:
            t0 = time.monotonic()
            # Plain Ansible runs once per cell unless --runs says otherwise: a
            # run takes 20 s to minutes, and its spread is small next to the
            # differences the report is about.
            n = args.runs or (1 if tool == "ansible" else runs)
            cell = bench.cell(tool, play, delay, hosts, n, args.budget, skip)
            cells.append(cell)
            state = (cell.skipped and "skipped: " + cell.skipped) or (
                cell.failed and "FAILED: " + cell.failed.splitlines()[0]) or (
                "wall %s cpu %s rt %d (max %d) %s KiB conns %d, %d run(s)" % (
                    fmt_s(cell.med("wall")), fmt_s(cell.med("cpu")), cell.med("round_trips"),
                    cell.med("rt_max"), fmt_kb(cell.med("bytes")), cell.med("connections"),
                    len(cell.runs)))
            print("[%5.1f min] %-14s %-9s %3d ms %2d host(s): %s (%.0fs)" % (
                (time.monotonic() - started) / 60, tool, play, delay, hosts, state,
                time.monotonic() - t0), file=sys.stderr, flush=True)
            meta["minutes"] = (time.monotonic() - started) / 60
            Path(args.out).write_text(render(cells, bench, meta))
            if args.json:
                Path(args.json).write_text(json.dumps(
                    {"meta": meta, "baseline": bench.baseline,
                     "cells": [dataclasses.asdict(c) for c in cells]}, indent=1))
        meta["minutes"] = (time.monotonic() - started) / 60
        Path(args.out).write_text(render(cells, bench, meta))
    print("wrote %s (%.1f minutes)" % (args.out, meta["minutes"]), file=sys.stderr)
    return 0


def _mitogen_version() -> str:
    import mitogen

    return ".".join(map(str, mitogen.__version__))


if __name__ == "__main__":
    sys.exit(main())
