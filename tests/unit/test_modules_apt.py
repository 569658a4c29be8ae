"""apt and package modules: decision logic on parsed output, check mode against the real apt,
and one slow test that really installs and removes a tiny package."""
import os
import shutil
import subprocess
import time

import pytest

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext
from ioc.agentless_runner.modules import apt as apt_impl
from ioc.agentless_runner.modules import package as package_impl

apt = modules.get("apt")
package = modules.get("package")

HAVE_APT = shutil.which("apt-get") is not None and shutil.which("dpkg-query") is not None
needs_apt = pytest.mark.skipif(not HAVE_APT, reason="needs apt-get and dpkg-query")
TINY = "sl"

POLICY = """\
bash:
  Installed: 5.2.15-2+b8
  Candidate: 5.2.15-2+b13
  Version table:
     5.2.15-2+b13 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
 *** 5.2.15-2+b8 100
        100 /var/lib/dpkg/status
"""


def _installed(name):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", name], capture_output=True,
                       text=True)
    return r.returncode == 0 and r.stdout.endswith(" installed")


@pytest.mark.parametrize("a,b,sign", [
    ("1.0", "1.0", 0), ("1.0", "1.1", -1), ("1.10", "1.9", 1), ("1.0~rc1", "1.0", -1),
    ("1:0.1", "2.0", 1), ("5.2.15-2+b8", "5.2.15-2+b13", -1), ("1.0a", "1.0", 1),
    ("1.0-1", "1.0-1ubuntu1", -1), ("2.0", "2.0-0", 0), ("1.0+dfsg", "1.0", 1),
    ("0:1.2", "1.2", 0), ("1.2.3", "1.2.3.0", -1),
])
def test_debian_version_compare(a, b, sign):
    r = apt_impl.version_compare(a, b)
    assert (r > 0) - (r < 0) == sign


@needs_apt
def test_version_compare_agrees_with_dpkg():
    pairs = [("1.0~rc1", "1.0"), ("1:0.1", "2.0"), ("1.0a", "1.0"), ("2.0-1", "2.0-1+b1"),
             ("1.0.0~alpha", "1.0.0~beta"), ("10", "9a")]
    for a, b in pairs:
        lt = subprocess.run(["dpkg", "--compare-versions", a, "lt", b]).returncode == 0
        assert (apt_impl.version_compare(a, b) < 0) == lt, (a, b)


def test_package_split():
    assert apt_impl.package_split("nginx") == ("nginx", None, None)
    assert apt_impl.package_split("nginx=1.2*") == ("nginx", "=", "1.2*")
    assert apt_impl.package_split("nginx>=1.2") == ("nginx", ">=", "1.2")


def test_parse_dpkg_status():
    assert apt_impl.parse_dpkg_status("install ok installed 1.2-3") == (True, "1.2-3", True)
    assert apt_impl.parse_dpkg_status("deinstall ok config-files 1.2-3") == (False, None, True)
    assert apt_impl.parse_dpkg_status("unknown ok not-installed ") == (False, None, False)
    assert apt_impl.parse_dpkg_status("") == (False, None, False)


def test_parse_policy():
    assert apt_impl.parse_policy(POLICY) == ("5.2.15-2+b13", ["5.2.15-2+b13", "5.2.15-2+b8"])
    assert apt_impl.parse_policy("x:\n  Installed: (none)\n  Candidate: (none)\n"
                                 "  Version table:\n") == (None, [])


def test_best_match_and_decision():
    versions = ["2.0-1", "1.2-3", "1.2-1"]
    assert apt_impl.best_match("2.0-1", versions, None, None) == "2.0-1"
    assert apt_impl.best_match("2.0-1", versions, "=", "1.2*") == "1.2-3"
    assert apt_impl.best_match("2.0-1", versions, "=", "3*") is None
    # not installed: install the best match
    assert apt_impl.decide_status(False, None, "2.0-1", None, None) == (False, "2.0-1")
    # installed, newer candidate: present is satisfied, latest would upgrade
    assert apt_impl.decide_status(True, "1.2-1", "2.0-1", None, None) == (True, "2.0-1")
    assert apt_impl.decide_status(True, "2.0-1", "2.0-1", None, None) == (True, None)
    # version globs and minimums
    assert apt_impl.decide_status(True, "1.2-1", "1.2-3", "=", "1.2*") == (True, "1.2-3")
    assert apt_impl.decide_status(True, "1.2-1", "2.0-1", ">=", "2.0") == (False, "2.0-1")
    assert apt_impl.decide_status(True, "2.0-1", "2.0-1", ">=", "1.0") == (True, None)


def test_parse_diff():
    out = ("Reading package lists...\nReading state information...\nThe following NEW packages "
           "will be installed:\n  sl\n0 upgraded, 1 newly installed, 0 to remove\nInst sl\n")
    assert apt_impl.parse_diff(out) == {
        "prepared": "The following NEW packages will be installed:\n  sl\n"
                    "0 upgraded, 1 newly installed, 0 to remove"}


def test_cache_time_prefers_the_success_stamp(tmp_path, monkeypatch):
    lists, stamp = tmp_path / "lists", tmp_path / "stamp"
    lists.mkdir()
    os.utime(str(lists), (1000, 1000))
    monkeypatch.setattr(apt_impl, "_APT_LISTS_PATH", str(lists))
    monkeypatch.setattr(apt_impl, "_APT_UPDATE_SUCCESS_STAMP_PATH", str(stamp))
    assert apt_impl.cache_mtime() == 1000
    stamp.write_text("")
    os.utime(str(stamp), (2000, 2000))
    assert apt_impl.cache_mtime() == 2000
    monkeypatch.setattr(apt_impl, "_APT_UPDATE_SUCCESS_STAMP_PATH", str(tmp_path / "x"))
    monkeypatch.setattr(apt_impl, "_APT_LISTS_PATH", str(tmp_path / "y"))
    assert apt_impl.cache_mtime() == 0


@needs_apt
def test_fresh_cache_is_not_updated(tmp_path, monkeypatch):
    lists = tmp_path / "lists"
    lists.mkdir()
    monkeypatch.setattr(apt_impl, "_APT_LISTS_PATH", str(lists))
    monkeypatch.setattr(apt_impl, "_APT_UPDATE_SUCCESS_STAMP_PATH", str(tmp_path / "none"))
    r = apt.run({"update_cache": True, "cache_valid_time": 3600}, ModuleContext())
    assert r == {"changed": False, "cache_updated": False,
                 "cache_update_time": int(os.stat(str(lists)).st_mtime)}


@needs_apt
def test_stale_cache_in_check_mode_reports_an_update(tmp_path, monkeypatch):
    lists = tmp_path / "lists"
    lists.mkdir()
    os.utime(str(lists), (time.time() - 7200,) * 2)
    monkeypatch.setattr(apt_impl, "_APT_LISTS_PATH", str(lists))
    monkeypatch.setattr(apt_impl, "_APT_UPDATE_SUCCESS_STAMP_PATH", str(tmp_path / "none"))
    r = apt.run({"update_cache": "yes", "cache_valid_time": 3600},
                ModuleContext(check_mode=True))
    assert r["changed"] is True and r["cache_updated"] is True


def _ensure_absent(package):
    """``package`` is this test's toy package: a leftover of an interrupted run goes."""
    if _installed(package):
        subprocess.run(["apt-get", "purge", "-y", "-q", package], check=True,
                       capture_output=True, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))


@pytest.mark.slow  # apt-cache and apt-get -s take about a second a call here
@needs_apt
def test_check_mode_simulates_install_of_a_missing_package():
    _ensure_absent(TINY)
    r = apt.run({"name": TINY}, ModuleContext(check_mode=True, diff_mode=True))
    assert r["changed"] is True and "Inst %s" % TINY in r["stdout"]
    assert "NEW packages will be installed" in r["diff"]["prepared"]
    assert set(r) >= {"stdout", "stderr", "cache_updated", "cache_update_time"}
    assert not _installed(TINY)


@pytest.mark.slow  # apt-cache and apt-get -s take about a second a call here
@needs_apt
def test_present_installed_package_is_unchanged_and_absent_missing_too():
    r = apt.run({"name": ["dpkg"], "state": "present"}, ModuleContext(check_mode=True))
    assert r["changed"] is False and "stdout" not in r
    if not _installed(TINY):
        assert apt.run({"name": TINY, "state": "absent"}, ModuleContext()) == {"changed": False}


@pytest.mark.slow  # apt-cache and apt-get -s take about a second a call here
@needs_apt
def test_unknown_package_and_unavailable_version():
    r = apt.run({"name": "ioc-no-such-package"}, ModuleContext(check_mode=True))
    assert r["failed"] is True and r["msg"] == "No package matching 'ioc-no-such-package' is available"
    r = apt.run({"name": "dpkg=0.0.ioc*"}, ModuleContext(check_mode=True))
    assert r["failed"] is True and r["msg"] == "no available installation candidate for dpkg=0.0.ioc*"


def test_refusals_and_argument_errors():
    cases = [
        ({"name": "x", "state": "build-dep"}, "does not support state=build-dep"),
        ({"name": "python3-*"}, "does not expand wildcards"),
        ({"name": "*", "state": "latest"}, "does not expand wildcards"),
        ({"name": "a=1=2"}, "invalid package spec: a=1=2"),
        ({"state": "present"}, "one of the following is required: autoremove, deb, package"),
        ({"name": "x", "deb": "/tmp/x.deb"}, "parameters are mutually exclusive: deb|package"),
        ({"name": "x", "upgrade": "dist"}, "Unsupported parameters for (apt) module: upgrade"),
    ]
    for args, msg in cases:
        r = apt.run(args, ModuleContext(check_mode=True))
        assert r["failed"] is True and msg in r["msg"], (args, r)


def test_flags_and_aliases():
    assert apt.SUPPORTS_CHECK_MODE and package.SUPPORTS_CHECK_MODE
    assert {"name", "pkg", "package", "update_cache", "cache_valid_time", "purge", "deb",
            "autoremove", "install_recommends", "force"} <= apt.OPTIONS
    assert "use" in package.OPTIONS and "update_cache" in package.OPTIONS


def test_package_fails_naming_another_package_manager(tmp_path, monkeypatch):
    dnf = tmp_path / "dnf"
    dnf.write_text("")
    monkeypatch.setattr(package_impl, "_APT_GET", str(tmp_path / "apt-get"))
    monkeypatch.setattr(package_impl, "_OTHER_MANAGERS", (("dnf", str(dnf)),))
    r = package.run({"name": "nginx"}, ModuleContext())
    assert r["failed"] is True
    assert r["msg"] == ("The package module in ioc can only use apt, but this host's package "
                        "manager is dnf (%s)." % dnf)
    monkeypatch.setattr(package_impl, "_OTHER_MANAGERS", ())
    r = package.run({"name": "nginx"}, ModuleContext())
    assert r["msg"].startswith("Could not detect which package manager to use.")
    r = package.run({"name": "nginx", "use": "yum"}, ModuleContext())
    assert r["msg"] == "The package module in ioc can only use apt, not 'yum'."


@needs_apt
def test_package_dispatches_to_apt():
    r = package.run({"name": "dpkg", "state": "present"}, ModuleContext(check_mode=True))
    assert r["changed"] is False and "cache_updated" in r
    r = package.run({"name": "dpkg", "bogus": 1}, ModuleContext(check_mode=True))
    assert r["msg"].startswith("Unsupported parameters for (package) module: bogus")


@pytest.mark.slow
@needs_apt
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to install packages")
def test_really_install_and_remove_a_tiny_package():
    policy = subprocess.run(["apt-cache", "policy", TINY], capture_output=True, text=True,
                            env=dict(os.environ, LANG="C")).stdout
    assert "Candidate:" in policy and "Candidate: (none)" not in policy, (
        "this test needs Debian's package registry: no installation candidate for %s" % TINY)
    _ensure_absent(TINY)
    try:
        r = apt.run({"name": TINY, "install_recommends": False}, ModuleContext())
        assert r["changed"] is True and "failed" not in r, r
        assert _installed(TINY) and os.path.exists("/usr/games/sl")
        r = apt.run({"name": TINY}, ModuleContext())
        assert r["changed"] is False
        assert apt.run({"name": TINY, "state": "latest"}, ModuleContext())["changed"] is False
        r = apt.run({"name": TINY, "state": "absent", "purge": True}, ModuleContext())
        assert r["changed"] is True and not _installed(TINY)
        assert apt.run({"name": TINY, "state": "absent"}, ModuleContext()) == {"changed": False}
    finally:
        if _installed(TINY):
            subprocess.run(["apt-get", "-y", "purge", TINY], capture_output=True)


def test_split_policy_for_several_packages():
    sections = apt_impl.split_policy(POLICY + "sl:\n  Installed: (none)\n  Candidate: 5.02-1+b1\n")
    assert sorted(sections) == ["bash", "sl"]
    assert apt_impl.parse_policy(sections["sl"]) == ("5.02-1+b1", [])
