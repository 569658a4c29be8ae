"""Specification of ioc.loader.load_playbook: YAML playbooks, roles and imports → IR."""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from ioc.errors import LoadError
from ioc.loader import LocatedDict, load_playbook, load_yaml_file, location_of
from ioc.model import Block, Location, Play, Task


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def play_of(tmp_path: Path, text: str, **extra: Any) -> Play:
    playbook = write(tmp_path / "site.yml", text)
    return load_playbook(str(playbook), extra or None).plays[0]


def tasks_of(tmp_path: Path, tasks_yaml: str) -> tuple[Any, ...]:
    body = textwrap.indent(textwrap.dedent(tasks_yaml).lstrip("\n"), "    ")
    return play_of(tmp_path, "- hosts: all\n  tasks:\n" + body).tasks


def only_task(tmp_path: Path, tasks_yaml: str) -> Task:
    (task,) = tasks_of(tmp_path, tasks_yaml)
    assert isinstance(task, Task)
    return task


def load_error(path: Path) -> str:
    with pytest.raises(LoadError) as info:
        load_playbook(str(path))
    return str(info.value)


# ---------------------------------------------------------------- YAML source


def test_yaml_mappings_remember_file_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path / "x.yml", """
        top: 1
        items:
          - a: 1
          - b: 2
    """)
    data = load_yaml_file(str(path))
    assert isinstance(data, LocatedDict)
    assert data.location == Location(str(path), 1, 1)
    assert location_of(data["items"][1], Location("?")) == Location(str(path), 4, 5)
    assert location_of(data["items"][1], Location("?")).origin == "%s:4:5" % path
    assert data == {"top": 1, "items": [{"a": 1}, {"b": 2}]}


def test_location_of_scalar_is_the_default(tmp_path: Path) -> None:
    assert location_of("text", Location("f.yml", 3)) == Location("f.yml", 3)


def test_yaml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.yml", """
        a: 1
        b: [1, 2
        c: 3
    """)
    with pytest.raises(LoadError) as info:
        load_yaml_file(str(path))
    assert str(info.value).startswith("%s:" % path)
    assert info.value.location is not None and info.value.location.line >= 3


def test_unsafe_text_is_never_templated(tmp_path: Path) -> None:
    """``!unsafe`` text reads back exactly as written, as Ansible never templates it."""
    from ioc.agentless_runner.templating import Templar

    path = write(tmp_path / "u.yml", "a: !unsafe '{{ not a template }}'\n"
                                     "b: !unsafe ['{%% raw %%}', x]\n".replace("%%", "%"))
    loaded = load_yaml_file(str(path))
    templar = Templar({})
    assert templar.template(loaded["a"]) == "{{ not a template }}"
    assert templar.template(loaded["b"]) == ["{% raw %}", "x"]


# ---------------------------------------------------------------- plays


def test_play_fields_are_loaded(tmp_path: Path) -> None:
    play = play_of(tmp_path, """
        - name: Deploy
          hosts: web
          gather_facts: no
          serial: 2
          any_errors_fatal: true
          max_fail_percentage: 30
          force_handlers: yes
          ignore_unreachable: true
          order: sorted
          vars: {a: 1}
          tasks: []
    """)
    assert (play.name, play.hosts, play.gather_facts, play.serial) == ("Deploy", "web", False, 2)
    assert play.any_errors_fatal is True and play.max_fail_percentage == 30
    assert play.force_handlers is True and play.ignore_unreachable is True
    assert play.order == "sorted" and play.vars == {"a": 1}
    assert play.location == Location(str(tmp_path / "site.yml"), 1, 3)
    assert play.basedir == str(tmp_path)


def test_play_defaults_gather_facts_and_uses_hosts_as_name(tmp_path: Path) -> None:
    play = play_of(tmp_path, "- hosts: [web, db]\n")
    assert play.gather_facts is True
    assert play.hosts == "web,db" and play.name == "web,db"


def test_several_plays_are_loaded_in_order(tmp_path: Path) -> None:
    path = write(tmp_path / "site.yml", """
        - hosts: a
        - hosts: b
    """)
    assert [p.hosts for p in load_playbook(str(path)).plays] == ["a", "b"]


def test_play_without_hosts_is_an_error_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path / "site.yml", """
        - hosts: a
        - name: no hosts
          tasks: []
    """)
    assert load_error(path).startswith("%s:2: " % path)


def test_unknown_play_keyword_is_an_error_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path / "site.yml", """
        - hosts: a
          taks: []
    """)
    message = load_error(path)
    assert message.startswith("%s:2: " % path) and "'taks'" in message


def test_missing_playbook_is_an_error(tmp_path: Path) -> None:
    assert "not found" in load_error(tmp_path / "nope.yml")


def test_empty_playbook_is_an_error(tmp_path: Path) -> None:
    assert load_error(write(tmp_path / "site.yml", "")).startswith("%s:1: " % (tmp_path / "site.yml"))


def test_play_keywords_are_pushed_down_into_tasks(tmp_path: Path) -> None:
    play = play_of(tmp_path, """
        - hosts: all
          become: true
          become_user: root
          no_log: true
          ignore_errors: true
          environment: {A: "1"}
          check_mode: false
          tasks:
            - command: id
            - command: id
              become_user: app
    """)
    first, second = play.tasks
    assert isinstance(first, Task) and isinstance(second, Task)
    assert (first.become, first.become_user, first.no_log, first.ignore_errors) == (True, "root", True, True)
    assert first.environment == {"A": "1"} and first.check_mode is False
    assert second.become_user == "app"


def test_play_tags_are_on_every_task_and_on_the_play(tmp_path: Path) -> None:
    play = play_of(tmp_path, """
        - hosts: all
          tags: deploy
          tasks:
            - {command: id, tags: [x, deploy]}
    """)
    assert play.tags == ("deploy",)
    assert play.tasks[0].tags == ("deploy", "x")


def test_pre_tasks_tasks_and_post_tasks_stay_separate(tmp_path: Path) -> None:
    play = play_of(tmp_path, """
        - hosts: all
          post_tasks: [{debug: msg=post}]
          tasks: [{debug: msg=main}]
          pre_tasks: [{debug: msg=pre}]
    """)
    assert [t.args["msg"] for t in play.pre_tasks] == ["pre"]
    assert [t.args["msg"] for t in play.tasks] == ["main"]
    assert [t.args["msg"] for t in play.post_tasks] == ["post"]


# ---------------------------------------------------------------- vars_files


def test_vars_files_are_merged_in_order(tmp_path: Path) -> None:
    write(tmp_path / "vars/one.yml", "a: 1\nb: 1\n")
    write(tmp_path / "vars/two.yml", "b: 2\n")
    play = play_of(tmp_path, """
        - hosts: all
          vars_files: [vars/one.yml, vars/two.yml]
    """)
    assert play.vars_files == {"a": 1, "b": 2}


def test_vars_files_names_are_templated_from_play_and_extra_vars(tmp_path: Path) -> None:
    write(tmp_path / "prod-eu.yml", "site: yes\n")
    play = play_of(tmp_path, """
        - hosts: all
          vars: {env: prod}
          vars_files: ["{{ env }}-{{ region }}.yml"]
    """, region="eu")
    assert play.vars_files == {"site": True}


def test_vars_files_nested_list_takes_the_first_existing_file(tmp_path: Path) -> None:
    write(tmp_path / "default.yml", "which: default\n")
    play = play_of(tmp_path, """
        - hosts: all
          vars_files:
            - [missing.yml, default.yml]
    """)
    assert play.vars_files == {"which": "default"}


def test_missing_vars_file_is_an_error_at_the_vars_files_line(tmp_path: Path) -> None:
    path = write(tmp_path / "site.yml", """
        - hosts: all
          vars_files:
            - nope.yml
    """)
    message = load_error(path)
    assert message.startswith("%s:2: " % path) and "nope.yml" in message


def test_undefined_variable_in_vars_files_name_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "site.yml", """
        - hosts: all
          vars_files: ["{{ nope }}.yml"]
    """)
    assert "'nope' is undefined" in load_error(path)


# ---------------------------------------------------------------- task parsing


def test_task_location_is_the_line_of_its_mapping(tmp_path: Path) -> None:
    tasks = tasks_of(tmp_path, """
        - name: first
          command: id
        - name: second
          command: id
    """)
    assert [t.location.line for t in tasks] == [3, 5]
    assert tasks[0].location.path == str(tmp_path / "site.yml")


def test_module_mapping_arguments_are_kept(tmp_path: Path) -> None:
    task = only_task(tmp_path, "- copy: {src: a, dest: /b, mode: '0644'}")
    assert (task.action, task.args) == ("copy", {"src": "a", "dest": "/b", "mode": "0644"})


def test_free_form_key_values_are_parsed_with_quotes(tmp_path: Path) -> None:
    task = only_task(tmp_path, """- copy: src=a dest="/x y" content='k=v'""")
    assert task.args == {"src": "a", "dest": "/x y", "content": "k=v"}


def test_free_form_value_with_jinja_spaces_stays_one_value(tmp_path: Path) -> None:
    task = only_task(tmp_path, """- debug: msg="{{ a | default('b c') }}" """)
    assert task.args == {"msg": "{{ a | default('b c') }}"}


def test_command_free_form_keeps_words_and_peels_only_its_options(tmp_path: Path) -> None:
    task = only_task(tmp_path, """- shell: FOO=bar echo "a b" chdir=/tmp creates=/x""")
    assert task.args == {"_raw_params": 'FOO=bar echo "a b"', "chdir": "/tmp", "creates": "/x"}


def test_multiline_shell_keeps_its_newlines(tmp_path: Path) -> None:
    task = only_task(tmp_path, """
        - shell: |
            echo one
            echo two
    """)
    assert task.args == {"_raw_params": "echo one\necho two\n"}


def test_free_form_words_for_a_key_value_module_are_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "site.yml", """
        - hosts: all
          tasks:
            - debug: msg=hello world
    """)
    message = load_error(path)
    assert message.startswith("%s:3: " % path) and "world" in message


def test_args_keyword_is_merged_under_module_arguments(tmp_path: Path) -> None:
    task = only_task(tmp_path, """
        - command: ls -l
          args: {chdir: /tmp, creates: /a}
    """)
    assert task.args == {"chdir": "/tmp", "creates": "/a", "_raw_params": "ls -l"}


def test_builtin_and_legacy_collection_names_are_shortened(tmp_path: Path) -> None:
    tasks = tasks_of(tmp_path, """
        - ansible.builtin.command: id
        - ansible.legacy.shell: id
        - community.general.ini_file: {path: x}
    """)
    assert [t.action for t in tasks] == ["command", "shell", "community.general.ini_file"]


def test_local_action_delegates_to_localhost(tmp_path: Path) -> None:
    task = only_task(tmp_path, "- local_action: command touch /tmp/x")
    assert (task.action, task.args, task.delegate_to) == ("command", {"_raw_params": "touch /tmp/x"}, "localhost")


def test_action_keyword_names_the_module(tmp_path: Path) -> None:
    tasks = tasks_of(tmp_path, """
        - action: copy src=a dest=b
        - action: {module: file, path: /x, state: absent}
    """)
    assert (tasks[0].action, tasks[0].args) == ("copy", {"src": "a", "dest": "b"})
    assert (tasks[1].action, tasks[1].args) == ("file", {"path": "/x", "state": "absent"})
    assert tasks[0].delegate_to is None


def test_with_lookup_becomes_loop_with_its_name(tmp_path: Path) -> None:
    tasks = tasks_of(tmp_path, """
        - debug: var=item
          with_items: [1, 2]
        - debug: var=item
          loop: "{{ things }}"
          loop_control: {label: "{{ item.name }}"}
    """)
    assert (tasks[0].loop, tasks[0].loop_with) == ([1, 2], "items")
    assert (tasks[1].loop, tasks[1].loop_with) == ("{{ things }}", None)
    assert tasks[1].loop_control == {"label": "{{ item.name }}"}


def test_two_loops_on_one_task_are_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "site.yml", """
        - hosts: all
          tasks:
            - debug: var=item
              loop: [1]
              with_items: [2]
    """)
    assert load_error(path).startswith("%s:3: " % path)


def test_conditions_are_normalised_to_tuples(tmp_path: Path) -> None:
    task = only_task(tmp_path, """
        - command: id
          register: out
          when: x is defined
          changed_when: false
          failed_when: [out.rc > 1, "'bad' in out.stdout"]
          until: out is success
          retries: 3
          delay: 1
    """)
    assert task.when == ("x is defined",)
    assert task.changed_when == (False,)
    assert task.failed_when == ("out.rc > 1", "'bad' in out.stdout")
    assert task.until == ("out is success",)
    assert (task.register, task.retries, task.delay) == ("out", 3, 1)


def test_unset_conditions_stay_none(tmp_path: Path) -> None:
    task = only_task(tmp_path, "- command: id")
    assert task.when == () and task.changed_when is None and task.failed_when is None and task.until is None


def test_notify_and_comma_tags_become_tuples(tmp_path: Path) -> None:
    task = only_task(tmp_path, """
        - command: id
          notify: restart
          tags: "a, b"
    """)
    assert task.notify == ("restart",) and task.tags == ("a", "b")


def test_task_vars_and_keywords_are_kept(tmp_path: Path) -> None:
    task = only_task(tmp_path, """
        - name: t
          command: id
          vars: {v: 1}
          delegate_to: db1
          run_once: true
          throttle: 1
          no_log: true
          diff: true
    """)
    assert task.vars == {"v": 1} and task.delegate_to == "db1"
    assert (task.run_once, task.throttle, task.no_log, task.diff) == (True, 1, True, True)


def test_task_without_action_is_an_error_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path / "site.yml", """
        - hosts: all
          tasks:
            - name: nothing to do
              when: true
    """)
    message = load_error(path)
    assert message == "%s:3: no module/action detected in task." % path  # ansible-core's words


def test_task_with_two_actions_names_both(tmp_path: Path) -> None:
    path = write(tmp_path / "site.yml", """
        - hosts: all
          tasks:
            - name: two
              command: id
              shell: id
    """)
    message = load_error(path)
    assert message == "%s:3: conflicting action statements: command, shell" % path


def test_templated_or_looped_includes_stay_dynamic(tmp_path: Path) -> None:
    tasks = tasks_of(tmp_path, """
        - include_tasks: "{{ os }}.yml"
        - include_tasks: {file: x.yml}
          loop: [1, 2]
    """)
    assert [(t.action, dict(t.args)) for t in tasks] == [
        ("include_tasks", {"_raw_params": "{{ os }}.yml"}),
        ("include_tasks", {"file": "x.yml"}),
    ]


def test_a_static_include_becomes_a_block_headed_by_the_include_task(tmp_path: Path) -> None:
    write(tmp_path / "x.yml", "- name: inner\n  debug: msg=in\n")
    path = write(tmp_path / "site.yml", """
        - hosts: all
          tasks:
            - include_tasks: x.yml
              when: flag
              vars: {p: 1}
    """)
    (block,) = load_playbook(str(path)).plays[0].tasks
    assert isinstance(block, Block) and block.include is not None
    assert block.include.action == "include_tasks" and block.include.when == ("flag",)
    assert block.params == {"p": 1}
    (inner,) = block.block
    assert inner.name == "inner" and inner.when == ()  # the include's when is not inherited


def test_meta_flush_handlers_is_a_raw_param(tmp_path: Path) -> None:
    task = only_task(tmp_path, "- meta: flush_handlers")
    assert (task.action, task.args) == ("meta", {"_raw_params": "flush_handlers"})


def test_module_without_arguments_has_empty_args(tmp_path: Path) -> None:
    task = only_task(tmp_path, "- ping:")
    assert (task.action, task.args) == ("ping", {})


def test_task_that_is_not_a_mapping_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "site.yml", """
        - hosts: all
          tasks:
            - just a string
    """)
    assert load_error(path).startswith("%s:" % path)


# ---------------------------------------------------------------- blocks


def test_block_when_is_prepended_to_each_task(tmp_path: Path) -> None:
    (block,) = tasks_of(tmp_path, """
        - when: outer
          block:
            - command: id
              when: inner
          rescue:
            - command: r
          always:
            - command: a
    """)
    assert isinstance(block, Block)
    assert block.block[0].when == ("outer", "inner")
    assert block.rescue[0].when == ("outer",) and block.always[0].when == ("outer",)


def test_nested_blocks_prepend_outer_conditions_first(tmp_path: Path) -> None:
    (outer,) = tasks_of(tmp_path, """
        - when: [a, b]
          block:
            - when: c
              block:
                - command: id
                  when: d
    """)
    assert outer.block[0].block[0].when == ("a", "b", "c", "d")


def test_block_tags_are_a_union_outer_first(tmp_path: Path) -> None:
    (block,) = tasks_of(tmp_path, """
        - tags: [b, shared]
          block:
            - command: id
              tags: [shared, t]
    """)
    assert block.block[0].tags == ("b", "shared", "t")


def test_block_keywords_are_inherited_unless_the_task_sets_them(tmp_path: Path) -> None:
    (block,) = tasks_of(tmp_path, """
        - become: true
          ignore_errors: true
          delegate_to: db1
          block:
            - command: one
            - command: two
              ignore_errors: false
              become: false
    """)
    one, two = block.block
    assert (one.become, one.ignore_errors, one.delegate_to) == (True, True, "db1")
    assert (two.become, two.ignore_errors, two.delegate_to) == (False, False, "db1")


def test_inner_block_keyword_beats_outer_block(tmp_path: Path) -> None:
    (outer,) = tasks_of(tmp_path, """
        - become_user: outer
          block:
            - become_user: inner
              block:
                - command: id
    """)
    assert outer.block[0].block[0].become_user == "inner"


def test_block_vars_stay_on_the_block(tmp_path: Path) -> None:
    (block,) = tasks_of(tmp_path, """
        - name: b
          vars: {bv: 1}
          block:
            - command: id
              vars: {tv: 2}
    """)
    assert block.vars == {"bv": 1} and block.name == "b"
    assert block.block[0].vars == {"tv": 2}
    assert block.location.line == 3 and block.implicit is False


def test_block_that_is_not_a_list_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "site.yml", """
        - hosts: all
          tasks:
            - block:
                command: id
    """)
    message = load_error(path)
    assert message.startswith("%s:3: " % path) and "'block' must be a list" in message


def test_unknown_block_keyword_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "site.yml", """
        - hosts: all
          tasks:
            - block: []
              register: x
    """)
    message = load_error(path)
    assert message.startswith("%s:4: " % path) and "'register'" in message


# ---------------------------------------------------------------- import_tasks


def test_import_tasks_is_an_implicit_block_with_import_vars(tmp_path: Path) -> None:
    inc = write(tmp_path / "inc/more.yml", "- debug: msg=hi\n")
    (block,) = tasks_of(tmp_path, """
        - import_tasks: inc/more.yml
          vars: {iv: 1}
    """)
    assert isinstance(block, Block) and block.implicit is True
    assert block.vars == {"iv": 1}
    assert block.block[0].args == {"msg": "hi"}
    assert block.block[0].location == Location(str(inc), 1, 3)


def test_import_when_and_tags_apply_to_every_imported_task(tmp_path: Path) -> None:
    write(tmp_path / "more.yml", """
        - command: one
        - command: two
          when: own
    """)
    (block,) = tasks_of(tmp_path, """
        - import_tasks: more.yml
          when: imported
          tags: imp
          become: true
    """)
    one, two = block.block
    assert one.when == ("imported",) and two.when == ("imported", "own")
    assert one.tags == ("imp",) and two.become is True


def test_nested_import_is_relative_to_the_importing_file(tmp_path: Path) -> None:
    write(tmp_path / "sub/a.yml", "- import_tasks: b.yml\n")
    write(tmp_path / "sub/b.yml", "- debug: msg=deep\n")
    (block,) = tasks_of(tmp_path, "- import_tasks: sub/a.yml")
    assert block.block[0].block[0].args == {"msg": "deep"}


def test_import_tasks_file_name_is_templated_from_play_vars(tmp_path: Path) -> None:
    write(tmp_path / "debian.yml", "- debug: msg=deb\n")
    play = play_of(tmp_path, """
        - hosts: all
          vars: {family: debian}
          tasks:
            - import_tasks: "{{ family }}.yml"
    """)
    assert play.tasks[0].block[0].args == {"msg": "deb"}


def test_missing_imported_file_is_an_error_at_the_import_line(tmp_path: Path) -> None:
    path = write(tmp_path / "site.yml", """
        - hosts: all
          tasks:
            - debug: msg=ok
            - import_tasks: missing.yml
    """)
    message = load_error(path)
    assert message.startswith("%s:4: " % path) and "missing.yml" in message


def test_error_inside_imported_file_names_that_file(tmp_path: Path) -> None:
    inc = write(tmp_path / "bad.yml", "- debug: msg=x\n- name: no action\n")
    path = write(tmp_path / "site.yml", """
        - hosts: all
          tasks:
            - import_tasks: bad.yml
    """)
    assert load_error(path).startswith("%s:2: " % inc)


def test_import_cycle_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "a.yml", "- import_tasks: b.yml\n")
    write(tmp_path / "b.yml", "- import_tasks: a.yml\n")
    path = write(tmp_path / "site.yml", "- hosts: all\n  tasks:\n    - import_tasks: a.yml\n")
    assert "import cycle" in load_error(path)


def test_loop_on_import_tasks_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "a.yml", "- debug: msg=x\n")
    path = write(tmp_path / "site.yml", """
        - hosts: all
          tasks:
            - import_tasks: a.yml
              loop: [1, 2]
    """)
    message = load_error(path)
    assert message.startswith("%s:4: " % path) and "include_tasks" in message


# ---------------------------------------------------------------- import_playbook


def test_import_playbook_splices_plays_in_place(tmp_path: Path) -> None:
    write(tmp_path / "sub/other.yml", "- hosts: b\n- hosts: c\n")
    path = write(tmp_path / "site.yml", """
        - hosts: a
        - import_playbook: sub/other.yml
        - hosts: d
    """)
    plays = load_playbook(str(path)).plays
    assert [p.hosts for p in plays] == ["a", "b", "c", "d"]
    assert plays[1].basedir == str(tmp_path / "sub")


def test_import_playbook_vars_when_and_tags_apply_to_imported_plays(tmp_path: Path) -> None:
    write(tmp_path / "other.yml", """
        - hosts: b
          vars: {x: play, y: play}
          tasks:
            - {command: id, when: own}
    """)
    path = write(tmp_path / "site.yml", """
        - import_playbook: other.yml
          vars: {x: import}
          when: flag
          tags: imp
    """)
    (play,) = load_playbook(str(path)).plays
    assert play.vars == {"x": "import", "y": "play"}
    assert play.tasks[0].when == ("flag", "own")
    assert play.tags == ("imp",) and play.tasks[0].tags == ("imp",)


def test_import_playbook_missing_file_is_an_error_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path / "site.yml", "- hosts: a\n- import_playbook: nope.yml\n")
    assert load_error(path).startswith("%s:2: " % path)


# ---------------------------------------------------------------- roles


def make_role(base: Path, name: str, tasks: str = "- debug: msg=role\n", **files: str) -> Path:
    root = base / name
    write(root / "tasks/main.yml", tasks)
    for key, text in files.items():
        write(root / key.replace("__", "/"), text)
    return root


def test_role_becomes_an_implicit_block_with_role_vars_and_params(tmp_path: Path) -> None:
    root = make_role(tmp_path / "roles", "web", **{
        "vars__main.yml": "rv: 1\nshared: role\n",
        "defaults__main.yml": "port: 80\n",
    })
    play = play_of(tmp_path, """
        - hosts: all
          roles:
            - role: web
              vhost: example
              vars: {shared: entry}
          tasks:
            - debug: msg=after
    """)
    block, after = play.tasks
    assert isinstance(block, Block) and block.implicit and block.role == "web"
    assert block.role_path == str(root)
    assert block.vars == {"rv": 1, "shared": "entry"}
    assert block.params == {"vhost": "example"}
    assert play.role_defaults == {"port": 80}
    task = block.block[0]
    assert (task.role, task.role_path) == ("web", str(root))
    assert task.display_name == "web : debug"
    assert after.role is None


def test_role_entry_keywords_apply_to_role_tasks(tmp_path: Path) -> None:
    make_role(tmp_path / "roles", "web", "- command: id\n  when: own\n")
    play = play_of(tmp_path, """
        - hosts: all
          roles:
            - {role: web, when: outer, tags: [r], become: true}
    """)
    task = play.tasks[0].block[0]
    assert task.when == ("outer", "own") and task.tags == ("r",) and task.become is True
    assert play.tasks[0].params == {}


def test_role_found_beside_the_playbook_when_not_in_roles_dir(tmp_path: Path) -> None:
    root = make_role(tmp_path, "local_role")
    play = play_of(tmp_path, "- hosts: all\n  roles: [local_role]\n")
    assert play.tasks[0].role_path == str(root)


def test_roles_dir_wins_over_the_playbook_dir(tmp_path: Path) -> None:
    root = make_role(tmp_path / "roles", "twin")
    make_role(tmp_path, "twin")
    play = play_of(tmp_path, "- hosts: all\n  roles: [twin]\n")
    assert play.tasks[0].role_path == str(root)


def test_missing_role_is_an_error_at_the_role_entry(tmp_path: Path) -> None:
    path = write(tmp_path / "site.yml", """
        - hosts: all
          roles:
            - role: ghost
    """)
    message = load_error(path)
    assert message.startswith("%s:3: " % path) and "ghost" in message


def test_role_main_file_may_be_main_yaml_or_bare_main(tmp_path: Path) -> None:
    write(tmp_path / "roles/r/tasks/main.yaml", "- debug: msg=yaml\n")
    write(tmp_path / "roles/r/vars/main", "from_bare: true\n")
    play = play_of(tmp_path, "- hosts: all\n  roles: [r]\n")
    assert play.tasks[0].block[0].args == {"msg": "yaml"}
    assert play.tasks[0].vars == {"from_bare": True}


def test_role_handlers_come_before_play_handlers(tmp_path: Path) -> None:
    root = make_role(tmp_path / "roles", "web", **{
        "handlers__main.yml": "- name: restart web\n  service: name=web state=restarted\n",
        "vars__main.yml": "svc: web\n",
    })
    play = play_of(tmp_path, """
        - hosts: all
          roles: [web]
          handlers:
            - name: play handler
              debug: msg=h
              listen: [topic, other]
    """)
    role_handler, play_handler = play.handlers
    assert (role_handler.name, role_handler.role, role_handler.role_path) == ("restart web", "web", str(root))
    assert role_handler.vars == {"svc": "web"}
    assert play_handler.name == "play handler" and play_handler.role is None
    assert play_handler.listen == ("topic", "other")


def test_handlers_an_include_brings_come_after_the_play_handlers(tmp_path: Path) -> None:
    # Ansible adds them when the include runs (IncludeRole.get_block_list);
    # those of roles: and import_role, loaded with the play, come first.
    for name in ("inc", "imp", "nested"):
        make_role(tmp_path / "roles", name, **{
            "handlers__main.yml": "- name: %s handler\n  debug: msg=h\n" % name})
    write(tmp_path / "more.yml", "- import_role: name=nested\n")
    play = play_of(tmp_path, """
        - hosts: all
          tasks:
            - include_role: name=inc
            - import_role: name=imp
            - include_tasks: more.yml
          handlers:
            - name: play handler
              debug: msg=h
    """)
    assert [h.name for h in play.handlers] == ["imp handler", "play handler", "inc handler",
                                               "nested handler"]


def test_a_dynamic_include_tasks_brings_its_import_roles_handlers_and_defaults(
        tmp_path: Path) -> None:
    from ioc.loader import load_include

    make_role(tmp_path / "roles", "dfl", **{
        "handlers__main.yml": "- name: dfl handler\n  debug: msg=h\n",
        "defaults__main.yml": "dv: from_defaults\n"})
    write(tmp_path / "more.yml", "- import_role: name=dfl\n")
    play = play_of(tmp_path, """
        - hosts: all
          vars: {f: more.yml}
          tasks:
            - include_tasks: "{{ f }}"
    """)
    included = load_include(play, play.tasks[0], {"_raw_params": "more.yml"}, {})
    assert [h.name for h in included.handlers] == ["dfl handler"]
    assert included.role_defaults == {"dv": "from_defaults"}


def test_handler_listen_may_be_a_string(tmp_path: Path) -> None:
    play = play_of(tmp_path, """
        - hosts: all
          handlers:
            - {name: h, debug: msg=x, listen: topic}
    """)
    assert play.handlers[0].listen == ("topic",)


def test_role_task_import_is_relative_to_role_tasks_dir(tmp_path: Path) -> None:
    make_role(tmp_path / "roles", "web", "- import_tasks: install.yml\n", **{
        "tasks__install.yml": "- debug: msg=install\n",
    })
    play = play_of(tmp_path, "- hosts: all\n  roles: [web]\n")
    imported = play.tasks[0].block[0]
    assert isinstance(imported, Block) and imported.block[0].args == {"msg": "install"}
    assert imported.block[0].role == "web"


def test_import_role_expands_inline_with_tasks_from(tmp_path: Path) -> None:
    root = make_role(tmp_path / "roles", "db", **{"tasks__setup.yml": "- debug: msg=setup\n"})
    (block,) = tasks_of(tmp_path, """
        - import_role:
            name: db
            tasks_from: setup
          when: want_db
          vars: {x: 1}
    """)
    assert isinstance(block, Block) and block.role == "db" and block.role_path == str(root)
    assert block.vars == {"x": 1}
    assert block.block[0].args == {"msg": "setup"} and block.block[0].when == ("want_db",)


def test_role_dependencies_run_before_the_role_once(tmp_path: Path) -> None:
    make_role(tmp_path / "roles", "common", "- debug: msg=common\n")
    make_role(tmp_path / "roles", "web", **{"meta__main.yml": "dependencies: [common]\n"})
    play = play_of(tmp_path, "- hosts: all\n  roles: [common, web]\n")
    assert [b.role for b in play.tasks] == ["common", "web"]


def test_same_role_with_different_params_runs_twice(tmp_path: Path) -> None:
    make_role(tmp_path / "roles", "web")
    play = play_of(tmp_path, """
        - hosts: all
          roles:
            - {role: web, port: 1}
            - {role: web, port: 2}
            - {role: web, port: 2}
    """)
    assert [b.params for b in play.tasks] == [{"port": 1}, {"port": 2}]


def test_defaults_of_all_roles_are_merged_later_winning(tmp_path: Path) -> None:
    make_role(tmp_path / "roles", "a", **{"defaults__main.yml": "x: a\nonly_a: 1\n"})
    make_role(tmp_path / "roles", "b", **{"defaults__main.yml": "x: b\n"})
    play = play_of(tmp_path, "- hosts: all\n  roles: [a, b]\n")
    assert play.role_defaults == {"x": "b", "only_a": 1}


# ---------------------------------------------------------------- handlers and unsupported keywords


def test_imported_handlers_are_flattened_with_the_import_vars(tmp_path: Path) -> None:
    write(tmp_path / "handlers.yml", "- {name: h1, debug: msg=one, vars: {own: 1}}\n")
    play = play_of(tmp_path, """
        - hosts: all
          handlers:
            - import_tasks: handlers.yml
              vars: {shared: 2}
    """)
    (handler,) = play.handlers
    assert isinstance(handler, Task) and handler.name == "h1"
    assert handler.vars == {"shared": 2, "own": 1}


def test_async_poll_and_timeout_reach_the_ir(tmp_path: Path, caplog: pytest.LogCaptureFixture
                                              ) -> None:
    """The runner runs them; ``timeout`` is inherited from an enclosing block as in Ansible."""
    fire, block = tasks_of(tmp_path, """
        - command: sleep 100
          async: 200
          poll: 0
        - block:
            - command: sleep 1
          timeout: 5
    """)
    assert (fire.async_val, fire.poll, fire.timeout) == (200, 0, None)
    assert block.block[0].timeout == 5
    assert "not supported" not in caplog.text


def test_a_free_form_include_with_a_comparison_is_refused_like_ansible(tmp_path):
    """``include_tasks: "{{ a == b }}.yml"`` splits as k=v; Ansible refuses it too."""
    book = tmp_path / "play.yml"
    book.write_text("- hosts: all\n  tasks:\n"
                    "    - include_tasks: \"x{{ inventory_hostname == 'h2' }}.yml\"\n")
    with pytest.raises(LoadError) as info:
        load_playbook(str(book))
    assert "Invalid options for include_tasks" in str(info.value)
    assert str(info.value).startswith("%s:3: " % book)


def test_conditions_remember_where_they_were_written(tmp_path):
    """Ansible names a non-boolean when by path:line:col; the IR keeps that position."""
    book = tmp_path / "play.yml"
    book.write_text(textwrap.dedent("""\
        - hosts: all
          tasks:
            - block:
                - debug: msg=x
                  when: [a, "'b'"]
              when: outer
        """))
    task = load_playbook(str(book)).plays[0].tasks[0].block[0]
    assert task.when == ("outer", "a", "'b'")
    assert task.when_origins == ("%s:6:13" % book, "%s:5:18" % book, "%s:5:21" % book)


# ---------------------------------------------------------------- vars_prompt


def test_vars_prompt_entries_are_kept_for_the_run_and_the_play_remote_user(tmp_path: Path) -> None:
    play = play_of(tmp_path, """
        - hosts: all
          remote_user: deploy
          vars_prompt:
            - name: who
              prompt: Who
              private: false
    """)
    assert play.vars_prompt == ({"name": "who", "prompt": "Who", "private": False},)
    assert play.remote_user == "deploy" and "who" not in play.vars


@pytest.mark.parametrize("entry, message", [
    ("- prompt: Who", "Invalid vars_prompt data structure, missing 'name' key"),
    ("- {name: who, echo: true}", "Invalid vars_prompt data structure, found unsupported key 'echo'"),
])
def test_a_bad_vars_prompt_entry_is_ansibles_load_error(tmp_path: Path, entry: str,
                                                         message: str) -> None:
    with pytest.raises(LoadError) as info:
        play_of(tmp_path, "- hosts: all\n  vars_prompt:\n    %s\n" % entry)
    assert str(info.value).startswith("%s:2" % (tmp_path / "site.yml"))
    assert message in str(info.value)


def test_an_unnamed_include_role_is_shown_with_its_role_as_ansible_shows_it(tmp_path: Path) -> None:
    """``TASK [include_role : web]``; a templated name as written, the action as written."""
    from ioc.agentless_runner.flow import template_name
    from ioc.agentless_runner.templating import Templar

    first, second = tasks_of(tmp_path, """
        - include_role:
            name: web
          loop: [1]
        - ansible.builtin.include_role:
            name: "{{ r }}"
          loop: [1]
    """)
    assert first.display_name == "include_role : web"
    assert second.display_name == "ansible.builtin.include_role : {{ r }}"
    wire = {"action": "include_role", "action_written": "include_role", "args": {"name": "web"}}
    assert template_name(wire, Templar({})) == "include_role : web"


@pytest.mark.parametrize("written, where", [
    ("    - debug: msg=x\n      when: !unsafe 1 == 0\n", "4"),
    ("    - ping:\n      changed_when: [ok, !unsafe 1 == 1]\n", "4"),
    ("    - block:\n        - debug: msg=x\n      when: !unsafe x\n", "5"),
])
def test_a_condition_written_unsafe_is_refused_where_it_was_written(tmp_path, written, where):
    """Ansible never evaluates ``!unsafe`` text and fails the task as untrusted;
    ioc-run's conditions carry no trust to the runner, so it refuses them before
    anything runs, naming where (the conditionals target's output_validation_tests)."""
    book = tmp_path / "play.yml"
    book.write_text("- hosts: all\n  tasks:\n" + written)
    with pytest.raises(LoadError) as info:
        load_playbook(str(book))
    assert "written !unsafe" in str(info.value) and "mitogen_batch" in str(info.value)
    assert str(info.value).startswith("%s:%s: " % (book, where)), str(info.value)
    # the same conditions, trusted, load
    book.write_text("- hosts: all\n  tasks:\n" + written.replace("!unsafe ", ""))
    load_playbook(str(book))
