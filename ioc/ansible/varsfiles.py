"""A play's ``vars_files``, read as Ansible reads them.

Plain file names are read once, in order, with Ansible's own loader
(:func:`static_vars_files`): the IR's ``Play.vars_files``. A templated name
or a first-found list is resolved per host, exactly as
``VariableManager.get_vars`` resolves it (:func:`per_host_vars_files`): what
every host shares goes to the IR, what differs per host travels with the
request (``host_vars_files``) and is shipped to that host only. What ioc
cannot plan around (a name undefined for a host, a differing value that is
itself a template) raises :class:`~ioc.ansible.convert.Fallback`.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Tuple

from ioc.ansible.convert import Fallback
from ioc.ansible.values import plain, written_templates


def static_vars_files(play: Any, loader: Any) -> Dict[str, Any]:
    """The play's ``vars_files`` merged in order, read with Ansible's own loader.

    (A templated name or a first-found list: :func:`per_host_vars_files`.)
    ``vars_files: name`` is that one file, as ``Play.get_vars_files`` makes it
    for Ansible (the keyword's value is kept as written: a string is not yet
    a list).
    """
    merged: Dict[str, Any] = {}
    for entry in play.get_vars_files():
        data = loader.load_from_file(loader.path_dwim(entry), unsafe=True)
        if data is None:
            continue
        if not isinstance(data, dict):
            raise Fallback("vars_files %s is not a mapping" % entry)
        merged.update(written_templates(data))
    return merged


def templated_vars_file(entry: Any) -> bool:
    """A first-found list or a templated name: Ansible resolves it per host."""
    return not isinstance(entry, str) or "{{" in entry or "{%" in entry


def per_host_vars_files(iterator: Any, loader: Any) -> Tuple[Dict[str, Any],
                                                                Dict[str, Dict[str, Any]]]:
    """``vars_files`` with templated names or first-found lists, resolved per host.

    Exactly as Ansible's ``VariableManager.get_vars`` does it for a host: each
    entry (a list: the first file found) templated with the host's
    variables and the entries read before it, found with
    ``path_dwim_relative_stack`` over the play's search path (``vars/``
    included), read with Ansible's loader; a list where no file exists adds
    nothing. Returns the values every host shares (the IR's ``vars_files``)
    and, per host, those that differ. A name whose template is undefined for
    a host (Ansible skips it with a warning, and may read it once facts are
    gathered) or a differing value that is itself a template (the planner
    could not see what it reads) still needs the linear strategy.
    """
    from ansible.errors import AnsibleFileNotFound, AnsibleUndefinedVariable
    from ansible.vars.manager import preprocess_vars
    try:
        from ansible._internal._templating._engine import TemplateEngine as Templar
    except ImportError:  # pragma: no cover - 2.19 has it too
        from ansible.template import Templar  # type: ignore[no-redef]

    play = iterator._play
    vm = iterator._variable_manager
    per_host: Dict[str, Dict[str, Any]] = {}
    for name in iterator._host_states:
        host = vm._inventory.get_host(name)
        if host is None:
            continue
        variables = vm.get_vars(play=play, host=host, include_hostvars=False)
        merged: Dict[str, Any] = {}
        for entry in play.get_vars_files():
            templar = Templar(loader=loader, variables={**variables, **merged})
            for choice in entry if isinstance(entry, list) else [entry]:
                try:
                    file_name = templar.template(choice)
                except AnsibleUndefinedVariable:
                    raise Fallback("vars_files entry %r is undefined for %s: it runs through "
                                   "Ansible's linear strategy" % (plain(entry), name)) from None
                if not isinstance(file_name, str):
                    raise Fallback("vars_files entry %r is not a file name" % (plain(entry),))
                try:
                    found = loader.path_dwim_relative_stack(play.get_search_path(), "vars",
                                                            file_name)
                    data = preprocess_vars(loader.load_from_file(
                        found, unsafe=True, cache="vaulted", trusted_as_template=True))
                except AnsibleFileNotFound:
                    continue
                for item in data or ():
                    merged.update(written_templates(item))
                break
        per_host[plain(name)] = merged
    shared: Dict[str, Any] = {}
    if per_host:
        first, *others = per_host.values()
        shared = {k: v for k, v in first.items()
                  if all(k in o and o[k] == v for o in others)}
    differing = {host: {k: v for k, v in values.items() if k not in shared}
                 for host, values in per_host.items()}
    for values in differing.values():
        if any(_has_template(v) for v in values.values()):
            raise Fallback("a vars_files value that differs per host is a template: the play "
                           "runs through Ansible's linear strategy")
    return shared, {h: v for h, v in differing.items() if v}


def _has_template(value: Any) -> bool:
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, Mapping):
        return any(_has_template(k) or _has_template(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_template(v) for v in value)
    return False
