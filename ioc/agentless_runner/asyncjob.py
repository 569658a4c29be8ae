"""``async``/``poll`` and ``timeout`` on the target, inside the batch.

``async: N`` runs the task's Ansible module under Ansible's own
``async_wrapper`` (shipped with the batch like any module): the wrapper
daemonizes, writes ``<async_dir>/<jid>`` as the job starts and when it ends,
and kills the job after N seconds. Ansible's controller then polls that file
with ``async_status`` every ``poll`` seconds, one round trip each; here the
runner polls it on the target with the same ``async_status`` module (in a
new interpreter each time, as Ansible runs it: the warm helper would read
the file a few hundred milliseconds sooner, and a job Ansible's first poll
finds done would show an ``ASYNC POLL`` first) and
streams one ``async_poll`` event per unfinished poll (the default callback
prints ``ASYNC POLL``), then ``async_ok``/``async_failed``, as
``TaskExecutor._poll_async_result`` sends them. ``poll: 0`` returns the
wrapper's answer at once; the job is a daemon of its own session, so the
runner's lifeline (:mod:`ioc.agentless_runner.lifeline`) does not end it and
a later ``async_status`` task finds its result.

``timeout: N`` is ``TaskTimeoutError.alarm_timeout``: past N seconds the
processes the action started are ended and the task fails with Ansible's
result. As in Ansible it bounds the action (for an async task: the launch),
not the polling.
"""
import json
import os
import secrets
import sys
import threading
import time

from ioc.agentless_runner import ansible_module, context, lifeline, results

#: ``async_dir``, the ``sh`` shell plugin's default (``ANSIBLE_ASYNC_DIR``).
ASYNC_DIR = "~/.ansible_async"

#: Runs Ansible's ``async_wrapper`` from its shipped payload zip (argv[1]) with
#: the arguments Ansible gives it: jid, time limit, preserve_tmp, module path,
#: then the module's command line.
_WRAPPER_BOOT = (
    "import runpy, sys\n"
    "sys.path.insert(0, sys.argv.pop(1))\n"
    "runpy.run_module('ansible.modules.async_wrapper', run_name='__main__', alter_sys=True)\n"
)

#: What ``AnsiballZ_<module>.py`` ends with here: Ansible's wrapper code run
#: with its payload and arguments written into the file (Ansible's own
#: AnsiballZ file embeds them the same way).
_SCRIPT_TRAILER = """
import json as _ioc_json, datetime as _ioc_dt
_ioc_kw = _ioc_json.loads(%r)
_ioc_kw["date_time"] = _ioc_dt.datetime(*_ioc_kw["date_time"])
_ansiballz_main(**_ioc_kw)
"""

_TIMEOUT_HELP = "Configure `DISPLAY_TRACEBACK` to see a traceback on timeout errors."


class Launcher(object):
    """Starts one module under ``async_wrapper`` instead of running it (``wrap_async``).

    Set as ``ctx.launch_async`` for an async task: :func:`ansible_module.run`
    hands it the module it would have run.
    """

    def __init__(self, limit, wrapper_spec, blob, legacy_argv=False):
        self.limit = limit
        self.wrapper_spec = wrapper_spec
        self.blob = blob
        #: ansible-core 2.19/2.20's wrapper: ``<jid> <limit> <module> <argsfile>``.
        self.legacy_argv = legacy_argv

    def __call__(self, spec, payload, wrapper_code, params, ctx):
        tmp = context.remote_tmp()
        try:
            module_path = os.path.join(tmp, "AnsiballZ_%s.py" % spec["name"])
            _write(module_path, "#!%s\n" % sys.executable + wrapper_code +
                   _SCRIPT_TRAILER % json.dumps(ansible_module.ansiballz_kwargs(spec, payload, params)))
            wrapper_zip = os.path.join(tmp, "AnsiballZ_async_wrapper.zip")
            with open(wrapper_zip, "wb") as out:
                out.write(ansible_module.payload_zip(self.wrapper_spec, self.blob))
        except (OSError, KeyError, ansible_module.ModuleSpecError) as exc:
            return {"failed": True, "changed": False,
                    "msg": "ioc: could not prepare the async job: %s" % exc}
        jid = "j%d" % secrets.randbelow(999999999999)
        argv = [sys.executable, "-c", _WRAPPER_BOOT, wrapper_zip, jid, str(self.limit)]
        if self.legacy_argv:  # the wrapper reads the interpreter from the module's shebang
            argv += [module_path, "_"]
        else:
            argv += ["false", module_path, sys.executable, module_path]
        env = ctx.child_env()
        env["ANSIBLE_ASYNC_DIR"] = ASYNC_DIR
        result = ansible_module.execute_argv(argv, b"", env, ansible_module.start_dir(ctx))
        # normal.py: async_wrapper owns its tmpdir now; the action reports a change
        result.pop("_ansible_suppress_tmpdir_delete", None)
        if not result.get("failed"):
            result["changed"] = True
        return result


def _write(path, text):
    with open(path, "w") as out:
        out.write(text)
    os.chmod(path, 0o700)


def status(jid, ctx, run_status, mode="status"):
    """Ansible's ``async_status`` action: its keys around the module's result."""
    async_dir = os.path.expanduser(ASYNC_DIR)
    path = os.path.join(async_dir, jid)
    out = {"started": False, "finished": False, "stdout": "", "stderr": "",
           "stdout_lines": [], "stderr_lines": [], "ansible_job_id": jid}
    if mode == "cleanup":
        out["erased"] = path
    else:
        out["results_file"] = path
        out["started"] = True
    out.update(run_status({"jid": jid, "mode": mode, "_async_dir": async_dir}, ctx))
    for key in ("started", "finished"):
        if key in out:
            out[key] = bool(out[key])
    return out


def poll(launched, limit, interval, ctx, run_status, emit_poll):
    """``TaskExecutor._poll_async_result`` on the target: the job's final result.

    ``emit_poll(result)`` streams each unfinished poll; the caller sends
    ``async_ok``/``async_failed`` with the returned result.
    """
    jid = launched.get("ansible_job_id")
    if jid is None:
        return {"failed": True, "changed": False, "msg": "No job id was returned by the async task"}
    time_left = limit
    current = None
    while time_left > 0:
        time.sleep(interval)
        current = status(jid, ctx, run_status)
        if current.get("finished") or current.get("skipped") or (
                current.get("failed") and not _unparsed(current)):
            break
        time_left -= interval
        emit_poll(current)
    if current is None or not current.get("finished"):
        return not_finished(current or {}, limit)
    status(jid, ctx, run_status, mode="cleanup")
    return current


def not_finished(current, limit):
    """The failure ``_poll_async_result`` makes of a job still running when the
    polls are used up; ``current`` is the last poll's result.

    2.19/2.20 word it by the last poll (``_ansible_parsed``: "did not complete
    within the requested time", else "produced unparsable results") and hand
    the plain dict back: the console says "Action failed". 2.21 builds a new
    ``UnifiedTaskResult`` and asks *its* ``ansible_parsed``, which nothing set:
    always "async task produced unparsable results", with no exception (no
    ``[ERROR]`` line), and ``async_result`` is the last poll exported
    (``as_result_dict``: ``changed``, ``failed``, ``warnings`` and
    ``deprecations`` always there).
    """
    polled = results.public(current)
    if results.legacy():
        msg = "async task did not complete within the requested time - %ss" % limit
        if _unparsed(current):
            msg = "async task produced unparsable results"
        return {"failed": True, "msg": msg, "async_result": polled,
                "_ioc_action_failure": True}
    exported = dict(polled, changed=bool(polled.get("changed")),
                    failed=bool(polled.get("failed")))
    exported.setdefault("warnings", [])
    exported.setdefault("deprecations", [])
    return {"failed": True, "msg": "async task produced unparsable results",
            "async_result": exported, "_ioc_action_failure": True, "_ioc_no_error": True}


def _unparsed(result):
    """The status module's output was no JSON (``ansible_parsed`` false in Ansible)."""
    return bool(result.get("failed")) and "module_stdout" in result and \
        str(result.get("msg", "")).startswith("MODULE FAILURE")


def with_timeout(seconds, call):
    """``call()``, or Ansible's timed-out result when it takes over ``seconds`` (0: no limit).

    The call runs in a thread; at the deadline the process groups it started
    (every module and command runs in one, see :func:`lifeline.popen`) are
    ended, which ends the call too.
    """
    if not seconds or seconds <= 0:
        return call()
    box = {}
    before = lifeline.tracked()

    def target():
        try:
            box["result"] = call()
        except BaseException as exc:  # handed back to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=target, name="ioc-task-timeout", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        lifeline.end_groups(lifeline.tracked() - before)
        worker.join(lifeline.GRACE + 5)
        return timed_out(seconds)
    if "error" in box:
        raise box["error"]
    return box["result"]


def timed_out(seconds):
    """The result of ``TaskTimeoutError`` (raised out of the action: no until, no failed_when)."""
    result = {"failed": True, "changed": False,
              "msg": "Task failed: Timed out after %s second(s)." % seconds,
              "timedout": {"frame": _TIMEOUT_HELP, "period": seconds},
              "_ioc_task_error": True}
    if not results.legacy():
        result["exception"] = results.TRACEBACK_UNAVAILABLE
    return result
