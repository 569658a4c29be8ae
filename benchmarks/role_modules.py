"""A role's worth of Ansible's own modules, mitogen_linear against mitogen_batch.

    python -m benchmarks.role_modules                      # 0 and 150 ms, 2 repeats
    python -m benchmarks.role_modules --delays 150 --repeats 1 --tools mitogen_batch

One play of 21 tasks of the kind real roles run (fact gathering, ``apt`` of a
package already installed, ``stat``, ``file``, ``lineinfile``,
``blockinfile``, ``template``, ``copy``, ``command``, ``shell``,
``service`` of a SysV script, ``getent``, ``user`` and ``group`` of existing
accounts, ``set_fact``, a 5-item ``file`` loop, ``replace``, ``find``,
``slurp``, ``assert``, ``debug``) against one host of the test sshd
(tests/support/sshd.py, the machine itself, as root) behind the delay proxy
(benchmarks/delayproxy.py). Per tool and delay the play runs twice: a first
run that creates the files under a scratch directory, then the idempotent
run; the idempotent run is repeated ``--repeats`` times and reported as
medians.

Measured per run: wall seconds; *first task*: seconds from ``ansible-playbook``'s
start to the first task's result line on its console (``ok: [...]`` of
Gathering Facts, streamed line by line); the controller's CPU (user+sys of
the whole ``ansible-playbook`` process tree, ``getrusage(RUSAGE_CHILDREN)``
deltas, as benchmarks/run.py measures); the target's CPU (the test sshd's
reaped children's user+sys, from ``/proc/<sshd>/stat``: every session and
what it waited for; plus the processes a session left behind, which end
re-parented to this process, a subreaper above the sshd); round trips and
bytes through the proxy; for mitogen_batch the runner calls per host
(the dispatcher's ``IOC_BRIDGE_LOG``). Ratios are mitogen_linear over
mitogen_batch, side by side, from the same invocation.

The target interpreter is ``/usr/bin/python3`` (Debian's, with python3-apt,
as a real Debian target has; ``apt`` does not respawn). A SysV script
``/etc/init.d/ioc-bench-svc`` whose ``status`` succeeds is written for the
``service`` task and removed at the end. Not part of the test suite.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

from benchmarks.common import median
from benchmarks.run import (Bench, become_subreaper, children_cpu, find_ansible, git_rev,
                            machine, reap_orphans)

TOOLS = ("mitogen_linear", "mitogen_batch")
TARGET_PYTHON = "/usr/bin/python3"
SERVICE = "/etc/init.d/ioc-bench-svc"
SERVICE_SCRIPT = """#!/bin/sh
### BEGIN INIT INFO
# Provides:          ioc-bench-svc
# Required-Start:
# Required-Stop:
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: benchmarks/role_modules.py: a service that is always running
### END INIT INFO
case "$1" in
  start|stop|restart|reload|force-reload|status) exit 0 ;;
  *) echo "Usage: $0 {start|stop|status}"; exit 3 ;;
esac
"""

PLAY = """\
- name: a role's worth of Ansible modules
  hosts: all
  gather_facts: true
  vars:
    scratch: "{scratch}"
  tasks:
    - name: apt of an installed package
      apt:
        name: openssh-server
        state: present
    - name: stat
      stat:
        path: /etc/hosts
      register: hosts_stat
    - name: a directory
      file:
        path: "{{{{ scratch }}}}/etc"
        state: directory
        mode: "0755"
    - name: lineinfile
      lineinfile:
        path: "{{{{ scratch }}}}/etc/app.conf"
        line: "listen = 8080"
        create: true
        mode: "0644"
    - name: blockinfile
      blockinfile:
        path: "{{{{ scratch }}}}/etc/app.conf"
        block: |
          workers = 4
          timeout = 30
    - name: template
      template:
        src: app.ini.j2
        dest: "{{{{ scratch }}}}/etc/app.ini"
        mode: "0644"
    - name: copy
      copy:
        content: "hello from {{{{ inventory_hostname }}}}\\n"
        dest: "{{{{ scratch }}}}/etc/motd"
        mode: "0644"
    - name: command
      command: cat /etc/hostname
      register: hostname_out
      changed_when: false
    - name: shell
      shell: "test -d {{{{ scratch }}}}/etc && echo yes"
      register: shell_out
      changed_when: false
    - name: service status of a SysV script
      service:
        name: ioc-bench-svc
        state: started
    - name: getent
      getent:
        database: passwd
        key: root
    - name: user of an existing user
      user:
        name: nobody
    - name: group of an existing group
      group:
        name: nogroup
    - name: set_fact
      set_fact:
        app_port: 8080
        app_name: "{{{{ hostname_out.stdout | trim }}}}"
    - name: a loop over file
      file:
        path: "{{{{ scratch }}}}/data/{{{{ item }}}}"
        state: directory
        mode: "0750"
      loop: [a, b, c, d, e]
    - name: replace
      replace:
        path: "{{{{ scratch }}}}/etc/app.conf"
        regexp: "^timeout = .*$"
        replace: "timeout = 30"
    - name: find
      find:
        paths: "{{{{ scratch }}}}/data"
        file_type: directory
      register: found
    - name: slurp
      slurp:
        src: "{{{{ scratch }}}}/etc/motd"
      register: motd
    - name: assert
      assert:
        that:
          - hosts_stat.stat.exists
          - found.matched == 5
          - (motd.content | b64decode) is search('hello')
          - app_port == 8080
    - name: debug
      debug:
        msg: "{{{{ app_name }}}} {{{{ shell_out.stdout }}}}"
"""

TEMPLATE = """\
[app]
name = {{ inventory_hostname }}
port = {{ app_port | default(8080) }}
os = {{ ansible_facts.distribution }} {{ ansible_facts.distribution_major_version }}
"""

CALLS = re.compile(r"\((\d+) runner call\(s\) for (\d+) host")
RECAP = re.compile(r"ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)")


def sshd_children_cpu(pid: int) -> float:
    """User+sys seconds of the sshd's reaped descendants (``cutime``+``cstime``)."""
    fields = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[13]) + int(fields[14])) / ticks


class RoleBench(Bench):
    def __init__(self, args, ansible) -> None:
        super().__init__(args, ansible)
        self.scratch = Path(tempfile.mkdtemp(prefix="ioc-role-scratch-", dir="/tmp"))

    def __enter__(self) -> "RoleBench":
        super().__enter__()
        book_dir = Path(self.tmp) / "plays"
        (book_dir / "templates").mkdir()
        (book_dir / "templates" / "app.ini.j2").write_text(TEMPLATE)
        (book_dir / "role_modules.yml").write_text(PLAY.format(scratch=self.scratch))
        self.books["role_modules"] = book_dir / "role_modules.yml"
        Path(SERVICE).write_text(SERVICE_SCRIPT)
        os.chmod(SERVICE, 0o755)
        return self

    def __exit__(self, *exc) -> None:
        try:
            os.unlink(SERVICE)
        except OSError:
            pass
        shutil.rmtree(self.scratch, ignore_errors=True)
        super().__exit__(*exc)

    def inventory(self, delay_ms: int, hosts: int) -> Path:
        path = super().inventory(delay_ms, hosts)
        text = path.read_text()
        if TARGET_PYTHON not in text:
            path.write_text(re.sub(r"ansible_python_interpreter=\S+",
                                   "ansible_python_interpreter=%s" % TARGET_PYTHON, text))
        return path

    def measure(self, tool: str, delay_ms: int) -> Dict[str, object]:
        """One run of the play, its console streamed line by line."""
        inv = self.inventory(delay_ms, 1)
        proxy = self.proxy(delay_ms)
        rundir = Path(tempfile.mkdtemp(prefix="run-", dir=self.tmp))
        argv, env = self.argv_env(tool, "role_modules", inv, rundir)
        log = rundir / "bridge.log"
        env["IOC_BRIDGE_LOG"] = str(log)
        reap_orphans()
        proxy.reset()
        sshd_pid = self.sshd.process.pid
        target0 = sshd_children_cpu(sshd_pid)
        cpu0 = children_cpu()
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, env=env, cwd=str(rundir), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
        first_task = None
        lines: List[str] = []
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if first_task is None and re.match(r"(ok|changed): \[", line):
                first_task = time.monotonic() - t0
        rc = proc.wait(timeout=900)
        wall = time.monotonic() - t0
        # ansible-playbook's tree, waited for by it: the controller
        cpu = children_cpu() - cpu0
        self.close_masters(rundir)
        proxy.wait_idle(30)
        time.sleep(0.5)  # sshd reaps the session's processes
        # Processes the target's session left behind (a runner's helper
        # outliving it) are re-parented to this process, a subreaper above
        # the test sshd: target CPU too.
        cpu1 = children_cpu()
        reap_orphans()
        orphans = children_cpu() - cpu1
        target = sshd_children_cpu(sshd_pid) - target0 + orphans
        totals = proxy.totals()
        out = "".join(lines)
        recap = RECAP.findall(out)
        calls = None
        if log.exists():
            found = CALLS.findall(log.read_text())
            if found:
                calls = sum(int(c) // max(int(h), 1) for c, h in found)
        shutil.rmtree(rundir, ignore_errors=True)
        if rc != 0 or not recap:
            raise RuntimeError("%s exited %d:\n%s" % (tool, rc, out[-3000:]))
        ok, changed, _, failed = recap[-1]
        return {"wall": wall, "first_task": first_task, "cpu": cpu, "target_cpu": target,
                "orphans_cpu": orphans,
                "round_trips": totals["round_trips"], "bytes": totals["bytes"],
                "connections": totals["connections"], "calls": calls,
                "ok": int(ok), "changed": int(changed), "load": os.getloadavg()[0]}


KEYS = ("wall", "first_task", "cpu", "target_cpu", "round_trips", "bytes", "calls", "load")


def fmt(v: Optional[float], key: str) -> str:
    if v is None:
        return "—"
    if key in ("round_trips", "calls", "changed", "ok"):
        return "%d" % v
    if key == "bytes":
        return "%.0f" % (v / 1024)
    return "%.2f" % v if v < 10 else "%.1f" % v


def render(results: Dict[tuple, Dict[str, object]], meta: Dict[str, str]) -> str:
    out = ["Command: `%s`, %s, ioc %s, ansible-core %s, mitogen %s; load average "
           "at start %s, at end %s; %s."
           % (meta["command"], meta["date"], meta["ioc"], meta["ansible"], meta["mitogen"],
              meta["load_start"], meta["load_end"], meta["cpu"]), ""]
    out.append("| delay | tool | run | wall s | first task s | controller CPU s | target CPU s "
               "| round trips | KiB | runner calls | ok/changed | load (1 min) |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (delay, tool, run), r in results.items():
        out.append("| %d ms | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s/%s | %s |" % (
            delay, tool, run, fmt(r["wall"], "wall"), fmt(r["first_task"], "first_task"),
            fmt(r["cpu"], "cpu"), fmt(r["target_cpu"], "target_cpu"),
            fmt(r["round_trips"], "round_trips"), fmt(r["bytes"], "bytes"),
            fmt(r["calls"], "calls"), r["ok"], r["changed"], fmt(r["load"], "load")))
    out.append("")
    out.append("Ratios on the idempotent run (mitogen_linear / mitogen_batch; above 1: "
               "mitogen_batch is cheaper):")
    out.append("")
    out.append("| delay | wall | first task | controller CPU | target CPU | round trips |")
    out.append("|---|---|---|---|---|---|")
    for delay in sorted({k[0] for k in results}):
        a = results.get((delay, "mitogen_linear", "idempotent"))
        b = results.get((delay, "mitogen_batch", "idempotent"))
        if not a or not b:
            continue
        cells = []
        for key in ("wall", "first_task", "cpu", "target_cpu", "round_trips"):
            x, y = a[key], b[key]
            cells.append("%.2fx" % (x / y) if x is not None and y else "—")
        out.append("| %d ms | %s |" % (delay, " | ".join(cells)))
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--delays", type=lambda s: [int(x) for x in s.split(",")],
                        default=[0, 150])
    parser.add_argument("--tools", type=lambda s: s.split(","), default=list(TOOLS))
    parser.add_argument("--repeats", type=int, default=2,
                        help="idempotent runs per cell (median reported)")
    parser.add_argument("--json", help="write the raw runs here")
    args = parser.parse_args(argv)
    become_subreaper()
    ansible = find_ansible(install=False)
    if ansible.error:
        print(ansible.error, file=sys.stderr)
        return 2
    load_start = "%.2f %.2f %.2f" % os.getloadavg()
    results: Dict[tuple, Dict[str, object]] = {}
    raw: List[Dict[str, object]] = []
    with RoleBench(args, ansible) as bench:
        for delay in args.delays:
            for tool in args.tools:
                shutil.rmtree(bench.scratch, ignore_errors=True)
                bench.scratch.mkdir()
                first = bench.measure(tool, delay)
                results[(delay, tool, "first")] = first
                raw.append(dict(first, tool=tool, delay=delay, run="first"))
                runs = []
                for _ in range(args.repeats):
                    r = bench.measure(tool, delay)
                    runs.append(r)
                    raw.append(dict(r, tool=tool, delay=delay, run="idempotent"))
                med = {k: median([r[k] for r in runs if r[k] is not None]) for k in KEYS}
                med["ok"], med["changed"] = runs[-1]["ok"], runs[-1]["changed"]
                results[(delay, tool, "idempotent")] = med
                print("%d ms %s: first %s; idempotent %s" % (delay, tool, first, med),
                      file=sys.stderr, flush=True)
    meta = {"command": "python -m benchmarks.role_modules " + " ".join(argv or sys.argv[1:]),
            "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
            "ioc": git_rev(), "ansible": ansible.version, "mitogen": ansible.mitogen_version,
            "load_start": load_start, "load_end": "%.2f %.2f %.2f" % os.getloadavg(),
            "cpu": "%s CPUs" % machine()["nproc"]}
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=1))
    print(render(results, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
