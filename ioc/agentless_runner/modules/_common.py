"""Helpers shared by the built-in modules (stdlib only, Python 3.9+).

Argument conversion mirrors ``AnsibleModule``'s (booleans, ``path``
expansion, aliases); filesystem helpers mirror ``set_fs_attributes_if_different``,
``add_path_info`` and ``atomic_move``; :func:`run_command` mirrors
``AnsibleModule.run_command`` closely enough for ``command``/``shell`` and
``validate``.
"""
import functools
import grp
import hashlib
import os
import pwd
import re
import shlex
import stat
import subprocess
import tempfile
import time

from ioc.agentless_runner import lifeline
from ioc.agentless_runner.context import ModuleError, as_boolean

_VALID_BOOLS = "'no', 'on', 'f', 'false', 'n', 'y', '0', '1', 'off', 'true', 'yes', 't'"

PERM_BITS = 0o7777
_MODE_OPERATOR_RE = re.compile(r"[+=-]")
_USERS_RE = re.compile(r"^[ugo]+$")
_PERMS_RE = re.compile(r"^[rwxXstugo]*$")


# --------------------------------------------------------------------------
# Entry point plumbing and argument handling
# --------------------------------------------------------------------------

def module_entry(fn):
    """Wrap a module's ``run`` so ModuleError becomes a failed result dict.

    The wrapped function gets a shallow copy of ``args`` (modules pop from it
    freely) and its result always carries ``changed``.
    """
    @functools.wraps(fn)
    def run(args, ctx):
        try:
            result = fn(dict(args or {}), ctx)
        except ModuleError as e:
            # fail_json, like exit_json, adds the path's details (add_path_info)
            result = add_path_info(dict(e.result))
            result["failed"] = True
            result["msg"] = e.msg
        result.setdefault("changed", False)
        return result
    return run


def check_unsupported(args, options, name):
    """Fail like AnsibleModule on arguments outside ``options``.

    Keys starting with ``_ioc_`` are the executor's and always allowed.
    """
    bad = sorted(k for k in args if k not in options and not str(k).startswith("_ioc_"))
    if bad:
        raise ModuleError(
            "Unsupported parameters for (%s) module: %s. Supported parameters include: %s."
            % (name, ", ".join(bad), ", ".join(sorted(o for o in options if not o.startswith("_")))))


def resolve_aliases(args, canonical, aliases):
    """Move the first alias present in ``args`` to ``canonical`` (an alias wins, as in Ansible)."""
    for alias in aliases:
        if alias in args:
            args[canonical] = args.pop(alias)
    return args.get(canonical)


def boolean(value, name):
    """Convert ``value`` to bool the way Ansible's ``type='bool'`` does."""
    converted = as_boolean(value)
    if converted is not None:
        return converted
    raise ModuleError(
        "argument '%s' is of type %s and we were unable to convert to bool: "
        "The value '%s' is not a valid boolean.  Valid booleans include: %s"
        % (name, type(value), value, _VALID_BOOLS))


def opt_bool(args, name, default):
    """``args[name]`` as a bool, ``default`` when absent or None."""
    value = args.get(name)
    return default if value is None else boolean(value, name)


def opt_path(value):
    """Expand ``~`` and ``$VARS`` like Ansible's ``type='path'``; None stays None."""
    if value is None:
        return None
    return os.path.expanduser(os.path.expandvars(str(value)))


def opt_str(args, name, default=None):
    """``args[name]`` as a str (None and absence give ``default``)."""
    value = args.get(name)
    return default if value is None else str(value)


def check_choice(value, name, choices):
    """Fail like Ansible when ``value`` is not one of ``choices``."""
    if value not in choices:
        raise ModuleError("value of %s must be one of: %s, got: %s"
                          % (name, ", ".join(choices), value))
    return value


# --------------------------------------------------------------------------
# Modes
# --------------------------------------------------------------------------

def get_umask():
    """The process umask, read without changing it when /proc allows."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def parse_mode(mode, path_stat):
    """Return ``mode`` (int, octal string or symbolic string) as an int.

    ``path_stat`` is the current stat of the file (symbolic modes are
    relative to it). Raises ModuleError with Ansible's messages.
    """
    if isinstance(mode, int) and not isinstance(mode, bool):
        return mode
    mode = str(mode)
    try:
        return int(mode, 8)
    except ValueError:
        pass
    try:
        value = symbolic_mode_to_octal(path_stat, mode)
    except ValueError as e:
        raise ModuleError("mode must be in octal or symbolic form", details=str(e))
    if value != stat.S_IMODE(value):
        raise ModuleError("Invalid mode supplied, only permission info is allowed", details=value)
    return value


def symbolic_mode_to_octal(path_stat, symbolic_mode):
    """Apply chmod-style ``symbolic_mode`` ('u+rwx,g-w,o=r') to the file's mode."""
    new_mode = stat.S_IMODE(path_stat.st_mode)
    for clause in symbolic_mode.split(","):
        permlist = _MODE_OPERATOR_RE.split(clause)
        opers = _MODE_OPERATOR_RE.findall(clause)
        users = permlist.pop(0)
        use_umask = users == ""
        if users in ("a", ""):
            users = "ugo"
        if not _USERS_RE.match(users):
            raise ValueError("bad symbolic permission for mode: %s" % clause)
        for idx, perms in enumerate(permlist):
            if not _PERMS_RE.match(perms):
                raise ValueError("bad symbolic permission for mode: %s" % clause)
            for user in users:
                bits = _symbolic_perm_bits(path_stat, user, perms, use_umask, new_mode)
                new_mode = _apply_operation(user, opers[idx], bits, new_mode)
    return new_mode


def _apply_operation(user, operator, bits, current):
    """Apply one ``+``/``-``/``=`` operation for ``user`` ('u', 'g' or 'o')."""
    if operator == "=":
        mask = {"u": stat.S_IRWXU | stat.S_ISUID,
                "g": stat.S_IRWXG | stat.S_ISGID,
                "o": stat.S_IRWXO | stat.S_ISVTX}[user]
        return (current & (mask ^ PERM_BITS)) | bits
    if operator == "+":
        return current | bits
    return current - (current & bits)


def _symbolic_perm_bits(path_stat, user, perms, use_umask, prev_mode):
    """The mode bits ``perms`` ('rwX'...) stand for, for ``user``."""
    apply_x = stat.S_ISDIR(path_stat.st_mode) or bool(prev_mode & 0o111)
    rev_umask = get_umask() ^ PERM_BITS if use_umask else PERM_BITS
    shift = {"u": 6, "g": 3, "o": 0}[user]
    table = {
        "r": rev_umask & (0o4 << shift),
        "w": rev_umask & (0o2 << shift),
        "x": rev_umask & (0o1 << shift),
        "X": (0o1 << shift) if apply_x else 0,
        "s": {"u": stat.S_ISUID, "g": stat.S_ISGID, "o": 0}[user],
        "t": stat.S_ISVTX if user == "o" else 0,
    }
    for src, src_shift in (("u", 6), ("g", 3), ("o", 0)):
        table[src] = ((prev_mode >> src_shift) & 0o7) << shift
    result = 0
    for perm in perms:
        result |= table[perm]
    return result


def format_mode(mode):
    """Ansible's mode string: '0644', '01777'."""
    return "0%03o" % stat.S_IMODE(mode)


# --------------------------------------------------------------------------
# Ownership, attributes, path info
# --------------------------------------------------------------------------

def lookup_uid(owner, path):
    """uid for a user name or number (numbers need no passwd entry)."""
    try:
        return int(owner)
    except ValueError:
        try:
            return pwd.getpwnam(owner).pw_uid
        except KeyError:
            raise ModuleError("chown failed: failed to look up user %s" % owner, path=path)


def lookup_gid(group, path):
    """gid for a group name or number (numbers need no group entry)."""
    try:
        return int(group)
    except ValueError:
        try:
            return grp.getgrnam(group).gr_gid
        except KeyError:
            raise ModuleError("chgrp failed: failed to look up group %s" % group, path=path)


def _diff_set(diff, key, before, after):
    """Record one attribute change in an Ansible-style diff (if any)."""
    if diff is not None:
        diff.setdefault("before", {})[key] = before
        diff.setdefault("after", {})[key] = after


def set_owner(path, owner, check_mode, diff=None):
    """Ensure the owner of ``path`` (not following links); True if changed."""
    return _set_id(path, owner, check_mode, diff, "owner")


def set_group(path, group, check_mode, diff=None):
    """Ensure the group of ``path`` (not following links); True if changed."""
    return _set_id(path, group, check_mode, diff, "group")


def _set_id(path, value, check_mode, diff, kind):
    """The shared body of set_owner/set_group: ``kind`` is "owner" or "group"."""
    if value is None:
        return False
    if check_mode and not os.path.lexists(path):
        return True
    owner = kind == "owner"
    wanted = lookup_uid(str(value), path) if owner else lookup_gid(str(value), path)
    st = os.lstat(path)
    orig = st.st_uid if owner else st.st_gid
    if orig == wanted:
        return False
    _diff_set(diff, kind, orig, wanted)
    if not check_mode:
        try:
            os.lchown(path, wanted if owner else -1, -1 if owner else wanted)
        except OSError as e:
            raise ModuleError("%s failed: %s" % ("chown" if owner else "chgrp", e), path=path)
    return True


def set_mode(path, mode, check_mode, diff=None):
    """Ensure the permission bits of ``path``; True if changed.

    Symlinks keep their own (meaningless) mode, as on Linux with Ansible.
    """
    if mode is None:
        return False
    if check_mode and not os.path.lexists(path):
        return True
    st = os.lstat(path)
    new = parse_mode(mode, st)
    prev = stat.S_IMODE(st.st_mode)
    if prev == new:
        return False
    _diff_set(diff, "mode", format_mode(prev), format_mode(new))
    if check_mode:
        return True
    if stat.S_ISLNK(st.st_mode):
        return False
    try:
        os.chmod(path, new)
    except OSError as e:
        raise ModuleError("chmod failed: %s" % e, path=path)
    return stat.S_IMODE(os.lstat(path).st_mode) != prev


def set_attributes(path, mode, owner, group, check_mode, diff=None):
    """Owner, group then mode, like set_fs_attributes_if_different; True if any changed."""
    changed = set_owner(path, owner, check_mode, diff)
    changed |= set_group(path, group, check_mode, diff)
    changed |= set_mode(path, mode, check_mode, diff)
    return changed


def get_state(path):
    """Ansible's file state of ``path``: absent, link, directory, hard or file."""
    try:
        st = os.lstat(path)
    except OSError:
        return "absent"
    if stat.S_ISLNK(st.st_mode):
        return "link"
    if stat.S_ISDIR(st.st_mode):
        return "directory"
    if st.st_nlink > 1:
        return "hard"
    return "file"


def user_name(uid):
    """User name for ``uid`` or the number as a string."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def group_name(gid):
    """Group name for ``gid`` or the number as a string."""
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def add_path_info(result):
    """Add uid/gid/owner/group/mode/state/size of result's path (or dest), like exit_json."""
    path = result.get("path", result.get("dest"))
    if path is None or not os.path.exists(path):
        return result
    st = os.lstat(path)
    result.update(uid=st.st_uid, gid=st.st_gid, owner=user_name(st.st_uid),
                  group=group_name(st.st_gid), mode=format_mode(st.st_mode),
                  state=get_state(path), size=st.st_size)
    return result


def sha1_file(path):
    """Hex SHA-1 of a file's content."""
    return digest_file(path, "sha1")


def digest_file(path, algorithm):
    """Hex digest of a file's content with ``algorithm`` (hashlib name)."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 16), b""):
            h.update(block)
    return h.hexdigest()


# --------------------------------------------------------------------------
# Writing files
# --------------------------------------------------------------------------

def make_temp_beside(dest):
    """Create an empty temp file in ``dest``'s directory; return its path."""
    fd, tmp = tempfile.mkstemp(prefix=".ansible_tmp", suffix=os.path.basename(dest),
                               dir=os.path.dirname(dest) or ".")
    os.close(fd)
    return tmp


def write_temp_beside(dest, data):
    """Write ``data`` to a new temp file next to ``dest``, fsynced; return its path.

    ``data``: bytes, or a callable that writes them to the open file.
    """
    tmp = make_temp_beside(dest)
    try:
        with open(tmp, "wb") as f:
            if callable(data):
                data(f)
            else:
                f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        remove_quietly(tmp)
        raise
    return tmp


def prepare_temp_attrs(tmp, dest, creating=False):
    """Give ``tmp`` the attributes ``dest`` has (or a new file would get).

    Like Ansible's atomic_move with keep_dest_attrs: an existing file keeps
    its mode and ownership; a new one gets 0666 & ~umask and the directory's
    group when the directory is setgid (also when ``creating`` is forced).
    """
    try:
        dest_stat = None if creating else os.stat(dest)
    except OSError:
        dest_stat = None
    if dest_stat is None:
        os.chmod(tmp, 0o666 & ~get_umask())
        dir_stat = os.stat(os.path.dirname(dest) or ".")
        if dir_stat.st_mode & stat.S_ISGID:
            _chown_quietly(tmp, -1, dir_stat.st_gid)
        return
    os.chmod(tmp, stat.S_IMODE(dest_stat.st_mode))
    _chown_quietly(tmp, dest_stat.st_uid, dest_stat.st_gid)


def _chown_quietly(path, uid, gid):
    """chown, ignoring permission errors (an unprivileged user cannot give files away)."""
    try:
        os.chown(path, uid, gid)
    except PermissionError:
        pass


def replace_file(tmp, dest):
    """Atomically move ``tmp`` over ``dest`` and fsync the directory."""
    os.replace(tmp, dest)
    try:
        fd = os.open(os.path.dirname(dest) or ".", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_quietly(path):
    """Remove a file if it exists."""
    try:
        os.unlink(path)
    except OSError:
        pass


# --------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------

def to_text(data):
    """Decode command output (bytes) to str, replacing undecodable bytes."""
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return data


_VAR = re.compile(r"\$(\w+|\{[^}]*\})", re.ASCII)


def expandvars(text, env=None):
    """``os.path.expandvars`` against ``env`` (the command's environment).

    The module under Ansible runs with the task's ``environment`` applied,
    so ``$VAR`` in a command's arguments sees it; ``os.path.expandvars``
    would read the runner's own. Unknown variables stay as written.
    """
    if env is None or "$" not in text:
        return os.path.expandvars(text) if env is None else text

    def value(match):
        name = match.group(1)
        if name.startswith("{"):
            name = name[1:-1]
        return env.get(name, match.group(0))
    return _VAR.sub(value, text)


def build_argv(args, shell=False, executable=None, expand=True, env=None):
    """The argv (list of bytes) or shell string for :func:`run_command`.

    Returns ``(argv, use_shell)``. Without a shell, a string is shlex-split
    and each argument gets ``~`` and ``$VAR`` expanded (AnsibleModule's
    ``expand_user_and_vars``), ``$VAR`` from ``env`` when given.
    """
    if shell:
        if not isinstance(args, (str, bytes)):
            args = " ".join(shlex.quote(str(a)) for a in args)
        if isinstance(args, str):
            args = args.encode("utf-8", "surrogateescape")
        if executable:
            return [os.fsencode(executable), b"-c", args], False
        return args, True
    if isinstance(args, (str, bytes)):
        args = shlex.split(os.fsdecode(args))
    argv = [str(a) for a in args if a is not None]
    if expand:
        argv = [os.path.expanduser(expandvars(a, env)) for a in argv]
    return [a.encode("utf-8", "surrogateescape") for a in argv], False


def run_command(args, env=None, cwd=None, data=None, shell=False, executable=None,
                expand=True):
    """Run a command; return ``(rc, stdout_bytes, stderr_bytes)``.

    ``data`` (bytes or None) is fed to stdin; without it stdin is /dev/null.
    OSError (e.g. a missing executable) propagates to the caller.
    """
    argv, use_shell = build_argv(args, shell, executable, expand, env)
    proc = lifeline.popen(
        argv, shell=use_shell, cwd=cwd, env=env, close_fds=True,
        stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = lifeline.communicate(proc, data)
    return proc.returncode, out, err


def clean_args(args):
    """A printable command line, as AnsibleModule._clean_args builds it."""
    if isinstance(args, (str, bytes)):
        args = shlex.split(os.fsdecode(args))
    return " ".join(shlex.quote(str(a)) for a in args)


#: Directories AnsibleModule.get_bin_path searches besides $PATH.
_SBIN_DIRS = ("/sbin", "/usr/sbin", "/usr/local/sbin")


def get_bin_path(name, env=None, opt_dirs=()):
    """Path of executable ``name`` like AnsibleModule.get_bin_path, or None.

    Searches ``opt_dirs``, the ``PATH`` of ``env`` (the child environment,
    so a task's ``environment:`` can point at another tool) and the sbin
    directories.
    """
    if os.path.isabs(name):
        return name if os.access(name, os.X_OK) and not os.path.isdir(name) else None
    path = (env or os.environ).get("PATH", os.defpath)
    dirs = list(opt_dirs) + path.split(os.pathsep) + list(_SBIN_DIRS)
    for d in dirs:
        candidate = os.path.join(d, name)
        if d and os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


def run_text(ctx, argv, data=None, cwd=None, env=None):
    """Run ``argv`` (no shell, no expansion) with ``ctx.child_env()``; ``(rc, out, err)`` as str.

    ``env`` entries are added to the child environment (``LANG=C`` for
    parsing output). A missing executable gives rc 127 and the error as
    stderr, like a shell would, rather than an exception.
    """
    child = ctx.child_env()
    if env:
        child.update(env)
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        rc, out, err = run_command([str(a) for a in argv], env=child, cwd=cwd, data=data,
                                   expand=False)
    except OSError as e:
        return 127, "", str(e)
    return rc, to_text(out), to_text(err)


# --------------------------------------------------------------------------
# Editing files in place (copy, template, lineinfile, blockinfile, replace)
# --------------------------------------------------------------------------

def backup_local(dest):
    """Ansible's backup_local: copy ``dest`` to ``dest.<pid>.<YYYY-MM-DD@HH:MM:SS>~``.

    Attributes (mode, times, ownership) are kept; returns the backup's path.
    """
    import shutil
    import time
    backup = "%s.%s.%s" % (dest, os.getpid(), time.strftime("%Y-%m-%d@%H:%M:%S~"))
    try:
        shutil.copy2(dest, backup)
        st = os.stat(dest)
        _chown_quietly(backup, st.st_uid, st.st_gid)
    except OSError as e:
        raise ModuleError("Could not make backup of %s to %s: %s" % (dest, backup, e))
    return backup


def validate_command(validate, path):
    """``validate`` with ``%s`` replaced by ``path``; ModuleError like Ansible when malformed."""
    validate = str(validate)
    if "%s" not in validate:
        raise ModuleError("validate must contain %%s: %s" % validate)
    try:
        return validate % path
    except (TypeError, ValueError) as e:
        raise ModuleError("validate must contain exactly one %%s: %s (%s)" % (validate, e))


def run_validate(validate, path, env=None):
    """Run ``validate`` on ``path``; return ``(rc, stdout_text, stderr_text)``."""
    command = validate_command(validate, path)
    try:
        rc, out, err = run_command(command, env=env)
    except OSError as e:
        raise ModuleError(str(e), rc=e.errno, cmd=clean_args(command))
    return rc, to_text(out), to_text(err)


def edit_validator(validate, env=None):
    """A ``check(tmp)`` for :func:`atomic_write` failing like lineinfile/replace/blockinfile.

    Returns None when ``validate`` is empty.
    """
    if not validate:
        return None

    def check(tmp):
        rc, _out, err = run_validate(validate, tmp, env)
        if rc != 0:
            raise ModuleError("failed to validate: rc:%s error:%s" % (rc, err))
    return check


def atomic_write(dest, data, check=None, creating=None):
    """Replace ``dest`` with ``data`` atomically; the temp file never survives a failure.

    The temp file is written next to ``dest``, fsynced and given ``dest``'s
    mode and ownership (or a new file's: 0666 & ~umask, setgid directory's
    group); ``check(tmp)``, when given, runs before the rename and may raise
    to abort (``validate``). ``creating`` forces new-file attributes (a
    symlink being replaced by a file); by default it is ``not exists(dest)``.
    """
    tmp = write_temp_beside(dest, data)
    try:
        prepare_temp_attrs(tmp, dest, creating=bool(creating))
        if check is not None:
            check(tmp)
        replace_file(tmp, dest)
    except BaseException:
        remove_quietly(tmp)
        raise


def read_bytes(path):
    """The content of ``path`` (bytes)."""
    with open(path, "rb") as f:
        return f.read()


def attribute_diff(path, mode, owner, group, check_mode):
    """Apply owner/group/mode to ``path`` as the edit modules do.

    Returns ``(changed, diff)`` where ``diff`` is the file-attributes part of
    lineinfile's/blockinfile's diff list (headers only when nothing changed).
    """
    diff = {}
    changed = set_attributes(path, mode, owner, group, check_mode, diff)
    diff["before_header"] = "%s (file attributes)" % path
    diff["after_header"] = "%s (file attributes)" % path
    return changed, diff


def attrs_message(changed, msg, attrs_changed):
    """check_file_attrs: append Ansible's attribute message to ``msg``."""
    if not attrs_changed:
        return msg, changed
    if changed:
        msg += " and "
    return msg + "ownership, perms or SE linux context changed", True


def check_mutually_exclusive(args, *groups):
    """Fail like AnsibleModule when two arguments of one group are both given."""
    for group in groups:
        present = [name for name in group if args.get(name) is not None]
        if len(present) > 1:
            raise ModuleError("parameters are mutually exclusive: %s" % "|".join(group))


def edited_file_path(args):
    """``path`` (aliases dest, destfile, name) of the line/block/replace modules, checked."""
    path = opt_path(resolve_aliases(args, "path", ("dest", "destfile", "name")))
    if not path:
        raise ModuleError("missing required arguments: path")
    if os.path.isdir(path):
        raise ModuleError("Path %s is a directory !" % path, rc=256)
    return path
