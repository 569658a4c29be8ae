"""ioc.planner.effects: what tasks read and write, found from their templates."""
from __future__ import annotations

import textwrap

import pytest

from ioc import loader
from ioc.errors import PlanError
from ioc.model import Location, Task
from ioc.planner.effects import (DYNAMIC, FACTS, INCLUDE_VARS, INVENTORY, SELF, Effects,
                                 HostvarsAccess, LookupCall, Origin, Read, analyze_program,
                                 analyze_task, classify, lazy_reads)
from ioc.planner.program import compile_play


def program_of(tmp_path, text):
    path = tmp_path / "play.yml"
    path.write_text(textwrap.dedent(text))
    return compile_play(loader.load_playbook(str(path)).plays[0])


def tasks_play(tasks, extra=""):
    body = textwrap.indent(textwrap.dedent(tasks), "    ")
    return "- hosts: all\n  gather_facts: false\n%s  tasks:\n%s" % (extra, body)


def effects_of(tmp_path, tasks, extra=""):
    """Effects of the explicit entries of a play made of ``tasks``."""
    program = program_of(tmp_path, tasks_play(tasks, extra))
    effects = analyze_program(program)
    return [effects[e.index] for e in program.entries if not e.implicit]


def one(tmp_path, task):
    (eff,) = effects_of(tmp_path, task)
    return eff


def names(eff, field=None):
    return {r.name for r in eff.reads if field is None or r.field == field}


def task(**kw):
    kw.setdefault("action", "debug")
    kw.setdefault("args", {})
    return Task(location=Location("t.yml", 1), **kw)


# -- reads -----------------------------------------------------------------


def test_bare_when_is_an_expression(tmp_path):
    eff = one(tmp_path, """
        - debug: msg=hi
          when: x.rc == 0
    """)
    assert eff.reads == {Read("x", "when")}


def test_when_boolean_is_not_a_template(tmp_path):
    eff = one(tmp_path, """
        - debug: msg=hi
          when: true
    """)
    assert eff.reads == frozenset()


def test_loop_variable_is_not_a_read(tmp_path):
    eff = one(tmp_path, """
        - debug: msg="{{ item }} {{ prefix }}"
          loop: "{{ numbers }}"
          when: item > 1
    """)
    assert names(eff) == {"numbers", "prefix"}
    assert names(eff, "loop") == {"numbers"}


def test_custom_loop_var_and_index_var(tmp_path):
    eff = one(tmp_path, """
        - debug: msg="{{ pkg }} {{ i }} {{ ansible_loop.index }} {{ item }}"
          loop: [a, b]
          loop_control:
            loop_var: pkg
            index_var: i
            extended: true
            label: "{{ pkg }}-{{ tag }}"
    """)
    # ``item`` is not the loop var here: it is a free variable.
    assert names(eff) == {"item", "tag"}
    assert Read("tag", "loop_control") in eff.reads


def test_loop_expression_may_read_an_outer_item(tmp_path):
    eff = one(tmp_path, """
        - debug: msg=x
          loop: "{{ item.children }}"
    """)
    assert eff.reads == {Read("item", "loop")}


def test_register_is_bound_in_until_changed_failed_when(tmp_path):
    eff = one(tmp_path, """
        - command: /bin/true
          register: r
          until: r.rc == 0
          retries: "{{ tries }}"
          changed_when: r.stdout != old
          failed_when: "'ERR' in r.stderr"
    """)
    assert names(eff) == {"tries", "old"}
    assert eff.writes == {"r"}


def test_register_in_when_is_a_self_read(tmp_path):
    eff = one(tmp_path, """
        - command: echo {{ item }}
          loop: [a, b]
          register: r
          when: r.stdout | default('') != 'a'
    """)
    assert eff.reads == {Read("r", "when")}
    assert eff.filters == {"default"}


def test_filters_and_tests_are_collected_not_read(tmp_path):
    eff = one(tmp_path, """
        - debug: msg="{{ xs | map('upper') | join(',') }}"
          when: y is defined and y is not none and (z | bool)
    """)
    assert names(eff) == {"xs", "y", "z"}
    assert eff.filters == {"map", "join", "bool"}
    assert eff.tests == {"defined", "none"}


def test_for_target_and_set_are_scoped(tmp_path):
    eff = one(tmp_path, """
        - debug:
            msg: >-
              {% set sep = ',' %}{% for h in groups['web'] if h != skip %}{{ h }}{{ sep }}{{ loop.index }}{% endfor %}{{ h }}
    """)
    # ``h`` after the loop is free again; ``loop`` is jinja's inside the body.
    assert names(eff) == {"groups", "skip", "h"}
    assert eff.magic_cross_host == {"groups"}


def test_set_after_use_and_set_in_if_stay_free(tmp_path):
    eff = one(tmp_path, """
        - debug:
            msg: "{{ a }}{% set a = 1 %}{{ a }}{% if c %}{% set b = 2 %}{% endif %}{{ b }}"
    """)
    assert names(eff) == {"a", "b", "c"}


def test_macro_call_block_with_and_namespace(tmp_path):
    eff = one(tmp_path, """
        - debug:
            msg: >-
              {% macro m(p, q=dflt) %}{{ p }}{{ q }}{{ varargs }}{{ outer }}{% endmacro %}{{ m(1) }}
              {% with w = v %}{{ w }}{% endwith %}
              {% set ns = namespace(n=0) %}{% set ns.n = ns.n + 1 %}{{ ns.n }}
              {% call(u) m(2) %}{{ u }}{% endcall %}{{ range(3) | list }}
    """)
    assert names(eff) == {"dflt", "outer", "v"}


def test_templated_keys_and_nested_args(tmp_path):
    eff = one(tmp_path, """
        - copy:
            dest: "/etc/{{ app }}.conf"
            content: "{{ cfg | to_json }}"
            mode: "0644"
          environment:
            PATH: "{{ extra_path }}"
          notify: "restart {{ app }}"
          name: "configure {{ app }}"
    """)
    assert names(eff, "args") == {"app", "cfg"}
    assert names(eff, "environment") == {"extra_path"}
    assert names(eff, "notify") == {"app"}
    assert names(eff, "name") == {"app"}


def test_task_vars_values_are_reads_and_names_are_local(tmp_path):
    eff = one(tmp_path, """
        - debug: msg="{{ greeting }}"
          vars:
            greeting: "hello {{ who }}"
    """)
    # Task vars do not shadow set_fact/register (L6.3): the name stays a read.
    assert eff.reads == {Read("who", "vars"), Read("greeting", "args")}
    assert eff.local == {"greeting"}


def test_assert_that_and_debug_var_are_expressions(tmp_path):
    first, second = effects_of(tmp_path, """
        - assert:
            that:
              - a == 1
              - "{{ b }}"
            fail_msg: "{{ why }}"
        - debug: var=c.stdout
    """)
    assert names(first) == {"a", "b", "why"}
    assert names(second) == {"c"}


def test_validate_argument_spec_reads_the_variables_its_spec_names():
    spec = {"who": {"type": "str"}, "times": {"type": "int", "default": "{{ n }}"}}
    eff = analyze_task(task(action="validate_argument_spec",
                            args={"argument_spec": spec, "provided_arguments": {"x": "{{ p }}"}}))
    assert names(eff) == {"who", "times", "n", "p"}
    # a templated spec may name any variable: the step ships them all
    eff = analyze_task(task(action="validate_argument_spec", args={"argument_spec": "{{ s }}"}))
    assert names(eff) == {"s", "vars"}


def test_vars_dict_with_constant_key_reads_that_name():
    eff = analyze_task(task(args={"msg": "{{ vars['x'] }} {{ vars.y }} {{ vars[k] }}"}))
    assert names(eff) == {"x", "y", "k", "vars"}


def test_globals_are_not_variables():
    eff = analyze_task(task(args={"msg": "{{ range(3) | list }} {{ lookup('env', 'HOME') }}"}))
    assert eff.reads == frozenset()


def test_syntax_error_is_a_plan_error_with_location():
    with pytest.raises(PlanError) as info:
        analyze_task(task(args={"msg": "{{ x | }}"}))
    assert "t.yml:1" in str(info.value)


# -- hostvars and magic ----------------------------------------------------


def test_hostvars_computed_host_in_for_loop(tmp_path):
    eff = one(tmp_path, """
        - debug:
            msg: "{% for h in groups['web'] %}{{ hostvars[h].ip }}{% endfor %}"
    """)
    assert eff.hostvars == (HostvarsAccess(None, ("ip",), "args"),)
    assert names(eff) == {"groups", "hostvars"}


def test_hostvars_constant_and_self_hosts():
    eff = analyze_task(task(args={"msg": "{{ hostvars['db1']['port'] }} "
                                          "{{ hostvars.db2.ansible_host }} "
                                          "{{ hostvars[inventory_hostname].x }} "
                                          "{{ hostvars['db3'] }}"}))
    assert eff.hostvars == (
        HostvarsAccess("db1", ("port",), "args"),
        HostvarsAccess("db2", ("ansible_host",), "args"),
        HostvarsAccess(SELF, ("x",), "args"),
        HostvarsAccess("db3", (), "args"),
    )
    # hostvars[inventory_hostname].x is the host's own x.
    assert names(eff) == {"hostvars", "inventory_hostname", "x"}


def test_hostvars_deep_chain_records_the_first_attribute():
    eff = analyze_task(task(when=("hostvars[peer].ansible_default_ipv4.address != ''",)))
    assert eff.hostvars == (HostvarsAccess(None, ("ansible_default_ipv4",), "when"),)
    assert names(eff) == {"hostvars", "peer"}


def test_whole_hostvars():
    eff = analyze_task(task(args={"msg": "{{ hostvars | length }}"}))
    assert eff.hostvars == (HostvarsAccess(None, (), "args"),)


def test_magic_cross_host_names():
    eff = analyze_task(task(args={"msg": "{{ ansible_play_hosts }} {{ play_hosts }} "
                                          "{{ ansible_play_batch }} {{ inventory_hostname }}"}))
    assert eff.magic_cross_host == {"ansible_play_hosts", "play_hosts", "ansible_play_batch"}


# -- lookups ---------------------------------------------------------------


def test_lookup_with_computed_args(tmp_path):
    eff = one(tmp_path, """
        - debug: msg="{{ lookup('file', '/etc/' ~ name) }}"
    """)
    (call,) = eff.lookups
    assert call == LookupCall("file", "args", False, frozenset({"name"}),
                              "{{ lookup('file', '/etc/' ~ name) }}")
    assert names(eff) == {"name"}


def test_query_q_and_unknown_plugin():
    eff = analyze_task(task(args={"msg": "{{ query('env', 'HOME') }} {{ q(kind, 'x') }} "
                                          "{{ lookup('pipe', 'date', errors='ignore') }}"}))
    assert [(c.plugin, c.static_args, set(c.reads)) for c in eff.lookups] == [
        ("env", True, set()), (None, False, {"kind"}), ("pipe", True, set())]


def test_lookup_in_for_loop_uses_bound_names():
    eff = analyze_task(task(args={"msg": "{% for f in files %}{{ lookup('file', f) }}{% endfor %}"}))
    (call,) = eff.lookups
    assert call.static_args is False and call.reads == frozenset()
    assert names(eff) == {"files"}


def test_lookup_vars_reads_the_variables():
    eff = analyze_task(task(args={"msg": "{{ lookup('vars', 'a', 'b') }}"}))
    assert names(eff) == {"a", "b"}


def test_with_fileglob_is_a_static_lookup(tmp_path):
    eff = one(tmp_path, """
        - debug: msg="{{ item }}"
          with_fileglob: "*.conf"
    """)
    assert eff.lookups == (LookupCall("fileglob", "loop", True, frozenset(), "*.conf"),)
    assert eff.reads == frozenset()


def test_with_lookup_templated_terms(tmp_path):
    eff = one(tmp_path, """
        - debug: msg="{{ item }}"
          with_file:
            - "{{ base }}/a"
            - b
    """)
    (call,) = eff.lookups
    assert (call.plugin, call.field, call.static_args, call.reads) == (
        "file", "loop", False, frozenset({"base"}))
    assert eff.reads == {Read("base", "loop")}


def test_with_items_is_not_a_lookup(tmp_path):
    eff = one(tmp_path, """
        - debug: msg="{{ item }}"
          with_items: "{{ things }}"
    """)
    assert eff.lookups == ()
    assert eff.reads == {Read("things", "loop")}


# -- writes ----------------------------------------------------------------


def test_writes(tmp_path):
    effs = effects_of(tmp_path, """
        - set_fact:
            a: 1
            b: "{{ c }}"
            cacheable: true
        - set_fact: x=1 y=2
        - command: id
          register: who
        - setup:
        - include_vars: vars.yml
        - include_vars:
            file: more.yml
            name: more
        - add_host: name=new groups=web
        - group_by: key=os
        - set_stats:
            data: {k: 1}
        - include_tasks: "{{ other }}.yml"
    """)
    assert [set(e.writes) for e in effs] == [
        {"a", "b"}, {"x", "y"}, {"who"}, {FACTS}, {INCLUDE_VARS}, {INCLUDE_VARS, "more"},
        {INVENTORY}, {INVENTORY}, set(), {DYNAMIC}]
    assert effs[0].reads == {Read("c", "args")}


def test_set_fact_with_templated_key_is_dynamic():
    eff = analyze_task(task(action="set_fact", args={"{{ k }}": 1}))
    assert eff.writes == {DYNAMIC}
    assert names(eff) == {"k"}


def test_implicit_entries(tmp_path):
    program = program_of(tmp_path, "- hosts: all\n  tasks:\n    - debug: msg=x\n")
    effects = analyze_program(program)
    assert len(effects) == len(program.entries)
    assert effects[0].writes == {FACTS}
    flushes = [effects[e.index] for e in program.entries if e.is_flush]
    assert flushes and all(f == Effects() for f in flushes)


def test_analysis_is_deterministic(tmp_path):
    text = tasks_play("""
        - debug: msg="{{ lookup('file', a) }}{{ hostvars[b].c }}{{ d | e }}"
          when: f is g
    """)
    first = analyze_program(program_of(tmp_path, text))
    second = analyze_program(program_of(tmp_path, text))
    assert first == second


# -- origins ---------------------------------------------------------------


def origins(tmp_path, text):
    program = program_of(tmp_path, text)
    effects = analyze_program(program)
    out = classify(program, effects)
    return {(e.task.name or e.task.action): out[e.index]
            for e in program.entries if not e.implicit}


def test_origins_static_runtime_and_facts(tmp_path):
    got = origins(tmp_path, """
        - hosts: all
          vars: {greeting: hi}
          tasks:
            - name: one
              command: echo {{ greeting }} {{ ansible_hostname }}
              register: r
            - name: two
              debug: msg="{{ r.stdout }} {{ inventory_hostname }} {{ ansible_host }}"
    """)
    assert got["one"] == {"greeting": Origin.STATIC, "ansible_hostname": Origin.HOST_RUNTIME}
    assert got["two"] == {"r": Origin.HOST_RUNTIME, "inventory_hostname": Origin.STATIC,
                          "ansible_host": Origin.STATIC}


def test_facts_are_static_without_gathering(tmp_path):
    got = origins(tmp_path, tasks_play("""
        - name: one
          debug: msg="{{ ansible_hostname }}"
    """))
    assert got["one"] == {"ansible_hostname": Origin.STATIC}


def test_self_read_of_register_is_runtime_only_if_written_earlier(tmp_path):
    got = origins(tmp_path, tasks_play("""
        - name: first
          command: echo {{ item }}
          loop: [a, b]
          register: r
          when: r.stdout | default('') != 'a'
        - name: again
          command: echo {{ item }}
          loop: [a, b]
          register: r
          when: r.stdout | default('') != 'a'
    """))
    assert got["first"] == {"r": Origin.STATIC}
    assert got["again"] == {"r": Origin.HOST_RUNTIME}


def test_origins_cross_host(tmp_path):
    got = origins(tmp_path, tasks_play("""
        - name: reg
          command: hostname
          register: out
        - name: peers
          debug: msg="{{ hostvars[h].out.stdout }}"
        - name: inv
          debug: msg="{{ hostvars['db'].ansible_host }} {{ groups['web'] }}"
        - name: me
          debug: msg="{{ hostvars[inventory_hostname].out }}"
        - name: play
          debug: msg="{{ ansible_play_hosts }} {{ ansible_play_hosts_all }}"
    """))
    assert got["peers"] == {"hostvars": Origin.CROSS_HOST, "h": Origin.STATIC}
    # Inventory-only attributes of another host, groups without add_host: static.
    assert got["inv"] == {"hostvars": Origin.STATIC, "groups": Origin.STATIC}
    assert got["me"] == {"hostvars": Origin.HOST_RUNTIME, "out": Origin.HOST_RUNTIME,
                         "inventory_hostname": Origin.STATIC}
    assert got["play"] == {"ansible_play_hosts": Origin.CROSS_HOST,
                           "ansible_play_hosts_all": Origin.STATIC}


def test_hostvars_of_another_hosts_facts_is_cross_host(tmp_path):
    got = origins(tmp_path, """
        - hosts: all
          tasks:
            - name: ip
              debug: msg="{{ hostvars['db'].ansible_default_ipv4.address }}"
    """)
    assert got["ip"] == {"hostvars": Origin.CROSS_HOST}


def test_groups_after_add_host_is_cross_host(tmp_path):
    got = origins(tmp_path, tasks_play("""
        - name: before
          debug: msg="{{ groups['web'] }}"
        - name: add
          add_host: name=new groups=web
        - name: after
          debug: msg="{{ groups['web'] }} {{ group_names }}"
    """))
    assert got["before"] == {"groups": Origin.STATIC}
    assert got["after"] == {"groups": Origin.CROSS_HOST, "group_names": Origin.CROSS_HOST}


def test_handler_writes_count_after_a_flush(tmp_path):
    text = """
        - hosts: all
          gather_facts: false
          tasks:
            - name: note
              command: "true"
              notify: h
            - name: before
              debug: msg="{{ from_handler | default(1) }}"
            - meta: flush_handlers
            - name: after
              debug: msg="{{ from_handler | default(1) }}"
          handlers:
            - name: h
              set_fact: from_handler=1
    """
    got = origins(tmp_path, text)
    assert got["before"] == {"from_handler": Origin.STATIC}
    assert got["after"] == {"from_handler": Origin.HOST_RUNTIME}


def test_lazy_definitions_carry_their_origin(tmp_path):
    text = """
        - hosts: all
          gather_facts: false
          vars:
            derived: "{{ r.stdout }}"
            plain: "{{ base }}/x"
            peer_ip: "{{ hostvars['db'].r }}"
          tasks:
            - name: reg
              command: id
              register: r
            - block:
                - name: use
                  debug: msg="{{ derived }} {{ plain }} {{ inner }} {{ tv }}"
                  vars:
                    tv: "{{ plain }}"
              vars:
                inner: "{{ derived }}"
            - name: peer
              debug: msg="{{ peer_ip }}"
    """
    got = origins(tmp_path, text)
    assert got["use"] == {"derived": Origin.HOST_RUNTIME, "plain": Origin.STATIC,
                          "inner": Origin.HOST_RUNTIME, "tv": Origin.STATIC}
    assert got["peer"] == {"peer_ip": Origin.CROSS_HOST}
    program = program_of(tmp_path, text)
    use = next(e.index for e in program.entries if e.task.name == "use")
    assert lazy_reads(program, use, ["inner", "tv"]) == {"derived", "r", "plain", "base"}


def test_task_var_does_not_shadow_an_earlier_set_fact(tmp_path):
    got = origins(tmp_path, tasks_play("""
        - name: sf
          set_fact: x=1
        - name: use
          debug: msg="{{ x }}"
          vars:
            x: 2
    """))
    assert got["use"] == {"x": Origin.HOST_RUNTIME}


def test_dynamic_writers_make_later_reads_runtime(tmp_path):
    got = origins(tmp_path, tasks_play("""
        - name: before
          debug: msg="{{ anything }}"
        - name: load
          include_vars: extra.yml
        - name: after
          debug: msg="{{ anything }}"
    """))
    assert got["before"] == {"anything": Origin.STATIC}
    assert got["after"] == {"anything": Origin.HOST_RUNTIME}


def test_rescue_reads_of_failed_result_are_runtime(tmp_path):
    got = origins(tmp_path, tasks_play("""
        - block:
            - name: boom
              command: /bin/false
          rescue:
            - name: report
              debug: msg="{{ ansible_failed_result.msg }}"
    """))
    assert got["report"] == {"ansible_failed_result": Origin.HOST_RUNTIME}


def test_the_planner_knows_every_lookup_ioc_runs_itself():
    """The planner's list of ioc's own lookups (``dataflow.IOC_LOOKUPS``: any
    other is Ansible's plugin, which may read any variable, so its step ships
    every one) is the controller's (``ioc.controller.lookups.KNOWN``): a
    lookup added to one and not the other would ship too little, or too much."""
    from ioc.controller.lookups import KNOWN
    from ioc.planner.dataflow import IOC_LOOKUPS

    assert IOC_LOOKUPS == KNOWN


@pytest.mark.parametrize("texts, attrs", [
    (["{{ hostvars['h2'].ip }}"], ("ip",)),
    # a file the planner cannot read, or whose delimiters are its own: it may
    # read any host's values (the step ships whole hosts)
    (None, ()),
    (["#jinja2: variable_start_string: '[%'\n[% hostvars['h2'].ip %]"], ()),
])
def test_a_template_files_reads_of_other_hosts_are_the_tasks(texts, attrs):
    from ioc.planner.closure import other_attrs

    t = task(action="template", args={"src": "t.j2", "dest": "/tmp/x"})
    eff = analyze_task(t, lambda task_, name: texts)
    expected = None if not attrs else frozenset(attrs)
    assert other_attrs(eff.hostvars) == expected
