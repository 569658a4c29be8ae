"""``blockinfile``: insert, update or remove a block of lines between markers.

A port of ``ansible.builtin.blockinfile``: markers from ``marker`` with
``{mark}`` replaced by ``marker_begin``/``marker_end``; ``insertafter`` /
``insertbefore`` (``EOF``/``BOF`` or a regex, multiline regexes searched in
the whole file); ``prepend_newline``/``append_newline``; messages
"File created", "Block inserted", "Block removed"; result ``backup_file``
and the two-part diff (content, file attributes).
"""
import os
import re

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({
    "path", "dest", "destfile", "name", "state", "marker", "block", "content",
    "insertafter", "insertbefore", "create", "backup", "validate", "marker_begin",
    "marker_end", "append_newline", "prepend_newline", "mode", "owner", "group",
    "unsafe_writes",
})
SUPPORTS_CHECK_MODE = True

_NL = os.linesep.encode()


def _b(text):
    return str(text).encode("utf-8", "surrogateescape")


def _compile(pattern):
    try:
        return re.compile(_b(pattern))
    except re.error as e:
        raise ModuleError("Invalid regular expression %r: %s" % (pattern, e))


def _insert_index(lines, original, insertafter, insertbefore):
    """Where a new block goes (Ansible's n0 when no markers were found)."""
    if insertafter not in (None, "EOF"):
        insertre = _compile(insertafter)
    elif insertbefore not in (None, "BOF"):
        insertre = _compile(insertbefore)
    else:
        insertre = None
    if insertre is None:
        return 0 if insertbefore is not None else len(lines)
    n0 = None
    if insertre.flags & re.MULTILINE:
        match = insertre.search(original or b"")
        if match:
            text = original or b""
            n0 = text.count(b"\n", 0, match.end() if insertafter else match.start())
    else:
        for i, line in enumerate(lines):
            if insertre.search(line):
                n0 = i
    if n0 is None:
        return len(lines)
    return n0 + 1 if insertafter is not None else n0


def _edit(args, lines, original, present):
    """The new content (bytes) and whether the block lines were inserted."""
    insertafter = _common.opt_str(args, "insertafter")
    insertbefore = _common.opt_str(args, "insertbefore")
    if insertbefore is None and insertafter is None:
        insertafter = "EOF"
    block = _b(_common.resolve_aliases(args, "block", ("content",)) or "")
    marker = _b(args.get("marker") or "# {mark} ANSIBLE MANAGED BLOCK")
    begin = _b(args.get("marker_begin") if args.get("marker_begin") is not None else "BEGIN")
    end = _b(args.get("marker_end") if args.get("marker_end") is not None else "END")
    marker0 = marker.replace(b"{mark}", begin) + _NL
    marker1 = marker.replace(b"{mark}", end) + _NL
    if present and block:
        if not block.endswith(_NL):
            block += _NL
        blocklines = [marker0] + block.splitlines(True) + [marker1]
    else:
        blocklines = []
    n0 = n1 = None
    for i, line in enumerate(lines):
        if line == marker0:
            n0 = i
        if line == marker1:
            n1 = i
    if None in (n0, n1):
        n0 = _insert_index(lines, original, insertafter, insertbefore)
    elif n0 < n1:
        lines[n0:n1 + 1] = []
    else:
        lines[n1:n0 + 1] = []
        n0 = n1
    if n0 > 0 and not lines[n0 - 1].endswith(_NL):
        lines[n0 - 1] += _NL
    if _common.opt_bool(args, "prepend_newline", False) and present:
        if n0 != 0 and lines[n0 - 1] != _NL:
            lines[n0:n0] = [_NL]
            n0 += 1
    lines[n0:n0] = blocklines
    if _common.opt_bool(args, "append_newline", False) and present:
        after = n0 + len(blocklines)
        if after < len(lines) and lines[after] != _NL:
            lines[after:after] = [_NL]
    return b"".join(lines), blocklines


@_common.module_entry
def run(args, ctx):
    """Ensure the marked block in ``path``."""
    _common.check_unsupported(args, OPTIONS, "blockinfile")
    _common.check_mutually_exclusive(args, ("insertbefore", "insertafter"))
    _common.opt_bool(args, "unsafe_writes", False)
    path = _common.edited_file_path(args)
    state = _common.check_choice(args.get("state") or "present", "state", ("absent", "present"))
    present = state == "present"
    exists = os.path.exists(path)
    if not exists:
        if not _common.opt_bool(args, "create", False):
            raise ModuleError("Path %s does not exist !" % path, rc=257)
        parent = os.path.dirname(path)
        if parent and not os.path.exists(parent) and not ctx.check_mode:
            try:
                os.makedirs(parent)
            except OSError as e:
                raise ModuleError("Error creating %s Error code: %s Error description: %s"
                                  % (parent, e.errno, e.strerror))
        original = None
        lines = []
    else:
        original = _common.read_bytes(path)
        lines = original.splitlines(True)
    diff = {"before": "", "after": "", "before_header": "%s (content)" % path,
            "after_header": "%s (content)" % path}
    if ctx.diff_mode and original:
        diff["before"] = original.decode("utf-8", "surrogateescape")
    if not present and not exists:
        return {"changed": False, "msg": "File %s not present" % path}
    result, blocklines = _edit(args, lines, original, present)
    if ctx.diff_mode:
        diff["after"] = result.decode("utf-8", "surrogateescape")
    if original == result:
        msg, changed = "", False
    elif original is None:
        msg, changed = "File created", True
    elif not blocklines:
        msg, changed = "Block removed", True
    else:
        msg, changed = "Block inserted", True
    backup_file = None
    if changed and not ctx.check_mode:
        if _common.opt_bool(args, "backup", False) and exists:
            backup_file = _common.backup_local(path)
        _common.atomic_write(os.path.realpath(path), result,
                             _common.edit_validator(args.get("validate"), ctx.child_env()))
    if ctx.check_mode and not exists:
        return {"changed": changed, "msg": msg, "diff": diff}
    attrs_changed, attr_diff = _common.attribute_diff(
        path, args.get("mode"), _common.opt_str(args, "owner"), _common.opt_str(args, "group"),
        ctx.check_mode)
    msg, changed = _common.attrs_message(changed, msg, attrs_changed)
    out = {"changed": changed, "msg": msg, "diff": [diff, attr_diff]}
    if backup_file is not None:
        out["backup_file"] = backup_file
    return out
