"""tempfile: files and directories with prefix/suffix."""
import os
import stat

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

tempfile_mod = modules.get("tempfile")


def run(**args):
    return tempfile_mod.run(args, ModuleContext())


def test_file_and_directory(tmp_path):
    r = run(path=str(tmp_path), prefix="x.", suffix=".tmp")
    assert r["changed"] is True and os.path.isfile(r["path"])
    name = os.path.basename(r["path"])
    assert name.startswith("x.") and name.endswith(".tmp")
    assert stat.S_IMODE(os.stat(r["path"]).st_mode) == 0o600
    r = run(path=str(tmp_path), state="directory")
    assert os.path.isdir(r["path"]) and os.path.basename(r["path"]).startswith("ansible.")


def test_errors_and_no_check_mode(tmp_path):
    r = run(path=str(tmp_path / "none"))
    assert r["failed"] and "No such file or directory" in r["msg"]
    r = run(state="link")
    assert r["failed"] and r["msg"] == "value of state must be one of: file, directory, got: link"
    assert tempfile_mod.SUPPORTS_CHECK_MODE is False
