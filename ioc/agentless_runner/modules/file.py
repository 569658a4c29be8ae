"""``file``: manage files and directories and their attributes.

States ``file``, ``directory``, ``touch``, ``absent``, ``link`` and
``hard`` follow ``ansible.builtin.file`` (changed flags, messages, diff,
check mode, returned path info). A relative symlink ``src`` is stored as
given and resolved against the link's directory, as Ansible does; a
relative hard-link ``src`` is relative to the working directory.
"""
import os
import shutil
import time

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({
    "path", "dest", "name", "state", "mode", "owner", "group", "recurse", "force",
    "follow", "src", "modification_time", "modification_time_format",
    "access_time", "access_time_format", "unsafe_writes", "_original_basename",
    "_diff_peek",
})
SUPPORTS_CHECK_MODE = True

STATES = ("absent", "directory", "file", "hard", "link", "touch")
_NOW = object()  # timestamp sentinel: "now"


class _Params(object):
    """The validated arguments of one invocation."""

    def __init__(self, args, ctx):
        self.path = _common.opt_path(_common.resolve_aliases(args, "path", ("dest", "name")))
        if not self.path:
            raise ModuleError("missing required arguments: path")
        self.state = args.get("state")
        if self.state is not None:
            _common.check_choice(self.state, "state", STATES)
        self.mode = args.get("mode")
        self.owner = _common.opt_str(args, "owner")
        self.group = _common.opt_str(args, "group")
        self.recurse = _common.opt_bool(args, "recurse", False)
        self.follow = _common.opt_bool(args, "follow", True)
        self.force = _common.opt_bool(args, "force", False)
        self.src = _common.opt_path(args.get("src"))
        self.original_basename = args.get("_original_basename")
        self.args = args
        self.check_mode = ctx.check_mode

    def timestamp(self, name):
        """mtime/atime wanted: None (preserve), _NOW or a number."""
        value = self.args.get(name)
        if value is None:
            value = "now" if self.state == "touch" else "preserve"
        if value == "now":
            return _NOW
        if value == "preserve":
            return None
        fmt = self.args.get(name + "_format") or "%Y%m%d%H%M.%S"
        try:
            return time.mktime(time.strptime(value, fmt))
        except (ValueError, OverflowError) as e:
            raise ModuleError("Error while obtaining timestamp for time %s using format %s: %s"
                              % (value, fmt, e))

    def attrs(self, path, diff=None):
        """Apply owner/group/mode to ``path``; True if changed."""
        return _common.set_attributes(path, self.mode, self.owner, self.group,
                                      self.check_mode, diff)


def _finish(result, diff_mode):
    """Drop the diff unless asked for, then add path info like exit_json."""
    if not diff_mode:
        result.pop("diff", None)
    return _common.add_path_info(result)


def _initial_diff(path, state, prev_state):
    """Ansible's initial_diff: path, state change, and the content of a doomed directory."""
    diff = {"before": {"path": path}, "after": {"path": path}}
    if prev_state != state:
        diff["before"]["state"] = prev_state
        diff["after"]["state"] = state
        if state == "absent" and prev_state == "directory":
            walk = {"directories": [], "files": []}
            for base, dirs, files in os.walk(path):
                walk["directories"].extend(os.path.join(base, d) for d in dirs)
                walk["files"].extend(os.path.join(base, f) for f in files)
            diff["before"]["path_content"] = walk
    return diff


def _update_timestamps(path, p, diff=None):
    """Ansible's update_timestamp_for_file; True if times were (or would be) set."""
    mtime, atime = p.timestamp("modification_time"), p.timestamp("access_time")
    if mtime is None and atime is None:
        return False
    try:
        st = os.stat(path)
        if mtime is _NOW and atime is _NOW:
            mtime = atime = time.time()
            times = None
        else:
            mtime = st.st_mtime if mtime is None else (time.time() if mtime is _NOW else mtime)
            atime = st.st_atime if atime is None else (time.time() if atime is _NOW else atime)
            if mtime == st.st_mtime and atime == st.st_atime:
                return False
            times = (atime, mtime)
        if not p.check_mode:
            os.utime(path, times)
    except OSError as e:
        raise ModuleError("Error while updating modification or access time: %s" % e, path=path)
    if diff is not None:
        for key, before, after in (("mtime", st.st_mtime, mtime), ("atime", st.st_atime, atime)):
            if before != after:
                diff.setdefault("before", {})[key] = before
                diff.setdefault("after", {})[key] = after
    return True


def _followed(path, p):
    """``(path, state)`` after following a symlink when ``follow`` is set."""
    state = _common.get_state(path)
    if p.follow and state == "link":
        path = os.path.realpath(path)
        state = _common.get_state(path)
    return path, state


def _ensure_absent(p):
    """state=absent: remove a file, link or directory tree."""
    prev = _common.get_state(p.path)
    if prev == "absent":
        return {"path": p.path, "changed": False, "state": "absent"}
    diff = _initial_diff(p.path, "absent", prev)
    if not p.check_mode:
        if prev == "directory":
            try:
                shutil.rmtree(p.path)
            except Exception as e:
                raise ModuleError("rmtree failed: %s" % e)
        else:
            try:
                os.unlink(p.path)
            except FileNotFoundError:
                pass
            except OSError as e:
                raise ModuleError("unlinking failed: %s " % e, path=p.path)
    return {"path": p.path, "changed": True, "diff": diff, "state": "absent"}


def _ensure_file(p):
    """state=file: the file must exist; enforce its attributes."""
    path, prev = _followed(p.path, p)
    if prev not in ("file", "hard"):
        raise ModuleError("file (%s) is %s, cannot continue" % (path, prev), path=path, state=prev)
    diff = _initial_diff(path, "file", prev)
    changed = p.attrs(path, diff)
    changed |= _update_timestamps(path, p, diff)
    return {"path": path, "changed": changed, "diff": diff}


def _make_dirs(path, p, diff):
    """mkdir -p ``path``, applying attributes to every directory created."""
    changed = False
    curpath = ""
    try:
        for part in path.strip("/").split("/"):
            curpath = "/".join([curpath, part])
            if not os.path.isabs(path):
                curpath = curpath.lstrip("/")
            if os.path.exists(curpath):
                continue
            try:
                os.mkdir(curpath)
                changed = True
            except FileExistsError:
                if not os.path.isdir(curpath):
                    raise
            changed |= p.attrs(curpath, diff)
            changed |= _update_timestamps(curpath, p, diff)
    except OSError as e:
        raise ModuleError("There was an issue creating %s as requested: %s" % (curpath, e),
                          path=path)
    return changed


def _ensure_directory(p):
    """state=directory: create (mkdir -p) and enforce attributes, maybe recursively."""
    path, prev = _followed(p.path, p)
    diff = _initial_diff(path, "directory", prev)
    if prev == "absent":
        if p.check_mode:
            return {"path": path, "changed": True, "diff": diff}
        return {"path": path, "changed": _make_dirs(path, p, diff), "diff": diff}
    if prev != "directory":
        raise ModuleError("%s already exists as a %s" % (path, prev), path=path)
    changed = p.attrs(path, diff)
    changed |= _update_timestamps(path, p, diff)
    if p.recurse:
        changed |= _recurse(path, p)
    return {"path": path, "changed": changed, "diff": diff}


def _recurse(top, p, seen=None):
    """Apply attributes below ``top`` (links themselves, and their targets with follow)."""
    seen = seen if seen is not None else {os.path.realpath(top)}
    changed = False
    for root, dirs, files in os.walk(top):
        for name in dirs + files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                changed |= p.attrs(path)
                changed |= _update_timestamps(path, p)
                continue
            changed |= _common.set_owner(path, p.owner, p.check_mode)
            changed |= _common.set_group(path, p.group, p.check_mode)
            if p.follow:
                changed |= _recurse_link(path, p, seen)
    return changed


def _recurse_link(link, p, seen):
    """With follow: apply attributes to a link's target (and into a linked directory)."""
    target = os.path.realpath(link)
    if not os.path.exists(target) or target in seen:
        return False
    seen.add(target)
    changed = _recurse(target, p, seen) if os.path.isdir(target) else False
    return changed | p.attrs(target) | _update_timestamps(target, p)


def _touch(p):
    """state=touch: create an empty file if needed, then set attributes and times."""
    path = p.path
    prev = _common.get_state(path)
    result = {"dest": path}
    changed = False
    if prev == "absent":
        if p.check_mode:
            result["changed"] = True
            return result
        try:
            open(path, "wb").close()
            changed = True
        except OSError as e:
            raise ModuleError("Error, could not touch target: %s" % e, path=path)
    diff = _initial_diff(path, "touch", prev)
    target = os.path.realpath(path) if p.follow and prev == "link" else path
    try:
        changed |= p.attrs(target, diff)
        changed |= _update_timestamps(target, p, diff)
    except ModuleError:
        if prev == "absent":
            _common.remove_quietly(path)
        raise
    result.update(changed=changed, diff=diff)
    return result


def _default_state(p):
    """Apply Ansible's additional_parameter_handling to ``p``."""
    if p.state not in ("absent", "link", None) and os.path.isdir(p.path):
        base = p.original_basename or (os.path.basename(p.src) if p.src else None)
        if base:
            p.path = os.path.join(p.path, base)
    if p.state is None:
        prev = _common.get_state(p.path)
        p.state = prev if prev != "absent" else ("directory" if p.recurse else "file")
    if p.recurse and p.state != "directory":
        raise ModuleError("recurse option requires state to be 'directory'", path=p.path)
    if p.src and p.state not in ("link", "hard"):
        raise ModuleError("src option requires state to be 'link' or 'hard'", path=p.path)


def _diff_peek(path):
    """The file module's _diff_peek answer: does the file look binary?"""
    try:
        with open(path, "rb") as f:
            return b"\x00" in f.read(8192)
    except OSError:
        return False


def _link_attrs(path, p, changed, diff):
    """Attributes and times after a link exists: on its target when following."""
    target = os.path.realpath(path) if p.follow and os.path.islink(path) else path
    if p.follow and os.path.islink(path) and not os.path.exists(target):
        return changed, ["Cannot set fs attributes on a non-existent symlink target. follow "
                         "should be set to False to avoid this."]
    changed |= p.attrs(target, diff)
    changed |= _update_timestamps(target, p, diff)
    return changed, []


def _replace_atomically(path, make):
    """Create the new link at a temp name with ``make(tmp)`` then rename it over ``path``."""
    tmp = os.path.join(os.path.dirname(path), ".%s.%s.tmp" % (os.getpid(), time.time()))
    try:
        make(tmp)
        os.rename(tmp, path)
    except OSError as e:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise ModuleError("Error while replacing: %s" % e, path=path)


def _ensure_symlink(p):
    """state=link: Ansible's ensure_symlink."""
    path, src = p.path, p.src
    prev = _common.get_state(path)
    if src is None and p.follow and os.path.exists(path) and prev == "link":
        src = os.readlink(path)
    relpath = path if (not os.path.islink(path) and os.path.isdir(path)) else os.path.dirname(path)
    absrc = None if src is None else os.path.join(relpath, src)
    if not p.force and src is not None and not os.path.exists(absrc):
        raise ModuleError('src file does not exist, use "force=yes" if you really want to '
                          'create the link: %s' % absrc, path=path, src=src)
    if prev == "directory":
        if not p.force:
            raise ModuleError("refusing to convert from %s to symlink for %s" % (prev, path),
                              path=path)
        if os.listdir(path):
            raise ModuleError("the directory %s is not empty, refusing to convert it" % path,
                              path=path)
    elif prev in ("file", "hard") and not p.force:
        raise ModuleError("refusing to convert from %s to symlink for %s" % (prev, path), path=path)
    diff = _initial_diff(path, "link", prev)
    changed = False
    if prev in ("hard", "file", "directory", "absent"):
        if src is None:
            raise ModuleError("src is required for creating new symlinks")
        changed = True
    elif src is not None:
        old = os.readlink(path)
        if old != src:
            diff["before"]["src"] = old
            diff["after"]["src"] = src
            changed = True
    if changed and not p.check_mode:
        if prev == "absent":
            try:
                os.symlink(src, path)
            except OSError as e:
                raise ModuleError("Error while linking: %s" % e, path=path)
        else:
            def make(tmp):
                if prev == "directory":
                    os.rmdir(path)
                os.symlink(src, tmp)
            _replace_atomically(path, make)
    result = {"dest": path, "src": src, "changed": changed, "diff": diff}
    if p.check_mode and not os.path.exists(path):
        return result
    result["changed"], warnings = _link_attrs(path, p, changed, diff)
    if warnings:
        result["warnings"] = warnings
    return result


def _ensure_hardlink(p):
    """state=hard: Ansible's ensure_hardlink."""
    path, src = p.path, p.src
    prev = _common.get_state(path)
    if prev != "hard" and src is None:
        raise ModuleError("src is required for creating new hardlinks")
    if src is not None and not os.path.exists(src):
        raise ModuleError("src does not exist", dest=path, src=src)
    diff = _initial_diff(path, "hard", prev)
    changed = False
    if prev == "absent":
        changed = True
    elif prev == "link":
        old = os.readlink(path)
        if old != src:
            diff["before"]["src"] = old
            diff["after"]["src"] = src
            changed = True
    elif prev == "hard":
        if src is not None and os.stat(path).st_ino != os.stat(src).st_ino:
            changed = True
            if not p.force:
                raise ModuleError("Cannot link, different hard link exists at destination",
                                  dest=path, src=src)
    elif prev == "file":
        changed = True
        if not p.force:
            raise ModuleError("Cannot link, %s exists at destination" % prev, dest=path, src=src)
    elif prev == "directory":
        changed = True
        if os.stat(path).st_ino == os.stat(src).st_ino:
            return {"path": path, "changed": False}
        if not p.force:
            raise ModuleError("Cannot link: different hard link exists at destination",
                              dest=path, src=src)
    if changed and not p.check_mode:
        if prev == "absent":
            link_src = os.readlink(src) if p.follow and os.path.islink(src) else src
            try:
                os.link(link_src, path)
            except OSError as e:
                raise ModuleError("Error while linking: %s" % e, path=path)
        else:
            def make(tmp):
                if prev == "directory":
                    os.rmdir(path)
                os.link(src, tmp)
            _replace_atomically(path, make)
    result = {"dest": path, "src": src, "changed": changed, "diff": diff}
    if p.check_mode and not os.path.exists(path):
        return result
    result["changed"] |= p.attrs(path, diff)
    result["changed"] |= _update_timestamps(path, p, diff)
    return result


_HANDLERS = {"absent": _ensure_absent, "file": _ensure_file,
             "directory": _ensure_directory, "touch": _touch,
             "link": _ensure_symlink, "hard": _ensure_hardlink}


@_common.module_entry
def run(args, ctx):
    """Bring ``path`` to ``state`` with the requested attributes."""
    _common.check_unsupported(args, OPTIONS, "file")
    p = _Params(args, ctx)
    if args.get("_diff_peek") is not None:
        return {"path": p.path, "changed": False, "appears_binary": _diff_peek(p.path)}
    _default_state(p)
    return _finish(_HANDLERS[p.state](p), ctx.diff_mode)
