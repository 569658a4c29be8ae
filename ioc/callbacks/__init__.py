"""Callbacks: what a run looks like to a person or a tool."""
from ioc.callbacks.base import Callback, CallbackSet, Status, TaskView
from ioc.callbacks.stats import Stats

__all__ = ["Callback", "CallbackSet", "Stats", "Status", "TaskView"]
