"""Run a vendored role's playbook on a pristine target under one engine, twice,
and record what a user could compare: the console, the recap, the exit code
and the host's resulting state.

Engines: ``linear`` (Ansible's own strategy), ``mitogen_batch`` (this
checkout's ``strategy_plugin/``), ``mitogen_linear`` (Mitogen for Ansible,
benchmarks only) -- each ``ansible-playbook`` of ansible-core 2.21 -- and
``ioc-run`` (``python -m ioc`` from this checkout, run by the same
interpreter, so ansible-core is importable and Ansible's modules are used).
"""
from __future__ import annotations

import dataclasses
import glob
import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from tests.realworld.prepare import collections_path
from tests.realworld.sandbox import Target
from tests.support.interpreters import find_python313

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STRATEGY_DIR = ROOT / "strategy_plugin"
ENGINES = ("linear", "mitogen_batch", "ioc-run")
#: mitogen_batch with ``IOC_PERSIST=60``: its dispatcher is the per-user warm
#: daemon, so a run after the first reuses its connections (benchmarks only).
PERSISTED = "mitogen_batch+persist"
RUN_TIMEOUT = 1800


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One vendored role applied by one playbook of this directory."""

    name: str
    playbook: str
    #: The role as a user names it, and where it comes from.
    role: str
    upstream: str
    commit: str
    licence: str
    #: Trees hashed besides /etc (content, mode, owner).
    trees: Tuple[str, ...] = ()
    #: Trees whose files change content by themselves (a daemon's data):
    #: only modes and owners are compared.
    mode_trees: Tuple[str, ...] = ()


SCENARIOS = (
    Scenario("nginx", "nginx.yml", "geerlingguy.nginx",
             "https://github.com/geerlingguy/ansible-role-nginx",
             "9616ea992897b3ed864d7b44ffbf69b160f9eb5d", "MIT", ("/var/www",)),
    Scenario("redis", "redis.yml", "geerlingguy.redis",
             "https://github.com/geerlingguy/ansible-role-redis",
             "280df2830b0414e434a02625d48119e0e74841f1", "MIT", (), ("/var/lib/redis",)),
    Scenario("php", "php.yml", "geerlingguy.php",
             "https://github.com/geerlingguy/ansible-role-php",
             "6dce2f03a8b8c7f0961c8f5c108c2bb30a0f0da2", "MIT", ()),
    Scenario("mysql", "mysql.yml", "geerlingguy.mysql",
             "https://github.com/geerlingguy/ansible-role-mysql",
             "8a84b1dd1502eb3645f90d17a8b6037c241e182c", "MIT", ("/root",)),
    Scenario("hardening", "hardening.yml", "devsec.hardening.os_hardening",
             "https://github.com/dev-sec/ansible-collection-hardening",
             "c3822fca2d101ab93a40a614d9618f69fbbb52e9", "Apache-2.0",
             ("/root", "/usr/share/pam-configs")),
)
BY_NAME = {s.name: s for s in SCENARIOS}


def ansible_python() -> str:
    """The Python 3.13 whose ``ansible-playbook`` is ansible-core 2.21."""
    python = find_python313()
    if python is None:
        raise RuntimeError("no Python 3.13 with ansible-core 2.21 (scripts/test installs it)")
    return python


def mitogen_strategy_dir(python: str) -> str:
    r = subprocess.run([python, "-c", "import ansible_mitogen, os; "
                        "print(os.path.dirname(ansible_mitogen.__file__))"],
                       capture_output=True, text=True, check=True)
    return os.path.join(r.stdout.strip(), "plugins", "strategy")


# -- one run -----------------------------------------------------------------------

#: Lines of the default callback (and ioc-run's console) that carry a task's
#: status; their JSON payload is cut off (it holds timestamps and durations).
STATUS = re.compile(r"^(PLAY \[|TASK \[|RUNNING HANDLER \[|PLAY RECAP|ok: |changed: |"
                    r"skipping: |fatal: |failed: |included: |\.\.\.ignoring|unreachable: |"
                    r"\S+ +: ok=)")
VOLATILE_LABEL = re.compile(r"('(?:atime|mtime|ctime|dev|inode)'): [0-9.]+")
#: What ansible-core prints for any third-party strategy.
STRATEGY_WARNINGS = ("[WARNING]: Deprecation warnings can be disabled by setting",
                     "[DEPRECATION WARNING]: Use of strategy plugins not included in ansible.builtin")


@dataclasses.dataclass
class Run:
    engine: str
    argv: List[str]
    rc: int
    stdout: str
    stderr: str
    seconds: float
    #: The dispatcher's log (IOC_BRIDGE_LOG), mitogen_batch only.
    log: str = ""

    def skeleton(self) -> List[str]:
        """The console's task banners and status lines, without payloads."""
        out = []
        for line in self.stdout.splitlines():
            if not STATUS.match(line):
                continue
            line = re.sub(r"\s*\*+$", "", line)
            line = line.split(" => {")[0].split(": FAILED! =>")[0]
            # An item label that is a find/stat result carries access and
            # change times, and the device and inode numbers of the target's
            # overlay (a file a run created has an inode of that target's
            # own): they move between any two runs.
            line = VOLATILE_LABEL.sub(r"\1: <varies>", line)
            out.append(line.rstrip())
        return out

    def recap(self) -> List[str]:
        lines = self.stdout.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("PLAY RECAP"):
                return [re.sub(r"\s+", " ", l).strip() for l in lines[i + 1:]
                        if re.match(r"\S+ +: ok=", l)]
        return []

    def warnings(self) -> List[str]:
        """Warning and deprecation lines (stderr), ansible-core's own strategy warning left out."""
        return [l for l in self.stderr.splitlines()
                if l.startswith("[") and not l.startswith(STRATEGY_WARNINGS)]

    def tasks_reached(self) -> int:
        return sum(1 for l in self.stdout.splitlines()
                   if l.startswith(("TASK [", "RUNNING HANDLER [")))


class Runner:
    """Builds each engine's command line and environment in one work directory."""

    def __init__(self, workdir: Path, python: Optional[str] = None) -> None:
        self.workdir = workdir
        self.python = python or ansible_python()
        self.config = workdir / "ansible.cfg"
        self.config.write_text(
            "[defaults]\n"
            "host_key_checking = False\n"
            "retry_files_enabled = False\n"
            "forks = 5\n"
            "roles_path = %s\n"
            "collections_path = %s:%s\n"
            "[ssh_connection]\n"
            "pipelining = True\n"
            "ssh_args = -C -o ControlMaster=auto -o ControlPersist=60s\n"
            % (HERE / "roles", HERE / "collections", collections_path()))
        self._mitogen_dir = ""

    def argv_env(self, engine: str, playbook: Path, inventory: Path,
                 rundir: Path) -> Tuple[List[str], Dict[str, str]]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "IOC_"))}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(ANSIBLE_CONFIG=str(self.config), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_SSH_CONTROL_PATH_DIR=str(rundir / "cp"),
                   ANSIBLE_LOCAL_TEMP=str(rundir / "tmp"),
                   PYTHONPATH=str(ROOT))
        if engine == "ioc-run":
            return [self.python, "-m", "ioc", "-i", str(inventory), str(playbook)], env
        if engine == PERSISTED:  # (benchmarks: a repeat run on the daemon's connections)
            # the same settings in every run: the daemon serves only the
            # environment it was started with (ioc.warm.fingerprint)
            steady = self.workdir / "persist"
            (steady / "cp").mkdir(parents=True, exist_ok=True)
            (steady / "bridge.log").write_text("")  # (this run's lines only)
            env.update(IOC_PERSIST="60", ANSIBLE_SSH_CONTROL_PATH_DIR=str(steady / "cp"),
                       ANSIBLE_LOCAL_TEMP=str(steady / "tmp"), ANSIBLE_STRATEGY="mitogen_batch",
                       ANSIBLE_STRATEGY_PLUGINS=str(STRATEGY_DIR),
                       IOC_BRIDGE_LOG=str(steady / "bridge.log"))
            playbook_cmd = os.path.join(os.path.dirname(self.python), "ansible-playbook")
            return [self.python, playbook_cmd, "-i", str(inventory), str(playbook)], env
        if engine == "mitogen_batch":
            env.update(ANSIBLE_STRATEGY="mitogen_batch", ANSIBLE_STRATEGY_PLUGINS=str(STRATEGY_DIR),
                       IOC_BRIDGE_LOG=str(rundir / "bridge.log"))
        elif engine == "mitogen_linear":
            if not self._mitogen_dir:
                self._mitogen_dir = mitogen_strategy_dir(self.python)
            env.update(ANSIBLE_STRATEGY="mitogen_linear", ANSIBLE_STRATEGY_PLUGINS=self._mitogen_dir)
        elif engine == "linear":
            env.update(ANSIBLE_STRATEGY="linear")
        else:
            raise ValueError("unknown engine %r" % engine)
        playbook_cmd = os.path.join(os.path.dirname(self.python), "ansible-playbook")
        return [self.python, playbook_cmd, "-i", str(inventory), str(playbook)], env

    def run(self, engine: str, playbook: Path, inventory_text: str,
            extra_args: Sequence[str] = ()) -> Run:
        rundir = Path(tempfile.mkdtemp(prefix="run-", dir=self.workdir))
        (rundir / "cp").mkdir()
        inventory = rundir / "hosts"
        inventory.write_text(inventory_text)
        argv, env = self.argv_env(engine, playbook, inventory, rundir)
        argv += list(extra_args)
        t0 = time.monotonic()
        proc = subprocess.run(argv, cwd=str(HERE), env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT)
        seconds = time.monotonic() - t0
        close_masters(rundir / "cp")
        log = (self.workdir / "persist" if engine == PERSISTED else rundir) / "bridge.log"
        run = Run(engine, argv, proc.returncode, proc.stdout, proc.stderr, seconds,
                  log.read_text() if log.exists() else "")
        shutil.rmtree(rundir, ignore_errors=True)
        return run


def stop_persisted(python: str) -> None:
    """End the warm daemon a :data:`PERSISTED` run left (its runners end with it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "IOC_"))}
    env["PYTHONPATH"] = str(ROOT)
    subprocess.run([python, "-m", "ioc", "--persist-stop"], env=env, capture_output=True,
                   stdin=subprocess.DEVNULL, timeout=60)


def close_masters(cp: Path) -> None:
    """Ask every ssh ControlPersist master a run left behind to exit."""
    for sock in glob.glob(str(cp / "*")):
        subprocess.run(["ssh", "-o", "ControlPath=%s" % sock, "-O", "exit", "x"],
                       capture_output=True, stdin=subprocess.DEVNULL, timeout=30)


# -- the host's state ----------------------------------------------------------------

#: Files that are not the role's doing: what the sandbox itself writes (our
#: sshd's keys and config, MariaDB's start timeout), the random machine id a
#: package's postinst writes, and Ansible's remote
#: temporary directory (``remote_tmp``), which linear's connection plugin
#: creates on the target and ioc's runner never needs.
VOLATILE = re.compile(r"^(/etc/ssh/ioc_|/etc/default/mariadb$|/etc/machine-id$|"
                      r"/root/\.ansible(/|$))")
#: Directories whose entries only have their mode and owner compared (the
#: hardening role changes modes of binaries; their content is the packages').
MODE_ONLY = ("/usr/bin", "/usr/sbin", "/usr/lib/openssh")


def _describe(path: Path, with_content: bool) -> str:
    st = os.lstat(path)
    kind = stat.S_IFMT(st.st_mode)
    head = "%o %d:%d" % (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
    if stat.S_ISLNK(kind):
        return "link %s -> %s" % (head, os.readlink(path))
    if stat.S_ISDIR(kind):
        return "dir %s" % head
    if stat.S_ISREG(kind):
        if not with_content:
            return "file %s" % head
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return "file %s %s" % (head, h.hexdigest()[:16])
    return "other %o %s" % (kind, head)


def _walk(target: Target, tree: str, with_content: bool) -> Dict[str, str]:
    out: Dict[str, str] = {}
    top = target.path(tree)
    if not os.path.lexists(top):
        return out
    out[tree] = _describe(top, with_content)
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        rel = "/" + os.path.relpath(dirpath, target.path("/"))
        for name in sorted(dirnames + filenames):
            inside = os.path.join(rel, name)
            if VOLATILE.match(inside):
                continue
            out[inside] = _describe(Path(dirpath) / name, with_content)
    return out


def _packages(target: Target) -> Dict[str, str]:
    out = {}
    text = target.path("/var/lib/dpkg/status").read_text(errors="replace")
    for para in text.split("\n\n"):
        fields = dict(re.findall(r"^(Package|Status|Version): (.*)$", para, re.M))
        if "Package" in fields:
            out[fields["Package"]] = "%s %s" % (fields.get("Status", ""), fields.get("Version", ""))
    return out


def snapshot(target: Target, scenario: Scenario) -> Dict[str, Dict[str, str]]:
    """What the role left on the host: files (content, mode, owner), binaries'
    modes, installed packages and running processes."""
    files: Dict[str, str] = {}
    for tree in ("/etc",) + scenario.trees:
        files.update(_walk(target, tree, True))
    modes: Dict[str, str] = {}
    for tree in MODE_ONLY + scenario.mode_trees:
        modes.update(_walk(target, tree, False))
    procs: Dict[str, str] = {}
    for name in target.processes():
        procs[name] = "running"
    return {"files": files, "modes": modes, "packages": _packages(target), "processes": procs}


def state_diff(a: Dict[str, Dict[str, str]], b: Dict[str, Dict[str, str]],
               limit: int = 40) -> List[str]:
    out = []
    for part in a:
        keys = sorted(set(a[part]) | set(b[part]))
        for key in keys:
            x, y = a[part].get(key), b[part].get(key)
            if x != y and not VOLATILE.match(key):
                out.append("%s %s: %s | %s" % (part, key, x, y))
    return out[:limit] + (["... %d more" % (len(out) - limit)] if len(out) > limit else [])


# -- one engine on one fresh host, twice ----------------------------------------------

@dataclasses.dataclass
class Outcome:
    scenario: Scenario
    engine: str
    runs: List[Run]
    states: List[Dict[str, Dict[str, str]]]


def apply_twice(runner: Runner, scenario: Scenario, engine: str) -> Outcome:
    """A fresh target; the scenario's playbook run twice (first, idempotent)."""
    runs, states = [], []
    with Target() as target:
        for _ in range(2):
            run = runner.run(engine, HERE / scenario.playbook, target.inventory())
            runs.append(run)
            states.append(snapshot(target, scenario))
    return Outcome(scenario, engine, runs, states)


def differences(reference: Outcome, other: Outcome) -> List[str]:
    """Everything a user could see differ between two engines' outcomes (empty: the same)."""
    out = []
    for i, label in enumerate(("first run", "second run")):
        a, b = reference.runs[i], other.runs[i]
        if a.rc != b.rc:
            out.append("%s: exit code %d vs %d" % (label, a.rc, b.rc))
        if a.recap() != b.recap():
            out.append("%s: recap %s vs %s" % (label, a.recap(), b.recap()))
        sa, sb = a.skeleton(), b.skeleton()
        if sa != sb:
            first = next((j for j, (x, y) in enumerate(zip(sa, sb)) if x != y), min(len(sa), len(sb)))
            out.append("%s: console differs at line %d: %r vs %r" % (
                label, first, sa[first] if first < len(sa) else None,
                sb[first] if first < len(sb) else None))
        diff = state_diff(reference.states[i], other.states[i])
        if diff:
            out.append("%s: host state differs:\n  %s" % (label, "\n  ".join(diff)))
    return out
