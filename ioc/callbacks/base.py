"""The callback interface the controller drives, in linear order.

It mirrors Ansible's ``v2_*`` callback events (same names without the
prefix, same order) with ioc's own plain objects, so a callback written for
one reads naturally against the other.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ioc.model import Location


class Status(enum.Enum):
    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"
    UNREACHABLE = "unreachable"


@dataclass(frozen=True)
class TaskView:
    """A task as callbacks see it: its step name and where it was written
    (``path:line:col``, as ansible-core prints a task's ``Origin``)."""

    name: str
    action: str
    location: str
    is_handler: bool = False
    #: Module arguments (for callbacks that show them); never templated.
    args: Optional[Mapping[str, Any]] = None
    #: True for tasks Ansible adds itself and hides (implicit meta).
    implicit: bool = False

    @property
    def task_path(self) -> str:
        """``path:line``, as ansible-core's ``Task.get_path()`` (``--events``, -vv)."""
        return str(Location.parse(self.location))


class Callback:
    """Base class: every event is a no-op. Override what you need."""

    def playbook_on_start(self, path: str) -> None: ...
    def play_start(self, name: str, hosts: Sequence[str]) -> None: ...
    def task_start(self, task: TaskView) -> None: ...
    def runner_on_start(self, host: str, task: TaskView) -> None: ...
    def runner_item(self, host: str, task: TaskView, status: Status, result: Dict[str, Any]) -> None: ...
    def runner_retry(self, host: str, task: TaskView, result: Dict[str, Any]) -> None: ...
    def runner_async_poll(self, host: str, task: TaskView, result: Dict[str, Any]) -> None: ...
    def runner_async_ok(self, host: str, task: TaskView, result: Dict[str, Any]) -> None: ...
    def runner_async_failed(self, host: str, task: TaskView, result: Dict[str, Any]) -> None: ...
    def runner_result(self, host: str, task: TaskView, status: Status, result: Dict[str, Any],
                      ignored: bool = False) -> None: ...
    def on_notify(self, host: str, handler: TaskView) -> None: ...
    def on_file_diff(self, host: str, task: TaskView, result: Dict[str, Any]) -> None: ...
    def playbook_on_include(self, included: str, hosts: Sequence[str],
                            item: Optional[Any] = None) -> None:
        """``included: <file> for h1, h2`` after the include's step (L7.8).

        ``item`` is the ``(item=…)`` label of a looped include, else None.
        """
    def no_hosts_matched(self) -> None: ...
    def no_hosts_remaining(self) -> None: ...
    def warning(self, message: str) -> None: ...
    def display(self, message: str, verbosity: int) -> None:
        """A line ansible-core's ``Display`` shows from ``verbosity`` (a ``-v``
        count) on, no callback event of Ansible's (``display.vv(...)``)."""
    def stats(self, stats: Any) -> None: ...
    def transport_report(self, report: Any) -> None: ...


class CallbackSet(Callback):
    """Fans every event out to several callbacks, in order."""

    def __init__(self, callbacks: List[Callback]) -> None:
        self.callbacks = list(callbacks)

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("_") or name == "callbacks" or not hasattr(Callback, name):
            return object.__getattribute__(self, name)
        targets = object.__getattribute__(self, "callbacks")

        def fan_out(*args: Any, **kwargs: Any) -> None:
            for callback in targets:
                getattr(callback, name)(*args, **kwargs)

        return fan_out
