"""Text trusted as a template, per value (ansible-core 2.19+'s ``TrustedAsTemplate``).

ansible-core tags each string it loads from a playbook, a vars file or
``include_vars`` as trusted; templating reads such a string as a template
wherever it is found, even inside a registered result
(``{{ r.ansible_facts.foo }}`` of an include_vars of ``foo: "{{ 1 + 1 }}"``
is 2), while text a module returned is never templated. The runner's layers
of written variables are trusted as a whole; in the layers of results
(registered values, set_fact values) only a :class:`TrustedText` is.

On the wire: a TrustedText pickles as itself (the controller's unpickler
takes this class, :func:`find_class`); the runner's mitogen takes builtins
only, so what the controller sends back holds each one as the tuple
:func:`encode` makes (the runner's values hold no tuples), which
:func:`decode` turns back.

The converse, :class:`UntrustedText`: a text of a layer of written
variables that ansible-core does not trust (``!unsafe``): never templated,
and never evaluated as a conditional expression (ansible-core fails the
task: "Encountered untrusted template or expression."). It remembers where
it was written (:attr:`UntrustedText.origin`), where that error points. It
travels as its own tuple too, and back to the controller as itself.

A value that came from Ansible Vault (``!vault``) is a :class:`VaultedText`:
its decrypted text (the runner uses it, as Ansible's controller does when a
task reads it) that keeps its ciphertext, as ansible-core 2.19+ keeps an
``EncryptedString`` (the ``vault_encrypted`` test is true of it, not of a
text made from it). Its ciphertext and origin travel with it.

Imports only the stdlib; runs on Python 3.9+.
"""

__all__ = ["TrustedText", "UntrustedText", "VaultedText", "WrittenTemplate", "trusted", "written",
           "encode",
           "decode", "find_class"]

#: The first item of a trusted text's tuple on the wire to the runner.
_WIRE = "\x00ioc:trusted"
#: The first item of an untrusted text's tuple on the wire to the runner.
_WIRE_UNTRUSTED = "\x00ioc:untrusted"
#: The first item of a vaulted text's tuple on the wire to the runner.
_WIRE_VAULTED = "\x00ioc:vaulted"
#: The first item of a written template's tuple on the wire to the runner.
_WIRE_WRITTEN = "\x00ioc:written"


class TrustedText(str):
    """A str that is a trusted template: templated when read, wherever it is."""

    __slots__ = ()

    def __reduce__(self):
        return TrustedText, (str.__str__(self),)

    def __repr__(self):
        return str.__repr__(self)


class _Placed(str):
    """A str that knows where it was written."""

    def __new__(cls, text, origin=None):
        self = str.__new__(cls, text)
        #: ``path:line:col`` where it was written ("" when unknown).
        self.origin = origin or ""
        return self

    def __reduce__(self):
        return self.__class__, (str.__str__(self), self.origin)

    def __repr__(self):
        return str.__repr__(self)


class UntrustedText(_Placed):
    """A str ansible-core does not trust as a template (``!unsafe``): used as
    it is, never templated nor evaluated as an expression."""


class VaultedText(str):
    """The decrypted text of an Ansible Vault value, which keeps its ciphertext
    and where it was written."""

    ciphertext: str
    origin: str

    def __new__(cls, text, ciphertext, origin=None):
        self = str.__new__(cls, text)
        #: The vault-encrypted text it was decrypted from (``$ANSIBLE_VAULT;...``).
        self.ciphertext = ciphertext
        #: ``path:line:col`` where it was written ("" when unknown): where an
        #: error about it points, never showing its text.
        self.origin = origin or ""
        return self

    def __reduce__(self):
        return VaultedText, (str.__str__(self), self.ciphertext, self.origin)

    def __repr__(self):
        return str.__repr__(self)  # (the decrypted text's, as Ansible's tagged str has it)


class WrittenTemplate(_Placed):
    """A template as a layer of written variables holds it (a play's,
    a role's defaults, a vars file's), that knows where it was written: a
    deprecated value its rendering reads is reported there, as ansible-core
    2.21 reports the origin of the template that read it (a role default
    ``"{{ ansible_processor_vcpus }}"`` warns at the default, not at the task
    argument that used it). Otherwise a plain text of its layer."""


def trusted(value):
    """``value`` with every string in it a :class:`TrustedText` (data loaded
    from a vars file; not its keys, which are never templated as a value is)."""
    if isinstance(value, str):
        return value if value.__class__ is TrustedText else TrustedText(value)
    if isinstance(value, dict):
        return {k: trusted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [trusted(v) for v in value]
    return value


def written(raw, value):
    """``value`` (``raw``, an argument as the play wrote it, templated) with
    each text that is ``raw``'s own, untemplated, a :class:`TrustedText`: the
    values of set_fact, which ansible-core keeps as loaded (trusted)."""
    if value.__class__ is str:
        return TrustedText(value) if value is raw else value
    if isinstance(value, dict) and isinstance(raw, dict):
        return {k: written(raw.get(k), v) for k, v in value.items()}
    if isinstance(value, list) and isinstance(raw, list) and len(raw) == len(value):
        return [written(r, v) for r, v in zip(raw, value)]
    return value


def encode(value):
    """``value`` with each TrustedText as its tuple on the wire (copied only
    where one is inside)."""
    return _walk(value, _encode_one)


def decode(value):
    """``value`` as :func:`encode` had it (copied only where one is inside)."""
    return _walk(value, _decode_one)


#: The text kinds that travel as tuples: class -> (wire tag, the attributes
#: after the text that its constructor takes), and the converse by tag.
_KINDS = {TrustedText: (_WIRE, ()), UntrustedText: (_WIRE_UNTRUSTED, ("origin",)),
          VaultedText: (_WIRE_VAULTED, ("ciphertext", "origin")),
          WrittenTemplate: (_WIRE_WRITTEN, ("origin",))}
_BY_TAG = {tag: (cls, 1 + len(attrs)) for cls, (tag, attrs) in _KINDS.items()}


def _encode_one(value):
    kind = _KINDS.get(value.__class__)
    if kind is None:
        return value
    tag, attrs = kind
    return (tag, str.__str__(value)) + tuple(getattr(value, a) for a in attrs)


def _decode_one(value):
    if value.__class__ is tuple and value and value[0].__class__ is str:
        kind = _BY_TAG.get(value[0])
        if kind is not None and len(value) == 1 + kind[1]:
            return kind[0](*value[1:])
    return value


#: The types :func:`_walk` looks into or at; any other value stays as it is.
_WALKED = frozenset((dict, list, tuple, *_KINDS))


def _walk(value, one):
    """``value`` with ``one`` applied to each value in its dicts and lists,
    the same object where nothing changed (a container of none of
    :data:`_WALKED`, e.g. a command's output lines, is not walked item by item)."""
    if isinstance(value, dict):
        if _WALKED.isdisjoint(map(type, value.values())):
            return value
        changed = None
        for key, item in value.items():
            new = _walk(item, one)
            if new is not item:
                if changed is None:
                    changed = dict(value)
                changed[key] = new
        return value if changed is None else changed
    if isinstance(value, list):
        if _WALKED.isdisjoint(map(type, value)):
            return value
        changed = None
        for index, item in enumerate(value):
            new = _walk(item, one)
            if new is not item:
                if changed is None:
                    changed = list(value)
                changed[index] = new
        return value if changed is None else changed
    return one(value)


def find_class(module, name, fallback):
    """A mitogen unpickler's ``find_class`` on the controller: this module's
    TrustedText, UntrustedText and VaultedText, else ``fallback(module, name)``
    (mitogen's own)."""
    if module == __name__:
        found = next((cls for cls in _KINDS if cls.__name__ == name), None)
        if found is not None:
            return found
    return fallback(module, name)
