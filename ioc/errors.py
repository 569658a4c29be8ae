"""Exceptions ioc raises for user errors.

Configuration errors are exceptions raised *before* anything runs on a host and
carry the ``file:line`` they come from. Failures of tasks at run time are not
exceptions: they travel back as result values (see ``ioc.agentless_runner``).
"""
from __future__ import annotations

from typing import Optional

from ioc.model import Location


class IocError(Exception):
    """Base of every error ioc reports to a user."""

    def __init__(self, message: str, location: Optional[Location] = None) -> None:
        super().__init__(message)
        self.message = message
        self.location = location

    def __str__(self) -> str:
        if self.location is not None:
            return "%s: %s" % (self.location, self.message)
        return self.message


class LoadError(IocError, ValueError):
    """A playbook, role, inventory or vars file is malformed."""


class IncludeNotFound(LoadError):
    """A dynamic include names a file or role that cannot be loaded.

    Unlike other load errors this one is raised at run time, and it fails the
    hosts that included it rather than the run (as the linear strategy does).
    """


class InventoryError(LoadError):
    """An inventory source is malformed or a host pattern cannot be matched."""


class PlanError(IocError, ValueError):
    """The planner met a construct it cannot run correctly."""


class ConnectionSetupError(IocError):
    """A host's connection settings are unusable (not the same as unreachable)."""
