"""The harness puts the machine's users and groups back between a target's two runs
(``accounts.py``): real accounts, made and removed with shadow-utils (needs root,
as the harness does)."""
from __future__ import annotations

import grp
import os
import pwd
import subprocess

import pytest

from tests.targets.accounts import Accounts, same_accounts

ADDED, KEPT, GROUP = "ioc_acc_added", "ioc_acc_kept", "ioc_acc_grp"


def ours(name: str) -> bool:
    """The accounts these tests make: other workers add and remove users of
    their own meanwhile, which a restore of all accounts would undo."""
    return name.startswith("ioc_acc_")


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.fixture
def kept_user():
    """A user that is there before a run (with a home, in a supplementary group)."""
    if os.geteuid() != 0:
        pytest.fail("the harness's account handling needs root, as the harness itself")
    sh("groupadd", GROUP)
    sh("useradd", "-m", "-s", "/bin/sh", "-c", "kept one", "-G", GROUP, KEPT)
    try:
        yield pwd.getpwnam(KEPT)
    finally:
        for argv in (["userdel", "-r", ADDED], ["userdel", "-r", KEPT], ["groupdel", GROUP]):
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def names():
    return ({e.pw_name for e in pwd.getpwall() if ours(e.pw_name)},
            {e.gr_name for e in grp.getgrall() if ours(e.gr_name)})


def test_a_run_that_adds_and_removes_accounts_is_undone(kept_user):
    accounts = Accounts(ours)
    sh("useradd", "-m", ADDED)
    sh("userdel", "-r", KEPT)
    sh("groupdel", GROUP)
    assert not os.path.isdir(kept_user.pw_dir)
    assert accounts.restore() == []
    users, groups = names()
    assert ADDED not in users and ADDED not in groups and not os.path.exists("/home/" + ADDED)
    again = pwd.getpwnam(KEPT)
    assert (again.pw_uid, again.pw_gid, again.pw_gecos, again.pw_dir, again.pw_shell) == (
        kept_user.pw_uid, kept_user.pw_gid, "kept one", kept_user.pw_dir, "/bin/sh")
    assert os.path.isdir(kept_user.pw_dir) and os.stat(kept_user.pw_dir).st_uid == kept_user.pw_uid
    assert KEPT in grp.getgrnam(GROUP).gr_mem


def test_the_block_leaves_the_accounts_it_found(kept_user):
    before = names()
    with same_accounts(ours):
        sh("useradd", ADDED)
        sh("userdel", KEPT)
    assert names() == before
