"""What a module may know about the task it runs for."""
import os
import random
import tempfile
import threading
import time

#: The value that stands for ``omit`` (the ``omit`` variable; an argument
#: equal to it is left out).
OMIT = "__omit_place_holder__ioc"
#: ansible.module_utils.parsing.convert_bool's values.
BOOLEANS_TRUE = frozenset(("y", "yes", "on", "1", "true", "t", 1, 1.0, True))
BOOLEANS_FALSE = frozenset(("n", "no", "off", "0", "false", "f", 0, 0.0, False))


def as_boolean(value):
    """``value`` as Ansible's ``boolean()`` converts it; None when it is no boolean."""
    if isinstance(value, bool):
        return value
    key = value.lower().strip() if isinstance(value, str) else value
    try:
        if key in BOOLEANS_TRUE:
            return True
        if key in BOOLEANS_FALSE:
            return False
    except TypeError:  # unhashable
        pass
    return None


#: This thread's recorders, by slot (see :class:`Recorder`).
LOCAL = threading.local()


#: The ansible-core release whose result shapes the runner reproduces: 2.21
#: by default; the mitogen_batch strategy under ansible-core 2.19 asks for
#: "2.19" (a run option, set for the whole runner at each batch).
SHAPE = ["2.21"]


def legacy():
    """True when results take ansible-core 2.19's shapes."""
    return SHAPE[0] == "2.19"


class Recorder(object):
    """Active on this thread (as ``LOCAL.<slot>``) between enter and exit, the
    one it replaced active again after: what a task's templating and plugins
    record while it runs (warnings here; reads, conditionals, constants,
    markers in ``templating``)."""

    slot = None
    _outer = None

    def __enter__(self):
        self._outer = getattr(LOCAL, self.slot, None)
        setattr(LOCAL, self.slot, self)
        return self

    def __exit__(self, *exc):
        setattr(LOCAL, self.slot, self._outer)
        return False


class PluginWarnings(Recorder):
    """Records, while active on this thread, what Ansible's plugins say with
    ``display.warning`` as a task runs (a test or filter given what it
    warns of): ``found`` lists each text once, in order. ansible-core 2.19+
    captures them the same way (``DeferredWarningContext``) into the task
    result's ``warnings``."""

    slot = "warnings"

    def __init__(self):
        self.found = []


def warn(text):
    """A plugin's ``display.warning(text)``: into the task's result (see
    :class:`PluginWarnings`); nowhere when no task records."""
    recorder = getattr(LOCAL, "warnings", None)
    if recorder is not None and text not in recorder.found:
        recorder.found.append(text)


#: Ansible's ``remote_tmp`` default: where modules, wrappers and uploads are written.
REMOTE_TMP = "~/.ansible/tmp"


#: Where an unprivileged become user's directory goes (Ansible's ``system_tmpdirs``).
SYSTEM_TMPDIR = "/var/tmp"


def remote_tmp():
    """A fresh ``ansible-tmp-<time>-<pid>-<random>`` directory under ``remote_tmp``,
    named as Ansible's shell plugin names one (``mkdtemp``). A user that cannot
    make ``~/.ansible/tmp`` (a become runner of an unprivileged user without a
    writable home) gets it in ``/var/tmp``, the first of Ansible's
    ``system_tmpdirs``, where Ansible puts an unprivileged become's."""
    base = os.path.expanduser(REMOTE_TMP)
    try:
        os.makedirs(base, mode=0o700, exist_ok=True)
    except OSError:
        base = SYSTEM_TMPDIR
    while True:
        path = os.path.join(base, "ansible-tmp-%s-%d-%d" % (
            time.time(), os.getpid(), random.SystemRandom().randint(0, 2 ** 48)))
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path


class ModuleError(Exception):
    """Raised by a module to fail its task with ``msg``; extra keys go in the result."""

    def __init__(self, msg, **result):
        Exception.__init__(self, msg)
        self.msg = msg
        self.result = result


class TaskError(Exception):
    """Raised by an action where Ansible's action plugin raises an ``AnsibleError``.

    The task fails with ``Task failed: <msg>`` as ``TaskExecutor`` words an
    exception (not "Action failed: ..." as for a failed result), and
    ``changed_when``/``failed_when``/``until`` do not see it.
    """

    def __init__(self, msg, expression=None, help_text=None, option=None, origin=None,
                 value_origin=None):
        Exception.__init__(self, msg)
        self.msg = msg
        #: ``[path, line or None]`` of a controller file the error is about (a
        #: template file's rendering error): where Ansible's error says it is.
        self.origin = origin
        #: The argument the error is about (the controller names where it was written).
        self.expression = expression
        #: The name of the task argument whose value the error is about, when
        #: that value need not be a string (include_vars' ``ignore_files: 123``):
        #: the controller names where the value was written.
        self.option = option
        #: What Ansible's error says to do about it (shown after its origin).
        self.help_text = help_text
        #: ``path:line:col`` of the value the error is about when that is not
        #: the argument as written (an untrusted text a template gave).
        self.value_origin = value_origin


class ModuleContext(object):
    """Per-task facts a module may use.

    ``check_mode`` and ``diff_mode`` are the task's effective flags; a module
    that supports check mode must change nothing when ``check_mode`` is true
    and report what it *would* have done. ``environment`` is the task's
    templated ``environment:`` (added to the process environment of any
    command the module runs). ``tmpdir`` is a private directory on the target
    that lives as long as the runner.
    """

    def __init__(self, check_mode=False, diff_mode=False, environment=None,
                 tmpdir=None, no_log=False, task_vars=None, templar=None, files=None,
                 origin_of=None):
        self.check_mode = bool(check_mode)
        self.diff_mode = bool(diff_mode)
        self.environment = dict(environment or {})
        self.tmpdir = tmpdir or tempfile.gettempdir()
        self.no_log = bool(no_log)
        #: Read-only view of the host's variables (for ``debug: var=``).
        self.task_vars = task_vars if task_vars is not None else {}
        #: The task's Templar, for modules that template on their own
        #: (``debug: var=``); None in unit tests that do not need it.
        self.templar = templar
        #: Controller files shipped for this task, keyed by the templated
        #: ``src`` the task names (see :meth:`controller_file`).
        self.files = files if files is not None else {}
        #: ``origin_of(text)``: ``path:line:col`` where the task wrote the
        #: argument (or list item) ``text``, or None (assert's ``that``: where
        #: a condition that gives no boolean was written).
        self.origin_of = origin_of or (lambda text: None)

    def controller_file(self, src):
        """The controller file (or directory) a task's ``src`` names.

        ``copy src=``, ``template``, ``script`` and ``unarchive`` read files on
        the *controller* (L7.6); the controller resolves ``src`` with Ansible's
        search path (role ``files/``/``templates/``, the playbook's, then the
        path as given), ships the content with the batch, and it arrives here
        as one of::

            {"kind": "file", "path": "/abs/on/controller", "mode": 0o644,
             "content": b"..."}
            {"kind": "dir", "path": "/abs/dir", "mode": 0o755,
             "entries": [{"rel": "sub/a.txt", "mode": 0o644, "content": b"..."},
                         {"rel": "sub", "mode": 0o755, "dir": True}, ...]}

        Raises :class:`ModuleError` when nothing was shipped for ``src``: the
        name was not known before the batch started, or the file is missing
        on the controller (the message says which).
        """
        entry = self.files.get(src)
        if entry is None:
            raise ModuleError("Could not find or access '%s' on the Ansible Controller." % src)
        if entry.get("kind") == "missing":
            msg = entry.get("msg") or "Could not find or access '%s' on the Ansible Controller." % src
            if entry.get("raised"):  # the action plugin raises it: "Task failed: <msg>"
                raise ModuleError(msg, _ioc_raised=True)
            raise ModuleError(msg)
        if entry.get("kind") == "error":  # e.g. a vaulted file no password decrypts
            raise TaskError(entry["msg"])
        return entry

    def child_env(self):
        """The environment a command started by a module should get."""
        env = dict(os.environ)
        env.update((str(k), str(v)) for k, v in self.environment.items())
        return env
