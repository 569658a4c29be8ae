"""``user``: manage a local account with useradd/usermod/userdel.

Follows ``ansible.builtin.user`` on Linux. Results carry ``name`` and
``state``; for a present user also ``uid``, ``group`` (the primary gid, a
number, as Ansible returns it), ``comment``, ``home``, ``shell`` and
``groups`` (as given); ``system``/``create_home`` after a creation,
``append``/``move_home`` after a modification, ``force``/``remove`` after a
removal. ``password`` must already be hashed (crypt(3) format); it never
appears in a result: Ansible's ``'NOT_LOGGING_PASSWORD'`` stands in for it.

Not supported: ``local`` (libuser), SSH key generation, SELinux ``seuser``,
``login_class``, password ageing (``password_expire_*``), ``umask``,
``uid_min``/``uid_max`` and the macOS/BSD/Solaris options.
"""
import grp
import os
import pwd
import re
import shutil
import time

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({
    "name", "user", "state", "uid", "non_unique", "group", "groups", "append",
    "comment", "home", "shell", "password", "update_password", "password_lock",
    "create_home", "createhome", "skeleton", "system", "remove", "force", "move_home",
    "expires",
})

SUPPORTS_CHECK_MODE = True

#: Read for the current password hash and expiry (patched by tests).
_SHADOW_FILE = "/etc/shadow"
_LOGIN_DEFS = "/etc/login.defs"
_SKELETON = "/etc/skel"
_HASH_RE = re.compile(r"[^a-zA-Z0-9./=]")
_NOT_LOGGING = "NOT_LOGGING_PASSWORD"


class _Spec(object):
    """The task's arguments, converted and validated once."""

    def __init__(self, args):
        self.name = _common.resolve_aliases(args, "name", ("user",))
        if not self.name:
            raise ModuleError("missing required arguments: name")
        self.name = str(self.name)
        self.state = _common.check_choice(_common.opt_str(args, "state", "present"), "state",
                                          ("absent", "present"))
        self.uid = _common.opt_int(args, "uid")
        self.non_unique = _common.opt_bool(args, "non_unique", False)
        self.group = _common.opt_str(args, "group")
        self.groups = _common.opt_list(args, "groups")
        self.append = _common.opt_bool(args, "append", False)
        self.comment = _common.opt_str(args, "comment")
        self.home = _common.opt_path(args.get("home"))
        self.shell = _common.opt_path(args.get("shell"))
        self.password = _common.opt_str(args, "password")
        self.update_password = _common.check_choice(
            _common.opt_str(args, "update_password", "always"), "update_password",
            ("always", "on_create"))
        self.password_lock = _common.opt_bool(args, "password_lock", None)
        _common.resolve_aliases(args, "create_home", ("createhome",))
        self.create_home = _common.opt_bool(args, "create_home", True)
        self.skeleton = _common.opt_str(args, "skeleton")
        self.system = _common.opt_bool(args, "system", False)
        self.remove = _common.opt_bool(args, "remove", False)
        self.force = _common.opt_bool(args, "force", False)
        self.move_home = _common.opt_bool(args, "move_home", False)
        self.expires = None
        if args.get("expires") is not None:
            try:
                self.expires = time.gmtime(float(args["expires"]))
            except (TypeError, ValueError, OverflowError, OSError) as e:
                raise ModuleError("Invalid value for 'expires' %s: %s" % (args["expires"], e))


def _user_info(name):
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def _group_entry(group):
    """The grp entry for a group name or gid, or None (a number is tried as a gid first)."""
    try:
        return grp.getgrgid(int(group))
    except (ValueError, KeyError):
        try:
            return grp.getgrnam(group)
        except KeyError:
            return None


def _require_group(group):
    entry = _group_entry(group)
    if entry is None:
        raise ModuleError("Group %s does not exist" % group)
    return entry


def shadow_entry(name, path=None):
    """``(password_hash, expire_days)`` from the shadow file; ``('', -1)`` if unknown."""
    try:
        with open(path or _SHADOW_FILE) as f:
            for line in f:
                fields = line.rstrip("\n").split(":")
                if fields[0] == name and len(fields) > 1:
                    expire = fields[7] if len(fields) > 7 and fields[7] else "-1"
                    return fields[1], int(expire)
    except (OSError, ValueError):
        pass
    return "", -1


def password_looks_hashed(password):
    """Ansible's check_password_encrypted heuristic; False warns the user."""
    if password in ("*", "!", "*************"):
        return True
    if any(c in password for c in ":*!") or "$" not in password:
        return False
    fields = password.split("$")
    if len(fields) < 3 or _HASH_RE.search(fields[-1]):
        return False
    lengths = {"1": 22, "5": 43, "6": 86, "y": 43}
    want = lengths.get(fields[1])
    return want is None or len(fields[-1]) == want


def _wanted_groups(spec, primary_gid, remove_primary):
    """Group names ``groups`` asks for, failing on unknown ones."""
    names = []
    for g in (x.strip() for x in spec.groups if x.strip()):
        entry = _require_group(g)
        if remove_primary and primary_gid is not None and entry.gr_gid == primary_gid:
            continue
        if entry.gr_name not in names:
            names.append(entry.gr_name)
    return names


def _memberships(name):
    """Names of the groups that list ``name`` as a member."""
    return [g.gr_name for g in grp.getgrall() if name in g.gr_mem]


def _expires_arg(expires):
    return "" if expires < time.gmtime(0) else time.strftime("%Y-%m-%d", expires)


def _useradd_cmd(spec, ctx):
    cmd = [_common.require_bin("useradd", ctx)]
    if spec.uid is not None:
        cmd += ["-u", str(spec.uid)]
        if spec.non_unique:
            cmd.append("-o")
    if spec.group is not None:
        cmd += ["-g", _require_group(spec.group).gr_name]
    elif _group_entry(spec.name) is not None:
        # a group named like the user exists: keep useradd from failing to create one
        cmd.append("-N")
    if spec.groups:
        groups = _wanted_groups(spec, None, False)
        if groups:
            cmd += ["-G", ",".join(groups)]
    if spec.comment is not None:
        cmd += ["-c", spec.comment]
    if spec.home is not None:
        if spec.create_home and not os.path.isdir(os.path.dirname(spec.home)):
            _create_homedir(spec, spec.home)
        cmd += ["-d", spec.home]
    if spec.shell is not None:
        cmd += ["-s", spec.shell]
    if spec.expires is not None:
        cmd += ["-e", _expires_arg(spec.expires)]
    if spec.password is not None:
        cmd += ["-p", ("!" + spec.password) if spec.password_lock else spec.password]
    if spec.create_home:
        cmd.append("-m")
        if spec.skeleton is not None:
            cmd += ["-k", spec.skeleton]
    else:
        cmd.append("-M")
    if spec.system:
        cmd.append("-r")
    return cmd + [spec.name]


def _usermod_cmd(spec, ctx, info):
    """The usermod command that brings ``info`` to ``spec``, or None when nothing differs."""
    cmd = []
    if spec.uid is not None and info.pw_uid != spec.uid:
        cmd += ["-u", str(spec.uid)]
        if spec.non_unique:
            cmd.append("-o")
    if spec.group is not None:
        entry = _require_group(spec.group)
        if info.pw_gid != entry.gr_gid:
            cmd += ["-g", str(entry.gr_gid)]
    if spec.groups is not None:
        cmd += _groups_change(spec, info)
    if spec.comment is not None and info.pw_gecos != spec.comment:
        cmd += ["-c", spec.comment]
    if spec.home is not None and info.pw_dir != spec.home:
        cmd += ["-d", spec.home]
        if spec.move_home:
            cmd.append("-m")
    if spec.shell is not None and info.pw_shell != spec.shell:
        cmd += ["-s", spec.shell]
    current_hash, current_expire = shadow_entry(spec.name)
    if spec.expires is not None:
        cmd += _expires_change(spec.expires, current_expire)
    if spec.password_lock and not current_hash.startswith("!"):
        cmd.append("-L")
    elif spec.password_lock is False and current_hash.startswith("!"):
        cmd.append("-U")
    if (spec.update_password == "always" and spec.password is not None
            and current_hash.lstrip("!") != spec.password.lstrip("!")):
        cmd = [c for c in cmd if c not in ("-U", "-L")]
        cmd += ["-p", ("!" + spec.password) if spec.password_lock else spec.password]
    if not cmd:
        return None
    return [_common.require_bin("usermod", ctx)] + cmd + [spec.name]


def _groups_change(spec, info):
    current = _memberships(spec.name)
    wanted = _wanted_groups(spec, None, False)
    if not wanted:
        return ["-G", ""] if current and not spec.append else []
    diff = set(current).symmetric_difference(wanted)
    if not diff:
        return []
    if spec.append:
        if any(g in diff for g in wanted):
            return ["-a", "-G", ",".join(wanted)]
        return []
    return ["-G", ",".join(wanted)]


def _expires_change(expires, current_days):
    if expires < time.gmtime(0):
        return ["-e", ""] if current_days >= 0 else []
    current = time.gmtime(current_days * 86400)
    if current_days < 0 or current[:3] != expires[:3]:
        return ["-e", _expires_arg(expires)]
    return []


def _create_homedir(spec, path):
    """Create a home directory from the skeleton, like Ansible's create_homedir."""
    if os.path.exists(path):
        return
    skeleton = spec.skeleton if spec.skeleton is not None else _SKELETON
    try:
        if os.path.exists(skeleton) and skeleton != os.devnull:
            shutil.copytree(skeleton, path, symlinks=True)
        else:
            os.makedirs(path)
        umask = _login_defs_umask()
        if umask is not None:
            os.chmod(path, 0o777 & ~umask)
    except OSError as e:
        raise ModuleError(str(e))


def _login_defs_umask():
    try:
        with open(_LOGIN_DEFS) as f:
            for line in f:
                m = re.match(r"^UMASK\s+(\d+)$", line)
                if m:
                    return int(m.group(1), 8)
    except OSError:
        pass
    return None


def _chown_homedir(uid, gid, path):
    try:
        os.chown(path, uid, gid)
        for root, dirs, files in os.walk(path):
            for d in dirs:
                os.chown(os.path.join(root, d), uid, gid)
            for f in files:
                full = os.path.join(root, f)
                if not os.path.islink(full):
                    os.chown(full, uid, gid)
    except OSError as e:
        raise ModuleError(str(e))


def _execute(spec, ctx, cmd):
    """Run a user command (nothing in check mode); fail on a non-zero rc."""
    if ctx.check_mode:
        return 0, "", ""
    rc, out, err = _common.run_text(ctx, cmd)
    if spec.password:
        out, err = out.replace(spec.password, _NOT_LOGGING), err.replace(spec.password, _NOT_LOGGING)
    if rc != 0:
        raise ModuleError(err, name=spec.name, rc=rc)
    return rc, out, err


def _absent(spec, ctx, result):
    if _user_info(spec.name) is None:
        return None, "", ""
    if ctx.check_mode:
        raise _Done({"changed": True})
    cmd = [_common.require_bin("userdel", ctx)]
    if spec.force:
        cmd.append("-f")
    if spec.remove:
        cmd.append("-r")
    rc = _execute(spec, ctx, cmd + [spec.name])
    result.update(force=spec.force, remove=spec.remove)
    return rc


def _present(spec, ctx, result):
    info = _user_info(spec.name)
    if info is None:
        if ctx.check_mode:
            raise _Done({"changed": True})
        needs_parents = bool(spec.home and spec.create_home
                             and not os.path.isdir(os.path.dirname(spec.home)))
        out = _execute(spec, ctx, _useradd_cmd(spec, ctx))
        created = _user_info(spec.name)
        if needs_parents and created is not None:
            _chown_homedir(created.pw_uid, created.pw_gid, spec.home)
        result.update(system=spec.system, create_home=spec.create_home)
    else:
        cmd = _usermod_cmd(spec, ctx, info)
        out = (None, "", "") if cmd is None else _execute(spec, ctx, cmd)
        result.update(append=spec.append, move_home=spec.move_home)
    if spec.password is not None:
        result["password"] = _NOT_LOGGING
    return out


class _Done(Exception):
    """Ends the module early with ``result`` (Ansible's exit_json in check mode)."""

    def __init__(self, result):
        Exception.__init__(self)
        self.result = result


def _add_user_info(spec, ctx, result):
    info = _user_info(spec.name)
    if info is None:
        return
    result.update(uid=info.pw_uid, group=info.pw_gid, comment=info.pw_gecos,
                  home=info.pw_dir, shell=info.pw_shell)
    if spec.groups is not None:
        result["groups"] = ",".join(spec.groups)
    home = spec.home if spec.home is not None else info.pw_dir
    if spec.create_home and not os.path.exists(home):
        if not ctx.check_mode:
            _create_homedir(spec, home)
            _chown_homedir(info.pw_uid, info.pw_gid, home)
        result["changed"] = True


@_common.module_entry
def run(args, ctx):
    """Ensure user ``name`` is present or absent (see the module docstring)."""
    _common.check_unsupported(args, OPTIONS, "user")
    spec = _Spec(args)
    warnings = []
    if spec.password and not password_looks_hashed(spec.password):
        warnings.append("The input password appears not to have been hashed. The 'password' "
                        "argument must be encrypted for this module to work properly.")
    result = {"name": spec.name, "state": spec.state}
    try:
        if spec.state == "absent":
            rc, out, err = _absent(spec, ctx, result)
        else:
            rc, out, err = _present(spec, ctx, result)
    except _Done as done:
        result = done.result
        rc, out, err = 0, "", ""
    else:
        result["changed"] = rc is not None
        if out:
            result["stdout"] = out
        if err:
            result["stderr"] = err
        if spec.state == "present":
            _add_user_info(spec, ctx, result)
    if warnings:
        result["warnings"] = warnings
    return result
