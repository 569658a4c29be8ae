"""``module_defaults`` as ansible-core 2.21 applies them, with Ansible's own code.

Ansible resolves a ``module_defaults`` mapping when it loads the play
(``Base._load_module_defaults``: short names become ``ansible.legacy.*`` and
their ``ansible.builtin.*`` twin, ``group/<name>`` becomes the fully
qualified group, whose actions come from the collections' ``meta/runtime.yml``
``action_groups``), extends the list from the play down to the task, and
when the task's arguments are finalised puts the defaults of the groups
holding the task's resolved action, then those of the action itself, under
the task's own arguments (``_get_action_arg_defaults`` and
``TaskArgsFinalizer``: later layers win, values templated like any argument).

ioc does the same merge before the task is shipped: the runner then sees the
arguments Ansible's module would have received, for ioc's own modules
(``file: {mode: '0600'}``) as for Ansible's. Both front ends use this module:
``ioc-run`` (:class:`ioc.ansible.modules.Attacher`, from the loader's layers)
and ``mitogen_batch`` (:class:`ioc.ansible.convert.Converter`, from Ansible's
own ``Task``).
"""
from __future__ import annotations

import types
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

__all__ = ["TemplatedDefaults", "apply_defaults", "action_fqcn", "PlayDefaults",
           "picked_with_defaults", "SUBMODULE_ACTIONS"]

#: Actions whose plugin picks another module on the target and applies that
#: module's defaults too (``_apply_action_arg_defaults``), with its candidates.
SUBMODULE_ACTIONS = ("service", "package", "dnf", "yum")


class TemplatedDefaults(Exception):
    """A defaults entry is a template as a whole (``file: "{{ defaults }}"``):
    which options it sets is known only per host, when the task runs."""


class _Verbatim:
    """A templar that leaves values as written: the runner templates them with
    the task's other arguments (Ansible templates them at the same point)."""

    def resolve_to_container(self, value: Any, *args: Any, **kwargs: Any) -> Dict[str, Any]:
        if isinstance(value, Mapping):
            return dict(value)
        raise TemplatedDefaults(value)

    def template(self, value: Any, *args: Any, **kwargs: Any) -> Any:
        return value


def apply_defaults(resolved: str, task: Any, args: Mapping[str, Any],
                   fact_module: Optional[str] = None) -> Dict[str, Any]:
    """``args`` with the ``module_defaults`` of ``task`` for action ``resolved`` under them.

    ``task`` is Ansible's ``Task`` (or anything with ``module_defaults`` and
    ``_parent._play._action_groups``). ``fact_module``: the task is
    ``gather_facts``, whose plugin then puts the defaults of that module
    (``ansible.builtin.setup``) under the options it has not got.
    Raises :class:`TemplatedDefaults`.
    """
    from ansible.executor.module_common import _get_action_arg_defaults

    merged = {**_get_action_arg_defaults(resolved, task, _Verbatim()), **args}
    if fact_module is not None:
        given = {k: v for k, v in merged.items() if v is not None}
        merged = {**_get_action_arg_defaults(fact_module, task, _Verbatim()), **given}
    return merged


def picked_with_defaults(short: str, resolved: str, task: Any,
                         candidates_of: Callable[[str], Tuple[List[str], Any]]) -> Optional[str]:
    """The module ansible.builtin's ``service``/``package``/``dnf``/``yum`` would pick on
    the target (``candidates_of(short)``: ``ioc.ansible.modules.dispatch_candidates``)
    that has ``module_defaults`` of its own for ``task`` (None: none has).
    Its plugin applies them to the module it picks; ioc picks on the target without
    them, so such a task is refused (ioc-run) or runs through Ansible (mitogen_batch)."""
    if short not in SUBMODULE_ACTIONS or not resolved.startswith("ansible.builtin."):
        return None
    for candidate in candidates_of(short)[0]:
        picked = action_fqcn("ansible.legacy." + candidate, None)
        if candidate != "setup" and picked and apply_defaults(picked, task, {}):
            return picked
    return None


def action_fqcn(action: str, collections: Optional[Sequence[str]]) -> Optional[str]:
    """The resolved name Ansible gives ``action`` (``Task._post_validate_args``)."""
    from ansible.plugins.loader import action_loader, module_loader

    context = action_loader.get_with_context(action, collection_list=collections, class_only=True)
    if context.plugin_load_context.resolved:
        return context.plugin_load_context.resolved_fqcn
    found = module_loader.find_plugin_with_context(action, collection_list=collections)
    return found.resolved_fqcn if found.resolved else None


class PlayDefaults:
    """For ``ioc-run``: the loader's ``module_defaults`` layers resolved as Ansible's
    ``Play`` resolves them (one per playbook run: groups are cached on it)."""

    def __init__(self) -> None:
        from ansible.playbook.play import Play

        self.play = Play()
        self._validated: Dict[int, Tuple[Any, Any]] = {}

    def task_view(self, layers: Sequence[Mapping[str, Any]]) -> Any:
        """What ``apply_defaults`` reads from a task whose defaults are ``layers``.

        Raises Ansible's ``AnsibleParserError`` for an action or group that
        does not resolve, as loading the play does in Ansible.
        """
        validated = []
        for layer in layers:
            key = id(layer)
            cached = self._validated.get(key)
            if cached is None or cached[0] is not layer:
                cached = (layer, self.play._load_module_defaults("module_defaults", [dict(layer)])[0])
                self._validated[key] = cached
            validated.append(cached[1])
        deduplicated = [v for i, v in enumerate(validated) if v not in validated[:i]]
        return types.SimpleNamespace(module_defaults=deduplicated,
                                     _parent=types.SimpleNamespace(_play=self.play))
