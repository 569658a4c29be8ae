"""``ioc-run --persist``: warm runs through a per-user connection daemon (the client).

Also the entry point of ``ioc-adhoc`` and ``ioc-ssh`` (their ``--persist``),
and what the ``mitogen_batch`` strategy calls with ``IOC_PERSIST``
(:func:`dispatch`: the daemon then serves that ``ansible-playbook`` run as
its dispatcher).

This module is ``ioc-run``'s entry point and imports only the standard
library: a command line without ``--persist`` / ``--persist-stop`` goes on to
:func:`ioc.cli.main` (the controller, imported only then); one with them
talks to the daemon (:mod:`ioc.warmd`) first, so a warm run pays no import
of the controller in this process.

The daemon owns the mitogen router, the runners it started on the targets
(become children and ``mitogen_via`` hops included) and which files each
runner already holds (by content hash). A run through it:

* the client connects to the daemon's unix socket, in a directory only its
  user may use (:func:`runtime_dir`), and sends the command line, the
  working directory, the environment and a *fingerprint* of what the
  daemon's imported Ansible settings depend on (:func:`fingerprint`), with
  its own stdin, stdout and stderr as file descriptors (SCM_RIGHTS): the
  run writes straight to the client's terminal or pipes;
* the daemon runs the play in its process as ``ioc-run`` would (same code,
  same output) and answers the exit code; Ctrl-C in the client is sent on
  and interrupts the run there (the daemon then ends, with every runner);
* when no daemon answers, the client starts one (``python -m ioc.warmd``,
  in a session of its own) and runs through it: the first run is cold and
  leaves the daemon behind; when the fingerprint differs (another
  directory, ansible.cfg, ``ANSIBLE_*``/``IOC_*`` variable, Python or ioc),
  the old daemon ends its runners and exits, and a new one starts.

One run at a time per daemon: a second client waits for the first run to
end (its connection sits in the socket's queue) and then runs warm.
"""
from __future__ import annotations

import array
import hashlib
import json
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

#: ``--persist`` without a value: seconds a daemon idles before it ends (ssh's ControlPersist).
DEFAULT_IDLE = 60.0
#: Seconds the client waits for a daemon it started to answer.
START_TIMEOUT = 60.0
SOCKET_NAME = "ioc-run.sock"
LOCK_NAME = "ioc-run.lock"
LOG_NAME = "ioc-run-daemon.log"


#: Variables a run reads, not the daemon's state: ``IOC_PERSIST`` says how long
#: it idles (as ``--persist=SECONDS``); ``IOC_BRIDGE_LOG`` is where one
#: mitogen_batch run logs.
UNFINGERPRINTED = frozenset(("IOC_PERSIST", "IOC_BRIDGE_LOG"))


class WarmError(Exception):
    """The daemon's directory or socket cannot be trusted or used."""


def runtime_dir(environ: Optional[Mapping[str, str]] = None) -> str:
    """The user's daemon directory: ``$XDG_RUNTIME_DIR/ioc`` (else ``/tmp/ioc-<uid>``),
    created mode 0700; refused unless it is a directory (not a link) this
    user owns that no one else may enter."""
    base = (os.environ if environ is None else environ).get("XDG_RUNTIME_DIR")
    path = os.path.join(base, "ioc") if base else "/tmp/ioc-%d" % os.getuid()
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    return checked_dir(path)


def checked_dir(path: str) -> str:
    """``path``, if it is a directory (not a link) this user owns and no one else may use."""
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise WarmError("%s is not a directory: refusing to use it for ioc-run's daemon" % path)
    if st.st_uid != os.getuid():
        raise WarmError("%s belongs to uid %d, not to this user (%d): refusing to use it "
                        "for ioc-run's daemon" % (path, st.st_uid, os.getuid()))
    if stat.S_IMODE(st.st_mode) & 0o077:
        raise WarmError("%s has mode %04o: others may use it; refusing it for ioc-run's "
                        "daemon (it must be 0700)" % (path, stat.S_IMODE(st.st_mode)))
    return path


def _ansible_cfg_candidates(cwd: str, environ: Dict[str, str]) -> List[str]:
    """Where Ansible looks for its configuration, in its order."""
    out = []
    named = environ.get("ANSIBLE_CONFIG")
    if named:
        named = os.path.expanduser(named)
        out.append(os.path.join(named, "ansible.cfg") if os.path.isdir(named) else named)
    out.append(os.path.join(cwd, "ansible.cfg"))
    home = environ.get("HOME")
    if home:
        out.append(os.path.join(home, ".ansible.cfg"))
    out.append("/etc/ansible/ansible.cfg")
    return out


def fingerprint(cwd: str, environ: Dict[str, str]) -> str:
    """What the daemon's process-wide state was made from: ansible-core reads its
    configuration (ansible.cfg, ``ANSIBLE_*``) once per process, ioc reads
    ``IOC_*``, and the daemon runs this Python and this ioc. A run whose
    fingerprint differs never reuses a daemon (nor its connections)."""
    digest = hashlib.sha256()

    def add(*parts: Any) -> None:
        digest.update(json.dumps(parts).encode("utf-8", "surrogateescape") + b"\0")

    add("python", sys.executable, sys.version)
    add("ioc", os.path.dirname(os.path.abspath(__file__)))
    add("cwd", cwd)
    for key in sorted(environ):
        if key in UNFINGERPRINTED:
            continue
        if key.startswith(("ANSIBLE_", "IOC_")) or key in ("PYTHONPATH", "HOME"):
            add("env", key, environ[key])
    for path in _ansible_cfg_candidates(cwd, environ):
        try:
            with open(path, "rb") as handle:
                add("cfg", path, hashlib.sha256(handle.read()).hexdigest())
        except OSError:
            add("cfg", path, None)
    return digest.hexdigest()


# -- frames: a 4-byte length and a JSON object ---------------------------------

def send_frame(sock: socket.socket, value: Dict[str, Any], fds: Tuple[int, ...] = ()) -> None:
    data = json.dumps(value).encode("utf-8", "surrogateescape")
    data = struct.pack("!I", len(data)) + data
    if fds:
        sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    else:
        sock.sendall(data)


def recv_frame(sock: socket.socket, with_fds: int = 0) -> Tuple[Optional[Dict[str, Any]], List[int]]:
    """The next frame (None at EOF) and the descriptors that came with it."""
    fds: List[int] = []
    buf = b""
    while len(buf) < 4:
        if with_fds and not buf:
            buf, fds = _recv_fds(sock, with_fds)
            if not buf:
                return None, fds
            continue
        chunk = sock.recv(4 - len(buf))
        if not chunk:
            return None, fds
        buf += chunk
    size = struct.unpack("!I", buf[:4])[0]
    body = buf[4:]
    while len(body) < size:
        chunk = sock.recv(size - len(body))
        if not chunk:
            return None, fds
        body += chunk
    return json.loads(body.decode("utf-8", "surrogateescape")), fds


def _recv_fds(sock: socket.socket, count: int) -> Tuple[bytes, List[int]]:
    fds = array.array("i")
    msg, ancdata, _, _ = sock.recvmsg(4, socket.CMSG_LEN(count * fds.itemsize))
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - (len(data) % fds.itemsize)])
    return msg, list(fds)


# -- the client ------------------------------------------------------------------

def persist_option(argv: List[str]) -> Tuple[Optional[float], bool]:
    """``(idle seconds or None, stop)`` from ``--persist[=SECONDS]`` and ``--persist-stop``
    (what the client must know before the controller's parser runs)."""
    idle: Optional[float] = None
    stop = False
    for arg in argv:
        if arg == "--":
            break
        if arg == "--persist":
            idle = DEFAULT_IDLE
        elif arg.startswith("--persist="):
            idle = parse_idle(arg.split("=", 1)[1])
        elif arg == "--persist-stop":
            stop = True
    return idle, stop


def without_persist(argv: List[str]) -> List[str]:
    """``argv`` for the run itself: ``--persist[=SECONDS]`` is the client's (a bare
    ``--persist`` takes no value: ``--persist play.yml`` runs play.yml)."""
    out: List[str] = []
    for n, arg in enumerate(argv):
        if arg == "--":
            return out + argv[n:]
        if arg != "--persist" and not arg.startswith("--persist="):
            out.append(arg)
    return out


def parse_idle(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise WarmError("--persist: %r is not a number of seconds" % text) from None
    if not value > 0:
        raise WarmError("--persist: the idle time must be more than 0 seconds")
    return value


def _connect(path: str) -> Optional[socket.socket]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None
    return sock


def _check_socket(path: str) -> None:
    st = os.lstat(path)
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid():
        raise WarmError("%s is not this user's socket: refusing to talk to it" % path)


def stop(directory: str) -> int:
    """``--persist-stop``: end the daemon (and every runner it keeps), if there is one."""
    path = os.path.join(directory, SOCKET_NAME)
    sock = _connect(path)
    if sock is None:
        print("ioc-run: no daemon was running", file=sys.stderr)
        return 0
    with sock:
        _check_socket(path)
        send_frame(sock, {"op": "stop"})
        answer, _ = recv_frame(sock)
    if answer is None or answer.get("op") != "stopped":
        print("[ERROR]: ioc-run's daemon did not confirm that it stopped", file=sys.stderr)
        return 1
    print("ioc-run: daemon stopped (its runners ended on %d host(s))" % answer["hosts"],
          file=sys.stderr)
    return 0


def _start_daemon(directory: str, environ: Dict[str, str]) -> subprocess.Popen:
    """``python -m ioc.warmd DIR``, in a session of its own, this ioc first on its path."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(environ)
    env["PYTHONPATH"] = os.pathsep.join([here] + [p for p in env.get("PYTHONPATH", "").split(
        os.pathsep) if p and p != here])
    log = os.open(os.path.join(directory, LOG_NAME), os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                  0o600)
    try:
        return subprocess.Popen([sys.executable, "-m", "ioc.warmd", directory],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                cwd="/", start_new_session=True, close_fds=True)
    finally:
        os.close(log)


def _daemon_socket(directory: str, environ: Dict[str, str]) -> socket.socket:
    """A connection to the daemon, starting one if none answers."""
    path = os.path.join(directory, SOCKET_NAME)
    sock = _connect(path)
    if sock is not None:
        _check_socket(path)
        return sock
    proc = _start_daemon(directory, environ)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        sock = _connect(path)
        if sock is not None:
            _check_socket(path)
            return sock
        if proc.poll() is not None and proc.returncode != 0:
            break
        time.sleep(0.01)
    raise WarmError("ioc-run's daemon did not start (its log: %s)"
                    % os.path.join(directory, LOG_NAME))


def persist_setting(environ: Optional[Mapping[str, str]] = None) -> Optional[float]:
    """``IOC_PERSIST`` (the ``mitogen_batch`` strategy's ``--persist``): its idle
    seconds, or None when unset, empty or ``0`` (no daemon). ``yes``/``true``/
    ``on`` mean the default, :data:`DEFAULT_IDLE`."""
    text = (os.environ if environ is None else environ).get("IOC_PERSIST", "").strip()
    if text in ("", "0"):
        return None
    if text.lower() in ("yes", "true", "on"):
        return DEFAULT_IDLE
    try:
        return parse_idle(text)
    except WarmError:
        raise WarmError("IOC_PERSIST=%s: it is a number of seconds (or yes, or 0 for no "
                        "daemon)" % text) from None


def dispatch(idle: float, runner_socket: str, env: Dict[str, str]) -> socket.socket:
    """The ``mitogen_batch`` strategy's connection to the daemon (started if none
    answers), which then serves this ``ansible-playbook`` run's plays on it
    (:mod:`ioc.ansible.pipe`'s protocol) and the ``ioc_runner`` connection
    plugin on ``runner_socket``. ``env``: the run's environment, as the cold
    dispatcher gets it (the fingerprint is this process's)."""
    directory = runtime_dir()
    cwd = os.getcwd()
    environ = dict(os.environ)
    request = {"op": "dispatch", "cwd": cwd, "env": env, "socket": runner_socket,
               "fingerprint": fingerprint(cwd, environ), "idle": idle}
    for _ in range(3):
        sock = _daemon_socket(directory, environ)
        send_frame(sock, request)
        answer, _ = recv_frame(sock)
        if answer is not None and answer.get("op") == "serving":
            return sock
        sock.close()
        if answer is None:
            raise WarmError("ioc's daemon ended before serving the run (its log: %s)"
                            % os.path.join(directory, LOG_NAME))
        if answer.get("op") != "replaced":
            raise WarmError("unexpected answer from ioc's daemon: %r" % answer)
    raise WarmError("ioc's daemon kept ending instead of serving the run")


def run(argv: List[str], idle: float, program: str = "ioc-run") -> int:
    """One run of ``program`` (``ioc-run``, ``ioc-adhoc``, ``ioc-ssh``) through the daemon:
    its exit code."""
    directory = runtime_dir()
    cwd = os.getcwd()
    environ = dict(os.environ)
    request = {"op": "run", "argv": without_persist(argv), "cwd": cwd, "env": environ,
               "fingerprint": fingerprint(cwd, environ), "idle": idle, "program": program}
    for _ in range(3):
        sock = _daemon_socket(directory, environ)
        with sock:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            send_frame(sock, request, fds=(0, 1, 2))
            answer = _wait(sock)
        if answer is None:
            raise WarmError("ioc-run's daemon ended during the run (its log: %s)"
                            % os.path.join(directory, LOG_NAME))
        if answer.get("op") == "exit":
            return int(answer["code"])
        if answer.get("op") != "replaced":  # ("replaced": it ended, for other settings)
            raise WarmError("unexpected answer from ioc-run's daemon: %r" % answer)
    raise WarmError("ioc-run's daemon kept ending instead of running the play")


def _wait(sock: socket.socket) -> Optional[Dict[str, Any]]:
    """The daemon's answer; Ctrl-C here interrupts the run there (and is waited out)."""
    interrupted = False
    while True:
        try:
            answer, _ = recv_frame(sock)
            return answer
        except KeyboardInterrupt:
            if not interrupted:
                interrupted = True
                try:
                    send_frame(sock, {"op": "interrupt"})
                except OSError:
                    return None


def main(argv: Optional[List[str]] = None, program: str = "ioc-run") -> int:
    """``ioc-run`` (or ``ioc-adhoc``, ``ioc-ssh``): straight to :func:`ioc.cli.main`
    (:func:`ioc.adhoc.main`, :func:`ioc.ssh.main`) unless ``--persist`` or
    ``--persist-stop``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        idle, stopping = persist_option(argv)
        if stopping:
            return stop(runtime_dir())
        if idle is not None and not any(a in ("-h", "--help", "--version", "--strategy-dir")
                                        for a in argv):
            return run(argv, idle, program)
    except WarmError as exc:
        print("[ERROR]: %s" % exc, file=sys.stderr)
        return 1
    if program == "ioc-adhoc":
        from ioc.adhoc import main as adhoc_main

        return adhoc_main(argv)
    if program == "ioc-ssh":
        from ioc.ssh import main as ssh

        return ssh(argv)
    from ioc.cli import main as cli_main

    return cli_main(argv)


def adhoc_main(argv: Optional[List[str]] = None) -> int:
    """:func:`main` for ``ioc-adhoc``."""
    return main(argv, "ioc-adhoc")


def ssh_main(argv: Optional[List[str]] = None) -> int:
    """:func:`main` for ``ioc-ssh``."""
    return main(argv, "ioc-ssh")


def exit_now(code: Any) -> None:
    """End the process with ``code`` (as ``sys.exit`` takes it) once its
    output is written and its ``atexit`` work done (Ansible's temporary
    directories, logging's flush), without the interpreter tearing down every
    module's objects one by one: with ansible-core imported that teardown is
    about 0.1 s of CPU, 6 % of a cold ``ioc-run`` of a 100-task play. Only
    for the process's own entry points: :func:`main` returns."""
    import atexit

    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # (a closed pipe: nothing more to say)
            pass
    atexit._run_exitfuncs()
    os._exit(code)


def run_command() -> None:
    """``ioc-run``'s entry point."""
    exit_now(main())


def adhoc_command() -> None:
    """``ioc-adhoc``'s entry point."""
    exit_now(adhoc_main())


def ssh_command() -> None:
    """``ioc-ssh``'s entry point."""
    exit_now(ssh_main())


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
