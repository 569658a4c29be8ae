"""Ansible's inventory and host variables, exported for the dispatcher.

The dispatcher has no Ansible: it gets a copy of the inventory as ioc's IR
(:meth:`HostVarsExport.inventory`) — every host and group in Ansible's
order, with the *inventory layer* of the variables of the play's hosts and
their ``mitogen_via`` hosts (group/host vars and vars plugins, without
extra vars, facts, ``set_fact``/``include_vars`` values and magic
variables, which travel as layers of their own) plus what the CLI and
``ansible.cfg`` decide about connections (``-u``, ``--private-key``, host
key checking, the ssh plugin's arguments, the interpreter of an implicit
localhost). Other hosts' variables cost a ``get_vars`` each: the dispatcher
asks for them when a step reads their ``hostvars`` or connects to one
(:meth:`HostVarsExport.outside_hosts`).

:meth:`HostVarsExport.layers` are a host's runtime layers as Ansible's
variable manager keeps them (facts, ``set_fact``/register values,
``include_vars`` values): they go with each request (``memory``) and come
back, as a :func:`delta`, from every task Ansible runs.
"""
from __future__ import annotations

import logging
import sys
from typing import Any, Dict, Mapping, Optional, Sequence

from ioc.ansible.state import PlayState
from ioc.ansible.values import plain, trusted_text, written_templates
from ioc.model import Group, Host, Inventory

LOG = logging.getLogger(__name__)

#: The ssh connection plugin's options ioc's connections take, as variables.
_SSH_OPTIONS = (("ssh_args", "ansible_ssh_args"), ("ssh_common_args", "ansible_ssh_common_args"),
                ("ssh_extra_args", "ansible_ssh_extra_args"), ("timeout", "ansible_timeout"),
                ("reconnection_retries", "ansible_ssh_retries"))


#: Not looked up yet.
_UNREAD = object()


class HostVarsExport:
    """Ansible's inventory and variable layers of one play, as the dispatcher takes them."""

    def __init__(self, state: PlayState) -> None:
        self.state = state
        self.vm = state.vm
        #: The ssh connection's configured ``port`` (the same for every host).
        self._config_port: Any = _UNREAD

    def memory(self, names: Sequence[str]) -> Dict[str, Dict[str, Dict[str, Any]]]:
        """The runtime layers of the play's hosts, as plain values (the request's
        ``memory``), but the text Ansible trusts in registered and set_fact values
        marked (``trusted_text``)."""
        memory = {}
        for name in names:
            layers = self.layers(name)
            memory[name] = dict(plain(layers), runtime=trusted_text(layers["runtime"]))
        return memory

    def layers(self, name: str) -> Dict[str, Dict[str, Any]]:
        """A host's variable layers the dispatcher keeps, as Ansible's variable manager has them."""
        return {"facts": facts_of(self.vm, name),
                "runtime": dict(self.vm._nonpersistent_fact_cache.get(name, {})),
                "include_vars": dict(self.vm._vars_cache.get(name, {}))}

    def inventory(self) -> Inventory:
        """ioc's copy of Ansible's inventory: every host (``groups`` and
        ``hostvars`` span the whole inventory), in Ansible's order, with the
        variables of the play's pattern, its hosts and their ``mitogen_via``
        hosts. The others' (``get_vars`` per host costs) the dispatcher asks
        for, with their facts, once a step reads their hostvars or connects to
        one (``outside_hosts``)."""
        from ansible import constants as C

        inventory = self.state.strategy._inventory
        play_hosts = inventory.get_hosts(self.state.play.hosts, ignore_restrictions=True) + \
            list(self.state.hosts.values())
        known = {h.name: h for h in inventory.get_hosts("all", ignore_limits=True,
                                                        ignore_restrictions=True)}
        for host in play_hosts:  # the implicit localhost is in no group
            known.setdefault(host.name, host)
        variables: Dict[str, Dict[str, Any]] = {}
        wanted = list(play_hosts)
        while wanted:
            host = wanted.pop(0)
            if host.name in variables:
                continue
            variables[host.name] = self.host_vars(host, C)
            # mitogen_via hosts (and theirs) need their connection settings too.
            via = variables[host.name].get("mitogen_via")
            if via and inventory.get_host(str(via)) is not None:
                via_host = inventory.get_host(str(via))
                known.setdefault(via_host.name, via_host)
                wanted.append(via_host)
        hosts = {plain(name): Host(plain(name), variables.get(name, {})) for name in known}
        groups = {}
        for name, group in inventory.groups.items():
            groups[plain(name)] = Group(plain(name), hosts=tuple(
                plain(h.name) for h in group.hosts if h.name in hosts),
                children=tuple(plain(c.name) for c in group.child_groups))
        return Inventory(hosts=hosts, groups=groups)

    def host_vars(self, host: Any, C: Any) -> Dict[str, Any]:
        """The inventory layer of ``host``'s variables (group/host vars, vars plugins)."""
        vm = self.vm
        full = vm.get_vars(host=host, include_hostvars=False)
        drop = set(vm.extra_vars) | set(vm._nonpersistent_fact_cache.get(host.name, {})) \
            | set(vm._vars_cache.get(host.name, {}))
        facts = facts_of(vm, host.name)
        drop |= set(facts) | {"ansible_facts"}
        drop |= {k for k in facts if not k.startswith("ansible_")}
        drop |= {"ansible_" + k for k in facts if not k.startswith("ansible_")}
        drop |= set(vm._get_magic_variables(play=None, host=host, task=None,
                                            include_hostvars=False, _hosts=None,
                                            _hosts_all=None))
        # (a template keeps where it was written: a group_vars file, an INI line)
        out = written_templates({k: v for k, v in full.items() if k not in drop})
        connection = getattr(self.state.play, "connection", None)
        if connection and "ansible_connection" not in full:
            # the play's connection keyword (else -c, else ansible.cfg's transport),
            # templated below like the variable when written as a template
            full = {**full, "ansible_connection": connection}
            out["ansible_connection"] = plain(connection)
        out.update(_templated_connection_vars(full, self.state.strategy._loader))
        python = out.get("ansible_python_interpreter")
        if python is None or str(python).startswith("auto"):
            out.pop("ansible_python_interpreter", None)
            if host.name in ("localhost", "127.0.0.1") and \
                    out.get("ansible_connection") == "local":
                out["ansible_python_interpreter"] = sys.executable
        pc = self.state.play_context
        if "ansible_user" not in out and "ansible_ssh_user" not in out and pc.remote_user:
            out["ansible_user"] = pc.remote_user
        if "ansible_ssh_private_key_file" not in out and pc.private_key_file:
            out["ansible_ssh_private_key_file"] = pc.private_key_file
        if "ansible_host_key_checking" not in out and not C.HOST_KEY_CHECKING:
            out["ansible_host_key_checking"] = False
        if "ansible_pipelining" not in out and "ansible_ssh_pipelining" not in out \
                and C.ANSIBLE_PIPELINING:
            out["ansible_pipelining"] = True
        out.update(ssh_settings(full, out))
        if "ansible_port" not in out and "ansible_ssh_port" not in out:
            port = self._default_port(full)
            if port is not None:
                out["ansible_port"] = port
        return out

    def _default_port(self, variables: Mapping[str, Any]) -> Optional[int]:
        """The port of a host without ``ansible_port``, as Ansible's ssh connection
        resolves its ``port`` option: the play's ``port`` keyword, then
        ``ANSIBLE_REMOTE_PORT``/``remote_port``."""
        from ansible import constants as C
        from ansible.plugins.loader import connection_loader

        port = plain(self.state.play.port)
        if isinstance(port, str):
            from ansible.template import Templar
            port = Templar(loader=self.state.strategy._loader, variables=variables).template(port)
        if port in (None, ""):
            if self._config_port is _UNREAD:
                connection_loader.get("ssh", class_only=True)  # registers its options
                self._config_port = C.config.get_config_value(
                    "port", plugin_type="connection", plugin_name="ssh", variables={})
            port = self._config_port
        return None if port in (None, "") else int(port)

    def outside_hosts(self, names: Sequence[str]) -> Dict[str, Dict[str, Any]]:
        """Variable layers of inventory hosts outside the play, as Ansible has them now."""
        from ansible import constants as C

        out: Dict[str, Dict[str, Any]] = {}
        for name in names:
            host = self.state.strategy._inventory.get_host(name)
            if host is None:
                continue
            inventory_vars = self.host_vars(host, C)
            inventory_vars["group_names"] = sorted(
                plain(g.name) for g in host.get_groups() if g.name != "all")
            out[name] = {"inventory": inventory_vars, **self.layers(name)}
        return plain(out)


#: Variables that say how to reach a host; Ansible templates them when it connects.
_CONNECTION_VARS = ("ansible_connection", "ansible_host", "ansible_port", "ansible_user",
                    "ansible_ssh_user", "ansible_ssh_private_key_file",
                    "ansible_python_interpreter", "ansible_password", "ansible_ssh_pass",
                    "ansible_ssh_password")


def _templated_connection_vars(variables: Mapping[str, Any], loader: Any) -> Dict[str, Any]:
    """The connection variables written as templates (``ansible_python_interpreter:
    "{{ ansible_playbook_python }}"``), templated with the host's variables as
    Ansible's task executor templates them; the others are not returned."""
    from ansible._internal._templating._jinja_bits import is_possibly_template
    from ansible.template import Templar

    out: Dict[str, Any] = {}
    templar = None
    for name in _CONNECTION_VARS:
        value = variables.get(name)
        if not isinstance(value, str) or not is_possibly_template(value):
            continue
        if templar is None:
            templar = Templar(loader=loader, variables=variables)
        try:
            out[name] = plain(templar.template(value))
        except Exception:  # the connection fails on it as it would under linear
            LOG.debug("templating %s failed", name, exc_info=True)
    return out


def delta(before: Dict[str, Dict[str, Any]], after: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """What changed in each layer (added or replaced names), as plain values
    (but registered and set_fact values' trusted text marked, as :meth:`HostVarsExport.memory`)."""
    out = {}
    for layer, values in after.items():
        old = before.get(layer, {})
        value_of = trusted_text if layer == "runtime" else plain
        changed = {plain(k): value_of(v) for k, v in values.items()
                   if k not in old or (old[k] is not v and old[k] != v)}
        if changed:
            out[layer] = changed
    return out


def ssh_settings(variables: Mapping[str, Any], have: Mapping[str, Any]) -> Dict[str, Any]:
    """ssh_args, ssh_common_args, ssh_extra_args, timeout and retries as Ansible's ssh
    connection resolves them (variables, CLI, environment, ansible.cfg, default)."""
    from ansible import constants as C
    from ansible.plugins.loader import connection_loader

    connection_loader.get("ssh", class_only=True)  # registers its options
    out: Dict[str, Any] = {}
    for option, variable in _SSH_OPTIONS:
        if variable in have or (option == "timeout" and "ansible_ssh_timeout" in have):
            continue
        try:
            value = C.config.get_config_value(option, plugin_type="connection",
                                              plugin_name="ssh", variables=variables)
        except Exception:  # an option this ansible-core does not have
            LOG.debug("ssh option %s unavailable", option, exc_info=True)
            continue
        if value not in (None, ""):
            out[variable] = plain(value)
    return out


def facts_of(vm: Any, host: str) -> Dict[str, Any]:
    try:
        return dict(vm._fact_cache.get(host) or {})
    except KeyError:
        return {}
