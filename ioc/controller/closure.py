"""Shipping a host only the variables a step can read.

The planner gives the names a step reads (``Plan.reads``). A value may be a
template reading other names (``url: "https://{{ host }}:{{ port }}"``), so
the set is closed over the host's own raw values before filtering. Values
that came out of modules and templating (facts, registered results) are
never templates and need no closing.
"""
from __future__ import annotations

import os
from functools import lru_cache
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Mapping, Optional, Set

from ioc.errors import PlanError
from ioc.planner.effects import is_template, value_refs


def close_over(names: FrozenSet[str], layers: Iterable[Mapping[str, Any]]) -> Set[str]:
    """``names`` plus every name their (templated) values read, transitively."""
    layers = list(layers)
    needed = set(names)
    queue: List[str] = list(names)
    while queue:
        name = queue.pop()
        for layer in layers:
            if name in layer:
                for ref in _refs(layer[name]):
                    if ref not in needed:
                        needed.add(ref)
                        queue.append(ref)
    return needed


def _refs(value: Any) -> FrozenSet[str]:
    if isinstance(value, str):
        return _string_refs(value) if is_template(value) else frozenset()
    if isinstance(value, dict):
        return frozenset().union(*(_refs(k) | _refs(v) for k, v in value.items())) \
            if value else frozenset()
    if isinstance(value, (list, tuple)):
        return frozenset().union(*(_refs(v) for v in value)) if value else frozenset()
    return frozenset()


@lru_cache(maxsize=4096)
def _string_refs(text: str) -> FrozenSet[str]:
    try:
        return frozenset(value_refs(text).names)
    except PlanError:
        return frozenset()  # the runner reports the broken template when it is read


def tree_layers(nodes: Iterable[Mapping[str, Any]]) -> List[Mapping[str, Any]]:
    """The variables a runner tree carries itself: block ``vars``/``params``/
    ``defaults`` (role parameters, include ``vars``) and task ``vars``.

    They travel whole with the tree, but their values are templates too
    (``roles: [{role: x, who: "{{ target }}"}]``): the names they read must
    be shipped, so :func:`close_over` closes over them as well.
    """
    layers: List[Mapping[str, Any]] = []
    for node in nodes:
        task = node.get("t")
        if task is not None:
            if task.get("vars"):
                layers.append(task["vars"])
            continue
        layers.extend(node[k] for k in ("vars", "params", "defaults") if node.get(k))
        for part in ("block", "rescue", "always"):
            layers.extend(tree_layers(node.get(part) or ()))
    return layers


def restrict(layer: Mapping[str, Any], names: Optional[Set[str]]) -> Dict[str, Any]:
    """``layer`` without the names nobody reads (all of it when ``names`` is None)."""
    if names is None:
        return dict(layer)
    return {k: v for k, v in layer.items() if k in names}


def restrict_facts(facts: Mapping[str, Any], names: Optional[Set[str]]) -> Dict[str, Any]:
    """Facts a step reads: all of them when it reads ``ansible_facts``."""
    if names is None or "ansible_facts" in names:
        return dict(facts)
    return {k: v for k, v in facts.items() if k in names or "ansible_" + k in names}


def template_hostvars(tasks: Iterable[Any],
                      others: Optional[FrozenSet[str]]) -> Optional[FrozenSet[str]]:
    """``others`` (the attributes a step reads on other hosts' ``hostvars``,
    None: whole hosts), or None when a ``template`` task of the step names
    its file with a template: the planner reads a file a constant ``src``
    names (:func:`template_files`; what it reads is in ``others``), one known
    only on the target may read any host's."""
    if others is None:
        return None
    for task in tasks:
        if task.action == "template":
            src = task.args.get("src", task.args.get("_raw_params"))
            if not isinstance(src, str) or is_template(src):
                return None
    return others


def template_files(basedir: str) -> Callable[[Any, str], Optional[List[str]]]:
    """The planner's reader of the template files a task renders
    (``ioc.planner.effects.TemplateFiles``) for a play whose directory is
    ``basedir``: file ``name`` where Ansible looks for it for the task (its
    ``templates`` directories first), then every template it includes,
    imports or extends by a constant name, found as Jinja's loader finds it."""
    from ioc.agentless_runner import templating
    from ioc.controller.payloads import candidates, template_searchpath

    def read(task: Any, name: str) -> Optional[List[str]]:
        path = next((p for p in candidates(task, name, "templates", basedir)
                     if os.path.isfile(p)), None)
        if path is None:
            return []  # (the task fails: nothing is read)
        searchpath = template_searchpath(task, path, basedir)
        texts: List[str] = []
        seen: Set[str] = set()
        todo = [path]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            try:
                text = _text_of(current, os.stat(current).st_mtime_ns)
            except OSError:
                return None
            if text is None:
                return None
            texts.append(text)
            for included in templating.referenced_templates(text):
                found = templating.find_template([os.path.dirname(current)] + searchpath,
                                                 included)
                if found is not None:
                    todo.append(found)
        return texts
    return read


@lru_cache(maxsize=256)
def _text_of(path: str, mtime_ns: int) -> Optional[str]:
    """A template file's text (None: not text), read once per version of the file."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeError):
        return None
