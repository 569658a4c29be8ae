"""--tags and --skip-tags decide which tasks are reached at all (L7.9)."""
from __future__ import annotations

import pytest

from ioc import loader
from ioc.controller.capabilities import runner_capabilities
from ioc.planner import TagFilter, plan_play

PLAY = """
- hosts: all
  tasks:
    - name: a
      debug: msg=a
      tags: [a]
    - name: b
      debug: msg=b
      tags: [b, never]
    - name: untagged
      debug: msg=u
    - name: always
      debug: msg=always
      tags: always
    - block:
        - name: in block
          debug: msg=x
      tags: blk
"""


def reached(tmp_path, only=(), skip=()):
    path = tmp_path / "play.yml"
    path.write_text(PLAY)
    play = loader.load_playbook(str(path)).plays[0]
    plan = plan_play(play, runner_capabilities(), tags=TagFilter.parse(only, skip))
    return [e.task.name for e in plan.program.entries if not (e.implicit and e.is_flush)]


@pytest.mark.parametrize("only, skip, expected", [
    ((), (), ["Gathering Facts", "a", "untagged", "always", "in block"]),
    (("a",), (), ["Gathering Facts", "a", "always"]),
    (("b",), (), ["Gathering Facts", "b", "always"]),          # never runs when asked for
    (("never",), (), ["Gathering Facts", "b", "always"]),
    (("untagged",), (), ["Gathering Facts", "untagged", "always"]),
    (("tagged",), (), ["Gathering Facts", "a", "always", "in block"]),
    (("blk",), (), ["Gathering Facts", "always", "in block"]),  # block tags are inherited
    ((), ("a",), ["Gathering Facts", "untagged", "always", "in block"]),
    ((), ("always",), ["a", "untagged", "in block"]),
    (("a,blk",), (), ["Gathering Facts", "a", "always", "in block"]),
])
def test_tag_selection_follows_ansible(tmp_path, only, skip, expected):
    assert reached(tmp_path, only, skip) == expected
