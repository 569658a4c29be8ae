"""ansible-core's source distribution: where its integration targets and ansible-test live.

``scripts/test`` fetches the sdist of the ansible-core release installed in the
Python 3.13 interpreter (``pip download --no-deps --no-binary :all:``) into
``~/.cache/ioc/ansible-core-src/`` (``IOC_ANSIBLE_SRC_CACHE`` names another
directory), extracts it once, and adds the ``bin/`` entry points a git
checkout of ansible-core has and the sdist leaves out (ansible-test, run from
source, puts ``<root>/bin`` first on ``PATH`` for ``runme.sh`` targets). Nothing
of it is in git.

The harness never runs ansible-test in that pristine copy: :func:`make_tree`
copies it once per strategy and run, because ansible-test writes its results
and the targets' ``output_dir`` inside the tree it runs from, and puts the
tree's ``test/support/integration/plugins/strategy`` directory (when it exists)
on ``ANSIBLE_STRATEGY_PLUGINS`` (``ansible_util.configure_plugin_paths``) —
the one place through which a strategy reaches every ``ansible-playbook`` a
target starts (ansible-test passes no ``ANSIBLE_*`` variable of its own
environment on).

The one line of ansible-test a tree changes (:data:`SPLIT_STREAMS`, the same
in both trees): ansible-test runs ``runme.sh`` and a role's playbook with
their stdout and stderr on one pipe, which it copies to its own stdout
("to maintain output ordering"); a tree's ansible-test gives them two pipes,
each copied to its own stream (its ``OutputStream.ORIGINAL``, which it uses
when delegating), so that the harness sees the two streams apart. Where a
target splits them itself (callback_default's two ``tee`` processes), the
order of the merged pipe was the timing of those two processes.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from tests.support import interpreters

#: The directory scripts/test fetches source distributions into.
CACHE = Path(os.environ.get("IOC_ANSIBLE_SRC_CACHE")
             or os.path.expanduser("~/.cache/ioc/ansible-core-src"))
#: Written last by scripts/test: the extraction and the bin/ links are complete.
READY_MARKER = ".ioc-ready"
#: The strategy plugin directory ansible-test configures, relative to a tree.
STRATEGY_DIR = Path("test/support/integration/plugins/strategy")
#: The shim that makes ``linear`` resolve to mitogen_batch (see its docstring).
LINEAR_SHIM = Path(__file__).resolve().parent / "linear_is_mitogen_batch" / "linear.py"


class SourceError(RuntimeError):
    """The ansible-core source distribution or its interpreter is missing or does not match."""


def find_python313() -> str:
    """The Python 3.13 interpreter that has ansible-core 2.21 (scripts/test installs it)."""
    python = interpreters.find_python313()
    if python is None:
        raise SourceError("no Python 3.13 interpreter under %s (scripts/test needs one for "
                          "ansible-core 2.21)" % interpreters.pyenv_root())
    return python


def installed_version(python: str) -> str:
    proc = subprocess.run([python, "-c", "import ansible.release as r; print(r.__version__)"],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise SourceError("ansible-core is not importable by %s: %s"
                          % (python, proc.stderr.strip()[-300:]))
    return proc.stdout.strip()


@dataclasses.dataclass(frozen=True)
class Source:
    """An extracted ansible-core sdist, made runnable by scripts/test."""

    root: Path
    version: str

    @classmethod
    def for_python(cls, python: str) -> "Source":
        """The sdist of the release ``python`` has installed (one version: tests and code agree)."""
        version = installed_version(python)
        root = CACHE / ("ansible_core-%s" % version)
        if not (root / READY_MARKER).exists():
            raise SourceError("%s is not there: scripts/test fetches the ansible-core %s source "
                              "distribution (run it once)" % (root, version))
        return cls(root, version)

    @property
    def targets_dir(self) -> Path:
        return self.root / "test" / "integration" / "targets"

    def target_names(self) -> List[str]:
        return sorted(p.name for p in self.targets_dir.iterdir() if (p / "aliases").exists())

    def aliases(self, target: str) -> List[str]:
        """The target's ``aliases`` entries, comments stripped."""
        path = self.targets_dir / target / "aliases"
        if not path.exists():
            raise SourceError("ansible-core %s has no integration target %r" % (self.version, target))
        return [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()
                if line.split("#", 1)[0].strip()]

    def kind(self, target: str) -> str:
        """``script`` (a runme.sh) or ``role`` (ansible-test writes a playbook running the role)."""
        return "script" if (self.targets_dir / target / "runme.sh").exists() else "role"


#: ansible-test's ``raw_command``: the output stream of a command whose output
#: it neither captures nor hands to a terminal, as written and as a tree has it.
SPLIT_STREAMS = (
    Path("test/lib/ansible_test/_internal/util.py"),
    "    output_stream = output_stream or OutputStream.AUTO\n",
    "    output_stream = output_stream or (OutputStream.AUTO if capture or interactive\n"
    "                                      else OutputStream.ORIGINAL)  # ioc: streams apart\n",
)


def make_tree(source: Source, dest: Path, strategy_shim: Optional[Path]) -> Path:
    """A private copy of the source tree for one strategy.

    Both trees get the strategy plugin directory so that the two environments
    differ only in what it holds: nothing (the builtin ``linear`` runs), or a
    link to ``strategy_shim`` (``linear`` is mitogen_batch). Both trees'
    ansible-test keep a target's stdout and stderr apart (:data:`SPLIT_STREAMS`).
    """
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(source.root, dest, symlinks=True)
    path, written, split = SPLIT_STREAMS
    code = (dest / path).read_text()
    if code.count(written) != 1:
        raise SourceError("%s: ansible-test's line %r is not there once; the harness cannot keep "
                          "stdout and stderr apart" % (dest / path, written.strip()))
    (dest / path).write_text(code.replace(written, split))
    strategy_dir = dest / STRATEGY_DIR
    strategy_dir.mkdir(parents=True, exist_ok=True)
    if strategy_shim is not None:
        (strategy_dir / strategy_shim.name).symlink_to(strategy_shim)
    return dest


def bridge_log(tree: Path) -> Path:
    """Where the shim sends the dispatcher's log (``pipe.BRIDGE_LOG``), next to its link."""
    return tree / STRATEGY_DIR / "ioc-bridge.log"


def reset_tree(tree: Path) -> None:
    """Remove what a previous target left in the tree (ansible-test's results, the bridge log)."""
    shutil.rmtree(tree / "test" / "results", ignore_errors=True)
    log = bridge_log(tree)
    if log.exists():
        log.unlink()


def ansible_test_argv(python: str, tree: Path, target: str, verbosity: int,
                      allow_destructive: bool) -> List[str]:
    """``ansible-test integration --local`` for one target, as a user of the tree would run it."""
    argv = [python, str(tree / "bin" / "ansible-test"), "integration", "--local",
            "--python-interpreter", python, "--color", "no"]
    if allow_destructive:
        argv.append("--allow-destructive")
    if verbosity:
        argv.append("-" + "v" * verbosity)
    return argv + [target]


def clean_environment() -> Dict[str, str]:
    """This process's environment without Ansible's or Python's path settings.

    ansible-test builds the environment of what it runs from a short list
    (``HOME``, ``PATH``, ``SSH_AUTH_SOCK``, …); clearing these as well keeps
    ansible-test itself from importing another checkout's code.
    """
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("ANSIBLE_", "IOC_")) and k not in ("PYTHONPATH", "PYTHONHOME")}


#: How the bridge notes a play it left to the linear strategy whole.
WHOLE_LINEAR = ": runs whole with the linear strategy: "


def bridge_counts(log: Path) -> Tuple[int, int, int, int]:
    """From the dispatcher's log: (plays planned natively, native steps, tasks
    through Ansible, plays run whole by the linear strategy)."""
    if not log.exists():
        return (0, 0, 0, 0)
    plays = steps = ansible = linear = 0
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("PLAY [") and WHOLE_LINEAR in line:
            linear += 1
        elif line.startswith("PLAY ["):
            plays += 1
        elif " INFO Batch " in line or " INFO ControllerStep " in line:
            steps += 1
        elif " INFO AnsibleStep " in line:
            ansible += 1
    return plays, steps, ansible, linear
