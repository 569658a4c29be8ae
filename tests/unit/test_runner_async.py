"""The runner's polling of an async job and its task timeout (ioc/agentless_runner/asyncjob.py).

The outcomes whose timing a real run cannot pin down (a job still running at
its last poll, a poll that finds it done), with ``async_status`` answered here.
"""
import subprocess
import time

from ioc.agentless_runner import asyncjob, context, lifeline, results


def _status(finished_after):
    """An ``async_status`` module whose job finishes at its ``finished_after``-th call."""
    calls = []

    def run_status(args, ctx):
        calls.append(dict(args))
        if args["mode"] == "cleanup":
            return {"ansible_job_id": args["jid"], "erased": "x"}
        done = len([c for c in calls if c["mode"] == "status"]) >= finished_after
        return {"ansible_job_id": args["jid"], "started": 1, "finished": int(done),
                "rc": 0 if done else None}
    return run_status, calls


def test_a_job_still_running_at_its_last_poll_fails_as_the_task_executor_words_it(monkeypatch):
    """2.21 asks a new result's ``ansible_parsed`` (never set): "unparsable
    results", no error to show, the last poll exported as ``async_result``."""
    monkeypatch.setattr(asyncjob.time, "sleep", lambda seconds: None)
    run_status, calls = _status(finished_after=99)
    polls = []
    result = asyncjob.poll({"ansible_job_id": "j1.2"}, 3, 1, None, run_status, polls.append)
    assert [(p["started"], p["finished"]) for p in polls] == [(True, False)] * 3
    assert result["failed"] is True
    assert result["msg"] == "async task produced unparsable results"
    assert "exception" not in result and result["_ioc_no_error"] is True
    polled = result["async_result"]
    assert polled["ansible_job_id"] == "j1.2"
    assert (polled["changed"], polled["failed"], polled["warnings"], polled["deprecations"]) \
        == (False, False, [], [])
    assert all(c["mode"] == "status" for c in calls)  # the file stays: the job may still end


def test_under_2_19_a_job_still_running_at_its_last_poll_did_not_complete(monkeypatch):
    """2.19 words it by the last poll, as the action's failure ("Action failed")."""
    monkeypatch.setattr(asyncjob.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(context, "SHAPE", ["2.19"])  # (results.legacy reads it)
    run_status, _ = _status(finished_after=99)
    result = asyncjob.poll({"ansible_job_id": "j1.2"}, 3, 1, None, run_status, lambda r: None)
    assert result["msg"] == "async task did not complete within the requested time - 3s"
    assert result["_ioc_action_failure"] is True and "_ioc_no_error" not in result
    assert "warnings" not in result["async_result"]


def test_a_finished_job_is_its_result_and_its_status_file_is_removed(monkeypatch):
    monkeypatch.setattr(asyncjob.time, "sleep", lambda seconds: None)
    run_status, calls = _status(finished_after=2)
    polls = []
    result = asyncjob.poll({"ansible_job_id": "j1.2"}, 10, 2, None, run_status, polls.append)
    assert len(polls) == 1  # only the polls that found it running are shown
    assert (result["finished"], result["rc"], result["ansible_job_id"]) == (True, 0, "j1.2")
    assert result["results_file"].endswith("/.ansible_async/j1.2")
    assert calls[-1]["mode"] == "cleanup" and calls[-1]["_async_dir"].endswith(".ansible_async")


def test_a_task_past_its_timeout_is_ended_with_ansibles_result():
    marker = "7.%d" % time.time_ns()

    def call():
        proc = lifeline.popen(["sleep", marker])
        lifeline.communicate(proc)
        return {"changed": True}

    start = time.monotonic()
    result = asyncjob.with_timeout(1, call)
    assert time.monotonic() - start < 5
    assert result["msg"] == "Task failed: Timed out after 1 second(s)."
    assert result["timedout"] == {"period": 1, "frame": "Configure `DISPLAY_TRACEBACK` to "
                                  "see a traceback on timeout errors."}
    assert subprocess.run(["pgrep", "-f", "sleep " + marker]).returncode == 1
    assert asyncjob.with_timeout(5, lambda: {"changed": False}) == {"changed": False}
