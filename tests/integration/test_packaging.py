"""The wheel, installed the way a user installs it, runs playbooks.

The checkout's ``pyproject.toml``, ``README.md``, ``LICENSE``, ``ioc/`` and
``strategy_plugin/`` are copied to a temporary directory and built into a
wheel with pip (``pip wheel``, build isolation on, as ``pip install .`` and
pipx build it); the wheel goes into a fresh venv of pyenv's Python 3.13 made
with ``--system-site-packages`` (ansible-core 2.21, mitogen, Jinja2 and PyYAML
come from there, as scripts/test installs them). Nothing is fetched at test
time: pip runs with ``--no-index`` and finds the build backend (setuptools) and
networkx in the wheel cache scripts/test fills (:data:`WHEELS`). Then, with no
``PYTHONPATH`` and from a directory without ``ioc/``, so that only the
installed copy can be imported:

* ``ioc-run`` runs a playbook on localhost;
* ``ansible-playbook`` runs the same playbook with ``strategy = mitogen_batch``
  from the directory ``ioc-run --strategy-dir`` prints.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from ioc import __version__
from tests.conformance.test_conformance import ansible_python

ROOT = Path(__file__).resolve().parents[2]
#: Wheels scripts/test downloads once (setuptools for the build, networkx for the venv).
WHEELS = Path(os.environ.get("IOC_WHEEL_CACHE") or os.path.expanduser("~/.cache/ioc/wheels"))
TIMEOUT = 300

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PLAYBOOK = """
- hosts: all
  gather_facts: false
  tasks:
    - name: write
      copy:
        content: "installed\\n"
        dest: "{{ out }}/{{ inventory_hostname }}.txt"
    - name: read
      command: cat {{ out }}/{{ inventory_hostname }}.txt
      register: r
      changed_when: false
    - name: show
      debug:
        msg: "read {{ r.stdout }}"
"""
RECAP = re.compile(r"^localhost +: ok=3 +changed=1 +unreachable=0 +failed=0 +skipped=0 ", re.M)


def run(argv: List[str], cwd: Path,
        env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    """``argv`` with no PYTHONPATH (conftest sets one to the checkout) and no Ansible settings."""
    environ = {k: v for k, v in os.environ.items()
               if k != "PYTHONPATH" and not k.startswith(("ANSIBLE_", "IOC_", "PIP_"))}
    environ.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_ROOT_USER_ACTION="ignore",
                   ANSIBLE_NOCOLOR="1", **(env or {}))
    return subprocess.run(argv, cwd=str(cwd), env=environ, capture_output=True, text=True,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL)


def checked(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, "%s: rc=%d\n%s\n%s" % (
        " ".join(proc.args), proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc


class Installed:
    def __init__(self, wheel: Path, venv: Path, workdir: Path) -> None:
        self.wheel = wheel
        self.venv = venv
        self.workdir = workdir
        self.python = str(venv / "bin" / "python")
        self.ioc_run = str(venv / "bin" / "ioc-run")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    if not list(WHEELS.glob("setuptools-*.whl")) or not list(WHEELS.glob("networkx-*.whl")):
        pytest.fail("no setuptools or networkx wheel in %s: scripts/test downloads them there"
                    % WHEELS, pytrace=False)
    base = tmp_path_factory.mktemp("packaging")
    source = base / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    for name in ("ioc", "strategy_plugin"):
        shutil.copytree(ROOT / name, source / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = base / "dist"
    checked(run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index",
                 "--find-links", str(WHEELS), "-w", str(dist), str(source)], cwd=base))
    wheels = list(dist.glob("*.whl"))
    assert len(wheels) == 1, wheels
    python313 = ansible_python()
    venv = base / "venv"
    checked(run([python313, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
                cwd=base))
    # The venv has no pip of its own: 3.13's pip installs into it (--python).
    checked(run([python313, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                 "-q", "--no-compile", "--no-index", "--find-links", str(WHEELS),
                 str(wheels[0])], cwd=base))
    workdir = base / "work"
    workdir.mkdir()
    (workdir / "play.yml").write_text(textwrap.dedent(PLAYBOOK).lstrip())
    (workdir / "hosts.ini").write_text(
        "localhost ansible_connection=local ansible_python_interpreter=%s\n"
        % (venv / "bin" / "python"))
    return Installed(wheels[0], venv, workdir)


def test_the_wheel_holds_the_package_the_strategy_plugin_and_the_licence(installed):
    assert installed.wheel.name == "ioc_ansible-%s-py3-none-any.whl" % __version__
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    expected = {p.relative_to(ROOT).as_posix() for p in (ROOT / "ioc").rglob("*.py")}
    expected |= {"ioc/strategy_plugin/" + p.name for p in (ROOT / "strategy_plugin").glob("*.py")}
    assert "ioc/strategy_plugin/mitogen_batch.py" in expected
    assert "ioc/ansible/connection_plugins/ioc_runner.py" in expected
    missing = sorted(expected - names)
    assert not missing, "pyproject.toml's packages leave out: %s" % missing
    dist_info = "ioc_ansible-%s.dist-info/" % __version__
    assert dist_info + "licenses/LICENSE" in names
    metadata = zipfile.ZipFile(installed.wheel).read(dist_info + "METADATA").decode()
    assert "\nName: ioc-ansible\n" in metadata
    assert "\nVersion: %s\n" % __version__ in metadata
    assert "\nLicense-Expression: GPL-3.0-or-later\n" in metadata
    assert not [n for n in names if n.startswith(("tests/", "strategy_plugin/", "benchmarks/"))]


def test_ioc_run_from_the_wheel_prints_its_versions_and_runs_a_playbook(installed):
    site = installed.venv / "lib" / "python3.13" / "site-packages"
    version = checked(run([installed.ioc_run, "--version"], cwd=installed.workdir)).stdout
    lines = version.splitlines()
    assert lines[0] == "ioc-run %s" % __version__
    assert "  ioc python module location = %s" % (site / "ioc") in lines
    assert re.search(r"^  ansible-core version = 2\.21\.\d+$", version, re.M), version
    assert re.search(r"^  mitogen version = \d+\.\d+\.\d+$", version, re.M), version

    out = installed.workdir / "ioc-run"
    out.mkdir()
    r = checked(run([installed.ioc_run, "-i", "hosts.ini", "play.yml", "-e", "out=%s" % out],
                    cwd=installed.workdir))
    assert RECAP.search(r.stdout), r.stdout
    assert '    "msg": "read installed"' in r.stdout.splitlines()
    assert (out / "localhost.txt").read_text() == "installed\n"

    # the other commands the wheel installs: ioc-adhoc, ioc-ssh
    r = checked(run([str(installed.venv / "bin" / "ioc-adhoc"), "localhost", "-a", "echo ?HOST",
                     "--failed-file", ""], cwd=installed.workdir))
    assert r.stdout == "localhost | CHANGED | rc=0 >>\nlocalhost\n1 succeeded, 0 failed, 1 total\n"
    r = run([str(installed.venv / "bin" / "ioc-ssh"), "localhost", "--", "exit 3"],
            cwd=installed.workdir)
    assert r.returncode == 3, r.stderr


def test_ansible_playbook_runs_mitogen_batch_from_the_printed_strategy_dir(installed):
    r = checked(run([installed.ioc_run, "--strategy-dir"], cwd=installed.workdir))
    strategy_dir = Path(r.stdout.strip())
    assert strategy_dir == installed.venv / "lib" / "python3.13" / "site-packages" / "ioc" \
        / "strategy_plugin"
    assert (strategy_dir / "mitogen_batch.py").is_file()

    no_ioc = run([ansible_python(), "-c", "import ioc"], cwd=installed.workdir)
    assert "No module named 'ioc'" in no_ioc.stderr, no_ioc.stderr

    out = installed.workdir / "mitogen_batch"
    out.mkdir()
    log = installed.workdir / "bridge.log"
    # The venv's Python runs ansible-playbook (ansible-core is a system site package
    # here; a plain venv or pipx install has the ansible-playbook script in bin/).
    r = checked(run([installed.python, "-m", "ansible.cli.playbook", "-i", "hosts.ini",
                     "play.yml", "-e", "out=%s" % out], cwd=installed.workdir,
                    env={"ANSIBLE_STRATEGY_PLUGINS": str(strategy_dir),
                         "ANSIBLE_STRATEGY": "mitogen_batch", "IOC_BRIDGE_LOG": str(log)}))
    assert RECAP.search(r.stdout), r.stdout
    assert '    "msg": "read installed"' in r.stdout.splitlines()
    assert (out / "localhost.txt").read_text() == "installed\n"

    # Ran natively, in one batch, by the installed copy (the only ioc this Python has).
    batches = re.findall(r"Batch \d+-\d+ on 1 host\(s\)", log.read_text())
    assert batches == ["Batch 1-3 on 1 host(s)"], log.read_text()
