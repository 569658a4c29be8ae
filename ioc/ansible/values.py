"""Ansible's values as plain builtins.

ansible-core wraps what it parses: tagged strings (``_AnsibleTaggedStr``),
lazy containers, ``AnsibleUnsafe`` values. ioc's IR, the pickle pipe to the
dispatcher and mitogen's wire take builtins only, so everything that leaves
Ansible's objects for ioc goes through :func:`plain` first.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Mapping

from ioc.model import verbatim  # noqa: F401 (ioc.ansible.prompt takes it from here)


def _tagged_vaulted(value: Any) -> bool:
    from ansible._internal._datatag._tags import VaultedValue

    _TAGGED_VAULTED[0] = VaultedValue.is_tagged_on
    return VaultedValue.is_tagged_on(value)


#: Whether a str is tagged ``VaultedValue`` (Ansible's check, looked up once).
_TAGGED_VAULTED: list = [_tagged_vaulted]


def plain(value: Any) -> Any:
    """``value`` as builtins only: Ansible's tagged/lazy containers and strings unwrapped."""
    if value is None or type(value) in (bool, int, float, str, bytes):
        return value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        # (a decrypted vault value Ansible tagged VaultedValue stays vaulted)
        return _vaulted(value, str.__str__(value)) if _TAGGED_VAULTED[0](value) else \
            str.__str__(value)
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
    return _vaulted(value, str.__str__(str(value)))


def _vaulted(value: Any, text: str) -> Any:
    """``text``, the decrypted text of ``value``, a ``VaultedText`` that keeps
    its ciphertext (and where it was written) when ``value`` came from Ansible Vault (an
    ``EncryptedString``): the runner's ``vault_encrypted`` test is true of it."""
    from ansible._internal._datatag._tags import Origin
    from ansible.parsing.vault import VaultHelper

    from ioc.agentless_runner.trust import VaultedText

    ciphertext = VaultHelper.get_ciphertext(value, with_tags=False)
    if not ciphertext:
        return text
    origin = Origin.get_tag(value)
    return VaultedText(text, str.__str__(ciphertext), str(origin) if origin is not None else None)


def plain_vars(values: Mapping[str, Any]) -> Any:
    """Variables as :func:`plain` makes them, each text Ansible does not trust
    (``!unsafe``) an ``UntrustedText`` that knows where it was written: the
    runner neither templates it nor evaluates it as a conditional; and each
    variable whose value is a template a ``WrittenTemplate`` that knows where
    it was written (a deprecated value it reads is reported there)."""
    from ansible._internal._datatag._tags import Origin, TrustedAsTemplate

    from ioc.agentless_runner.trust import UntrustedText

    def text(value: str) -> Any:
        if TrustedAsTemplate.is_tagged_on(value):
            return plain(value)
        origin = Origin.get_tag(value)
        return UntrustedText(plain(value), str(origin) if origin is not None else None)

    return _with_origins(values, _texts_mapped(values, text))


def written_templates(values: Mapping[str, Any]) -> Any:
    """Variables as :func:`plain` makes them, each whose value is a template a
    ``WrittenTemplate`` that knows where it was written."""
    return _with_origins(values, plain(values))


def _with_origins(values: Mapping[str, Any], out: Dict[Any, Any]) -> Dict[Any, Any]:
    """``out`` (``values`` made plain) with each text of a variable that is a
    template, and whose place Ansible knows, a ``WrittenTemplate``: a
    deprecated value its rendering reads is reported there (2.21)."""
    from ansible._internal._datatag._tags import Origin

    from ioc.agentless_runner.trust import WrittenTemplate

    for name, value in values.items():
        kept = out[name]
        if kept.__class__ is str and ("{{" in kept or "{%" in kept):
            origin = Origin.get_tag(value)
            if origin is not None and origin.line_num:
                out[name] = WrittenTemplate(kept, str(origin))
    return out


def tagged(value: Any) -> Any:
    """``value`` as :func:`plain` makes it, but each of the runner's
    ``TrustedText`` tagged ``TrustedAsTemplate``, as Ansible tags the text it
    loaded (a registered include_vars result stays a template in Ansible's
    variables), and each ``VaultedText`` tagged ``VaultedValue`` (with its
    ciphertext: still a vault value to Ansible's ``vault_encrypted``)."""
    from ansible._internal._datatag._tags import TrustedAsTemplate, VaultedValue

    from ioc.agentless_runner.trust import TrustedText, VaultedText

    def text(value: str) -> Any:
        if value.__class__ is TrustedText:
            return TrustedAsTemplate().tag(str.__str__(value))
        if value.__class__ is VaultedText:
            return VaultedValue(ciphertext=value.ciphertext).tag(str.__str__(value))
        return plain(value)

    return _texts_mapped(value, text)


def trusted_text(value: Any) -> Any:
    """``value`` as :func:`plain` makes it, but each text Ansible trusts as a
    template a ``TrustedText``: the runner templates it when read, even in a
    registered result (the converse of :func:`tagged`)."""
    from ansible._internal._datatag._tags import TrustedAsTemplate

    from ioc.agentless_runner.trust import TrustedText

    return _texts_mapped(value, lambda text: TrustedText(plain(text))
                         if TrustedAsTemplate.is_tagged_on(text) else plain(text))


def _texts_mapped(value: Any, text: Callable[[str], Any]) -> Any:
    """``value`` as :func:`plain` makes it, each string given to ``text`` (keys
    are made plain)."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, Mapping):
        return {plain(k): _texts_mapped(v, text) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_texts_mapped(v, text) for v in value]
    return plain(value)
