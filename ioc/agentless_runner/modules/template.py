"""``template``: render a controller-side Jinja2 template and write it like ``copy``.

The template file arrives through :meth:`ModuleContext.controller_file` and
is rendered on the target with the task's Templar (``ctx.templar``), with
Ansible's template-module conventions: ``trim_blocks`` on, trailing newlines
kept, ``newline_sequence``, custom delimiters, and the variables
``ansible_managed``, ``template_host``, ``template_path``,
``template_fullpath``, ``template_destpath``, ``template_mtime``,
``template_uid`` and ``template_run_date`` (see :func:`_template_vars`). The result is written exactly
as ``copy`` writes content (atomic, mode/owner/group, backup, validate,
force, check and diff mode) and the result is copy's (``src``: the rendered
text's upload, as Ansible's copy action reports it).

``{% include %}``/``{% import %}``/``{% extends %}`` find the templates the
controller shipped with the template (``entry["loader"]``: those the file
names as constants, and those they name, found on Ansible's search path for
templates: ``ioc.controller.payloads.template_searchpath``); a name that is
an expression fails saying so.
"""
import datetime
import os

from ioc.agentless_runner import results, templating
from ioc.agentless_runner.context import ModuleError, TaskError
from ioc.agentless_runner.modules import _common
from ioc.agentless_runner.modules import copy as _copy

OPTIONS = frozenset({
    "src", "dest", "backup", "force", "follow", "mode", "owner", "group", "validate",
    "newline_sequence", "trim_blocks", "lstrip_blocks", "output_encoding",
    "block_start_string", "block_end_string", "variable_start_string",
    "variable_end_string", "comment_start_string", "comment_end_string",
    "unsafe_writes",
})
SUPPORTS_CHECK_MODE = True

_DELIMITERS = ("block_start_string", "block_end_string", "variable_start_string",
               "variable_end_string", "comment_start_string", "comment_end_string")
_ALLOWED_NEWLINES = ("\n", "\r", "\r\n")
_ESCAPED_NEWLINES = ("\\n", "\\r", "\\r\\n")


def _overrides(args):
    """The jinja Environment overrides the template options ask for."""
    newline = str(args.get("newline_sequence") or "\n")
    if newline in _ESCAPED_NEWLINES:
        newline = _ALLOWED_NEWLINES[_ESCAPED_NEWLINES.index(newline)]
    if newline not in _ALLOWED_NEWLINES:
        raise ModuleError("newline_sequence needs to be one of: \n, \r or \r\n")
    overrides = {
        "newline_sequence": newline,
        "trim_blocks": _common.opt_bool(args, "trim_blocks", True),
        "lstrip_blocks": _common.opt_bool(args, "lstrip_blocks", False),
    }
    for name in _DELIMITERS:
        if args.get(name) is not None:
            overrides[name] = str(args[name])
    return overrides


def _template_vars(src, entry, dest):
    """The variables ansible-core's template action adds (``generate_ansible_template_vars``).

    The controller worked out the template file's (``entry["template"]``,
    ``ioc.ansible.template_vars``, with Ansible's code): ``template_host``,
    ``template_uid``, ``template_mtime`` (its naive datetime's fields) and
    ``ansible_managed``; the task's are added here.
    """
    found = entry.get("template")
    if found is None:
        raise ModuleError("template needs the controller's template variables "
                          "(ioc executor bug)")
    return {
        "template_host": found["template_host"],
        "template_path": src,
        "template_mtime": datetime.datetime(*found["template_mtime"]),
        "template_uid": found["template_uid"],
        "template_run_date": datetime.datetime.now(),
        "template_destpath": dest,
        "template_fullpath": entry.get("path") or src,
    }


def render(args, ctx, entry):
    """The rendered template (str), or ModuleError with Ansible's wording."""
    src = str(args["src"])
    data = entry.get("content", b"")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ModuleError("Template source files must be utf-8 encoded")
    if ctx.templar is None:
        raise ModuleError("template needs the task's templar (ioc executor bug)")
    # The template_* values are data, never templated (a file's name may hold
    # "{{"); ansible_managed is a trusted template, rendered where it is read
    # (its "{{ template_host }}"...), and only where the task's variables do not
    # set it (the action's include_ansible_managed).
    templar = ctx.templar.template_with(_template_vars(src, entry, args.get("dest")))
    if not ctx.templar.has_variable("ansible_managed"):
        templar = templar.template_with(
            {"ansible_managed": entry["template"]["ansible_managed"]}, raw=True)
    # (a deprecated value the file reads is reported at the file, as 2.21 does)
    reads = templating.current_reads()
    if reads is not None:
        where, reads.where = reads.where, ("at", entry.get("path") or None)
    try:
        loader = entry.get("loader")
        return templar.render_text(data, overrides=_overrides(args), loader=None if loader is None
                                   else templating.ShippedLoader(loader, src))
    except ModuleError:
        raise
    except Exception as e:  # the action raises it: "Task failed: <error>", about the file
        # (at a syntax error's line; 2.19 names the file only)
        line = None if results.legacy() else getattr(e, "lineno", None)
        raise TaskError(str(e), origin=[entry.get("path") or src, line])
    finally:
        if reads is not None:
            reads.where = where


@_common.module_entry
def run(args, ctx):
    """Render ``src`` and write it to ``dest``."""
    _common.check_unsupported(args, OPTIONS, "template")
    if args.get("src") is None or args.get("dest") is None:
        raise ModuleError("src and dest are required")
    entry = ctx.controller_file(str(args["src"]))
    if entry.get("kind") != "file":
        raise ModuleError("Could not find or access '%s' on the Ansible Controller: "
                          "it is not a file" % args["src"])
    text = render(args, ctx, entry)
    encoding = str(args.get("output_encoding") or "utf-8")
    try:
        data = text.encode(encoding, "surrogateescape")
    except LookupError:
        raise ModuleError("unknown output_encoding: %s" % encoding)
    mode = entry.get("mode")
    source = _copy._Source(data, name=os.path.basename(str(args["src"])),
                           mode=None if mode is None else _common.format_mode(mode),
                           after_header=entry.get("path") or str(args["src"]))
    copy_args = {k: v for k, v in args.items()
                 if k in ("dest", "backup", "force", "follow", "mode", "owner", "group",
                          "validate")}
    dest, created = _copy._resolve_dest(copy_args, source, ctx)
    return _copy.action_shape(_copy.copy_source(copy_args, ctx, source, dest, created), ctx)
