"""Throwaway local users for the ``become`` tests (the sshd fixture runs as root).

:func:`make_user` creates a user with ``useradd -m`` and :func:`remove_user`
deletes it with its home directory. A user with a password can also log in
to the test sshd with its client key: sshd reads ``AuthorizedKeysFile`` as
the user logging in, so :func:`open_keys_to_all` lets every user read the
fixture's public ``authorized_keys`` (its directory gets ``o+x`` only: the
private client key in it stays readable by root alone). A ``sudoers.d``
rule from :func:`sudo_rule` is removed by :func:`remove_user` too.
:func:`become_accounts` sets up (and afterwards removes) the pair of users
the become tests use, under names each test module chooses.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
from typing import Iterable, Iterator, Mapping, Optional

from tests.support.sshd import SSHServer

SUDOERS_DIR = "/etc/sudoers.d"


def _run(*argv: str, stdin: Optional[str] = None) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True, input=stdin, timeout=60)


def require_sudo() -> str:
    """Path of ``sudo``; a clear failure (never a skip) when it is missing."""
    path = shutil.which("sudo")
    assert path, "sudo is not installed: scripts/test installs it (apt-get install sudo)"
    return path


def make_user(name: str, password: Optional[str] = None) -> None:
    """A fresh user ``name`` (removed first if a previous run left it behind)."""
    remove_user(name)
    _run("useradd", "-m", "-s", "/bin/bash", name)
    if password is not None:
        _run("chpasswd", stdin="%s:%s\n" % (name, password))


def sudo_rule(name: str, rule: str) -> str:
    """Install ``rule`` as ``/etc/sudoers.d/ioc-test-<name>`` (checked by visudo)."""
    path = os.path.join(SUDOERS_DIR, "ioc-test-%s" % name.replace("_", "-"))
    with open(path, "w") as handle:
        handle.write(rule.rstrip("\n") + "\n")
    os.chmod(path, 0o440)
    _run("visudo", "-c", "-f", path)
    return path


def remove_user(name: str) -> None:
    subprocess.run(["userdel", "-r", "-f", name], capture_output=True, timeout=60)
    path = os.path.join(SUDOERS_DIR, "ioc-test-%s" % name.replace("_", "-"))
    if os.path.exists(path):
        os.unlink(path)


def open_keys_to_all(tmpdir: str) -> int:
    """Let every user read the sshd fixture's ``authorized_keys``; returns the old mode."""
    old = stat.S_IMODE(os.stat(tmpdir).st_mode)
    os.chmod(tmpdir, old | 0o011)
    os.chmod(os.path.join(tmpdir, "authorized_keys"), 0o644)
    return old


def user_id(name: str) -> int:
    import pwd
    return pwd.getpwnam(name).pw_uid


def make_remote_tmp(name: str) -> None:
    """``~/.ansible/tmp`` of ``name``, as Ansible's modules want it (no warning)."""
    _run("su", name, "-c", "mkdir -p -m 700 ~/.ansible/tmp")


@contextlib.contextmanager
def become_accounts(sshd: SSHServer, plain: str, with_password: str, password: str,
                    remote_tmp: bool = False) -> Iterator[SSHServer]:
    """Users ``plain`` (no password) and ``with_password`` (may sudo to anyone by
    giving ``password``, and may log in to ``sshd`` with its client key);
    yields ``sshd`` and removes both users afterwards. Each test module passes
    names of its own: modules may run at the same time on different workers.
    ``remote_tmp``: create ``plain``'s ``~/.ansible/tmp`` (see :func:`make_remote_tmp`).
    """
    require_sudo()
    with key_logins(sshd, {plain: None, with_password: password},
                    remote_tmp=(plain,) if remote_tmp else ()):
        sudo_rule(with_password, "%s ALL=(ALL) ALL" % with_password)  # a password is required
        yield sshd


@contextlib.contextmanager
def key_logins(sshd: SSHServer, users: Mapping[str, Optional[str]],
               remote_tmp: Iterable[str] = ()) -> Iterator[None]:
    """Throwaway ``users`` (name -> password, None for none) that may log in to
    ``sshd`` with its client key, each of ``remote_tmp`` with its
    ``~/.ansible/tmp``; removed afterwards."""
    for name, password in users.items():
        make_user(name, password)
    for name in remote_tmp:
        make_remote_tmp(name)
    mode = open_keys_to_all(sshd.tmpdir)
    try:
        yield
    finally:
        os.chmod(sshd.tmpdir, mode)
        for name in users:
            remove_user(name)
