"""Exceptions ioc raises for user errors.

Configuration errors are exceptions raised *before* anything runs on a host and
carry the ``file:line`` they come from. Failures of tasks at run time are not
exceptions: they travel back as result values (see ``ioc.agentless_runner``).
"""
from __future__ import annotations

from typing import Optional

from ioc.model import Location


class IocError(Exception):
    """Base of every error ioc reports to a user.

    ``exit_code`` is ansible-playbook's for the same error where it differs
    from the class's (ansible-core's ``AnsibleParserError`` exits 4, a plain
    ``AnsibleError`` 1); ``help_text`` follows the message, as Ansible's does.
    """

    #: ansible-playbook's exit code for this kind of error (``ExitCode``).
    exit_code = 1

    def __init__(self, message: str, location: Optional[Location] = None,
                 exit_code: Optional[int] = None, help_text: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.location = location
        self.help_text = help_text
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        if self.location is not None:
            return "%s: %s" % (self.location, self.message)
        return self.message


class LoadError(IocError, ValueError):
    """A playbook, role, inventory or vars file is malformed."""

    exit_code = 4  # AnsibleParserError


class YamlSyntaxError(LoadError):
    """A file is not valid YAML; ``__cause__`` is the parser's own error (a
    front end with ansible-core lets Ansible's analysis of it word the hints)."""


class IncludeNotFound(LoadError):
    """A dynamic include names a file or role that cannot be loaded.

    Unlike other load errors this one is raised at run time, and it fails the
    hosts that included it rather than the run (as the linear strategy does).
    """


class InventoryError(LoadError):
    """An inventory source is malformed or a host pattern cannot be matched."""


class PlanError(IocError, ValueError):
    """The planner met a construct it cannot run correctly."""

    exit_code = 4


class ConnectionSetupError(IocError):
    """A host's connection settings are unusable (not the same as unreachable)."""


class RunAborted(IocError):
    """A target reported what ends the whole run at once (a changed task
    notified a name no handler has): no later task, play or recap, as
    ansible-playbook's strategy raising an ``AnsibleError`` there."""
