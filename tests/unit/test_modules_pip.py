"""pip module: hand-built wheels installed with --no-index into venvs in tmp dirs.

No network: the wheels are zip files written here, and every pip call gets
``--no-index --find-links`` through ``extra_args`` (or the environment).
"""
import base64
import hashlib
import json
import os
import subprocess
import zipfile

import pytest

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext
from ioc.agentless_runner.modules import pip as pip_impl

pip = modules.get("pip")

PKG = "ioctestpkg"


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def build_wheel(dest, name, version):
    """A minimal pure-Python wheel: one module and its dist-info."""
    dist = "%s-%s.dist-info" % (name, version)
    files = {
        "%s/__init__.py" % name: ("VERSION = %r\n" % version).encode(),
        dist + "/METADATA": ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
                             % (name, version)).encode(),
        dist + "/WHEEL": b"Wheel-Version: 1.0\nGenerator: ioc-tests\nRoot-Is-Purelib: true\n"
                         b"Tag: py3-none-any\n",
    }
    record = [_record_line(n, d) for n, d in files.items()] + [dist + "/RECORD,,"]
    files[dist + "/RECORD"] = ("\n".join(record) + "\n").encode()
    path = os.path.join(str(dest), "%s-%s-py3-none-any.whl" % (name, version))
    with zipfile.ZipFile(path, "w") as z:
        for n, d in files.items():
            z.writestr(n, d)
    return path


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    d = tmp_path_factory.mktemp("wheels")
    for v in ("1.0", "2.0"):
        build_wheel(d, PKG, v)
    return str(d)


@pytest.fixture(scope="module")
def venv(tmp_path_factory, wheels):
    """A venv made once by the module itself (python -m venv); later tests reuse it."""
    path = str(tmp_path_factory.mktemp("venvs") / "shared")
    r = pip.run({"name": PKG, "version": "1.0", "virtualenv": path,
                 "virtualenv_command": "python3 -m venv",
                 "extra_args": "--no-index --find-links %s" % wheels}, _ctx())
    assert r["changed"] is True and "failed" not in r, r
    return path


def _ctx(check_mode=False):
    return ModuleContext(check_mode=check_mode,
                         environment={"PIP_DISABLE_PIP_VERSION_CHECK": "1",
                                      "PIP_NO_INPUT": "1"})


def run(venv_path, wheels, check_mode=False, **args):
    args.setdefault("virtualenv", venv_path)
    args.setdefault("extra_args", "--no-index --find-links %s" % wheels)
    return pip.run(args, _ctx(check_mode))


def installed(venv_path):
    out = subprocess.run([os.path.join(venv_path, "bin", "pip"), "list", "--format=json"],
                         capture_output=True, text=True, check=True,
                         env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")).stdout
    return dict((p["name"], p["version"]) for p in json.loads(out))


def test_flags():
    assert pip.SUPPORTS_CHECK_MODE is True
    assert {"name", "version", "requirements", "virtualenv", "virtualenv_command", "state",
            "executable", "extra_args", "chdir"} <= pip.OPTIONS


def test_venv_created_and_package_installed(venv, wheels):
    assert os.path.exists(os.path.join(venv, "bin", "activate"))
    assert installed(venv)[PKG] == "1.0"


def test_present_is_idempotent_and_reports_ansible_keys(venv, wheels):
    run(venv, wheels, name=[PKG])
    r = run(venv, wheels, name=[PKG])
    assert r["changed"] is False and "failed" not in r
    assert r["name"] == [PKG] and r["version"] is None and r["state"] == "present"
    assert r["requirements"] is None and r["virtualenv"] == venv
    assert r["cmd"][0] == os.path.join(venv, "bin", "pip3") and r["cmd"][1] == "install"
    assert "Requirement already satisfied" in r["stdout"]


def test_check_mode_compares_specifiers(venv, wheels):
    run(venv, wheels, name="%s==1.0" % PKG)
    r = run(venv, wheels, check_mode=True, name="%s>=1.0,<2" % PKG, extra_args=None)
    assert r["changed"] is False and r["cmd"].endswith("list --format=freeze")
    assert "%s==1.0" % PKG in r["stdout"]
    r = run(venv, wheels, check_mode=True, name=PKG, version="2.0", extra_args=None)
    assert r["changed"] is True and installed(venv)[PKG] == "1.0"
    r = run(venv, wheels, check_mode=True, name="ioc-no-such-pkg", state="absent",
            extra_args=None)
    assert r["changed"] is False
    # extra_args make check mode assume a change, as in Ansible
    assert run(venv, wheels, check_mode=True, name=PKG)["changed"] is True


def test_version_upgrade_latest_and_forcereinstall(venv, wheels):
    r = run(venv, wheels, name=PKG, version="2.0")
    assert r["changed"] is True and installed(venv)[PKG] == "2.0"
    assert "%s==2.0" % PKG in r["cmd"]
    r = run(venv, wheels, name="%s==1.0" % PKG)
    assert r["changed"] is True and installed(venv)[PKG] == "1.0"
    r = run(venv, wheels, name=PKG, state="latest")
    assert r["changed"] is True and installed(venv)[PKG] == "2.0"
    assert run(venv, wheels, name=PKG, state="latest")["changed"] is False
    r = run(venv, wheels, name=PKG, state="forcereinstall")
    assert r["changed"] is True and "--force-reinstall" in r["cmd"]


def test_absent(venv, wheels):
    run(venv, wheels, name=PKG)
    r = run(venv, wheels, name=PKG, state="absent", extra_args=None)
    assert r["changed"] is True and PKG not in installed(venv)
    assert r["cmd"][1:3] == ["uninstall", "-y"]
    r = run(venv, wheels, name=PKG, state="absent", extra_args=None)
    assert r["changed"] is False and "failed" not in r


def test_requirements_file_and_chdir(venv, wheels, tmp_path):
    (tmp_path / "requirements.txt").write_text("%s==1.0\n" % PKG)
    r = run(venv, wheels, requirements="requirements.txt", chdir=str(tmp_path))
    assert r["changed"] is True and r["requirements"] == "requirements.txt"
    assert installed(venv)[PKG] == "1.0"
    r = run(venv, wheels, requirements="requirements.txt", chdir=str(tmp_path))
    assert r["changed"] is False


def test_executable(venv, wheels):
    r = pip.run({"name": PKG, "executable": os.path.join(venv, "bin", "pip"),
                 "extra_args": "--no-index --find-links %s" % wheels}, _ctx())
    assert "failed" not in r and r["cmd"][0] == os.path.join(venv, "bin", "pip")
    assert r["virtualenv"] is None


def test_install_failure_message(venv, wheels):
    r = run(venv, wheels, name="ioc-no-such-pkg")
    assert r["failed"] is True and r["msg"].startswith("stdout: ")
    assert "No matching distribution found for ioc-no-such-pkg" in r["msg"]
    assert r["cmd"][-1] == "ioc-no-such-pkg"


def test_check_mode_does_not_create_a_venv(tmp_path):
    r = pip.run({"name": PKG, "virtualenv": str(tmp_path / "v")}, _ctx(check_mode=True))
    assert r == {"changed": True} and not (tmp_path / "v").exists()


def test_argument_errors(tmp_path):
    assert pip.run({}, _ctx())["msg"] == "one of the following is required: name, requirements"
    r = pip.run({"name": "a", "requirements": "r.txt"}, _ctx())
    assert r["msg"] == "parameters are mutually exclusive: name|requirements"
    r = pip.run({"name": "a", "version": "1", "state": "latest"}, _ctx())
    assert r["msg"] == "version is incompatible with state=latest"
    r = pip.run({"name": ["a", "b"], "version": "1"}, _ctx(check_mode=True))
    assert r["msg"].startswith("'version' argument is ambiguous")
    r = pip.run({"name": "a>1", "version": "2"}, _ctx(check_mode=True))
    assert r["msg"].startswith("The 'version' argument conflicts")
    r = pip.run({"name": "a", "virtualenv": str(tmp_path / "v"),
                 "virtualenv_command": "python3 -m venv", "virtualenv_python": "python3"}, _ctx())
    assert r["msg"].startswith("virtualenv_python should not be used")


@pytest.mark.parametrize("spec,version,expected", [
    ("==1.0", "1.0.0", True), ("==1.0", "1.0.1", False), ("==1.*", "1.9", True),
    ("!=1.*", "1.9", False), (">=1.0", "1.0rc1", False), ("<2", "1.99", True),
    (">1.0", "1.0.post1", True), ("~=1.4.2", "1.4.9", True), ("~=1.4.2", "1.5.0", False),
    ("~=2.2", "2.9", True), (">=1.0a1", "1.0.dev1", False), ("<=1!0.1", "5.0", True),
    ("===1.0", "1.0", True), ("==1.0+local", "1.0", True), (">=2.0", "junk", False),
])
def test_specifiers(spec, version, expected):
    op = next(o for o in pip_impl._OPS if spec.startswith(o))
    assert pip_impl.specifier_contains(op, spec[len(op):], version) is expected


def test_package_parsing_and_recovery():
    p = pip_impl.Package("Django_Rest>=1.0,<2")
    assert p.name == "django-rest" and p.is_satisfied_by("1.5") and not p.is_satisfied_by("2")
    assert pip_impl.Package("requests[socks]==2.0").is_satisfied_by("2.0")
    assert pip_impl.Package("git+https://example.com/x.git").clauses is None
    assert str(pip_impl.Package("foo", "1.2")) == "foo==1.2"
    assert str(pip_impl.Package("foo", ">=1.2")) == "foo >=1.2"
    assert pip_impl.recover_package_names(["django>1.11.1", "<1.11.3", "ipaddress"]) == \
        ["django>1.11.1,<1.11.3", "ipaddress"]
    assert pip_impl.is_present(pip_impl.Package("Foo.Bar"), ["foo-bar==1.0"])
