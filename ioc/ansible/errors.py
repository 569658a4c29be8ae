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
from typing import Any, Optional

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


def source_context(origin: str) -> str:
    """``Origin: path:line:col``, a blank line and the excerpt with its caret line
    (what follows a task's ``[ERROR]: Task failed: ...`` line); ``origin`` is
    :attr:`Location.origin <ioc.model.Location.origin>`."""
    from ansible._internal._errors._error_utils import SourceContext

    tagged = _origin(Location.parse(origin))
    if tagged is None:
        return "Origin: %s" % origin
    return str(SourceContext.from_origin(tagged))
