"""setup module: a stdlib-only fact set shaped like Ansible's."""
import os
import sys

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

setup = modules.get("setup")


def facts(**args):
    r = setup.run(args, ModuleContext())
    assert r["changed"] is False and "failed" not in r
    return r["ansible_facts"]


def test_core_facts():
    f = facts()
    assert f["module_setup"] is True and f["gather_subset"] == ["all"]
    assert f["ansible_system"] == "Linux"
    for key in ("ansible_hostname", "ansible_fqdn", "ansible_nodename", "ansible_kernel",
                "ansible_machine", "ansible_architecture", "ansible_os_family",
                "ansible_distribution", "ansible_distribution_version",
                "ansible_distribution_major_version", "ansible_distribution_release",
                "ansible_pkg_mgr", "ansible_service_mgr"):
        assert isinstance(f[key], str), key
    assert f["ansible_local"] == {} or isinstance(f["ansible_local"], dict)


def test_python_and_user():
    f = facts()
    assert f["ansible_python_version"] == "%d.%d.%d" % sys.version_info[:3]
    py = f["ansible_python"]
    assert py["executable"] == sys.executable and py["version"]["major"] == sys.version_info[0]
    assert py["version_info"] == list(sys.version_info)
    assert f["ansible_user_uid"] == os.getuid() and f["ansible_user_id"] == "root"
    assert f["ansible_user_dir"] and f["ansible_user_shell"]
    assert f["ansible_env"]["PATH"] == os.environ["PATH"]


def test_date_time():
    dt = facts()["ansible_date_time"]
    for key in ("date", "time", "epoch", "iso8601", "year", "month", "day", "hour", "minute",
                "second", "weekday", "tz", "tz_offset"):
        assert isinstance(dt[key], str), key
    assert dt["iso8601"].endswith("Z") and dt["epoch"].isdigit()


def test_hardware_facts():
    f = facts()
    assert f["ansible_processor_count"] >= 1 and f["ansible_processor_vcpus"] >= 1
    assert f["ansible_memtotal_mb"] > 0 and 0 <= f["ansible_memfree_mb"] <= f["ansible_memtotal_mb"]
    root = [m for m in f["ansible_mounts"] if m["mount"] == "/"]
    assert root and root[0]["size_total"] >= root[0]["size_available"] > 0


def test_network_facts():
    f = facts()
    assert isinstance(f["ansible_all_ipv4_addresses"], list)
    assert not any(a.startswith("127.") for a in f["ansible_all_ipv4_addresses"])
    d = f["ansible_default_ipv4"]
    if d:
        assert d["address"] in f["ansible_all_ipv4_addresses"]
        assert d["interface"] in f["ansible_interfaces"] and "gateway" in d


def test_distribution_matches_os_release():
    info = {}
    with open("/etc/os-release") as fh:
        for line in fh:
            k, _, v = line.strip().partition("=")
            info[k] = v.strip('"')
    f = facts(gather_subset="min")
    if info.get("ID") == "debian":
        assert f["ansible_distribution"] == "Debian" and f["ansible_os_family"] == "Debian"
    assert f["ansible_distribution_major_version"] == info.get("VERSION_ID", "NA").split(".")[0]


def test_filter():
    f = facts(filter="ansible_distribution*")
    assert f and all(k.startswith("ansible_distribution") for k in f)
    f = facts(filter=["ansible_hostname", "ansible_python_version"])
    assert set(f) == {"ansible_hostname", "ansible_python_version"}


def test_gather_subset_min_skips_hardware_and_network():
    f = facts(gather_subset=["!all"])
    assert "ansible_mounts" not in f and "ansible_default_ipv4" not in f
    assert "ansible_hostname" in f
    f = facts(gather_subset=["!all", "network"])
    assert "ansible_default_ipv4" in f and "ansible_mounts" not in f


def test_bad_subset():
    r = setup.run({"gather_subset": ["nonsense"]}, ModuleContext())
    assert r["failed"] and "Bad subset 'nonsense'" in r["msg"]


def test_local_facts(tmp_path):
    (tmp_path / "a.fact").write_text('{"x": 1}')
    (tmp_path / "b.fact").write_text("[sec]\nk = v\n")
    script = tmp_path / "c.fact"
    script.write_text('#!/bin/sh\necho \'{"y": 2}\'\n')
    os.chmod(str(script), 0o755)
    (tmp_path / "ignored.txt").write_text("{}")
    f = facts(fact_path=str(tmp_path), gather_subset="min")
    assert f["ansible_local"] == {"a": {"x": 1}, "b": {"sec": {"k": "v"}}, "c": {"y": 2}}


def test_mount_field_unescaping():
    from ioc.agentless_runner.modules.setup import _unescape_mount
    assert _unescape_mount("/mnt/with\\040space") == "/mnt/with space"
    assert _unescape_mount("/mnt/caf\u00e9") == "/mnt/caf\u00e9"
