"""Ansible's values as plain builtins.

ansible-core wraps what it parses: tagged strings (``_AnsibleTaggedStr``),
lazy containers, ``AnsibleUnsafe`` values. ioc's IR, the pickle pipe to the
dispatcher and mitogen's wire take builtins only, so everything that leaves
Ansible's objects for ioc goes through :func:`plain` first.
"""
from __future__ import annotations

from typing import Any, Mapping

from ioc.model import verbatim  # noqa: F401 (ioc.ansible.prompt takes it from here)


def plain(value: Any) -> Any:
    """``value`` as builtins only: Ansible's tagged/lazy containers and strings unwrapped."""
    if value is None or type(value) in (bool, int, float, str, bytes):
        return value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, bytes):
        return bytes(value)
    if isinstance(value, Mapping):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    # str() of Ansible's EncryptedString decrypts to its tagged str subclass
    return str.__str__(str(value))


def plain_vars(values: Mapping[str, Any]) -> Any:
    """Variables as :func:`plain` makes them, text Ansible does not trust kept :func:`verbatim`."""
    try:
        from ansible._internal._datatag._tags import TrustedAsTemplate
    except ImportError:  # pragma: no cover - every supported release has data tags
        return plain(values)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            text = plain(value)
            return text if TrustedAsTemplate.is_tagged_on(value) else verbatim(text)
        if isinstance(value, Mapping):
            return {plain(k): walk(v) for k, v in value.items()}
        if isinstance(value, (list, tuple, set, frozenset)):
            return [walk(v) for v in value]
        return plain(value)

    return walk(values)


def tagged(value: Any) -> Any:
    """``value`` as :func:`plain` makes it, but each of the runner's
    ``TrustedText`` tagged ``TrustedAsTemplate``, as Ansible tags the text it
    loaded (a registered include_vars result stays a template in Ansible's
    variables)."""
    from ansible._internal._datatag._tags import TrustedAsTemplate

    from ioc.agentless_runner.trust import TrustedText

    def walk(item: Any) -> Any:
        if item.__class__ is TrustedText:
            return TrustedAsTemplate().tag(str.__str__(item))
        if isinstance(item, Mapping):
            return {plain(k): walk(v) for k, v in item.items()}
        if isinstance(item, (list, tuple, set, frozenset)):
            return [walk(v) for v in item]
        return plain(item)

    return walk(value)


def trusted_text(value: Any) -> Any:
    """``value`` as :func:`plain` makes it, but each text Ansible trusts as a
    template a ``TrustedText``: the runner templates it when read, even in a
    registered result (the converse of :func:`tagged`)."""
    from ansible._internal._datatag._tags import TrustedAsTemplate

    from ioc.agentless_runner.trust import TrustedText

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            text = plain(item)
            return TrustedText(text) if TrustedAsTemplate.is_tagged_on(item) else text
        if isinstance(item, Mapping):
            return {plain(k): walk(v) for k, v in item.items()}
        if isinstance(item, (list, tuple, set, frozenset)):
            return [walk(v) for v in item]
        return plain(item)

    return walk(value)
