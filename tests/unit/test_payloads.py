"""Controller files are found on Ansible's search path and shipped once per host."""
from __future__ import annotations

import hashlib

from ioc import loader
from ioc.ansible.modules import attach
from ioc.agentless_runner.batch import HostRun
from ioc.controller import fetched, payloads
from ioc.controller.capabilities import runner_capabilities
from ioc.model import WIRE_VERSION
from ioc.planner import plan_play


def collect_for(tmp_path, text, cache=None, host="h1", extra=None):
    book = tmp_path / "play.yml"
    book.write_text(text)
    play = attach(loader.load_playbook(str(book))).plays[0]
    program = plan_play(play, runner_capabilities()).program
    wire = {"v": WIRE_VERSION, "host": host, "start": 0, "end": len(program.entries),
            "tree": [], "vars": {"inventory": {}, "play": dict(play.vars), "extra": extra or {},
                                 "magic": {"inventory_hostname": host}}, "state": {}}
    tasks = [(str(e.index), e.task, program.parents[e.index]) for e in program.entries
             if payloads.wants_controller_file(e.task)]
    cache = cache or payloads.PayloadCache()
    files, blobs = payloads.collect(cache, host, HostRun(wire, emit=None), tasks, str(tmp_path))
    return files, blobs, cache


def only(files):
    (entries,) = files.values()
    return entries


def test_a_loop_over_one_file_ships_it_once(tmp_path):
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "a.conf").write_text("A")
    files, blobs, _ = collect_for(tmp_path, """
- hosts: all
  tasks:
    - copy: src=a.conf dest=/tmp/x{{ item }}
      loop: "{{ range(1000) | list }}"
""")
    entry = only(files)["a.conf"]
    assert entry["kind"] == "file" and entry["path"] == str(tmp_path / "files" / "a.conf")
    assert len(blobs) == 1 and bytes(next(iter(blobs.values()))) == b"A"


def test_templated_src_is_resolved_per_item_and_role_first(tmp_path):
    role = tmp_path / "roles" / "r1"
    (role / "tasks").mkdir(parents=True)
    (role / "files").mkdir()
    (role / "files" / "x.conf").write_text("role")
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "x.conf").write_text("play")
    (tmp_path / "files" / "y.conf").write_text("play-y")
    (role / "tasks" / "main.yml").write_text(
        "- copy: src={{ item }}.conf dest=/tmp/{{ item }}\n  loop: [x, y]\n")
    files, blobs, _ = collect_for(tmp_path, "- hosts: all\n  roles: [r1]\n")
    entries = only(files)
    assert entries["x.conf"]["path"] == str(role / "files" / "x.conf")
    assert entries["y.conf"]["path"] == str(tmp_path / "files" / "y.conf")
    assert sorted(bytes(b) for b in blobs.values()) == [b"play-y", b"role"]


def test_content_already_on_a_host_is_not_sent_again(tmp_path):
    (tmp_path / "a.txt").write_text("same")
    (tmp_path / "b.txt").write_text("same")
    text = "- hosts: all\n  tasks:\n    - copy: src=a.txt dest=/tmp/a\n    - copy: src=b.txt dest=/tmp/b\n"
    files, blobs, cache = collect_for(tmp_path, text)
    assert len(blobs) == 1  # same content, one blob
    _, again, _ = collect_for(tmp_path, text, cache=cache)
    assert again == {}
    _, other_host, _ = collect_for(tmp_path, text, cache=cache, host="h2")
    assert len(other_host) == 1


def test_a_missing_file_says_where_it_looked(tmp_path):
    files, blobs, _ = collect_for(tmp_path, "- hosts: all\n  tasks:\n    - copy: src=nope.txt dest=/tmp/n\n")
    entry = only(files)["nope.txt"]
    assert entry["kind"] == "missing"
    assert "Could not find or access 'nope.txt'" in entry["msg"]
    assert str(tmp_path / "files" / "nope.txt") in entry["msg"]
    assert blobs == {}


def test_directories_ship_their_tree(tmp_path):
    (tmp_path / "files" / "conf.d" / "sub").mkdir(parents=True)
    (tmp_path / "files" / "conf.d" / "a").write_text("1")
    (tmp_path / "files" / "conf.d" / "sub" / "b").write_text("2")
    files, blobs, _ = collect_for(tmp_path, "- hosts: all\n  tasks:\n    - copy: src=conf.d/ dest=/tmp/c/\n")
    entry = only(files)["conf.d/"]
    assert entry["kind"] == "dir"
    assert [e["rel"] for e in entry["entries"]] == ["sub", "a", "sub/b"]
    assert len(blobs) == 2


def test_remote_src_ships_nothing(tmp_path):
    files, blobs, _ = collect_for(tmp_path, "- hosts: all\n  tasks:\n"
                                  "    - copy: src=/etc/hostname dest=/tmp/h remote_src=true\n")
    assert files == {} and blobs == {}


def test_fetched_content_is_written_atomically_and_changed_reflects_the_controller(tmp_path):
    def event():
        return {"e": "done", "status": "ok",
                "result": {"changed": True, "dest": "out/h1/etc/motd", "file": "/etc/motd",
                           "_ioc_fetch": {"dest": "out/h1/etc/motd", "content": b"hi",
                                          "checksum": hashlib.sha1(b"hi").hexdigest()}}}
    first = event()
    fetched.deliver(first, str(tmp_path))
    dest = tmp_path / "out" / "h1" / "etc" / "motd"
    assert dest.read_bytes() == b"hi" and first["result"]["changed"] is True
    assert first["result"]["dest"] == str(dest)  # relative to the playbook directory
    assert "_ioc_fetch" not in first["result"]
    again = event()
    fetched.deliver(again, str(tmp_path))
    assert again["result"] == {"changed": False, "md5sum": hashlib.md5(b"hi").hexdigest(),
                               "file": "/etc/motd", "dest": str(dest),
                               "checksum": hashlib.sha1(b"hi").hexdigest()}
    assert [p.name for p in dest.parent.iterdir()] == ["motd"]


def test_fetch_into_an_existing_directory_fails(tmp_path):
    (tmp_path / "out" / "h1" / "etc" / "motd").mkdir(parents=True)
    ev = {"e": "done", "status": "ok",
          "result": {"changed": True, "_ioc_fetch": {"dest": "out/h1/etc/motd", "content": b"x",
                                                     "checksum": hashlib.sha1(b"x").hexdigest()}}}
    fetched.deliver(ev, str(tmp_path))
    assert ev["status"] == "failed" and "is an existing directory" in ev["result"]["msg"]


def test_a_template_entry_carries_ansibles_template_vars_asked_once_per_file_version(tmp_path):
    """``template``'s entry holds what Ansible's template action adds for the file
    (``ioc.ansible.template_vars``, the front end's): its owner, mtime, the
    controller's name, ``ansible_managed``; asked once per file version."""
    import datetime
    import os
    import pwd

    from ioc.ansible.template_vars import template_vars

    (tmp_path / "templates").mkdir()
    source = tmp_path / "templates" / "t.j2"
    source.write_text("x")
    os.utime(str(source), (0, 86400 * 366 + 3723))  # 1971-01-02, 01:02:03 UTC
    asked = []
    cache = payloads.PayloadCache(template_vars=lambda src, path: (
        asked.append((src, path)) or template_vars(src, path)))
    play = "- hosts: all\n  tasks:\n    - template: src=t.j2 dest=/tmp/t{{ item }}\n      loop: [1, 2]\n"
    for host in ("h1", "h2"):
        files, _, _ = collect_for(tmp_path, play, cache=cache, host=host)
        found = only(files)["t.j2"]["template"]
        assert found == {"template_host": os.uname()[1],
                         "template_uid": pwd.getpwuid(os.getuid()).pw_name,
                         "template_mtime": datetime.datetime.fromtimestamp(
                             86400 * 366 + 3723).timetuple()[:6] + (0,),
                         "ansible_managed": "Ansible managed"}
    assert asked == [("t.j2", str(source))]
    os.utime(str(source), (0, 0))
    collect_for(tmp_path, play, cache=cache)
    assert len(asked) == 2


def test_a_template_ships_the_templates_it_names_found_as_the_template_action_finds_them(
        tmp_path):
    """``{% include/import/from/extends %}`` names, and the names in those, found on
    the template action's search path (``ansible_search_path``: the role, its tasks
    directory, the playbook's directory; then the playbook's directory again and
    the template's own, each ``templates/`` first); a name found nowhere is
    ``missing``; an expression's name is not known here."""
    role = tmp_path / "roles" / "r1"
    (role / "tasks").mkdir(parents=True)
    (role / "templates").mkdir()
    (tmp_path / "templates").mkdir()
    (role / "templates" / "t.j2").write_text(
        "{% import 'lib.j2' as lib %}{% include 'part.j2' %}{% include name %}"
        "{% extends 'nowhere.j2' %}")
    (role / "templates" / "part.j2").write_text("role part {% from 'deep.j2' import x %}")
    (tmp_path / "templates" / "part.j2").write_text("play part")
    (tmp_path / "templates" / "lib.j2").write_text("lib")
    (tmp_path / "deep.j2").write_text("deep")
    (role / "tasks" / "main.yml").write_text("- template: src=t.j2 dest=/tmp/t\n")
    files, blobs, _ = collect_for(tmp_path, "- hosts: all\n  roles: [r1]\n")
    loader = only(files)["t.j2"]["loader"]
    assert loader["searchpath"] == [str(role / "templates"), str(role),
                                    str(role / "tasks" / "templates"), str(role / "tasks"),
                                    str(tmp_path / "templates"), str(tmp_path),
                                    str(tmp_path / "templates"), str(tmp_path),
                                    str(role / "templates" / "templates"), str(role / "templates")]
    assert {name: found.get("path") for name, found in loader["files"].items()} == {
        "lib.j2": str(tmp_path / "templates" / "lib.j2"),
        "part.j2": str(role / "templates" / "part.j2"),
        "deep.j2": str(tmp_path / "deep.j2"),
        "nowhere.j2": None}
    assert loader["files"]["nowhere.j2"] == {"kind": "missing"}
    assert sorted(bytes(b) for b in blobs.values()) == sorted(
        [b"deep", b"lib", (role / "templates" / "t.j2").read_bytes(),
         b"role part {% from 'deep.j2' import x %}"])
