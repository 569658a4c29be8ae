"""ioc-run's errors printed by ansible-core's own code, as ansible-playbook prints them.

``[ERROR]: <message>``, then ``Origin: path:line:col``, a blank line and the
source excerpt with its caret line: ansible-core's ``Display.error`` and
``SourceContext`` render ioc's :class:`~ioc.errors.IocError` (its message and
:class:`~ioc.model.Location` become an ``AnsibleError`` tagged with an
``Origin``), so the layout, the stream (stderr) and the colours are Ansible's.
A YAML syntax error goes through ansible-core's own analysis of the parser's
error (its hints on missing quotes, unquoted colons, tabs).
"""
from __future__ import annotations

import os
import sys
from typing import Any, Optional, Sequence

from ioc.errors import IocError, YamlSyntaxError
from ioc.model import Location


def _origin(location: Optional[Location]) -> Any:
    from ansible._internal._datatag._tags import Origin

    if location is None or not location.path or location.path.startswith("<"):
        return None
    return Origin(path=os.path.abspath(location.path), line_num=location.line or None,
                  col_num=location.col or None)


def as_ansible_error(exc: IocError) -> Exception:
    """``exc`` as the ``AnsibleError`` ansible-core would have raised."""
    from ansible.errors import AnsibleError

    origin = _origin(exc.location)
    cause = exc.__cause__
    if isinstance(exc, YamlSyntaxError) and cause is not None and origin is not None:
        from ansible._internal._yaml._errors import AnsibleYAMLParserError

        try:
            AnsibleYAMLParserError.handle_exception(cause, origin.replace(line_num=None,
                                                                          col_num=None))
        except AnsibleYAMLParserError as error:
            return error
    return AnsibleError(exc.message, obj=origin, help_text=exc.help_text)


def display_error(exc: IocError) -> None:
    """Print ``exc`` as ansible-playbook prints an error that ends the run."""
    from ansible.utils.display import Display

    Display().error(as_ansible_error(exc))


def forget_displayed() -> None:
    """Display as a new process has it, for ``ioc-run --persist``'s daemon, which
    runs many plays in one process, each on its client's streams: ansible-core
    prints each warning, deprecation and error once per process, sizes its
    columns and guards ``sys.stdout``/``sys.stderr`` (a lock, an encoding error
    handler) once, when its Display is made."""
    from ansible.utils import display as module

    display = module.Display()
    for name in ("_deprecations", "_warns", "_errors"):
        seen = getattr(display, name, None)
        if isinstance(seen, (set, dict)):
            seen.clear()
    if hasattr(display, "_set_column_width"):
        display._set_column_width()
    guard = getattr(module, "_synchronize_textiowrapper", None)
    for stream in (sys.stdout, sys.stderr):
        if guard is not None:
            guard(stream, display._lock)
        try:
            stream.reconfigure(errors="_replacing_warning_handler")  # type: ignore[union-attr]
        except LookupError:  # (no such handler in this ansible-core)
            pass


def source_context(origin: str) -> str:
    """``Origin: path:line:col``, a blank line and the excerpt with its caret line
    (what follows a task's ``[ERROR]: Task failed: ...`` line); ``origin`` is
    :attr:`Location.origin <ioc.model.Location.origin>`."""
    from ansible._internal._errors._error_utils import SourceContext

    tagged = _origin(Location.parse(origin))
    if tagged is None:
        return "Origin: %s" % origin
    return str(SourceContext.from_origin(tagged))


#: A conditional whose value is not a boolean: ansible-core's words, split as it
#: chains them (the expression's error, caused by the conditional's own).
_WHEN_FAILED = "A 'when' expression failed"
_NOT_BOOLEAN = "Conditionals must have a boolean result."
_BROKEN_HELP = "Broken conditionals can be temporarily allowed with the " \
    "`ALLOW_BROKEN_CONDITIONALS` configuration option."
#: debug's ``var`` that could not be evaluated: its action raises this about the
#: argument, from the templating error (both about where ``var`` was written).
_VAR_FAILED = "Error while resolving `var` expression"


def engine_exception(message: str, obj: Any = None, help_text: Optional[str] = None) -> Exception:
    """The ``AnsibleError`` TaskExecutor catches for an error the engine met
    while running a task (``message`` without "Task failed: "), about ``obj``
    (an origin-tagged value, or an ``Origin``), with the action's ``help_text``."""
    from ansible.errors import AnsibleError

    when, _, broken = message.partition(": ")
    if when == _WHEN_FAILED and broken.endswith(_NOT_BOOLEAN):
        help_text = _BROKEN_HELP
    elif not ((when == _VAR_FAILED or when == _WHEN_FAILED and help_text)
              and broken and obj is not None):
        return AnsibleError(message, obj=obj, help_text=help_text)
    # "<when>." caused by the error itself, both about obj (as Ansible chains them)
    try:
        raise AnsibleError(broken, obj=obj, help_text=help_text)
    except AnsibleError as cause:
        error = AnsibleError(when + ".", obj=obj)
        error.__cause__ = cause
        return error


def task_error_text(message: str, task_origin: str, cause_origin: str,
                    captured: Optional[str] = None, help_text: Optional[str] = None) -> str:
    """What follows ``[ERROR]: `` for a task the engine failed at ``cause_origin``
    (a ``when``/``until``/``changed_when``/``failed_when`` expression):
    TaskExecutor's ``AnsibleTaskError`` chained to the engine's error,
    formatted by ansible-core's own display code (the "Task failed." block and
    each "<<< caused by >>>" with its excerpt). ``captured`` ("Action" or
    "Module"): the error is in the action's result (a changed_when/failed_when
    expression's), which the chain says first ("Task failed: Action failed.").
    ``help_text``: the engine error's (an untrusted value's)."""
    from ansible._internal import _display_utils
    from ansible._internal._errors import _error_factory
    from ansible.errors import AnsibleError, AnsibleTaskError
    from ansible.module_utils._internal import _messages

    if message.startswith("Task failed: "):
        message = message[len("Task failed: "):]
    try:
        try:
            try:
                raise engine_exception(message, _origin(Location.parse(cause_origin)), help_text)
            except Exception as ex:
                if captured is None:
                    raise
                raise AnsibleError("%s failed." % captured) from ex
        except Exception as ex:
            raise AnsibleTaskError(obj=_origin(Location.parse(task_origin))) from ex
    except AnsibleTaskError as error:
        event = _error_factory.ControllerEventFactory.from_exception(error, False)
    return _display_utils.format_message(_messages.ErrorSummary(event=event), False)


def error_chain_text(links: Sequence[Sequence[Any]], task_origin: str) -> str:
    """What follows ``[ERROR]: `` for a task whose error ansible-core raises as a
    chain (an argument that cannot be templated: the action, then the argument,
    then the variable whose value failed): ``links`` are (message, origin[,
    the value an origin-less link is about[, the error's help text]]) from
    the outermost cause in, formatted by ansible-core's own display code under
    TaskExecutor's "Task failed." (a cause at its parent's origin is merged into
    its parent's line, as Ansible does)."""
    from ansible._internal import _display_utils
    from ansible._internal._errors import _error_factory
    from ansible.errors import AnsibleError, AnsibleTaskError
    from ansible.module_utils._internal import _messages

    cause: Optional[BaseException] = None
    for link in reversed(links):
        message, origin = link[0], link[1]
        # (a link without an origin names its value: Ansible prints it under "<unknown>")
        obj = _origin(Location.parse(origin)) if origin else (link[2] if len(link) > 2 else None)
        help_text = link[3] if len(link) > 3 else None
        try:
            raise AnsibleError(message, obj=obj, help_text=help_text) from cause
        except AnsibleError as error:
            cause = error
    try:
        raise AnsibleTaskError(obj=_origin(Location.parse(task_origin))) from cause
    except AnsibleTaskError as error:
        event = _error_factory.ControllerEventFactory.from_exception(error, False)
    return _display_utils.format_message(_messages.ErrorSummary(event=event), False)
