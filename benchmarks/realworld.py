"""Real roles at a distance: wall time, round trips, native share and runner calls.

    python -m benchmarks.realworld                          # every role, 150 ms one way
    python -m benchmarks.realworld --roles redis --engines mitogen_linear,mitogen_batch
    python -m benchmarks.realworld --out docs/benchmarks.md  # replaces its "Real roles" section

For each vendored role of tests/realworld and each engine (``linear``,
``mitogen_linear``, ``mitogen_batch``, ``ioc-run``): a pristine target
(tests/realworld/sandbox.py) reached through a :class:`DelayProxy` adding
``--delay-ms`` in each direction, the role's playbook run twice (first run,
idempotent run). Reported per run: wall seconds, round trips through the
proxy (all connections), and for mitogen_batch the share of reached tasks
that ran natively (task banners on the console minus the tasks the
dispatcher's log says ran through Ansible), the barriers reached (tasks and
handlers through Ansible, controller steps) and the runner calls per host
(the transport report the dispatcher logs); for ioc-run its own transport
report. Package downloads go straight to Debian's mirror, not through the
proxy: only the control connection is far away.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from benchmarks.delayproxy import DelayProxy
from tests.realworld.harness import (BY_NAME, PERSISTED, SCENARIOS, Run, Runner, ansible_python,
                                     stop_persisted)
from tests.realworld.prepare import main as prepare
from tests.realworld.sandbox import Target, exit_on_sigterm

ROOT = Path(__file__).resolve().parents[1]
ENGINES = ("linear", "mitogen_linear", "mitogen_batch", "ioc-run", PERSISTED)
SECTION = "## Real roles at 150 ms"


@dataclasses.dataclass
class Measure:
    role: str
    engine: str
    run: int  # 1 first; the last one of a (role, engine) is the idempotent run
    rc: int
    wall: float
    round_trips: int
    connections: int
    recap: str
    reached: int = 0
    through_ansible: int = 0
    barriers: int = 0
    calls: Optional[int] = None
    leaving: List[str] = dataclasses.field(default_factory=list)

    @property
    def native(self) -> Optional[float]:
        if self.engine not in ("mitogen_batch", "ioc-run", PERSISTED) or not self.reached:
            return None
        return (self.reached - self.through_ansible) / self.reached


CALLS = re.compile(r"ioc: (\d+) batch\(es\); (\d+) round trip\(s\) per host after connecting "
                   r"\((\d+) runner call\(s\) for (\d+) host")
THROUGH = re.compile(r"(AnsibleStep|AnsibleHandler) \d+ .*?on (\d+) host\(s\)(?:: (.*))?")


def analyse(m: Measure, run: Run) -> Measure:
    m.reached = run.tasks_reached()
    text = run.log if m.engine in ("mitogen_batch", PERSISTED) else run.stdout
    found = CALLS.findall(text)
    if found:  # one report per play; calls per host summed over plays
        m.calls = sum(int(total) // max(int(hosts), 1) for _, _, total, hosts in found)
    if m.engine in ("mitogen_batch", PERSISTED):
        for kind, _, reason in THROUGH.findall(run.log):
            m.through_ansible += 1
            m.leaving.append(re.sub(r" \(/[^)]*\)$", "", reason or kind))
        m.barriers = m.through_ansible + len(re.findall(r"ControllerStep \d+-\d+ on", run.log))
    return m


def measure(runner: Runner, role: str, engine: str, delay_ms: int) -> List[Measure]:
    scenario = BY_NAME[role]
    out = []
    with Target() as target, DelayProxy("127.0.0.1", target.port, delay_ms / 1000.0) as proxy:
        inventory = target.inventory(port=proxy.port)
        number, ok = 0, 0
        # First run, then the idempotent run; an engine whose run fails gets
        # one more (Mitogen for Ansible's first run fails on these roles):
        # the last run is the one after a successful run.
        while ok < 2 and number < 3:
            number += 1
            proxy.reset()
            run = runner.run(engine, runner_playbook(scenario), inventory)
            proxy.wait_idle(30)
            totals = proxy.totals()
            recap = " ".join(run.recap()).split(": ", 1)[-1]
            out.append(analyse(Measure(role, engine, number, run.rc, run.seconds,
                                       int(totals["round_trips"]), int(totals["connections"]),
                                       re.sub(r"\s+", " ", recap)), run))
            ok = ok + 1 if run.rc == 0 else ok
            refused = run.rc != 0 and not totals["round_trips"]  # ioc-run, before connecting
            print("  %s %s run %d: rc=%d %.1fs %d round trips %s" % (
                role, engine, number, run.rc, run.seconds, totals["round_trips"], recap),
                file=sys.stderr, flush=True)
            if refused:
                break
        if engine == PERSISTED:  # (its runners on this target end with the daemon)
            stop_persisted(runner.python)
    return out


def runner_playbook(scenario) -> Path:
    return ROOT / "tests" / "realworld" / scenario.playbook


def fmt(v: Optional[float], spec: str = "%.1f") -> str:
    return "—" if v is None else spec % v


def render(results: List[Measure], delay_ms: int, command: str, minutes: float,
           meta: Dict[str, str]) -> str:
    lines = [SECTION, "",
             "Generated by `%s` on %s in %.0f minutes (%s). Every engine starts from the "
             "same pristine Debian 12 target (tests/realworld/README.md) behind the delay "
             "proxy at %d ms one way; run 1 installs and configures, run 2 is the idempotent "
             "re-run. Round trips are summed over the run's connections. *native* is the "
             "share of reached tasks (task banners) that ran inside a batch; *calls* are "
             "runner calls per host; *barriers* are the reached tasks that left the batch "
             "(through Ansible) and controller steps: the target is calls = barriers + 1."
             % (command, datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), minutes,
                ", ".join("%s %s" % kv for kv in meta.items()), delay_ms), "",
             "| role | run | engine | wall s | round trips | recap | native | barriers | calls |",
             "|---|---|---|---|---|---|---|---|---|"]
    labels = _labels(results)
    last = {(m.role, m.engine): m.run for m in results if labels[id(m)] == "idempotent"}
    for m in results:
        label = labels[id(m)]
        lines.append("| %s | %s | %s | %s | %d | %s | %s | %s | %s |" % (
            m.role, label, m.engine,
            fmt(m.wall) if m.rc == 0 else "%s (rc %d)" % (fmt(m.wall), m.rc), m.round_trips,
            re.sub(r" ioc: .*", "", m.recap), fmt(m.native and m.native * 100, "%.0f %%"),
            m.barriers if m.engine in ("mitogen_batch", PERSISTED) else "—",
            "—" if m.calls is None else m.calls))
    persisted = any(m.engine == PERSISTED for m in results)
    lines += ["", "Ratios (wall time of mitogen_linear / mitogen_batch; target on idempotent "
              "runs: >= 4x%s):" % ("; the last column: mitogen_batch with IOC_PERSIST=60, "
                                   "its idempotent run on the connections the first run left"
                                   if persisted else ""), "",
              "| role | first run | idempotent run |%s" % (" idempotent, warm |" if persisted
                                                          else ""),
              "|---|---|---|%s" % ("---|" if persisted else "")]
    index = {(m.role, m.engine, m.run): m for m in results}
    for role in dict.fromkeys(m.role for m in results):
        cells = []
        for which in ("first", "idempotent") + (("warm",) if persisted else ()):
            batch = PERSISTED if which == "warm" else "mitogen_batch"
            pair = [index.get((role, e, 1 if which == "first" else last.get((role, e), 0)))
                    for e in ("mitogen_linear", batch)]
            a, b = pair
            if a and b and b.wall and a.rc == 0 and b.rc == 0:
                cells.append("%.1fx (%d vs %d round trips)" % (a.wall / b.wall, a.round_trips,
                                                             b.round_trips))
            else:
                cells.append("— (no such run: Mitogen's failed)" if which == "first" or a is None
                             else "—")
        lines.append("| %s | %s |" % (role, " | ".join(cells)))
    leaving: Dict[str, int] = {}
    for m in results:
        if m.engine == "mitogen_batch":
            for reason in m.leaving:
                key = "%s (%s)" % (reason, m.role)
                leaving[key] = leaving.get(key, 0) + 1
    if leaving:
        lines += ["", "Tasks that left the batch under mitogen_batch (both runs), with the "
                  "dispatcher's reason:", ""]
        lines += ["* %d x %s" % (n, reason) for reason, n in sorted(leaving.items())]
    return "\n".join(lines) + "\n"


def _labels(results: List[Measure]) -> Dict[int, str]:
    """``first``; ``idempotent`` for a run after a successful one; else ``again``."""
    out: Dict[int, str] = {}
    previous: Dict[tuple, Measure] = {}
    for m in results:
        before = previous.get((m.role, m.engine))
        if m.run == 1:
            out[id(m)] = "first"
        elif before is not None and before.rc == 0 and m.rc == 0:
            out[id(m)] = "idempotent"
        else:
            out[id(m)] = "again"
        previous[(m.role, m.engine)] = m
    return out


def write_section(path: Path, section: str) -> None:
    """Replace (or append) the real-roles section of ``path``, keeping the rest."""
    text = path.read_text() if path.exists() else ""
    start = text.find(SECTION)
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find("\n## ", start + len(SECTION))
        text = text[:start] + section + (text[end + 1:] if end >= 0 else "")
    path.write_text(text)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.realworld")
    parser.add_argument("--roles", default=",".join(s.name for s in SCENARIOS))
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--delay-ms", type=int, default=150)
    parser.add_argument("--out", help="Markdown file whose real-roles section is replaced")
    parser.add_argument("--json", help="raw measurements to this file (written as they come)")
    parser.add_argument("--from-json", nargs="+", metavar="FILE",
                        help="measure nothing: report these files' measurements (in order)")
    parser.add_argument("--minutes", type=float, default=0.0,
                        help="with --from-json: the measuring time to report")
    parser.add_argument("--command", help="with --from-json: the measuring command(s) to report")
    args = parser.parse_args(argv)
    if args.from_json:
        return report(load(args.from_json), args, ansible_python(), args.minutes, argv)
    exit_on_sigterm()
    if prepare():
        return 1
    python = ansible_python()
    t0 = time.monotonic()
    results: List[Measure] = []
    with tempfile.TemporaryDirectory(prefix="ioc-bench-realworld-") as tmp:
        runner = Runner(Path(tmp), python)
        for role in args.roles.split(","):
            for engine in args.engines.split(","):
                print("%s under %s at %d ms ..." % (role, engine, args.delay_ms), file=sys.stderr)
                results += measure(runner, role, engine, args.delay_ms)
                if args.json:  # as it goes: a long run interrupted still has its numbers
                    save(results, Path(args.json))
    minutes = (time.monotonic() - t0) / 60
    return report(results, args, python, minutes, argv)


def save(results: List[Measure], path: Path) -> None:
    path.write_text(json.dumps([dataclasses.asdict(m) for m in results], indent=1))


def load(paths: Sequence[str]) -> List[Measure]:
    """The measurements of ``paths``; a later file's (role, engine) replaces an earlier one's."""
    groups: Dict[tuple, List[Measure]] = {}
    for path in paths:
        fresh: Dict[tuple, List[Measure]] = {}
        for m in json.loads(Path(path).read_text()):
            measure = Measure(**m)
            fresh.setdefault((measure.role, measure.engine), []).append(measure)
        groups.update(fresh)
    order = {e: i for i, e in enumerate(ENGINES)}
    roles = list(dict.fromkeys(role for role, _ in groups))
    keys = sorted(groups, key=lambda k: (roles.index(k[0]), order.get(k[1], 99)))
    return [m for key in keys for m in groups[key]]


def report(results: List[Measure], args: argparse.Namespace, python: str, minutes: float,
           argv: Optional[Sequence[str]]) -> int:
    from tests.realworld.__main__ import _versions
    v = _versions(python)
    meta = {"ansible-core": v["ansible-core"], "mitogen": v["mitogen"], "ioc": v["ioc"]}
    command = args.command or ("python -m benchmarks.realworld"
                                + "".join(" " + a for a in (argv or sys.argv[1:])))
    section = render(results, args.delay_ms, command, minutes, meta)
    if args.out:
        write_section(Path(args.out), section)
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
