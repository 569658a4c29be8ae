"""Every barrier, run for real over SSH with several hosts, behaves like linear."""
from __future__ import annotations

import re
import time

import pytest

from tests.integration.test_end_to_end import UNREACHABLE_HOST, ioc_run

pytestmark = pytest.mark.integration


@pytest.fixture
def web(sshd) -> str:
    return sshd.inventory_ini(["h1", "h2", "h3"], group="web")


def oks(run, task):
    return [(e["host"], e["result"].get("msg")) for e in run.of("runner_ok") if e["task"] == task]


def test_run_once_runs_on_the_first_host_and_every_host_sees_its_result(tmp_path, web):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - name: once
              command: echo ran on {{ inventory_hostname }}
              register: once
              run_once: true
            - name: all see it
              debug: msg="{{ once.stdout }}"
        """, inventory=web)
    assert r.rc == 0, r.stdout + r.stderr
    assert [e["host"] for e in r.events if e.get("task") == "once" and e["event"] == "runner_ok"] == ["h1"]
    assert oks(r, "all see it") == [("h1", "ran on h1"), ("h2", "ran on h1"), ("h3", "ran on h1")]
    assert r.recap["h2"]["ok"] == 1  # stats only for the host that ran it (L7.1)


def test_run_once_when_is_evaluated_on_the_first_host_only(tmp_path, web):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - name: once
              debug: msg=x
              run_once: true
              when: inventory_hostname == 'h2'
        """, inventory=web)
    assert [(e["event"], e["host"]) for e in r.events if e.get("task") == "once"
            and e["event"].startswith("runner_") and e["event"] != "runner_start"] == [("runner_skipped", "h1")]


def test_a_failed_run_once_fails_every_host(tmp_path, web):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - name: once
              fail: msg=nope
              run_once: true
            - name: after
              debug: msg=x
        """, inventory=web)
    assert r.rc == 2
    assert oks(r, "after") == []
    assert set(r.recap) == {"h1"}  # the others have no stats at all (e7b)


def test_delegate_to_localhost_runs_between_batches_in_order(tmp_path, web):
    marker = tmp_path / "order.log"
    r = ioc_run(tmp_path, f"""
        - hosts: web
          gather_facts: false
          tasks:
            - name: before
              shell: echo "before {{{{ inventory_hostname }}}}" >> {marker}
            - name: on the controller
              shell: echo "delegated {{{{ inventory_hostname }}}}" >> {marker}
              delegate_to: localhost
            - name: after
              shell: echo "after {{{{ inventory_hostname }}}}" >> {marker}
        """, inventory=web)
    assert r.rc == 0, r.stdout + r.stderr
    lines = marker.read_text().split("\n")[:-1]
    phases = [line.split()[0] for line in lines]
    assert phases == ["before"] * 3 + ["delegated"] * 3 + ["after"] * 3
    assert "changed: [h1 -> localhost]" in r.stdout


def test_delegated_results_belong_to_the_inventory_host(tmp_path, web):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - name: on h3
              command: echo "{{ inventory_hostname }}"
              delegate_to: h3
              register: d
            - name: show
              debug: msg="{{ d.stdout }}"
        """, inventory=web)
    assert r.rc == 0, r.stdout + r.stderr
    assert oks(r, "show") == [("h1", "h1"), ("h2", "h2"), ("h3", "h3")]
    assert "changed: [h1 -> h3(127.0.0.1)]" in r.stdout


def test_delegate_facts_go_to_the_delegate(tmp_path, web):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - name: facts for h3
              set_fact: ignored=1
            - setup:
                filter: ansible_hostname
              delegate_to: h3
              delegate_facts: true
              run_once: true
        - hosts: h3
          gather_facts: false
          tasks:
            - name: h3 has facts
              debug: msg="{{ ansible_hostname is defined }}"
        """, inventory=web)
    assert r.rc == 0, r.stdout + r.stderr
    assert oks(r, "h3 has facts") == [("h3", True)]


def test_any_errors_fatal_stops_every_host_after_the_failing_task(tmp_path, web):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          any_errors_fatal: true
          tasks:
            - name: fails on h2
              fail: msg=down
              when: inventory_hostname == 'h2'
            - name: never
              debug: msg=x
        - hosts: web
          gather_facts: false
          tasks:
            - name: next play
              debug: msg=y
        """, inventory=web)
    assert r.rc == 2
    assert oks(r, "never") == [] and oks(r, "next play") == []
    assert r.recap["h1"]["failures"] == 0 and r.recap["h1"]["skipped"] == 1  # stopped, not failed
    assert r.recap["h2"]["failures"] == 1


def test_any_errors_fatal_sends_hosts_in_a_rescued_block_to_the_rescue(tmp_path, web):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - block:
                - name: first
                  fail: msg=x
                  when: inventory_hostname == 'h1'
                - name: second
                  debug: msg=never
              rescue:
                - name: rescue
                  debug: msg=rescued
              always:
                - name: always
                  debug: msg=always
              any_errors_fatal: true
            - name: after
              debug: msg=on
        """, inventory=web)
    assert r.rc == 0, r.stdout + r.stderr
    assert oks(r, "second") == []
    assert [h for h, _ in oks(r, "rescue")] == ["h1", "h2", "h3"]
    assert [h for h, _ in oks(r, "after")] == ["h1", "h2", "h3"]
    assert r.recap["h1"]["rescued"] == 1 and r.recap["h2"]["rescued"] == 0


def test_max_fail_percentage_aborts_when_exceeded(tmp_path, sshd):
    inventory = sshd.inventory_ini(["h1", "h2", "h3", "h4"], group="web")
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          max_fail_percentage: 25
          tasks:
            - name: one fails
              fail: msg=x
              when: inventory_hostname == 'h1'
            - name: second fails
              fail: msg=y
              when: inventory_hostname == 'h2'
            - name: never
              debug: msg=z
        """, inventory=inventory)
    assert r.rc == 2
    assert [h for h, _ in oks(r, "second fails")] == []  # 1/4 is not > 25%: the play went on
    assert [e["host"] for e in r.events if e.get("task") == "second fails" and e["event"] == "runner_skipped"] == ["h3", "h4"]
    assert oks(r, "never") == []
    assert r.stdout.count("NO MORE HOSTS LEFT") == 2
    assert r.recap["h3"]["failures"] == 0


def test_serial_runs_the_play_per_batch_of_hosts(tmp_path, sshd):
    inventory = sshd.inventory_ini(["h1", "h2", "h3", "h4"], group="web")
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          serial: [1, 2]
          tasks:
            - name: t
              debug: msg="{{ ansible_play_batch }}"
        """, inventory=inventory)
    assert r.rc == 0, r.stdout + r.stderr
    assert len(r.of("play_start")) == 3
    assert [m for _, m in oks(r, "t")] == [["h1"], ["h2", "h3"], ["h2", "h3"], ["h4"]]


def test_add_host_makes_a_new_host_for_later_plays(tmp_path, sshd, web):
    new = sshd.inventory_ini(["newhost"]).split(None, 1)[1].strip()
    args = " ".join(new.split(" ansible_ssh_common_args=")[0].split())
    common = new.split(" ansible_ssh_common_args=")[1].split(" ansible_python_interpreter=")[0]
    r = ioc_run(tmp_path, f"""
        - hosts: web
          gather_facts: false
          tasks:
            - name: add it
              add_host: name=newhost groups=added {args} ansible_ssh_common_args={common}
            - name: groups now
              debug: msg="{{{{ groups['added'] }}}}"
        - hosts: added
          gather_facts: false
          tasks:
            - name: on the new host
              command: echo {{{{ inventory_hostname }}}}
        """, inventory=web)
    assert r.rc == 0, r.stdout + r.stderr
    assert [e["host"] for e in r.of("runner_ok") if e["task"] == "add it"] == ["h1"]
    assert oks(r, "groups now") == [("h1", ["newhost"]), ("h2", ["newhost"]), ("h3", ["newhost"])]
    assert [e["host"] for e in r.of("runner_ok") if e["task"] == "on the new host"] == ["newhost"]


def test_group_by_groups_are_visible_to_later_tasks(tmp_path, web):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - group_by: key="kind_{{ 'odd' if inventory_hostname in ['h1', 'h3'] else 'even' }}"
            - name: show
              debug: msg="{{ groups['kind_odd'] }}"
        """, inventory=web)
    assert r.rc == 0, r.stdout + r.stderr
    assert oks(r, "show")[0] == ("h1", ["h1", "h3"])


def test_pause_blocks_every_host_once(tmp_path, web):
    started = time.monotonic()
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - pause: seconds=1
            - name: after
              debug: msg=x
        """, inventory=web)
    assert r.rc == 0, r.stdout + r.stderr
    assert time.monotonic() - started >= 1
    assert [e["host"] for e in r.of("runner_ok") if e["task"] == "pause"] == ["h1"]


def test_end_play_ends_the_play_for_every_host(tmp_path, web):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - meta: end_play
            - name: never
              debug: msg=x
        - hosts: web
          gather_facts: false
          tasks:
            - name: next play
              debug: msg=y
        """, inventory=web)
    assert r.rc == 0, r.stdout + r.stderr
    assert oks(r, "never") == []
    assert [h for h, _ in oks(r, "next play")] == ["h1", "h2", "h3"]


def test_end_play_when_is_evaluated_on_the_first_host_only(tmp_path, web):
    """L7.10 (e7e): the condition is false for h1, so the play goes on."""
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - meta: end_play
              when: inventory_hostname == 'h2'
            - name: continues
              debug: msg=x
        """, inventory=web)
    assert [h for h, _ in oks(r, "continues")] == ["h1", "h2", "h3"]


def test_clear_host_errors_makes_the_exit_code_zero(tmp_path, web):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - fail: msg=x
              when: inventory_hostname == 'h1'
            - meta: clear_host_errors
            - name: rest of the play
              debug: msg=x
        - hosts: web
          gather_facts: false
          tasks:
            - name: next play
              debug: msg=x
        """, inventory=web)
    assert r.rc == 0, r.stdout + r.stderr
    assert r.recap["h1"]["failures"] == 1
    # Forgiven, not revived: out of this play, back in the next (L7.10).
    assert [h for h, _ in oks(r, "rest of the play")] == ["h2", "h3"]
    assert [h for h, _ in oks(r, "next play")] == ["h1", "h2", "h3"]


def test_a_forgiven_host_that_fails_again_in_a_later_play_fails_the_run(tmp_path, web):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - fail: msg=first
              when: inventory_hostname == 'h1'
            - meta: clear_host_errors
        - hosts: web
          gather_facts: false
          tasks:
            - fail: msg=again
              when: inventory_hostname == 'h1'
        """, inventory=web)
    assert r.rc == 2, r.stdout + r.stderr
    assert r.recap["h1"]["failures"] == 2


def test_reset_connection_gives_the_next_task_a_new_runner(tmp_path, web):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - shell: echo $PPID
              register: before
            - meta: reset_connection
            - shell: echo $PPID
              register: after
            - name: compare
              debug: msg="{{ before.stdout != after.stdout }}"
        """, inventory=web)
    assert r.rc == 0, r.stdout + r.stderr
    assert [m for _, m in oks(r, "compare")] == [True, True, True]


def test_throttle_limits_hosts_in_flight(tmp_path, web):
    log = tmp_path / "overlap.log"
    r = ioc_run(tmp_path, f"""
        - hosts: web
          gather_facts: false
          tasks:
            - name: one at a time
              shell: echo start >> {log}; sleep 0.3; echo stop >> {log}
              throttle: 1
        """, inventory=web)
    assert r.rc == 0, r.stdout + r.stderr
    assert log.read_text().split() == ["start", "stop"] * 3


def test_include_tasks_runs_for_the_hosts_whose_include_ran(tmp_path, web):
    (tmp_path / "inc.yml").write_text("- name: inside\n  debug: msg=in\n")
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - include_tasks: inc.yml
              when: inventory_hostname != 'h2'
            - name: after
              debug: msg=x
        """, inventory=web)
    assert r.rc == 0, r.stdout + r.stderr
    assert "included: %s for h1, h3" % (tmp_path / "inc.yml") in r.stdout
    assert [h for h, _ in oks(r, "inside")] == ["h1", "h3"]  # h2 never reaches it (L7.8)
    assert r.recap["h1"]["ok"] == 3 and r.recap["h2"]["skipped"] == 1


def test_reading_another_hosts_registered_value_sees_it_as_of_the_step(tmp_path, web):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - command: echo "from {{ inventory_hostname }}"
              register: out
            - name: read h1's
              debug: msg="{{ hostvars['h1'].out.stdout }} / {{ groups['web'] | map('extract', hostvars, 'inventory_hostname') | list }}"
        """, inventory=web)
    assert r.rc == 0, r.stdout + r.stderr
    assert [m for _, m in oks(r, "read h1's")] == ["from h1 / ['h1', 'h2', 'h3']"] * 3


def test_ignore_unreachable_keeps_the_host_until_a_task_without_it(tmp_path, sshd):
    inventory = sshd.inventory_ini(["h1"], group="web")
    inventory += UNREACHABLE_HOST
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - name: tolerant
              command: "true"
              ignore_unreachable: true
            - name: strict
              command: "true"
            - name: after
              debug: msg=x
        """, inventory=inventory)
    assert r.rc == 4, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("fatal: [ghost]: UNREACHABLE!"))
    assert lines[first + 1] == "...ignoring"
    assert [e["host"] for e in r.of("runner_unreachable") if e["task"] == "strict"] == ["ghost"]
    assert [h for h, _ in oks(r, "after")] == ["h1"]
    assert r.recap["ghost"] == {"ok": 1, "changed": 0, "unreachable": 1, "failures": 0,
                                "skipped": 0, "rescued": 0, "ignored": 1}


def test_a_pause_prompt_without_a_terminal_is_a_clear_error(tmp_path, web):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - pause: prompt="Continue?"
        """, inventory=web)
    assert r.rc == 2
    assert "standard input is not a terminal" in r.stdout


def test_dynamic_includes_run_each_hosts_file_group_after_group(tmp_path, web):
    """L7.8 over SSH: per-host files, a looped include, a failure reaching the rescue."""
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "even.yml").write_text(
        "- name: even task\n  command: echo even {{ inventory_hostname }}\n  register: said\n")
    (tasks / "odd.yml").write_text(
        "- name: odd task\n  command: echo odd {{ inventory_hostname }}\n  register: said\n"
        "- name: odd fails on h3\n  command: /bin/false\n  when: inventory_hostname == 'h3'\n")
    (tasks / "item.yml").write_text(
        "- name: item task\n  debug: msg=\"{{ inventory_hostname }} {{ item }}\"\n")
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - block:
                - name: per-host file
                  include_tasks:
                    file: "tasks/{{ 'even' if inventory_hostname == 'h2' else 'odd' }}.yml"
              rescue:
                - name: rescued
                  debug: msg="rescued {{ ansible_failed_task.name }}"
            - name: looped
              include_tasks: tasks/item.yml
              loop: [a, b]
            - name: what the include registered
              debug: msg="{{ said.stdout }}"
        """, inventory=web)
    assert r.rc == 0, r.stdout + r.stderr
    includes = [(e["path"].rsplit("/", 1)[-1], e["hosts"], e.get("item")) for e in r.of("include")]
    assert includes == [("odd.yml", ["h1", "h3"], None), ("even.yml", ["h2"], None),
                        ("item.yml", ["h1", "h2", "h3"], "a"), ("item.yml", ["h1", "h2", "h3"], "b")]
    # The odd group's tasks run before the even group's, each only on its hosts.
    steps = [e["name"] for e in r.of("task_start")]
    assert steps.index("odd task") < steps.index("odd fails on h3") < steps.index("even task")
    assert oks(r, "rescued") == [("h3", "rescued odd fails on h3")]
    assert oks(r, "item task") == [(h, "%s %s" % (h, i)) for i in "ab" for h in ("h1", "h2", "h3")]
    assert oks(r, "what the include registered") == [
        ("h1", "odd h1"), ("h2", "even h2"), ("h3", "odd h3")]
    assert r.recap["h3"]["rescued"] == 1 and r.recap["h3"]["failures"] == 0
    # ok per host: 1 per included file (3) + its included tasks + the debug.
    assert r.recap["h2"]["ok"] == 3 + 1 + 2 + 1


@pytest.mark.parametrize("order, expected", [
    ("reverse_sorted", ["h3", "h2", "h1"]),
    ("reverse_inventory", ["h3", "h2", "h1"]),
    ("sorted", ["h1", "h2", "h3"]),
])
def test_play_order_sets_the_host_order_of_every_step_and_serial_batch(tmp_path, web, order,
                                                                          expected):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          order: %s
          serial: 2
          tasks:
            - name: who
              debug: msg="{{ ansible_play_batch }} {{ ansible_play_hosts_all }}"
        """ % order, inventory=web)
    assert r.rc == 0, r.stdout + r.stderr
    assert [e["host"] for e in r.of("runner_ok")] == expected
    # The batch in play order; every host of the play in inventory order (as ansible-core).
    assert [e["result"]["msg"] for e in r.of("runner_ok")] == \
        ["%s ['h1', 'h2', 'h3']" % b for b in [expected[:2]] * 2 + [expected[2:]]]


def test_order_shuffle_runs_every_host_once(tmp_path, web):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          order: shuffle
          tasks:
            - debug: msg=x
        """, inventory=web)
    assert r.rc == 0, r.stdout + r.stderr
    assert sorted(e["host"] for e in r.of("runner_ok")) == ["h1", "h2", "h3"]


def test_a_templated_run_once_follows_the_first_hosts_value(tmp_path, sshd):
    """run_once: "{{ x }}" is templated with the first active host's variables."""
    inventory = sshd.inventory_ini(["h1", "h2", "h3"], group="web")
    inventory += "\n[web:vars]\nonce_flag=false\n[first]\nh1 once_flag=true\n"
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - name: once if the first host says so
              command: echo {{ inventory_hostname }}
              register: said
              run_once: "{{ once_flag | bool }}"
            - name: every host sees h1's result
              debug: msg="{{ said.stdout }}"
            - name: not once when the first host says no
              command: echo {{ inventory_hostname }}
              run_once: "{{ inventory_hostname != 'h1' }}"
        """, inventory=inventory)
    assert r.rc == 0, r.stdout + r.stderr
    ran = [e["host"] for e in r.of("runner_ok") if e["task"] == "once if the first host says so"]
    assert ran == ["h1"]
    assert oks(r, "every host sees h1's result") == [("h1", "h1"), ("h2", "h1"), ("h3", "h1")]
    assert [e["host"] for e in r.of("runner_ok")
            if e["task"] == "not once when the first host says no"] == ["h1", "h2", "h3"]


def test_a_run_once_handler_runs_on_the_first_notified_host_only(tmp_path, web):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - name: notify from h2 and h3
              command: echo x
              notify: [once, every]
              when: inventory_hostname != 'h1'
            - name: after
              debug: msg=after
          handlers:
            - name: once
              command: echo {{ inventory_hostname }}
              run_once: true
            - name: every
              debug: msg="{{ inventory_hostname }}"
        """, inventory=web)
    assert r.rc == 0, r.stdout + r.stderr
    assert [e["host"] for e in r.of("runner_ok") if e["task"] == "once"] == ["h2"]
    assert oks(r, "every") == [("h2", "h2"), ("h3", "h3")]
    assert r.recap["h3"]["ok"] == 3 and r.recap["h2"]["ok"] == 4  # once counts on h2 only


def test_delegate_to_the_loop_item_runs_each_item_on_its_delegate(tmp_path, web):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - name: per item
              command: echo {{ inventory_hostname }} item {{ item }}
              delegate_to: "{{ item }}"
              loop: [h3, h1]
              register: r
            - name: registered
              debug: msg="{{ r.results | map(attribute='stdout') | join(',') }}"
        """, inventory=web)
    assert r.rc == 0, r.stdout + r.stderr
    assert "changed: [h1 -> h3(127.0.0.1)] => (item=h3)" in r.stdout, r.stdout
    assert "changed: [h2 -> h1(127.0.0.1)] => (item=h1)" in r.stdout, r.stdout
    assert oks(r, "registered") == [(h, "%s item h3,%s item h1" % (h, h)) for h in ("h1", "h2", "h3")]
    items = [(e["host"], e["result"]["item"]) for e in r.of("runner_item_ok")]
    assert items == [(h, i) for h in ("h1", "h2", "h3") for i in ("h3", "h1")]


def test_a_host_that_skips_a_delegated_task_goes_on_in_its_batch(tmp_path, sshd):
    """ioc-run keeps a task that is a controller step only because of its
    ``delegate_to`` inside its batch when the runner decides its ``when``:
    the hosts it skips go on in the same call, the hosts that reach it (and
    h2, h1's delegate in task 4) stop, the controller runs it on their
    delegates, and they go on (issue 11, item 3; the console against
    linear: tests/conformance/playbooks/delegate_suspension.yml)."""
    from tests.ansible.test_mitogen_batch import DELEGATING_PLAY
    out = tmp_path / "out"
    out.mkdir()
    r = ioc_run(tmp_path, DELEGATING_PLAY, "-vvvv", "-e", "out_dir=%s" % out,
                inventory=sshd.inventory_ini(["h1", "h2"], group="web"))
    assert r.rc == 2, r.stdout + r.stderr
    assert oks(r, "debug")[-3:] == [("h1", "h1: skipped, found True"),
                                    ("h2", "h2: native-h2 on the controller, found True"),
                                    ("h2", "h2 goes on")]
    assert ("h2", "rescued: failed for h2") in oks(r, "debug")
    assert r.recap["h1"]["failures"] == 1 and r.recap["h2"]["rescued"] == 1, r.recap
    assert re.findall(r"INFO (Batch \d+-\d+ on \d+ host\(s\))", r.stderr) == [
        "Batch 1-12 on 2 host(s)"], r.stderr
    assert re.findall(r"DelegateStep \d+ on \d+ host\(s\)", r.stderr) == [
        "DelegateStep 3 on 1 host(s)", "DelegateStep 4 on 2 host(s)",
        "DelegateStep 6 on 1 host(s)", "DelegateStep 7 on 1 host(s)",
        "DelegateStep 11 on 1 host(s)"], r.stderr
    # One runner call per host for the batch, one per delegated run (on the
    # delegate's connection), one per host that goes on after one; the
    # plan before made 4 batches and 6 delegate steps of it (19 runner calls).
    assert r.calls == {"h1": 3, "h2": 6, "localhost": 4}, r.calls
