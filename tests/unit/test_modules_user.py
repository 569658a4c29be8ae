"""user module: real useradd/usermod/userdel on throwaway ioctest_ accounts."""
import grp
import os
import pwd
import subprocess
import time

import pytest

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

user = modules.get("user")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to manage users")

HASH = "$6$saltsalt$" + "a" * 86
HASH2 = "$6$othersalt$" + "b" * 86


def run(ctx=None, **args):
    return user.run(args, ctx or ModuleContext())


def _pw(name):
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def _shadow_hash(name):
    return user.shadow_entry(name)[0]


@pytest.fixture
def names(tmp_path):
    """A fresh user name, two fresh groups; all removed afterwards."""
    base = "ioctest_u%d" % os.getpid()
    made = {"user": base, "g1": base + "a", "g2": base + "b", "home": str(tmp_path / "home")}
    for g in ("g1", "g2"):
        subprocess.run(["groupadd", made[g]], check=True)
    yield made
    if _pw(base):
        subprocess.run(["userdel", "-r", base], check=False, capture_output=True)
    for g in (base, made["g1"], made["g2"]):
        subprocess.run(["groupdel", g], check=False, capture_output=True)


def test_registry_and_flags():
    assert user.SUPPORTS_CHECK_MODE is True
    assert {"name", "user", "uid", "groups", "append", "password", "remove",
            "createhome", "create_home", "expires"} <= user.OPTIONS


def test_create_with_home_shell_comment_then_idempotent(names):
    name, home = names["user"], names["home"]
    r = run(name=name, shell="/bin/sh", comment="IOC Test", home=home)
    assert r["changed"] is True and "failed" not in r
    info = _pw(name)
    assert r["uid"] == info.pw_uid and r["group"] == info.pw_gid
    assert (r["home"], r["shell"], r["comment"]) == (home, "/bin/sh", "IOC Test")
    assert r["state"] == "present" and r["system"] is False and r["create_home"] is True
    assert os.path.isdir(home) and os.stat(home).st_uid == info.pw_uid
    r = run(name=name, shell="/bin/sh", comment="IOC Test", home=home)
    assert r["changed"] is False and r["append"] is False and r["move_home"] is False


def test_check_mode_creates_nothing(names):
    r = run(ModuleContext(check_mode=True), name=names["user"])
    assert r == {"changed": True}
    assert _pw(names["user"]) is None


def test_modify_shell_and_uid(names):
    name = names["user"]
    run(name=name, create_home=False)
    r = run(ModuleContext(check_mode=True), name=name, shell="/bin/false")
    assert r["changed"] is True and _pw(name).pw_shell != "/bin/false"
    r = run(name=name, shell="/bin/false", uid=42123)
    assert r["changed"] is True and r["shell"] == "/bin/false" and r["uid"] == 42123
    assert _pw(name).pw_uid == 42123


def test_groups_replace_and_append(names):
    name, g1, g2 = names["user"], names["g1"], names["g2"]
    r = run(name=name, groups=[g1], create_home=False)
    assert r["changed"] is True and r["groups"] == g1
    assert name in grp.getgrnam(g1).gr_mem
    r = run(name=name, groups=g2, append=True)
    assert r["changed"] is True
    assert name in grp.getgrnam(g1).gr_mem and name in grp.getgrnam(g2).gr_mem
    assert run(name=name, groups=[g2], append=True)["changed"] is False
    r = run(name=name, groups="%s" % g2)
    assert r["changed"] is True
    assert name not in grp.getgrnam(g1).gr_mem and name in grp.getgrnam(g2).gr_mem
    r = run(name=name, groups=[])
    assert r["changed"] is True and name not in grp.getgrnam(g2).gr_mem
    assert run(name=name, groups="")["changed"] is False


def test_primary_group(names):
    name, g1 = names["user"], names["g1"]
    r = run(name=name, group=g1, create_home=False)
    assert r["group"] == grp.getgrnam(g1).gr_gid
    r = run(name=name, group="ioctest_no_such_group")
    assert r["failed"] is True and r["msg"] == "Group ioctest_no_such_group does not exist"


def test_password_is_set_but_never_returned(names):
    name = names["user"]
    r = run(name=name, password=HASH, create_home=False)
    assert r["changed"] is True and r["password"] == "NOT_LOGGING_PASSWORD"
    assert HASH not in repr(r) and "warnings" not in r
    assert _shadow_hash(name) == HASH
    assert run(name=name, password=HASH, create_home=False)["changed"] is False
    assert run(name=name, password=HASH2, update_password="on_create",
               create_home=False)["changed"] is False
    r = run(name=name, password=HASH2, create_home=False)
    assert r["changed"] is True and HASH2 not in repr(r) and _shadow_hash(name) == HASH2


def test_plaintext_password_warns(names):
    r = run(ModuleContext(check_mode=True), name=names["user"], password="hunter2")
    assert r["changed"] is True and "hunter2" not in repr(r)
    assert "appears not to have been hashed" in r["warnings"][0]


def test_password_lock(names):
    name = names["user"]
    run(name=name, password=HASH, create_home=False)
    assert run(name=name, password_lock=True, create_home=False)["changed"] is True
    assert _shadow_hash(name) == "!" + HASH
    assert run(name=name, password_lock=True, create_home=False)["changed"] is False
    assert run(name=name, password_lock=False, create_home=False)["changed"] is True
    assert _shadow_hash(name) == HASH


def test_expires(names):
    name = names["user"]
    when = time.mktime((2031, 6, 15, 12, 0, 0, 0, 0, -1))
    run(name=name, create_home=False, expires=when)
    assert user.shadow_entry(name)[1] == int(when // 86400)
    assert run(name=name, expires=when, create_home=False)["changed"] is False
    assert run(name=name, expires=-1, create_home=False)["changed"] is True
    assert user.shadow_entry(name)[1] == -1


def test_system_user_without_home(names):
    name = names["user"]
    r = run(name=name, system=True, create_home=False, home=names["home"])
    assert r["changed"] is True and r["system"] is True and r["uid"] < 1000
    assert not os.path.exists(names["home"])


def test_missing_home_is_created_for_existing_user(names):
    name, home = names["user"], names["home"]
    run(name=name, home=home, create_home=False)
    r = run(name=name, home=home)
    assert r["changed"] is True and os.path.isdir(home)


def test_move_home(names, tmp_path):
    name, home = names["user"], names["home"]
    run(name=name, home=home)
    new = str(tmp_path / "moved")
    r = run(name=name, home=new, move_home=True)
    assert r["changed"] is True and r["home"] == new and r["move_home"] is True
    assert os.path.isdir(new) and not os.path.exists(home)


def test_absent_with_remove(names):
    name, home = names["user"], names["home"]
    run(name=name, home=home)
    r = run(ModuleContext(check_mode=True), name=name, state="absent")
    assert r == {"changed": True} and _pw(name)
    r = run(name=name, state="absent", remove=True)
    assert r["changed"] is True and r["remove"] is True and r["force"] is False
    assert _pw(name) is None and not os.path.exists(home) and "uid" not in r
    r = run(name=name, state="absent")
    assert r == {"name": name, "state": "absent", "changed": False}


def test_user_alias_and_unknown_option(names):
    r = run(user=names["user"], create_home=False)
    assert r["changed"] is True and r["name"] == names["user"]
    r = run(name=names["user"], ssh_key_bits=2048)
    assert r["failed"] and "ssh_key_bits" in r["msg"]


def test_password_hash_heuristic():
    assert user.password_looks_hashed(HASH)
    assert user.password_looks_hashed("!")
    assert not user.password_looks_hashed("plain")
    assert not user.password_looks_hashed("$6$salt$short")
