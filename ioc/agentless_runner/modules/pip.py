"""``pip``: install or remove Python packages, optionally in a virtualenv.

Follows ``ansible.builtin.pip``: ``name`` (list; version specifiers allowed)
or ``requirements``, ``version``, ``state`` (present, absent, latest,
forcereinstall), ``virtualenv`` (created when it has no ``bin/activate``),
``virtualenv_command``, ``virtualenv_site_packages``, ``virtualenv_python``,
``executable``, ``extra_args``, ``editable``, ``chdir``,
``break_system_packages``. As in Ansible, a real run lets pip decide and
reports a change when pip says "Successfully installed/uninstalled" (or the
``pip list`` output changed, for requirements files and VCS URLs); check
mode compares ``pip list --format=freeze`` with the requested specifiers.
Results: ``cmd``, ``name``, ``version``, ``state``, ``requirements``,
``virtualenv``, ``stdout``, ``stderr``, ``changed``.

Deviations: version specifiers are evaluated by a small PEP 440 subset here
(the target has no ``packaging``); ``virtualenv_command`` defaults to
``virtualenv`` as in Ansible, but when that command is not installed the
venv is created with ``<python> -m venv``. ``umask`` is not supported.
"""
import os
import re
import shlex
import sys
import tempfile

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({
    "name", "version", "requirements", "virtualenv", "virtualenv_site_packages",
    "virtualenv_command", "virtualenv_python", "state", "extra_args", "editable", "chdir",
    "executable", "break_system_packages",
})

SUPPORTS_CHECK_MODE = True

_STATE_MAP = {
    "present": ["install"],
    "absent": ["uninstall", "-y"],
    "latest": ["install", "-U"],
    "forcereinstall": ["install", "-U", "--force-reinstall"],
}
_OPS = ("===", "~=", "==", "!=", "<=", ">=", "<", ">")
_VCS_RE = re.compile(r"(svn|git|hg|bzr)\+")
_NAME_RE = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(\[[^\]]*\])?\s*(.*)$")
_CANON_RE = re.compile(r"[-_.]+")
_LANG_C = {"LANG": "C", "LC_ALL": "C", "LC_MESSAGES": "C"}


# --------------------------------------------------------------------------
# Versions and requirements (a PEP 440 subset: no packaging on the target)
# --------------------------------------------------------------------------

_VERSION_RE = re.compile(
    r"^v?(?:(\d+)!)?(\d+(?:\.\d+)*)"
    r"(?:[-_.]?(a|b|c|rc|alpha|beta|pre|preview)[-_.]?(\d*))?"
    r"(?:-(\d+)|[-_.]?(post|rev|r)[-_.]?(\d*))?"
    r"(?:[-_.]?(dev)[-_.]?(\d*))?"
    r"(?:\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?$", re.I)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


def _release(text):
    parts = [int(x) for x in text.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def version_key(text):
    """A sort key for a PEP 440 version (local labels ignored), or None if invalid."""
    m = _VERSION_RE.match(text.strip())
    if m is None:
        return None
    epoch, release, pre_l, pre_n, post_dash, post_l, post_n, dev_l, dev_n = m.groups()
    post = int(post_dash) if post_dash else (int(post_n or 0) if post_l else None)
    dev = int(dev_n or 0) if dev_l else None
    if pre_l:
        pre = (0, _PRE_RANK[pre_l.lower()], int(pre_n or 0))
    elif post is None and dev is not None:
        pre = (-1,)
    else:
        pre = (1,)
    return (int(epoch or 0), _release(release), pre,
            (-1,) if post is None else (0, post), (1,) if dev is None else (0, dev))


def _prefix_match(version, prefix):
    m_v, m_p = _VERSION_RE.match(version.strip()), _VERSION_RE.match(prefix + ".0")
    if m_v is None or m_p is None:
        return False
    want = [int(x) for x in prefix.split(".")]
    have = [int(x) for x in m_v.group(2).split(".")] + [0] * len(want)
    return int(m_v.group(1) or 0) == int(m_p.group(1) or 0) and have[:len(want)] == want


def specifier_contains(op, spec, version):
    """Whether ``version`` satisfies one clause ``op spec`` (pre-releases allowed)."""
    if op == "===":
        return version.strip() == spec
    if op in ("==", "!=") and spec.endswith(".*"):
        return _prefix_match(version, spec[:-2]) == (op == "==")
    have, want = version_key(version), version_key(spec)
    if have is None or want is None:
        return False
    if op == "~=":
        prefix = ".".join(spec.split("+")[0].split(".")[:-1])
        return have >= want and _prefix_match(version, prefix)
    return {"==": have == want, "!=": have != want, "<=": have <= want, ">=": have >= want,
            "<": have < want, ">": have > want}[op]


def canonicalize_name(name):
    return _CANON_RE.sub("-", name).lower()


class Package(object):
    """A requirement string as Ansible's Package sees it: name, specifiers, or opaque."""

    def __init__(self, text, version=None):
        if version:
            version = version.lstrip()
            text = ("==" if version[0].isdigit() else " ").join((text, version))
        self.text = text
        self.name = text
        self.clauses = None
        m = _NAME_RE.match(text.split(";")[0])
        if m is None or "://" in text or m.group(3).startswith("@"):
            return
        clauses = []
        for part in (p.strip() for p in m.group(3).split(",") if p.strip()):
            op = next((o for o in _OPS if part.startswith(o)), None)
            if op is None:
                return
            clauses.append((op, part[len(op):].strip()))
        self.name = canonicalize_name(m.group(1))
        self.clauses = clauses

    @property
    def has_version_specifier(self):
        return bool(self.clauses)

    def is_satisfied_by(self, version):
        if self.clauses is None:
            return False
        return all(specifier_contains(op, spec, version) for op, spec in self.clauses)

    def __str__(self):
        return self.text


def recover_package_names(names):
    """Ansible's _recover_package_name: rejoin 'pkg>1,<2' lists split on commas."""
    parts = []
    for line in names:
        parts.extend(line.split(","))
    packages, current, in_brackets = [], [], False
    for part in parts:
        is_name = not part.lstrip().startswith(_OPS)
        if is_name and not in_brackets:
            if current:
                packages.append(",".join(current))
            current = []
        if "[" in part:
            in_brackets = True
        if in_brackets and "]" in part:
            in_brackets = False
        current.append(part)
    packages.append(",".join(current))
    return packages


def is_present(package, freeze_lines):
    for line in freeze_lines:
        if "==" not in line:
            continue
        name, version = line.split("==", 1)
        if canonicalize_name(name) == package.name and package.is_satisfied_by(version):
            return True
    return False


# --------------------------------------------------------------------------
# Running pip
# --------------------------------------------------------------------------

class _Pip(object):
    """How to run pip for this task: the command, its cwd and environment."""

    def __init__(self, ctx, venv, executable, chdir, break_system):
        self.ctx = ctx
        self.cwd = chdir
        self.env = {}
        if venv:
            self.env["PATH"] = os.path.join(venv, "bin") + os.pathsep + \
                ctx.child_env().get("PATH", os.defpath)
        if break_system:
            self.env["PIP_BREAK_SYSTEM_PACKAGES"] = "1"
        self.cmd = self._find(venv, executable)

    def _find(self, venv, executable):
        names = ("pip3",)
        if executable is not None:
            if os.path.isabs(executable):
                return [executable]
            names = (executable,)
        elif venv is None and _have_pip_module():
            return [sys.executable, "-m", "pip.__main__"]
        if venv is None:
            for name in names:
                path = _common.get_bin_path(name, self.ctx.child_env())
                if path:
                    return [path]
            raise ModuleError("Unable to find any of %s to use.  pip needs to be installed."
                              % ", ".join(names))
        names = (names[0], "pip")
        for name in names:
            candidate = os.path.join(venv, "bin", name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return [candidate]
        raise ModuleError("Unable to find pip in the virtualenv, %s, under any of these names: "
                          "%s. Make sure pip is present in the virtualenv."
                          % (venv, ", ".join(names)))

    def run(self, argv, env=None):
        full = dict(self.env)
        full.update(env or {})
        return _common.run_text(self.ctx, argv, cwd=self.cwd, env=full)

    def freeze(self):
        """``(cmd string, stdout, stderr)`` of ``pip list --format=freeze`` (or ``pip freeze``)."""
        cmd = self.cmd + ["list", "--format=freeze"]
        rc, out, err = self.run(cmd, env=_LANG_C)
        if rc != 0:
            cmd = self.cmd + ["freeze"]
            rc, out, err = self.run(cmd)
            if rc != 0:
                _fail(cmd, out, err)
        return " ".join(cmd), out, err


def _have_pip_module():
    import importlib.util
    try:
        return importlib.util.find_spec("pip") is not None
    except (ImportError, ValueError):
        return False


def _fail(cmd, out, err):
    msg = ""
    if out:
        msg += "stdout: %s" % out
    if err:
        msg += "\n:stderr: %s" % err
    raise ModuleError(msg, cmd=cmd)


def _is_venv_command(argv):
    if os.path.basename(argv[0]) == "pyvenv":
        return True
    for i, word in enumerate(argv[1:], 1):
        if word == "-m" and i + 1 < len(argv):
            return argv[i + 1] == "venv"
        if word.startswith("-m") and len(word) > 2:
            return word[2:] == "venv"
    return False


def _venv_command(args, ctx):
    """The virtualenv command line (without the target directory)."""
    given = _common.opt_str(args, "virtualenv_command")
    cmd = shlex.split(given or "virtualenv")
    if os.path.basename(cmd[0]) == cmd[0]:
        path = _common.get_bin_path(cmd[0], ctx.child_env())
        if path is None and given is None:
            cmd = [sys.executable, "-m", "venv"]
        elif path is None:
            raise ModuleError("Failed to find required executable \"%s\"" % cmd[0])
        else:
            cmd[0] = path
    return cmd


def _setup_virtualenv(args, ctx, venv, chdir):
    cmd = _venv_command(args, ctx)
    python = _common.opt_str(args, "virtualenv_python")
    if _common.opt_bool(args, "virtualenv_site_packages", False):
        cmd.append("--system-site-packages")
    elif not _is_venv_command(cmd):
        rc, out, err = _common.run_text(ctx, cmd[:1] + ["--help"])
        if rc != 0:
            raise ModuleError("Could not get output from %s --help: %s" % (cmd[0], out + err))
        if "--no-site-packages" in out.split():
            cmd.append("--no-site-packages")
    if not _is_venv_command(cmd):
        cmd.append("-p%s" % (python or sys.executable))
    elif python:
        raise ModuleError("virtualenv_python should not be used when using the venv module or "
                          "pyvenv as virtualenv_command")
    cmd.append(venv)
    rc, out, err = _common.run_text(ctx, cmd, cwd=chdir)
    if rc != 0:
        _fail(cmd, out, err)
    return out, err


# --------------------------------------------------------------------------
# The module
# --------------------------------------------------------------------------

def _packages(names, version):
    packages = [Package(p) for p in recover_package_names(names)]
    if version is not None:
        if len(packages) > 1:
            raise ModuleError("'version' argument is ambiguous when installing multiple package "
                              "distributions. Please specify version restrictions next to each "
                              "package in 'name' argument.")
        if packages[0].has_version_specifier:
            raise ModuleError("The 'version' argument conflicts with any version specifier "
                              "provided along with a package name. Please keep the version "
                              "specifier, but remove the 'version' argument.")
        packages[0] = Package(str(packages[0]), version)
    return packages


def _check_mode(pip, state, names, packages, extra_args, requirements):
    if extra_args or requirements or state == "latest" or not names:
        return {"changed": True}
    cmd, out, err = pip.freeze()
    lines = [p for p in out.split("\n") if p and not p.startswith("You are using")
             and not p.startswith("You should consider")]
    changed = False
    for package in packages:
        present = is_present(package, lines)
        if (state == "present" and not present) or (state == "absent" and present):
            changed = True
            break
    return {"changed": changed, "cmd": cmd, "stdout": out, "stderr": err}


def _extra_args(args):
    extra = _common.opt_str(args, "extra_args")
    if _common.opt_bool(args, "editable", False):
        words = extra.split(" ") if extra else []
        if "-e" not in words:
            words.append("-e")
            extra = " ".join(words)
    return extra


@_common.module_entry
def run(args, ctx):
    """Install or remove Python packages (see the module docstring)."""
    _common.check_unsupported(args, OPTIONS, "pip")
    state = _common.check_choice(_common.opt_str(args, "state", "present"), "state",
                                 tuple(_STATE_MAP))
    names = _common.opt_list(args, "name")
    version = _common.opt_str(args, "version")
    requirements = _common.opt_str(args, "requirements")
    executable = _common.opt_path(args.get("executable"))
    venv = _common.opt_path(args.get("virtualenv"))
    chdir = _common.opt_path(args.get("chdir"))
    if names is None and requirements is None:
        raise ModuleError("one of the following is required: name, requirements")
    if names is not None and requirements is not None:
        raise ModuleError("parameters are mutually exclusive: name|requirements")
    if executable is not None and venv is not None:
        raise ModuleError("parameters are mutually exclusive: executable|virtualenv")
    if state == "latest" and version is not None:
        raise ModuleError("version is incompatible with state=latest")
    if venv and chdir:
        venv = os.path.join(chdir, venv)
    chdir = chdir or tempfile.gettempdir()
    out = err = ""
    venv_created = False
    if venv and not os.path.exists(os.path.join(venv, "bin", "activate")):
        if ctx.check_mode:
            return {"changed": True}
        venv_created = True
        out, err = _setup_virtualenv(args, ctx, venv, chdir)
    pip = _Pip(ctx, venv, executable, chdir, _common.opt_bool(args, "break_system_packages",
                                                               False))
    packages = _packages(names, version) if names else []
    extra = _extra_args(args)
    cmd = pip.cmd + _STATE_MAP[state] + (shlex.split(extra) if extra else [])
    if names:
        cmd += [str(p) for p in packages]
    elif requirements:
        cmd += ["-r", requirements]
    else:
        return {"changed": False, "warnings": ["No valid name or requirements file found."]}
    if ctx.check_mode:
        return _check_mode(pip, state, names, packages, extra, requirements)
    has_vcs = any(p and _VCS_RE.match(p) for p in names or [])
    before = pip.freeze()[1] if requirements or has_vcs else None
    rc, pip_out, pip_err = pip.run(cmd)
    out += pip_out
    err += pip_err
    not_installed = "not installed" in pip_out or "not installed" in pip_err
    if rc != 0 and not (rc == 1 and state == "absent" and not_installed):
        _fail(cmd, out, err)
    if state == "absent":
        changed = "Successfully uninstalled" in pip_out
    elif before is None:
        changed = "Successfully installed" in pip_out
    else:
        changed = before != pip.freeze()[1]
    return {"changed": changed or venv_created, "cmd": cmd, "name": names, "version": version,
            "state": state, "requirements": requirements, "virtualenv": venv,
            "stdout": out, "stderr": err}
