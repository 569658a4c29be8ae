"""``unarchive``: unpack a tar or zip archive into an existing directory.

The archive is a controller file shipped with the batch
(:meth:`ModuleContext.controller_file`) or, with ``remote_src``, a file on
the target. Formats: tar, tar.gz/tgz, tar.bz2, tar.xz and zip, read with
Python's ``tarfile``/``zipfile`` (no ``tar``/``unzip`` commands needed;
``extra_opts`` is therefore refused).

Idempotence follows what ``tar --diff``/``unzip`` comparisons check: a
member needs extracting when it is missing on disk, has another type, size,
mtime (whole seconds), mode (unless ``mode`` is given) or link target;
``keep_newer`` leaves files that are newer on disk. Nothing is written
unless something differs; the task is changed only then (or when
``owner``/``group``/``mode`` change afterwards, applied to every member and
top-level folder like Ansible). Members whose path would leave ``dest``
(absolute names, ``..``, writing through a symlink) fail the task before
anything is written. Files are written atomically (temp file + rename).
"""
import fnmatch
import io
import os
import shutil
import stat
import tarfile
import time
import zipfile

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({
    "src", "dest", "remote_src", "copy", "creates", "list_files", "keep_newer", "exclude",
    "include", "extra_opts", "validate_certs", "io_buffer_size", "decrypt", "mode", "owner",
    "group", "unsafe_writes",
})
SUPPORTS_CHECK_MODE = True


class _Member(object):
    """One archive member, format-neutral."""

    def __init__(self, name, kind, mode, mtime, size, linkname=None, uid=None, gid=None,
                 uname=None, gname=None, opener=None):
        self.name = name          # normalized relative path, no trailing slash
        self.kind = kind          # "dir", "file", "symlink", "hardlink", "fifo"
        self.mode = mode          # permission bits or None when the archive has none
        self.mtime = mtime
        self.size = size
        self.linkname = linkname
        self.uid, self.gid, self.uname, self.gname = uid, gid, uname, gname
        self.opener = opener      # () -> readable binary file object

    @property
    def listed(self):
        """The name as tar --list / unzip -Z1 print it."""
        return self.name + "/" if self.kind == "dir" else self.name


def _clean_name(raw):
    """Strip './' and trailing slashes; reject names that leave the destination."""
    name = raw
    while name.startswith("./"):
        name = name[2:]
    name = name.rstrip("/")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if raw.startswith("/") or ".." in parts:
        raise ModuleError("Refusing to extract '%s': the member's path leaves the destination "
                          "directory (path traversal)" % raw)
    return "/".join(parts)


def _tar_members(tf):
    members = []
    for info in tf.getmembers():
        name = _clean_name(info.name)
        if not name:
            continue
        if info.isdir():
            kind = "dir"
        elif info.isreg():
            kind = "file"
        elif info.issym():
            kind = "symlink"
        elif info.islnk():
            kind = "hardlink"
        elif info.isfifo():
            kind = "fifo"
        else:
            raise ModuleError("Refusing to extract '%s': device members are not supported"
                              % info.name)
        linkname = info.linkname
        if kind == "hardlink":
            linkname = _clean_name(linkname)
        members.append(_Member(
            name, kind, stat.S_IMODE(info.mode), int(info.mtime), info.size, linkname,
            info.uid, info.gid, info.uname, info.gname,
            (lambda i=info: tf.extractfile(i)) if kind == "file" else None))
    return members


def _zip_members(zf):
    members = []
    for info in zf.infolist():
        name = _clean_name(info.filename)
        if not name:
            continue
        unix = info.external_attr >> 16
        mode = stat.S_IMODE(unix) if unix else None
        mtime = int(time.mktime(info.date_time + (0, 0, -1)))
        if info.is_dir():
            kind, linkname = "dir", None
        elif unix and stat.S_ISLNK(unix):
            kind, linkname = "symlink", zf.read(info).decode("utf-8", "surrogateescape")
        else:
            kind, linkname = "file", None
        members.append(_Member(name, kind, mode, mtime, info.file_size, linkname,
                               opener=(lambda i=info: zf.open(i)) if kind == "file" else None))
    return members


def _open(data, path):
    """``(handler name, members, closer)`` for the archive (bytes ``data`` or file ``path``)."""
    fileobj = io.BytesIO(data) if data is not None else open(path, "rb")
    try:
        head = fileobj.read(6)
        fileobj.seek(0)
        if zipfile.is_zipfile(fileobj):
            fileobj.seek(0)
            zf = zipfile.ZipFile(fileobj)
            return "ZipArchive", _zip_members(zf), zf.close
        fileobj.seek(0)
        handler = "TarArchive"
        if head[:2] == b"\x1f\x8b":
            handler = "TgzArchive"
        elif head[:3] == b"BZh":
            handler = "TarBzipArchive"
        elif head[:6] == b"\xfd7zXZ\x00":
            handler = "TarXzArchive"
        try:
            tf = tarfile.open(fileobj=fileobj, mode="r:*")
        except (tarfile.TarError, EOFError, OSError):
            raise ModuleError(
                'Failed to find handler for "%s". Make sure the required command to extract the '
                "file is installed.\nioc reads tar, tar.gz, tgz, tar.bz2, tar.xz and zip "
                "archives." % (path or "archive"))
        return handler, _tar_members(tf), tf.close
    except BaseException:
        fileobj.close()
        raise


def _filter(members, include, exclude):
    """Apply Ansible's include/exclude globs to member names."""
    def hit(m, patterns):
        return any(fnmatch.fnmatch(m.name, p) for p in patterns)
    if include:
        return [m for m in members if hit(m, include)]
    if exclude:
        return [m for m in members if not hit(m, exclude)]
    return members


def _inside(path, real_dest):
    return path == real_dest or path.startswith(real_dest.rstrip("/") + "/")


def _check_parent(path, real_dest, name):
    """Refuse a member whose existing parent directories lead outside ``dest``."""
    parent = os.path.dirname(path)
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if not _inside(os.path.realpath(parent), real_dest):
        raise ModuleError("Refusing to extract '%s': it would be written through a symlink "
                          "outside the destination directory (path traversal)" % name)


def _needs(m, path, keep_newer, mode_given):
    """None when ``path`` already matches member ``m``, else a short reason."""
    try:
        st = os.lstat(path)
    except OSError:
        return "new"
    if m.kind == "dir":
        if not stat.S_ISDIR(st.st_mode):
            return "type"
    elif m.kind == "symlink":
        if not stat.S_ISLNK(st.st_mode) or os.readlink(path) != m.linkname:
            return "link"
        return None
    elif m.kind == "hardlink":
        return None
    elif m.kind == "fifo":
        if not stat.S_ISFIFO(st.st_mode):
            return "type"
    else:
        if not stat.S_ISREG(st.st_mode):
            return "type"
        if keep_newer and st.st_mtime > m.mtime:
            return None
        if st.st_size != m.size:
            return "size"
        if int(st.st_mtime) != m.mtime:
            return "time"
    if not mode_given and m.mode is not None and stat.S_IMODE(st.st_mode) != m.mode:
        return "mode"
    return None


def _chown_member(path, m):
    """As root, give the file the archive's owner (by name first, like tar)."""
    if os.geteuid() != 0 or m.uid is None:
        return
    uid, gid = m.uid, m.gid
    try:
        import pwd
        uid = pwd.getpwnam(m.uname).pw_uid if m.uname else uid
    except KeyError:
        pass
    try:
        import grp
        gid = grp.getgrnam(m.gname).gr_gid if m.gname else gid
    except KeyError:
        pass
    try:
        os.lchown(path, uid, gid)
    except OSError:
        pass


def _default_mode(kind):
    return (0o777 if kind == "dir" else 0o666) & ~_common.get_umask()


def _extract_one(m, path, dest):
    """Write one member at ``path`` (files atomically)."""
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        os.makedirs(parent)
    exists = os.path.lexists(path)
    is_dir = exists and os.path.isdir(path) and not os.path.islink(path)
    if m.kind == "dir":
        if exists and not is_dir:
            os.unlink(path)
        if not is_dir:
            os.mkdir(path)
        os.chmod(path, m.mode if m.mode is not None else _default_mode("dir"))
        _chown_member(path, m)
        return
    if is_dir:
        raise ModuleError("Cannot extract '%s': a directory is in the way" % m.name)
    if m.kind == "symlink":
        tmp = os.path.join(parent, ".ioc_tmp%s.%s" % (os.getpid(), os.path.basename(path)))
        _common.remove_quietly(tmp)
        os.symlink(m.linkname, tmp)
        os.replace(tmp, path)
        _chown_member(path, m)
        return
    if m.kind == "hardlink":
        if exists:
            os.unlink(path)
        os.link(os.path.join(dest, m.linkname), path)
        return
    if m.kind == "fifo":
        if exists:
            os.unlink(path)
        os.mkfifo(path, m.mode if m.mode is not None else _default_mode("file"))
        return
    tmp = _common.make_temp_beside(path)
    try:
        with open(tmp, "wb") as out:
            src = m.opener()
            try:
                shutil.copyfileobj(src, out, 1 << 16)
            finally:
                src.close()
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, m.mode if m.mode is not None else _default_mode("file"))
        _chown_member(tmp, m)
        os.utime(tmp, (m.mtime, m.mtime))
        os.replace(tmp, path)
    except BaseException:
        _common.remove_quietly(tmp)
        raise


def _source(args, ctx, remote):
    """``(data or None, path on the target or None, src for the result)``."""
    src = str(args["src"])
    if remote:
        if "://" in src:
            raise ModuleError("ioc cannot download archives: src '%s' is a URL (use get_url "
                              "first)" % src)
        path = os.path.abspath(_common.opt_path(src))
        if not os.path.exists(path):
            raise ModuleError("Source '%s' does not exist" % path)
        if not os.access(path, os.R_OK):
            raise ModuleError("Source '%s' not readable" % path)
        if os.path.getsize(path) == 0:
            raise ModuleError("Invalid archive '%s', the file is 0 bytes" % path)
        return None, path, path
    entry = ctx.controller_file(src)
    if entry.get("kind") != "file":
        raise ModuleError("Source '%s' is not a file" % src)
    data = entry.get("content") or b""
    if isinstance(data, str):
        data = data.encode("utf-8")
    shown = entry.get("path") or src
    if not data:
        raise ModuleError("Invalid archive '%s', the file is 0 bytes" % shown)
    return bytes(data), None, shown


def _check_args(args):
    if "copy" in args:
        if "remote_src" in args:
            raise ModuleError("parameters are mutually exclusive: ('copy', 'remote_src')")
        args["remote_src"] = not _common.opt_bool(args, "copy", True)
    if args.get("src") is None or args.get("dest") is None:
        raise ModuleError("src (or content) and dest are required")
    extra = args.get("extra_opts")
    if extra:
        raise ModuleError("extra_opts is not supported by ioc: archives are read with Python's "
                          "tarfile/zipfile, not the tar/unzip commands")
    _common.check_mutually_exclusive(args, ("include", "exclude"))
    for name in ("validate_certs", "decrypt", "unsafe_writes"):
        _common.opt_bool(args, name, True)
    _common.opt_int(args, "io_buffer_size")


def _prepared_line(m, reason):
    ftype = {"dir": "d", "symlink": "L", "hardlink": "h", "fifo": "S"}.get(m.kind, "f")
    if reason == "new":
        return ">%s++++++.?? %s" % (ftype, m.listed)
    return "c%s%s %s" % (ftype, {"size": ".s.......", "time": "..t......",
                                 "mode": "...p.....", "type": "+++++++++",
                                 "link": ".L......."}.get(reason, "........."), m.listed)


@_common.module_entry
def run(args, ctx):
    """Unpack ``src`` into ``dest``."""
    _common.check_unsupported(args, OPTIONS, "unarchive")
    _check_args(args)
    creates = _common.opt_path(args.get("creates"))
    if creates and os.path.exists(creates):
        return {"changed": False, "skipped": True, "msg": "skipped, since %s exists" % creates}
    dest = _common.opt_path(str(args["dest"]))
    if not os.path.isdir(dest):
        raise ModuleError("dest '%s' must be an existing dir" % dest)
    remote = _common.opt_bool(args, "remote_src", False)
    data, path, shown_src = _source(args, ctx, remote)
    handler, members, close = _open(data, path)
    try:
        return _unpack(args, ctx, dest, handler, members, shown_src)
    finally:
        close()


def _unpack(args, ctx, dest, handler, members, shown_src):
    members = _filter(members, _common.opt_list(args, "include", []),
                      _common.opt_list(args, "exclude", []))
    real_dest = os.path.realpath(dest)
    keep_newer = _common.opt_bool(args, "keep_newer", False)
    mode, owner, group = args.get("mode"), _common.opt_str(args, "owner"), \
        _common.opt_str(args, "group")
    todo = []
    links = {}  # symlink members: name -> where they point (absolute, normalized)
    for m in members:
        if m.kind == "symlink":
            base = os.path.dirname(os.path.join(real_dest, m.name))
            links[m.name] = os.path.normpath(os.path.join(base, m.linkname))
    for m in members:
        target = os.path.join(dest, m.name)
        _check_parent(target, real_dest, m.name)
        parts = m.name.split("/")
        for i in range(1, len(parts)):
            through = links.get("/".join(parts[:i]))
            if through is not None and not _inside(through, real_dest):
                raise ModuleError("Refusing to extract '%s': it would be written through a "
                                  "symlink outside the destination directory (path traversal)"
                                  % m.name)
        if m.kind == "hardlink" and not _inside(os.path.normpath(os.path.join(real_dest, m.linkname)),
                                                real_dest):
            raise ModuleError("Refusing to extract '%s': its link target leaves the destination "
                              "directory (path traversal)" % m.name)
        reason = _needs(m, target, keep_newer, mode is not None)
        if reason:
            todo.append((m, target, reason))
    result = {"handler": handler, "dest": dest, "src": shown_src, "changed": bool(todo)}
    if ctx.diff_mode and todo:
        result["diff"] = {"prepared": "".join(_prepared_line(m, r) + "\n" for m, _t, r in todo)}
    if not ctx.check_mode:
        if todo:
            try:
                for m, target, _reason in todo:
                    _check_parent(target, real_dest, m.name)
                    _extract_one(m, target, dest)
                for m, target, _reason in todo:  # directory times last, as tar does
                    if m.kind == "dir":
                        os.utime(target, (m.mtime, m.mtime))
            except OSError as e:
                raise ModuleError("failed to unpack %s to %s: %s" % (shown_src, dest, e),
                                  handler=handler, dest=dest, src=shown_src)
            result["extract_results"] = {
                "cmd": "python %s: extract %d member(s) of %s into %s" % (
                    "zipfile" if handler == "ZipArchive" else "tarfile", len(todo), shown_src,
                    dest),
                "rc": 0, "out": "", "err": ""}
        changed = result["changed"]
        tops = []
        for m in members:
            changed |= _common.set_attributes(os.path.join(dest, m.name), mode, owner, group,
                                              False)
            if "/" in m.name and m.name.split("/")[0] not in tops:
                tops.append(m.name.split("/")[0])
        for top in tops:
            if os.path.lexists(os.path.join(dest, top)):
                changed |= _common.set_attributes(os.path.join(dest, top), mode, owner, group,
                                                  False)
        result["changed"] = changed
    if _common.opt_bool(args, "list_files", False):
        result["files"] = [m.listed for m in members]
    return _common.add_path_info(result)
