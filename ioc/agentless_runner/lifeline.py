"""When the controller is gone, the runner stops and ends every process it started.

A runner is a mitogen child: when its parent stream ends (the controller
exited, was interrupted or killed, its ``ssh`` client died, or the runner's
keepalive gave up on a silent network) mitogen shuts the runner's broker down
and the process exits. The processes the running task started do not: each
runs in a session of its own (as a module under Ansible runs apart from the
ssh session's other processes), so without this module a ``command: sleep
600`` or a daemon a script forked would live on, reparented to init.

So every process a task starts is started through :func:`popen` (or, for the
fork server's children, announced with :func:`track`), and the broker's
``shutdown`` runs :func:`_end_everything`: each tracked process group gets
SIGTERM, and SIGKILL :data:`GRACE` seconds later if it is still there (a task
that ignores SIGTERM). From then on :func:`guard`'s emitter raises
:class:`Abandoned`, so the batch stops before its next event instead of
starting the next task for nobody.

An ``async`` job is the exception, by design: Ansible's ``async_wrapper``
daemonizes it into a session of its own (:mod:`ioc.agentless_runner.asyncjob`),
so it outlives the runner as it outlives Ansible's connection, and its
status file stays for a later ``async_status``.

``become`` runners are children of the host's runner and notice its end the
same way, so one lost controller ends the whole tree on the target.

A silent network (no close, no reset) is noticed by :func:`watch`: the
controller sends a one-way heartbeat to the :data:`HEARTBEAT` handle every
few seconds (:mod:`ioc.transport.keepalive`); a runner that hears none for
the bound the batch names shuts its broker down, which ends everything as
above.
"""
import logging
import os
import signal
import subprocess
import threading
import time

#: Seconds between SIGTERM and SIGKILL for a task's process group.
GRACE = 0.5

#: The mitogen handle heartbeats arrive on (below mitogen's allocated range,
#: above its own fixed handles).
HEARTBEAT = 190

LOG = logging.getLogger(__name__)

_groups = set()
_lock = threading.Lock()
_installed = []
ABANDONED = threading.Event()
#: When the last heartbeat (or batch) arrived, and the silence allowed (0: none set).
_heard = [time.monotonic()]
_bound = [0.0]


class Abandoned(BaseException):
    """The controller is gone: the batch stops (not a task failure, never reported)."""


def install(econtext):
    """Once per runner process: end everything when ``econtext``'s broker shuts down."""
    with _lock:
        if _installed:
            return
        _installed.append(econtext)
    import mitogen.core
    mitogen.core.listen(econtext.broker, "shutdown", _end_everything)
    econtext.router.add_handler(_on_heartbeat, handle=HEARTBEAT,
                                policy=mitogen.core.has_parent_authority)


def _on_heartbeat(msg):
    _heard[0] = time.monotonic()


def watch(econtext, bound):
    """Shut the runner down after ``bound`` seconds without a heartbeat (0: never)."""
    _heard[0] = time.monotonic()
    with _lock:
        started = _bound[0] > 0
        _bound[0] = float(bound or 0)
    if started or not bound:
        return

    def run():
        while not ABANDONED.is_set():
            time.sleep(min(1.0, _bound[0] / 4))
            silence = time.monotonic() - _heard[0]
            if _bound[0] and silence > _bound[0]:
                LOG.warning("nothing from the controller for %.0f s: ending this runner",
                            silence)
                econtext.broker.shutdown()
                return

    threading.Thread(target=run, name="ioc-lifeline", daemon=True).start()


def popen(*args, **kwargs):
    """``subprocess.Popen`` in a session of its own, tracked until :func:`untrack`."""
    if ABANDONED.is_set():
        raise Abandoned()
    kwargs["start_new_session"] = True
    proc = subprocess.Popen(*args, **kwargs)
    track(proc.pid)
    return proc


def communicate(proc, data=None):
    """``proc.communicate(data)``, then forget its group; ``(stdout, stderr)``."""
    try:
        return proc.communicate(data)
    finally:
        untrack(proc.pid)


_files = set()


def remember_file(path):
    """A temporary file of the runner's own, removed if the controller goes."""
    with _lock:
        _files.add(path)


def forget_file(path):
    with _lock:
        _files.discard(path)


def track(pgid):
    with _lock:
        _groups.add(pgid)


def untrack(pgid):
    with _lock:
        _groups.discard(pgid)


def tracked():
    """The process groups tracked now (a copy)."""
    with _lock:
        return set(_groups)


def end_groups(groups):
    """SIGTERM, then SIGKILL after :data:`GRACE`, to ``groups`` (a task past its ``timeout``)."""
    groups = sorted(groups)
    if not groups:
        return
    _signal_all(groups, signal.SIGTERM)
    time.sleep(GRACE)
    _signal_all(groups, signal.SIGKILL)


def guard(emit):
    """``emit`` that raises :class:`Abandoned` once the controller is gone."""
    def guarded(event):
        if ABANDONED.is_set():
            raise Abandoned()
        emit(event)
    return guarded


def _signal_all(groups, signum):
    for pgid in groups:
        try:
            os.killpg(pgid, signum)
        except OSError:  # already gone, or never more than a zombie leader
            pass


def _end_everything():
    ABANDONED.set()
    with _lock:
        groups = sorted(_groups)
        files = sorted(_files)
    for path in files:
        try:
            os.unlink(path)
        except OSError:
            pass
    if not groups:
        return
    _signal_all(groups, signal.SIGTERM)
    time.sleep(GRACE)
    _signal_all(groups, signal.SIGKILL)
