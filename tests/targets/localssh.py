"""What ansible-test's ``needs/ssh`` asks of the machine, for the length of one target.

A target with the alias ``needs/ssh/`` (``delegate_to``) needs root to reach
this machine over SSH without a prompt: ansible-test first checks
``ssh -o BatchMode=yes localhost id`` (root's default key, the user's
``known_hosts``) and then gives the target an inventory that connects as root
to ``localhost:22`` with its own key, ``~/.ansible/test/id_rsa``; the
target's own inventory connects to ``127.0.0.3`` and ``127.0.0.4`` with root's
default key. ansible-core's CI images are made that way; this machine has no
sshd on port 22 and root has no key.

:func:`root_ssh` makes it so while the target runs and undoes it after: a
throwaway sshd (``tests/support/sshd.py``, sessions with an empty
``~/.bashrc``) on port 22 of 127.0.0.1, 127.0.0.3 and 127.0.0.4 that admits
root's default key and ansible-test's; the two keys are made when missing
(as ansible-test makes its own: ``ssh-keygen -m PEM -t rsa``); the server's
host key goes into root's ``known_hosts`` for those names, one marked block
that is removed again. A key this made is removed again too. When something
already serves port 22 it is left alone and nothing is changed.

:func:`root_authorized_keys`: targets that run as root (``needs/root``)
may take root's ``~/.ssh/authorized_keys`` for granted (``copy`` copies it to
its test user with ``remote_src``); when root has none, an empty one exists
while the target runs.
"""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
from pathlib import Path
from typing import Iterator, List

from tests.support.sshd import start_sshd

ADDRESSES = ("127.0.0.1", "127.0.0.3", "127.0.0.4")
NAMES = ("localhost",) + ADDRESSES
MARK = "# ioc tests/targets/localssh.py (removed after the run)"


def serving(port: int = 22, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        return s.connect_ex((host, port)) == 0


def _ensure_key(path: Path, argv: List[str], made: List[Path]) -> str:
    if not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        subprocess.run(argv + ["-N", "", "-q", "-f", str(path)], check=True,
                       stdin=subprocess.DEVNULL, capture_output=True)
        made.extend([path, Path(str(path) + ".pub")])
    return Path(str(path) + ".pub").read_text().strip()


def _without_block(text: str) -> str:
    out, skipping = [], False
    for line in text.splitlines(True):
        if line.strip() == MARK:
            skipping = not skipping
            continue
        if not skipping:
            out.append(line)
    return "".join(out)


@contextlib.contextmanager
def root_ssh() -> Iterator[None]:
    """Root can ``ssh localhost`` (and 127.0.0.3, 127.0.0.4) while the block runs."""
    if serving():
        yield
        return
    home = Path(os.path.expanduser("~"))
    made: List[Path] = []
    dirs = [d for d in (home / ".ssh",) if not d.exists()]
    keys = [
        _ensure_key(home / ".ssh" / "id_ed25519", ["ssh-keygen", "-t", "ed25519"], made),
        _ensure_key(home / ".ansible" / "test" / "id_rsa",
                    ["ssh-keygen", "-m", "PEM", "-t", "rsa"], made),
    ]
    server = start_sshd(port=22, addresses=ADDRESSES, authorized_keys=keys)
    known_hosts = home / ".ssh" / "known_hosts"
    before = known_hosts.read_text() if known_hosts.exists() else None
    try:
        host_key = Path(server.tmpdir, "ssh_host_ed25519_key.pub").read_text().split()
        block = "%s\n%s %s %s\n%s\n" % (MARK, ",".join(NAMES), host_key[0], host_key[1], MARK)
        known_hosts.write_text(_without_block(before or "") + block)
        yield
    finally:
        server.stop()
        if known_hosts.exists():
            rest = _without_block(known_hosts.read_text())
            if before is None and not rest.strip():
                known_hosts.unlink()
            else:
                known_hosts.write_text(rest)
        for path in made:
            if path.exists():
                path.unlink()
        for directory in dirs:
            if directory.exists() and not any(directory.iterdir()):
                directory.rmdir()


@contextlib.contextmanager
def root_authorized_keys() -> Iterator[None]:
    """Root has a ``~/.ssh/authorized_keys`` (empty when it had none) while the block runs."""
    ssh = Path(os.path.expanduser("~")) / ".ssh"
    keys = ssh / "authorized_keys"
    made_dir = not ssh.exists()
    made_file = not keys.exists()
    if made_file:
        ssh.mkdir(mode=0o700, exist_ok=True)
        keys.touch(mode=0o600)
    try:
        yield
    finally:
        if made_file and keys.exists():
            keys.unlink()
        if made_dir and ssh.exists() and not any(ssh.iterdir()):
            ssh.rmdir()
