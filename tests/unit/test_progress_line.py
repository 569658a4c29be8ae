"""The progress line's text and its erasing (on a terminal: tests/integration/test_progress.py)."""
from __future__ import annotations

import io
import time

from ioc.callbacks.progress import ERASE, Progress


def test_the_line_counts_connections_tasks_and_names_the_slowest_host():
    progress = Progress(io.StringIO(), interval=60, delay=0.5)
    try:
        progress.play(["a", "b", "c", "d"])
        for host in "abcd":
            progress.connection(host, "connecting")
        progress.connection("a", "connected")
        progress.connection("b", "connected")
        progress.connection("d", "unreachable")
        progress.step({"a": 3, "b": 3, "c": 3})
        now = time.monotonic()
        assert progress.text(now) == ""  # not before the step has run `delay`
        for event in ({"e": "start"}, {"e": "done"}, {"e": "done"}):
            progress.event("a", event)
        progress.event("b", {"e": "done"})
        assert progress.text(now + 2.5) == (
            "[ioc] hosts connected 2/4 (1 unreachable), 1 connecting | tasks done 3/9, "
            "per host min 0 median 1 max 2 of 3 | slowest c (0/3, connecting for 2s)")
        progress.connection("c", "connected")
        progress.event("c", {"e": "done"})
        progress.event("c", {"e": "end"})
        progress.event("c", None)
        assert progress.text(now + 2.5).endswith("| slowest b (1/3, 2s on a task)")
        progress.step_done()
        assert progress.text(now + 2.5) == ""
    finally:
        progress.close()


def test_the_line_is_drawn_in_place_and_erased_before_a_console_line():
    out = io.StringIO()
    progress = Progress(out, interval=0.02, delay=0)
    try:
        progress.play(["a"])
        progress.step({"a": 2})
        deadline = time.monotonic() + 5
        while "[ioc]" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
        with progress.hidden():
            out.write("ok: [a]\n")
        assert out.getvalue().startswith(ERASE + "[ioc] hosts connected 0/1")
        assert out.getvalue().endswith(ERASE + "ok: [a]\n")  # erased, then the line
        progress.step_done()
    finally:
        progress.close()
    tail = out.getvalue().rsplit("\n", 1)[1]  # what is left on the last line: nothing
    assert tail == "" or tail.endswith(ERASE), repr(tail)
