"""script: the controller script runs from a private temp file with its arguments."""
import os

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

script = modules.get("script")

SCRIPT = b"#!/bin/sh\necho \"args:$#:$1:$2\"\npwd\necho \"env:$IOC_X\"\necho err >&2\nexit ${RC:-0}\n"


def run(tmp_path, check=False, env=None, content=SCRIPT, **args):
    files = {"scripts/run.sh": {"kind": "file", "path": "/ctl/scripts/run.sh", "mode": 0o644,
                                "content": content}}
    ctx = ModuleContext(check_mode=check, environment=env, tmpdir=str(tmp_path), files=files)
    return script.run(args, ctx)


def test_runs_with_args_env_chdir_and_cleans_up(tmp_path):
    r = run(tmp_path, _raw_params="scripts/run.sh 'a b' c", chdir="/", env={"IOC_X": "1"})
    assert r["changed"] is True and r["rc"] == 0
    assert r["stdout_lines"] == ["args:2:a b:c", "/", "env:1"]
    assert r["stderr"] == "err\n" and "failed" not in r
    assert os.listdir(str(tmp_path)) == []


def test_nonzero_rc_and_executable(tmp_path):
    r = run(tmp_path, cmd="scripts/run.sh", env={"RC": "4"})
    assert r["failed"] and r["rc"] == 4 and r["msg"] == "non-zero return code"
    r = run(tmp_path, _raw_params="scripts/run.sh", executable="/bin/bash",
            content=b"echo ${BASH_VERSION:+bash}\n")
    assert r["stdout"] == "bash\n"
    assert os.listdir(str(tmp_path)) == []


def test_creates_removes_and_check_mode(tmp_path):
    marker = tmp_path / "marker"
    marker.write_text("")
    r = run(tmp_path, _raw_params="scripts/run.sh", creates=str(marker))
    assert r == {"changed": False, "skipped": True,
                 "msg": "%s exists, matching creates option" % marker}
    r = run(tmp_path, _raw_params="scripts/run.sh", removes=str(tmp_path / "none"))
    assert r["skipped"] and r["msg"].endswith("does not exist, matching removes option")
    r = run(tmp_path, check=True, _raw_params="scripts/run.sh")
    assert r["skipped"] and r["msg"] == "Check mode is not supported for this task."
    r = run(tmp_path, check=True, _raw_params="scripts/run.sh", removes=str(marker))
    assert r == {"changed": True}
    assert os.listdir(str(tmp_path)) == ["marker"]


def test_errors(tmp_path):
    r = run(tmp_path, _raw_params="scripts/other.sh")
    assert r["failed"] and r["msg"] == \
        "Could not find or access 'scripts/other.sh' on the Ansible Controller."
    r = run(tmp_path, _raw_params="scripts/run.sh", chdir="rel")
    assert r["failed"] and r["msg"] == \
        "chdir rel must be an absolute path for a Unix-aware remote node"
    r = run(tmp_path)
    assert r["failed"] and r["msg"] == "one of the following is required: _raw_params, cmd"
