"""The errors templating raises, in a module of their own.

Templating (``templating.py``) and the filters and tests it calls
(``filters.py``, ``tests_jinja.py``) both raise them; keeping them here lets
the filters raise a templating error without importing the templating
module that imports them.

Imports nothing; runs on Python 3.9+.
"""

__all__ = ["TemplateError", "UndefinedVariableError", "ConditionalResultError",
           "UntrustedTemplateError", "conditional_error_text"]


class TemplateError(Exception):
    """A templating failure; ``str()`` is the message a user sees."""

    #: ``[path, line or None]`` of a controller file the error is about, when
    #: it is a template file's own (a ``template`` lookup's): Ansible's error
    #: names that file.
    file = None  # type: object

    def __init__(self, message):
        Exception.__init__(self, message)
        self.message = message

    def __str__(self):
        return self.message


class UndefinedVariableError(TemplateError):
    """A template used a variable, key or attribute that does not exist."""


class ConditionalResultError(TemplateError):
    """A condition evaluated to something other than a bool; ``help_text`` is
    ansible-core's (``AnsibleBrokenConditionalError``'s, as TaskExecutor shows it)."""

    help_text = ("Broken conditionals can be temporarily allowed with the "
                 "`ALLOW_BROKEN_CONDITIONALS` configuration option.")


class UntrustedTemplateError(TemplateError):
    """A text that is no trusted template or expression was to be evaluated
    (ansible-core's ``TemplateTrustCheckFailedError``); ``help_text`` is its."""

    help_text = ("Templates and expressions must be defined by trusted sources such as "
                 "playbooks or roles, not untrusted sources such as module results.")

    def __init__(self, origin=None):
        TemplateError.__init__(self, "Encountered untrusted template or expression.")
        #: ``path:line:col`` where the untrusted text was written, when known
        #: (an ``!unsafe`` value's: ansible-core's error is about it).
        self.origin = origin or None


def conditional_error_text(exc):
    """The words of a condition that failed to evaluate, as Ansible's
    ``evaluate_conditional`` gives them: an undefined variable under "Error
    while evaluating conditional", every other error (a result that is no
    bool, "Error rendering expression: ...") as it is."""
    if isinstance(exc, UndefinedVariableError):
        return "Error while evaluating conditional: %s" % (exc,)
    return str(exc)
