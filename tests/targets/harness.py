"""ansible-core's own integration targets under ``linear`` and under ``mitogen_batch``.

    python -m tests.targets.harness [TARGET ...] [--all] [--out DIR] [--table docs/conformance.md]

Each target runs twice through **ansible-test itself**, from the ansible-core
source distribution of the installed release (``tests/targets/source.py``):

    python3.13 <tree>/bin/ansible-test integration --local \\
        --python-interpreter <python3.13> --color no --allow-destructive -v TARGET

once from a tree whose strategy plugin directory is empty (stock ``linear``)
and once from a tree where it holds ``linear_is_mitogen_batch/linear.py``, so
that every play that would run ``linear`` — by default, by ``strategy:
linear``, by ``ANSIBLE_STRATEGY=linear`` — runs ``mitogen_batch``. Driving
ansible-test rather than imitating it gives each target exactly what
ansible-core's CI gives it: the generated inventory (``testhost``,
``ansible_python_interpreter``), the environment (``ANSIBLE_FORCE_HANDLERS``,
``ANSIBLE_HOST_PATTERN_MISMATCH=error``, …), the playbook it writes for a role
target, ``runme.sh`` with its cwd and ``-v``, ``setup/*`` and ``needs/*``
dependencies and the ``aliases`` filters. ``-v`` is what ansible-core's CI
passes.

A target's stdout and stderr reach the harness apart (both trees'
ansible-test keep them apart, ``source.SPLIT_STREAMS``) and are kept as
``DIR/<target>/<strategy>.{stdout,stderr}``, with the console
``<strategy>.log`` (both, line by line as they arrived, as a terminal shows
them: for a reader and for where a failed run stopped). The verdict compares
exit code, then each stream's skeleton on its own, stdout first
(``tests/targets/skeleton.py`` documents the normalisation): the order in
which lines of the two streams arrive is timing, not behaviour. One line per
target: ``identical`` / ``differs (first difference: …)`` /
``error (…)``, with the wall time under each strategy.
``DIR/results.json`` is rewritten after each target; ``--recompare`` reads
the logs of an earlier run again (after a change to the normalisation)
without running anything.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import difflib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Dict, List, Optional, Sequence

from tests.targets import skeleton
from tests.targets.localssh import root_authorized_keys, root_ssh
from tests.targets.accounts import not_the_test_suites, same_accounts
from tests.targets.leftovers import TmpLeftovers, restored
from tests.targets.reachable import interpreter_reachable
from tests.targets.source import (LINEAR_SHIM, Source, SourceError, ansible_test_argv,
                                  bridge_counts, bridge_log, clean_environment, find_python313,
                                  make_tree, reset_tree)

#: The targets of record (issue 18): each must be run, and be identical.
TARGETS_OF_RECORD = (
    "blocks", "handlers", "loops", "loop_control", "until", "loop-until", "include_import",
    "include_vars", "include_when_parent_is_dynamic", "include_when_parent_is_static", "tags",
    "check_mode", "any_errors_fatal", "ignore_errors", "failed_when", "changed_when",
    "register", "set_fact", "delegate_to", "strategy_linear", "order", "special_vars",
    "special_vars_hosts", "var_precedence", "var_blending", "vars_files", "templating",
    "template", "copy", "file", "lineinfile", "blockinfile", "replace", "stat",
    "command_shell", "assert", "debug", "meta_tasks", "gathering", "gathering_facts",
    "add_host", "group_by", "no_log", "environment", "hash", "filter_core", "test_core",
    "includes", "import_tasks", "conditionals", "roles", "var_inheritance", "var_templating",
    "break_when", "register_projections", "keyword_inheritance", "omit", "throttle",
    "playbook", "tasks", "task_ordering", "hosts_field", "limit_inventory",
    "callback_default", "args", "module_defaults", "ignore_unreachable", "unicode", "parsing",
    "undefined", "jinja2_native_types",
    # ansible-core's lookup targets (lookup_url needs the network: not here)
    "lookup_first_found", "lookup_fileglob", "lookup_env", "lookup_vars", "lookup_dict",
    "lookup_subelements", "lookup_password", "lookup_unvault", "lookup_config", "lookup_ini",
    "lookup_csvfile", "lookup_inventory_hostnames", "lookup_file", "lookup_pipe",
    "lookup_lines", "lookup_items", "lookup_sequence", "lookup_together", "lookup_nested",
    "lookup_indexed_items", "lookup_template", "lookup_list", "lookup_varnames",
    "lookup_random_choice",
)
BASELINE = "linear"
CANDIDATE = "mitogen_batch"
#: The second run's name under --self-check (stock linear again, from its own tree).
SELF_CHECK = "linear-again"
DEFAULT_TIMEOUT = 1800.0
DEFAULT_OUT = Path(tempfile.gettempdir()) / "ioc-targets"


@dataclasses.dataclass
class Run:
    """One ansible-test run of one target under one strategy."""

    strategy: str
    rc: int
    seconds: float
    log: str
    timed_out: bool = False
    #: From the dispatcher's log (mitogen_batch only): plays it planned natively,
    #: native steps (one runner call per host each), tasks it sent through Ansible.
    native_plays: int = 0
    native_steps: int = 0
    through_ansible: int = 0
    #: Plays mitogen_batch left whole to the linear strategy (the bridge's log says why).
    linear_plays: int = 0
    #: The private tree it ran from (the normaliser replaces it).
    tree: str = ""
    #: Its stdout and stderr, each in a file of its own ("" in the results of a
    #: harness that had only the console: its console is then the one stream).
    stdout: str = ""
    stderr: str = ""


@dataclasses.dataclass
class Outcome:
    target: str
    result: str  # identical | differs | error
    detail: str
    baseline: Optional[Run]
    candidate: Optional[Run]
    #: The difference in a few words, for the table ("exit 0/2, at TASK [x]").
    brief: str = ""

    def line(self) -> str:
        times = ""
        if self.baseline and self.candidate:
            times = "  [%s %.1fs, %s %.1fs]" % (self.baseline.strategy, self.baseline.seconds,
                                                self.candidate.strategy, self.candidate.seconds)
        text = self.result if not self.detail else "%s (%s)" % (self.result, self.detail)
        return "%-32s %s%s" % (self.target, text, times)


class Harness:
    """Runs targets from one private tree per strategy, sequentially (timings stay comparable)."""

    def __init__(self, out: Path, *, python: str, verbosity: int = 1,
                 timeout: float = DEFAULT_TIMEOUT, allow_destructive: bool = True,
                 candidate: str = CANDIDATE) -> None:
        self.out = out
        self.python = python
        self.verbosity = verbosity
        self.timeout = timeout
        self.allow_destructive = allow_destructive
        #: The other run's name: mitogen_batch, or (self-check) linear once more.
        self.candidate = candidate if candidate != BASELINE else SELF_CHECK
        self.source = Source.for_python(python)
        self.trees: Dict[str, Path] = {}
        self._scratch: Optional[tempfile.TemporaryDirectory] = None

    def __enter__(self) -> "Harness":
        self.out.mkdir(parents=True, exist_ok=True)
        self._scratch = tempfile.TemporaryDirectory(prefix="ioc-targets-trees-")
        scratch = Path(self._scratch.name)
        # Same-length names: paths in the output differ only by the strategy's name.
        self.trees[BASELINE] = make_tree(self.source, scratch / "baseline", None)
        shim = LINEAR_SHIM if self.candidate == CANDIDATE else None  # self-check: stock linear
        self.trees[self.candidate] = make_tree(self.source, scratch / "candidat", shim)
        return self

    def __exit__(self, *exc) -> None:
        if self._scratch is not None:
            self._scratch.cleanup()

    def run(self, target: str) -> Outcome:
        aliases = self.source.aliases(target)  # SourceError for a name that is no target
        with contextlib.ExitStack() as machine:
            if "needs/root" in aliases:
                machine.enter_context(root_authorized_keys())
            if "needs/ssh" in aliases:
                machine.enter_context(root_ssh())
            if "needs/root" in aliases or "needs/target/setup_test_user" in aliases:
                # they become unprivileged users that run the controller's Python
                machine.enter_context(interpreter_reachable(self.python))
            # each run starts from the users and groups the target found (accounts.py),
            # without the files it writes to /tmp by name and with the paths outside
            # /tmp targets write (/etc/ansible/facts.d, ...) as they were (leftovers.py)
            accounts = machine.enter_context(same_accounts(not_the_test_suites))
            paths = machine.enter_context(restored())
            leftovers = TmpLeftovers(self.source.targets_dir / target)
            machine.callback(leftovers.remove)
            baseline = self._run_one(target, BASELINE, self.trees[BASELINE])
            accounts.restore()
            leftovers.remove()
            paths.restore()
            candidate = self._run_one(target, self.candidate, self.trees[self.candidate])
        return judge(target, baseline, candidate, self.trees)

    def _run_one(self, target: str, strategy: str, tree: Path) -> Run:
        reset_tree(tree)
        log = self.out / target / ("%s.log" % strategy)
        log.parent.mkdir(parents=True, exist_ok=True)
        argv = ansible_test_argv(self.python, tree, target, self.verbosity, self.allow_destructive)
        files = {name: log.with_name("%s.%s" % (strategy, name)) for name in STREAMS}
        started = time.monotonic()
        timed_out = False
        with open(log, "wb") as console:
            proc = subprocess.Popen(argv, cwd=str(tree), env=clean_environment(),
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True)
            assert proc.stdout is not None and proc.stderr is not None
            lock = threading.Lock()
            copies = [threading.Thread(target=_copy, args=(pipe, files[name], console, lock),
                                       daemon=True)
                      for name, pipe in zip(STREAMS, (proc.stdout, proc.stderr))]
            for copy in copies:
                copy.start()
            try:
                rc = proc.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)
                rc = proc.wait()
            for name, copy in zip(STREAMS, copies):
                copy.join(timeout=60)
                if copy.is_alive():  # a process ansible-test left holds the pipe
                    with lock:
                        console.write(b"[harness] %s still open 60 s after ansible-test ended; "
                                      b"read no further\n" % name.encode())
        seconds = time.monotonic() - started
        kept = self.out / target / ("%s.bridge.log" % strategy)
        if bridge_log(tree).exists():
            kept.write_bytes(bridge_log(tree).read_bytes())
        elif kept.exists():
            kept.unlink()
        run = Run(strategy, rc, round(seconds, 2), str(log), timed_out, tree=str(tree),
                  stdout=str(files["stdout"]), stderr=str(files["stderr"]))
        return count_steps(run)


#: The streams compared, in this order.
STREAMS = ("stdout", "stderr")


def _copy(pipe: IO[bytes], path: Path, console: IO[bytes], lock: threading.Lock) -> None:
    """One stream of a run into its file, and into the console whole lines at a time."""
    partial = b""
    with open(path, "wb") as own:
        for chunk in iter(lambda: os.read(pipe.fileno(), 65536), b""):
            own.write(chunk)
            data = partial + chunk
            cut = data.rfind(b"\n") + 1
            if cut:
                with lock:
                    console.write(data[:cut])
            partial = data[cut:]
        if partial:
            with lock:
                console.write(partial + b"\n")
    pipe.close()


def streams(run: Run) -> Dict[str, str]:
    """A run's streams by name: stdout and stderr, or (an older harness's run) its console."""
    if not run.stdout:
        return {"console": skeleton.read_log(Path(run.log))}
    return {"stdout": skeleton.read_log(Path(run.stdout)),
            "stderr": skeleton.read_log(Path(run.stderr))}


def count_steps(run: Run) -> Run:
    """``run`` with the counts of the dispatcher's log kept beside its console log."""
    plays, steps, ansible, linear = bridge_counts(
        Path(run.log).with_name("%s.bridge.log" % run.strategy))
    return dataclasses.replace(run, native_plays=plays, native_steps=steps,
                               through_ansible=ansible, linear_plays=linear)


def judge(target: str, baseline: Run, candidate: Run, trees: Dict[str, Path]) -> Outcome:
    """The verdict on two runs of one target, from their logs."""
    texts = {}
    for run in (baseline, candidate):
        texts[run.strategy] = streams(run)
    if baseline.timed_out or candidate.timed_out:
        late = [r.strategy for r in (baseline, candidate) if r.timed_out]
        return Outcome(target, "error", "timed out under %s" % " and ".join(late),
                       baseline, candidate)
    skipped = skeleton.not_run("\n".join(texts[baseline.strategy].values()))
    if skipped:
        return Outcome(target, "error", "ansible-test did not run it here: %s" % skipped,
                       baseline, candidate)
    normal = {r.strategy: skeleton.Normaliser(Path(r.tree) if r.tree else trees.get(r.strategy))
              for r in (baseline, candidate)}
    views = {s: {name: skeleton.view(text, normal[s]) for name, text in texts[s].items()}
             for s in texts}
    _write_views(Path(baseline.log).parent, views)
    a, b = views[baseline.strategy], views[candidate.strategy]
    difference = skeleton.first_difference_of_streams(
        a, baseline.rc, b, candidate.rc, names=(baseline.strategy, candidate.strategy))
    brief = skeleton.brief_difference_of_streams(a, baseline.rc, b, candidate.rc)
    if baseline.rc != 0:
        console = skeleton.read_log(Path(baseline.log))
        why = skeleton.failure_summary(console, normal[baseline.strategy])
        same = "mitogen_batch identical" if difference is None else "and differs: %s" % difference
        return Outcome(target, "error", "linear itself fails here: rc %d, %s; %s"
                       % (baseline.rc, why, same), baseline, candidate,
                       "linear fails here (rc %d)" % baseline.rc)
    if difference is None:
        return Outcome(target, "identical", "", baseline, candidate)
    return Outcome(target, "differs", "first difference: %s" % difference, baseline, candidate,
                   brief)


def _write_views(directory: Path, views: Dict[str, Dict[str, List[skeleton.Line]]]) -> None:
    """Each stream's skeletons (``<strategy>.<stream>.skeleton``) and their unified
    diffs, one stream after the other in ``skeleton.diff``, beside the logs."""
    (a, left), (b, right) = list(views.items())
    diffs: List[str] = []
    for stream in left:
        for strategy, lines in ((a, left[stream]), (b, right.get(stream, []))):
            (directory / ("%s.%s.skeleton" % (strategy, stream))).write_text(
                "\n".join(l.text for l in lines) + "\n")
        diffs.extend(difflib.unified_diff(
            [l.text for l in left[stream]], [l.text for l in right.get(stream, [])],
            "%s %s" % (a, stream), "%s %s" % (b, stream), lineterm=""))
    (directory / "skeleton.diff").write_text("\n".join(diffs) + "\n")


# -- results file and table -------------------------------------------------------


def save(out: Path, outcomes: Sequence[Outcome], meta: Dict[str, object]) -> None:
    data = {"meta": meta, "targets": [dataclasses.asdict(o) for o in outcomes]}
    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False))
    tmp.replace(out / "results.json")


def load(out: Path) -> "tuple[List[Outcome], Dict[str, object]]":
    data = json.loads((out / "results.json").read_text())
    outcomes = []
    for o in data["targets"]:
        runs = [Run(**o[k]) if o.get(k) else None for k in ("baseline", "candidate")]
        outcomes.append(Outcome(o["target"], o["result"], o["detail"], runs[0], runs[1],
                                o.get("brief", "")))
    return outcomes, data["meta"]


TABLE_START = "<!-- targets-table:start (python -m tests.targets.harness --table) -->"
TABLE_END = "<!-- targets-table:end -->"


def table(outcomes: Sequence[Outcome], meta: Dict[str, object]) -> str:
    counts: Dict[str, int] = {}
    for o in outcomes:
        counts[o.result] = counts.get(o.result, 0) + 1
    lines = [
        "Run %s: ansible-core %s (ansible-test from its sdist), Python %s, %s; "
        "`%s`." % (meta.get("date"), meta.get("ansible_core"), meta.get("python_version"),
                    meta.get("host"), meta.get("command")),
        "",
        "%d targets: %s." % (len(outcomes), ", ".join(
            "%d %s" % (counts[k], k) for k in ("identical", "differs", "error") if k in counts)),
        "",
        "| target | mitogen_batch | where | linear s | mitogen_batch s | plays native / whole linear | native steps | tasks via Ansible |",
        "| --- | --- | --- | ---: | ---: | --- | ---: | ---: |",
    ]
    for o in outcomes:
        brief = (o.brief or ("" if o.result != "error" else o.detail[:120]))
        brief = brief.replace("|", "\\|").replace("\n", " ")
        b, c = o.baseline, o.candidate
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            o.target, o.result, brief, "%.1f" % b.seconds if b else "",
            "%.1f" % c.seconds if c else "",
            "%d / %d" % (c.native_plays, c.linear_plays) if c else "",
            c.native_steps if c else "", c.through_ansible if c else ""))
    return "\n".join(lines)


def write_table(path: Path, text: str) -> None:
    """Put ``text`` between the table markers of ``path`` (appended when there are none)."""
    doc = path.read_text() if path.exists() else ""
    block = "%s\n%s\n%s" % (TABLE_START, text, TABLE_END)
    if TABLE_START in doc and TABLE_END in doc:
        head, rest = doc.split(TABLE_START, 1)
        tail = rest.split(TABLE_END, 1)[1]
        doc = head + block + tail
    else:
        doc = doc + ("\n" if doc and not doc.endswith("\n") else "") + block + "\n"
    path.write_text(doc)


# -- command line -------------------------------------------------------------------


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.targets.harness",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help="target names (default with --all: the "
                        "targets of record)")
    parser.add_argument("--all", action="store_true", help="the %d targets of record"
                        % len(TARGETS_OF_RECORD))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="logs and results.json (default %(default)s)")
    parser.add_argument("--table", type=Path, help="write the table into this markdown file")
    parser.add_argument("--recompare", action="store_true",
                        help="judge the logs already in --out again; run nothing")
    parser.add_argument("--self-check", action="store_true",
                        help="compare linear with linear (the normalisation's false positives)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help="seconds per ansible-test run (default %(default)s)")
    parser.add_argument("--verbosity", type=int, default=1,
                        help="ansible-test -v count, passed on to the targets (default 1, as "
                        "ansible-core's CI)")
    parser.add_argument("--no-destructive", action="store_true",
                        help="leave out targets ansible-test calls destructive")
    args = parser.parse_args(argv)

    if args.recompare:
        outcomes, meta = load(args.out)
        trees = {k: Path(v) for k, v in dict(meta.get("trees") or {}).items()}
        outcomes = [judge(o.target, count_steps(o.baseline), count_steps(o.candidate), trees)
                    if o.baseline and o.candidate else o for o in outcomes]
        save(args.out, outcomes, meta)
        for o in outcomes:
            print(o.line())
        if args.table:
            write_table(args.table, table(outcomes, meta))
        return 0

    targets = list(args.targets) or (list(TARGETS_OF_RECORD) if args.all else [])
    if args.all and args.targets:
        targets = list(dict.fromkeys(list(TARGETS_OF_RECORD) + list(args.targets)))
    if not targets:
        parser.error("name targets or use --all")
    try:
        python = find_python313()
        harness = Harness(args.out, python=python, verbosity=args.verbosity,
                          timeout=args.timeout, allow_destructive=not args.no_destructive,
                          candidate=BASELINE if args.self_check else CANDIDATE)
    except SourceError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 2
    meta: Dict[str, object] = {
        "date": datetime.date.today().isoformat(),
        "ansible_core": harness.source.version,
        "python": python,
        "python_version": ".".join(python.rsplit("python", 1)[1:]) or python,
        "host": "%d cores" % (os.cpu_count() or 0),
        "command": "python -m tests.targets.harness " + " ".join(
            sys.argv[1:] if argv is None else argv),
        "verbosity": args.verbosity,
    }
    outcomes: List[Outcome] = []
    with harness:
        meta["trees"] = {k: str(v) for k, v in harness.trees.items()}
        for target in targets:
            try:
                outcome = harness.run(target)
            except SourceError as exc:
                outcome = Outcome(target, "error", str(exc), None, None)
            outcomes.append(outcome)
            print(outcome.line(), flush=True)
            save(args.out, outcomes, meta)
    if args.table:
        write_table(args.table, table(outcomes, meta))
    return 0 if all(o.result == "identical" for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
