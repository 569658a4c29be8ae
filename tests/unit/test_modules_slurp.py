"""slurp: base64 content and Ansible's error messages."""
import base64
import os

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

slurp = modules.get("slurp")


def run(check=False, **args):
    return slurp.run(args, ModuleContext(check_mode=check))


def test_content(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"\x00bin\n")
    r = run(src=str(f))
    assert r == {"changed": False, "content": base64.b64encode(b"\x00bin\n").decode(),
                 "source": str(f), "encoding": "base64"}
    assert run(check=True, path=str(f))["content"] == r["content"]


def test_errors(tmp_path):
    r = run(src=str(tmp_path / "none"))
    assert r["failed"] and r["msg"] == "File not found: %s" % (tmp_path / "none")
    r = run(src=str(tmp_path))
    assert r["failed"] and r["msg"] == "Source is a directory and must be a file: %s" % tmp_path
    r = run()
    assert r["failed"] and r["msg"] == "missing required arguments: src"
    assert os.listdir(str(tmp_path)) == []
