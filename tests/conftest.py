"""Fixtures shared by the whole suite.

* ``sshd`` (session): a real OpenSSH server on a free loopback port with a
  throwaway key; see :class:`tests.support.sshd.SSHServer` for its API
  (``host``, ``port``, ``user``, ``client_key``, ``known_hosts``, ``ssh_args``,
  ``inventory_ini(hosts, extra="", python=None, group=None)``, ``run(cmd)``,
  ``ssh_argv(*cmd)``, ``mitogen_kwargs(name=None, python=None)``).
* ``python39`` (session): path of a real CPython 3.9 interpreter (pyenv's), the
  oldest target Python ioc supports. Fails, never skips, when there is none.
* ``tmp_playbook``: ``tmp_playbook(text, name="playbook.yml") -> pathlib.Path``
  writes a (dedented) playbook into ``tmp_path``.

The default run and the heavy run
---------------------------------
``scripts/test`` (and CI) runs everything but two heavy parts, which
``IOC_TEST_HEAVY=1 scripts/test`` adds (see README):

* ``tests/realworld`` (five public roles on pristine Debian chroots that
  debootstrap builds; ~7 worker-minutes plus ~4 minutes of debootstrap on a
  fresh machine);
* the ansible-core **2.19** runs: of the ``tests/ansible`` files outside
  :data:`FULL_MATRIX` (their 2.21 runs stay; today that is every file) and
  of ``tests/conformance``'s ``PLAYBOOKS_219`` (``mitogen_batch-2.19-*``),
  to keep CI under 30 minutes on 2 cores.

Both are deselected (counted in pytest's summary line), never skipped.

Workers
-------
``scripts/test`` runs two pytest-xdist workers, ``--dist loadfile``: each test
file runs whole on one worker, but for the conformance tests, whose units are
their playbooks (one reference ``ansible-playbook`` run each for ioc-run and
mitogen_batch): :mod:`tests.support.scheduling`.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.support import scheduling
from tests.support.sshd import start_sshd

PYTHON39_VERSION = "3.9.18"

# Every ``python -m ioc`` a test starts runs this checkout's ioc, whatever
# copy (if any) is installed: a test must test the code beside it.
_ROOT = str(Path(__file__).resolve().parents[1])
os.environ["PYTHONPATH"] = os.pathsep.join(
    [_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != _ROOT])


#: Set: the heavy run (``IOC_TEST_HEAVY=1``).
#: Content the tests run, not tests: playbooks, roles and their plugins (a
#: role's ``test_plugins/broken_test.py`` is Ansible's, named as pytest's).
collect_ignore_glob = ["conformance/playbooks/*", "targets/repro/*"]

HEAVY = bool(os.environ.get("IOC_TEST_HEAVY"))
#: tests/ansible files that run under both ansible-core releases in every run.
FULL_MATRIX: tuple = ()


def pytest_ignore_collect(collection_path, config):
    if not HEAVY and collection_path.name == "realworld" and collection_path.parent.name == "tests":
        return True
    return None


def pytest_collection_modifyitems(config, items):
    if HEAVY:
        return
    keep, heavy = [], []
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        params = getattr(getattr(item, "callspec", None), "params", {})
        if (path.startswith("tests/ansible/") and path not in FULL_MATRIX
                and params.get("ansible_python") == "2.19") \
                or params.get("engine") == "mitogen_batch-2.19":
            heavy.append(item)
        else:
            keep.append(item)
    if heavy:
        config.hook.pytest_deselected(items=heavy)
        items[:] = keep


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``, with a conformance playbook's tests as one unit."""
    if config.getvalue("dist") == "loadfile":
        return scheduling.make_scheduler(config, log)
    return None


def pytest_report_header(config):
    if HEAVY:
        return "heavy run (IOC_TEST_HEAVY=1): tests/realworld and every ansible-core 2.19 run"
    outside = " outside %s" % ", ".join(FULL_MATRIX) if FULL_MATRIX else ""
    return ("default run: tests/realworld and the ansible-core 2.19 runs of tests/ansible%s "
            "are left to IOC_TEST_HEAVY=1 (deselected)" % outside)


@pytest.fixture(scope="session")
def sshd():
    server = start_sshd()
    try:
        yield server
    finally:
        server.stop()


def _pyenv_root() -> str:
    return os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")


def _find_python39():
    candidates = []
    pyenv = shutil.which("pyenv") or os.path.join(_pyenv_root(), "bin", "pyenv")
    if os.access(pyenv, os.X_OK):
        try:
            r = subprocess.run([pyenv, "prefix", PYTHON39_VERSION], capture_output=True,
                               text=True, timeout=30, stdin=subprocess.DEVNULL)
            if r.returncode == 0 and r.stdout.strip():
                candidates.append(os.path.join(r.stdout.strip(), "bin", "python3.9"))
        except (OSError, subprocess.SubprocessError):
            pass
    candidates += sorted(glob.glob(os.path.join(_pyenv_root(), "versions", "3.9*", "bin",
                                                "python3.9")), reverse=True)
    which = shutil.which("python3.9")
    if which:
        candidates.append(which)
    for path in candidates:
        if not os.access(path, os.X_OK):
            continue
        r = subprocess.run([path, "-c", "import sys; print(sys.version_info[:2] == (3, 9))"],
                           capture_output=True, text=True, timeout=30)
        if r.returncode == 0 and r.stdout.strip() == "True":
            return path
    return None


@pytest.fixture(scope="session")
def python39() -> str:
    path = _find_python39()
    if path is None:
        pytest.fail(
            "no Python 3.9 interpreter found (tried `pyenv prefix %s`, %s/versions/3.9*/"
            "bin/python3.9 and python3.9 on PATH). ioc's runner must work on 3.9 targets "
            "and the integration tests need a real one: `pyenv install %s`."
            % (PYTHON39_VERSION, _pyenv_root(), PYTHON39_VERSION),
            pytrace=False,
        )
    return path


@pytest.fixture
def tmp_playbook(tmp_path):
    def write(text: str, name: str = "playbook.yml") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
        return path

    return write
