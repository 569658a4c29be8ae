"""``replace``: replace every match of a regular expression in a file.

A port of ``ansible.builtin.replace``: ``regexp`` is compiled MULTILINE and
applied with ``re.subn``; ``after``/``before`` restrict the edit to the
section between them (DOTALL, non-greedy); msg "N replacements made";
``backup_file``; the diff (only in diff mode) is the whole file before and
after; ``encoding`` decodes and encodes the file.
"""
import os
import re

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({
    "path", "dest", "destfile", "name", "regexp", "replace", "after", "before",
    "backup", "validate", "encoding", "mode", "owner", "group", "unsafe_writes",
})
SUPPORTS_CHECK_MODE = True


def _section(contents, after, before):
    """``(pattern, section, (start, end))`` for after/before, or raise _NoSection."""
    pattern = ""
    if after and before:
        pattern = "%s(?P<subsection>.*?)%s" % (after, before)
    elif after:
        pattern = "%s(?P<subsection>.*)" % after
    elif before:
        pattern = "(?P<subsection>.*)%s" % before
    if not pattern:
        return "", contents, None
    try:
        match = re.search(re.compile(pattern, re.DOTALL), contents)
    except re.error as e:
        raise ModuleError("Unable to process replace due to error: %s" % e)
    if not match:
        return pattern, None, None
    return pattern, match.group("subsection"), (match.start("subsection"), match.end("subsection"))


@_common.module_entry
def run(args, ctx):
    """Replace ``regexp`` with ``replace`` in ``path``."""
    _common.check_unsupported(args, OPTIONS, "replace")
    _common.opt_bool(args, "unsafe_writes", False)
    path = _common.edited_file_path(args)
    if args.get("regexp") is None:
        raise ModuleError("missing required arguments: regexp")
    regexp = str(args["regexp"])
    replace = _common.opt_str(args, "replace", "")
    encoding = _common.opt_str(args, "encoding", "utf-8")
    result = {"rc": 0}
    if not os.path.exists(path):
        raise ModuleError("Path %s does not exist !" % path, rc=257)
    try:
        contents = _common.read_bytes(path).decode(encoding, "surrogateescape")
    except (OSError, LookupError) as e:
        raise ModuleError("Unable to read the contents of %s: %s" % (path, e))
    pattern, section, indices = _section(contents, _common.opt_str(args, "after"),
                                         _common.opt_str(args, "before"))
    if section is None:
        result.update(changed=False, msg="Pattern for before/after params did not match the "
                                         "given file: %s" % pattern)
        return result
    try:
        new_section, count = re.subn(re.compile(regexp, re.MULTILINE), replace, section, 0)
    except (re.error, IndexError) as e:
        raise ModuleError("Unable to process replace due to error: %s" % e)
    changed = count > 0 and new_section != section
    msg = ""
    if changed:
        new = new_section if indices is None else \
            contents[:indices[0]] + new_section + contents[indices[1]:]
        msg = "%s replacements made" % count
        if ctx.diff_mode:
            result["diff"] = {"before_header": path, "before": contents,
                              "after_header": path, "after": new}
        if not ctx.check_mode:
            if _common.opt_bool(args, "backup", False):
                result["backup_file"] = _common.backup_local(path)
            _common.atomic_write(os.path.realpath(path), new.encode(encoding, "surrogateescape"),
                                 _common.edit_validator(args.get("validate"), ctx.child_env()))
    attrs_changed = _common.set_attributes(path, args.get("mode"), _common.opt_str(args, "owner"),
                                           _common.opt_str(args, "group"), ctx.check_mode)
    result["msg"], result["changed"] = _common.attrs_message(changed, msg, attrs_changed)
    return result
