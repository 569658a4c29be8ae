"""A real OpenSSH server on a free loopback port, for integration tests.

:func:`start_sshd` runs Debian's ``/usr/sbin/sshd -D -e -f <config>`` as the
current user (root) with a throwaway ed25519 host key and client key, listening
on ``127.0.0.1:<free port>``, and returns an :class:`SSHServer` describing how to
reach it; :meth:`SSHServer.stop` ends it and every session it started.

Clean session environment
-------------------------
Root's ``~/.bashrc`` on the development machines runs ``pyenv init``. bash
sources ``~/.bashrc`` for *every* command sshd runs (Debian builds bash with
SSH_SOURCE_BASHRC), so each ``ssh host cmd`` and each mitogen bootstrap would
pay for it, and the session would see ``PYENV_ROOT`` & co. Without touching the
real file, sshd is started inside a private mount namespace
(``unshare -m --propagation private``) in which an empty file is bind-mounted
over ``~/.bashrc``; sshd and every session it forks see the empty file, the
rest of the machine sees the real one. If ``unshare``/``mount`` are not
usable, sshd runs directly and a :class:`SlowSessionWarning` says so.

Measured on the development machine (Debian 12, OpenSSH, 20 sequential
``ssh -p PORT -i key root@127.0.0.1 true`` per run, mean wall time per command,
two runs each, ``start_sshd(clean_env=False)`` vs ``start_sshd()``):

* without the mount trick (``.bashrc`` runs ``pyenv init``): 290-310 ms
* with the mount trick (empty ``.bashrc``):                   195-205 ms

i.e. ~100 ms saved on every SSH exec (and every mitogen ssh bootstrap).
"""
from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from typing import List, Optional, Sequence

SSHD = "/usr/sbin/sshd"
HOST = "127.0.0.1"
READY_TIMEOUT = 15.0

#: Users whose names start so may log in with a password (no other user may).
PASSWORD_USER_PREFIX = "ioc-pw-"

#: ``-o`` options a client needs for a server whose host key changes every run.
CLIENT_OPTIONS = (
    "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
)


class SlowSessionWarning(UserWarning):
    """sshd could not be given a clean environment; sessions are slower."""


class SSHDError(RuntimeError):
    """The test sshd could not be started."""


@dataclasses.dataclass
class SSHServer:
    """How to reach the test sshd (the value of the ``sshd`` fixture)."""

    host: str
    port: int
    user: str
    #: Path of the client's private key (authorised for ``user``).
    client_key: str
    known_hosts: str
    #: ``-o`` options for ``ansible_ssh_common_args`` (a single string).
    ssh_args: str
    #: True when sessions run with an empty ``~/.bashrc`` (the mount trick).
    clean_env: bool = False
    tmpdir: str = ""
    config_path: str = ""
    process: Optional[subprocess.Popen] = dataclasses.field(default=None, repr=False)

    # -- clients --------------------------------------------------------------

    def host_ssh_args(self, name: Optional[str] = None) -> str:
        """:attr:`ssh_args`, plus ``-o HostKeyAlias=<name>`` when a name is given.

        The alias makes each inventory name a distinct SSH identity, so several
        names on this one address/port/user are not merged into one connection.
        """
        if name is None:
            return self.ssh_args
        return "%s -o HostKeyAlias=%s" % (self.ssh_args, name)

    def ssh_argv(self, *command: str, name: Optional[str] = None) -> List[str]:
        """argv of an ``ssh`` client that runs ``command`` on this server."""
        return [
            "ssh",
            "-p", str(self.port),
            "-i", self.client_key,
            "-o", "BatchMode=yes",
            "-o", "IdentitiesOnly=yes",
            "-o", "ConnectTimeout=5",
            *shlex.split(self.host_ssh_args(name)),
            "%s@%s" % (self.user, self.host),
            *command,
        ]

    def run(self, command: str, timeout: float = 30, **kwargs) -> subprocess.CompletedProcess:
        """Run one shell command over ssh; captures text output."""
        kwargs.setdefault("capture_output", True)
        kwargs.setdefault("text", True)
        return subprocess.run(self.ssh_argv(command), timeout=timeout,
                              stdin=subprocess.DEVNULL, **kwargs)

    def mitogen_kwargs(self, name: Optional[str] = None, python: Optional[str] = None) -> dict:
        """Keyword arguments for ``mitogen.parent.Router.ssh()`` to this server."""
        return dict(
            hostname=self.host,
            port=self.port,
            username=self.user,
            identity_file=self.client_key,
            identities_only=True,
            check_host_keys="ignore",
            ssh_args=shlex.split(self.host_ssh_args(name)),
            python_path=python or sys.executable,
        )

    def inventory_ini(self, hosts: Sequence[str], extra: str = "", *,
                      python: Optional[str] = None,
                      group: Optional[str] = None) -> str:
        """An INI inventory in which every name in ``hosts`` is this sshd.

        Each host line sets ``ansible_host``, ``ansible_port``, ``ansible_user``,
        ``ansible_ssh_private_key_file``, ``ansible_ssh_common_args`` (quoted,
        with ``-o HostKeyAlias=<name>``) and ``ansible_python_interpreter``
        (``python``, by default the interpreter running the tests).

        ``extra`` is appended to every host line (more host variables, e.g.
        ``"ansible_become=true"``). With ``group`` the hosts are listed under
        ``[group]``, otherwise they are ungrouped; append further sections to
        the returned text as needed.
        """
        python = python or sys.executable
        lines = []
        if group:
            lines.append("[%s]" % group)
        for name in hosts:
            fields = [
                name,
                "ansible_host=%s" % self.host,
                "ansible_port=%d" % self.port,
                "ansible_user=%s" % self.user,
                "ansible_ssh_private_key_file=%s" % self.client_key,
                "ansible_ssh_common_args=%s" % shlex.quote(self.host_ssh_args(name)),
                "ansible_python_interpreter=%s" % python,
            ]
            if extra.strip():
                fields.append(extra.strip())
            lines.append(" ".join(fields))
        return "\n".join(lines) + "\n"

    # -- lifecycle --------------------------------------------------------------

    @property
    def kill_command(self) -> str:
        """A shell command that kills this sshd and every session it serves at once
        (SIGSTOP down the tree, then SIGKILL): their TCP connections close as if
        the host had gone; :meth:`revive` starts it again."""
        pid_file = os.path.join(self.tmpdir, "sshd.pid")
        return ("t() { kill -STOP $1; for c in $(pgrep -P $1); do t $c; done; kill -KILL $1; }; "
                "t $(cat %s)" % shlex.quote(pid_file))

    def revive(self) -> None:
        """Start this sshd again if it is not running: same port, keys and
        configuration (what a client sees of it is unchanged)."""
        if self.process is not None and self.process.poll() is None:
            return
        log_path = os.path.join(self.tmpdir, "sshd-%d.log" % self.port)
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen(
                _sshd_argv(self.tmpdir, self.config_path, self.clean_env),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        _wait_ready(self, self.process, log_path, READY_TIMEOUT)

    def stop(self) -> None:
        """End sshd and every process it started; remove the temp directory."""
        proc, self.process = self.process, None
        if proc is not None:
            _terminate_tree(proc)
        if self.tmpdir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)


# -----------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _keygen(path: str, comment: str) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path],
        check=True, stdin=subprocess.DEVNULL, capture_output=True,
    )


def _config(tmpdir: str, port: int, addresses: Sequence[str] = (HOST,)) -> str:
    return "\n".join([
        *("ListenAddress %s:%d" % (address, port) for address in addresses),
        "HostKey %s" % os.path.join(tmpdir, "ssh_host_ed25519_key"),
        "AuthorizedKeysFile %s" % os.path.join(tmpdir, "authorized_keys"),
        "PidFile %s" % os.path.join(tmpdir, "sshd.pid"),
        "StrictModes no",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "UseDNS no",
        "PrintMotd no",
        "PrintLastLog no",
        "X11Forwarding no",
        "MaxStartups 100:30:200",
        "MaxSessions 100",
        # No AcceptEnv line: the client's environment is not passed on.
        "Subsystem sftp internal-sftp",
        "LogLevel ERROR",
        # Password logins only for throwaway users named so (tests of -k and
        # ansible_password, tests/support/users.py makes them); last: a Match
        # block runs to the end of the file.
        "Match User %s*" % PASSWORD_USER_PREFIX,
        "    PasswordAuthentication yes",
        "",
    ])


def _bashrc() -> Optional[str]:
    path = os.path.expanduser("~/.bashrc")
    return path if os.path.isfile(path) else None


def _unshare_usable() -> bool:
    """True when this process may create a mount namespace and bind-mount."""
    if not shutil.which("unshare") or not shutil.which("mount"):
        return False
    try:
        r = subprocess.run(
            ["unshare", "-m", "--propagation", "private",
             "mount", "--bind", "/dev/null", "/dev/null"],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return r.returncode == 0


def _sshd_argv(tmpdir: str, config_path: str, clean_env: bool) -> List[str]:
    sshd = [SSHD, "-D", "-e", "-f", config_path]
    bashrc = _bashrc()
    if not clean_env or bashrc is None:
        return sshd
    empty = os.path.join(tmpdir, "empty_bashrc")
    open(empty, "w").close()
    script = "mount --bind %s %s && exec %s" % (
        shlex.quote(empty), shlex.quote(bashrc), " ".join(shlex.quote(a) for a in sshd))
    # unshare execs sh (no --fork), which execs sshd: the Popen pid is sshd.
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", script]


def _descendants(pid: int) -> List[int]:
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        # Field 4 (ppid) follows the parenthesised command name.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _signal_all(pids, sig) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _alive(pid: int) -> bool:
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _terminate_tree(proc: subprocess.Popen) -> None:
    """SIGTERM sshd, its process group and every descendant; SIGKILL stragglers."""
    # Collect the per-connection sshd processes and the sessions under them
    # first: once the listener is gone they are re-parented and hard to find.
    victims = _descendants(proc.pid) if proc.poll() is None else []
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    _signal_all(victims, signal.SIGTERM)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(p) for p in victims):
        time.sleep(0.05)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _signal_all([p for p in victims if _alive(p)], signal.SIGKILL)
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=5)


def _wait_ready(server: SSHServer, proc: subprocess.Popen, log_path: str,
                timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last = ""
    while True:
        if proc.poll() is not None:
            raise SSHDError("sshd exited with status %s: %s"
                            % (proc.returncode, _read(log_path).strip()))
        try:
            r = server.run("true", timeout=max(1.0, deadline - time.monotonic()))
            if r.returncode == 0:
                return
            last = (r.stderr or "").strip()
        except subprocess.TimeoutExpired:
            last = "ssh timed out"
        if time.monotonic() > deadline:
            raise SSHDError("sshd on port %d not ready after %.0fs: %s\nsshd log: %s"
                            % (server.port, timeout, last, _read(log_path).strip()))
        time.sleep(0.1)


def _read(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def start_sshd(clean_env: bool = True, attempts: int = 5,
               timeout: float = READY_TIMEOUT, *, port: Optional[int] = None,
               addresses: Sequence[str] = (HOST,),
               authorized_keys: Sequence[str] = ()) -> SSHServer:
    """Start a throwaway sshd on a free loopback port; wait until it serves.

    ``clean_env=False`` skips the mount trick (sessions source the real
    ``~/.bashrc``); it exists to measure the difference.

    ``port`` asks for that port instead of a free one (one attempt: it is
    taken or not), ``addresses`` for more loopback addresses than 127.0.0.1
    (the first is the one clients of :class:`SSHServer` use), and
    ``authorized_keys`` (public key lines) admits more client keys than the
    throwaway one — for tests whose clients use keys of their own
    (``tests/targets``: ansible-test's ``needs/ssh``).
    """
    if not os.access(SSHD, os.X_OK):
        raise SSHDError("%s not found: install openssh-server (scripts/test does)" % SSHD)
    for tool in ("ssh", "ssh-keygen"):
        if not shutil.which(tool):
            raise SSHDError("%s not found: install openssh-client" % tool)
    # sshd refuses to start without its privilege separation directory.
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)

    if clean_env and not _unshare_usable():
        warnings.warn(
            "cannot start the test sshd in a private mount namespace (unshare -m); "
            "running it directly: every SSH session sources ~/.bashrc and is slower",
            SlowSessionWarning, stacklevel=2)
        clean_env = False

    tmpdir = tempfile.mkdtemp(prefix="ioc-sshd-")
    ok = False
    try:
        host_key = os.path.join(tmpdir, "ssh_host_ed25519_key")
        client_key = os.path.join(tmpdir, "id_ed25519")
        _keygen(host_key, "ioc-test-host")
        _keygen(client_key, "ioc-test-client")
        with open(client_key + ".pub") as f:
            keys = [f.read().strip()] + [k.strip() for k in authorized_keys]
        with open(os.path.join(tmpdir, "authorized_keys"), "w") as f:
            f.write("\n".join(keys) + "\n")
        config_path = os.path.join(tmpdir, "sshd_config")

        errors = []
        for _ in range(1 if port is not None else attempts):
            listen_port = port if port is not None else _free_port()
            with open(config_path, "w") as f:
                f.write(_config(tmpdir, listen_port, addresses))
            log_path = os.path.join(tmpdir, "sshd-%d.log" % listen_port)
            with open(log_path, "wb") as log:
                proc = subprocess.Popen(
                    _sshd_argv(tmpdir, config_path, clean_env),
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            server = SSHServer(
                host=addresses[0], port=listen_port, user="root", client_key=client_key,
                known_hosts="/dev/null", ssh_args=CLIENT_OPTIONS, clean_env=clean_env,
                tmpdir=tmpdir, config_path=config_path, process=proc,
            )
            try:
                _wait_ready(server, proc, log_path, timeout)
            except SSHDError as exc:
                _terminate_tree(proc)
                server.process = None
                errors.append(str(exc))
                # Someone else took the port between our probe and sshd's bind:
                # try another one. Anything else is a real failure.
                if "Address already in use" in str(exc):
                    continue
                raise
            ok = True
            return server
        raise SSHDError("could not start sshd after %d attempts:\n%s"
                        % (attempts, "\n".join(errors)))
    finally:
        if not ok:
            shutil.rmtree(tmpdir, ignore_errors=True)
