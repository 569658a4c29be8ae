"""Focused tests for the differences the real-world roles showed (one per cause).

Each reproduces, on a local two-task play, what a vendored role did
differently under mitogen_batch than under linear; see docs/realworld.md.
"""
from __future__ import annotations

import pytest

from tests.ansible.test_mitogen_batch import Result, ansible, ansible_python, \
    local_inventory  # noqa: F401 (fixtures)

pytestmark = pytest.mark.integration

#: A collection beside the playbook whose ``old_ping`` is a deprecated name
#: of ``ansible.builtin.ping``, as community.mysql.mysql_user now is of
#: ansible.mysql.mysql_user (geerlingguy.mysql's tasks use such names).
RUNTIME = """
plugin_routing:
  modules:
    old_ping:
      redirect: ansible.builtin.ping
      deprecation:
        removal_version: "9.0.0"
        warning_text: Use ansible.builtin.ping instead.
"""


def assert_same_output(linear: Result, batch: Result) -> None:
    """stdout, stderr and exit code equal, ansible-core's own strategy warning aside.

    (Both print "Deprecation warnings can be disabled ..." once when any
    deprecation is shown: the third-party strategy's is one.)
    """
    assert batch.without_ansible_warnings(batch.stderr) == \
        linear.without_ansible_warnings(linear.stderr)
    assert batch.without_ansible_warnings() == linear.stdout
    assert batch.rc == linear.rc


def test_an_include_no_host_reaches_shows_no_warnings_of_its_file(ansible, ansible_python):
    """geerlingguy.nginx on Debian: its Ubuntu file's ``apt_repository`` warned.

    mitogen_batch loads an ``include_tasks`` file with a plain name when it
    converts the play (the tasks join the batch); loading it displayed the
    file's deprecated module names at once, where linear loads the file,
    and warns, only when a host includes it. The warnings now wait for the
    include's results.
    """
    ansible.write("collections/ansible_collections/ioc/legacy/meta/runtime.yml", RUNTIME)
    ansible.write("other_os.yml", """
        - name: a deprecated module name
          ioc.legacy.old_ping:
        """)
    for reaches, count in (("nobody", 0), ("h2", 1)):
        ansible.write("play.yml", """
            - hosts: web
              gather_facts: false
              tasks:
                - include_tasks: other_os.yml
                  when: inventory_hostname == '%s'
                - command: "true"
            """ % reaches)
        inventory = str(ansible.write("hosts", local_inventory(ansible.python)))
        linear, batch = ansible.both("play.yml", inventory)
        assert linear.stderr.count("ioc.legacy.old_ping has been deprecated") == count, \
            linear.stderr
        assert_same_output(linear, batch)
        assert batch.through_ansible == [] and len(batch.steps) == 1, batch.log


#: Inputs for the ``comment`` filter: the styles, a multi-line text, the keywords.
COMMENT_CASES = [
    ["Ansible managed", "plain", {}],
    ["line one\nline two\n\nafter a blank", "plain", {}],
    ["a\nb", "erlang", {}],
    ["a\nb", "c", {}],
    ["a\nb", "cblock", {}],
    ["a\nb", "xml", {}],
    ["x", "plain", {"decoration": "; "}],
    ["x", "plain", {"prefix_count": 2, "postfix_count": 0}],
    ["x", "c", {"beginning": "BEGIN", "end": "END", "prefix": "\n"}],
    ["x\ny", "plain", {"newline": "\r\n"}],
]


def test_the_comment_filter_is_ansibles(ansible_python):
    """Every template with ``{{ ansible_managed | comment }}`` differed.

    The runner's ``comment`` put ``# `` before each line; Ansible's frames
    the text with a prefix and a postfix line (``#``) and knows five styles
    and their keywords. Same inputs, same strings, Ansible's own filter as
    the reference.
    """
    import json
    import subprocess

    from ioc.agentless_runner.filters import comment

    script = ("import json, sys\n"
              "from ansible.plugins.filter.core import comment\n"
              "print(json.dumps([comment(t, s, **k) for t, s, k in json.load(sys.stdin)]))\n")
    r = subprocess.run([ansible_python, "-c", script], input=json.dumps(COMMENT_CASES),
                       capture_output=True, text=True, timeout=120, check=True)
    assert [comment(t, s, **k) for t, s, k in COMMENT_CASES] == json.loads(r.stdout)


def test_a_template_with_ansible_managed_comment_is_written_as_linear_writes_it(
        ansible, ansible_python, tmp_path):
    ansible.write("motd.j2", "{{ ansible_managed | comment }}\n{{ 'a\\nb' | comment('c') }}\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - template:
                src: motd.j2
                dest: "%s/{{ strategy }}-{{ inventory_hostname }}"
        """ % tmp_path)
    inventory = str(ansible.write("hosts", local_inventory(ansible.python)))
    linear = ansible.run("play.yml", inventory, "linear", args=["-e", "strategy=linear"])
    batch = ansible.run("play.yml", inventory, "mitogen_batch", args=["-e", "strategy=batch"])
    assert linear.rc == batch.rc == 0
    for host in ("h1", "h2"):
        written = (tmp_path / ("batch-" + host)).read_text()
        assert written == (tmp_path / ("linear-" + host)).read_text()
        assert written.startswith("#\n# Ansible managed\n#\n")
    assert len(batch.steps) == 1 and batch.through_ansible == [], batch.log


def test_find_returns_ansibles_keys_for_each_file(ansible, ansible_python, tmp_path):
    """devsec.hardening's cron task loops over find's files: each item label differed.

    ansible-core 2.21's find adds ``blocks`` and ``disk_usage_bytes`` to
    each file's stat dict (2.19's does not); the runner's find now does the
    same for the release it answers for.
    """
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.conf").write_text("x\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - find:
                paths: %s/tree
              register: found
            - debug:
                msg: "{{ found.files[0].keys() | sort }}"
        """ % tmp_path)
    inventory = str(ansible.write("hosts", local_inventory(ansible.python)))
    linear, batch = ansible.both("play.yml", inventory)
    assert_same_output(linear, batch)
    assert ("disk_usage_bytes" in linear.stdout) == ansible_python.endswith("3.13")


DELEGATE_PLAY = """
- hosts: web
  gather_facts: false
  vars:
    replication_role: %s
  tasks:
    - name: Check master replication status.
      command: "true"
      delegate_to: "{{ master_host | default(omit, true) }}"
      when: replication_role == 'slave'
    - command: "true"
"""


@pytest.mark.parametrize("role", ["''", "slave"])
def test_delegate_to_omit_is_no_delegation(ansible, ansible_python, role):
    """geerlingguy.mysql's replication check was UNREACHABLE under mitogen_batch.

    ``delegate_to: "{{ x | default(omit, true) }}"`` is Ansible's way of not
    delegating; the controller step connected to a host named after the
    omit placeholder, before the task's ``when`` could skip it. The task
    now runs (or is skipped) on the host itself, as in linear.
    """
    ansible.write("play.yml", DELEGATE_PLAY % role)
    inventory = str(ansible.write("hosts", local_inventory(ansible.python)))
    linear, batch = ansible.both("play.yml", inventory)
    assert linear.rc == 0 and "UNREACHABLE" not in batch.stdout
    assert_same_output(linear, batch)


def test_a_templated_delegate_to_labels_results_with_the_host_it_named(ansible, ansible_python):
    """The default callback showed ``[h2 -> {{ master_host | default(omit, true) }}]``.

    Linear's callbacks get the worker's post-validated task: ``delegate_to``
    is the host it named (no arrow for the host itself or ``omit``).
    """
    ansible.write("play.yml", DELEGATE_PLAY % "slave")
    inventory = str(ansible.write("hosts", local_inventory(ansible.python)))
    linear, batch = ansible.both("play.yml", inventory, args=["-e", "master_host=h1"])
    assert "changed: [h2 -> h1]" in linear.stdout
    assert_same_output(linear, batch)


def test_a_template_whose_dest_reads_a_fact_set_in_the_same_batch_finds_its_src(
        ansible, ansible_python, tmp_path):
    """geerlingguy.php's ``Create fpm pools`` failed under mitogen_batch.

    Its ``src`` is ``{{ item.pool_template | default('www.conf.j2', true) }}``
    and its ``dest`` reads ``php_fpm_pool_conf_path``, which a ``set_fact``
    earlier in the same batch defines. The controller templated every
    argument to find the file to ship, failed on ``dest`` and shipped
    nothing: "Could not find or access 'www.conf.j2' on the Ansible
    Controller". Only the arguments that name the file are templated now.
    """
    ansible.write("templates/pool.conf.j2", "[{{ item.name }}]\nlisten = {{ item.listen }}\n")
    ansible.write("play.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - set_fact:
                pool_dir: "%s/{{ inventory_hostname }}-{{ strategy }}"
            - file:
                path: "{{ pool_dir }}"
                state: directory
            - template:
                src: "{{ item.template | default('pool.conf.j2', true) }}"
                dest: "{{ pool_dir }}/{{ item.name }}.conf"
              loop:
                - {name: www, listen: "127.0.0.1:9000"}
        """ % tmp_path)
    inventory = str(ansible.write("hosts", local_inventory(ansible.python)))
    linear = ansible.run("play.yml", inventory, "linear", args=["-e", "strategy=linear"])
    batch = ansible.run("play.yml", inventory, "mitogen_batch", args=["-e", "strategy=batch"])
    assert linear.rc == batch.rc == 0, batch.stdout[-2000:]
    for host in ("h1", "h2"):
        assert (tmp_path / ("%s-batch" % host) / "www.conf").read_text() == \
            (tmp_path / ("%s-linear" % host) / "www.conf").read_text() == \
            "[www]\nlisten = 127.0.0.1:9000\n"
    assert len(batch.steps) == 1 and batch.through_ansible == [], batch.log


NO_LOG_PLAY = """
- hosts: h1
  gather_facts: false
  vars:
    hide: %s
  tasks:
    - shell: echo {{ item }}
      with_items: [localhost, skipped]
      when: item != 'skipped'
      no_log: %s
    - shell: echo {{ item }}
      with_items: [localhost]
"""


def test_a_no_log_loop_item_is_labelled_censored(ansible, ansible_python):
    """Each item of a ``no_log`` loop read ``(item=None)`` under mitogen_batch.

    Linear labels it ``(item=(censored due to no_log))``: Ansible's censored
    result keeps ``_ansible_no_log``, the runner's did not.
    """
    ansible.write("play.yml", NO_LOG_PLAY % ("false", "true"))
    inventory = str(ansible.write("hosts", local_inventory(ansible.python)))
    linear, batch = ansible.both("play.yml", inventory)
    assert "(item=(censored due to no_log))" in linear.stdout
    assert_same_output(linear, batch)


@pytest.mark.parametrize("hide", ["false", "true"])
def test_a_templated_no_log_labels_loop_items_as_it_evaluates(ansible, ansible_python, hide):
    """geerlingguy.mysql's ``no_log: "{{ mysql_hide_passwords }}"`` (false) loops
    read ``(item=None)`` under mitogen_batch, ``(item=localhost)`` under linear.

    The callbacks censor on ``task.no_log``; linear's task is post-validated
    (a bool), the bridge's was the template string, always true. An item
    its ``when`` skips keeps linear's template (``(item=None)``).
    """
    ansible.write("play.yml", NO_LOG_PLAY % (hide, '"{{ hide }}"'))
    inventory = str(ansible.write("hosts", local_inventory(ansible.python)))
    linear, batch = ansible.both("play.yml", inventory)
    assert ("(item=localhost)" in linear.stdout.split("TASK")[1]) == (hide == "false")
    assert_same_output(linear, batch)
