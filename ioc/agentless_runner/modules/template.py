"""``template``: render a controller-side Jinja2 template and write it like ``copy``.

The template file arrives through :meth:`ModuleContext.controller_file` and
is rendered on the target with the task's Templar (``ctx.templar``), with
Ansible's template-module conventions: ``trim_blocks`` on, trailing newlines
kept, ``newline_sequence``, custom delimiters, and the variables
``ansible_managed``, ``template_host``, ``template_path``,
``template_fullpath``, ``template_destpath``, ``template_mtime``,
``template_uid`` and ``template_run_date``. The result is written exactly
as ``copy`` writes content (atomic, mode/owner/group, backup, validate,
force, check and diff mode) and the result is copy's.

``{% include %}``/``{% import %}``/``{% extends %}`` need other controller
files and are not available; ``lookup()`` fails on the target.
"""
import datetime
import os
import pwd
import socket
import time

from ioc.agentless_runner.context import ModuleError
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

#: ansible-core's DEFAULT_MANAGED_STR.
DEFAULT_MANAGED = "Ansible managed"
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
    """generate_ansible_template_vars, from what the controller shipped.

    The controller may add ``host`` (its hostname), ``owner`` (the template
    file's owner) and ``mtime`` to the file entry; without them the target's
    hostname, the runner's user and the current time stand in.
    """
    fullpath = entry.get("path") or src
    mtime = entry.get("mtime")
    mtime = time.time() if mtime is None else float(mtime)
    owner = entry.get("owner")
    if owner is None:
        try:
            owner = pwd.getpwuid(os.geteuid()).pw_name
        except KeyError:
            owner = str(os.geteuid())
    host = entry.get("host") or socket.gethostname()
    managed = entry.get("ansible_managed", DEFAULT_MANAGED)
    managed = managed.replace("{host}", str(host)).replace("{uid}", str(owner)) \
        .replace("{file}", str(src))
    return {
        "template_host": str(host),
        "template_path": src,
        "template_mtime": datetime.datetime.fromtimestamp(mtime),
        "template_uid": str(owner),
        "template_run_date": datetime.datetime.now(),
        "template_destpath": dest,
        "template_fullpath": fullpath,
        "ansible_managed": time.strftime(managed, time.localtime(mtime)),
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
    extra = _template_vars(src, entry, args.get("dest"))
    try:
        return ctx.templar.render_text(data, extra=extra, overrides=_overrides(args))
    except ModuleError:
        raise
    except Exception as e:
        name = type(e).__name__
        name = {"UndefinedVariableError": "AnsibleUndefinedVariable",
                "TemplateError": "AnsibleError"}.get(name, name)
        raise ModuleError("%s: %s" % (name, e))


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
