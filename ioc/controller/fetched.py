"""Files that ``fetch`` brings back, written on the controller.

The runner's ``fetch`` module returns the content under ``_ioc_fetch``
(``{"dest": path, "content": bytes}``). The controller writes it atomically,
sets ``changed`` from whether the file on the controller really changed (the
target cannot know), and removes the content so callbacks never see it.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from typing import Any, Dict


def deliver(event: Dict[str, Any]) -> None:
    """Write any fetched file carried by ``event`` (an item or final result)."""
    result = event.get("result")
    if not isinstance(result, dict) or "_ioc_fetch" not in result:
        return
    payload = result.pop("_ioc_fetch")
    if result.get("failed") or result.get("skipped"):
        return
    result["changed"] = write(payload["dest"], bytes(payload["content"]))


def write(dest: str, content: bytes) -> bool:
    """Atomically write ``content`` to ``dest``; True when it changed."""
    if os.path.isfile(dest):
        with open(dest, "rb") as handle:
            if hashlib.sha1(handle.read()).digest() == hashlib.sha1(content).digest():
                return False
    directory = os.path.dirname(os.path.abspath(dest))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".ioc-fetch-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return True
