"""``find``: list files matching criteria (a port of ``ansible.builtin.find``).

Patterns match basenames (shell globs, or Python regexes with
``use_regex``, matched from the start); ``excludes`` filter pattern
matches; ``file_type`` file/directory/link/any; ``recurse``/``depth``/
``follow``; ``hidden``; ``age`` (``-1d``, ``3w``...) on ``age_stamp``;
``size`` (``-10k``, ``1m``...); ``contains`` (regex, per line or whole file);
``mode``/``exact_mode``; ``get_checksum``; ``limit``. Returns ``files``
(stat-like dicts), ``matched``, ``examined``, ``skipped_paths``, ``msg``.
"""
import errno
import fnmatch
import os
import re
import stat
import time

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner import results
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({
    "paths", "name", "path", "patterns", "pattern", "excludes", "exclude", "contains",
    "read_whole_file", "file_type", "age", "age_stamp", "size", "recurse", "hidden",
    "follow", "get_checksum", "checksum_algorithm", "checksum", "checksum_algo",
    "use_regex", "depth", "mode", "exact_mode", "encoding", "limit",
})
SUPPORTS_CHECK_MODE = True

_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_SIZE_UNITS = {"b": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4}


def _pfilter(name, patterns, excludes, use_regex):
    """Ansible's pfilter: a pattern matches and no exclude does."""
    if not patterns and not excludes:
        return True
    match = (lambda p: re.match(p, name)) if use_regex else (lambda p: fnmatch.fnmatch(name, p))
    for pattern in patterns or ():
        if match(pattern):
            return not any(match(e) for e in excludes or ())
    return False


def _agefilter(st, now, age, stamp):
    if age is None:
        return True
    delta = now - getattr(st, "st_%s" % stamp)
    return delta >= abs(age) if age >= 0 else delta <= abs(age)


def _sizefilter(st, size):
    if size is None:
        return True
    return st.st_size >= abs(size) if size >= 0 else st.st_size <= abs(size)


def _contentfilter(path, pattern, encoding, whole):
    if pattern is None:
        return True
    prog = re.compile(pattern)
    try:
        with open(path, encoding=encoding) as f:
            if whole:
                return bool(prog.search(f.read()))
            for line in f:
                if prog.match(line):
                    return True
    except LookupError:
        raise
    except UnicodeDecodeError:
        raise ModuleError("Failed to read the file %s due to an encoding error. current "
                          "encoding: %s" % (path, encoding or 'None (default determined by the '
                                            'Python built-in function "open")'))
    except Exception:
        pass
    return False


class _ZeroStat(object):
    st_mode = 0


def _modefilter(st, mode, exact):
    if not mode:
        return True
    st_mode = stat.S_IMODE(st.st_mode)
    try:
        wanted = int(mode, 8)
    except ValueError:
        try:
            wanted = _common.symbolic_mode_to_octal(_ZeroStat(), mode)
        except ValueError as e:
            raise ModuleError(str(e))
    wanted = stat.S_IMODE(wanted)
    return st_mode == wanted if exact else bool(st_mode & wanted)


def statinfo(st):
    """The stat dict find returns for each match."""
    mode = st.st_mode
    try:
        import pwd
        pw_name = pwd.getpwuid(st.st_uid).pw_name
    except Exception:
        pw_name = ""
    try:
        import grp
        gr_name = grp.getgrgid(st.st_gid).gr_name
    except Exception:
        gr_name = ""
    info = {
        "mode": "%04o" % stat.S_IMODE(mode), "isdir": stat.S_ISDIR(mode),
        "ischr": stat.S_ISCHR(mode), "isblk": stat.S_ISBLK(mode), "isreg": stat.S_ISREG(mode),
        "isfifo": stat.S_ISFIFO(mode), "islnk": stat.S_ISLNK(mode),
        "issock": stat.S_ISSOCK(mode), "uid": st.st_uid, "gid": st.st_gid,
        "size": st.st_size, "inode": st.st_ino, "dev": st.st_dev, "nlink": st.st_nlink,
        "atime": st.st_atime, "mtime": st.st_mtime, "ctime": st.st_ctime,
        "gr_name": gr_name, "pw_name": pw_name,
        "wusr": bool(mode & stat.S_IWUSR), "rusr": bool(mode & stat.S_IRUSR),
        "xusr": bool(mode & stat.S_IXUSR), "wgrp": bool(mode & stat.S_IWGRP),
        "rgrp": bool(mode & stat.S_IRGRP), "xgrp": bool(mode & stat.S_IXGRP),
        "woth": bool(mode & stat.S_IWOTH), "roth": bool(mode & stat.S_IROTH),
        "xoth": bool(mode & stat.S_IXOTH), "isuid": bool(mode & stat.S_ISUID),
        "isgid": bool(mode & stat.S_ISGID),
    }
    if hasattr(st, "st_blocks") and not results.legacy():  # 2.21 added them, 2.19 has none
        info["blocks"] = st.st_blocks
        info["disk_usage_bytes"] = st.st_blocks * 512
    return info


class _Params(object):
    def __init__(self, args):
        self.paths = [_common.opt_path(p) for p in
                      _common.opt_list({"x": _common.resolve_aliases(args, "paths",
                                                                     ("name", "path"))}, "x")
                      or []]
        if not self.paths:
            raise ModuleError("missing required arguments: paths")
        self.use_regex = _common.opt_bool(args, "use_regex", False)
        _common.resolve_aliases(args, "patterns", ("pattern",))
        self.patterns = _common.opt_list(args, "patterns", []) or \
            ([".*"] if self.use_regex else ["*"])
        _common.resolve_aliases(args, "excludes", ("exclude",))
        self.excludes = _common.opt_list(args, "excludes")
        self.contains = _common.opt_str(args, "contains")
        self.read_whole_file = _common.opt_bool(args, "read_whole_file", False)
        self.file_type = _common.check_choice(args.get("file_type") or "file", "file_type",
                                              ("any", "directory", "file", "link"))
        self.age_stamp = _common.check_choice(args.get("age_stamp") or "mtime", "age_stamp",
                                              ("atime", "ctime", "mtime"))
        self.age = _parse_unit(args, "age", r"^(-?\d+)(s|m|h|d|w)?$", _AGE_UNITS)
        self.size = _parse_unit(args, "size", r"^(-?\d+)(b|k|m|g|t)?$", _SIZE_UNITS)
        self.recurse = _common.opt_bool(args, "recurse", False)
        self.hidden = _common.opt_bool(args, "hidden", False)
        self.follow = _common.opt_bool(args, "follow", False)
        self.get_checksum = _common.opt_bool(args, "get_checksum", False)
        algo = _common.resolve_aliases(args, "checksum_algorithm", ("checksum", "checksum_algo"))
        self.algorithm = _common.check_choice(algo or "sha1", "checksum_algorithm",
                                              ("md5", "sha1", "sha224", "sha256", "sha384",
                                               "sha512"))
        self.depth = _common.opt_int(args, "depth")
        mode = args.get("mode")
        if mode is not None and not isinstance(mode, str):
            raise ModuleError("argument 'mode' is not a string and conversion is not allowed, "
                              "value is of type %s" % type(mode).__name__)
        self.mode = mode
        self.exact_mode = _common.opt_bool(args, "exact_mode", True)
        self.encoding = _common.opt_str(args, "encoding")
        self.limit = _common.opt_int(args, "limit")
        if self.limit is not None and self.limit <= 0:
            raise ModuleError("limit cannot be %d (use None for unlimited)" % self.limit)


def _parse_unit(args, name, regex, units):
    value = args.get(name)
    if value is None:
        return None
    m = re.match(regex, str(value).lower())
    if not m:
        raise ModuleError("failed to process %s" % name, **{name: value})
    return int(m.group(1)) * units.get(m.group(2), 1)


def _matches(p, fsobj, fsname, st, now):
    """``(kind_ok, entry)``: whether ``fsname`` is a match, per Ansible's file_type rules."""
    common = _pfilter(fsobj, p.patterns, p.excludes, p.use_regex) and \
        _agefilter(st, now, p.age, p.age_stamp)
    if p.file_type == "any":
        if common and _modefilter(st, p.mode, p.exact_mode):
            return not stat.S_ISREG(st.st_mode) or _sizefilter(st, p.size)
        return False
    if stat.S_ISDIR(st.st_mode) and p.file_type == "directory":
        return common and _modefilter(st, p.mode, p.exact_mode)
    if stat.S_ISREG(st.st_mode) and p.file_type == "file":
        return common and _sizefilter(st, p.size) and \
            _contentfilter(fsname, p.contains, p.encoding, p.read_whole_file) and \
            _modefilter(st, p.mode, p.exact_mode)
    if stat.S_ISLNK(st.st_mode) and p.file_type == "link":
        return common and _modefilter(st, p.mode, p.exact_mode)
    return False


@_common.module_entry
def run(args, ctx):
    """Walk ``paths`` and return the matches."""
    _common.check_unsupported(args, OPTIONS, "find")
    p = _Params(args)
    files, skipped, warnings = [], {}, []
    msg = "All paths examined"
    looked = 0
    now = time.time()

    def onerror(e):
        if e.errno in (errno.EPERM, errno.EACCES):
            skipped[e.filename] = str(e)
            return
        raise e

    for npath in p.paths:
        try:
            if not os.path.isdir(npath):
                raise Exception("'%s' is not a directory" % npath)
            for root, dirs, names in os.walk(npath, onerror=onerror, followlinks=p.follow):
                looked += len(names) + len(dirs)
                for fsobj in names + dirs:
                    fsname = os.path.normpath(os.path.join(root, fsobj))
                    if p.depth:
                        wpath = npath.rstrip(os.sep) + os.sep
                        if fsname.count(os.sep) - wpath.count(os.sep) + 1 > p.depth:
                            del dirs[:]
                            continue
                    if os.path.basename(fsname).startswith(".") and not p.hidden:
                        continue
                    try:
                        st = os.lstat(fsname)
                    except OSError as e:
                        warnings.append("Skipped entry '%s' due to this access issue: %s\n"
                                        % (fsname, e))
                        skipped[fsname] = str(e)
                        continue
                    if _matches(p, fsobj, fsname, st, now):
                        entry = {"path": fsname}
                        entry.update(statinfo(st))
                        if stat.S_ISREG(st.st_mode) and p.get_checksum and \
                                p.file_type in ("any", "file"):
                            entry["checksum"] = _common.digest_file(fsname, p.algorithm)
                        files.append(entry)
                    if len(files) == p.limit:
                        msg = "Limit of matches reached"
                        break
                if not p.recurse or len(files) == p.limit:
                    break
        except ModuleError:
            raise
        except Exception as e:
            skipped[npath] = str(e)
            warnings.append("Skipped '%s' path due to this access issue: %s\n" % (npath, e))
    if warnings:
        msg = "Not all paths examined, check warnings for details"
    result = {"files": files, "changed": False, "msg": msg, "matched": len(files),
              "examined": looked, "skipped_paths": skipped}
    if warnings:
        result["warnings"] = warnings
    return result
