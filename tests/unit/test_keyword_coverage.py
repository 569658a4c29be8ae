"""No silent difference: every keyword Ansible accepts is honoured by ioc-run or refused.

Each keyword of ansible-core's own ``Play``, ``Block``, ``Task`` and role
entries (their ``fattributes``) is written into a small playbook and loaded
by ioc's loader. Each must either load without ioc's "is ignored" warning or
raise a :class:`LoadError` naming the file and line; none may be accepted and
dropped. The loader's "accepted but ignored" sets must be empty.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, List, Tuple

import pytest
import yaml

from ioc.errors import LoadError
from ioc.loader import playbook as playbook_loader
from ioc.loader import tasks as tasks_loader
from ioc.loader.playbook import load_playbook

def test_no_keyword_is_accepted_and_ignored():
    assert not tasks_loader.IGNORED and not playbook_loader.PLAY_IGNORED


def _value(attribute: Any) -> Any:
    """A value of the keyword's type, as a playbook would write it."""
    return {"bool": True, "int": 1, "float": 1.0, "list": ["x"], "dict": {},
            "percent": "10%"}.get(attribute.isa, "x")


def _ansible_keywords(level: str) -> List[Tuple[str, Any]]:
    from ansible.playbook.block import Block
    from ansible.playbook.play import Play
    from ansible.playbook.role.include import RoleInclude
    from ansible.playbook.task import Task

    cls = {"play": Play, "block": Block, "task": Task, "role": RoleInclude}[level]
    return sorted((name, _value(attr)) for name, attr in cls.fattributes.items()
                  if not name.startswith("_"))


def _play(level: str, keyword: str, value: Any) -> Any:
    task = {"debug": {"msg": "hi"}}
    if level == "task":
        return [{"hosts": "all", "tasks": [{**task, keyword: value}]}]
    if level == "block":
        return [{"hosts": "all", "tasks": [{"block": [task], keyword: value}]}]
    if level == "role":
        return [{"hosts": "all", "roles": [{"role": "r", keyword: value}]}]
    return [{"hosts": "all", "tasks": [task], keyword: value}]


@pytest.mark.parametrize("level", ["play", "block", "task", "role"])
def test_every_ansible_keyword_is_honoured_or_refused(level, tmp_path, caplog):
    (tmp_path / "roles" / "r" / "tasks").mkdir(parents=True)
    (tmp_path / "roles" / "r" / "tasks" / "main.yml").write_text("- debug: msg=r\n")
    dropped = []
    for keyword, value in _ansible_keywords(level):
        path = tmp_path / ("%s-%s.yml" % (level, keyword))
        path.write_text(yaml.safe_dump(_play(level, keyword, value)))
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            try:
                load_playbook(str(path))
            except LoadError as exc:
                assert str(exc).startswith("%s:" % path), str(exc)
                continue
        if any("is ignored" in r.getMessage() for r in caplog.records):
            dropped.append(keyword)
    assert not dropped, "accepted but ignored at %s level: %s" % (level, dropped)


@pytest.mark.parametrize("keyword, value, message", [
    ("strategy", "free", "ioc-run runs plays with linear semantics; use ansible-playbook "
                         "for strategy: free"),
    ("strategy", "{{ s }}", "use ansible-playbook for strategy: {{ s }}"),
    ("debugger", "on_failed", "ioc-run has no interactive task debugger"),
    ("port", "{{ p }}", "'port' must be a number"),
])
def test_play_keywords_ioc_run_cannot_honour_are_refused_at_their_line(
        tmp_path, keyword, value, message):
    path = tmp_path / "site.yml"
    path.write_text("- hosts: all\n  tasks: []\n  %s: %s\n" % (keyword, yaml.safe_dump(value).split("\n")[0]))
    with pytest.raises(LoadError) as info:
        load_playbook(str(path))
    assert str(info.value).startswith("%s:3" % path)
    assert message in str(info.value)


def test_linear_strategies_and_debugger_never_load(tmp_path):
    path = tmp_path / "site.yml"
    plays = [{"hosts": "all", "strategy": name, "debugger": "never",
              "tasks": [{"debug": {"msg": "x"}, "debugger": "never"}]}
             for name in ("linear", "ansible.builtin.linear", "mitogen_batch", "mitogen_linear")]
    path.write_text(yaml.safe_dump(plays))
    assert len(load_playbook(str(path)).plays) == 4
