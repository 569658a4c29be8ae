"""Conformance: the same playbook under ansible-playbook (linear), ioc-run and mitogen_batch.

Each ``playbooks/*.yml`` starts with a comment header::

    # covers: L2.4 L2.6        rules of shared/reference/linear-semantics.md
    # hosts: local2            local2 = h1, h2 with ansible_connection=local
                               ssh3   = h1..h3 on the real sshd fixture
                               ssh2u  = h1, h2 on it and u1 on a closed port
                               ssh2s  = h1, h2 on it and s1 on a port that never answers
                               ssh2d  = h1, h2 on it and d1 on an sshd the playbook kills
    # args: --check            optional: extra command-line arguments (both engines)
    # env: ANSIBLE_X=1          optional: environment variables of every run (Ansible settings)

Both engines run at once (one after the other for ``ssh2d``), each in a fresh copy of ``playbooks/`` with the same
inventory, ``-e out_dir=<its own tmp dir>`` and forks 5. The normalised event
sequences (``normalize.py``), the recap, the exit codes and the file trees
under ``out_dir`` must be equal. Known differences of ioc are strict xfails
listed in ``known_differences.py``.

The third engine, ``mitogen_batch``, is ansible-playbook itself with
``strategy = mitogen_batch`` (``strategy_plugin/``): its events come from the
same ``ioc_jsonl`` callback as the linear run's. Its known differences are the
separate mapping ``KNOWN_DIFFERENCES_PLUGIN``.

The reference is ansible-core 2.21 (pyenv's Python 3.13). The strategy also
supports ansible-core 2.19: ``mitogen_batch-2.19`` runs the playbooks of
``PLAYBOOKS_219`` under 2.19 (the venv scripts/test makes from Python 3.11)
and compares with 2.19's own linear run, never with 2.21's
(``KNOWN_DIFFERENCES_PLUGIN_219``). Test ids: ``<name>`` (ioc-run),
``mitogen_batch-<name>``, ``mitogen_batch-2.19-<name>``.
"""
from __future__ import annotations

import difflib
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import pytest

from tests.conformance import console, normalize as norm
from tests.support.interpreters import find_python313, pyenv_root
from tests.conformance.known_differences import (KNOWN_CONSOLE_DIFFERENCES, KNOWN_DIFFERENCES,
                                                 KNOWN_DIFFERENCES_PLUGIN,
                                                 KNOWN_DIFFERENCES_PLUGIN_219)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PLAYBOOKS = HERE / "playbooks"
CALLBACKS = HERE / "ansible_plugins" / "callback"
STRATEGY_PLUGINS = ROOT / "strategy_plugin"
ENGINES = ("ioc-run", "mitogen_batch", "mitogen_batch-2.19")
ANSIBLE_PYTHON_VERSION = "3.13"
#: The reference ansible-core (on pyenv's Python 3.13).
ANSIBLE_CORE = "2.21"
#: The other supported ansible-core, in a venv of Python 3.11 that scripts/test makes.
ANSIBLE_CORE_219 = "2.19"
ANSIBLE_219_VENV = os.environ.get("IOC_ANSIBLE_219_VENV") or os.path.expanduser(
    "~/.cache/ioc/ansible-core-2.19")
#: The playbooks mitogen_batch also runs under ansible-core 2.19 (against 2.19's
#: linear): loops, blocks/rescue/always, handlers, register/until, facts,
#: delegate_to/run_once, failures, ssh and unreachable hosts, no_log.
PLAYBOOKS_219 = (
    "role_privacy",
    "role_privacy_public",
    "become_unreadable_directory",
    "assert_broken_conditional",
    "block_always_unrescued",
    "block_rescue_ssh",
    "changed_failed_when",
    "clear_host_errors_earlier_play",
    "condition_embedded_template",
    "controller_file_missing",
    "delegate_run_once",
    "delegated_vars_seen",
    "facts_gathered",
    "failure_later_plays",
    "filter_results_tuples",
    "handlers_flush",
    "handlers_listen_order",
    "handlers_rescued_flush",
    "handlers_role_scope",
    "include_dynamic",
    "include_dynamic_failures",
    "include_params_precedence",
    "include_role_dynamic",
    "loop_control",
    "loop_variable_in_use",
    "loop_item_failure",
    "meta_refresh_inventory",
    "meta_refresh_inventory_changes",
    "no_log",
    "no_log_templated_skip",
    "outside_the_play",
    "plugin_error_value_origin",
    "reference_p8",
    "registered_shapes",
    "rescued_yet_left_out",
    "role_names_include_role",
    "start_at_task_pattern",
    "template_file_errors",
    "to_yaml_vaulted",
    "trusted_template_result",
    "unreachable",
    "untrusted_module_output",
    "until_exhausted",
    "first_found_in_batch",
    "untrusted_values",
)
TIMEOUT = 180

pytestmark = pytest.mark.conformance


# -- the reference engine --------------------------------------------------------


def _find_python_219() -> Optional[str]:
    python = os.path.join(ANSIBLE_219_VENV, "bin", "python")
    return python if os.access(python, os.X_OK) else None


def ansible_python(core: str = ANSIBLE_CORE) -> str:
    """The Python whose ansible-playbook is ansible-core ``core`` (2.21 or 2.19); fails if none."""
    if core == ANSIBLE_CORE:
        python = find_python313()
        where = ("no Python 3.13 interpreter found (tried `pyenv prefix 3.13` and "
                 "%s/versions/3.13*/bin/python3.13): `pyenv install 3.13`, then scripts/test "
                 "installs ansible-core %s into it" % (pyenv_root(), core))
    elif core == ANSIBLE_CORE_219:
        python = _find_python_219()
        where = ("no %s/bin/python: scripts/test makes that venv (ansible-core %s, mitogen) "
                 "from Python 3.11" % (ANSIBLE_219_VENV, core))
    else:
        raise AssertionError("no ansible-core %s installation is known" % core)
    if python is None:
        pytest.fail(where, pytrace=False)
    return python


_VERSIONS_SEEN: Dict[str, str] = {}


def ansible_playbook_argv(core: str = ANSIBLE_CORE) -> List[str]:
    """``[python, .../ansible-playbook]`` of ansible-core ``core``, checked once per session."""
    python = ansible_python(core)
    argv = [python, os.path.join(os.path.dirname(python), "ansible-playbook")]
    if core not in _VERSIONS_SEEN:
        try:
            r = subprocess.run(argv + ["--version"], capture_output=True, text=True, timeout=60,
                               stdin=subprocess.DEVNULL)
            version = r.stdout
        except OSError as exc:
            version = str(exc)
        if not re.search(r"\[core %s\.\d+\]" % re.escape(core), version):
            pytest.fail("ansible-core %s.x is not installed for %s (scripts/test installs it): %s"
                        % (core, python, version.strip()[:300]), pytrace=False)
        _VERSIONS_SEEN[core] = version
    return argv


@pytest.fixture(scope="session")
def ansible_playbook() -> List[str]:
    """The reference ansible-playbook (ansible-core 2.21)."""
    return ansible_playbook_argv(ANSIBLE_CORE)


# -- playbooks -----------------------------------------------------------------------


def read_header(path: Path) -> Dict[str, str]:
    header: Dict[str, str] = {}
    for line in path.read_text().splitlines():
        m = re.match(r"#\s*(\w+):\s*(.*)$", line)
        if not m:
            break
        header[m.group(1)] = m.group(2).strip()
    return header


def _params(engines=ENGINES):
    names = sorted(p.stem for p in PLAYBOOKS.glob("*.yml"))
    for known in (KNOWN_DIFFERENCES, KNOWN_DIFFERENCES_PLUGIN, KNOWN_DIFFERENCES_PLUGIN_219,
                  *KNOWN_CONSOLE_DIFFERENCES.values()):
        for name in set(known) - set(names):
            raise AssertionError("known_differences.py names a playbook that does not exist: %s"
                                 % name)
    for name in set(PLAYBOOKS_219) - set(names):
        raise AssertionError("PLAYBOOKS_219 names a playbook that does not exist: %s" % name)
    for engine in engines:
        known = {"ioc-run": KNOWN_DIFFERENCES, "mitogen_batch": KNOWN_DIFFERENCES_PLUGIN,
                 "mitogen_batch-2.19": KNOWN_DIFFERENCES_PLUGIN_219}[engine]
        for name in names if engine != "mitogen_batch-2.19" else PLAYBOOKS_219:
            reason = known.get(name)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            # ioc-run keeps its plain ids (``-k handlers``); the plugin's are prefixed.
            test_id = name if engine == "ioc-run" else "%s-%s" % (engine, name)
            yield pytest.param(engine, name, marks=marks, id=test_id)


def inventory(kind: str, request) -> Tuple[str, List[str]]:
    if kind == "local2":
        hosts = ["h1", "h2"]
        lines = ["[web]"] + ["%s ansible_connection=local ansible_python_interpreter=%s"
                             % (h, sys.executable) for h in hosts]
        return "\n".join(lines) + "\n", hosts
    if kind == "ssh3":
        sshd = request.getfixturevalue("sshd")
        hosts = ["h1", "h2", "h3"]
        return sshd.inventory_ini(hosts, group="web"), hosts
    if kind == "ssh2u":
        # h1, h2 on the sshd fixture and u1 on a closed port (always unreachable).
        sshd = request.getfixturevalue("sshd")
        dead = sshd.inventory_ini(["u1"]).replace("ansible_port=%d" % sshd.port, "ansible_port=1")
        return "[web]\n" + sshd.inventory_ini(["h1", "h2"]) + dead, ["h1", "h2", "u1"]
    if kind == "ssh2s":
        # h1, h2 on the sshd fixture and s1 on a port that accepts TCP and never
        # answers (the kernel completes the handshake; nobody reads), 3 s timeout.
        sshd = request.getfixturevalue("sshd")
        port = request.getfixturevalue("silent_port")
        silent = sshd.inventory_ini(["s1"], "ansible_timeout=3").replace(
            "ansible_port=%d" % sshd.port, "ansible_port=%d" % port)
        return "[web]\n" + sshd.inventory_ini(["h1", "h2"]) + silent, ["h1", "h2", "s1"]
    if kind == "ssh2d":
        # h1, h2 on the sshd fixture and d1 on a sshd of its own that the playbook
        # kills mid-play with the command in d1's variable mortal_kill (run it
        # delegated to localhost); check_playbook revives it before each run.
        sshd = request.getfixturevalue("sshd")
        mortal = request.getfixturevalue("mortal_sshd")
        mortal.revive()
        return ("[web]\n" + sshd.inventory_ini(["h1", "h2"])
                + mortal.inventory_ini(["d1"], "mortal_kill=%s" % shlex.quote(
                    mortal.kill_command)), ["h1", "h2", "d1"])
    raise AssertionError("unknown '# hosts:' %r (local2, ssh3, ssh2u, ssh2s or ssh2d)" % kind)


#: Inventories whose playbooks change the world their hosts live in (ssh2d
#: kills d1's sshd): the reference and the candidate run one after the other,
#: each against a revived host, never at once.
SEQUENTIAL = {"ssh2d": "mortal_sshd"}


# -- running -------------------------------------------------------------------------


class EngineRun:
    def __init__(self, name: str, base: Path, playbook: str, inventory_text: str) -> None:
        self.name = name
        self.base = base
        self.work = base / "work"
        self.out = base / "out"
        self.events_path = base / "events.jsonl"
        shutil.copytree(PLAYBOOKS, self.work)
        self.out.mkdir()
        (self.work / "hosts.ini").write_text(inventory_text)
        self.playbook = playbook
        self.proc: Optional[subprocess.Popen] = None
        self.rc: Optional[int] = None
        self.output = ""

    def common_args(self, extra: List[str]) -> List[str]:
        return [self.playbook, "-i", "hosts.ini", "-f", "5", "-e", "out_dir=%s" % self.out,
                *extra]

    def start(self, argv: List[str], env: Dict[str, str]) -> None:
        self.log = open(self.base / "output.txt", "w+")
        self.proc = subprocess.Popen(argv, cwd=str(self.work), env=env, stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def wait(self) -> None:
        assert self.proc is not None
        try:
            self.rc = self.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("%s timed out after %ss" % (self.name, TIMEOUT))
        finally:
            self.log.seek(0)
            self.output = self.log.read()
            self.log.close()


def ansible_env(events: Path, config: Path) -> Dict[str, str]:
    env = dict(os.environ)
    for key in list(env):
        if key.startswith("ANSIBLE_"):
            del env[key]
    env.update({
        "ANSIBLE_STRATEGY": "linear",
        "ANSIBLE_HOST_KEY_CHECKING": "False",
        "ANSIBLE_PIPELINING": "True",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_STDOUT_CALLBACK": "default",
        "ANSIBLE_CALLBACK_PLUGINS": str(CALLBACKS),
        "ANSIBLE_CALLBACKS_ENABLED": "ioc_jsonl",
        "ANSIBLE_FORKS": "5",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_CONFIG": str(config),  # an empty one: no ansible.cfg from anywhere else
        "IOC_JSONL": str(events),
    })
    return env


def mitogen_batch_env(events: Path, config: Path) -> Dict[str, str]:
    """ansible_env() with the strategy plugin: the only change an Ansible user makes."""
    env = ansible_env(events, config)
    env.update({"ANSIBLE_STRATEGY": "mitogen_batch",
                "ANSIBLE_STRATEGY_PLUGINS": str(STRATEGY_PLUGINS)})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def ioc_env(config: Path) -> Dict[str, str]:
    env = dict(os.environ)
    # the Ansible settings of ansible_env() that word what ioc-run prints, and
    # its (empty) ansible.cfg: ioc-run reads Ansible's configuration the same way
    env.update({"ANSIBLE_PIPELINING": "True", "ANSIBLE_HOST_KEY_CHECKING": "False",
                "ANSIBLE_CONFIG": str(config)})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def _diff(a: List[str], b: List[str], engine: str = "ioc-run") -> str:
    return "\n".join(difflib.unified_diff(a, b, "ansible-playbook", engine, lineterm="", n=2))


@pytest.mark.parametrize("engine, name", list(_params(("ioc-run",))))
def test_playbook_conforms(engine, name, tmp_path, request):
    """ioc-run against ansible-playbook (mitogen_batch's runs are
    test_conformance_mitogen_batch.py; scripts/test runs a playbook's tests of
    both files on one worker: tests/support/scheduling.py)."""
    check_playbook(engine, name, tmp_path, request)


class _Reference(NamedTuple):
    """What ansible-playbook's run of a playbook left, normalised: what each
    front end's run is compared with."""
    events: list
    recap: Any
    rc: Optional[int]
    tree: dict
    console: List[str]
    output: str

    @classmethod
    def of(cls, run: "EngineRun", hosts: List[str]) -> "_Reference":
        events, recap = norm.normalize(norm.load(run.events_path), workdir=run.work,
                                       out_dir=run.out, host_order=hosts)
        tree = {k: _relocate(v, run.out) for k, v in norm.file_tree(run.out).items()}
        return cls(events, recap, run.rc, tree,
                   console.normalize(run.output, run.work, run.out, hosts), run.output)


#: The reference run of each playbook, made once per pytest process:
#: (ansible-playbook, playbook, inventory, extra arguments) -> :class:`_Reference`,
#: reused by the playbook's other front ends run by the same process (under
#: scripts/test's xdist workers, all of them: tests/support/scheduling.py). Kept on
#: pytest's config, which every test of the worker shares: this module
#: is imported twice (pytest imports it as ``test_conformance``, the
#: mitogen_batch file as ``tests.conformance.test_conformance``), so a
#: module-level dict would be two dicts.
_REFERENCES_ATTR = "_ioc_conformance_references"


def _references(request) -> Dict[tuple, "_Reference"]:
    config = request.config
    if not hasattr(config, _REFERENCES_ATTR):
        setattr(config, _REFERENCES_ATTR, {})
    return getattr(config, _REFERENCES_ATTR)


def check_playbook(engine: str, name: str, tmp_path: Path, request) -> None:
    # mitogen_batch-2.19: 2.19's mitogen_batch against 2.19's linear; else 2.21.
    ansible_playbook = ansible_playbook_argv(
        ANSIBLE_CORE_219 if engine.endswith("-" + ANSIBLE_CORE_219) else ANSIBLE_CORE)
    path = PLAYBOOKS / (name + ".yml")
    header = read_header(path)
    assert "covers" in header and "hosts" in header, \
        "%s needs '# covers:' and '# hosts:' header lines" % path.name
    inventory_text, hosts = inventory(header["hosts"], request)
    extra = header.get("args", "").split()
    settings = dict(item.split("=", 1) for item in header.get("env", "").split())

    key = (tuple(ansible_playbook), name, inventory_text, tuple(extra), tuple(settings.items()))
    references = _references(request)
    ans = EngineRun("ansible-playbook", tmp_path / "ansible", path.name, inventory_text)
    ioc = EngineRun(engine, tmp_path / "ioc", path.name, inventory_text)
    config = ans.base / "ansible.cfg"
    config.write_text("[defaults]\n")
    mortal = SEQUENTIAL.get(header["hosts"])
    if key not in references:
        ans.start(ansible_playbook + ans.common_args(extra),
                  {**ansible_env(ans.events_path, config), **settings})
        if mortal:
            ans.wait()
            request.getfixturevalue(mortal).revive()
    if engine.startswith("mitogen_batch"):
        ioc.start(ansible_playbook + ioc.common_args(extra),
                  {**mitogen_batch_env(ioc.events_path, config), **settings})
    else:
        ioc.start([sys.executable, "-m", "ioc", *ioc.common_args(extra),
                   "--events", str(ioc.events_path)], {**ioc_env(config), **settings})
    if key not in references:
        try:
            if not mortal:
                ans.wait()
        finally:
            ioc.wait()
        reference = _Reference.of(ans, hosts)
        assert reference.events, "ansible-playbook wrote no events (rc=%s):\n%s" % (
            ans.rc, ans.output[-3000:])
        references[key] = reference
    else:
        ioc.wait()
    ref = references[key]

    i_events, i_recap = norm.normalize(norm.load(ioc.events_path), workdir=ioc.work,
                                       out_dir=ioc.out, host_order=hosts)
    context = "\n--- ansible-playbook output (tail):\n%s\n--- %s output (tail):\n%s" % (
        ref.output[-1500:], engine, ioc.output[-1500:])
    if ref.events != i_events:
        pytest.fail("event sequences differ:\n%s%s" % (_diff(ref.events, i_events, engine), context),
                    pytrace=False)
    assert ref.recap == i_recap, "recaps differ: %s != %s" % (ref.recap, i_recap)
    assert ref.rc == ioc.rc, "exit codes differ: ansible-playbook %s, %s %s%s" % (
        ref.rc, engine, ioc.rc, context)

    i_tree = {k: _relocate(v, ioc.out) for k, v in norm.file_tree(ioc.out).items()}
    assert ref.tree == i_tree, "files under out_dir differ"

    # What the user reads: the default callback's console (console.py says what is normalised).
    a_console = ref.console
    i_console = console.normalize(ioc.output, ioc.work, ioc.out, hosts)
    known = KNOWN_CONSOLE_DIFFERENCES[engine].get(name)
    if a_console == i_console:
        assert not known, "the console is the same now: remove %s from " \
            "KNOWN_CONSOLE_DIFFERENCES[%r] (%s)" % (name, engine, known)
    elif known:
        pytest.xfail("console: " + known)
    else:
        pytest.fail("consoles differ:\n%s" % _diff(a_console, i_console, engine), pytrace=False)


def _relocate(entry, out: Path):
    kind, mode, content = entry
    if isinstance(content, str):
        content = content.replace(str(out), "<out>")
    return kind, mode, content
