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

``become`` runners are children of the host's runner and notice its end the
same way, so one lost controller ends the whole tree on the target.
"""
import os
import signal
import subprocess
import threading
import time

#: Seconds between SIGTERM and SIGKILL for a task's process group.
GRACE = 0.5

_groups = set()
_lock = threading.Lock()
_installed = []
ABANDONED = threading.Event()


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


def track(pgid):
    with _lock:
        _groups.add(pgid)


def untrack(pgid):
    with _lock:
        _groups.discard(pgid)


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
    if not groups:
        return
    _signal_all(groups, signal.SIGTERM)
    time.sleep(GRACE)
    _signal_all(groups, signal.SIGKILL)
