"""The loader: playbooks, roles, inventories and extra vars → IR (``ioc.model``).

Every error is a :class:`ioc.errors.LoadError` (``InventoryError`` for
inventories) whose ``str()`` starts with the ``file:line`` it comes from.
"""
from ioc.loader.extravars import parse_extra_vars
from ioc.loader.inventory import (
    add_vars_dirs,
    ensure_localhost,
    group_names,
    groups_dict,
    host_vars,
    implicit_localhost_inventory,
    load_inventory,
    match_hosts,
    vars_dirs,
)
from ioc.loader.playbook import load_playbook, load_playbook_data
from ioc.loader.tasks import Included, load_include
from ioc.loader.roles import RoleSearch
from ioc.loader.yamlsrc import (LocatedDict, LocatedLoader, load_yaml_file, location_of,
                                set_text_kinds, set_vault)

__all__ = [
    "Included",
    "LocatedDict",
    "LocatedLoader",
    "RoleSearch",
    "add_vars_dirs",
    "vars_dirs",
    "ensure_localhost",
    "group_names",
    "groups_dict",
    "host_vars",
    "implicit_localhost_inventory",
    "load_include",
    "load_inventory",
    "load_playbook",
    "load_playbook_data",
    "load_yaml_file",
    "location_of",
    "match_hosts",
    "parse_extra_vars",
    "set_text_kinds",
    "set_vault",
]
