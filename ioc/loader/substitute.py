"""Load-time substitution of ``{{ name }}`` in file names.

Static imports (``vars_files``, ``import_tasks``, ``import_playbook``) are
resolved before anything runs, so only variables known at load time (play
vars and extra vars) can be used in their paths. Anything more than a bare
variable name is refused with the location of the reference.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from ioc.errors import LoadError
from ioc.model import Location

_SIMPLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_ANY_TEMPLATE = re.compile(r"\{\{|\{%|\{#")


def render_static(text: str, variables: Mapping[str, Any], where: Location) -> str:
    """Replace each ``{{ name }}`` in ``text`` with ``variables[name]``.

    Raises :class:`LoadError` at ``where`` when a name is not defined or the
    template is not a bare variable reference.
    """

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in variables:
            raise LoadError(
                "'%s' is undefined: only play vars and extra vars can be used in %r"
                % (name, text),
                where,
            )
        return str(variables[name])

    result = _SIMPLE.sub(replace, text)
    if _ANY_TEMPLATE.search(_SIMPLE.sub("", text)):
        raise LoadError(
            "cannot resolve %r at load time: only '{{ name }}' is supported here" % text,
            where,
        )
    return result
