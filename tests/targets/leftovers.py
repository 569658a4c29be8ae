"""Files a target writes under ``/tmp`` by a fixed name do not outlive its run.

Some targets write to fixed paths outside their work directory and leave them
(the ``file`` target's ``/tmp/touch_check_mode_test``: it first asks for a
``touch`` in check mode of the absent file, which reports ``{changed,
dest}``; on a file an earlier run left, the result has the file's
attributes too). In ansible-core's CI each target starts in a fresh
container; here linear's run and mitogen_batch's share the machine.

:class:`TmpLeftovers` reads the names written as ``/tmp/<name>`` in the
target's own files, notes which of them are absent when the target starts
and, after each run, removes those the run made. A name that was there
before is left alone (what a run changes in it is not undone), and so is
every ``/tmp`` entry the target's files do not name: another process's.
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import List, Set

#: ``/tmp/<name>`` written in a file (not inside a longer path): its first component.
_NAMED = re.compile(r"(?<![\w./}-])/tmp/([A-Za-z0-9_][A-Za-z0-9_.-]*)")


def named_in(directory: Path) -> Set[str]:
    """The ``/tmp`` entries the text files under ``directory`` name."""
    names: Set[str] = set()
    for path in sorted(directory.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        names.update(_NAMED.findall(text))
    return names


class TmpLeftovers:
    """The ``/tmp`` names a target's files hold, absent when it starts."""

    def __init__(self, target_dir: Path, tmp: Path = Path("/tmp")) -> None:
        self.tmp = tmp
        self.absent = sorted(name for name in named_in(target_dir)
                             if not os.path.lexists(tmp / name))

    def remove(self) -> List[str]:
        """Remove those a run made; their paths."""
        removed = []
        for name in self.absent:
            path = self.tmp / name
            if not os.path.lexists(path):
                continue
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(str(path))
        return removed
