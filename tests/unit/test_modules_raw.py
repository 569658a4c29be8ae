"""raw: shell string, executable, results and check mode."""
from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

raw = modules.get("raw")


def run(check=False, env=None, **args):
    return raw.run(args, ModuleContext(check_mode=check, environment=env))


def test_runs_through_sh_unstripped():
    r = run(_raw_params="echo out; echo err >&2; echo $((1+1))")
    assert r == {"changed": True, "rc": 0, "stdout": "out\n2\n", "stdout_lines": ["out", "2"],
                 "stderr": "err\n", "stderr_lines": ["err"]}


def test_nonzero_rc_fails():
    r = run(_raw_params="exit 3")
    assert r["failed"] and r["rc"] == 3 and r["msg"] == "non-zero return code" and r["changed"]


def test_executable_and_environment_warning():
    r = run(_raw_params="echo ${BASH_VERSION:+bash}", executable="/bin/bash", env={"X": "1"})
    assert r["stdout"] == "bash\n"
    assert r["warnings"] == ["raw module does not support the environment keyword"]


def test_check_mode_skips(tmp_path):
    r = run(check=True, _raw_params="touch %s" % (tmp_path / "x"))
    assert r == {"changed": False, "skipped": True} and not (tmp_path / "x").exists()
