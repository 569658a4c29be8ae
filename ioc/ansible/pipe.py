"""The pipe between ``ansible-playbook`` (the parent) and ioc's dispatcher subprocess.

mitogen's broker must never live in a process Ansible forks (its workers
fork the parent), so ioc's controller runs in a child, ``python -m
ioc.ansible --serve`` (:mod:`ioc.ansible.dispatcher`), started once per
``ansible-playbook`` run and kept for its plays. The two talk over the
child's stdin/stdout: each message is a 4-byte big-endian length and a
pickle (both sides are the same ioc, the same Python).

The parent sends one request per play::

    {"op": "play", "planned": PlannedPlay, "inventory": Inventory, "modules", "plugins",
     "plugin_paths", "extra_vars", "hosts", "memory", "options", "host_vars_files", "skip",
     "hosts_all", "removed", "options_vars"}

and reads tuples until ``("done", summary)`` or ``("error", text)``. The
dispatcher *tells* the parent what the replay releases, in linear order:

* ``("step_start", key, hosts, first)``, ``("event", host, event)``,
  ``("left", host, end)``, ``("step_end", key)`` — a step's runner events;
* ``("display", method, args, kwargs)`` — a call of Ansible's ``Display`` made
  in the dispatcher (a plugin's warning), replayed on the parent's;
* ``("callback", name, args)`` — a play-level callback (no hosts remaining,
  a warning);
* ``("store", host, values, layer)`` — ``delegate_facts`` for a host outside
  the play, a run_once task's values for the play's other hosts (``layer``:
  ``facts``, ``runtime`` or ``include_vars``);
* ``("runners", names)`` — before a task or handler through Ansible: the
  hosts whose runner its ``ioc_runner`` connection may use
  (:mod:`ioc.ansible.routing`).

and *asks* it, waiting for the answer (``op``):

* ``("ansible", index, [(host, rescuable)], once, announce)`` → ``ansible_done`` —
  run a ``Where.ANSIBLE`` task (or a suspension point) through Ansible
  (:mod:`ioc.ansible.through_ansible`); ``announce`` False: the task's
  banner is out already (other hosts' results of it were replayed);
* ``("ansible_handler", index, number, reached, once, notified)`` →
  ``ansible_done`` — run a handler of a flush through Ansible;
* ``("include", index, active)`` → ``include_done`` — load what a dynamic
  include included and send the new plan (:mod:`ioc.ansible.includes`);
* ``("outside", names)`` → ``outside_done`` — the variables of inventory
  hosts outside the play (:mod:`ioc.ansible.hostvars`);
* ``("decrypt", path)`` → ``decrypt_done`` — a vault-encrypted controller
  file (an ``include_vars`` file, a ``copy`` source) as Ansible's loader
  decrypts it with the run's vault secrets, which stay in the parent: its
  ``content``, or the ``error`` Ansible raised.
* ``("template_vars", src, path)`` → ``template_vars_done`` — what Ansible's
  template action adds for a template file (:mod:`ioc.ansible.template_vars`):
  ``vars``.

:class:`Dispatcher` is the parent's end, :class:`ParentLink` the dispatcher's.
"""
from __future__ import annotations

import atexit
import os
import pickle
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
from typing import IO, Any, BinaryIO, Dict, Iterator, List, Optional, Sequence, Tuple

from ioc.ansible.version import source_root


def write_message(stream: IO[bytes], obj: Any) -> None:
    """Send ``obj``: its pickle's length, then the pickle."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack(">I", len(data)) + data)
    stream.flush()


def read_message(stream: IO[bytes]) -> Any:
    """The next message; EOFError when the other end closed the pipe."""
    head = stream.read(4)
    if len(head) < 4:
        raise EOFError
    (size,) = struct.unpack(">I", head)
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return pickle.loads(data)


#: Where the dispatcher logs its plans and steps: ``IOC_BRIDGE_LOG``, or this
#: when set in the process (tests/targets' shim: a variable it put in the
#: environment would reach the modules of a local connection, whose
#: environment is ansible-playbook's, and linear's run has none).
BRIDGE_LOG: Optional[str] = None

#: Starts the dispatcher with ioc's directory first on ``sys.path``, not on
#: ``PYTHONPATH``: the runner of a local connection is its child and its
#: modules see its environment, which must be ansible-playbook's (as under
#: linear: ``ansible_env``, ``command: env``).
_SERVE = ("import runpy, sys\n"
          "sys.path.insert(0, sys.argv.pop(1))\n"
          "runpy.run_module('ioc.ansible', run_name='__main__', alter_sys=True)\n")


def bridge_log() -> Optional[str]:
    """The dispatcher's log file, if any (:data:`BRIDGE_LOG`, ``IOC_BRIDGE_LOG``)."""
    return BRIDGE_LOG or os.environ.get("IOC_BRIDGE_LOG") or None


class Dispatcher:
    """The parent's handle on the ``--serve`` subprocess (one per ansible-playbook run)."""

    _instance: Optional["Dispatcher"] = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        env = dict(os.environ)
        debug = bridge_log()
        self._log = open(debug, "ab") if debug else subprocess.DEVNULL
        #: The dispatcher's unix socket for the ``ioc_runner`` connection plugin
        #: in Ansible's workers, in a directory only this user can enter.
        self._socket_dir = tempfile.mkdtemp(prefix="ioc-dispatcher-")
        self.socket = os.path.join(self._socket_dir, "runner.sock")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _SERVE, source_root(), "--serve", "--socket", self.socket] +
            (["--log", debug] if debug else []),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, env=env,
            close_fds=True)

    @classmethod
    def get(cls) -> "Dispatcher":
        """This run's dispatcher: the subprocess, or with ``IOC_PERSIST`` the
        per-user daemon (:class:`WarmDispatcher`); WarmError for a bad
        ``IOC_PERSIST`` or a daemon that cannot be used."""
        with cls._lock:
            if cls._instance is None or not cls._instance.alive():
                from ioc.warm import persist_setting

                idle = persist_setting()
                cls._instance = Dispatcher() if idle is None else WarmDispatcher(idle)
                atexit.register(cls._instance.close)
            return cls._instance

    def alive(self) -> bool:
        return self.proc.poll() is None

    def request(self, message: Dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        write_message(self.proc.stdin, message)

    def replies(self) -> Iterator[Tuple[Any, ...]]:
        assert self.proc.stdout is not None
        while True:
            try:
                reply = read_message(self.proc.stdout)
            except EOFError:
                yield ("error", "the ioc dispatcher exited (status %s)" % self.proc.poll())
                return
            yield reply
            if reply[0] in ("done", "error"):
                return

    def close(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
        shutil.rmtree(self._socket_dir, ignore_errors=True)
        if Dispatcher._instance is self:
            Dispatcher._instance = None


class WarmDispatcher(Dispatcher):
    """The dispatcher of an ``IOC_PERSIST`` run: ioc's per-user daemon
    (:mod:`ioc.warmd`, the one ``ioc-run --persist`` uses), over its unix
    socket, on the connections it kept from the last run with the same
    settings. The protocol is the subprocess's; the daemon serves the
    ``ioc_runner`` connection plugin on :attr:`socket` for this run."""

    def __init__(self, idle: float) -> None:  # pylint: disable=super-init-not-called
        from ioc import warm

        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [source_root(), env.get("PYTHONPATH")]))
        self._socket_dir = tempfile.mkdtemp(prefix="ioc-dispatcher-")
        self.socket = os.path.join(self._socket_dir, "runner.sock")
        self.log = os.path.join(warm.runtime_dir(), warm.LOG_NAME)
        try:
            self.conn = warm.dispatch(idle, self.socket, env)
        except BaseException:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            raise
        self._inp = self.conn.makefile("rb")
        self._out = self.conn.makefile("wb")
        self._closed = False

    def alive(self) -> bool:
        return not self._closed

    def request(self, message: Dict[str, Any]) -> None:
        write_message(self._out, message)

    def replies(self) -> Iterator[Tuple[Any, ...]]:
        while True:
            try:
                reply = read_message(self._inp)
            except (EOFError, OSError):
                self._closed = True
                yield ("error", "ioc's daemon ended during the play (its log: %s)" % self.log)
                return
            yield reply
            if reply[0] in ("done", "error"):
                return

    def close(self) -> None:
        """The run is over: the daemon keeps the connections for its idle time."""
        self._closed = True
        for stream in (self._out, self._inp, self.conn):
            try:
                stream.close()
            except OSError:
                pass
        shutil.rmtree(self._socket_dir, ignore_errors=True)
        if Dispatcher._instance is self:
            Dispatcher._instance = None


class ParentLink:
    """The dispatcher's end of the pipe: one method per message it tells or asks.

    A question (:meth:`run_task`, :meth:`run_handler`, :meth:`load_includes`,
    :meth:`outside_hosts`) blocks until the parent answers; an answer of
    another kind is a protocol error (RuntimeError).
    """

    def __init__(self, inp: BinaryIO, out: IO[bytes]) -> None:
        self.inp = inp
        self.out = out

    def next_request(self) -> Dict[str, Any]:
        """The parent's next request; EOFError once it closed the pipe."""
        request: Dict[str, Any] = read_message(self.inp)
        return request

    def send(self, message: Tuple[Any, ...]) -> None:
        write_message(self.out, message)

    # -- told ------------------------------------------------------------------

    def step_start(self, key: Sequence[int], hosts: Sequence[str], first: Dict[str, Any]) -> None:
        self.send(("step_start", tuple(key), list(hosts), first))

    def event(self, host: str, event: Dict[str, Any]) -> None:
        self.send(("event", host, event))

    def left(self, host: str, end: Dict[str, Any]) -> None:
        self.send(("left", host, end))

    def step_end(self, key: Sequence[int]) -> None:
        self.send(("step_end", tuple(key)))

    def callback(self, name: str, args: Tuple[Any, ...] = ()) -> None:
        """A play-level callback: ``no_hosts_remaining``, ``warning``."""
        self.send(("callback", name, args))

    def display(self, method: str, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> None:
        """A call of Ansible's ``Display`` made here (a plugin's warning), for the parent's."""
        self.send(("display", method, args, kwargs))

    def store(self, host: str, values: Dict[str, Any], layer: str) -> None:
        """Values ``host`` got in ioc (``delegate_facts`` outside the play, run_once's
        other hosts): Ansible's variable manager keeps them too."""
        self.send(("store", host, values, layer))

    def runners(self, names: Sequence[str]) -> None:
        """The hosts whose runner serves the next task's ``ioc_runner`` connection."""
        self.send(("runners", list(names)))

    def done(self, summary: Dict[str, Any]) -> None:
        self.send(("done", summary))

    def error(self, text: str) -> None:
        self.send(("error", text))

    # -- asked -----------------------------------------------------------------

    def ask(self, message: Tuple[Any, ...], answer: str) -> Dict[str, Any]:
        """Ask the parent (``message``) and wait for its ``answer``."""
        self.send(message)
        reply: Dict[str, Any] = read_message(self.inp)
        if reply.get("op") != answer:
            raise RuntimeError("unexpected request from the parent: %r" % (reply.get("op"),))
        return reply

    def run_task(self, index: int, reached: List[Tuple[str, bool]], once: bool,
                 announce: bool = True) -> Dict[str, Any]:
        """Have Ansible run task ``index`` for ``reached`` (host, rescuable): their outcomes."""
        return self.ask(("ansible", index, reached, once, announce), "ansible_done")

    def run_handler(self, index: int, number: int, reached: List[Tuple[str, bool]], once: bool,
                    notified: Dict[str, List[Any]]) -> Dict[str, Any]:
        """Have Ansible run handler ``number`` of the flush at ``index`` for ``reached``."""
        return self.ask(("ansible_handler", index, number, reached, once, notified),
                        "ansible_done")

    def load_includes(self, index: int, active: List[str]) -> Dict[str, Any]:
        """What the hosts of include ``index`` included: the new plan, hosts that failed."""
        return self.ask(("include", index, active), "include_done")

    def decrypt(self, data: bytes, path: str) -> bytes:
        """The plaintext of vault-encrypted file ``path`` (the parent holds the secrets);
        ValueError with Ansible's message when they do not decrypt it."""
        reply = self.ask(("decrypt", path), "decrypt_done")
        if reply.get("error") is not None:
            raise ValueError(reply["error"])
        content: bytes = reply["content"]
        return content

    def template_vars(self, src: str, path: str) -> Dict[str, Any]:
        """:func:`ioc.ansible.template_vars.template_vars`, worked out by the parent
        (its Ansible has the run's configuration)."""
        found: Dict[str, Any] = self.ask(("template_vars", src, path), "template_vars_done")["vars"]
        return found

    def outside_hosts(self, names: List[str]) -> Dict[str, Dict[str, Any]]:
        """Variable layers of inventory hosts outside the play, by name."""
        hosts: Dict[str, Dict[str, Any]] = self.ask(("outside", names), "outside_done")["hosts"]
        return hosts
