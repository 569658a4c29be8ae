"""``ioc-adhoc``'s play, per-host lines, closing count and exit code; ``ioc-ssh``'s
command line (no connection: tests/integration/test_adhoc.py runs them)."""
from __future__ import annotations

import io
import shlex

import pytest

from ioc import adhoc
from ioc.callbacks.base import Status
from ioc.errors import IocError
from ioc.ssh import command_line
from ioc.transport.spec import spec_for


def task(*argv: str) -> dict:
    return adhoc.task_of(adhoc.build_parser().parse_args(["all", *argv]))


def test_the_task_is_ansibles_adhoc_task_with_host_placeholders():
    assert task("-a", "echo ?HOST") == {"command": "echo {{ inventory_hostname }}"}
    assert task("-m", "stat", "-a", "path=/tmp/?HOST") == {
        "stat": "path=/tmp/{{ inventory_hostname }}"}
    assert task("-m", "stat", "-a", '{"path": "/etc"}') == {"stat": {"path": "/etc"}}
    assert task("-m", "ping") == {"ping": None}
    with pytest.raises(IocError, match="No argument passed to shell module"):
        task("-m", "shell")
    with pytest.raises(IocError, match="-m/-a and --push: choose one"):
        task("-a", "true", "--push", "a", "b")


def test_push_pull_and_script_are_copy_fetch_and_script(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert task("--push", "f", "/d/?HOST") == {
        "copy": {"src": str(tmp_path / "f"), "dest": "/d/{{ inventory_hostname }}"}}
    assert task("--pull", "/etc/hostname", "got") == {
        "fetch": {"src": "/etc/hostname", "dest": "%s/{{ inventory_hostname }}/" % (tmp_path / "got"),
                  "flat": True}}
    assert task("--script", "s.sh", "?HOST", "x y") == {
        "script": "%s '{{ inventory_hostname }}' 'x y'" % (tmp_path / "s.sh")}


def lines(status, result, action="command", one_line=False, color=False):
    out = io.StringIO()
    adhoc.PerHost(out, color, one_line).runner_result(
        "h1", adhoc.TaskView(name="", action=action, location=""), status, result)
    return out.getvalue()


def test_per_host_lines_and_colours():
    ok = {"changed": True, "rc": 0, "stdout": "out", "stderr": ""}
    assert lines(Status.OK, ok) == "h1 | CHANGED | rc=0 >>\nout\n"
    assert lines(Status.OK, ok, one_line=True) == "h1 | CHANGED | rc=0 | (stdout) out\n"
    # green: ok; yellow: ok but stderr written; red: failed or unreachable
    assert lines(Status.OK, ok, color=True) == "\033[0;32mh1 | CHANGED | rc=0 >>\033[0m\n" \
                                               "\033[0;32mout\033[0m\n"
    assert lines(Status.OK, {**ok, "stderr": "e"}, color=True).startswith("\033[0;33m")
    assert lines(Status.OK, {"changed": True}, action="copy", color=True).startswith("\033[0;33m")
    assert lines(Status.OK, {"changed": False}, action="stat", color=True).startswith("\033[0;32m")
    failed = {"failed": True, "rc": 2, "stdout": "", "stderr": "no", "msg": "non-zero"}
    assert lines(Status.FAILED, failed, color=True).startswith("\033[0;31mh1 | FAILED | rc=2 >>")
    assert lines(Status.FAILED, failed, one_line=True) == \
        "h1 | FAILED | rc=2 | (stdout)  (stderr) no\n"
    gone = {"unreachable": True, "msg": "refused", "_ansible_no_log": False}
    assert lines(Status.UNREACHABLE, gone, one_line=True) == "h1 | UNREACHABLE!: refused\n"
    assert lines(Status.UNREACHABLE, gone).startswith('h1 | UNREACHABLE! => {\n    "msg"')
    assert lines(Status.OK, {"changed": False, "failed": False, "ping": "pong"}, action="ping",
                 one_line=True) == 'h1 | SUCCESS => {"changed": false,"ping": "pong"}\n'


@pytest.mark.parametrize("statuses, code", [
    ({"a": Status.OK, "b": Status.SKIPPED}, 0),
    ({"a": Status.OK, "b": Status.FAILED}, 2),
    ({"a": Status.UNREACHABLE, "b": Status.FAILED}, 4),
    ({"a": Status.OK}, 2),  # b never answered (the run ended first): it failed
])
def test_closing_count_failed_file_and_exit_code(tmp_path, statuses, code):
    out = io.StringIO()
    failed_file = tmp_path / "failed"
    failed_file.write_text("stale\n")
    outcomes = {h: adhoc.Outcome(s, {}) for h, s in statuses.items()}
    assert adhoc.summarise(["a", "b"], outcomes, str(failed_file), out) == code
    bad = [h for h in "ab" if statuses.get(h) in (None, Status.FAILED, Status.UNREACHABLE)]
    if bad:
        assert out.getvalue().startswith("%d succeeded, %d failed, 2 total\nfailed: %s\n"
                                         % (2 - len(bad), len(bad), " ".join(bad)))
        assert failed_file.read_text() == "".join(h + "\n" for h in bad)
    else:  # no host failed: the previous run's list is gone
        assert out.getvalue() == "2 succeeded, 0 failed, 2 total\n"
        assert not failed_file.exists()


def test_ioc_ssh_command_line_is_the_runs_and_nests_via_hops():
    hop = spec_for("hop", {"ansible_host": "10.0.0.1", "ansible_user": "u",
                           "ansible_ssh_common_args": "-o HostKeyAlias=hop"})
    target = spec_for("t", {"ansible_host": "10.0.0.2", "ansible_port": 2222,
                            "ansible_ssh_private_key_file": "/k", "mitogen_via": "hop"})
    from dataclasses import replace

    target = replace(target, via_spec=hop)
    argv = command_line(target, "echo hi; exit 3", tty=True)
    assert argv[:2] == ["ssh", "-t"] and argv[-2] == "10.0.0.1"
    assert ["-l", "u"] == argv[argv.index("-l"):argv.index("-l") + 2]
    inner = shlex.split(argv[-1])
    assert inner[:2] == ["ssh", "-t"] and inner[-2:] == ["10.0.0.2", "echo hi; exit 3"]
    assert ["-p", "2222"] == inner[inner.index("-p"):inner.index("-p") + 2]
    assert "HostKeyAlias=hop" in argv and "HostKeyAlias=hop" not in inner
    plain = command_line(hop, None, tty=False)
    assert "-t" not in plain and plain[-1] == "10.0.0.1"
