"""command/shell module: results shaped like ansible.builtin.command."""
import os
import re

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

command = modules.get("command")


def run(module, ctx=None, **args):
    args["_ioc_module"] = module
    return command.run(args, ctx or ModuleContext())


def test_registry_and_flags():
    assert modules.get("shell") is command
    assert command.SUPPORTS_CHECK_MODE is True
    assert "_raw_params" in command.OPTIONS and "chdir" in command.OPTIONS


def test_command_success_shape():
    r = run("command", _raw_params="echo 'hello  world' two")
    assert r["rc"] == 0 and r["changed"] is True and "failed" not in r
    assert r["cmd"] == ["echo", "hello  world", "two"]
    assert r["stdout"] == "hello  world two"
    assert r["stdout_lines"] == ["hello  world two"]
    assert r["stderr"] == "" and r["stderr_lines"] == []
    assert r["msg"] == ""
    assert re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{6})?$", r["start"])
    assert re.match(r"^\d+:\d\d:\d\d(\.\d{6})?$", r["delta"])
    assert "invocation" not in r


def test_command_does_not_use_a_shell():
    r = run("command", _raw_params="echo $((1+1)) ; true")
    assert r["stdout"] == "$((1+1)) ; true"


def test_command_expands_env_vars_like_ansible(tmp_path):
    ctx = ModuleContext(environment={"IOC_TEST_VAR": "val"})
    r = run("command", ctx, _raw_params="echo $IOC_TEST_VAR")
    # the variable is expanded from the module's own environment, not the child's
    assert r["rc"] == 0
    r = run("command", ctx, _raw_params="sh -c 'echo $IOC_TEST_VAR'")
    assert r["stdout"] == "val"


def test_shell_string_and_nonzero_rc():
    r = run("shell", _raw_params="echo out; echo err >&2; exit 3")
    assert r["cmd"] == "echo out; echo err >&2; exit 3"
    assert r["rc"] == 3 and r["failed"] is True
    assert r["msg"] == "The command exited with a non-zero return code."
    assert r["stdout"] == "out" and r["stderr"] == "err"
    assert r["changed"] is True


def test_shell_executable():
    r = run("shell", _raw_params="echo $0", executable="/bin/bash")
    assert r["stdout"] == "/bin/bash"


def test_cmd_and_argv_forms():
    assert run("command", cmd="echo a b")["stdout"] == "a b"
    r = run("command", argv=["echo", "a b", "c"])
    assert r["stdout"] == "a b c" and r["cmd"] == ["echo", "a b", "c"]


def test_no_command_and_both_forms():
    r = run("command")
    assert r["failed"] and r["msg"] == "no command given" and r["rc"] == 256
    r = run("command", _raw_params="echo", argv=["echo"])
    assert r["failed"] and r["msg"] == "only command or argv can be given, not both"


def test_missing_executable():
    r = run("command", _raw_params="nosuch-ioc-binary x")
    assert r["failed"] is True and r["rc"] == 2 and r["changed"] is False
    assert r["msg"] == "Error executing command."  # AnsibleModule.run_command's words
    assert r["stdout"] == "" and r["stdout_lines"] == []


def test_chdir_and_missing_chdir(tmp_path):
    r = run("command", _raw_params="pwd", chdir=str(tmp_path))
    assert r["stdout"] == str(tmp_path)
    r = run("command", _raw_params="pwd", chdir=str(tmp_path / "nope"))
    assert r["failed"] and r["msg"].startswith("Unable to change directory before execution: ")


def test_creates_skips(tmp_path):
    marker = tmp_path / "marker"
    marker.write_text("x")
    r = run("command", _raw_params="touch %s" % (tmp_path / "other"), creates=str(marker))
    assert r["changed"] is False and r["rc"] == 0 and "failed" not in r
    assert r["stdout"] == "skipped, since %s exists" % marker
    assert r["msg"] == "Did not run command since '%s' exists" % marker
    assert not (tmp_path / "other").exists()


def test_creates_glob_relative_to_chdir(tmp_path):
    (tmp_path / "a.txt").write_text("x")
    r = run("command", _raw_params="false", creates="*.txt", chdir=str(tmp_path))
    assert r["changed"] is False and r["rc"] == 0


def test_removes(tmp_path):
    gone = tmp_path / "gone"
    r = run("shell", _raw_params="echo ran", removes=str(gone))
    assert r["changed"] is False
    assert r["msg"] == "Did not run command since '%s' does not exist" % gone
    gone.write_text("x")
    r = run("shell", _raw_params="rm %s" % gone, removes=str(gone))
    assert r["changed"] is True and r["rc"] == 0 and not gone.exists()


def test_creates_absent_runs(tmp_path):
    target = tmp_path / "made"
    r = run("command", _raw_params="touch %s" % target, creates=str(target))
    assert r["changed"] is True and target.exists()
    r = run("command", _raw_params="touch %s" % target, creates=str(target))
    assert r["changed"] is False


def test_stdin_and_newline():
    r = run("command", _raw_params="cat", stdin="abc")
    assert r["stdout"] == "abc"
    r = run("shell", _raw_params="wc -c", stdin="abc", stdin_add_newline=False)
    assert r["stdout"].strip() == "3"
    r = run("shell", _raw_params="wc -c", stdin="abc")
    assert r["stdout"].strip() == "4"


def test_strip_empty_ends():
    r = run("shell", _raw_params="printf 'a\\n\\n'")
    assert r["stdout"] == "a"
    r = run("shell", _raw_params="printf 'a\\n\\n'", strip_empty_ends=False)
    assert r["stdout"] == "a\n\n" and r["stdout_lines"] == ["a", ""]


def test_environment_reaches_child():
    ctx = ModuleContext(environment={"IOC_ENV_X": "42"})
    assert run("shell", ctx, _raw_params="echo $IOC_ENV_X")["stdout"] == "42"


def test_check_mode_partial_support(tmp_path):
    ctx = ModuleContext(check_mode=True)
    target = tmp_path / "t"
    r = run("command", ctx, _raw_params="touch %s" % target)
    assert r["skipped"] is True and r["changed"] is False and not target.exists()
    r = run("command", ctx, _raw_params="touch %s" % target, creates=str(target))
    assert r["changed"] is True and r["msg"] == "Command would have run if not in check mode"
    target.write_text("")
    r = run("command", ctx, _raw_params="touch %s" % target, creates=str(target))
    assert r["msg"] == "Would not run command since '%s' exists" % target


def test_executable_ignored_for_command_with_warning():
    r = run("command", _raw_params="echo x", executable="/bin/bash")
    assert r["stdout"] == "x" and r["warnings"]


def test_unsupported_option():
    r = run("command", _raw_params="echo", bogus=1)
    assert r["failed"] and "Unsupported parameters for (command) module: bogus" in r["msg"]


def test_non_utf8_output():
    r = run("shell", _raw_params="printf '\\377ok'")
    assert r["stdout"].endswith("ok") and r["rc"] == 0


def test_does_not_change_runner_cwd(tmp_path):
    before = os.getcwd()
    run("command", _raw_params="true", chdir=str(tmp_path))
    assert os.getcwd() == before
