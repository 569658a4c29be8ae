"""``lineinfile``: ensure a line is present in (or absent from) a text file.

A port of ``ansible.builtin.lineinfile``'s algorithm (bytes-level matching,
``regexp``/``search_string``, ``insertafter``/``insertbefore`` with
``BOF``/``EOF``/regex, ``firstmatch``, ``backrefs``), its messages
("line added", "line replaced", "N line(s) removed"), its result keys
(``backup``, ``found``) and its two-part diff (content, then file
attributes). Writes are atomic and validated before the rename.
"""
import os
import re

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({
    "path", "dest", "destfile", "name", "state", "regexp", "regex", "search_string",
    "line", "value", "insertafter", "insertbefore", "backrefs", "create", "backup",
    "firstmatch", "validate", "mode", "owner", "group", "unsafe_writes",
})
SUPPORTS_CHECK_MODE = True

_LINESEP = os.linesep.encode()


def _b(text):
    return None if text is None else str(text).encode("utf-8", "surrogateescape")


def _u(data):
    return data.decode("utf-8", "surrogateescape")


class _Params(object):
    def __init__(self, args, ctx):
        _common.check_mutually_exclusive(
            args, ("insertbefore", "insertafter"), ("regexp", "search_string"),
            ("backrefs", "search_string"))
        self.path = _common.edited_file_path(args)
        self.state = _common.check_choice(args.get("state") or "present", "state",
                                          ("absent", "present"))
        self.regexp = _common.resolve_aliases(args, "regexp", ("regex",))
        self.regexp = None if self.regexp is None else str(self.regexp)
        self.search_string = _common.opt_str(args, "search_string")
        line = _common.resolve_aliases(args, "line", ("value",))
        self.line = None if line is None else str(line)
        self.insertafter = _common.opt_str(args, "insertafter")
        self.insertbefore = _common.opt_str(args, "insertbefore")
        self.backrefs = _common.opt_bool(args, "backrefs", False)
        self.create = _common.opt_bool(args, "create", False)
        self.backup = _common.opt_bool(args, "backup", False)
        self.firstmatch = _common.opt_bool(args, "firstmatch", False)
        self.validate = args.get("validate")
        self.mode = args.get("mode")
        self.owner = _common.opt_str(args, "owner")
        self.group = _common.opt_str(args, "group")
        self.ctx = ctx

    def compile(self, pattern):
        try:
            return re.compile(_b(pattern))
        except re.error as e:
            raise ModuleError("Invalid regular expression %r: %s" % (pattern, e))


def _warnings(p):
    """Ansible's warning for an empty regexp or search_string."""
    if p.regexp == "":
        return ["The regular expression is an empty string, which will match every line in the "
                "file. This may have unintended consequences, such as replacing the last line in "
                "the file rather than appending. If this is desired, use '^' to match every line "
                "in the file and avoid this warning."]
    if p.search_string == "":
        return ["The search string is an empty string, which will match every line in the file. "
                "This may have unintended consequences, such as replacing the last line in the "
                "file rather than appending."]
    return []


def _write(p, lines):
    """Backup, then write ``lines`` atomically to the file (its real path)."""
    backup = ""
    if p.backup and os.path.exists(p.path):
        backup = _common.backup_local(p.path)
    _common.atomic_write(os.path.realpath(p.path), b"".join(lines),
                         _common.edit_validator(p.validate, p.ctx.child_env()))
    return backup


def _finish(p, result, changed, msg, diff):
    """check_file_attrs and the [content, attributes] diff list."""
    attrs_changed, attr_diff = _common.attribute_diff(p.path, p.mode, p.owner, p.group,
                                                      p.ctx.check_mode)
    msg, changed = _common.attrs_message(changed, msg, attrs_changed)
    result.update(changed=changed, msg=msg, diff=[diff, attr_diff])
    return result


def _new_diff(path):
    return {"before": "", "after": "", "before_header": "%s (content)" % path,
            "after_header": "%s (content)" % path}


def _find(p, lines, b_line, bre_ins):
    """Ansible's search: ``(index, match, exact_line_match)``."""
    index = [-1, -1]
    match = None
    exact = False
    if p.regexp is not None:
        bre_m = p.compile(p.regexp)
        for lineno, cur in enumerate(lines):
            found = bre_m.search(cur)
            if found:
                index[0] = lineno
                match = found
                if p.firstmatch:
                    break
    if p.search_string is not None:
        b_search = _b(p.search_string)
        for lineno, cur in enumerate(lines):
            if b_search in cur:
                index[0] = lineno
                match = True
                if p.firstmatch:
                    break
    if not match:
        for lineno, cur in enumerate(lines):
            if b_line == cur.rstrip(b"\r\n"):
                index[0] = lineno
                exact = True
            elif bre_ins is not None and bre_ins.search(cur):
                if p.insertafter:
                    index[1] = lineno + 1
                    if p.firstmatch:
                        break
                if p.insertbefore:
                    index[1] = lineno
                    if p.firstmatch:
                        break
    return index, match, exact


def _edit_present(p, lines):
    """Apply state=present to ``lines`` in place; return ``(changed, msg)``."""
    insertafter, insertbefore = p.insertafter, p.insertbefore
    if insertbefore is None and insertafter is None:
        insertafter = "EOF"
    if insertafter not in (None, "BOF", "EOF"):
        bre_ins = p.compile(insertafter)
    elif insertbefore not in (None, "BOF"):
        bre_ins = p.compile(insertbefore)
    else:
        bre_ins = None
    p.insertafter, p.insertbefore = insertafter, insertbefore
    b_line = _b(p.line)
    index, match, exact = _find(p, lines, b_line, bre_ins)
    added = (True, "line added")
    if index[0] != -1:
        if p.backrefs and match is not None and match is not True:
            new_line = match.expand(b_line)
        else:
            new_line = b_line
        if not new_line.endswith(_LINESEP):
            new_line += _LINESEP
        if (p.regexp, p.search_string, match) == (None, None, None) and not exact:
            return _insert_near(lines, index, b_line, insertafter, insertbefore)
        if lines[index[0]] != new_line:
            lines[index[0]] = new_line
            return True, "line replaced"
        return False, ""
    if p.backrefs:
        return False, ""  # backrefs and no match: do nothing
    if insertbefore == "BOF" or insertafter == "BOF":
        lines.insert(0, b_line + _LINESEP)
        return added
    if insertafter == "EOF" or index[1] == -1:
        if lines and lines[-1][-1:] not in (b"\n", b"\r"):
            lines.append(_LINESEP)
        lines.append(b_line + _LINESEP)
        return added
    if insertafter and index[1] != -1:
        if len(lines) == index[1]:
            if lines[index[1] - 1].rstrip(b"\r\n") != b_line:
                lines.append(b_line + _LINESEP)
                return added
        elif b_line != lines[index[1]].rstrip(b"\n\r"):
            lines.insert(index[1], b_line + _LINESEP)
            return added
        return False, ""
    lines.insert(index[1], b_line + _LINESEP)
    return added


def _insert_near(lines, index, b_line, insertafter, insertbefore):
    """The exact-line-elsewhere case: insert next to the insertafter/insertbefore match."""
    if insertafter and insertafter != "EOF":
        if lines and lines[-1][-1:] not in (b"\n", b"\r"):
            lines[-1] = lines[-1] + _LINESEP
        if len(lines) == index[1]:
            if lines[index[1] - 1].rstrip(b"\r\n") != b_line:
                lines.append(b_line + _LINESEP)
                return True, "line added"
        elif lines[index[1]].rstrip(b"\r\n") != b_line:
            lines.insert(index[1], b_line + _LINESEP)
            return True, "line added"
    elif insertbefore and insertbefore != "BOF":
        if index[1] <= 0:
            if lines[index[1]].rstrip(b"\r\n") != b_line:
                lines.insert(index[1], b_line + _LINESEP)
                return True, "line added"
        elif lines[index[1] - 1].rstrip(b"\r\n") != b_line:
            lines.insert(index[1], b_line + _LINESEP)
            return True, "line added"
    return False, ""


def _present(p):
    ctx = p.ctx
    diff = _new_diff(p.path)
    exists = os.path.exists(p.path)
    if not exists:
        if not p.create:
            raise ModuleError("Destination %s does not exist !" % p.path, rc=257)
        parent = os.path.dirname(p.path)
        if parent and not os.path.exists(parent) and not ctx.check_mode:
            try:
                os.makedirs(parent)
            except OSError as e:
                raise ModuleError("Error creating %s (%s)" % (parent, e))
        lines = []
    else:
        with open(p.path, "rb") as f:
            lines = f.readlines()
    if ctx.diff_mode:
        diff["before"] = _u(b"".join(lines))
    changed, msg = _edit_present(p, lines)
    if ctx.diff_mode:
        diff["after"] = _u(b"".join(lines))
    backup = ""
    if changed and not ctx.check_mode:
        backup = _write(p, lines)
    if ctx.check_mode and not exists:
        return {"changed": changed, "msg": msg, "backup": backup, "diff": diff}
    return _finish(p, {"backup": backup}, changed, msg, diff)


def _absent(p):
    ctx = p.ctx
    if not os.path.exists(p.path):
        return {"changed": False, "msg": "file not present"}
    diff = _new_diff(p.path)
    with open(p.path, "rb") as f:
        lines = f.readlines()
    if ctx.diff_mode:
        diff["before"] = _u(b"".join(lines))
    bre_c = p.compile(p.regexp) if p.regexp is not None else None
    b_search = _b(p.search_string)
    b_line = _b(p.line)
    found = []
    kept = []
    for cur in lines:
        if bre_c is not None:
            hit = bre_c.search(cur)
        elif b_search is not None:
            hit = b_search in cur
        else:
            hit = b_line == cur.rstrip(b"\r\n")
        if hit:
            found.append(cur)
        else:
            kept.append(cur)
    changed = bool(found)
    if ctx.diff_mode:
        diff["after"] = _u(b"".join(kept))
    backup = ""
    if changed and not ctx.check_mode:
        backup = _write(p, kept)
    msg = "%s line(s) removed" % len(found) if changed else ""
    return _finish(p, {"found": len(found), "backup": backup}, changed, msg, diff)


@_common.module_entry
def run(args, ctx):
    """Ensure ``line`` is (or no matching line is) in ``path``."""
    _common.check_unsupported(args, OPTIONS, "lineinfile")
    _common.opt_bool(args, "unsafe_writes", False)
    p = _Params(args, ctx)
    warnings = _warnings(p)
    if p.state == "present":
        if p.backrefs and p.regexp is None:
            raise ModuleError("regexp is required with backrefs=true")
        if p.line is None:
            raise ModuleError("line is required with state=present")
        result = _present(p)
    else:
        if (p.regexp, p.search_string, p.line) == (None, None, None):
            raise ModuleError("one of line, search_string, or regexp is required with state=absent")
        result = _absent(p)
    if warnings:
        result["warnings"] = warnings
    return result
