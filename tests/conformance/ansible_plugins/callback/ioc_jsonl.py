"""ioc_jsonl: every v2 callback event as one JSON object per line.

The shape is that of ioc's own ``--events`` output
(``ioc/callbacks/jsonevents.py``), so the conformance suite can compare an
``ansible-playbook`` run with an ``ioc-run`` run mechanically. Enable with::

    ANSIBLE_CALLBACK_PLUGINS=tests/conformance/ansible_plugins/callback
    ANSIBLE_CALLBACKS_ENABLED=ioc_jsonl
    IOC_JSONL=/path/to/events.jsonl

Written for ansible-core 2.19+ (``CallbackTaskResult``: ``result.host``,
``result.task``, ``result.result``).
"""
from __future__ import annotations

import json
import os

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: ioc_jsonl
    type: notification
    short_description: v2 callback events as JSON lines, in ioc's --events shape
    description:
      - Writes one JSON object per callback event to the file named by the
        environment variable IOC_JSONL.
    requirements:
      - enable in configuration (ANSIBLE_CALLBACKS_ENABLED=ioc_jsonl)
"""


#: The one internal key kept: the ``(item=…)`` label of loop_control.label,
#: which ioc's events carry under the same name.
KEPT_INTERNAL = frozenset({"_ansible_item_label"})


def _strip_internal(value):
    """The result without Ansible's internal ``_ansible_*`` keys, recursively."""
    if isinstance(value, dict):
        return {k: _strip_internal(v) for k, v in value.items()
                if not (isinstance(k, str) and k.startswith("_ansible_") and k not in KEPT_INTERNAL)}
    if isinstance(value, (list, tuple)):
        return [_strip_internal(v) for v in value]
    return value


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "ioc_jsonl"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        path = os.environ.get("IOC_JSONL")
        self._out = open(path, "w", encoding="utf-8") if path else None

    # -- output ---------------------------------------------------------------

    def _write(self, event, **fields):
        if self._out is None:
            return
        fields["event"] = event
        self._out.write(json.dumps(fields, sort_keys=True, default=str) + "\n")
        self._out.flush()

    @staticmethod
    def _name(task):
        # As the default callback prints it in the TASK banner (role prefix
        # "role : name"; the action when the task has no name).
        return task.get_name().strip()

    def _result(self, event, result, **extra):
        self._write(event, host=result.host.get_name(), task=self._name(result.task),
                    result=_strip_internal(dict(result.result)), **extra)

    # -- playbook and play ------------------------------------------------------

    def v2_playbook_on_start(self, playbook):
        self._write("playbook_start", path=playbook._file_name)

    def v2_playbook_on_play_start(self, play):
        # The callback only gets the play: ``hosts`` is the inventory's match
        # for its pattern (failed hosts of earlier plays included), not the
        # hosts the play will run on. normalize.py drops it.
        hosts = []
        manager = play.get_variable_manager()
        inventory = getattr(manager, "_inventory", None)
        if inventory is not None:
            hosts = [h.name for h in inventory.get_hosts(play.hosts)]
        self._write("play_start", name=play.get_name().strip(), hosts=hosts)

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._write("task_start", name=self._name(task), action=task.action,
                    location=task.get_path())

    def v2_playbook_on_handler_task_start(self, task):
        self._write("handler_task_start", name=self._name(task), action=task.action,
                    location=task.get_path())

    def v2_playbook_on_notify(self, handler, host):
        self._write("notify", host=host.get_name(), handler=self._name(handler))

    def v2_playbook_on_include(self, included_file):
        fields = {"path": included_file._filename,
                  "hosts": [h.get_name() for h in included_file._hosts]}
        if included_file._task.loop is not None or "ansible_loop_var" in included_file._vars:
            fields["item"] = self._get_item_label(included_file._vars)
        self._write("include", **fields)

    def v2_playbook_on_no_hosts_matched(self):
        self._write("no_hosts_matched")

    def v2_playbook_on_no_hosts_remaining(self):
        self._write("no_hosts_remaining")

    def v2_playbook_on_stats(self, stats):
        hosts = {h: stats.summarize(h) for h in sorted(stats.processed)}
        if any(c["unreachable"] for c in hosts.values()):
            code = 4
        elif any(c["failures"] for c in hosts.values()):
            code = 2
        else:
            code = 0
        self._write("stats", hosts=hosts, exit_code=code)
        if self._out is not None:
            self._out.close()
            self._out = None

    # -- per host ------------------------------------------------------------------

    def v2_runner_on_start(self, host, task):
        self._write("runner_start", host=host.get_name(), task=self._name(task))

    def v2_runner_on_ok(self, result):
        self._result("runner_ok", result, ignored=False)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        # ignore_errors is the task attribute: None when unset (L1.7).
        self._result("runner_failed", result, ignored=bool(ignore_errors))

    def v2_runner_on_skipped(self, result):
        self._result("runner_skipped", result, ignored=False)

    def v2_runner_on_async_poll(self, result):
        self._result("runner_async_poll", result)

    def v2_runner_on_async_ok(self, result):
        self._result("runner_async_ok", result)

    def v2_runner_on_async_failed(self, result):
        self._result("runner_async_failed", result)

    def v2_runner_on_unreachable(self, result):
        self._result("runner_unreachable", result,
                     ignored=bool(getattr(result.task, "ignore_unreachable", False)))

    def v2_runner_item_on_ok(self, result):
        self._result("runner_item_ok", result)

    def v2_runner_item_on_failed(self, result):
        self._result("runner_item_failed", result)

    def v2_runner_item_on_skipped(self, result):
        self._result("runner_item_skipped", result)

    def v2_runner_retry(self, result):
        self._result("runner_retry", result)

    def v2_on_file_diff(self, result):
        self._result("file_diff", result)
