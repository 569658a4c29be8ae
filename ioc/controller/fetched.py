"""Files that ``fetch`` brings back, written on the controller.

The runner's ``fetch`` module returns the content under ``_ioc_fetch`` (its
docstring has the contract). Here the controller finishes what Ansible's
fetch action does on its side: resolves a relative ``dest`` against the
playbook directory, refuses directories where a file is meant, writes the
file atomically only when its content differs, verifies the written
checksum, and decides ``changed`` — the target cannot know the controller's
copy. The content never reaches callbacks.
"""
from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from typing import Any, Dict


def deliver(event: Dict[str, Any], basedir: str = ".") -> None:
    """Write any fetched file carried by ``event`` (an item or final result)."""
    result = event.get("result")
    if not isinstance(result, dict) or "_ioc_fetch" not in result:
        return
    payload = result.pop("_ioc_fetch")
    if result.get("failed") or result.get("skipped"):
        return
    dest = os.path.normpath(os.path.join(basedir, payload["dest"]))
    problem = _directory_problem(payload, dest)
    if problem:
        _fail(event, result, problem)
        return
    content = bytes(payload["content"])
    checksum = hashlib.sha1(content).hexdigest()
    result["dest"] = dest
    if _sha1(dest) == checksum:
        event["result"] = {"changed": False, "md5sum": hashlib.md5(content).hexdigest(),
                           "file": result.get("file", result.get("src")), "dest": dest,
                           "checksum": checksum}
        return
    write(dest, content)
    if payload.get("validate_checksum", True) and _sha1(dest) != payload.get("checksum", checksum):
        _fail(event, result, "checksum mismatch")
        return
    result["changed"] = True


def deliver_result(result: Dict[str, Any], basedir: str = ".") -> Dict[str, Any]:
    """The result of a ``fetch`` whose file is written now, asked by the
    runner before its task ends (see ``HostRun.deliver_fetch``)."""
    event: Dict[str, Any] = {"result": result, "status": "failed" if result.get("failed") else "ok"}
    deliver(event, basedir)
    return dict(event["result"])


def _directory_problem(payload: Dict[str, Any], dest: str) -> str:
    if payload.get("flat") and not payload.get("dest_is_dir") and os.path.isdir(dest) \
            and not str(payload["dest"]).endswith("/"):
        return ("dest is an existing directory, use a trailing slash if you want to fetch "
                "src into that directory")
    if os.path.isdir(dest):
        return ("calculated dest '%s' is an existing directory, use another path that does "
                "not point to an existing directory" % dest)
    return ""


def _fail(event: Dict[str, Any], result: Dict[str, Any], msg: str) -> None:
    result.update(failed=True, changed=False, msg=msg)
    event["status"] = "failed"


def _sha1(path: str) -> str:
    if not os.path.isfile(path):
        return ""
    with open(path, "rb") as handle:
        return hashlib.sha1(handle.read()).hexdigest()


def write(dest: str, content: bytes) -> None:
    """Atomically write ``content`` to ``dest`` (temp file, fsync, rename),
    with the mode Ansible's copy of it gets: an existing file's, else the
    umask's (mkstemp's own 0600 is no mode a fetched file has)."""
    directory = os.path.dirname(os.path.abspath(dest))
    os.makedirs(directory, exist_ok=True)
    try:
        mode = os.stat(dest).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".ioc-fetch-")
    try:
        os.chmod(tmp, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@functools.lru_cache(maxsize=None)
def _umask() -> int:
    """The process's umask (read once: reading it means setting it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
