"""``vars_prompt`` for ``ioc-run``: Ansible's own ``Display.do_var_prompt``.

The same prompt text and streams (``input`` for a visible answer,
``getpass`` for a private one), the same ``confirm`` loop, the same
"Not prompting as we are not in interactive mode" warning and defaults when
stdin is not a terminal, and ``encrypt``/``salt``/``salt_size`` through
ansible-core's ``do_encrypt`` (libxcrypt, else passlib, else Ansible's error).
No answer is ever logged.
"""
from __future__ import annotations

from typing import Any, Mapping

from ioc.ansible.values import plain, verbatim
from ioc.errors import IocError

def ask_var(entry: Mapping[str, Any]) -> str:
    """The value of one templated ``vars_prompt`` entry, asked as ansible-playbook asks.

    ``unsafe: true`` keeps a typed template from being templated
    (:func:`ioc.ansible.values.verbatim`).
    """
    from ansible.errors import AnsibleError
    from ansible.module_utils.parsing.convert_bool import boolean
    from ansible.utils.display import Display

    name = str(entry["name"])
    try:
        value = Display().do_var_prompt(
            name, boolean(entry.get("private", True)), entry.get("prompt", name),
            entry.get("encrypt"), boolean(entry.get("confirm", False)),
            entry.get("salt_size"), entry.get("salt"), entry.get("default"),
            boolean(entry.get("unsafe", False)))
    except AnsibleError as exc:
        raise IocError(str(exc)) from None
    text = plain(value)  # Ansible's tagged str does not travel to targets
    if not boolean(entry.get("unsafe", False)):
        return text
    try:
        return verbatim(text)
    except ValueError as exc:
        raise IocError("vars_prompt %s: %s" % (name, exc)) from None
