"""What a module may know about the task it runs for."""
import os
import random
import re
import shutil
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


#: ``error_as_warning``'s words between a warning and the error that caused it
#: (``_errors.MSG_REASON_DIRECT_CAUSE``).
CAUSED_BY = "<<< caused by >>>"


def concat_message(left, right):
    """``_text_utils.concat_message``: how Ansible joins a message and its cause."""
    return "%s: %s" % (left.rstrip(". "), right)


def brief_message(messages):
    """``_event_utils.deduplicate_message_parts``: a warning or error and the
    messages of its causes (outermost first) as one line, the way a registered
    result holds it."""
    parts = list(reversed(messages))
    message = parts.pop(0)
    for part in parts:
        message = part if part.endswith(message) else concat_message(part, message)
    return message


class ModuleDirectory(object):
    """Where ``AnsibleModule`` runs a module, for ioc's own modules.

    ``AnsibleModule._set_cwd`` keeps the directory the module started in
    (the login directory, or the play's for a local connection: ``start``)
    when its identity can read it; otherwise (a become user that cannot) it
    moves to its ``tmpdir``, a fresh ``ansible-moduletmp-<time>-`` directory
    under ``remote_tmp`` that it makes on first use (warning that it did, or,
    when it cannot, that it falls back to the system's temporary directory),
    then ``$HOME``, then the system's temporary directory, and removes its
    ``tmpdir`` when the module exits (:meth:`remove`). ``path`` is that
    directory (None: none of those could be read), ``warnings`` what the
    module warned, as a result holds them, and ``causes`` the event of each
    warning raised from an error (``{"text", "event"}``: the module's encoded
    ``Event`` with its chain of causes, which the console shows in full).
    """

    def __init__(self, env, start=None, remote_tmp=REMOTE_TMP):
        self.env = env
        self.remote_tmp = remote_tmp
        self.path = None
        self.tmpdir = None
        self.warnings = []
        self.causes = []
        if start is None:
            try:
                start = os.getcwd()
            except OSError:  # (the module would start in the login directory)
                start = os.path.expanduser("~")
        if os.access(start, os.F_OK | os.R_OK):
            self.path = start
            return
        for candidate in (self._tmpdir, lambda: self._expand("$HOME"), tempfile.gettempdir):
            try:
                path = candidate()
            except Exception:  # (as _set_cwd: try the next)
                continue
            if os.access(path, os.F_OK | os.R_OK):
                self.path = path
                return

    def _expand(self, path):
        """``os.path.expanduser(os.path.expandvars(path))`` in the module's environment."""
        path = re.sub(r"\$(\w+)|\$\{(\w+)\}",
                      lambda m: self.env.get(m.group(1) or m.group(2), m.group(0)), path)
        if path.startswith("~") and (path == "~" or path.startswith("~/")) and self.env.get("HOME"):
            return self.env["HOME"] + path[1:]
        return os.path.expanduser(path)

    def _tmpdir(self):
        basedir = self._expand(self.remote_tmp)
        if not os.path.exists(basedir):
            try:
                os.makedirs(basedir, mode=0o700)
            except OSError as exc:
                head = ("Unable to use %r as temporary directory, falling back to system "
                        "default." % basedir)
                self.warnings.append(brief_message([head, str(exc)]))
                # (the event AnsibleModule.error_as_warning encodes: the error
                # was raised while _set_cwd handled its own empty Exception)
                self.causes.append({"text": self.warnings[-1], "event": {
                    "msg": head, "chain": {
                        "msg_reason": CAUSED_BY, "follow": True,
                        "traceback_reason": "The above exception was the direct cause of "
                                            "the following warning:",
                        "event": {"msg": str(exc), "chain": {
                            "msg_reason": "<<< while handling >>>", "follow": False,
                            "traceback_reason": "During handling of the above exception, "
                                                "another exception occurred:",
                            "event": {"msg": ""}}}}}})
                basedir = None
            else:
                self.warnings.append(
                    "Module remote_tmp %s did not exist and was created with a mode of 0700, "
                    "this may cause issues when running as another user. To avoid this, "
                    "create the remote_tmp dir with the correct permissions manually" % basedir)
        self.tmpdir = tempfile.mkdtemp(prefix="ansible-moduletmp-%s-" % time.time(),
                                       dir=basedir)
        return self.tmpdir

    def remove(self):
        """The module has exited: its ``tmpdir`` goes (the ``atexit`` of AnsibleModule)."""
        if self.tmpdir is not None:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None

    def add_warnings(self, result):
        """``result`` with the warnings of the module's start before its own."""
        if self.warnings:
            result["warnings"] = self.warnings + list(result.get("warnings") or ())
        if self.causes:
            result["_ioc_warning_causes"] = self.causes + list(
                result.get("_ioc_warning_causes") or ())
        return result


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
                 start_dir=None, origin_of=None):
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
        #: Where a local connection starts the task's commands and modules:
        #: the play's directory (None: the runner's own, the login directory).
        self.start_dir = start_dir
        #: Where the module runs (:class:`ModuleDirectory`), set while one
        #: of ioc's own modules that is an AnsibleModule in Ansible runs.
        self.cwd = None
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

    def start_cwd(self):
        """The ``cwd`` of a process the task starts where it starts: the
        play's directory for a local connection, when this identity may enter
        it (a become user that may not stays in the runner's), else None."""
        if self.start_dir and os.access(self.start_dir, os.X_OK):
            return self.start_dir
        return None

    def child_env(self):
        """The environment a command started by a module should get."""
        env = dict(os.environ)
        env.update((str(k), str(v)) for k, v in self.environment.items())
        return env
