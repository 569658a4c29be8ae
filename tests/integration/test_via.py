"""mitogen_via over the real sshd: a host's connection starts from another host's runner.

Every inventory name is the same sshd, so reaching a host proves nothing by
itself; the test looks at who holds the connection instead. Each host
reports its runner's pid and ``SSH_CONNECTION`` (the client's port); a
controller-side task then finds, through ``/proc``, the process owning the
TCP socket on that client port. For ``b`` (``mitogen_via=a``) it is an ``ssh``
client whose parent is ``a``'s runner; for ``c`` (``mitogen_via=b``) one whose
parent is ``b``'s runner; for ``a`` one started by the controller.
"""
from __future__ import annotations

import os
import re
import sys
import textwrap

import pytest

from benchmarks.delayproxy import DelayProxy
from tests.integration.test_end_to_end import ioc_run
from tests.integration.test_faults import FRONTS, Controller

pytestmark = pytest.mark.integration

OWNER = textwrap.dedent('''
    import os, sys
    port = int(sys.argv[1])
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add("socket:[%s]" % fields[9])
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            links = [os.readlink("/proc/%s/fd/%s" % (pid, fd))
                     for fd in os.listdir("/proc/%s/fd" % pid)]
            if inodes & set(links):
                with open("/proc/%s/stat" % pid) as f:
                    ppid = f.read().rsplit(")", 1)[1].split()[1]
                with open("/proc/%s/comm" % pid) as f:
                    print(pid, ppid, f.read().strip())
        except OSError:
            pass
''')


def test_via_chain_starts_each_connection_from_the_previous_hosts_runner(tmp_path, sshd):
    owner = tmp_path / "owner.py"
    owner.write_text(OWNER)
    hosts = (sshd.inventory_ini(["a"]) + sshd.inventory_ini(["b"], "mitogen_via=a")
             + sshd.inventory_ini(["c"], "mitogen_via=b"))
    r = ioc_run(tmp_path, f"""
        - hosts: a,b,c
          gather_facts: false
          tasks:
            - name: where
              shell: echo "$PPID $SSH_CONNECTION"
              register: where
            - name: holder
              command: "{sys.executable} {owner} {{{{ hostvars[item].where.stdout.split()[2] }}}}"
              delegate_to: localhost
              run_once: true
              loop: [a, b, c]
              register: holders
            - name: become on the end of the chain
              command: id -un
              become: true
              when: inventory_hostname == 'c'
        """, inventory=hosts)
    assert r.rc == 0, r.stdout + r.stderr
    runner = {e["host"]: int(e["result"]["stdout"].split()[0])
              for e in r.of("runner_ok") if e["task"] == "where"}
    holders = {e["result"]["item"]: e["result"]["stdout"].split()
               for e in r.of("runner_item_ok") if e["task"] == "holder"}
    assert set(holders) == {"a", "b", "c"}
    for host, parent in (("b", "a"), ("c", "b")):
        pid, ppid, comm = holders[host]
        assert comm == "ssh" and int(ppid) == runner[parent], (host, holders, runner)
    _, ppid_a, comm_a = holders["a"]
    assert comm_a == "ssh" and int(ppid_a) not in runner.values()
    assert [e["result"]["stdout"] for e in r.of("runner_ok")
            if e["task"] == "become on the end of the chain"] == ["root"]


def test_a_via_loop_fails_the_host_with_a_clear_message(tmp_path, sshd):
    hosts = (sshd.inventory_ini(["a"], "mitogen_via=b") + sshd.inventory_ini(["b"], "mitogen_via=a")
             + sshd.inventory_ini(["d"]))
    r = ioc_run(tmp_path, """
        - hosts: a,d
          gather_facts: false
          tasks:
            - name: ping
              ping:
        """, inventory=hosts)
    assert r.rc == 2, r.stdout + r.stderr
    assert {e["host"]: e["result"]["msg"] for e in r.of("runner_failed")} == {
        "a": "host a: mitogen_via loops: a -> b -> a"}
    assert [e["host"] for e in r.of("runner_ok")] == ["d"]


def test_resetting_the_via_host_reconnects_the_hosts_behind_it(tmp_path, sshd):
    hosts = sshd.inventory_ini(["a"]) + sshd.inventory_ini(["b"], "mitogen_via=a")
    r = ioc_run(tmp_path, """
        - hosts: a,b
          gather_facts: false
          tasks:
            - name: first
              shell: echo $PPID
            - name: reset a
              meta: reset_connection
              when: inventory_hostname == 'a'
            - name: second
              shell: echo $PPID
        """, "-vvvv", inventory=hosts, timeout=120)
    assert r.rc == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "did not end" not in r.stderr
    pids = {(e["task"], e["host"]): e["result"]["stdout"] for e in r.of("runner_ok")
            if e["task"] in ("first", "second")}
    assert len(pids) == 4
    assert pids[("first", "a")] != pids[("second", "a")]  # a new runner on a...
    assert pids[("first", "b")] != pids[("second", "b")]  # ...and so a new one for b


#: The payloads of the relay test: one shipped with the batch, one that streams
#: (a ``copy`` source of 1 MiB or more, ioc.controller.payloads.STREAM_MIN).
SMALL, LARGE = 300 * 1024, 1536 * 1024


@pytest.mark.parametrize("front", FRONTS)
def test_hosts_behind_an_intermediary_get_each_file_over_its_link_once(tmp_path, sshd, front):
    """``ioc_via_auto``: each group is reached through its first host, whose
    link to the controller is the only one through the proxy. Four hosts get
    both files; each crosses that link once (not once per host), and the
    hosts behind it are connected by its runner (their ssh client is its child)."""
    owner = tmp_path / "owner.py"
    owner.write_text(OWNER)
    (tmp_path / "small.bin").write_bytes(os.urandom(SMALL))
    (tmp_path / "large.bin").write_bytes(os.urandom(LARGE))
    out = tmp_path / "out"
    out.mkdir()
    with DelayProxy(sshd.host, sshd.port, 0.0) as proxy:
        # (the first host's port is the proxy's; the others' the sshd's own)
        hosts = (sshd.inventory_ini(["a"], group="rack").replace(
                     "ansible_port=%d " % sshd.port, "ansible_port=%d " % proxy.port)
                 + sshd.inventory_ini(["b", "c", "d"]) + "[rack:vars]\nioc_via_auto=true\n")
        assert hosts.count("ansible_port=%d" % proxy.port) == 1
        run = Controller(front, tmp_path, f"""
            - hosts: rack
              gather_facts: false
              tasks:
                - name: where
                  shell: echo "$PPID $SSH_CONNECTION"
                  register: where
                - name: files
                  copy: {{src: "{{{{ item }}}}", dest: "{out}/{{{{ inventory_hostname }}}}.{{{{ item }}}}"}}
                  loop: [small.bin, large.bin]
                - name: holder
                  command: "{sys.executable} {owner} {{{{ hostvars[item].where.stdout.split()[2] }}}}"
                  delegate_to: localhost
                  run_once: true
                  loop: [b, c, d]
                  register: holders
                - name: show
                  debug:
                    msg: "{{{{ inventory_hostname }}}} {{{{ where.stdout.split()[0] }}}} {{{{ holders.results | map(attribute='stdout') | join(',') }}}}"
            """, hosts)
        output = run.finish(timeout=240)
        proxy.wait_idle(30)
        crossed = proxy.totals()
    assert run.rc == 0, output[-4000:]
    for host in "abcd":
        assert (out / ("%s.small.bin" % host)).read_bytes() == (tmp_path / "small.bin").read_bytes()
        assert (out / ("%s.large.bin" % host)).read_bytes() == (tmp_path / "large.bin").read_bytes()
    shown = dict(re.findall(r'"msg": "(\w) (\d+) ', output))
    holders = re.search(r'"msg": "a \d+ (.*)"', output).group(1).split(",")
    assert len(holders) == 3
    for holder in holders:  # pid ppid comm of each of b, c, d's ssh clients
        _, ppid, comm = holder.split()
        assert comm == "ssh" and ppid == shown["a"], (holders, shown)
    # Once: the runner's code and both files (~0.5 + 1.8 MiB); four times would be > 7 MiB.
    assert crossed["connections"] == 1, crossed
    assert SMALL + LARGE < crossed["bytes_c2s"] < 2 * (SMALL + LARGE), crossed


@pytest.mark.parametrize("front", FRONTS)
def test_hosts_behind_an_intermediary_connect_while_it_runs_its_own_batch(tmp_path, sshd, front):
    """The intermediary's relay starts the connections below it on threads of
    its own: the hosts behind ``a`` run their task while ``a``'s runner is
    busy with its own batch (mitogen's ``via=`` would start them on that
    runner's main thread, after the batch). ``a``'s batch waits for the
    others' files; with ``-f 2``, ``c`` and ``d`` connect only once ``b`` is
    done, well inside it."""
    out = tmp_path / "out"
    out.mkdir()
    hosts = (sshd.inventory_ini(["a"], group="rack") + sshd.inventory_ini(["b", "c", "d"])
             + "[rack:vars]\nioc_via_auto=true\n")
    run = Controller(front, tmp_path, f"""
        - hosts: rack
          gather_facts: false
          tasks:
            - name: when
              shell: "{{{{ wait if inventory_hostname == 'a' else '' }}}}date +%s.%N > {out}/{{{{ inventory_hostname }}}}"
              vars:
                # a's batch lasts until b, c and d have run theirs (at most 120 s)
                wait: "for i in $(seq 1200); do [ -e {out}/b ] && [ -e {out}/c ] && [ -e {out}/d ] && break; sleep 0.1; done; "
        """, hosts, ["-f", "2"])
    output = run.finish(timeout=240)
    assert run.rc == 0, output[-3000:]
    ended = {h: float((out / h).read_text()) for h in "abcd"}
    for host in "bcd":  # (before a's batch ended: they did not wait for it)
        assert ended[host] < ended["a"], ended
