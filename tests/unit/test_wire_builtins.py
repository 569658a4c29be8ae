"""Every value in a wire batch is a builtin: the target unpickles only those.

mitogen's unpickler refuses any class it does not know, so a ``LocatedDict``
(the YAML loader's located mapping) hidden in play vars, vars_files, role
vars/defaults, inventory vars, extra vars or task args would fail the whole
step on the target ("cannot unpickle 'ioc.loader.yamlsrc'/'LocatedDict'").
The batches are captured where the controller hands them to the transport.
"""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Iterator, List, Tuple

import ioc.controller.play as play_module
from ioc import loader
from ioc.ansible.modules import attach
from ioc.callbacks import Callback
from ioc.cli import load_inventory
from ioc.controller.state import RunOptions
from ioc.controller.playbook import PlaybookRun

BUILTINS = (dict, list, str, int, float, bool, bytes, type(None))


def _walk(value: Any, path: str = "batch") -> Iterator[Tuple[str, type]]:
    if type(value) not in BUILTINS:
        yield path, type(value)
    if isinstance(value, dict):
        for k, v in value.items():
            if type(k) not in BUILTINS:
                yield "%s key %r" % (path, k), type(k)
            yield from _walk(v, "%s[%r]" % (path, k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _walk(v, "%s[%d]" % (path, i))


def _write(root: Path, files: dict) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_every_value_of_every_batch_is_a_builtin(tmp_path, monkeypatch):
    _write(tmp_path, {
        "hosts.yml": """
            all:
              vars: {inv_group: {a: [ {b: 1} ]}}
              hosts:
                h1: {ansible_connection: local, inv_host: {c: {d: 2}}}
            """,
        "group_vars/all.yml": "gv: {e: [ {f: 3} ]}\n",
        "host_vars/h1.yml": "hv: {g: {h: 4}}\n",
        "extra.yml": "ev: {i: {j: 5}}\n",
        "vars.yml": "vf: {k: [ {l: 6} ]}\n",
        "roles/r/defaults/main.yml": "rd: {m: {n: 7}}\n",
        "roles/r/vars/main.yml": "rv: {o: {p: 8}}\n",
        "roles/r/tasks/main.yml": "- debug: {msg: '{{ rd }} {{ rv }}'}\n",
        "site.yml": """
            - hosts: all
              gather_facts: false
              vars: {pv: {q: [ {r: 9} ]}}
              vars_files: [vars.yml]
              roles:
                - role: r
                  param: {s: {t: 10}}
              tasks:
                - debug:
                    msg: "{{ pv }} {{ vf }} {{ gv }} {{ hv }} {{ ev }} {{ inv_group }} {{ inv_host }}"
                  loop: [{u: 1}]
                  vars: {tv: {w: 1}}
                  loop_control: {label: "{{ item.u }}"}
            """,
    })
    extra = loader.parse_extra_vars(["@%s" % (tmp_path / "extra.yml")])
    playbook = attach(loader.load_playbook(str(tmp_path / "site.yml"), extra_vars=extra))
    inventory = load_inventory([str(tmp_path / "hosts.yml")], str(tmp_path))

    batches: List[Any] = []

    class Capture:
        """The executor's Dispatch, running nothing: the calls' wires are kept."""

        def __init__(self, connector, calls, limit=0):
            batches.extend(call.wire for call in calls)

        def add(self, call):
            batches.append(call.wire)

        def __iter__(self):
            return iter(())

    monkeypatch.setattr(play_module, "Dispatch", Capture)
    PlaybookRun(playbook, inventory, extra, Callback(), RunOptions()).run()

    assert batches, "no batch was built"
    names = set()
    for batch in batches:
        assert list(_walk(batch)) == []
        for layer in batch["vars"].values():
            names.update(layer)
    # the sources above all reached a batch (as variables or inside the tree)
    assert {"pv", "vf", "gv", "hv", "ev", "inv_group", "inv_host"} <= names
