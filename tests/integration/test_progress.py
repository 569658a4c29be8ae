"""ioc-run's live progress line: on a terminal only, and never left on the screen."""
from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
import textwrap
from pathlib import Path

import pytest

from tests.support.terminal import screen

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration

PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - debug: msg=one
    - name: c is slow
      command: "sleep {{ 4 if inventory_hostname == 'c' else 0 }}"
    - debug: msg=three
"""


def _env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "IOC_"))}
    env.update(PYTHONPATH=str(ROOT), ANSIBLE_NOCOLOR="1", TERM="xterm")
    return env


def on_a_terminal(argv, cwd) -> str:
    """Run ``argv`` with its stdout on a pseudo-terminal (200 columns); what it wrote there."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    proc = subprocess.Popen(argv, cwd=cwd, env=_env(), stdin=subprocess.DEVNULL, stdout=slave,
                            stderr=subprocess.PIPE)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=60) == 0, proc.stderr.read()
    return b"".join(chunks).decode()


def test_the_progress_line_shows_on_a_terminal_only_and_is_erased(sshd, tmp_path):
    (tmp_path / "play.yml").write_text(textwrap.dedent(PLAY))
    (tmp_path / "hosts.ini").write_text(sshd.inventory_ini(["a", "b", "c"]))
    argv = [sys.executable, "-m", "ioc", "play.yml", "-i", "hosts.ini"]
    raw = on_a_terminal(argv, str(tmp_path))
    lines = re.findall(r"\[ioc\] [^\r\n\x1b]*", raw)
    assert lines, raw
    # while c sleeps: every host connected, a and b done, c the slowest, redrawn in place
    assert any(re.match(r"\[ioc\] hosts connected 3/3 \| tasks done [78]/9, per host min 1 "
                        r"median 3 max 3 of 3 \| slowest c \(1/3, \ds on a task\)", line)
               for line in lines), lines
    assert len(set(lines)) >= 2, lines  # it was updated
    assert "\r\x1b[K[ioc] " in raw
    # erased: nothing of it is left on the screen, which reads as the piped console
    piped = subprocess.run(argv, cwd=str(tmp_path), env=_env(), stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=60)
    assert piped.returncode == 0, piped.stderr
    assert "[ioc]" not in piped.stdout and "\r" not in piped.stdout and "\x1b" not in piped.stdout
    assert screen(raw) == piped.stdout
