"""Ansible's own modules, run by the runner on the target.

A task whose action is an Ansible module that ioc does not implement itself
(builtin, from a collection or from a ``library/`` directory) carries a
*module spec* built on the controller by ``ioc.ansible.modules`` from
Ansible's own ``module_common`` (the same AnsiballZ payload Ansible would
send)::

    {"name": "getent", "fqn": "ansible.modules.getent",
     "profile": "legacy", "wrapper": "<digest>",
     "entries": [["ansible/__init__.py", "<digest>"], ...]}

The files (the module, the ``module_utils`` it imports, Ansible's AnsiballZ
wrapper) travel as blobs by content digest, once per host per run, like
controller files; ``module_utils`` shared by several modules travel once.

Execution is Ansible's: a fresh interpreter (the runner's own, i.e. the
host's ``ansible_python_interpreter``) runs Ansible's AnsiballZ wrapper code
with the payload zip and the JSON arguments, exactly as ``ansible-playbook``
runs it with pipelining (same wrapper, same loader, same ``_ansible_*``
arguments, the task's environment, the runner's become identity). Its stdout
is parsed as ``ActionBase._parse_returned_data`` parses it. No round trip:
everything it needs is already on the host when the batch starts.
"""
import io
import json
import os
import subprocess
import sys
import zipfile
import zlib

from ioc.agentless_runner import forkserver, lifeline, results
from ioc.agentless_runner.context import brief_message

#: Keys the controller's ``_update_module_args`` adds; the controller fills
#: the run-wide ones (``_ansible_version``, ``_ansible_verbosity``...) in the
#: spec's ``internal``, the runner the per-task ones.
_PER_TASK = ("_ansible_check_mode", "_ansible_no_log", "_ansible_diff", "_ansible_module_name")

#: Internal result keys that survive ``remove_internal_keys`` (the runner and
#: the callbacks read them).
_KEEP_INTERNAL = frozenset({"_ansible_no_log", "_ansible_verbose_always",
                            "_ansible_verbose_override"})

#: Zips assembled on this host, by module fqn and payload digest list.
_ZIPS = {}

#: The trailer that makes Ansible's wrapper code run one module: its
#: arguments arrive on standard input as one JSON document.
_TRAILER = """
import json as _ioc_json, sys as _ioc_sys, datetime as _ioc_dt
_ioc_kw = _ioc_json.loads(_ioc_sys.stdin.buffer.read().decode("utf-8"))
_ioc_kw["date_time"] = _ioc_dt.datetime(*_ioc_kw["date_time"])
_ansiballz_main(**_ioc_kw)
"""


class ModuleSpecError(Exception):
    """The payload a spec names is not on this host (a controller bug)."""


def run(spec, args, ctx, blob, fresh=False):
    """Run Ansible's module ``spec`` with templated ``args``; a result dict.

    ``blob(digest)`` returns the bytes of a shipped file. ``ctx`` is the
    task's :class:`~ioc.agentless_runner.context.ModuleContext`. ``fresh``:
    in a new interpreter even when the warm helper (:mod:`forkserver`) could
    run it, as Ansible runs every module (an async job's polls: when each
    reads the job's file is part of what the console shows).
    """
    try:
        payload = payload_zip(spec, blob)
        wrapper = _get(blob, spec["wrapper"]).decode("utf-8")
    except (KeyError, ModuleSpecError) as exc:
        return {"failed": True, "changed": False,
                "msg": "ioc: the payload of module %s is missing on this host: %s"
                       % (spec.get("name"), exc)}
    params = module_args(spec, args, ctx)
    launch = getattr(ctx, "launch_async", None)
    if launch is not None:  # ``async``: started under async_wrapper, not run here
        ctx.launch_async = None
        return launch(spec, payload, wrapper, params, ctx)
    req = {"name": spec["name"], "fqn": spec["fqn"], "profile": spec.get("profile", "legacy"),
           "params": json.dumps({"ANSIBLE_MODULE_ARGS": params})}
    ran = None if fresh else forkserver.run(req, payload, ctx.child_env(), _cwd(ctx))
    if ran is not None:
        return parse_returned_data(*ran)
    stdin = json.dumps(ansiballz_kwargs(spec, payload, params)).encode("utf-8")
    return execute(wrapper + _TRAILER, stdin, ctx)


def ansiballz_kwargs(spec, payload, params):
    """The keyword arguments of AnsiballZ's ``_ansiballz_main`` for one module run."""
    return {
        "zip_data": _b64(payload),
        "ansible_module": spec["name"],
        "module_fqn": spec["fqn"],
        "params": json.dumps({"ANSIBLE_MODULE_ARGS": params}),
        "profile": spec.get("profile", "legacy"),
        "date_time": list(spec.get("date_time") or (2020, 1, 1, 0, 0, 0)),
        "extensions": {},
        "rlimit_nofile": int(spec.get("rlimit_nofile") or 0),
    }


def module_args(spec, args, ctx):
    """The task's arguments plus the ``_ansible_*`` keys Ansible adds."""
    params = dict(args)
    params.update(spec.get("internal") or {})
    params["_ansible_check_mode"] = bool(ctx.check_mode)
    params["_ansible_no_log"] = bool(ctx.no_log) or bool(params.get("_ansible_no_log"))
    params["_ansible_diff"] = bool(ctx.diff_mode)
    params["_ansible_module_name"] = spec.get("module_name") or spec["name"]
    params.setdefault("_ansible_tmpdir", None)
    params.setdefault("_ansible_remote_tmp", "~/.ansible/tmp")
    return params


def execute(code, stdin, ctx):
    """Run ``code`` in a fresh interpreter of this host; the parsed result."""
    return execute_argv([sys.executable, "-c", code], stdin, ctx.child_env(), _cwd(ctx))


def execute_argv(argv, stdin, env, cwd=None):
    """Run ``argv`` (a Python interpreter of this host) in a session of its own; the parsed result."""
    try:
        proc = lifeline.popen(argv, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                              cwd=cwd or _cwd())
    except OSError as exc:
        return {"failed": True, "changed": False, "rc": 1,
                "msg": "MODULE FAILURE: could not start %s: %s" % (argv[0], exc)}
    out, err = lifeline.communicate(proc, stdin)
    return parse_returned_data(out, err, proc.returncode)


def start_dir(ctx):
    """The play's directory for a local connection, where this identity may
    enter it (``ModuleContext.start_cwd``), else None."""
    return ctx.start_cwd() if hasattr(ctx, "start_cwd") else None


def _cwd(ctx=None):
    """Where Ansible's pipelined modules start: the play's directory for a
    local connection (:func:`start_dir`), else the login directory."""
    start = start_dir(ctx)
    if start:
        return start
    try:
        os.getcwd()
        return None
    except OSError:
        return os.path.expanduser("~")


def parse_returned_data(stdout, stderr, rc):
    """``ActionBase._parse_returned_data``: the module's JSON, or MODULE FAILURE."""
    text = stdout.decode("utf-8", "surrogateescape")
    err = stderr.decode("utf-8", "surrogateescape")
    try:
        data, junk = filter_non_json_lines(text)
        result = json.loads(data)
        if not isinstance(result, dict):
            raise ValueError("not an object")
    except ValueError:
        result = {"failed": True, "changed": False, "rc": rc,
                  "module_stdout": text, "module_stderr": err,
                  "msg": "MODULE FAILURE: No start of json char found\n"
                         "See stdout/stderr for the exact error"}
        if not text.strip():
            result["msg"] = "MODULE FAILURE: No output\nSee stdout/stderr for the exact error"
        return result
    if junk:
        result.setdefault("warnings", []).append(
            "Module invocation had junk after the JSON data: %s" % junk.strip())
    return _plain_warnings(_normalize_exception(_remove_internal_keys(result)))


def _plain_warnings(result):
    """Warnings as a registered result holds them: their text, not ``WarningSummary``.

    ansible-core 2.19+ modules return each warning encoded as a
    ``WarningSummary``; a registered result's ``warnings`` is a list of their
    brief messages (the warning and the causes it follows, on one line). The
    event of one raised from an error (``error_as_warning``) goes in
    ``_ioc_warning_causes``, for the console, which shows its chain in full.
    """
    warnings = result.get("warnings")
    if not isinstance(warnings, list):
        return result
    plain = []
    causes = []
    for warning in warnings:
        if not (isinstance(warning, dict) and warning.get("__ansible_type") == "WarningSummary"):
            plain.append(warning)
            continue
        event = warning.get("event")
        plain.append(brief_message(_followed(event)))
        if isinstance(event, dict) and event.get("chain"):
            causes.append({"text": plain[-1], "event": event})
    result["warnings"] = plain
    if causes:
        result["_ioc_warning_causes"] = causes
    return result


def _followed(event):
    """The messages of an event and of the causes its chain follows
    (``format_event_brief_message``'s parts)."""
    messages = []
    while isinstance(event, dict):
        messages.append(str(event.get("msg") or ""))
        chain = event.get("chain")
        if not isinstance(chain, dict) or not chain.get("follow"):
            break
        event = chain.get("event")
    return messages or [""]


def _normalize_exception(result):
    """A module's ``exception`` as Ansible's result carries it.

    An exception the module did not catch arrives as an encoded
    ``ErrorSummary``: its message becomes the task's (``Task failed: Module
    failed: ...``, as ansible-core 2.21 words it), and ``_ioc_module_exception``
    keeps the exception's own message for the Ansible bridge, which gives
    Ansible the exception rather than the msg made of it. ansible-core 2.21
    gives every failed result an ``exception`` (the traceback only when asked for).
    """
    exc = result.get("exception")
    if isinstance(exc, dict) and exc.get("__ansible_type") == "ErrorSummary":
        event = exc.get("event") or {}
        if "msg" not in result:
            result["_ioc_module_exception"] = _event_message(event)
        result.setdefault("msg", "Task failed: Module failed: %s" % _event_message(event))
        result["exception"] = event.get("formatted_traceback") or results.TRACEBACK_UNAVAILABLE
    elif result.get("failed") and "exception" not in result and not results.legacy():
        result["exception"] = results.TRACEBACK_UNAVAILABLE
    return result


def _event_message(event):
    """An error event's message with its causes, as Ansible joins them."""
    parts = []
    while isinstance(event, dict):
        if event.get("msg"):
            parts.append(str(event["msg"]))
        event = event.get("chain", {}).get("event") if isinstance(event.get("chain"), dict) else None
    return ": ".join(parts)


def filter_non_json_lines(data):
    """The JSON object in a module's output and the junk after it.

    Ansible's ``_filter_non_json_lines`` (objects only): lines before the
    first one starting with ``{`` are dropped, as is everything after the
    last line ending with ``}``.
    """
    lines = data.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("{")), None)
    if start is None:
        raise ValueError("No start of json char found")
    lines = lines[start:]
    end = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].rstrip().endswith("}")),
               None)
    if end is None:
        raise ValueError("No end of json char found")
    return "\n".join(lines[:end + 1]), "\n".join(lines[end + 1:])


def _remove_internal_keys(result):
    for key in [k for k in result if k.startswith("_ansible_") and k not in _KEEP_INTERNAL]:
        del result[key]
    return result


def payload_zip(spec, blob):
    """The module's AnsiballZ payload zip, assembled once per host (KeyError or
    :class:`ModuleSpecError` when part of it was not shipped)."""
    key = (spec["fqn"], tuple(digest for _, digest in spec["entries"]))
    payload = _ZIPS.get(key)
    if payload is None:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
            for name, digest in spec["entries"]:
                info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
                zf.writestr(info, _get(blob, digest))
        payload = _ZIPS[key] = buf.getvalue()
    return payload


def _get(blob, digest):
    """A payload file: shipped zlib-compressed under a ``z`` digest."""
    try:
        data = blob(digest)
    except KeyError:
        raise ModuleSpecError(digest)
    return zlib.decompress(data) if digest.startswith("z") else data


def _b64(data):
    import base64
    return base64.b64encode(data).decode("ascii")
