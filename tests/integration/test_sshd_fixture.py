"""The ``sshd`` fixture gives a real, fast, clean SSH server."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import mitogen.master
import pytest

pytestmark = pytest.mark.integration


def test_ssh_true(sshd):
    r = sshd.run("true")
    assert r.returncode == 0, r.stderr
    assert sshd.host == "127.0.0.1" and sshd.user == "root" and sshd.port > 0
    assert sshd.known_hosts == "/dev/null"
    assert os.path.isfile(sshd.client_key)


def test_ssh_argv_runs_a_command(sshd):
    r = subprocess.run(sshd.ssh_argv("echo", "hello"), capture_output=True, text=True,
                       timeout=30, stdin=subprocess.DEVNULL)
    assert (r.returncode, r.stdout) == (0, "hello\n"), r.stderr


def test_session_does_not_source_the_real_bashrc(sshd):
    assert sshd.clean_env, "sshd runs without the empty-.bashrc mount namespace"
    r = sshd.run("echo ${PYENV_ROOT:-unset}")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "unset"
    # Sessions see an empty ~/.bashrc; the mount is private to sshd's namespace,
    # so this process still sees the real file.
    r = sshd.run("wc -c < ~/.bashrc")
    assert r.stdout.strip() == "0", r.stderr
    bashrc = os.path.expanduser("~/.bashrc")
    with open("/proc/self/mountinfo") as f:
        assert " %s " % bashrc not in f.read()


def _parse_ini_line(line):
    name, *fields = shlex.split(line)
    return name, dict(f.split("=", 1) for f in fields)


def test_inventory_gives_each_name_its_own_host_key_alias(sshd):
    text = sshd.inventory_ini(["web1", "web2", "db"])
    lines = [l for l in text.splitlines() if l.strip()]
    assert len(lines) == 3
    aliases = set()
    for line, expected in zip(lines, ["web1", "web2", "db"]):
        name, hv = _parse_ini_line(line)
        assert name == expected
        assert hv["ansible_host"] == "127.0.0.1"
        assert hv["ansible_port"] == str(sshd.port)
        assert hv["ansible_user"] == "root"
        assert hv["ansible_ssh_private_key_file"] == sshd.client_key
        assert hv["ansible_python_interpreter"] == sys.executable
        args = hv["ansible_ssh_common_args"]
        assert "StrictHostKeyChecking=no" in args and "UserKnownHostsFile=/dev/null" in args
        aliases.update(re.findall(r"HostKeyAlias=(\S+)", args))
        assert re.findall(r"HostKeyAlias=(\S+)", args) == [name]
    assert aliases == {"web1", "web2", "db"}


def test_inventory_python_extra_and_group(sshd):
    text = sshd.inventory_ini(["a"], "ansible_become=true", python="/opt/py39", group="web")
    first, line = text.splitlines()
    assert first == "[web]"
    name, hv = _parse_ini_line(line)
    assert hv["ansible_python_interpreter"] == "/opt/py39"
    assert hv["ansible_become"] == "true"


def test_inventory_ssh_args_work_with_a_real_client(sshd):
    """The quoted ansible_ssh_common_args, fed to ssh, reach the server."""
    for line in sshd.inventory_ini(["x1", "x2"]).splitlines():
        name, hv = _parse_ini_line(line)
        argv = (["ssh", "-p", hv["ansible_port"], "-i", hv["ansible_ssh_private_key_file"],
                 "-o", "BatchMode=yes"] + shlex.split(hv["ansible_ssh_common_args"])
                + ["%s@%s" % (hv["ansible_user"], hv["ansible_host"]), "echo", name])
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL)
        assert (r.returncode, r.stdout) == (0, name + "\n"), r.stderr


def test_mitogen_ssh_context(sshd):
    broker = mitogen.master.Broker()
    try:
        router = mitogen.master.Router(broker)
        context = router.ssh(
            hostname=sshd.host,
            port=sshd.port,
            username="root",
            identity_file=sshd.client_key,
            check_host_keys="ignore",
            ssh_args=["-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
                      "-o", "HostKeyAlias=mitogen-test"],
            python_path=sys.executable,
            connect_timeout=30,
        )
        remote_pid = context.call(os.getpid)
        assert isinstance(remote_pid, int)
        assert remote_pid != os.getpid()
        # The session has the clean environment too.
        assert context.call(os.getenv, "PYENV_ROOT") is None
        context.shutdown(wait=True)
    finally:
        broker.shutdown()
        broker.join()


def test_two_names_are_two_mitogen_connections(sshd):
    broker = mitogen.master.Broker()
    try:
        router = mitogen.master.Router(broker)
        a = router.ssh(**sshd.mitogen_kwargs("alpha"))
        b = router.ssh(**sshd.mitogen_kwargs("beta"))
        assert a.context_id != b.context_id
        assert a.call(os.getpid) != b.call(os.getpid)
    finally:
        broker.shutdown()
        broker.join()
