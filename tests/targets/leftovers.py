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

:class:`Restored` does the same for the few paths outside ``/tmp`` that the
targets of record write by name (:data:`MACHINE_PATHS`), and more: each is
put back as it was when the target started, or removed when it was absent.
``gathering_facts`` and ``gathering`` write ``/etc/ansible/facts.d/*.fact``
and linear's run left them: mitogen_batch's run found them (``ok`` where
linear said ``changed``, and its facts gathered them).
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

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


#: Paths outside ``/tmp`` that targets of record write by name and may leave
#: (grep of their files): ``/etc/ansible`` (Ansible's ``fact_path``,
#: ``/etc/ansible/facts.d``: gathering, gathering_facts), ``/etc/sudoers.d``
#: (copy's ``tmp_ansible_test_user``, for the user accounts.py removes),
#: ``/var/tmp/ansible_test_unicode_get_put`` (unicode), ``/var/tmp/foo.txt``
#: (copy).
MACHINE_PATHS = (Path("/etc/ansible"), Path("/etc/sudoers.d"),
                 Path("/var/tmp/ansible_test_unicode_get_put"), Path("/var/tmp/foo.txt"))


class Restored:
    """Paths as they were when a target started (a copy of each kept in ``scratch``).

    :meth:`restore`, after each run: a path absent then is removed; one
    present then and changed since (an entry added, removed or of other
    content, type, mode, owner or link target; times are not compared) is
    replaced by its copy, with modes and owners.
    """

    def __init__(self, paths: Sequence[Path], scratch: Path) -> None:
        self.saved: Dict[Path, Optional[Path]] = {}
        for index, path in enumerate(paths):
            copy: Optional[Path] = None
            if os.path.lexists(path):
                copy = scratch / str(index)
                _copy(path, copy)
            self.saved[path] = copy

    def restore(self) -> List[str]:
        """Put the paths back; those that had changed."""
        changed = []
        for path, copy in self.saved.items():
            if copy is None:
                if not os.path.lexists(path):
                    continue
                _remove(path)
            elif _state(path) == _state(copy):
                continue
            else:
                if os.path.lexists(path):
                    _remove(path)
                _copy(copy, path)
            changed.append(str(path))
        return changed


@contextlib.contextmanager
def restored(paths: Sequence[Path] = MACHINE_PATHS) -> Iterator[Restored]:
    """:class:`Restored` for the time of one target, restored once more at its end."""
    with tempfile.TemporaryDirectory(prefix="ioc-targets-restore-") as scratch:
        saved = Restored(paths, Path(scratch))
        try:
            yield saved
        finally:
            saved.restore()


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _copy(source: Path, target: Path) -> None:
    """``source`` to ``target`` with its modes, owners and links (``cp -a``, times aside)."""
    if source.is_dir() and not source.is_symlink():
        shutil.copytree(source, target, symlinks=True)
    else:
        shutil.copy2(source, target, follow_symlinks=False)
    for entry in [source] + (sorted(source.rglob("*")) if source.is_dir() else []):
        copied = target / entry.relative_to(source) if entry != source else target
        info = entry.lstat()
        os.chown(copied, info.st_uid, info.st_gid, follow_symlinks=False)
        if not stat.S_ISLNK(info.st_mode):
            os.chmod(copied, stat.S_IMODE(info.st_mode))


def _state(path: Path) -> List[Tuple[str, int, int, int, bytes]]:
    """What restore compares: each entry's relative name, mode, owners and content."""
    out = []
    for entry in [path] + (sorted(path.rglob("*")) if path.is_dir() and not path.is_symlink()
                           else []):
        info = entry.lstat()
        if stat.S_ISLNK(info.st_mode):
            content = os.readlink(entry).encode()
        elif stat.S_ISREG(info.st_mode):
            content = entry.read_bytes()
        else:
            content = b""
        name = "." if entry == path else str(entry.relative_to(path))
        out.append((name, info.st_mode, info.st_uid, info.st_gid, content))
    return out
