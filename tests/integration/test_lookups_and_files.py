"""Controller-side inputs: lookups, include_vars and controller files, per host."""
from __future__ import annotations

import pytest

from tests.integration.test_end_to_end import ioc_run

pytestmark = pytest.mark.integration


@pytest.fixture
def two(sshd) -> str:
    return sshd.inventory_ini(["h1", "h2"], group="web")


def msgs(run, task):
    return [(e["host"], e["result"].get("msg")) for e in run.of("runner_ok") if e["task"] == task]


def test_lookups_read_the_controller_per_host(tmp_path, two, monkeypatch):
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "h1.txt").write_text("one\n")
    (tmp_path / "files" / "h2.txt").write_text("two\n")
    (tmp_path / "files" / "b.conf").write_text("")
    (tmp_path / "files" / "a.conf").write_text("")
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - name: file
              debug: msg="{{ lookup('file', inventory_hostname ~ '.txt') }}"
            - name: env and pipe
              debug: msg="{{ lookup('env', 'IOC_MARK') }} {{ lookup('pipe', 'echo piped') }}"
            - name: fileglob
              debug: msg="{{ item | basename }}"
              with_fileglob: "*.conf"
            - name: pure loops run on the target
              debug: msg="{{ item.key }}={{ item.value }}"
              with_dict: {a: 1}
        """, inventory=two, env={"IOC_MARK": "marked"})
    assert r.rc == 0, r.stdout + r.stderr
    assert msgs(r, "file") == [("h1", "one"), ("h2", "two")]
    assert msgs(r, "env and pipe") == [("h1", "marked piped"), ("h2", "marked piped")]
    globbed = [e["result"]["msg"] for e in r.of("runner_item_ok") if e["task"] == "fileglob"]
    assert sorted(globbed) == ["a.conf", "a.conf", "b.conf", "b.conf"]
    assert [e["result"]["msg"] for e in r.of("runner_item_ok") if e["task"].startswith("pure")] == ["a=1"] * 2


def test_a_lookup_reading_a_value_made_in_the_batch_is_made_again_for_the_hosts_that_wrote_it(
        tmp_path, two):
    """No cut: the runner checks before the task whether it wrote ``name``;
    a host that did (both here) stops there, and the controller looks the
    file up again with the value it has now, then runs the rest."""
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "chosen.txt").write_text("chosen content")
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - set_fact: name=chosen
            - name: reads it
              debug: msg="{{ lookup('file', name ~ '.txt') }}"
        """, "--plan", inventory=two)
    assert r.rc == 0
    assert "checks before 2 that nothing wrote name" in r.stdout, r.stdout
    run = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - set_fact: name=chosen
            - name: reads it
              debug: msg="{{ lookup('file', name ~ '.txt') }}"
        """, inventory=two)
    assert run.rc == 0, run.stdout + run.stderr
    assert msgs(run, "reads it") == [("h1", "chosen content"), ("h2", "chosen content")]
    assert run.calls == {"h1": 2, "h2": 2}


def test_password_lookup_creates_the_file_once_and_reuses_it(tmp_path, two):
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          tasks:
            - name: pw
              debug: msg="{{ lookup('password', playbook_dir ~ '/secret length=12') }}"
        """, inventory=two)
    assert r.rc == 0, r.stdout + r.stderr
    stored = (tmp_path / "secret").read_text().strip()
    assert len(stored) == 12
    assert msgs(r, "pw") == [("h1", stored), ("h2", stored)]


def test_include_vars_reads_a_controller_file(tmp_path, two):
    (tmp_path / "vars").mkdir()
    (tmp_path / "vars" / "common.yml").write_text("color: blue\nsize: '{{ base }}-x'\n")
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: false
          vars:
            base: small
            color: red
          tasks:
            - include_vars: common.yml
            - name: show
              debug: msg="{{ color }} {{ size }}"
        """, inventory=two)
    assert r.rc == 0, r.stdout + r.stderr
    assert msgs(r, "show") == [("h1", "blue small-x"), ("h2", "blue small-x")]


def test_include_vars_with_first_found_over_gathered_facts_is_one_runner_call(tmp_path, two):
    """geerlingguy.mysql's variables.yml: the names read facts gathered in the
    same batch; the runner picks among the files the controller shipped, each
    host in one runner call (issue 11, item 6: it made two)."""
    vars_dir = tmp_path / "roles" / "pick" / "vars"
    vars_dir.mkdir(parents=True)
    (vars_dir / "Linux-h2.yml").write_text("kind: own\n")
    (vars_dir / "Linux.yml").write_text("kind: the system's\n")
    (tmp_path / "roles" / "pick" / "tasks").mkdir()
    (tmp_path / "roles" / "pick" / "tasks" / "main.yml").write_text("""
- include_vars: "{{ item }}"
  with_first_found:
    - files:
        - "vars/{{ ansible_facts.system }}-{{ inventory_hostname }}.yml"
        - "vars/{{ ansible_facts.system }}.yml"
      skip: true
- name: show
  debug: msg="{{ kind }}"
""")
    r = ioc_run(tmp_path, """
        - hosts: web
          gather_facts: true
          gather_subset: [min]
          roles: [pick]
        """, inventory=two)
    assert r.rc == 0, r.stdout + r.stderr
    assert msgs(r, "pick : show") == [("h1", "the system's"), ("h2", "own")]
    assert r.calls == {"h1": 1, "h2": 1}


def test_a_template_loop_over_a_fact_set_in_the_batch_is_one_runner_call(tmp_path, sshd):
    """geerlingguy.php's ``template: src=php.ini.j2`` looped over
    ``php_conf_paths``, which the role set with set_fact earlier: the file's
    name is the same for every item, so the controller needs no loop item to
    ship it (issue 11, item 6: php made two runner calls for it); a ``src``
    that names the item still has the controller check its loop."""
    inventory = sshd.inventory_ini(["h1", "h2"], group="web")
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "conf.j2").write_text("{{ inventory_hostname }} in {{ item }}\n")
    (tmp_path / "templates" / "one.j2").write_text("one {{ inventory_hostname }}\n")
    out = tmp_path / "out"
    play = f"""
        - hosts: web
          gather_facts: false
          tasks:
            - set_fact:
                conf_dirs: ["{out}/{{{{ inventory_hostname }}}}-a", "{out}/{{{{ inventory_hostname }}}}-b"]
            - file: path={{{{ item }}}} state=directory
              loop: "{{{{ conf_dirs }}}}"
            - template: src=conf.j2 dest={{{{ item }}}}/conf
              loop: "{{{{ conf_dirs }}}}"
        """
    r = ioc_run(tmp_path, play, inventory=inventory)
    assert r.rc == 0, r.stdout + r.stderr
    for host in ("h1", "h2"):
        for d in ("a", "b"):
            where = out / ("%s-%s" % (host, d))
            assert (where / "conf").read_text() == "%s in %s\n" % (host, where)
    assert r.calls == {"h1": 1, "h2": 1}
    named = ioc_run(tmp_path, play.replace("src=conf.j2", "src={{ item | basename }}.j2"),
                    "--plan", inventory=inventory)
    assert named.rc == 0, named.stdout + named.stderr
    assert "checks before 3 that nothing wrote" in named.stdout and "conf_dirs" in named.stdout


def test_copy_of_a_controller_file_lands_on_every_host(tmp_path, sshd):
    inventory = sshd.inventory_ini(["h1", "h2"], group="web")
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "motd").write_text("hello from the controller\n")
    out = tmp_path / "out"
    r = ioc_run(tmp_path, f"""
        - hosts: web
          gather_facts: false
          tasks:
            - file: path={out}/{{{{ inventory_hostname }}}} state=directory
            - copy: src=motd dest={out}/{{{{ inventory_hostname }}}}/motd
              loop: [1, 2, 3]
        """, inventory=inventory)
    assert r.rc == 0, r.stdout + r.stderr
    for host in ("h1", "h2"):
        assert (out / host / "motd").read_text() == "hello from the controller\n"


def test_template_and_fetch_round_trip(tmp_path, sshd):
    inventory = sshd.inventory_ini(["h1", "h2"], group="web")
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "app.conf.j2").write_text("name={{ inventory_hostname }}\nport={{ port }}\n")
    work = tmp_path / "target"
    r = ioc_run(tmp_path, f"""
        - hosts: web
          gather_facts: false
          vars:
            port: 8080
          tasks:
            - file: path={work}/{{{{ inventory_hostname }}}} state=directory
            - template: src=app.conf.j2 dest={work}/{{{{ inventory_hostname }}}}/app.conf
            - fetch: src={work}/{{{{ inventory_hostname }}}}/app.conf dest=fetched
        """, inventory=inventory)
    assert r.rc == 0, r.stdout + r.stderr
    for host in ("h1", "h2"):
        fetched = tmp_path / "fetched" / host / str(work).lstrip("/") / host / "app.conf"
        assert fetched.read_text() == "name=%s\nport=8080\n" % host
    again = ioc_run(tmp_path, f"""
        - hosts: web
          gather_facts: false
          tasks:
            - fetch: src={work}/{{{{ inventory_hostname }}}}/app.conf dest=fetched
        """, inventory=inventory)
    assert again.recap["h1"]["changed"] == 0 and again.rc == 0
