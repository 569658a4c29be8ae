"""Where the reference Python 3.13 (ansible-core 2.21, installed by scripts/test) is.

One finder for the conformance tests, the targets harness, the real-world
suite and the benchmarks: ``IOC_ANSIBLE_PYTHON`` if set, else pyenv's 3.13
(``pyenv prefix 3.13``, then the newest ``$PYENV_ROOT/versions/3.13*``).
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
from typing import List, Optional


def pyenv_root() -> str:
    return os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")


def find_python313() -> Optional[str]:
    """The interpreter, or None when this machine has none."""
    candidates: List[str] = []
    explicit = os.environ.get("IOC_ANSIBLE_PYTHON")
    if explicit:
        candidates.append(explicit)
    pyenv = shutil.which("pyenv") or os.path.join(pyenv_root(), "bin", "pyenv")
    if os.access(pyenv, os.X_OK):
        try:
            r = subprocess.run([pyenv, "prefix", "3.13"], capture_output=True, text=True,
                               timeout=30, stdin=subprocess.DEVNULL)
            if r.returncode == 0 and r.stdout.strip():
                candidates.append(os.path.join(r.stdout.strip().splitlines()[0], "bin",
                                               "python3.13"))
        except (OSError, subprocess.SubprocessError):
            pass
    candidates += sorted(glob.glob(os.path.join(pyenv_root(), "versions", "3.13*", "bin",
                                                "python3.13")), reverse=True)
    return next((c for c in candidates if os.access(c, os.X_OK)), None)
