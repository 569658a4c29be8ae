"""``copy``: put content (or a file already on the target) at ``dest``.

Sources, in order: ``_ioc_content`` (bytes the controller read from a
controller-side ``src``), ``content`` (text), or ``src`` with
``remote_src: true`` (a file on the target). Writes are atomic: a temp file
in ``dest``'s directory, fsynced, validated, then renamed over ``dest``.
"""
import hashlib
import json
import os
import shutil
import time

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({
    "src", "content", "dest", "force", "backup", "mode", "owner", "group",
    "validate", "remote_src", "directory_mode", "follow", "local_follow",
    "checksum", "decrypt", "unsafe_writes", "_original_basename",
})
SUPPORTS_CHECK_MODE = True

#: Ansible's MAX_FILE_SIZE_FOR_DIFF default.
MAX_DIFF_SIZE = 104448


class _Source(object):
    """What to write: ``data`` (bytes), a ``name`` for directory dests, and its origin."""

    def __init__(self, data, name=None, remote_path=None, is_content=False, mode=None):
        self.data = data
        self.name = name
        self.remote_path = remote_path
        self.is_content = is_content
        self.mode = mode


def _content_source(args):
    """A _Source from ``_ioc_content`` or ``content``, or None."""
    if "_ioc_content" in args:
        data = args["_ioc_content"]
        if isinstance(data, str):
            data = data.encode("utf-8")
        src = args.get("src")
        name = args.get("_original_basename") or (os.path.basename(src) if src else None)
        return _Source(bytes(data), name=name, is_content=not src,
                       mode=args.get("_ioc_src_mode"))
    if args.get("content") is None:
        return None
    if args.get("src") is not None:
        raise ModuleError("src and content are mutually exclusive")
    content = args["content"]
    if isinstance(content, (dict, list)):
        content = json.dumps(content)
    return _Source(str(content).encode("utf-8"), is_content=True, mode="0600")


def _remote_source(args):
    """A _Source read from ``src`` on the target (``remote_src: true``)."""
    src = _common.opt_path(args["src"])
    if not os.path.exists(src):
        raise ModuleError("Source %s not found" % src)
    if not os.access(src, os.R_OK):
        raise ModuleError("Source %s not readable" % src)
    if os.path.isdir(src):
        raise ModuleError("Cannot copy directory '%s': recursive copy with remote_src is "
                          "not supported by ioc yet" % src)
    if not os.path.isfile(src):
        raise ModuleError("Cannot copy invalid source '%s': not a file" % src)
    with open(src, "rb") as f:
        data = f.read()
    name = args.get("_original_basename") or os.path.basename(src)
    return _Source(data, name=name, remote_path=src, mode=_common.format_mode(os.stat(src).st_mode))


def _source(args):
    """Work out the _Source for these arguments (or fail like Ansible)."""
    source = _content_source(args)
    if source is not None:
        return source
    if args.get("src") is None:
        raise ModuleError("src (or content) is required")
    if not _common.opt_bool(args, "remote_src", False):
        raise ModuleError("src %s is a controller path but the controller sent no content "
                          "(ioc executor bug)" % args["src"])
    return _remote_source(args)


def _mode(args, source):
    """The requested mode, with ``preserve`` resolved to the source's mode."""
    mode = args.get("mode")
    if mode != "preserve":
        return mode
    if source.mode is None:
        raise ModuleError("mode=preserve needs the source's mode, which the controller did not send")
    return source.mode


def _make_parent_dirs(dest, args, ctx):
    """``dest`` ends with '/': create it (mkdir -p, directory_mode); True if created."""
    dirname = os.path.dirname(dest)
    if os.path.exists(dirname) or ctx.check_mode:
        return not os.path.exists(dirname)
    missing = []
    head = dirname
    while head and not os.path.exists(head):
        missing.append(head)
        head = os.path.dirname(head)
    os.makedirs(dirname)
    for path in reversed(missing):
        _common.set_attributes(path, args.get("directory_mode"), args.get("owner"),
                               args.get("group"), False)
    return True


def _resolve_dest(args, source, ctx):
    """Final destination path, and whether directories were created for it."""
    dest = _common.opt_path(args.get("dest"))
    if not dest:
        raise ModuleError("missing required arguments: dest")
    if os.sep not in dest:
        dest = "." + os.sep + dest
    created = False
    if dest.endswith(os.sep):
        if source.is_content:
            raise ModuleError("can not use content with a dir as dest")
        dest = os.path.join(dest, source.name)
        created = _make_parent_dirs(dest, args, ctx)
    if os.path.isdir(dest):
        if source.is_content:
            raise ModuleError("can not use content with a dir as dest")
        dest = os.path.join(dest, source.name)
    if os.path.islink(dest) and _common.opt_bool(args, "follow", False):
        dest = os.path.realpath(dest)
    return dest, created


def _check_dest_dir(dest, ctx, created):
    """Fail like Ansible when the destination directory is missing or read-only."""
    dirname = os.path.dirname(dest)
    if not os.path.exists(dirname) and not (created and ctx.check_mode):
        raise ModuleError("Destination directory %s does not exist" % dirname)
    if os.path.exists(dirname) and not os.access(dirname, os.W_OK):
        raise ModuleError("Destination %s not writable" % dirname)


def _text_or_none(data):
    """``data`` decoded for a diff, or None when it looks binary."""
    if b"\x00" in data:
        return None
    return data.decode("utf-8", "replace")


def _content_diff(dest, source, ctx):
    """The copy action's diff between the current ``dest`` and the new content."""
    diff = {}
    if not os.path.exists(dest):
        diff["before"] = ""
    elif os.path.getsize(dest) > MAX_DIFF_SIZE:
        diff["dst_larger"] = MAX_DIFF_SIZE
    else:
        with open(dest, "rb") as f:
            before = _text_or_none(f.read())
        if before is None:
            diff["dst_binary"] = 1
        else:
            diff.update(before_header=dest, before=before)
    after = _text_or_none(source.data)
    if len(source.data) > MAX_DIFF_SIZE:
        diff["src_larger"] = MAX_DIFF_SIZE
    elif after is None:
        diff["src_binary"] = 1
    else:
        diff.update(after_header=dest if source.remote_path is None else source.remote_path,
                    after=after)
    if ctx.no_log:
        if "before" in diff:
            diff["before"] = ""
        if "after" in diff:
            diff["after"] = " [[ Value hidden due to no_log ]]\n"
    return diff


def _backup(dest):
    """Ansible's backup_local: ``dest.<pid>.<YYYY-MM-DD@HH:MM:SS>~``, attributes kept."""
    backup = "%s.%s.%s" % (dest, os.getpid(), time.strftime("%Y-%m-%d@%H:%M:%S~"))
    try:
        shutil.copy2(dest, backup)
        st = os.stat(dest)
        os.chown(backup, st.st_uid, st.st_gid)
    except OSError as e:
        raise ModuleError("Could not make backup of %s to %s: %s" % (dest, backup, e))
    return backup


def _validate(tmp, args, ctx, attrs):
    """Run ``validate`` on the temp file (attributes applied first); raise on failure."""
    validate = str(args["validate"])
    if "%s" not in validate:
        raise ModuleError("validate must contain %%s: %s" % validate)
    try:
        command = validate % tmp
    except (TypeError, ValueError) as e:
        raise ModuleError("validate must contain exactly one %%s: %s (%s)" % (validate, e))
    _common.set_attributes(tmp, attrs[0], attrs[1], attrs[2], False)
    try:
        rc, out, err = _common.run_command(command, env=ctx.child_env())
    except OSError as e:
        raise ModuleError(str(e), rc=e.errno, cmd=_common.clean_args(command))
    if rc != 0:
        raise ModuleError("failed to validate", exit_status=rc,
                          stdout=_common.to_text(out), stderr=_common.to_text(err))


def _write(dest, source, args, ctx, attrs):
    """Write the new content atomically; return the backup file name (or None)."""
    backup = None
    if _common.opt_bool(args, "backup", False) and os.path.exists(dest):
        backup = _backup(dest)
    tmp = _common.write_temp_beside(dest, source.data)
    try:
        # A symlink dest is replaced by a new file, not given the target's attributes.
        _common.prepare_temp_attrs(tmp, dest, creating=os.path.islink(dest))
        if args.get("validate"):
            _validate(tmp, args, ctx, attrs)
        _common.replace_file(tmp, dest)
    except OSError as e:
        _common.remove_quietly(tmp)
        raise ModuleError("failed to copy: %s to %s: %s"
                          % (source.remote_path or "content", dest, e))
    except BaseException:
        _common.remove_quietly(tmp)
        raise
    return backup


def _unchanged(dest, checksum, ctx, attrs):
    """Same content: only enforce attributes, reporting like the file module."""
    diff = {"before": {"path": dest}, "after": {"path": dest}}
    changed = _common.set_attributes(dest, attrs[0], attrs[1], attrs[2], ctx.check_mode, diff)
    result = {"changed": changed, "path": dest, "dest": dest, "checksum": checksum}
    if ctx.diff_mode:
        result["diff"] = diff
    return result


@_common.module_entry
def run(args, ctx):
    """Copy content or a target-side file to ``dest``."""
    _common.check_unsupported(args, OPTIONS, "copy")
    source = _source(args)
    attrs = (_mode(args, source), _common.opt_str(args, "owner"), _common.opt_str(args, "group"))
    dest, created = _resolve_dest(args, source, ctx)
    _check_dest_dir(dest, ctx, created)
    checksum = hashlib.sha1(source.data).hexdigest()
    expected = args.get("checksum")
    if expected and expected != checksum:
        raise ModuleError("Copied file does not match the expected checksum. Transfer failed.",
                          checksum=checksum, expected_checksum=expected)
    exists = os.path.exists(dest)
    if exists and not _common.opt_bool(args, "force", True):
        return _common.add_path_info(_with_src({"msg": "file already exists", "dest": dest,
                                                "changed": False}, source))
    same = exists and os.path.isfile(dest) and not os.path.islink(dest) and \
        os.access(dest, os.R_OK) and _common.sha1_file(dest) == checksum
    if same:
        return _common.add_path_info(_unchanged(dest, checksum, ctx, attrs))
    result = _with_src({"changed": True, "dest": dest, "checksum": checksum}, source)
    if ctx.diff_mode:
        result["diff"] = _content_diff(dest, source, ctx)
    if not ctx.check_mode:
        backup = _write(dest, source, args, ctx, attrs)
        if backup:
            result["backup_file"] = backup
        _common.set_attributes(dest, attrs[0], attrs[1], attrs[2], False)
    return _common.add_path_info(result)


def _with_src(result, source):
    """Add ``src`` for a target-side source, as the copy module reports it."""
    if source.remote_path is not None:
        result["src"] = source.remote_path
    return result
