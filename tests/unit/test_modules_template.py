"""template module: rendering with the task's Templar, written like copy."""
import os
import stat

import pytest

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext, TaskError
from ioc.agentless_runner.templating import Templar

template = modules.get("template")


def ctx(files, check=False, diff=False, **variables):
    return ModuleContext(check_mode=check, diff_mode=diff, templar=Templar(variables),
                         files=files)


#: What the controller adds to a template's entry (ioc.ansible.template_vars).
TEMPLATE_VARS = {"template_host": "ctl", "template_uid": "alice",
                 "template_mtime": (2024, 2, 29, 13, 14, 15, 16),
                 "ansible_managed": "Ansible managed"}


def shipped(content, src="motd.j2", mode=0o644, **extra):
    entry = {"kind": "file", "path": "/play/templates/" + src, "mode": mode,
             "content": content.encode("utf-8") if isinstance(content, str) else content,
             "template": TEMPLATE_VARS}
    entry.update(extra)
    return {src: entry}


def run(files, check=False, diff=False, variables=None, **args):
    args.setdefault("src", "motd.j2")
    return template.run(args, ctx(files, check, diff, **(variables or {})))


def mode_of(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def test_render_write_idempotent(tmp_path):
    dest = tmp_path / "motd"
    files = shipped("Hello {{ name }}\n{% for i in items %}\n- {{ i }}\n{% endfor %}\n")
    variables = {"name": "{{ first }} x", "first": "ioc", "items": [1, 2]}
    r = run(files, variables=variables, dest=str(dest))
    assert dest.read_text() == "Hello ioc x\n- 1\n- 2\n"
    assert r["changed"] is True and r["dest"] == str(dest) and r["state"] == "file"
    assert r["checksum"] and r["md5sum"] and r["mode"] == "0644"
    r = run(files, variables=variables, dest=str(dest))
    assert r["changed"] is False
    assert sorted(os.listdir(str(tmp_path))) == ["motd"]


def test_template_vars_and_ansible_managed(tmp_path):
    dest = tmp_path / "out"
    files = shipped("{{ ansible_managed }}|{{ template_path }}|{{ template_fullpath }}|"
                    "{{ template_host }}|{{ template_uid }}|{{ template_destpath }}|"
                    "{{ template_mtime.isoformat() }}|{{ template_run_date.year > 2000 }}")
    run(files, dest=str(dest))
    assert dest.read_text() == "Ansible managed|motd.j2|/play/templates/motd.j2|ctl|alice|" \
        "%s|2024-02-29T13:14:15.000016|True" % dest


def test_ansible_managed_is_a_template_of_the_template_vars_not_the_file_name(tmp_path):
    """The configured value's ``{{ template_path }}`` (from ``{file}``) is rendered;
    the path itself, "{{" in it or not, is not."""
    dest = tmp_path / "out"
    files = shipped("{{ ansible_managed }}", src="{{ 1 % 0 }}.j2", template=dict(
        TEMPLATE_VARS, ansible_managed="by {{ template_uid }}: {{ template_path }}"))
    run(files, src="{{ 1 % 0 }}.j2", dest=str(dest))
    assert dest.read_text() == "by alice: {{ 1 % 0 }}.j2"


def test_a_variable_ansible_managed_is_not_replaced(tmp_path):
    dest = tmp_path / "out"
    run(shipped("{{ ansible_managed }}"), dest=str(dest),
        variables={"ansible_managed": "mine, of {{ template_path }}"})
    assert dest.read_text() == "mine, of motd.j2"


def test_an_entry_without_the_controllers_template_vars_fails_the_task(tmp_path):
    files = shipped("x")
    del files["motd.j2"]["template"]
    r = run(files, dest=str(tmp_path / "out"))
    assert r["failed"] and "template variables" in r["msg"]
    assert not (tmp_path / "out").exists()


def test_options_trim_lstrip_newline_delimiters_encoding(tmp_path):
    dest = tmp_path / "out"
    files = shipped("a\n  [% if x %]\n<<x>>\n  [% endif %]\n")
    run(files, variables={"x": "é"}, dest=str(dest), lstrip_blocks=True,
        newline_sequence="\\r\\n", block_start_string="[%", block_end_string="%]",
        variable_start_string="<<", variable_end_string=">>", output_encoding="latin-1")
    assert dest.read_bytes() == "a\r\né\r\n".encode("latin-1")
    run(shipped("{% if true %}\nx\n{% endif %}\n"), dest=str(dest), trim_blocks=False)
    assert dest.read_text() == "\nx\n"


def test_mode_owner_backup_validate_force(tmp_path):
    dest = tmp_path / "conf"
    dest.write_text("old\n")
    r = run(shipped("new\n", mode=0o755), dest=str(dest), mode="preserve", backup=True)
    assert mode_of(dest) == 0o755 and r["backup_file"].startswith(str(dest) + ".")
    assert open(r["backup_file"]).read() == "old\n"
    r = run(shipped("bad\n"), dest=str(dest), validate="grep -q good %s")
    assert r["failed"] and r["msg"] == "failed to validate" and dest.read_text() == "new\n"
    r = run(shipped("other\n"), dest=str(dest), force=False)
    assert r["changed"] is False and dest.read_text() == "new\n"
    assert len(os.listdir(str(tmp_path))) == 2  # conf and its backup, no temp file


def test_check_and_diff_mode(tmp_path):
    dest = tmp_path / "out"
    dest.write_text("v=1\n")
    r = run(shipped("v={{ v }}\n"), check=True, diff=True, variables={"v": 2}, dest=str(dest))
    assert r["changed"] is True and dest.read_text() == "v=1\n"
    assert r["diff"] == [{"before_header": str(dest), "before": "v=1\n",
                         "after_header": "/play/templates/motd.j2", "after": "v=2\n"}]
    r = run(shipped("x"), check=True, dest=str(tmp_path / "new"))
    assert r["changed"] is True and not (tmp_path / "new").exists()


def test_dest_directory_uses_template_basename(tmp_path):
    r = run(shipped("x", src="templates/app.conf.j2"), src="templates/app.conf.j2",
            dest=str(tmp_path))
    assert (tmp_path / "app.conf.j2").read_text() == "x" and r["changed"]


def test_failures(tmp_path):
    dest = tmp_path / "out"
    # the action's errors about the file ("Task failed: ...", at the file's origin)
    with pytest.raises(TaskError) as raised:
        run(shipped("{{ nope }}"), dest=str(dest))
    assert raised.value.msg == "'nope' is undefined"
    assert raised.value.origin == ["/play/templates/motd.j2", None]
    with pytest.raises(TaskError) as raised:
        run(shipped("line\n{% if %}"), dest=str(dest))
    assert raised.value.msg == ("Syntax error in template: Expected an expression, "
                                "got 'end of statement block'")
    assert raised.value.origin == ["/play/templates/motd.j2", 2]
    with pytest.raises(TaskError) as raised:
        run(shipped("{{ 1 / 0 }}"), dest=str(dest))
    assert raised.value.msg == "Error rendering template: division by zero"
    r = run({}, dest=str(dest))
    assert r["failed"] and r["msg"] == "Could not find or access 'motd.j2' on the Ansible Controller."
    r = run(shipped(b"\xff\xfe"), dest=str(dest))
    assert r["failed"] and r["msg"] == "Template source files must be utf-8 encoded"
    r = run(shipped("x"), dest=str(dest), newline_sequence="x")
    assert r["failed"] and r["msg"].startswith("newline_sequence needs to be one of")
    r = run(shipped("x"), dest=str(dest), state="file")
    assert r["failed"] and "Unsupported parameters for (template) module: state" in r["msg"]
    r = template.run({"src": "motd.j2"}, ctx(shipped("x")))
    assert r["failed"] and r["msg"] == "src and dest are required"
    assert os.listdir(str(tmp_path)) == []


def test_includes_imports_and_extends_find_the_shipped_templates(tmp_path):
    """The controller ships what a template names (``entry["loader"]``); a name it
    found nowhere fails as Jinja's FileSystemLoader words it, with the search path."""
    def found(text, name):
        return {"kind": "file", "path": "/play/templates/" + name, "content": text.encode()}
    loader = {"searchpath": ["/play/templates", "/play"], "files": {
        "base.j2": found("<{% block b %}{% endblock %}>", "base.j2"),
        "m.j2": found("{% macro up(x) %}{{ x | upper }}{% endmacro %}", "m.j2"),
        "part.j2": found("{{ name }}", "part.j2"),
        "gone.j2": {"kind": "missing"}}}
    dest = tmp_path / "out"
    run(shipped("{% extends 'base.j2' %}{% block b %}{% from 'm.j2' import up %}"
                "{{ up('a') }}{% include 'part.j2' %}{% endblock %}", loader=loader),
        dest=str(dest), variables={"name": "ioc"})
    assert dest.read_text() == "<Aioc>"
    with pytest.raises(TaskError) as raised:
        run(shipped("{% include 'gone.j2' %}", loader=loader), dest=str(dest))
    assert raised.value.msg == ("Error rendering template: 'gone.j2' not found in search "
                                "paths: '/play/templates', '/play'")
    with pytest.raises(TaskError) as raised:
        run(shipped("{% include name %}", loader=loader), dest=str(dest),
            variables={"name": "other.j2"})
    assert "'other.j2' that motd.j2 names is not known before the task runs" in raised.value.msg
