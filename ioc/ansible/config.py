"""``ansible.cfg`` and ``ANSIBLE_*`` for ``ioc-run``, read by Ansible's own code.

Ansible's configuration manager (``ansible.constants.config``) finds the
file exactly as ``ansible-playbook`` does (``ANSIBLE_CONFIG``,
``./ansible.cfg``, ``~/.ansible.cfg``, ``/etc/ansible/ansible.cfg``) and
knows every setting's environment variable and default. :func:`read_settings`
takes from it the settings ``ioc-run`` honours (:data:`HONOURED`, listed in
docs/ioc-run.md); :func:`unhonoured` names every setting the user set that
``ioc-run`` does not honour, so that the front end can say so once instead
of behaving differently in silence.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

#: Ansible's base settings ioc-run honours, and what it does with each.
HONOURED: Dict[str, str] = {
    "DEFAULT_HOST_LIST": "inventory: the inventory sources when no -i is given",
    "DEFAULT_ROLES_PATH": "roles_path: where roles are searched (after roles/ beside the playbook)",
    "COLLECTIONS_PATHS": "collections_path: collections (roles, modules, plugins)",
    "DEFAULT_FORKS": "forks: the default of -f",
    "DEFAULT_REMOTE_USER": "remote_user: the default of -u",
    "DEFAULT_PRIVATE_KEY_FILE": "private_key_file: the default of --private-key",
    "DEFAULT_TIMEOUT": "timeout: the default of -T (the SSH connect timeout)",
    "HOST_KEY_CHECKING": "host_key_checking: off accepts any host key",
    "DEFAULT_TRANSPORT": "transport: the default of -c (ssh, smart, paramiko or local)",
    "DEFAULT_BECOME": "become: the default of -b",
    "DEFAULT_BECOME_USER": "become_user: the default of --become-user",
    "DEFAULT_BECOME_METHOD": "become_method: the default of --become-method",
    "DEFAULT_BECOME_FLAGS": "become_flags: the default of the become_flags keyword",
    "DEFAULT_BECOME_EXE": "become_exe: the default of the become_exe keyword",
    "DEFAULT_BECOME_ASK_PASS": "become_ask_pass: as -K",
    "DEFAULT_ASK_PASS": "ask_pass: as -k (the SSH password)",
    "BECOME_ALLOW_SAME_USER": "become_allow_same_user: escalate even to the connection's own user",
    "DEFAULT_FORCE_HANDLERS": "force_handlers: the default of --force-handlers (and of the "
                              "play keyword)",
    "ERROR_ON_MISSING_HANDLER": "error_on_missing_handler: off warns of a notified name no "
                                "handler has instead of ending the run",
    "ALLOW_BROKEN_CONDITIONALS": "allow_broken_conditionals: a condition whose result is no "
                                 "boolean is its truth, with a deprecation warning",
    "DEFAULT_VAULT_PASSWORD_FILE": "vault_password_file: as --vault-password-file",
    "DEFAULT_VAULT_IDENTITY_LIST": "vault_identity_list: as --vault-id",
    "DEFAULT_VAULT_IDENTITY": "vault_identity: the label of a password given without one",
    "DEFAULT_VAULT_ID_MATCH": "vault_id_match: only the matching vault id decrypts",
    "DEFAULT_ASK_VAULT_PASS": "ask_vault_pass: as --ask-vault-pass",
    "DEFAULT_GATHERING": "gathering: implicit or explicit (smart: see docs/ioc-run.md)",
    "RETRY_FILES_ENABLED": "retry_files_enabled: ioc-run writes no retry file (off is the default)",
    "DEFAULT_STDOUT_CALLBACK": "stdout_callback: only the default (default) is available",
    "ANSIBLE_NOCOLOR": "nocolor: no colour on the console",
    "ANSIBLE_FORCE_COLOR": "force_color: colour even when the output is not a terminal",
    "ANSIBLE_HOME": "home: the base of the default roles and collections paths",
    "DEFAULT_MODULE_PATH": "library: module directories (Ansible's module loader reads it)",
    "DEFAULT_MODULE_UTILS_PATH": "module_utils: Ansible's module loader reads it",
    "DEFAULT_FILTER_PLUGIN_PATH": "filter_plugins: Ansible's plugin loader reads it",
    "DEFAULT_TEST_PLUGIN_PATH": "test_plugins: Ansible's plugin loader reads it",
    "DEFAULT_LOOKUP_PLUGIN_PATH": "lookup_plugins: Ansible's plugin loader reads it",
    "COLLECTIONS_SCAN_SYS_PATH": "collections_scan_sys_path: Ansible's collection finder reads it",
    "FACTS_MODULES": "facts_modules: only the default (smart, i.e. setup)",
    "INJECT_FACTS_AS_VARS": "inject_facts_as_vars: only on (set explicitly: no deprecation "
                            "warning for a top-level fact)",
    "DEPRECATION_WARNINGS": "deprecation_warnings: off prints no [DEPRECATION WARNING]",
    "DEFAULT_MANAGED_STR": "ansible_managed: a template's ansible_managed (Ansible's own code "
                           "makes it: ioc.ansible.template_vars)",
    "DEFAULT_HASH_BEHAVIOUR": "hash_behaviour: only replace (merge is refused before the run)",
    "DEFAULT_PRIVATE_ROLE_VARS": "private_role_vars: set, whether a role without public: keeps "
                                 "its vars and defaults to its own tasks (not set: imported "
                                 "roles are public, included ones private)",
}

#: Settings that change nothing ioc-run does: they steer a mechanism ioc has
#: no counterpart of (Ansible's SSH ControlPersist sockets, its remote
#: temporary files, its local temporary directory, cowsay).
NO_EFFECT = frozenset((
    "ANSIBLE_NOCOWS", "ANSIBLE_COW_SELECTION", "ANSIBLE_COW_ACCEPTLIST", "ANSIBLE_COW_PATH",
    "DEFAULT_LOCAL_TMP", "ANSIBLE_PIPELINING", "DEFAULT_KEEP_REMOTE_FILES",
    "DEFAULT_REMOTE_TMP", "CONFIG_FILE",
    "INTERPRETER_PYTHON",  # read per host as ansible_python_interpreter (see docs/ioc-run.md)
))

#: Options of Ansible's ``ssh`` connection plugin ioc-run honours.
SSH_HONOURED = frozenset(("ssh_args", "ssh_common_args", "ssh_extra_args", "host_key_checking",
                          "timeout", "remote_user", "private_key_file", "port",
                          "reconnection_retries"))
#: ... and those that steer what mitogen's connection does not have.
SSH_NO_EFFECT = frozenset(("control_path", "control_path_dir", "pipelining", "scp_extra_args",
                           "sftp_extra_args", "sftp_batch_mode", "ssh_transfer_method",
                           "scp_executable", "sftp_executable", "verbosity", "host"))

#: The default ``ssh_args`` of Ansible's ssh plugin: ControlPersist options
#: for its own multiplexing, which mitogen (one connection per host for the
#: whole run) has no use for; only ssh_args a user sets are passed to ssh.
_DEFAULT_SSH_ARGS = "-C -o ControlMaster=auto -o ControlPersist=60s"


@dataclass(frozen=True)
class Settings:
    """What ``ansible.cfg`` and ``ANSIBLE_*`` say, for the settings ioc-run honours."""

    inventory: Tuple[str, ...] = ()
    #: True when the inventory is Ansible's default (``/etc/ansible/hosts``).
    inventory_default: bool = True
    roles_path: Tuple[str, ...] = ()
    collections_paths: Tuple[str, ...] = ()
    forks: int = 5
    remote_user: Optional[str] = None
    private_key_file: Optional[str] = None
    timeout: Optional[int] = None
    #: ``[ssh_connection] retries`` / ``ANSIBLE_SSH_RETRIES`` (None: not set).
    retries: Optional[int] = None
    host_key_checking: bool = True
    #: Ansible's ``pipelining``: only how an unreachable host's message is worded.
    pipelining: bool = False
    connection: Optional[str] = None
    ssh_args: str = ""
    ssh_common_args: str = ""
    ssh_extra_args: str = ""
    become: bool = False
    become_user: Optional[str] = None
    become_method: Optional[str] = None
    become_flags: Optional[str] = None
    become_exe: Optional[str] = None
    become_ask_pass: bool = False
    ask_pass: bool = False
    become_allow_same_user: bool = False
    error_on_missing_handler: bool = True
    allow_broken_conditionals: bool = False
    force_handlers: bool = False
    vault_password_files: Tuple[str, ...] = ()
    vault_identity_list: Tuple[str, ...] = ()
    ask_vault_pass: bool = False
    gathering: str = "implicit"
    color: Optional[bool] = None
    #: The ``ansible.cfg`` read (None: none was found), as ``-v`` reports it.
    config_file: Optional[str] = None
    #: ``(setting, where it was set)`` for every set setting ioc-run ignores.
    unhonoured: Tuple[Tuple[str, str], ...] = field(default_factory=tuple)
    #: ``hash_behaviour``: ``merge`` is refused (:func:`refuse_unsupported`).
    hash_behaviour: str = "replace"
    #: Where ``hash_behaviour`` was set ("default": not set).
    hash_behaviour_origin: str = "default"
    #: ``private_role_vars`` when set (None: not set, see ``RoleSearch``).
    private_role_vars: Optional[bool] = None


def read_settings() -> Settings:
    """The honoured settings, and the set ones that are not (:attr:`Settings.unhonoured`).

    Kept between runs (:func:`_settings_key`): reading them is Ansible's
    configuration manager over every definition and its ``ssh`` plugin's
    documented options, a third of ``ioc-run``'s CPU before it connects.
    """
    from ioc.transport import cachefile

    key = _settings_key()
    path = cachefile.path_of("settings.json")
    entries = cachefile.load(path).get("entries") if key is not None else None
    entries = [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
    for entry in entries:
        if entry.get("key") == key and isinstance(entry.get("settings"), dict):
            try:
                return Settings(**{name: _tuples(value)
                                   for name, value in entry["settings"].items()})
            except TypeError:  # (kept by another version of this dataclass)
                break
    settings = _read_settings()
    if key is not None and not _config_warnings():
        # (the last few projects' settings: one kept entry made a run in
        # another directory, or with another environment, read them again)
        kept = [e for e in entries if e.get("key") != key][:_KEPT_SETTINGS - 1]
        cachefile.save(path, {"entries": [{"key": key,
                                           "settings": dataclasses.asdict(settings)}] + kept})
    return settings


#: How many settings :func:`read_settings` keeps (the most recently read).
_KEPT_SETTINGS = 16


def _tuples(value: Any) -> Any:
    """A JSON value with its lists as the tuples :class:`Settings` holds."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _settings_key() -> Optional[str]:
    """What :func:`_read_settings` depends on, as one digest; None when it
    cannot be told without reading the configuration.

    Ansible's configuration is a function of its definitions (the installed
    ansible-core's ``config/base.yml``, ``constants.py``, ``config/manager.py``
    and ``ssh`` plugin), of the ``ansible.cfg`` it finds (``ANSIBLE_CONFIG``,
    ``./ansible.cfg``, ``~/.ansible.cfg``, ``/etc/ansible/ansible.cfg``:
    each one's size and mtime, found or not), of the environment (every
    variable but a shell's bookkeeping, :data:`_SHELL_BOOKKEEPING`: a path
    setting may name any as ``$NAME``) and of the working
    directory (``{{CWD}}``, relative paths); and of this module. A working
    directory anyone may write to is not cached: Ansible then ignores its
    ``ansible.cfg`` with a warning.
    """
    import hashlib
    import importlib.util
    import json
    import os
    import stat as stat_

    spec = importlib.util.find_spec("ansible")
    if spec is None or not spec.submodule_search_locations:
        return None
    package = list(spec.submodule_search_locations)[0]
    try:
        cwd = os.getcwd()
        if os.stat(cwd).st_mode & stat_.S_IWOTH:
            return None
    except OSError:
        return None
    files = [os.path.join(package, name) for name in (
        "release.py", "constants.py", "config/base.yml", "config/manager.py",
        "plugins/connection/ssh.py")]
    files.append(__file__)
    files += [os.environ.get("ANSIBLE_CONFIG", ""), os.path.join(cwd, "ansible.cfg"),
              os.path.expanduser("~/.ansible.cfg"), "/etc/ansible/ansible.cfg"]
    stats = []
    for name in files:
        try:
            found = os.stat(name) if name else None
        except OSError:
            found = None
        stats.append([name, found.st_size, found.st_mtime_ns] if found else [name])
    environ = sorted((k, v) for k, v in os.environ.items() if k not in _SHELL_BOOKKEEPING)
    blob = json.dumps([stats, cwd, environ], sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8", "surrogateescape")).hexdigest()


#: What an interactive shell changes in the environment of every command it
#: starts, never a setting: the command's path (``_``), the previous working
#: directory (``OLDPWD``, after any ``cd``) and the nesting depth. In the key,
#: they made the kept settings miss on almost every run typed by hand.
_SHELL_BOOKKEEPING = frozenset(("_", "OLDPWD", "SHLVL"))


def _config_warnings() -> bool:
    """Whether reading the configuration warned (such a reading is not kept)."""
    from ansible import constants as C

    return bool(getattr(C.config, "WARNINGS", None))


def _read_settings() -> Settings:
    from ansible import constants as C

    def value(name: str) -> Any:
        return getattr(C, name, None)

    def origin(name: str) -> str:
        return C.config.get_config_value_and_origin(name)[1]

    ssh = _ssh_options()
    color: Optional[bool] = None
    if value("ANSIBLE_NOCOLOR"):
        color = False
    elif value("ANSIBLE_FORCE_COLOR"):
        color = True
    user = ssh.get("remote_user", (None,))[0] or value("DEFAULT_REMOTE_USER")
    key = ssh.get("private_key_file", (None,))[0] or value("DEFAULT_PRIVATE_KEY_FILE")
    ssh_args = str(ssh.get("ssh_args", ("",))[0] or "")
    if ssh.get("ssh_args", (None, "default"))[1] == "default" or ssh_args == _DEFAULT_SSH_ARGS:
        ssh_args = ""
    checking = ssh.get("host_key_checking", (value("HOST_KEY_CHECKING"),))[0]
    return Settings(
        config_file=value("CONFIG_FILE") or None,
        inventory=tuple(value("DEFAULT_HOST_LIST") or ()),
        inventory_default=origin("DEFAULT_HOST_LIST") == "default",
        roles_path=tuple(value("DEFAULT_ROLES_PATH") or ()),
        private_role_vars=None if origin("DEFAULT_PRIVATE_ROLE_VARS") == "default"
        else bool(value("DEFAULT_PRIVATE_ROLE_VARS")),
        collections_paths=tuple(value("COLLECTIONS_PATHS") or ()),
        forks=int(value("DEFAULT_FORKS") or 5),
        remote_user=str(user) if user else None,
        private_key_file=str(key) if key else None,
        timeout=int(ssh.get("timeout", (value("DEFAULT_TIMEOUT"),))[0] or 10),
        retries=None if ssh.get("reconnection_retries", (None, "default"))[1] == "default"
        else int(ssh["reconnection_retries"][0] or 0),
        host_key_checking=bool(checking),
        pipelining=bool(ssh.get("pipelining", (value("ANSIBLE_PIPELINING"),))[0]),
        connection=None if origin("DEFAULT_TRANSPORT") == "default" else value("DEFAULT_TRANSPORT"),
        ssh_args=ssh_args,
        ssh_common_args=str(ssh.get("ssh_common_args", ("",))[0] or ""),
        ssh_extra_args=str(ssh.get("ssh_extra_args", ("",))[0] or ""),
        become=bool(value("DEFAULT_BECOME")),
        become_user=None if origin("DEFAULT_BECOME_USER") == "default"
        else value("DEFAULT_BECOME_USER"),
        become_method=None if origin("DEFAULT_BECOME_METHOD") == "default"
        else value("DEFAULT_BECOME_METHOD"),
        become_flags=None if origin("DEFAULT_BECOME_FLAGS") == "default"
        else value("DEFAULT_BECOME_FLAGS"),
        become_exe=None if origin("DEFAULT_BECOME_EXE") == "default"
        else value("DEFAULT_BECOME_EXE"),
        become_ask_pass=bool(value("DEFAULT_BECOME_ASK_PASS")),
        ask_pass=bool(value("DEFAULT_ASK_PASS")),
        become_allow_same_user=bool(value("BECOME_ALLOW_SAME_USER")),
        error_on_missing_handler=bool(value("ERROR_ON_MISSING_HANDLER")),
        allow_broken_conditionals=bool(value("ALLOW_BROKEN_CONDITIONALS")),
        force_handlers=bool(value("DEFAULT_FORCE_HANDLERS")),
        vault_password_files=tuple(_as_list(value("DEFAULT_VAULT_PASSWORD_FILE"))),
        vault_identity_list=tuple(value("DEFAULT_VAULT_IDENTITY_LIST") or ()),
        ask_vault_pass=bool(value("DEFAULT_ASK_VAULT_PASS")),
        gathering=str(value("DEFAULT_GATHERING") or "implicit"),
        color=color,
        unhonoured=tuple(unhonoured(ssh)),
        hash_behaviour=str(value("DEFAULT_HASH_BEHAVIOUR") or "replace"),
        hash_behaviour_origin=origin("DEFAULT_HASH_BEHAVIOUR"),
    )


def refuse_unsupported(settings: Settings) -> None:
    """Raise before anything runs for a setting that would change results ioc
    cannot give: ``hash_behaviour = merge`` (dict variables of different
    precedence layers merge recursively in Ansible; ioc's layers replace)."""
    from ioc.errors import IocError

    if settings.hash_behaviour != "replace":
        raise IocError("hash_behaviour = %s (from %s) is not supported: ioc-run replaces a "
                       "dict variable of a lower precedence layer with the higher one's, as "
                       "Ansible's default (replace) does; run this playbook with "
                       "ansible-playbook or leave hash_behaviour at replace"
                       % (settings.hash_behaviour, settings.hash_behaviour_origin))


def deprecated_reads(as_installed: bool = False) -> Tuple[str, ...]:
    """Which deprecated values a template's read of makes ansible-core 2.21
    warn: "facts" (the top-level fact names, while INJECT_FACTS_AS_VARS is left
    at its default), "play_hosts", "skipped_reason" (of a registered empty
    loop), "vars" (the internal dictionary of every variable). With deprecation
    warnings off too: a task's registered result records them all the same
    (:func:`deprecation_warnings` says whether they are shown). ``as_installed``: those the
    installed ansible-core deprecates (mitogen_batch, whose warnings Ansible
    words itself; 2.19 has only "play_hosts")."""
    from ansible import constants as C

    facts, play_hosts, skipped_reason, vars_ = True, True, True, True
    if as_installed:
        import inspect

        from ansible._internal import _task
        from ansible.vars import manager

        facts = getattr(manager, "_DEPRECATE_TOP_LEVEL_FACT_TAG", None) is not None
        play_hosts = hasattr(manager.VariableManager, "_PLAY_HOSTS_DEPRECATED_TAG")
        vars_ = getattr(manager, "_DEPRECATE_VARS", None) is not None
        set_skipped = getattr(getattr(_task, "UnifiedTaskResult", None), "set_skipped", None)
        skipped_reason = set_skipped is not None and \
            "include_skipped_reason" in inspect.signature(set_skipped).parameters
    kinds = []
    if facts and C.config.get_config_value_and_origin("INJECT_FACTS_AS_VARS")[1] == "default":
        kinds.append("facts")
    if play_hosts:
        kinds.append("play_hosts")
    if skipped_reason:
        kinds.append("skipped_reason")
    if vars_:
        kinds.append("vars")
    return tuple(kinds)


def ansible_version() -> Optional[Dict[str, Any]]:
    """``ansible_version`` of the installed ansible-core (None: none is), as
    its ``CLI.version_info`` makes it."""
    try:
        from ansible.release import __version__
    except ImportError:
        return None
    return version_info(__version__)


def version_info(version: str) -> Dict[str, Any]:
    """``CLI.version_info`` of ``version`` (importing ``ansible.cli`` for it
    costs a tenth of a second; tests/unit compares the two)."""
    full = version.split()[0]
    parts: List[Any] = full.split(".")
    for number, part in enumerate(parts):
        try:
            parts[number] = int(part) if part != "" else 0
        except ValueError:
            pass
    parts += [0] * (3 - len(parts))
    return {"string": version.strip(), "full": full, "major": parts[0], "minor": parts[1],
            "revision": parts[2]}


def deprecation_warnings() -> bool:
    """Ansible's ``deprecation_warnings``: whether deprecations are shown."""
    from ansible import constants as C

    return bool(C.config.get_config_value("DEPRECATION_WARNINGS"))


def unhonoured(ssh: Optional[Dict[str, Tuple[Any, str]]] = None) -> List[Tuple[str, str]]:
    """``(setting, origin)`` of every setting set (not at its default) that ioc-run ignores.

    ``gathering = smart`` and a stdout callback other than ``default`` are
    values ioc-run does not honour, so they count too.
    """
    from ansible import constants as C

    out: List[Tuple[str, str]] = []
    for name in sorted(C.config.get_configuration_definitions()):
        if name in NO_EFFECT:
            continue
        value, where = C.config.get_config_value_and_origin(name)
        if where == "default":
            continue
        if name not in HONOURED or _unhonoured_value(name, value):
            out.append((_label(name), where))
    for option, (value, where) in sorted((ssh if ssh is not None else _ssh_options()).items()):
        if where != "default" and option not in SSH_HONOURED | SSH_NO_EFFECT:
            out.append(("ssh_connection %s" % option, where))
    return out


def _unhonoured_value(name: str, value: Any) -> bool:
    if name == "DEFAULT_GATHERING":
        return value not in ("implicit", "explicit")
    if name == "DEFAULT_STDOUT_CALLBACK":
        return value not in ("default", "ansible.builtin.default")
    if name == "RETRY_FILES_ENABLED":
        return bool(value)
    if name == "FACTS_MODULES":
        return list(value or []) != ["smart"]
    if name == "INJECT_FACTS_AS_VARS":
        return not value
    return False


def _label(name: str) -> str:
    """A setting as the user wrote it: its ini key (``[defaults] forks``) or its variable."""
    from ansible import constants as C

    definition = C.config.get_configuration_definitions().get(name, {})
    ini = definition.get("ini") or []
    if ini:
        return "%s (%s)" % (ini[0].get("key", name), name)
    env = definition.get("env") or []
    return env[0]["name"] if env else name


def _ssh_options() -> Dict[str, Tuple[Any, str]]:
    """Every option of Ansible's ``ssh`` connection plugin: ``(value, origin)``."""
    from ansible import constants as C
    from ansible.plugins.loader import connection_loader

    connection_loader.get("ssh", class_only=True)  # registers the plugin's option definitions
    out: Dict[str, Tuple[Any, str]] = {}
    for option in C.config.get_configuration_definitions("connection", "ssh"):
        try:
            out[option] = C.config.get_config_value_and_origin(
                option, plugin_type="connection", plugin_name="ssh")
        except Exception:  # an option that needs a host's variables to resolve
            continue
    return out


def _as_list(value: Any) -> List[str]:
    if not value:
        return []
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


def role_search(settings: Settings, playbook_paths: List[str]) -> Any:
    """The loader's :class:`~ioc.loader.roles.RoleSearch`: ``roles_path`` and
    Ansible's collection finder, with the collections beside each playbook
    (``<playbook dir>/collections``) found as ``ansible-playbook`` finds them."""
    import os

    from ansible.utils.collection_loader import AnsibleCollectionRef
    from ansible.utils.collection_loader._collection_finder import _get_collection_role_path
    from ioc.ansible.modules import init_loader, playbook_dirs
    from ioc.loader.roles import RoleSearch

    playbook_dirs([os.path.dirname(os.path.abspath(p)) for p in playbook_paths])

    def in_collections(name: str, collections: Tuple[str, ...]) -> Optional[Tuple[str, str, str]]:
        if not collections and not AnsibleCollectionRef.is_valid_fqcr(name):
            return None
        # (Ansible's plugin loader is imported only when a role may be a
        # collection's: 0.3 s that a cold ioc-run spends connecting its hosts instead)
        init_loader()  # Ansible's collection finder, with collections_path
        found = _get_collection_role_path(name, list(collections))
        return None if found is None else (str(found[0]), str(found[1]), str(found[2]))

    return RoleSearch(roles_path=settings.roles_path, in_collections=in_collections,
                      private_role_vars=settings.private_role_vars)
