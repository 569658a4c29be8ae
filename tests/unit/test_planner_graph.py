"""ioc.planner.graph: def-use edges between entries, DOT and JSON views."""
from __future__ import annotations

import json
import textwrap

import networkx as nx

from ioc import loader
from ioc.planner.effects import FACTS, analyze_program
from ioc.planner.graph import build_graph, dumps, to_dot, to_json, writers_between
from ioc.planner.program import compile_play


def build(tmp_path, text, name="play.yml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    program = compile_play(loader.load_playbook(str(path)).plays[0])
    effects = analyze_program(program)
    return program, effects, build_graph(program, effects)


def index_of(program, name):
    return next(e.index for e in program.entries if e.task.name == name)


def edges(graph):
    return {(u, v): d["vars"] for u, v, d in graph.edges(data=True)}


PLAY = """
- hosts: all
  vars:
    derived: "{{ first.stdout }}"
  tasks:
    - name: first
      command: echo 1
      register: first
    - name: x1
      set_fact: x=1
    - name: x2
      set_fact:
        x: "{{ x + 1 }}"
    - name: use
      debug: msg="{{ x }} {{ first.rc }} {{ ansible_distribution }} {{ derived }}"
      notify: h
  handlers:
    - name: h
      set_fact: from_handler=1
  post_tasks:
    - name: post
      debug: msg="{{ from_handler }}"
"""


def test_nodes_carry_name_action_location(tmp_path):
    program, _, graph = build(tmp_path, PLAY)
    assert sorted(graph.nodes) == list(range(len(program.entries)))
    assert graph.nodes[0]["name"] == "Gathering Facts"
    assert graph.nodes[0]["writes"] == [FACTS]
    use = index_of(program, "use")
    assert graph.nodes[use]["action"] == "debug"
    assert graph.nodes[use]["location"].endswith("play.yml:14")
    assert graph.nodes[1]["name"] == "(flush handlers)"


def test_def_use_edges_last_writer_wins(tmp_path):
    program, _, graph = build(tmp_path, PLAY)
    first, x1, x2, use = (index_of(program, n) for n in ("first", "x1", "x2", "use"))
    got = edges(graph)
    # x2 reads x (written by x1) and rewrites it; use reads x2's x, not x1's.
    assert got[(x1, x2)] == ["x"]
    assert got[(x2, use)] == ["x"]
    assert (x1, use) not in got
    # first.rc directly, and first.stdout through the lazily templated ``derived``.
    assert got[(first, use)] == ["first"]
    assert got[(0, use)] == ["ansible_distribution"]


def test_handler_writes_flow_from_the_flush(tmp_path):
    program, _, graph = build(tmp_path, PLAY)
    post = index_of(program, "post")
    flush = max(e.index for e in program.entries if e.is_flush and e.index < post)
    assert edges(graph)[(flush, post)] == ["from_handler"]
    assert graph.nodes[flush]["writes"] == ["from_handler"]
    # The pre_tasks flush has nothing notified before it: it writes nothing.
    assert graph.nodes[1]["writes"] == []


def test_handler_chains_and_listen(tmp_path):
    program, _, graph = build(tmp_path, """
        - hosts: all
          gather_facts: false
          tasks:
            - name: poke
              command: "true"
              notify: topic
          handlers:
            - name: a
              set_fact: a=1
            - name: b
              listen: topic
              set_fact: b=1
              notify: c
            - name: c
              set_fact: c=1
    """)
    flush = next(e.index for e in program.entries if e.is_flush and e.index > 1)
    assert graph.nodes[flush]["writes"] == ["b", "c"]


def test_may_writers_do_not_hide_the_definite_writer(tmp_path):
    program, _, graph = build(tmp_path, """
        - hosts: all
          gather_facts: false
          tasks:
            - name: def
              set_fact: v=1
            - name: load
              include_vars: more.yml
            - name: use
              debug: msg="{{ v }}"
    """)
    d, load, use = (index_of(program, n) for n in ("def", "load", "use"))
    got = edges(graph)
    assert got[(load, use)] == ["v"]
    assert got[(d, use)] == ["v"]


def test_hostvars_attributes_and_groups_edges(tmp_path):
    program, _, graph = build(tmp_path, """
        - hosts: all
          gather_facts: false
          tasks:
            - name: reg
              command: hostname
              register: out
            - name: add
              add_host: name=n groups=web
            - name: peers
              debug:
                msg: "{% for h in groups['web'] %}{{ hostvars[h].out.stdout }}{% endfor %}"
    """)
    reg, add, peers = (index_of(program, n) for n in ("reg", "add", "peers"))
    got = edges(graph)
    assert got[(reg, peers)] == ["out"]
    assert got[(add, peers)] == ["groups"]


def test_writers_between(tmp_path):
    program, effects, graph = build(tmp_path, PLAY)
    first, x1, x2, use, post = (index_of(program, n)
                                for n in ("first", "x1", "x2", "use", "post"))
    names = ["x", "first", "ansible_os_family", "nope", "from_handler"]
    assert writers_between(graph, first, use, names) == {"x": x2, "first": first}
    assert writers_between(effects, x1, x2, names) == {"x": x1}
    assert writers_between(graph, 0, 1, names) == {"ansible_os_family": 0}
    # The flush before post_tasks runs the notified handler.
    assert writers_between(graph, use, post, ["from_handler"]) == {"from_handler": post - 1}
    assert writers_between(effects, use, post, ["from_handler"]) == {}
    assert writers_between(graph, 5, 5, names) == {}


def test_json_is_ordered_and_serialisable(tmp_path):
    program, _, graph = build(tmp_path, PLAY)
    data = to_json(graph)
    assert [n["index"] for n in data["nodes"]] == list(range(len(program.entries)))
    pairs = [(e["from"], e["to"]) for e in data["edges"]]
    assert pairs == sorted(pairs)
    assert all(e["vars"] == sorted(e["vars"]) for e in data["edges"])
    assert json.loads(dumps(graph)) == data


def test_dot_labels(tmp_path):
    program, _, graph = build(tmp_path, PLAY)
    dot = to_dot(graph)
    use = index_of(program, "use")
    x2 = index_of(program, "x2")
    assert dot.startswith("digraph ioc {\n")
    assert dot.endswith("}\n")
    assert '  n%d [label="%d use (%s)"];' % (use, use, graph.nodes[use]["location"]) in dot
    assert '  n%d -> n%d [label="x"];' % (x2, use) in dot
    assert '[label="0 Gathering Facts (' in dot


def test_dot_escapes_quotes():
    graph = nx.DiGraph()
    graph.add_node(0, name='say "hi"', action="debug", location="p.yml:3", writes=[])
    assert '[label="0 say \\"hi\\" (p.yml:3)"]' in to_dot(graph)


def test_output_is_deterministic(tmp_path):
    a = build(tmp_path, PLAY, "a.yml")[2]
    b = build(tmp_path, PLAY, "a.yml")[2]
    assert to_dot(a) == to_dot(b)
    assert dumps(a) == dumps(b)
