"""``copy``: put content, a controller file or directory, or a target file at ``dest``.

Sources: ``content`` (text), ``src`` on the controller (shipped with the
batch and read through :meth:`ModuleContext.controller_file`: a file or a
directory tree), or ``src`` with ``remote_src: true`` (a file or directory
on the target). Writes are atomic: a temp file in ``dest``'s directory,
fsynced, validated, then renamed over ``dest``.

A directory ``src`` follows Ansible: ``src/`` (trailing slash) copies the
directory's contents into ``dest``; ``src`` copies the directory itself, so
its files land in ``dest/<basename of src>/``. Directories are created with
``directory_mode`` (and ``owner``/``group``).

:func:`copy_source` is the single-file write shared with ``template``.
"""
import hashlib
import json
import os
import shutil
import stat

from ioc.agentless_runner import lifeline, transfer
from ioc.agentless_runner.context import ModuleError, remote_tmp
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
    """What to write: ``data`` (bytes), a ``name`` for directory dests, and its origin.

    ``remote_path`` is set for a target-side source; ``after_header`` names
    the source in a diff (the controller path of a shipped file).
    """

    def __init__(self, data, name=None, remote_path=None, is_content=False, mode=None,
                 after_header=None):
        self.data = data
        self.name = name
        self.remote_path = remote_path
        self.is_content = is_content
        self.mode = mode
        self.after_header = after_header

    def checksum(self):
        return hashlib.sha1(self.data).hexdigest()

    def md5(self, check_mode=False):
        return hashlib.md5(self.data).hexdigest()

    def size(self):
        return len(self.data)

    def payload(self):
        """What ``atomic_write`` writes: the bytes, or a writer of them."""
        return self.data

    def stage(self, path):
        """Write the content to ``path`` (the upload :class:`_Staged` names)."""
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
            out.write(self.data)

    def release(self):
        pass


class _StreamedSource(_Source):
    """A large controller file: its digest is known; its content is fetched only if needed."""

    def __init__(self, entry, **kwargs):
        _Source.__init__(self, None, **kwargs)
        self.entry = entry
        self.local = None

    def _fetched(self):
        if self.local is None:
            try:
                self.local = transfer.fetch(self.entry)
            except transfer.TransferFailed as exc:
                raise ModuleError(str(exc))
        return self.local

    def checksum(self):
        return self.entry["digest"]

    def md5(self, check_mode=False):
        if check_mode:  # nothing is written: the content need not travel (the
            return None  # check-mode result shows no md5sum: action_shape)
        return _common.digest_file(self._fetched(), "md5")

    def size(self):
        return self.entry["size"]

    def payload(self):
        local = self._fetched()

        def write(out):
            with open(local, "rb") as handle:
                shutil.copyfileobj(handle, out, 1 << 20)
        return write

    def stage(self, path):
        """Fetch the content into ``path`` itself: the destination is written from it."""
        self.local = transfer.fetch(self.entry, path)

    def release(self):
        if self.local is not None:
            transfer.discard(self.local)
            self.local = None


def _content_source(args):
    """A _Source from ``content``."""
    content = args["content"]
    if isinstance(content, (dict, list)):
        content = json.dumps(content)
    if isinstance(content, bytes):
        data = content
    else:
        data = str(content).encode("utf-8")
    return _Source(data, is_content=True, mode="0600")


def _remote_file_source(args, src):
    """A _Source read from file ``src`` on the target (``remote_src: true``)."""
    if not os.access(src, os.R_OK):
        raise ModuleError("Source %s not readable" % src)
    if not os.path.isfile(src):
        raise ModuleError("Cannot copy invalid source '%s': not a file" % src)
    data = _common.read_bytes(src)
    name = args.get("_original_basename") or os.path.basename(src)
    return _Source(data, name=name, remote_path=src,
                   mode=_common.format_mode(os.stat(src).st_mode))


def _controller_file_source(args, entry):
    """A _Source from a shipped controller file entry."""
    src = str(args["src"])
    mode = entry.get("mode")
    name = args.get("_original_basename") or os.path.basename(src.rstrip("/")) \
        or os.path.basename(entry.get("path", ""))
    kwargs = dict(name=name, mode=None if mode is None else _common.format_mode(mode),
                  after_header=entry.get("path") or src)
    if entry.get("stream"):
        return _StreamedSource(entry, **kwargs)
    data = entry.get("content", b"")
    if isinstance(data, str):
        data = data.encode("utf-8")
    return _Source(bytes(data), **kwargs)


def _mode(args, source):
    """The requested mode, with ``preserve`` resolved to the source's mode."""
    mode = args.get("mode")
    if mode != "preserve":
        return mode
    if source.mode is None:
        raise ModuleError("mode=preserve needs the source's mode, which the controller did not send")
    return source.mode


def _missing_dirs(dirname):
    """The directories ``mkdir -p dirname`` would create, outermost first."""
    missing = []
    head = dirname
    while head and not os.path.exists(head):
        missing.append(head)
        head = os.path.dirname(head)
    return list(reversed(missing))


def _make_dirs(dirname, args, check_mode):
    """mkdir -p ``dirname``; new directories get directory_mode/owner/group. True if created."""
    missing = _missing_dirs(dirname)
    if not missing or check_mode:
        return bool(missing)
    try:
        os.makedirs(dirname)
    except OSError as e:
        raise ModuleError("Error creating %s: %s" % (dirname, e))
    for path in missing:
        _common.set_attributes(path, args.get("directory_mode"), _common.opt_str(args, "owner"),
                               _common.opt_str(args, "group"), False)
    return True


def _resolve_dest(args, source, ctx):
    """Final destination path, and whether directories were (or would be) created for it."""
    dest = _common.opt_path(args.get("dest"))
    if not dest:
        raise ModuleError("dest is required")
    if os.sep not in dest:
        dest = "." + os.sep + dest
    created = False
    if dest.endswith(os.sep):
        if source.is_content:
            raise ModuleError("can not use content with a dir as dest")
        dest = os.path.join(dest, source.name)
        created = _make_dirs(os.path.dirname(dest), args, ctx.check_mode)
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


def content_diff(dest, data, after_header, no_log=False, size=None):
    """The copy action's diff between the current ``dest`` and new ``data``.

    ``data`` None with ``size``: a streamed source, always over the diff limit.
    """
    diff = {}
    if not os.path.exists(dest):
        diff["before"] = ""
    elif os.path.getsize(dest) > MAX_DIFF_SIZE:
        diff["dst_larger"] = MAX_DIFF_SIZE
    else:
        before = _text_or_none(_common.read_bytes(dest))
        if before is None:
            diff["dst_binary"] = 1
        else:
            diff.update(before_header=dest, before=before)
    after = None if data is None else _text_or_none(data)
    if (len(data) if data is not None else size) > MAX_DIFF_SIZE:
        diff["src_larger"] = MAX_DIFF_SIZE
    elif after is None:
        diff["src_binary"] = 1
    else:
        diff.update(after_header=after_header, after=after)
    if no_log:
        if "before" in diff:
            diff["before"] = ""
        if "after" in diff:
            diff["after"] = " [[ Value hidden due to no_log ]]\n"
    return diff


def _validator(args, ctx, attrs):
    """``check(tmp)`` running ``validate`` with the final attributes applied, or None."""
    if not args.get("validate"):
        return None

    def check(tmp):
        _common.set_attributes(tmp, attrs[0], attrs[1], attrs[2], False)
        rc, out, err = _common.run_validate(args["validate"], tmp, ctx.child_env())
        if rc != 0:
            raise ModuleError("failed to validate", exit_status=rc, stdout=out, stderr=err)
    return check


def _write(dest, source, args, ctx, attrs):
    """Write the new content atomically; return the backup file name (or None)."""
    backup = None
    if _common.opt_bool(args, "backup", False) and os.path.exists(dest):
        backup = _common.backup_local(dest)
    try:
        # A symlink dest is replaced by a new file, not given the target's attributes.
        _common.atomic_write(dest, source.payload(), _validator(args, ctx, attrs),
                             creating=os.path.islink(dest))
    except OSError as e:
        raise ModuleError("failed to copy: %s to %s: %s"
                          % (source.remote_path or "content", dest, e))
    return backup


def _unchanged(dest, checksum, ctx, attrs):
    """Same content: only enforce attributes, reporting like the file module."""
    diff = {"before": {"path": dest}, "after": {"path": dest}}
    changed = _common.set_attributes(dest, attrs[0], attrs[1], attrs[2], ctx.check_mode, diff)
    result = {"changed": changed, "path": dest, "dest": dest, "checksum": checksum}
    if ctx.diff_mode:
        result["diff"] = diff
    return result


def copy_source(args, ctx, source, dest, created=False):
    """Write one _Source to the resolved path ``dest`` with copy's file options.

    Honours ``mode`` (``preserve``), ``owner``, ``group``, ``force``,
    ``backup``, ``validate`` and ``checksum``, check and diff mode; returns
    the copy module's result.
    """
    attrs = (_mode(args, source), _common.opt_str(args, "owner"), _common.opt_str(args, "group"))
    _check_dest_dir(dest, ctx, created)
    try:
        return _copy_source(args, ctx, source, dest, attrs)
    finally:
        source.release()


def _copy_source(args, ctx, source, dest, attrs):
    checksum = source.checksum()
    expected = args.get("checksum")
    if expected and expected != checksum:
        raise ModuleError("Copied file does not match the expected checksum. Transfer failed.",
                          checksum=checksum, expected_checksum=expected)
    exists = os.path.lexists(dest)
    if exists and not _common.opt_bool(args, "force", True):
        if source.remote_path is None:
            # The action skips the file and reports its own source: the file found
            # (a template's: Ansible's rendered copy of it, a temporary file of the
            # same name). Content's is a controller temporary file, which ioc has not.
            skipped = {"changed": False, "dest": dest}
            if not source.is_content:
                skipped["src"] = source.after_header
            return skipped
        return _common.add_path_info(_with_src({"msg": "file already exists", "dest": dest,
                                                "changed": False}, source))
    if exists and os.path.isdir(dest) and not os.path.islink(dest):
        raise ModuleError("Cannot copy to %s: it is a directory" % dest, dest=dest)
    same = exists and os.path.isfile(dest) and not os.path.islink(dest) and \
        os.access(dest, os.R_OK) and _common.sha1_file(dest) == checksum
    if same:
        return _common.add_path_info(_unchanged(dest, checksum, ctx, attrs))
    # (staged first: a streamed file is fetched into the upload, once)
    staged = _Staged(source, dest) if source.remote_path is None and not ctx.check_mode else None
    try:
        result = _with_src({"changed": True, "dest": dest, "checksum": checksum,
                            "md5sum": source.md5(ctx.check_mode)}, source)
        if ctx.diff_mode:
            header = source.remote_path or (dest if source.is_content else source.after_header) \
                or dest
            result["diff"] = content_diff(dest, source.data, header, ctx.no_log, source.size())
        if not ctx.check_mode:
            if staged is not None:
                result["src"] = staged.path
            backup = _write(dest, source, args, ctx, attrs)
            if backup:
                result["backup_file"] = backup
            _common.set_attributes(dest, attrs[0], attrs[1], attrs[2], False)
    finally:
        if staged is not None:
            staged.remove()
    return _common.add_path_info(result)


class _Staged(object):
    """A controller-side source written to the target's ``remote_tmp`` first, as
    Ansible's copy action uploads it (``<ansible-tmp-…>/.source`` and the
    destination's suffix, which ``validate`` may need); the copy module reports
    that upload as ``src``. The destination is written from this file; the
    directory goes when the task is done, as Ansible's does."""

    def __init__(self, source, dest):
        try:
            self.directory = remote_tmp()
        except OSError as exc:
            raise ModuleError("Failed to create temporary directory. In some cases, you may "
                              "have been able to authenticate and did not have permissions on "
                              "the target directory: %s" % exc)
        self.path = os.path.join(self.directory, ".source" + os.path.splitext(dest)[1])
        lifeline.remember_file(self.path)
        try:
            source.stage(self.path)
        except BaseException:
            self.remove()
            raise

    def remove(self):
        lifeline.forget_file(self.path)
        shutil.rmtree(self.directory, ignore_errors=True)


def _with_src(result, source):
    """Add ``src`` for a target-side source, as the copy module reports it."""
    if source.remote_path is not None:
        result["src"] = source.remote_path
    return result


# -- directory trees ---------------------------------------------------------------


def _safe_rel(rel):
    """A relative path inside the tree, or ModuleError."""
    rel = str(rel).strip("/")
    parts = rel.split("/")
    if not rel or os.path.isabs(rel) or ".." in parts:
        raise ModuleError("refusing to copy tree entry '%s': not a relative path inside src" % rel)
    return rel


def _remote_tree_entries(src):
    """The shipped-entry shape for a directory ``src`` on the target."""
    entries = []
    for root, dirs, files in os.walk(src):
        dirs.sort()
        for name in dirs:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)
            if os.path.islink(path):
                entries.append({"rel": rel, "link": os.readlink(path)})
            else:
                entries.append({"rel": rel, "dir": True, "mode": stat.S_IMODE(os.stat(path).st_mode)})
        for name in sorted(files):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)
            if os.path.islink(path):
                entries.append({"rel": rel, "link": os.readlink(path)})
            else:
                entries.append({"rel": rel, "path": path,
                                "mode": stat.S_IMODE(os.stat(path).st_mode)})
    return entries


def _ensure_tree_dir(path, args, ctx):
    """One directory of a tree copy: create it if missing, then directory_mode/owner/group."""
    state = _common.get_state(path)
    if state not in ("absent", "directory"):
        raise ModuleError("%s already exists as a %s" % (path, state), path=path)
    changed = state == "absent"
    if changed and not ctx.check_mode:
        _make_dirs(path, args, False)
    changed |= _common.set_attributes(path, args.get("directory_mode"),
                                      _common.opt_str(args, "owner"),
                                      _common.opt_str(args, "group"), ctx.check_mode)
    return changed


def _ensure_tree_link(path, target, ctx):
    """A symlink of a tree copy (the file module's state=link with force)."""
    if os.path.islink(path) and os.readlink(path) == target:
        return False
    if os.path.isdir(path) and not os.path.islink(path):
        raise ModuleError("refusing to convert from directory to symlink for %s" % path, path=path)
    if not ctx.check_mode:
        tmp = os.path.join(os.path.dirname(path), ".%s.%s.tmp" % (os.getpid(), os.path.basename(path)))
        _common.remove_quietly(tmp)
        os.symlink(target, tmp)
        os.replace(tmp, path)
    return True


def _copy_tree(args, ctx, src, entries, remote):
    """Copy a directory tree (shipped entries or a target directory) under ``dest``."""
    dest = _common.opt_path(args.get("dest"))
    if not dest:
        raise ModuleError("dest is required")
    root = dest
    if not src.endswith("/"):
        root = os.path.join(dest, os.path.basename(src.rstrip("/")))
    if not dest.endswith("/"):
        dest += "/"
    changed = False
    diffs = []
    file_results = []
    ordered = sorted(entries, key=lambda e: (not e.get("dir"), str(e.get("rel"))))
    rels = [_safe_rel(entry.get("rel")) for entry in ordered]  # all checked before any write
    changed |= _ensure_tree_dir(root, args, ctx)
    for entry, rel in zip(ordered, rels):
        path = os.path.join(root, rel)
        if entry.get("dir"):
            changed |= _ensure_tree_dir(path, args, ctx)
        elif "link" in entry:
            changed |= _ensure_tree_link(path, str(entry["link"]), ctx)
        else:
            mode = entry.get("mode")
            kwargs = dict(name=os.path.basename(rel),
                          remote_path=entry.get("path") if remote else None,
                          mode=None if mode is None else _common.format_mode(mode),
                          after_header=os.path.join(src.rstrip("/"), rel))
            if entry.get("stream"):
                source = _StreamedSource(entry, **kwargs)
            else:
                data = entry.get("content")
                if data is None and remote:
                    data = _common.read_bytes(entry["path"])
                if isinstance(data, str):
                    data = data.encode("utf-8")
                source = _Source(bytes(data or b""), **kwargs)
            sub_args = dict(args)
            if remote and args.get("mode") is None:
                sub_args["mode"] = source.mode  # like shutil.copytree, keep the file's mode
            parent_will_exist = ctx.check_mode and not os.path.isdir(os.path.dirname(path))
            result = copy_source(sub_args, ctx, source, path, created=parent_will_exist)
            file_results.append(result)
            changed |= bool(result.get("changed"))
            if "md5sum" in result and result.get("diff"):
                diffs.append(result["diff"])
    if len(file_results) == 1 and len(ordered) == 1:
        result = dict(file_results[0])
        result["changed"] = changed
        return result
    result = {"changed": changed, "dest": dest, "src": src}
    if ctx.diff_mode and diffs:
        result["diff"] = diffs
    return result


# -- entry point -------------------------------------------------------------------


def _check_args(args):
    """The copy action's own argument checks, with its messages."""
    src, content, dest = args.get("src"), args.get("content"), args.get("dest")
    if not src and content is None:
        raise ModuleError("src (or content) is required")
    if not dest:
        raise ModuleError("dest is required")
    if src and content is not None:
        raise ModuleError("src and content are mutually exclusive")
    if content is not None and str(dest).endswith("/"):
        raise ModuleError("can not use content with a dir as dest")


@_common.module_entry
def run(args, ctx):
    """Copy content, a controller file or tree, or a target-side file to ``dest``."""
    _common.check_unsupported(args, OPTIONS, "copy")
    _check_args(args)
    for name in ("local_follow", "decrypt", "unsafe_writes"):
        _common.opt_bool(args, name, True)
    if args.get("content") is not None:
        source = _content_source(args)
    elif _common.opt_bool(args, "remote_src", False):
        src = _common.opt_path(str(args["src"]))
        if not os.path.exists(src):
            raise ModuleError("Source %s not found" % src)
        if os.path.isdir(src):
            return _copy_tree(args, ctx, src, _remote_tree_entries(src), remote=True)
        source = _remote_file_source(args, src)
    else:
        src = str(args["src"])
        entry = ctx.controller_file(src)
        if entry.get("kind") == "dir":
            return _copy_tree(args, ctx, src, entry.get("entries") or [], remote=False)
        source = _controller_file_source(args, entry)
    dest, created = _resolve_dest(args, source, ctx)
    result = copy_source(args, ctx, source, dest, created)
    if source.remote_path is None:
        result = action_shape(result, ctx)
    return result


def action_shape(result, ctx):
    """The copy action plugin's result around one controller-side file.

    The action starts from ``{"diff": []}`` and merges the module's result
    in; in check mode a content change returns before any module runs, so
    the result is only ``{changed, diff}``. The content diff is the one entry
    of that list. Its ``src`` is the upload :class:`_Staged` made.
    """
    if "checksum" not in result:  # skipped (force: false): the action's own result
        return result
    content_diff = [result["diff"]] if "md5sum" in result and result.get("diff") else []
    if ctx.check_mode and result.get("changed") and "md5sum" in result:
        return {"changed": True, "diff": content_diff}
    if not ctx.diff_mode or "md5sum" in result:
        # a content change: the action's list; same content: the file module's dict
        result["diff"] = content_diff
    return result
