"""``package``: the generic package module, which runs the host's package manager module.

Like Ansible's ``package`` action with ``use: auto``: on a host with apt-get
the task runs as :mod:`apt` with every argument but ``use`` (so apt options
such as ``update_cache`` work, as in Ansible). ioc has no other package
manager module; on a host with another one the task fails, naming it.
"""
import os

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common, apt

OPTIONS = apt.OPTIONS | frozenset({"use"})

SUPPORTS_CHECK_MODE = True

#: Its presence makes apt the package manager (Ansible's pkg_mgr fact checks it).
_APT_GET = "/usr/bin/apt-get"
#: Other managers Ansible's pkg_mgr fact knows, by the binary that reveals them.
_OTHER_MANAGERS = (
    ("dnf5", "/usr/bin/dnf5"), ("dnf", "/usr/bin/dnf"), ("yum", "/usr/bin/yum"),
    ("zypper", "/usr/bin/zypper"), ("apk", "/sbin/apk"), ("pacman", "/usr/bin/pacman"),
    ("portage", "/usr/bin/emerge"), ("pkgng", "/usr/local/sbin/pkg"),
    ("openbsd_pkg", "/usr/sbin/pkg_add"), ("xbps", "/usr/bin/xbps-install"),
    ("swupd", "/usr/bin/swupd"), ("urpmi", "/usr/sbin/urpmi"), ("homebrew", "/usr/local/bin/brew"),
)


def detect():
    """``(manager, path)`` for this host: ``('apt', ...)``, another, or ``(None, None)``."""
    if os.path.exists(_APT_GET):
        return "apt", _APT_GET
    for name, path in _OTHER_MANAGERS:
        if os.path.exists(path):
            return name, path
    return None, None


@_common.module_entry
def run(args, ctx):
    """Run the host's package manager module with the task's arguments."""
    _common.check_unsupported(args, OPTIONS, "package")
    use = (_common.opt_str(args, "use", "auto") or "auto").lower()
    args.pop("use", None)
    if use == "auto":
        use, path = detect()
        if use is None:
            raise ModuleError("Could not detect which package manager to use. Try gathering "
                              "facts or setting the \"use\" option.")
        if use != "apt":
            raise ModuleError("The package module in ioc can only use apt, but this host's "
                              "package manager is %s (%s)." % (use, path))
    if use != "apt":
        raise ModuleError("The package module in ioc can only use apt, not '%s'." % use)
    args["_ioc_module"] = "package"
    return apt.run(args, ctx)
