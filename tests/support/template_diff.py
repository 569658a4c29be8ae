"""Render the same templates with ioc's Templar and with Ansible's, side by side.

Run with an interpreter that has ansible-core (the reference) and this
checkout on ``PYTHONPATH``; reads a JSON list of cases on stdin and writes a
JSON list of outcomes on stdout, one ``{"ioc": ..., "ansible": ...}`` per
case. A case::

    {"template": "{{ x | comment('c') }}", "vars": {"x": "a\\nb"}}

(``"condition": "x is version('2', '>=')"`` instead of ``template``
evaluates a ``when:``-style condition.) The variables are plain data, as a
module's result or a fact would be. Both engines see the same lookups: the
pure ones, which the runner runs on the target.

An outcome is what a user can observe of the rendering:

* ``{"value": v, "type": name}``: the native value as plain JSON data
  (tuples are lists, a value JSON cannot hold is ``{"__type__": ...,
  "str": ...}``) and the name of its type;
* ``{"error": kind, "message": m}``: ``kind`` is ``undefined``, ``syntax``
  or ``error``; ``m`` is the innermost message, the one that says what went
  wrong (each engine puts its own context around it). The one normalisation:
  Ansible's lazy containers are named as the dict or list they stand for.
"""
from __future__ import annotations

import collections
import datetime
import json
import sys
from typing import Any, Dict, List

JSON_SCALARS = (str, int, float, bool, type(None))


def plain(value: Any) -> Any:
    """``value`` as JSON data, builtin subclasses (Ansible's tagged values) unwrapped."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, collections.abc.Mapping):
        return {_key(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return {"__type__": type(value).__name__, "str": str(value)}


def _key(key: Any) -> Any:
    key = plain(key)
    return key if isinstance(key, str) else json.dumps(key)


def type_name(value: Any) -> str:
    for base in (bool, int, float, str, dict, list, tuple, type(None)):
        if isinstance(value, base):
            return base.__name__
    if isinstance(value, collections.abc.Mapping):
        return "dict"
    if isinstance(value, collections.abc.Sequence):
        return "list"
    return type(value).__name__


#: Ansible's lazy containers stand for a dict or a list; a message that names
#: one (``got <class '..._AnsibleLazyTemplateList'>``) names the builtin here.
_LAZY_NAMES = [
    ("<class 'ansible._internal._templating._lazy_containers._AnsibleLazyTemplateDict'>",
     "<class 'dict'>"),
    ("<class 'ansible._internal._templating._lazy_containers._AnsibleLazyTemplateList'>",
     "<class 'list'>"),
    ("ansible._internal._templating._lazy_containers._AnsibleLazyTemplateDict", "dict"),
    ("ansible._internal._templating._lazy_containers._AnsibleLazyTemplateList", "list"),
    ("_AnsibleLazyTemplateDict", "dict"),
    ("_AnsibleLazyTemplateList", "list"),
]


def _message(exc: BaseException) -> str:
    text = str(getattr(exc, "message", None) or exc)
    for internal, builtin in _LAZY_NAMES:
        text = text.replace(internal, builtin)
    return text


def _chain(exc: BaseException, translated: bool) -> List[BaseException]:
    """``exc`` and its causes; with ``translated``, ``exc`` is ioc's translation
    of the error a template raised (``raise ... from None``): the chain goes on
    from that error."""
    out = [exc]
    if translated and exc.__cause__ is None and exc.__suppress_context__ \
            and exc.__context__ is not None:
        out.append(exc.__context__)
    while out[-1].__cause__ is not None:
        out.append(out[-1].__cause__)
    return out


# -- Ansible's side -------------------------------------------------------------------


class Ansible:
    def __init__(self) -> None:
        from ansible.parsing.dataloader import DataLoader
        from ansible.plugins.loader import init_plugin_loader

        init_plugin_loader()
        self.loader = DataLoader()

    def render(self, case: Dict[str, Any]) -> Dict[str, Any]:
        from ansible import errors
        from ansible.template import Templar, trust_as_template

        templar = Templar(loader=self.loader, variables=case.get("vars") or {})
        try:
            if "condition" in case:
                value = templar.evaluate_conditional(trust_as_template(case["condition"]))
            else:
                value = templar.template(trust_as_template(case["template"]))
        except Exception as exc:
            chain = _chain(exc, translated=False)
            if any(isinstance(e, errors.AnsibleUndefinedVariable) for e in chain):
                kind = "undefined"
            elif any(isinstance(e, errors.AnsibleTemplateSyntaxError) for e in chain):
                kind = "syntax"
            else:
                kind = "error"
            return {"error": kind, "message": _message(chain[-1])}
        return {"value": plain(value), "type": type_name(value)}


# -- ioc's side -------------------------------------------------------------------------


class Ioc:
    def render(self, case: Dict[str, Any]) -> Dict[str, Any]:
        import jinja2

        from ioc.agentless_runner.lookups import Lookups
        from ioc.agentless_runner.templating import (Templar, UndefinedVariableError,
                                                     Verbatim)

        variables = dict(case.get("vars") or {})
        base = Templar(Verbatim(variables))
        functions = Lookups({}, base.variable).functions()
        templar = Templar(collections.ChainMap(Verbatim(functions), Verbatim(variables)))
        try:
            if "condition" in case:
                value = templar.conditional(case["condition"])
            else:
                value = templar.template(case["template"])
        except Exception as exc:
            chain = _chain(exc, translated=True)
            if any(isinstance(e, (UndefinedVariableError, jinja2.UndefinedError)) for e in chain):
                kind = "undefined"
            elif any(isinstance(e, jinja2.TemplateSyntaxError) for e in chain):
                kind = "syntax"
            else:
                kind = "error"
            return {"error": kind, "message": _message(chain[-1])}
        return {"value": plain(value), "type": type_name(value)}


def main() -> int:
    ioc, ansible = Ioc(), Ansible()
    outcomes = []
    for case in json.load(sys.stdin):
        outcomes.append({"ioc": ioc.render(case), "ansible": ansible.render(case)})
    json.dump(outcomes, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
