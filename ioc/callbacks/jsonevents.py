"""Machine-readable events: one JSON object per line, in linear order.

Meant for tools and for comparing runs mechanically (the conformance suite
normalises Ansible's events into the same shape). Results are written as
callbacks receive them, so ``no_log`` results are already censored. Every
event carries ``time``: when it was written, in Unix seconds (a float), so a
tool can tell when each host's results came in.
"""
from __future__ import annotations

import json
import time
from typing import Any, Dict, Sequence, TextIO

from ioc.callbacks.base import Callback, Status, TaskView


class JsonEvents(Callback):
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def _write(self, event: str, **fields: Any) -> None:
        fields["event"] = event
        fields["time"] = time.time()
        result = fields.get("result")
        if isinstance(result, dict) and any(k.startswith("_ioc_") for k in result):
            # (the runner's notes to the console: how to word an error, or that none shows)
            fields["result"] = {k: v for k, v in result.items() if not k.startswith("_ioc_")}
        self.out.write(json.dumps(fields, sort_keys=True, default=str) + "\n")
        self.out.flush()

    def playbook_on_start(self, path: str) -> None:
        self._write("playbook_start", path=path)

    def play_start(self, name: str, hosts: Sequence[str]) -> None:
        self._write("play_start", name=name, hosts=list(hosts))

    def task_start(self, task: TaskView) -> None:
        self._write("handler_task_start" if task.is_handler else "task_start",
                    name=task.name, action=task.action, location=task.task_path)

    def runner_on_start(self, host: str, task: TaskView) -> None:
        self._write("runner_start", host=host, task=task.name)

    def runner_item(self, host: str, task: TaskView, status: Status, result: Dict[str, Any]) -> None:
        self._write("runner_item_" + status.value, host=host, task=task.name, result=result)

    def runner_retry(self, host: str, task: TaskView, result: Dict[str, Any]) -> None:
        self._write("runner_retry", host=host, task=task.name, result=result)

    def runner_async_poll(self, host: str, task: TaskView, result: Dict[str, Any]) -> None:
        self._write("runner_async_poll", host=host, task=task.name, result=result)

    def runner_async_ok(self, host: str, task: TaskView, result: Dict[str, Any]) -> None:
        self._write("runner_async_ok", host=host, task=task.name, result=result)

    def runner_async_failed(self, host: str, task: TaskView, result: Dict[str, Any]) -> None:
        self._write("runner_async_failed", host=host, task=task.name, result=result)

    def runner_result(self, host: str, task: TaskView, status: Status, result: Dict[str, Any],
                      ignored: bool = False) -> None:
        self._write("runner_" + status.value, host=host, task=task.name, result=result,
                    ignored=ignored)

    def on_file_diff(self, host: str, task: TaskView, result: Dict[str, Any]) -> None:
        self._write("file_diff", host=host, task=task.name, result={
            "changed": bool(result.get("changed")), "diff": result.get("diff")})

    def on_notify(self, host: str, handler: TaskView) -> None:
        self._write("notify", host=host, handler=handler.name)

    def playbook_on_include(self, included: str, hosts: Sequence[str],
                            item: Any = None) -> None:
        fields: Dict[str, Any] = {"path": included, "hosts": list(hosts)}
        if item is not None:
            fields["item"] = item
        self._write("include", **fields)

    def no_hosts_matched(self) -> None:
        self._write("no_hosts_matched")

    def no_hosts_remaining(self) -> None:
        self._write("no_hosts_remaining")

    def warning(self, message: str) -> None:
        self._write("warning", message=message)

    def stats(self, stats: Any) -> None:
        self._write("stats", hosts={h: stats.summarize(h) for h in sorted(stats.hosts)},
                    exit_code=stats.exit_code())

    def transport_report(self, report: Any) -> None:
        self._write("transport", batches=report.batches, calls=report.calls,
                    per_task_calls=report.per_task_calls, sent=dict(report.sent),
                    received=dict(report.received))
