"""Both strategies' runs of a target start from the machine's same users and groups.

ansible-core's CI runs each target in a fresh container; the harness runs
linear and then mitogen_batch on one machine, and some targets leave accounts
behind or remove ones that were there. The ``file`` target creates the user
``test2`` and no handler of it removes it: linear's run created it
("changed"), mitogen_batch's found it ("ok"). A user left by an earlier
target (``tmp_ansible_test_user``) was found by linear's run, which deleted
it, and created by mitogen_batch's. Neither says anything about ioc.

:class:`Accounts` takes the local users and groups (``pwd``/``grp``) when the
target starts; :meth:`Accounts.restore`, after each run, deletes the users
and groups the run added (``userdel -r``: with the home directory it made,
``groupdel``) and adds back those it removed, with their ids, primary group,
comment, home (made again from ``/etc/skel`` when it is gone), shell and
group memberships (``groupadd``/``useradd``/``usermod -a -G``). Other
changes a run makes to an account that is still there (its uid, shell,
memberships) are not undone. Runs of the harness that overlap on one machine
would undo each other's accounts: run one at a time. The test suite's own
throwaway users (``ioc_*``, ``ioc-*``) are left alone.
"""
from __future__ import annotations

import contextlib
import grp
import os
import pwd
import subprocess
import sys
from typing import Callable, Dict, Iterator, List, Optional

#: Which account names to look after (all when None).
Scope = Optional[Callable[[str], bool]]


def users(scope: Scope = None) -> Dict[str, pwd.struct_passwd]:
    return {entry.pw_name: entry for entry in pwd.getpwall()
            if scope is None or scope(entry.pw_name)}


def groups(scope: Scope = None) -> Dict[str, grp.struct_group]:
    return {entry.gr_name: entry for entry in grp.getgrall()
            if scope is None or scope(entry.gr_name)}


def not_the_test_suites(name: str) -> bool:
    """Every account but the test suite's throwaway users (``ioc_*``,
    ``ioc-*``, made and removed by its tests): a harness run beside the
    suite must not delete them (nor the suite the harness's)."""
    return not name.startswith(("ioc_", "ioc-"))


class Accounts:
    """The users and groups at the start, and :meth:`restore` to go back to them.

    ``scope`` limits both to the names it accepts: a test that runs beside
    others (pytest-xdist) must not delete the users they make meanwhile.
    """

    def __init__(self, scope: Scope = None) -> None:
        self.scope = scope
        self.users = users(scope)
        self.groups = groups(scope)
        #: Home directories that existed at the start.
        self.homes = {name: os.path.isdir(entry.pw_dir) for name, entry in self.users.items()}

    def restore(self) -> List[str]:
        """Undo what a run added or removed; the commands that failed (also on stderr)."""
        failed: List[str] = []

        def run(argv: List[str]) -> None:
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            # (userdel's 12: the home directory was not there to remove, or could not be)
            if proc.returncode not in (0, 12):
                failed.append("%s: %s" % (" ".join(argv), proc.stdout.strip()))

        now_users, now_groups = users(self.scope), groups(self.scope)
        for name in sorted(set(now_users) - set(self.users)):
            run(["userdel", "-r", name])
        for name in sorted(set(groups(self.scope)) - set(self.groups)):
            run(["groupdel", name])
        for name in sorted(set(self.groups) - set(now_groups), key=lambda n: self.groups[n].gr_gid):
            run(["groupadd", "-g", str(self.groups[name].gr_gid), name])
        removed = sorted(set(self.users) - set(now_users), key=lambda n: self.users[n].pw_uid)
        for name in removed:
            entry = self.users[name]
            make_home = self.homes[name] and not os.path.isdir(entry.pw_dir)
            run(["useradd", "-u", str(entry.pw_uid), "-g", str(entry.pw_gid), "-c", entry.pw_gecos,
                 "-d", entry.pw_dir, "-s", entry.pw_shell, "-m" if make_home else "-M", name])
            member_of = sorted(g.gr_name for g in self.groups.values() if name in g.gr_mem)
            if member_of:
                run(["usermod", "-a", "-G", ",".join(member_of), name])
        for line in failed:
            print("harness: the accounts were not restored: %s" % line, file=sys.stderr)
        return failed


@contextlib.contextmanager
def same_accounts(scope: Scope = None) -> Iterator[Accounts]:
    """:class:`Accounts` of now, restored when the block ends too."""
    accounts = Accounts(scope)
    try:
        yield accounts
    finally:
        accounts.restore()
