"""The controller's interpreter, executable by the unprivileged users of a target.

Targets that ``become`` an unprivileged user (``needs/root`` and
``needs/target/setup_test_user``: ``file``, ``omit``,
``keyword_inheritance``, …) run Ansible's modules as that user with the
inventory's ``ansible_python_interpreter``, which ansible-test sets to the
controller's Python. In ansible-core's CI that is ``/usr/bin/python3``; here it
is pyenv's, under ``/root``, a directory only root may enter, so linear itself
fails ("/bin/sh: 1: .../python3.13: Permission denied").

:func:`interpreter_reachable` gives every directory above the interpreter
that lacks it the search bit for others (``o+x``: enter, not list) while the
target runs, and takes it away again afterwards.
"""
from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Iterator, List, Tuple


@contextlib.contextmanager
def interpreter_reachable(python: str) -> Iterator[None]:
    changed: List[Tuple[Path, int]] = []
    try:
        for directory in reversed(Path(python).parents):
            mode = directory.stat().st_mode
            if not mode & stat.S_IXOTH:
                os.chmod(directory, stat.S_IMODE(mode) | stat.S_IXOTH)
                changed.append((directory, stat.S_IMODE(mode)))
        yield
    finally:
        for directory, mode in reversed(changed):
            os.chmod(directory, mode)
