"""``stat``: facts about a path on the target, shaped like ``ansible.builtin.stat``.

As Ansible's module does, ``get_mime`` (default true) runs ``file
--mime-type --mime-encoding`` for ``mimetype``/``charset`` ("unknown" without
``file``) and ``get_attributes`` (default true) runs ``lsattr -vd`` for
``version``/``attr_flags``/``attributes`` (None, "" and [] without it).
"""
import errno
import os
import stat as _stat

from ioc.agentless_runner import results
from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({
    "path", "dest", "name", "follow", "get_checksum", "checksum_algorithm", "checksum",
    "checksum_algo", "get_mime", "mime", "mime_type", "mime-type", "get_attributes",
    "attr", "attributes", "get_selinux_context",
})
SUPPORTS_CHECK_MODE = True

ALGORITHMS = ("md5", "sha1", "sha224", "sha256", "sha384", "sha512")

_PERM_FLAGS = (
    ("wusr", _stat.S_IWUSR), ("rusr", _stat.S_IRUSR), ("xusr", _stat.S_IXUSR),
    ("wgrp", _stat.S_IWGRP), ("rgrp", _stat.S_IRGRP), ("xgrp", _stat.S_IXGRP),
    ("woth", _stat.S_IWOTH), ("roth", _stat.S_IROTH), ("xoth", _stat.S_IXOTH),
    ("isuid", _stat.S_ISUID), ("isgid", _stat.S_ISGID),
)
_PLATFORM_FIELDS = (("st_blocks", "blocks"), ("st_blksize", "block_size"),
                    ("st_rdev", "device_type"))

#: ansible.module_utils.common.file.FILE_ATTRIBUTES: lsattr flag -> name.
FILE_ATTRIBUTES = {
    "A": "noatime", "a": "append", "c": "compressed", "C": "nocow", "d": "nodump",
    "D": "dirsync", "e": "extents", "E": "encrypted", "h": "blocksize", "i": "immutable",
    "I": "indexed", "j": "journalled", "N": "inline", "s": "zero", "S": "synchronous",
    "t": "notail", "T": "blockroot", "u": "undelete", "X": "compressedraw",
    "Z": "compresseddirty",
}


def format_output(path, st):
    """The stat dict Ansible builds from an ``os.stat_result``."""
    mode = st.st_mode
    out = {
        "exists": True, "path": path, "mode": "%04o" % _stat.S_IMODE(mode),
        "isdir": _stat.S_ISDIR(mode), "ischr": _stat.S_ISCHR(mode),
        "isblk": _stat.S_ISBLK(mode), "isreg": _stat.S_ISREG(mode),
        "isfifo": _stat.S_ISFIFO(mode), "islnk": _stat.S_ISLNK(mode),
        "issock": _stat.S_ISSOCK(mode), "uid": st.st_uid, "gid": st.st_gid,
        "size": st.st_size, "inode": st.st_ino, "dev": st.st_dev, "nlink": st.st_nlink,
        "atime": st.st_atime, "mtime": st.st_mtime, "ctime": st.st_ctime,
    }
    for key, bit in _PERM_FLAGS:
        out[key] = bool(mode & bit)
    for attr, key in _PLATFORM_FIELDS:
        if hasattr(st, attr):
            out[key] = getattr(st, attr)
            if attr == "st_blocks" and not results.legacy():  # (new in 2.21's stat)
                out["disk_usage_bytes"] = st.st_blocks * 512
    return out


def _run_quietly(argv, ctx):
    """``(rc, stdout)`` of ``argv``, or None when it cannot run."""
    try:
        rc, out, _err = _common.run_command(argv, env=ctx.child_env())
    except OSError:
        return None
    return rc, _common.to_text(out)


def _add_mime(out, path, ctx):
    """``mimetype``/``charset`` from ``file``, as AnsibleModule-based stat does."""
    out["mimetype"] = out["charset"] = "unknown"
    cmd = _common.get_bin_path("file", ctx.child_env())
    ran = cmd and _run_quietly([cmd, "--mime-type", "--mime-encoding", path], ctx)
    if ran and ran[0] == 0:
        try:
            mimetype, charset = ran[1].rsplit(":", 1)[1].split(";")
            out["mimetype"] = mimetype.strip()
            out["charset"] = charset.split("=")[1].strip()
        except (IndexError, ValueError):
            pass


def _add_attributes(out, path, ctx):
    """``version``/``attr_flags``/``attributes`` from ``lsattr -vd``."""
    out.update(version=None, attributes=[], attr_flags="")
    cmd = _common.get_bin_path("lsattr", ctx.child_env())
    ran = cmd and _run_quietly([cmd, "-vd", path], ctx)
    if ran and ran[0] == 0:
        fields = ran[1].split()
        if len(fields) >= 2:
            flags = fields[1].replace("-", "").strip()
            out.update(version=fields[0].strip(), attr_flags=flags,
                       attributes=[FILE_ATTRIBUTES[f] for f in flags if f in FILE_ATTRIBUTES])


def _add_names_and_access(out, path, st):
    """readable/writeable/executable, link source/target, pw_name/gr_name."""
    out["readable"] = os.access(path, os.R_OK)
    out["writeable"] = os.access(path, os.W_OK)
    out["executable"] = os.access(path, os.X_OK)
    if out["islnk"]:
        out["lnk_source"] = os.path.realpath(path)
        out["lnk_target"] = os.readlink(path)
    name = _common.user_name(st.st_uid)
    if name != str(st.st_uid):
        out["pw_name"] = name
    name = _common.group_name(st.st_gid)
    if name != str(st.st_gid):
        out["gr_name"] = name


@_common.module_entry
def run(args, ctx):
    """Return ``{"changed": False, "stat": {...}}`` for ``path``."""
    _common.check_unsupported(args, OPTIONS, "stat")
    path = _common.opt_path(_common.resolve_aliases(args, "path", ("dest", "name")))
    if not path:
        raise ModuleError("missing required arguments: path")
    algorithm = _common.resolve_aliases(args, "checksum_algorithm", ("checksum", "checksum_algo"))
    algorithm = _common.check_choice(algorithm or "sha1", "checksum_algorithm", ALGORITHMS)
    get_mime = _common.opt_bool(args, _alias_given(args, "get_mime", ("mime", "mime_type",
                                                                     "mime-type")), True)
    get_attributes = _common.opt_bool(args, _alias_given(args, "get_attributes",
                                                         ("attr", "attributes")), True)
    _common.opt_bool(args, "get_selinux_context", False)
    follow = _common.opt_bool(args, "follow", False)
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except OSError as e:
        if e.errno == errno.ENOENT:
            return {"changed": False, "stat": {"exists": False}}
        raise ModuleError(e.strerror)
    out = format_output(path, st)
    _add_names_and_access(out, path, st)
    if out["isreg"] and out["readable"] and _common.opt_bool(args, "get_checksum", True):
        out["checksum"] = _common.digest_file(path, algorithm)
    if get_mime:
        _add_mime(out, path, ctx)
    if get_attributes:
        _add_attributes(out, path, ctx)
    return {"changed": False, "stat": out}


def _alias_given(args, canonical, aliases):
    """The name under which ``canonical`` (or an alias) was passed."""
    return next((a for a in (canonical,) + aliases if a in args), canonical)
