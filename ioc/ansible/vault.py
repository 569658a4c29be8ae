"""Ansible Vault for ``ioc-run``: ansible-core's own ``VaultLib`` and password options.

The secrets come from the options ``ansible-playbook`` has
(``--vault-id``, ``--vault-password-file``, ``--ask-vault-pass``) and the
settings behind them (``vault_identity_list``, ``vault_password_file``,
``ask_vault_pass``), gathered by ``CLI.setup_vault_secrets`` exactly as
``ansible-playbook`` gathers them. :class:`Vault` decrypts whole files and
``!vault`` values for the loader and the controller's file payloads; it
never logs what it decrypts, and its ``repr`` shows no secret.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence


class VaultFailure(ValueError):
    """Decryption failed; the message is Ansible's and holds no secret."""


class Vault:
    """Decrypts vault data with the run's secrets (none: every attempt fails as Ansible's)."""

    def __init__(self, secrets: Sequence[Any]) -> None:
        self._secrets = list(secrets)
        self._lib: Any = None
        self.has_secrets = bool(secrets)

    def __repr__(self) -> str:
        return "Vault(%d secret(s))" % len(self._secrets)

    def decrypt(self, data: bytes, source: str = "") -> bytes:
        """The plaintext of vault-encrypted ``data`` (a file's bytes or a ``!vault`` value)."""
        from ansible.errors import AnsibleError

        if not self.has_secrets:
            raise VaultFailure("Attempting to decrypt but no vault secrets found")
        if self._lib is None:
            from ansible.parsing.vault import VaultLib

            self._lib = VaultLib(self._secrets)
        try:
            return bytes(self._lib.decrypt(data))
        except AnsibleError as exc:
            raise VaultFailure(str(getattr(exc, "message", exc))) from None


def open_vault(vault_ids: Sequence[str] = (), password_files: Sequence[str] = (),
               ask: bool = False, identity_list: Sequence[str] = (),
               configured_files: Sequence[str] = ()) -> Vault:
    """The run's :class:`Vault` from the command line's vault options and the settings.

    ``identity_list`` is the ``vault_identity_list`` setting: those ids come
    first, before ``--vault-id``'s, as ``ansible-playbook`` puts them
    (``vault_password_file`` is read by ``setup_vault_secrets`` itself). A
    password file that cannot be read, or a failing password script, is an
    :class:`ioc.errors.IocError` with Ansible's message. ``configured_files``:
    the ``vault_password_file`` setting (which ``setup_vault_secrets`` reads
    itself); with none of these there is no secret, and Ansible's CLI code
    is not even imported.
    """
    if not (vault_ids or password_files or ask or identity_list or configured_files):
        return Vault([])
    from ansible.cli import CLI
    from ansible.errors import AnsibleError
    from ansible.parsing.dataloader import DataLoader

    from ioc.errors import IocError

    try:
        secrets: List[Any] = CLI.setup_vault_secrets(
            DataLoader(), list(identity_list) + list(vault_ids),
            vault_password_files=list(password_files),
            ask_vault_pass=ask, auto_prompt=False, initialize_context=False)
    except AnsibleError as exc:
        raise IocError(str(getattr(exc, "message", exc))) from None
    return Vault(secrets)


def decrypting(vault: Optional[Vault]) -> Any:
    """``vault.decrypt`` for the loader (None: no vault options, errors say so)."""
    return (vault or Vault([])).decrypt
