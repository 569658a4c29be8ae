"""Run a reproducer playbook under ``linear`` and ``mitogen_batch`` on localhost and compare.

    python -m tests.targets.reproduce tests/targets/repro/<name>.yml [...]
    python -m tests.targets.reproduce --show tests/targets/repro/<name>.yml

Each file of ``tests/targets/repro/`` is a small playbook that shows one
difference the harness found in ansible-core's targets, without ansible-test.
Its header comments say how to run it (all optional)::

    # inventory: testhost ansible_connection=local ansible_python_interpreter={{ ansible_playbook_python }}
    # env: ANSIBLE_FORCE_HANDLERS=1
    # args: -v
    # cwd: private

``inventory`` lines make the inventory (default: ``testhost`` with
``ansible_connection=local`` and the interpreter running ansible-playbook,
as ansible-test's controller inventory has it; ``@python@`` in a line is that
interpreter's path); ``env`` adds environment
variables; ``args`` adds ansible-playbook arguments. ``out_dir`` (an extra
variable) is an empty directory of each run's own, for files a playbook writes.
``cwd: private`` runs a copy of the reproducer, from a 0700 directory of the
run's own (ansible-test runs a target from a tree under a ``mkdtemp``
directory, which a become user cannot read: a local connection starts
modules in the playbook's directory). Both runs use
ansible-core 2.21 on Python 3.13 with what ansible-test sets for every
target (``ANSIBLE_FORCE_HANDLERS``, …: :data:`ANSIBLE_TEST_ENV`), linear with
its stock strategy and the other with ``ANSIBLE_STRATEGY=mitogen_batch``. The
verdict is the harness's (:mod:`tests.targets.skeleton`): exit code and
console skeleton. ``--show`` prints both consoles too.
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from tests.targets import skeleton
from tests.targets.source import find_python313

ROOT = Path(__file__).resolve().parents[2]
#: What ansible-test's ``ansible_environment`` sets for every target that matters here.
ANSIBLE_TEST_ENV = {
    "ANSIBLE_FORCE_HANDLERS": "true",
    "ANSIBLE_HOST_PATTERN_MISMATCH": "error",
    "ANSIBLE_DEPRECATION_WARNINGS": "false",
    "ANSIBLE_HOST_KEY_CHECKING": "false",
    "ANSIBLE_RETRY_FILES_ENABLED": "false",
    "ANSIBLE_FORCE_COLOR": "false",
    "ANSIBLE_NOCOLOR": "1",
}
_HEADER = re.compile(r"^#\s*(inventory|env|args|cwd):\s?(.*)$")


class Reproducer:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.inventory: List[str] = []
        self.env: Dict[str, str] = {}
        self.args: List[str] = []
        self.private_cwd = False
        for line in path.read_text().splitlines():
            match = _HEADER.match(line)
            if not match:
                continue
            key, value = match.groups()
            if key == "inventory":
                self.inventory.append(value)
            elif key == "cwd":
                self.private_cwd = value.strip() == "private"
            elif key == "env":
                name, _, val = value.partition("=")
                self.env[name.strip()] = val.strip()
            else:
                self.args.extend(shlex.split(value))

    def inventory_text(self, python: str) -> str:
        lines = self.inventory or [
            "testhost ansible_connection=local ansible_python_interpreter=@python@"]
        return "\n".join(lines).replace("@python@", python) + "\n"


def run(repro: Reproducer, strategy: str, python: str, workdir: Path) -> Tuple[int, str]:
    """ansible-playbook on the reproducer under one strategy: (exit code, stdout+stderr)."""
    inventory = workdir / "inventory"
    inventory.write_text(repro.inventory_text(python))
    # (not PYTHONUNBUFFERED either: under ansible-test stdout is a block-buffered pipe)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANSIBLE_", "IOC_")) and k not in ("PYTHONPATH", "PYTHONUNBUFFERED")}
    env.update(ANSIBLE_TEST_ENV)
    env["PYTHONPATH"] = str(ROOT)
    env["ANSIBLE_LOCAL_TEMP"] = str(workdir / "local-tmp")
    if strategy == "mitogen_batch":
        env["ANSIBLE_STRATEGY_PLUGINS"] = str(ROOT / "strategy_plugin")
        env["ANSIBLE_STRATEGY"] = "mitogen_batch"
    env.update(repro.env)
    playbook = os.path.join(os.path.dirname(python), "ansible-playbook")
    out_dir = workdir / "out"
    out_dir.mkdir()
    path = repro.path
    if repro.private_cwd:
        private = workdir / "private"
        private.mkdir(mode=0o700)
        path = private / repro.path.name
        path.write_bytes(repro.path.read_bytes())
    proc = subprocess.run([python, playbook, "-i", str(inventory), "-e", "out_dir=%s" % out_dir,
                           str(path), *repro.args],
                          cwd=str(path.parent), env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    return proc.returncode, proc.stdout.decode("utf-8", errors="replace")


def compare(path: Path, python: Optional[str] = None, show: bool = False) -> Optional[str]:
    """The first difference between the two runs of a reproducer (None: identical)."""
    python = python or find_python313()
    repro = Reproducer(path)
    outputs = {}
    for strategy in ("linear", "mitogen_batch"):
        with tempfile.TemporaryDirectory(prefix="ioc-repro-") as tmp:
            rc, text = run(repro, strategy, python, Path(tmp))
            normaliser = skeleton.Normaliser(Path(tmp))
            outputs[strategy] = (rc, text, skeleton.view(text, normaliser))
        if show:
            print("==== %s (rc %d)\n%s" % (strategy, rc, text))
    (rc_a, _, a), (rc_b, _, b) = outputs["linear"], outputs["mitogen_batch"]
    return skeleton.first_difference(a, rc_a, b, rc_b)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.targets.reproduce",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("playbooks", nargs="+", type=Path)
    parser.add_argument("--show", action="store_true", help="print both consoles")
    args = parser.parse_args(argv)
    python = find_python313()
    for path in args.playbooks:
        difference = compare(path.resolve(), python, args.show)
        print("%-48s %s" % (path.name, "identical" if difference is None
                            else "differs (first difference: %s)" % difference), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
