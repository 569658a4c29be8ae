"""How a process that starts mitogen contexts starts them: the controller,
an intermediary's relay (``mitogen_via``) and a runner starting ``become``
children all apply :func:`lighten` to their copy of ``mitogen.parent``.

Two changes, each for a fault mitogen 0.3 has:

* **No Python between fork and exec.** mitogen's ``popen`` always passes
  :class:`subprocess.Popen` a ``preexec_fn`` (to run a hook that is None
  unless something sets it). That makes Python fork the whole process (copy
  its page tables: ~3 ms at 100 MB on the controller, for every ssh) instead
  of vfork, and run its fork handlers in the child: on an intermediary the
  broker thread, starting a connection, took logging's lock, then the import
  lock, while the runner's main thread, running a batch, held the import
  lock and waited for logging's (seen: an intermediary hung with its broker
  in ``Popen._execute_child`` and its main thread in
  ``logging._acquireLock``). With no hook and no ``preexec_fn`` of the
  caller's, ``Popen`` is called without one: the same child, with no Python
  code and no fork handlers before exec.
* **A first stage that ends with its interpreter** (:class:`FirstStage`).
"""
import os  # noqa: F401 (os, select, sys, zlib: the names the first stage's body uses,
import select  # noqa: F401 defined where mitogen's stage 0 runs it)
import subprocess
import sys  # noqa: F401
import zlib  # noqa: F401

import mitogen.parent


def lighten():
    """Apply both changes to this process's ``mitogen.parent`` (once)."""
    if getattr(mitogen.parent, "_ioc_spawning", False):
        return
    popen = mitogen.parent.popen

    def popen_without_hook(**kwargs):
        if kwargs.get("preexec_fn") is None and mitogen.parent._preexec_hook is None:
            kwargs.pop("preexec_fn", None)
            return subprocess.Popen(**kwargs)
        return popen(**kwargs)

    mitogen.parent.popen = popen_without_hook
    mitogen.parent.Connection._first_stage = FirstStage.__dict__["_first_stage"]
    mitogen.parent._ioc_spawning = True


class FirstStage(object):
    """mitogen's first stage (``mitogen.parent.Connection._first_stage``,
    0.3.54), but for three statements in the forked child, which writes the
    core's source to the new interpreter through two pipes: it closes the
    read ends it inherited (``R``, ``r``) and takes SIGPIPE's default action.

    mitogen's child keeps both read ends open. When the interpreter it feeds
    is gone before it has read everything (the controller exited while
    hosts were still being connected: a play with nothing to run after the
    early connection, Ctrl-C), the child's write to a pipe only it can read
    blocks for ever: the process stays on the host, holding the stderr it
    was given (a caller reading the controller's stderr to its end waits
    for ever too). Without the read ends the write fails, and with SIGPIPE
    at its default (Python ignores it) the child ends silently instead of
    printing a ``BrokenPipeError`` traceback to that stderr (as its final
    write to a controller that went away did too).

    ``Connection.get_boot_command`` reads this source with ``inspect`` (on a
    target too: mitogen's importer serves it), skips its first two lines
    (the decorator and the ``def``) and drops every line with a ``#``: no
    comments in the body.
    """

    @staticmethod
    def _first_stage():
        R,W=os.pipe()
        r,w=os.pipe()
        if os.fork():
            os.dup2(0,100)
            os.dup2(R,0)
            os.dup2(r,101)
            os.close(R)
            os.close(r)
            os.close(W)
            os.close(w)
            if os.uname()[0]+os.uname()[2][:2]+sys.executable=='Darwin19/usr/bin/python':sys.executable+='2.7'
            if os.uname()[0]+os.uname()[2][:2]+sys.version[:3]=='Darwin202.7':os.environ['PYTHON_LAUNCHED_FROM_WRAPPER']='1'
            if os.uname()[0]+os.uname()[2][:2]+sys.version[:3]=='Darwin212.7':os.environ['PYTHON_LAUNCHED_FROM_WRAPPER']='1'
            os.environ['ARGV0']=sys.executable
            os.execl(sys.executable,sys.executable+'(mitogen:%s)'%sys.argv[2])
        os.close(R)
        os.close(r)
        import signal;signal.signal(signal.SIGPIPE,signal.SIG_DFL)
        os.write(1,'MITO000\n'.encode())
        n=int(sys.argv[3])
        C=''.encode()
        V='V'
        while n-len(C) and V:select.select([0],[],[]);V=os.read(0,n-len(C));C+=V
        C=zlib.decompress(C)
        f=os.fdopen(W,'wb',0)
        f.write(C)
        f.close()
        f=os.fdopen(w,'wb',0)
        f.write(C)
        f.close()
        os.write(1,'MITO001\n'.encode())
        os.close(2)
