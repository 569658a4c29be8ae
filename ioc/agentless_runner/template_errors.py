"""The errors templating raises, in a module of their own.

Templating (``templating.py``) and the filters and tests it calls
(``filters.py``, ``tests_jinja.py``) both raise them; keeping them here lets
the filters raise a templating error without importing the templating
module that imports them.

Imports nothing; runs on Python 3.9+.
"""

__all__ = ["TemplateError", "UndefinedVariableError", "ConditionalResultError"]


class TemplateError(Exception):
    """A templating failure; ``str()`` is the message a user sees."""

    def __init__(self, message):
        Exception.__init__(self, message)
        self.message = message

    def __str__(self):
        return self.message


class UndefinedVariableError(TemplateError):
    """A template used a variable, key or attribute that does not exist."""


class ConditionalResultError(TemplateError):
    """A condition evaluated to something other than a bool."""
