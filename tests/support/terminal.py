"""Running a command on a pseudo-terminal and answering its prompts, as a user would.

``getpass`` reads the controlling terminal, not stdin: the child gets a
terminal of its own (``pty.fork``), so a private prompt is answered the way
a person at the keyboard answers it.
"""
from __future__ import annotations

import os
import pty
import re
import select
import time
from typing import Dict, List, Sequence, Tuple


def run_on_terminal(argv: Sequence[str], answers: List[Tuple[str, str]], cwd: str,
                    env: Dict[str, str], timeout: float = 180) -> Tuple[int, str]:
    """Run ``argv``; each time the next prompt of ``answers`` appears, type its answer.

    Returns the exit code and everything the terminal showed (both streams,
    the echoed answers included, ``\\r\\n`` as ``\\n``), as written: a line
    redrawn in place (ioc-run's progress) is there with each of its drawings
    (:func:`screen` gives what stays on the screen).
    """
    pid, fd = pty.fork()
    if pid == 0:  # the child: never returns
        os.chdir(cwd)
        os.execvpe(argv[0], list(argv), env)
    out = b""
    seen = 0
    pending = list(answers)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not select.select([fd], [], [], 1)[0]:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
            while pending and pending[0][0].encode() in out[seen:]:
                seen = out.index(pending[0][0].encode(), seen) + len(pending[0][0])
                os.write(fd, pending.pop(0)[1].encode() + b"\n")
        else:
            os.kill(pid, 9)
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode().replace("\r\n", "\n")


def screen(raw: str) -> str:
    """What a terminal shows after ``raw``: each line with its carriage returns
    and erase-line sequences (``\\r``, ``ESC [K``) applied, ``\\r\\n`` as ``\\n``."""
    lines = []
    for line in raw.replace("\r\n", "\n").split("\n"):
        shown, cursor = "", 0
        for part in re.split(r"(\r|\x1b\[K)", line):
            if part == "\r":
                cursor = 0
            elif part == "\x1b[K":
                shown = shown[:cursor]
            else:
                shown = shown[:cursor] + part + shown[cursor + len(part):]
                cursor += len(part)
        lines.append(shown)
    return "\n".join(lines)
