"""Small JSON files in the user's cache directory, for work a controller
would otherwise redo on every run (``$XDG_CACHE_HOME/ioc``, else
``~/.cache/ioc``).

What is kept must be checkable by whoever reads it (a module file's size
and mtime, a source's digest): a missing, unreadable or foreign file is an
empty cache, never an error, and a file is replaced whole, so concurrent
runs never read half of one. Nothing is kept on any target.
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
from typing import Any, Dict

LOG = logging.getLogger(__name__)


def path_of(name: str) -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ioc", name)


def load(path: str) -> Dict[str, Any]:
    """The dict kept at ``path``; empty if there is none to read."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save(path: str, data: Dict[str, Any]) -> None:
    """Replace the file at ``path`` with ``data`` (a cache: failing is only logged)."""
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    except OSError:
        LOG.debug("could not keep %s", path, exc_info=True)
