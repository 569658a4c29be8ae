"""A pristine Debian 12 host per run: a debootstrapped root file system seen
through a fresh overlay, with its own sshd, PID 1 and hostname.

Why not the test sshd of ``tests/support/sshd.py`` on this machine: the roles
install packages, start daemons, rewrite ``/etc`` and PAM, and both
strategies' first runs must start from the *same* untouched host. So:

* :func:`build_rootfs` runs ``debootstrap --variant=minbase`` once (Debian's
  mirror, ~3 minutes) into ``~/.cache/ioc/realworld/`` (``IOC_REALWORLD_CACHE``
  names another place) and never changes it afterwards: it is the *lower*
  layer of every target.
* :class:`Target` starts ``unshare --mount --pid --uts --fork`` with a shell
  that mounts an overlay (the cached root file system below, an empty
  directory of its own above), its own ``proc``, a read-only ``sysfs`` and
  ``/proc/sys`` (a role's ``sysctl`` must not reach the machine's kernel), a
  ``tmpfs`` ``/dev`` with the usual device nodes and a new ``devpts``
  instance, ``tmpfs`` ``/run`` and ``/dev/shm`` (a role that remounts them
  remounts these), sets the hostname ``debian12`` and execs
  ``chroot <overlay> /usr/sbin/sshd -D`` on a free loopback port: sshd is
  PID 1 of the namespace, so the host is a Debian 12 whose PID 1 is not
  systemd (services go through ``/etc/init.d`` and ``update-rc.d``, as in a
  container). Every daemon a role starts lives in the namespace;
  :meth:`Target.stop` kills ``unshare``, the kernel kills the namespace's
  processes, its mounts go with it, and the upper directory is removed.
* The network is the machine's (packages come from Debian's mirror, as on a
  real host): daemons listen on the machine's loopback, so the scenarios
  give them ports no one else here uses; two targets running the *same*
  role at once share those ports and the second daemon fails to start, so
  run a role's engines one after the other. ``/var/cache/apt/archives`` is
  an overlay too: the ``.deb`` files earlier targets downloaded below (not
  fetched again), this target's own above (its own apt lock); what it
  downloads joins the shared cache when it stops.

Files are read from outside through ``/proc/<sshd pid>/root``
(:meth:`Target.path`), which sees the namespace's mounts.
"""
from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, List, Optional

#: Bump when the recipe below changes: a new directory is built beside the old.
ROOTFS_VERSION = 1
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
#: What a minimal Debian 12 server image has, plus sshd and Python (Ansible's
#: only requirements on a target).
PACKAGES = ("openssh-server", "python3", "sudo", "ca-certificates", "procps", "iproute2")
HOSTNAME = "debian12"
SOURCES = """\
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
"""


def cache_dir() -> Path:
    return Path(os.environ.get("IOC_REALWORLD_CACHE", "~/.cache/ioc/realworld")).expanduser()


def rootfs_path() -> Path:
    return cache_dir() / ("rootfs-%s-v%d" % (SUITE, ROOTFS_VERSION))


class SandboxError(RuntimeError):
    """The target could not be built or started."""


def rootfs_ready() -> bool:
    return (rootfs_path() / ".ioc-complete").is_file()


def build_rootfs(log: Callable[[str], None] = print) -> Path:
    """The cached Debian 12 root file system; built first if it is not there."""
    final = rootfs_path()
    if rootfs_ready():
        return final
    if not shutil.which("debootstrap"):
        raise SandboxError("debootstrap is not installed (scripts/test installs it)")
    building = final.with_name(final.name + ".building")
    shutil.rmtree(building, ignore_errors=True)
    building.parent.mkdir(parents=True, exist_ok=True)
    log("debootstrap %s into %s (a few minutes, once)" % (SUITE, building))
    r = subprocess.run(["debootstrap", "--variant=minbase", "--include=" + ",".join(PACKAGES),
                        SUITE, str(building), MIRROR],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode != 0:
        raise SandboxError("debootstrap failed (%d):\n%s" % (r.returncode, (r.stdout + r.stderr)[-3000:]))
    _finish(building)
    os.rename(building, final)
    return final


def _finish(building: Path) -> None:
    """What debootstrap leaves undone for a server image: sources, hostname, DNS, no lists."""
    (building / "etc/apt/sources.list").write_text(SOURCES)
    (building / "etc/hostname").write_text(HOSTNAME + "\n")
    with open(building / "etc/hosts", "a") as f:
        f.write("127.0.1.1\t%s\n" % HOSTNAME)
    shutil.copyfile("/etc/resolv.conf", building / "etc/resolv.conf")
    # A fresh image has no package lists and no downloaded packages: each
    # role's first run updates the cache as it would on a new server.
    subprocess.run(["chroot", str(building), "apt-get", "clean"], check=True,
                   stdin=subprocess.DEVNULL, capture_output=True)
    for entry in (building / "var/lib/apt/lists").iterdir():
        if entry.is_file():
            entry.unlink()
    (building / ".ioc-complete").write_text("debootstrap --variant=minbase --include=%s %s %s\n"
                                            % (",".join(PACKAGES), SUITE, MIRROR))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ioc-realworld", "-f", str(path)],
                   check=True, stdin=subprocess.DEVNULL, capture_output=True)


SSHD_CONFIG = """\
ListenAddress 127.0.0.1:{port}
HostKey /etc/ssh/ioc_host_ed25519_key
AuthorizedKeysFile /etc/ssh/ioc_authorized_keys
PidFile /run/ioc-sshd.pid
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
UsePAM no
UseDNS no
PrintMotd no
PrintLastLog no
X11Forwarding no
MaxStartups 100:30:200
MaxSessions 100
Subsystem sftp internal-sftp
LogLevel ERROR
"""

# Runs as PID 1's parent shell inside the new namespaces, then becomes sshd.
START = r"""
set -eu
M="$1"; LOWER="$2"; UPPER="$3"; WORK="$4"; KEYS="$5"; APT="$6"; APTUP="$7"; APTWORK="$8"
mount -t overlay overlay -o "lowerdir=$LOWER,upperdir=$UPPER,workdir=$WORK" "$M"
mount -t proc -o nosuid,nodev,noexec proc "$M/proc"
mount --bind "$M/proc/sys" "$M/proc/sys"
mount -o remount,bind,ro "$M/proc/sys"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$M/sys"
mount -t tmpfs -o mode=755,nosuid tmpfs "$M/dev"
for spec in "null 1 3" "zero 1 5" "full 1 7" "random 1 8" "urandom 1 9" "tty 5 0"; do
    set -- $spec
    mknod -m 666 "$M/dev/$1" c "$2" "$3"
done
mkdir -p "$M/dev/pts" "$M/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5 devpts "$M/dev/pts"
ln -s pts/ptmx "$M/dev/ptmx"
ln -s /proc/self/fd "$M/dev/fd"
ln -s /proc/self/fd/0 "$M/dev/stdin"
ln -s /proc/self/fd/1 "$M/dev/stdout"
ln -s /proc/self/fd/2 "$M/dev/stderr"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$M/dev/shm"
mount -t tmpfs -o mode=755,nosuid,nodev tmpfs "$M/run"
mkdir -p "$M/run/sshd" "$M/run/lock"
chmod 1777 "$M/run/lock"
mount -t overlay overlay -o "lowerdir=$APT,upperdir=$APTUP,workdir=$APTWORK" "$M/var/cache/apt/archives"
cp "$KEYS/ioc_host_ed25519_key" "$KEYS/ioc_authorized_keys" "$KEYS/ioc_sshd_config" "$M/etc/ssh/"
chmod 600 "$M/etc/ssh/ioc_host_ed25519_key"
# This shared 2-core machine can take longer than the 30 s MariaDB's init
# script waits for a first start (/etc/init.d/mariadb reads this file).
printf 'MYSQLD_STARTUP_TIMEOUT=300\n' > "$M/etc/default/mariadb"
hostname {hostname}
exec chroot "$M" /usr/sbin/sshd -D -e -f /etc/ssh/ioc_sshd_config
"""


def _children(pid: int) -> List[int]:
    found: List[int] = []
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return found
    for tid in tasks:
        try:
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                found += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return found


def descendants(pid: int) -> List[int]:
    out, todo = [], [pid]
    while todo:
        for child in _children(todo.pop()):
            out.append(child)
            todo.append(child)
    return out


def exit_on_sigterm() -> None:
    """SIGTERM unwinds (``with Target()`` stops its namespace) instead of killing outright."""
    def handler(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, handler)


class Target:
    """One pristine Debian 12 host reachable over ssh (see the module docstring).

    Use as a context manager; ``port``, ``client_key`` and :meth:`inventory`
    say how to reach it.
    """

    def __init__(self, name: str = HOSTNAME) -> None:
        self.name = name
        self.tmp = Path(tempfile.mkdtemp(prefix="ioc-realworld-"))
        self.port = 0
        self.client_key = self.tmp / "keys" / "id_ed25519"
        self.process: Optional[subprocess.Popen] = None
        self.sshd_pid = 0

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> "Target":
        lower = build_rootfs()
        apt = cache_dir() / "apt-archives"
        (apt / "partial").mkdir(parents=True, exist_ok=True)
        for d in ("upper", "work", "merged", "keys", "apt-upper", "apt-work"):
            (self.tmp / d).mkdir()
        keys = self.tmp / "keys"
        _keygen(keys / "ioc_host_ed25519_key")
        _keygen(self.client_key)
        shutil.copyfile(str(self.client_key) + ".pub", keys / "ioc_authorized_keys")
        self.port = _free_port()
        (keys / "ioc_sshd_config").write_text(SSHD_CONFIG.format(port=self.port))
        log = open(self.tmp / "sshd.log", "wb")
        script = START.replace("{hostname}", HOSTNAME)
        self.process = subprocess.Popen(
            ["unshare", "--mount", "--pid", "--uts", "--propagation", "private",
             "--kill-child=SIGKILL", "sh", "-c", script, "start",
             str(self.tmp / "merged"), str(lower), str(self.tmp / "upper"),
             str(self.tmp / "work"), str(keys), str(apt), str(self.tmp / "apt-upper"),
             str(self.tmp / "apt-work")],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        log.close()
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise SandboxError("target exited (%s): %s" % (self.process.returncode, self.log()))
            kids = _children(self.process.pid)
            if kids:
                self.sshd_pid = kids[0]
                r = self.ssh("true", timeout=10)
                if r.returncode == 0:
                    return
                last = r.stderr
            time.sleep(0.2)
        raise SandboxError("target sshd not ready after %.0fs: %s %s" % (timeout, last, self.log()))

    def log(self) -> str:
        try:
            return (self.tmp / "sshd.log").read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def stop(self) -> None:
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            inside = descendants(proc.pid)
            # unshare --fork ignores SIGTERM while it waits; SIGKILL ends it
            # and --kill-child's parent-death signal ends sshd, the
            # namespace's PID 1: the kernel kills every other process in it.
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and any(os.path.exists("/proc/%d" % p) for p in inside):
                time.sleep(0.1)
        self._keep_downloads()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _keep_downloads(self) -> None:
        """Packages this target downloaded join the shared cache (each by a rename)."""
        shared = cache_dir() / "apt-archives"
        for deb in (self.tmp / "apt-upper").glob("*.deb"):
            if not (shared / deb.name).exists():
                staged = shared / "partial" / (".%s.%d" % (deb.name, os.getpid()))
                shutil.copyfile(deb, staged)
                os.replace(staged, shared / deb.name)

    def __enter__(self) -> "Target":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- access ------------------------------------------------------------------

    def ssh_options(self) -> List[str]:
        return ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "LogLevel=ERROR", "-o", "HostKeyAlias=%s" % self.name]

    def ssh(self, command: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["ssh", "-p", str(self.port), "-i", str(self.client_key), "-o", "BatchMode=yes",
             "-o", "IdentitiesOnly=yes", "-o", "ConnectTimeout=5", *self.ssh_options(),
             "root@127.0.0.1", command],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)

    def inventory(self, port: Optional[int] = None) -> str:
        """An INI inventory naming this host (``port`` e.g. a delay proxy's)."""
        return ("%s ansible_host=127.0.0.1 ansible_port=%d ansible_user=root "
                "ansible_ssh_private_key_file=%s ansible_ssh_common_args=%s "
                "ansible_python_interpreter=/usr/bin/python3\n"
                % (self.name, port or self.port, self.client_key,
                   shlex.quote(" ".join(self.ssh_options()))))

    def path(self, inside: str) -> Path:
        """``inside`` (an absolute path on the target) as seen from this machine."""
        return Path("/proc/%d/root" % self.sshd_pid) / inside.lstrip("/")

    def processes(self) -> List[str]:
        """Names of the processes running on the target outside sshd's sessions.

        A session's processes (an engine's remote Python finishing after its
        client left) are not the host's; a daemon a role started has left
        its session (it is the namespace's PID 1's child, or below one).
        """
        names = []
        for pid in _children(self.sshd_pid):
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    if f.read().startswith(b"sshd:"):
                        continue
            except OSError:
                continue
            for member in [pid] + descendants(pid):
                try:
                    with open("/proc/%d/comm" % member) as f:
                        names.append(f.read().strip())
                except OSError:
                    pass
        return names
