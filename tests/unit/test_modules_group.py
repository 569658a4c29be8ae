"""group module: real groupadd/groupmod/groupdel on throwaway ioctest_ groups."""
import grp
import os
import subprocess

import pytest

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

group = modules.get("group")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to manage groups")


def run(ctx=None, **args):
    return group.run(args, ctx or ModuleContext())


def _exists(name):
    try:
        return grp.getgrnam(name)
    except KeyError:
        return None


def _free_gid(start=42000):
    gid = start
    while True:
        try:
            grp.getgrgid(gid)
        except KeyError:
            return gid
        gid += 1


@pytest.fixture
def name():
    n = "ioctest_g%d" % os.getpid()
    yield n
    if _exists(n):
        subprocess.run(["groupdel", n], check=False)


def test_registry_and_flags():
    assert group.SUPPORTS_CHECK_MODE is True
    assert {"name", "gid", "state", "system", "non_unique", "force"} <= group.OPTIONS


def test_create_is_changed_then_idempotent(name):
    r = run(name=name)
    assert r["changed"] is True and "failed" not in r
    assert r["name"] == name and r["state"] == "present" and r["system"] is False
    assert r["gid"] == _exists(name).gr_gid
    r = run(name=name)
    assert r["changed"] is False and r["gid"] == _exists(name).gr_gid


def test_check_mode_creates_nothing(name):
    r = run(ModuleContext(check_mode=True), name=name)
    assert r == {"changed": True}
    assert _exists(name) is None


def test_gid_and_modify(name):
    gid = _free_gid()
    r = run(name=name, gid=gid)
    assert r["changed"] is True and r["gid"] == gid
    new = _free_gid(gid + 1)
    r = run(ModuleContext(check_mode=True), name=name, gid=new)
    assert r["changed"] is True and _exists(name).gr_gid == gid
    r = run(name=name, gid=str(new))
    assert r["changed"] is True and r["gid"] == new == _exists(name).gr_gid
    assert run(name=name, gid=new)["changed"] is False


def test_system_group_gets_a_system_gid(name):
    r = run(name=name, system=True)
    assert r["changed"] is True and r["system"] is True
    assert r["gid"] < 1000


def test_absent(name):
    run(name=name)
    r = run(ModuleContext(check_mode=True), name=name, state="absent")
    assert r["changed"] is True and _exists(name)
    r = run(name=name, state="absent")
    assert r == {"name": name, "state": "absent", "changed": True}
    assert _exists(name) is None
    assert run(name=name, state="absent")["changed"] is False


def test_errors(name):
    assert run(state="present")["msg"] == "missing required arguments: name"
    r = run(name=name, non_unique=True)
    assert r["failed"] is True and "gid" in r["msg"]
    r = run(name=name, state="gone")
    assert r["failed"] and r["msg"] == "value of state must be one of: absent, present, got: gone"
    r = run(name=name, colour="blue")
    assert r["failed"] and r["msg"].startswith("Unsupported parameters for (group) module: colour")


def test_duplicate_gid_fails_unless_non_unique(name):
    other = name + "x"
    subprocess.run(["groupadd", other], check=True)
    try:
        taken = grp.getgrnam(other).gr_gid
        r = run(name=name, gid=taken)
        assert r["failed"] is True and r["name"] == name
        assert "GID '%d' already exists" % taken in r["msg"]
        r = run(name=name, gid=taken, non_unique=True)
        assert r["changed"] is True and r["gid"] == taken
    finally:
        subprocess.run(["groupdel", other], check=False)
