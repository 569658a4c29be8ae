"""A warm interpreter on the target that forks one child per Ansible module run.

Ansible starts a new Python for every module and imports
``ansible.module_utils.basic`` in it: about 130 ms of a small target's CPU
per task, which a batch of a hundred tasks would pay a hundred times. The
runner instead starts, on first use, one helper interpreter (of the host's
``ansible_python_interpreter``, as the runner's own identity) that imports
Ansible's module runtime once from the first module's payload and then forks
a child per module run. Each child is a fresh process as far as the module
can tell: its own session, standard streams, environment and working
directory, and the module's own payload first on the import path; it runs
the module with Ansible's own loader (``_ansiballz._loader.run_module``),
doing what Ansible's AnsiballZ wrapper does around it.

Nothing stays on disk: the warm-up payload is deleted once imported, each
child deletes its own payload when the module exits (as the wrapper does).
The helper ends when the runner's end of its socket closes.

If the helper cannot start or dies, :func:`run` returns None and the caller
runs the module in a fresh interpreter instead, which gives the same result
more slowly.
"""
import json
import os
import selectors
import socket
import subprocess
import sys
import tempfile
import threading

from ioc.agentless_runner import lifeline

#: The helper's program: arguments are its socket's fd and the warm-up payload.
SERVER = r'''
import atexit, json, os, shutil, socket, sys, tempfile, traceback
sock = socket.socket(fileno=int(sys.argv[1]))
warm = sys.argv[2]
sys.path = [p for p in sys.path if p not in ("", ".")]
sys.path.insert(0, warm)
try:
    import ansible.module_utils.basic
    from ansible.module_utils._internal._ansiballz import _loader
finally:
    sys.path.remove(warm)
    shutil.rmtree(os.path.dirname(warm), ignore_errors=True)


def child(fds, req):
    os.setsid()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    sock.close()
    os.environ.clear()
    os.environ.update(req["env"])
    # The helper's directory is the runner's, where a fresh interpreter would
    # start; one the identity cannot enter is left as it is (AnsibleModule's
    # _set_cwd moves to its tmpdir, warning as it does under Ansible).
    if req.get("cwd"):
        try:
            os.chdir(req["cwd"])
        except OSError:
            pass
    atexit._clear()  # the helper's own (none of the module's)
    data = sys.stdin.buffer.read()
    tmp = req["tmp"]
    code = 1
    try:
        path = os.path.join(tmp, "ansible_%s_payload.zip" % req["name"])
        with open(path, "wb") as out:
            out.write(data)
        sys.path.insert(0, path)
        for name, mod in list(sys.modules.items()):
            if (name == "ansible" or name.startswith("ansible.")) and \
                    isinstance(getattr(mod, "__path__", None), list):
                mod.__path__.insert(0, os.path.join(path, *name.split(".")))
        _loader.run_module(json_params=req["params"].encode("utf-8"), profile=req["profile"],
                           module_fqn=req["fqn"], modlib_path=path, extensions={})
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        # what the interpreter's exit does for the module: AnsibleModule
        # registers the removal of its tmpdir with atexit
        atexit._run_exitfuncs()
        shutil.rmtree(tmp, ignore_errors=True)
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


while True:
    try:
        msg, fds, _flags, _addr = socket.recv_fds(sock, 1 << 20, 3)
    except OSError:
        break
    if not msg:
        break
    req = json.loads(msg.decode("utf-8"))
    # The payload's directory is made here and removed here once the child
    # ended, however it ended: a module killed (a task's timeout, the run
    # interrupted) runs no finally of its own. (In the module's TMPDIR, as
    # AnsiballZ's own, made by the module's process, would be.)
    env = req["env"]
    base = next((env[k] for k in ("TMPDIR", "TEMP", "TMP") if env.get(k)
                 and os.path.isdir(env[k])), None)
    req["tmp"] = os.path.realpath(tempfile.mkdtemp(prefix="ansible_%s_payload_" % req["name"],
                                                   dir=base))
    pid = os.fork()
    if pid == 0:
        try:
            child(fds, req)
        except BaseException:
            traceback.print_exc()  # (to the module's stderr: MODULE FAILURE shows it)
            sys.stderr.flush()
        finally:
            os._exit(1)
    for fd in fds:
        os.close(fd)
    sock.sendall(("%d\n" % pid).encode())  # its session: the runner ends it if orphaned
    _pid, status = os.waitpid(pid, 0)
    shutil.rmtree(req["tmp"], ignore_errors=True)
    sock.sendall(("%d\n" % os.waitstatus_to_exitcode(status)).encode())
'''


class ForkServer(object):
    """The runner's end of the helper (one per runner process)."""

    def __init__(self, warm_payload):
        self.lock = threading.Lock()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        tmp = tempfile.mkdtemp(prefix="ioc-warm-")
        warm = os.path.join(tmp, "payload.zip")
        with open(warm, "wb") as out:
            out.write(warm_payload)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", SERVER, str(theirs.fileno()), warm],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),), start_new_session=True, close_fds=True)
        finally:
            theirs.close()
        self.sock = ours
        self.replies = ours.makefile("rb")

    def alive(self):
        return self.proc.poll() is None

    def run(self, req, payload, env, cwd):
        """Run one module; ``(stdout, stderr, rc)``, or None when the helper is gone."""
        with self.lock:
            if not self.alive():
                return None
            return self._run(req, payload, env, cwd)

    def _run(self, req, payload, env, cwd):
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        message = json.dumps(dict(req, env=env, cwd=cwd)).encode("utf-8")
        try:
            socket.send_fds(self.sock, [message], [in_r, out_w, err_w])
        except OSError:
            for fd in (in_r, in_w, out_r, out_w, err_r, err_w):
                os.close(fd)
            return None
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        child = self.replies.readline()
        if not child:  # the helper died before it forked
            for fd in (in_w, out_r, err_r):
                os.close(fd)
            return None
        lifeline.track(int(child))
        try:
            out, err = _communicate(in_w, out_r, err_r, payload)
            line = self.replies.readline()
        finally:
            lifeline.untrack(int(child))
        if not line:
            return None
        return out, err, int(line)

    def close(self):
        self.sock.close()
        self.replies.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _communicate(in_w, out_r, err_r, data):
    """Write ``data`` to the child's stdin while reading its stdout and stderr."""
    chunks = {out_r: [], err_r: []}
    sel = selectors.DefaultSelector()
    os.set_blocking(in_w, False)
    sel.register(in_w, selectors.EVENT_WRITE)
    sel.register(out_r, selectors.EVENT_READ)
    sel.register(err_r, selectors.EVENT_READ)
    view = memoryview(data)
    while sel.get_map():
        for key, _ in sel.select():
            fd = key.fd
            if fd == in_w:
                try:
                    written = os.write(in_w, view[:65536])
                except BrokenPipeError:
                    written = len(view)
                view = view[written:]
                if not view:
                    sel.unregister(in_w)
                    os.close(in_w)
                continue
            block = os.read(fd, 65536)
            if block:
                chunks[fd].append(block)
            else:
                sel.unregister(fd)
                os.close(fd)
    sel.close()
    return b"".join(chunks[out_r]), b"".join(chunks[err_r])


_SERVER = [None]


def run(req, payload, env, cwd):
    """Run a module through the warm helper, starting it on first use.

    ``req`` has the module's ``name``, ``fqn``, ``profile`` and JSON
    ``params``; ``payload`` is its AnsiballZ zip. Returns ``(stdout, stderr,
    rc)``, or None when no helper can run it (the caller starts a fresh
    interpreter).
    """
    server = _SERVER[0]
    if server is False:
        return None
    if server is None:
        if os.environ.get("IOC_NO_FORKSERVER") or not hasattr(socket, "send_fds"):
            _SERVER[0] = False
            return None
        try:
            server = _SERVER[0] = ForkServer(payload)
        except OSError:
            _SERVER[0] = False
            return None
    result = server.run(req, payload, env, cwd)
    if result is None:  # it died (or never warmed up): fresh interpreters from now on
        _SERVER[0] = False
        server.close()
    return result
