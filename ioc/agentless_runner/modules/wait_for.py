"""``wait_for``: wait for a port, a file or a string in either, or just for time to pass.

Follows ``ansible.builtin.wait_for``: ``host``/``port`` or ``path``, ``state``
(started/present, stopped/absent), ``search_regex``, ``timeout``, ``delay``,
``sleep``, ``connect_timeout``, ``msg``. Results: ``state``, ``port``,
``path``, ``search_regex``, ``match_groups``, ``match_groupdict``,
``elapsed`` (whole seconds); on timeout the task fails with Ansible's
messages ("Timeout when waiting for 127.0.0.1:8080") or ``msg``.

Refused: ``state: drained``, ``exclude_hosts`` and ``active_connection_states``
(Ansible reads /proc/net/tcp* or psutil for those). Like Ansible, the module
does not support check mode (the executor skips it).
"""
import errno
import math
import os
import re
import select
import socket
import time

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({
    "host", "port", "path", "state", "timeout", "delay", "sleep", "search_regex",
    "connect_timeout", "msg", "exclude_hosts", "active_connection_states",
})

SUPPORTS_CHECK_MODE = False

_STATES = ("absent", "drained", "present", "started", "stopped")


class _Spec(object):
    def __init__(self, args):
        self.host = _common.opt_str(args, "host", "127.0.0.1")
        self.timeout = _common.opt_int(args, "timeout", 300)
        self.connect_timeout = _common.opt_int(args, "connect_timeout", 5)
        self.delay = _common.opt_int(args, "delay", 0)
        self.sleep = _common.opt_int(args, "sleep", 1)
        self.port = _common.opt_int(args, "port")
        self.path = _common.opt_path(args.get("path"))
        self.state = _common.check_choice(_common.opt_str(args, "state", "started"), "state",
                                          _STATES)
        self.msg = _common.opt_str(args, "msg")
        self.search_regex = _common.opt_str(args, "search_regex")
        self.regex = None
        if self.search_regex is not None:
            try:
                self.regex = re.compile(self.search_regex.encode("utf-8", "surrogateescape"),
                                        re.MULTILINE)
            except re.error as e:
                raise ModuleError("Invalid regular expression: %s" % e)
        if self.port and self.path:
            raise ModuleError("port and path parameter can not both be passed to wait_for",
                              elapsed=0)
        if self.path and self.state in ("stopped", "drained"):
            raise ModuleError("state=%s should only be used for checking a port in the "
                              "wait_for module" % self.state, elapsed=0)
        if args.get("exclude_hosts") is not None and self.state != "drained":
            raise ModuleError("exclude_hosts should only be with state=drained", elapsed=0)
        if self.state == "drained" or args.get("active_connection_states") is not None:
            raise ModuleError("ioc's wait_for does not support state=drained "
                              "(nor exclude_hosts/active_connection_states)", elapsed=0)


class _Clock(object):
    """Monotonic deadline; ``elapsed`` in whole seconds like Ansible's timedelta.seconds."""

    def __init__(self, timeout):
        self.start = time.monotonic()
        self.end = self.start + timeout

    def running(self):
        return time.monotonic() < self.end

    def left(self):
        return max(0.0, self.end - time.monotonic())

    def elapsed(self):
        return int(time.monotonic() - self.start)


def _close(sock):
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # the server already closed its end
    sock.close()


def _port_open(spec, clock):
    try:
        sock = socket.create_connection(
            (spec.host, spec.port), min(spec.connect_timeout, math.ceil(clock.left())))
    except (OSError, ValueError):
        return False
    if spec.regex is None:
        _close(sock)
        return True
    data = b""
    matched = False
    try:
        while clock.running():
            if not select.select([sock], [], [], clock.left())[0]:
                continue
            chunk = sock.recv(1024)
            if not chunk:
                break
            data += chunk
            if spec.regex.search(data):
                matched = True
                break
    finally:
        _close(sock)
    return matched


def _port_closed(spec):
    try:
        sock = socket.create_connection((spec.host, spec.port), spec.connect_timeout)
    except (OSError, ValueError):
        return True
    _close(sock)
    return False


def _path_ready(spec, clock, found):
    """True once the file exists (and matches); fills ``found`` with the match's groups."""
    try:
        os.stat(spec.path)
    except OSError as e:
        if e.errno != errno.ENOENT:
            raise ModuleError(spec.msg or "Failed to stat %s, %s" % (spec.path, e.strerror),
                              elapsed=clock.elapsed())
        return False
    if spec.regex is None:
        return True
    try:
        with open(spec.path, "rb") as f:
            match = spec.regex.search(f.read())
    except OSError:
        return False
    if match is None:
        return False
    found["groups"] = [_text(g) for g in match.groups()]
    found["groupdict"] = dict((k, _text(v)) for k, v in match.groupdict().items())
    return True


def _text(value):
    return None if value is None else value.decode("utf-8", "surrogateescape")


def _wait_gone(spec, clock):
    while clock.running():
        if spec.path and not os.path.exists(spec.path):
            return
        if spec.port and _port_closed(spec):
            return
        time.sleep(spec.sleep)
    if spec.port:
        raise ModuleError(spec.msg or "Timeout when waiting for %s:%s to stop."
                          % (spec.host, spec.port), elapsed=clock.elapsed())
    raise ModuleError(spec.msg or "Timeout when waiting for %s to be absent." % spec.path,
                      elapsed=clock.elapsed())


def _wait_there(spec, clock, found):
    while clock.running():
        if spec.path and _path_ready(spec, clock, found):
            return
        if spec.port and _port_open(spec, clock):
            return
        time.sleep(spec.sleep)
    if spec.port:
        what = "%s:%s" % (spec.host, spec.port)
    else:
        what = spec.path if spec.search_regex else "file %s" % spec.path
    if spec.search_regex:
        default = "Timeout when waiting for search string %s in %s" % (spec.search_regex, what)
    else:
        default = "Timeout when waiting for %s" % what
    raise ModuleError(spec.msg or default, elapsed=clock.elapsed())


@_common.module_entry
def run(args, ctx):
    """Wait for the condition ``args`` describe (see the module docstring)."""
    _common.check_unsupported(args, OPTIONS, "wait_for")
    spec = _Spec(args)
    clock = _Clock(spec.timeout)
    if spec.delay:
        time.sleep(spec.delay)
    found = {"groups": [], "groupdict": {}}
    if not spec.port and not spec.path:
        time.sleep(spec.timeout)
    elif spec.state in ("absent", "stopped"):
        _wait_gone(spec, clock)
    else:
        _wait_there(spec, clock, found)
    return {"changed": False, "state": spec.state, "port": spec.port,
            "search_regex": spec.search_regex, "match_groups": found["groups"],
            "match_groupdict": found["groupdict"], "path": spec.path,
            "elapsed": clock.elapsed()}
