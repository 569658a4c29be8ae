"""The runner decides a host's control flow the way the linear strategy does."""
from __future__ import annotations

import pytest

from tests.support.inprocess import run_text


def play(tasks: str, handlers: str = "", extra: str = "") -> str:
    text = "- hosts: all\n  gather_facts: false\n" + extra + "  tasks:\n" + tasks
    if handlers:
        text += "  handlers:\n" + handlers
    return text


def test_when_is_evaluated_per_loop_item(tmp_path):
    r = run_text(tmp_path, play("""
    - name: loop
      debug: msg="{{ item }}"
      loop: [1, 2, 3]
      when: item != 2
"""))
    items = [e for e in r.events if e["e"] == "item"]
    assert [i["status"] for i in items] == ["ok", "skipped", "ok"]
    assert items[1]["result"]["false_condition"] == "item != 2"


def test_registered_loop_has_ansible_results_shape(tmp_path):
    r = run_text(tmp_path, play("""
    - command: echo {{ item }}
      loop: [a, b]
      register: out
      changed_when: item == 'a'
"""))
    out = r.runtime["out"]
    assert out["msg"] == "All items completed"
    # ansible-core 2.21: failed: false is registered, skipped only when every item skipped
    assert out["changed"] is True and out["failed"] is False and "skipped" not in out
    assert [x["changed_when_result"] for x in out["results"]] == [True, False]
    assert [x["item"] for x in out["results"]] == ["a", "b"]
    assert [x["changed"] for x in out["results"]] == [True, False]
    assert out["results"][0]["ansible_loop_var"] == "item"
    assert out["results"][1]["stdout"] == "b"


def test_with_items_flattens_one_level_and_loop_does_not(tmp_path):
    r = run_text(tmp_path, play("""
    - debug: msg=x
      with_items: [[1, 2], 3]
      register: flat
    - debug: msg=x
      loop: [[1, 2], 3]
      register: nested
"""))
    assert len(r.runtime["flat"]["results"]) == 3
    assert len(r.runtime["nested"]["results"]) == 2


def test_empty_loop_is_skipped_with_ansibles_spelling(tmp_path):
    r = run_text(tmp_path, play("""
    - debug: msg=x
      loop: []
      register: empty
"""))
    assert r.runtime["empty"] == {"changed": False, "failed": False, "skipped": True,
                                  "skip_reason": "No items in the list",
                                  "skipped_reason": "No items in the list", "results": []}
    assert r.done()[0]["status"] == "skipped"


def test_register_holds_previous_item_during_loop(tmp_path):
    """L2.7: while the loop runs, the register holds the previous item's result."""
    r = run_text(tmp_path, play("""
    - command: echo {{ item }}
      loop: [a, b, c]
      register: r
      when: r.stdout | default('') != 'a'
"""))
    statuses = [e["status"] for e in r.events if e["e"] == "item"]
    assert statuses == ["ok", "skipped", "ok"]


def test_skipped_task_overwrites_register(tmp_path):
    r = run_text(tmp_path, play("""
    - debug: msg=first
      register: shared
    - debug: msg=second
      register: shared
      when: false
"""))
    assert r.runtime["shared"] == {"changed": False, "failed": False, "skipped": True,
                                   "false_condition": False,
                                   "skip_reason": "Conditional result was False"}


def test_failed_when_and_changed_when_see_the_register(tmp_path):
    r = run_text(tmp_path, play("""
    - shell: exit 3
      register: r1
      failed_when: r1.rc not in [0, 3]
      changed_when: r1.rc == 0
    - debug: msg="rc was {{ r1.rc }}"
"""))
    first = r.done()[0]
    assert first["status"] == "ok"
    assert first["result"]["failed_when_result"] is False
    assert first["result"]["changed"] is False
    assert r.done()[1]["result"]["msg"] == "rc was 3"


def test_ignore_errors_continues_and_registers_failure(tmp_path):
    r = run_text(tmp_path, play("""
    - command: /bin/false
      register: bad
      ignore_errors: true
    - debug: msg="after {{ bad.failed }}"
"""))
    assert r.done()[0]["status"] == "failed" and r.done()[0]["ignored"] is True
    assert r.done()[1]["result"]["msg"] == "after True"
    assert r.status == "ok"


def test_failure_stops_the_host(tmp_path):
    r = run_text(tmp_path, play("""
    - fail: msg=boom
    - debug: msg=never
"""))
    assert r.names() == ["fail"]
    assert r.status == "failed"


def test_rescue_sees_failed_task_and_always_runs(tmp_path):
    r = run_text(tmp_path, play("""
    - block:
        - name: inblock
          fail: msg=blockfail
        - name: not reached
          debug: msg=no
      rescue:
        - name: resc
          debug: msg="rescued {{ ansible_failed_task.name }} {{ ansible_failed_result.msg }}"
      always:
        - name: alw
          debug: msg=always
    - name: last
      debug: msg=last
"""))
    assert r.names() == ["inblock", "resc", "alw", "last"]
    inblock = r.result_of("inblock")
    assert inblock["status"] == "failed" and inblock["rescued"] is True
    assert r.result_of("resc")["result"]["msg"] == "rescued inblock blockfail"
    assert r.status == "ok"


def test_unrescued_failure_runs_always_then_fails_host(tmp_path):
    r = run_text(tmp_path, play("""
    - block:
        - fail: msg=x
      always:
        - name: alw
          debug: msg=always
    - name: after
      debug: msg=no
"""))
    assert r.names() == ["fail", "alw"]
    assert r.result_of("fail")["rescued"] is False
    assert r.status == "failed"


def test_nested_failure_in_inner_rescue_is_counted_rescued(tmp_path):
    """L4.3: both failures are 'rescued' while the outer block has a rescue."""
    r = run_text(tmp_path, play("""
    - block:
        - block:
            - name: inner
              fail: msg=one
          rescue:
            - name: inner rescue
              fail: msg=two
      rescue:
        - name: outer rescue
          debug: msg="{{ ansible_failed_task.name }}"
"""))
    done = r.done()
    assert [d["rescued"] for d in done[:2]] == [True, True]
    assert r.result_of("outer rescue")["result"]["msg"] == "inner rescue"
    assert r.status == "ok"


def test_block_when_is_re_evaluated_per_task(tmp_path):
    """L2.1 (e4g): set_fact inside the block makes the block's when false."""
    r = run_text(tmp_path, play("""
    - block:
        - set_fact: x=1
        - name: second
          debug: msg=no
      when: x is not defined
"""))
    assert [d["status"] for d in r.done()] == ["ok", "skipped"]


def test_set_fact_keys_do_not_see_each_other(tmp_path):
    r = run_text(tmp_path, play("""
    - set_fact:
        a1: one
        a2: "{{ a1 | default('undef-at-time') }}"
    - debug: msg="{{ a1 }} {{ a2 }}"
"""))
    assert r.done()[1]["result"]["msg"] == "one undef-at-time"


def test_set_fact_beats_task_vars_and_extra_vars_beat_set_fact(tmp_path):
    r = run_text(tmp_path, play("""
    - set_fact: pv=fact ev=fact
    - debug: msg="{{ pv }} {{ ev }}"
      vars:
        pv: taskvar
"""), extra={"ev": "extra"})
    assert r.done()[1]["result"]["msg"] == "fact extra"


def test_undefined_variable_fails_with_ansibles_message(tmp_path):
    r = run_text(tmp_path, play("""
    - debug: msg="{{ nosuchvar }}"
"""))
    assert r.done()[0]["status"] == "failed"
    assert "'nosuchvar' is undefined" in r.done()[0]["result"]["msg"]


def test_undefined_in_when_fails_the_task(tmp_path):
    r = run_text(tmp_path, play("""
    - debug: msg=x
      when: nosuchvar
"""))
    result = r.done()[0]["result"]
    assert result["failed"] is True and "'nosuchvar' is undefined" in result["msg"]


def test_undefined_loop_with_false_when_is_skipped(tmp_path):
    r = run_text(tmp_path, play("""
    - debug: msg=x
      loop: "{{ nosuchlist }}"
      when: false
"""))
    assert r.done()[0]["status"] == "skipped"


def test_native_values_survive_templating(tmp_path):
    r = run_text(tmp_path, play("""
    - set_fact:
        nums: "{{ [1, 2] + [3] }}"
    - debug: msg="{{ nums | sum }}"
"""))
    assert r.runtime["nums"] == [1, 2, 3]
    assert r.done()[1]["result"]["msg"] == 6


def test_handlers_run_in_definition_order_once_at_end(tmp_path):
    r = run_text(tmp_path, play("""
    - command: "true"
      notify: [HB, HA]
    - command: "true"
      notify: HA
""", handlers="""
    - name: HA
      debug: msg=a
    - name: HB
      debug: msg=b
    - name: HC
      debug: msg=c
"""))
    assert r.names()[-2:] == ["HA", "HB"]
    notifies = [e["handler"] for e in r.events if e["e"] == "notify"]
    assert notifies == [1, 0]  # notification order: HB, HA


def test_unchanged_or_failed_results_do_not_notify(tmp_path):
    r = run_text(tmp_path, play("""
    - debug: msg=unchanged
      notify: H
    - command: /bin/false
      ignore_errors: true
      notify: H
""", handlers="""
    - name: H
      debug: msg=h
"""))
    assert "H" not in r.names()


def test_listen_topic_runs_every_listener(tmp_path):
    r = run_text(tmp_path, play("""
    - command: "true"
      notify: topic
""", handlers="""
    - name: L1
      debug: msg=1
      listen: topic
    - name: L2
      debug: msg=2
      listen: topic
"""))
    assert r.names()[-2:] == ["L1", "L2"]


def test_explicit_flush_runs_handlers_midway(tmp_path):
    r = run_text(tmp_path, play("""
    - command: "true"
      notify: H
    - meta: flush_handlers
    - name: after
      debug: msg=after
""", handlers="""
    - name: H
      debug: msg=h
"""))
    assert r.names() == ["command", "meta", "H", "after"]


def test_until_retries_and_attempts(tmp_path):
    counter = tmp_path / "n"
    r = run_text(tmp_path, play(f"""
    - shell: echo x >> {counter}; wc -l < {counter}
      register: out
      until: out.stdout | int >= 3
      retries: 5
      delay: 0
"""))
    assert r.runtime["out"]["attempts"] == 3
    assert len([e for e in r.events if e["e"] == "retry"]) == 2


def test_until_exhaustion_reports_attempts_equal_to_retries(tmp_path):
    """L3.1: retries: 2 runs the module 3 times and reports attempts 2."""
    r = run_text(tmp_path, play("""
    - command: /bin/false
      register: out
      until: out.rc == 0
      retries: 2
      delay: 0
      ignore_errors: true
"""))
    assert r.runtime["out"]["attempts"] == 2
    assert r.runtime["out"]["failed"] is True
    assert len([e for e in r.events if e["e"] == "retry"]) == 2


@pytest.mark.parametrize("per_task", [False, True])
def test_batches_resume_inside_blocks(tmp_path, per_task):
    """Cutting a block between batches does not change what a host does."""
    r = run_text(tmp_path, play("""
    - block:
        - name: a
          fail: msg=x
        - name: b
          debug: msg=no
      rescue:
        - name: r1
          debug: msg=r1
        - name: r2
          debug: msg=r2
      always:
        - name: w
          debug: msg=w
    - name: z
      debug: msg=z
"""), per_task=per_task)
    assert r.names() == ["a", "r1", "r2", "w", "z"]
    assert r.status == "ok"
    if per_task:
        assert r.calls > 1


def test_no_log_censors_events_but_keeps_register(tmp_path):
    r = run_text(tmp_path, play("""
    - command: echo s3cret
      register: out
      no_log: true
"""))
    event = r.done()[0]["result"]
    assert "s3cret" not in repr(event)
    assert "censored" in event
    assert r.runtime["out"]["stdout"] == "s3cret"


def test_check_mode_skips_commands(tmp_path):
    r = run_text(tmp_path, play("""
    - command: touch {0}/made
""".format(tmp_path)), check=True)
    assert r.done()[0]["status"] == "skipped"
    assert not (tmp_path / "made").exists()


def test_end_host_stops_only_this_host_without_failing(tmp_path):
    r = run_text(tmp_path, play("""
    - meta: end_host
    - name: after
      debug: msg=no
"""))
    assert "after" not in r.names()
    assert r.status == "ended"


def test_registered_output_is_never_templated_again(tmp_path):
    r = run_text(tmp_path, play("""
    - command: echo '{{ '{{' }} secret_var {{ '}}' }}'
      register: out
    - debug: msg="{{ out.stdout }}"
"""))
    assert r.done()[1]["result"]["msg"] == "{{ secret_var }}"


@pytest.mark.parametrize("per_task", [False, True])
def test_a_skipped_include_is_never_reached_even_across_batches(tmp_path, per_task):
    (tmp_path / "inc.yml").write_text("- name: inside\n  debug: msg=in\n- name: inside two\n  debug: msg=in2\n")
    r = run_text(tmp_path, play("""
    - include_tasks: inc.yml
      when: inventory_hostname == 'other'
    - name: after
      debug: msg=after
"""), per_task=per_task)
    assert r.names() == ["include_tasks", "after"]
    assert r.done()[0]["status"] == "skipped"


def test_include_parameters_beat_set_fact_inside_the_include(tmp_path):
    (tmp_path / "inc.yml").write_text("- set_fact: p=fact\n- name: inside\n  debug: msg={{ p }}\n")
    r = run_text(tmp_path, play("""
    - include_tasks: inc.yml
      vars:
        p: param
    - name: outside
      debug: msg={{ p }}
"""))
    assert r.result_of("inside")["result"]["msg"] == "param"   # L6.3
    assert r.result_of("outside")["result"]["msg"] == "fact"


def test_force_handlers_runs_handlers_of_a_host_that_failed(tmp_path):
    r = run_text(tmp_path, """
- hosts: all
  gather_facts: false
  force_handlers: true
  tasks:
    - command: "true"
      notify: H
    - fail: msg=down
    - name: never
      debug: msg=x
  handlers:
    - name: H
      debug: msg=handled
""")
    assert r.names() == ["command", "fail", "H"]
    assert r.status == "failed"


def test_without_force_handlers_a_failed_host_loses_its_handlers(tmp_path):
    r = run_text(tmp_path, """
- hosts: all
  gather_facts: false
  tasks:
    - command: "true"
      notify: H
    - fail: msg=down
  handlers:
    - name: H
      debug: msg=handled
""")
    assert r.names() == ["command", "fail"]


@pytest.mark.parametrize("per_task", [False, True])
def test_end_role_skips_the_rest_of_the_role_only(tmp_path, per_task):
    role = tmp_path / "roles" / "r1" / "tasks"
    role.mkdir(parents=True)
    (role / "main.yml").write_text(
        "- name: first\n  debug: msg=1\n- meta: end_role\n- name: second\n  debug: msg=2\n")
    r = run_text(tmp_path, "- hosts: all\n  gather_facts: false\n  roles: [r1]\n"
                           "  tasks:\n    - name: after\n      debug: msg=after\n", per_task=per_task)
    assert [n for n in r.names() if not n.endswith("meta")] == ["r1 : first", "after"]
