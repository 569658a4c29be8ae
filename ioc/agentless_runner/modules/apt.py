"""``apt``: manage Debian packages with apt-get, dpkg-query and apt-cache.

Follows ``ansible.builtin.apt`` without python-apt (the runner is stdlib
only): a package's state comes from ``dpkg-query -W -f='${Status} ${Version}'``,
candidates and available versions from ``apt-cache policy``, Debian version
order from dpkg's algorithm reimplemented here. The install/remove decision
is Ansible's ``package_status``/``install``/``remove`` logic: ``name=1.2*``
(fnmatch) and ``name>=1.2`` specs, ``state`` present/absent/latest, and
``apt-get --simulate`` in check mode. ``update_cache``/``cache_valid_time``
compare the apt lists' mtime like Ansible and retry ``apt-get update`` with
backoff. Results: ``changed``, ``stdout``, ``stderr``, ``diff`` (apt-get's
plan in diff mode), ``cache_updated``, ``cache_update_time`` (the shapes
differ between install, remove and cache-only runs exactly as in Ansible).

Refused: ``state`` build-dep and fixed, ``upgrade``, ``autoclean``,
``policy_rc_d``, ``clean``, wildcard package names and ``*``. ``deb`` is
installed with ``apt-get install /path.deb``, which also resolves its
dependencies (Ansible computes them with python-apt, then runs dpkg -i).
"""
import datetime
import fnmatch
import os
import random
import re
import time

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({
    "name", "pkg", "package", "state", "update_cache", "update-cache", "update_cache_retries",
    "update_cache_retry_max_delay", "cache_valid_time", "purge", "deb", "default_release",
    "default-release", "install_recommends", "install-recommends", "force", "dpkg_options",
    "autoremove", "only_upgrade", "allow_unauthenticated", "allow-unauthenticated",
    "allow_downgrade", "allow-downgrade", "allow_downgrades", "allow-downgrades",
    "allow_change_held_packages", "lock_timeout", "fail_on_autoremove", "force_apt_get",
})

SUPPORTS_CHECK_MODE = True

DPKG_OPTIONS = "force-confdef,force-confold"
#: Read for the cache's age (tests patch them).
_APT_LISTS_PATH = "/var/lib/apt/lists"
_APT_UPDATE_SUCCESS_STAMP_PATH = "/var/lib/apt/periodic/update-success-stamp"
_APT_ENV = {"DEBIAN_FRONTEND": "noninteractive", "DEBIAN_PRIORITY": "critical",
            "LANG": "C", "LC_ALL": "C", "LC_MESSAGES": "C", "LC_CTYPE": "C", "LANGUAGE": "C"}
_AUTOREMOVE_CHANGED = "The following packages will be REMOVED"


# --------------------------------------------------------------------------
# Debian versions
# --------------------------------------------------------------------------

def _order(c):
    if c.isdigit():
        return 0
    if c.isalpha():
        return ord(c)
    if c == "~":
        return -1
    return ord(c) + 256 if c else 0


def _verrevcmp(a, b):
    """dpkg's verrevcmp for an upstream version or a revision."""
    i = j = 0
    while i < len(a) or j < len(b):
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac = _order(a[i] if i < len(a) else "")
            bc = _order(b[j] if j < len(b) else "")
            if ac != bc:
                return ac - bc
            i += 1
            j += 1
        while i < len(a) and a[i] == "0":
            i += 1
        while j < len(b) and b[j] == "0":
            j += 1
        first_diff = 0
        while i < len(a) and a[i].isdigit() and j < len(b) and b[j].isdigit():
            if not first_diff:
                first_diff = ord(a[i]) - ord(b[j])
            i += 1
            j += 1
        if i < len(a) and a[i].isdigit():
            return 1
        if j < len(b) and b[j].isdigit():
            return -1
        if first_diff:
            return first_diff
    return 0


def _split_version(version):
    epoch, _, rest = version.rpartition(":") if ":" in version else ("0", "", version)
    upstream, dash, revision = rest.rpartition("-")
    if not dash:
        upstream, revision = rest, ""
    return int(epoch or 0), upstream, revision


def version_compare(a, b):
    """<0, 0 or >0 as Debian version ``a`` sorts before, with or after ``b``."""
    ea, ua, ra = _split_version(a)
    eb, ub, rb = _split_version(b)
    if ea != eb:
        return ea - eb
    return _verrevcmp(ua, ub) or _verrevcmp(ra, rb)


# --------------------------------------------------------------------------
# Package state
# --------------------------------------------------------------------------

def package_split(spec):
    """'name', 'name=1.2*' or 'name>=1.2' -> (name, cmp or None, version or None)."""
    parts = re.split(r"(>?=)", spec, maxsplit=1)
    if len(parts) > 1:
        return parts[0], parts[1], parts[2]
    return parts[0], None, None


def parse_dpkg_status(out):
    """``(installed, version, has_files)`` from ``dpkg-query -W -f='${Status} ${Version}'``."""
    words = out.split()
    if len(words) < 3:
        return False, None, False
    installed = words[2] == "installed"
    has_files = words[2] not in ("not-installed",)
    version = words[3] if len(words) > 3 else None
    return installed, version if installed else None, has_files


def parse_policy(out):
    """``(candidate or None, [available versions])`` from ``apt-cache policy <pkg>``."""
    candidate = None
    versions = []
    in_table = False
    for line in out.splitlines():
        stripped = line.strip()
        if stripped.startswith("Candidate:"):
            value = stripped.split(":", 1)[1].strip()
            candidate = None if value == "(none)" else value
        elif stripped.startswith("Version table:"):
            in_table = True
        elif in_table:
            m = re.match(r"^ (?:\*\*\*|   ) (\S+) (-?\d+)$", line)
            if m:
                versions.append(m.group(1))
    return candidate, versions


def split_policy(out):
    """``apt-cache policy a b`` output -> {name: its section}."""
    sections = {}
    name = None
    for line in out.splitlines(True):
        m = re.match(r"^(\S+):$", line.rstrip("\n"))
        if m:
            name = m.group(1)
            sections[name] = ""
        elif name is not None:
            sections[name] += line
    return sections


class _Apt(object):
    """The apt commands a task runs, with apt's environment and its options."""

    def __init__(self, ctx, params):
        self.ctx = ctx
        self.params = params
        self.apt_get = _common.require_bin("apt-get", ctx)

    def run(self, argv):
        return _common.run_text(self.ctx, argv, env=_APT_ENV)

    def dpkg_status(self, name):
        rc, out, err = self.run([_common.require_bin("dpkg-query", self.ctx), "-W",
                                 "-f=${Status} ${Version}\n", name])
        if rc != 0:
            return False, None, False
        return parse_dpkg_status(out.splitlines()[0] if out else "")

    def policies(self, names):
        """One ``apt-cache policy`` for all ``names`` (it costs about a second a call)."""
        rc, out, err = self.run([_common.require_bin("apt-cache", self.ctx), "policy"] + names)
        self._policies = split_policy(out) if rc == 0 else {}

    def policy(self, name):
        """``(candidate, versions, known)`` for ``name``."""
        if name not in getattr(self, "_policies", {}):
            self.policies([name])
        section = self._policies.get(name)
        if section is None or not section.strip():
            return None, [], False
        candidate, versions = parse_policy(section)
        return candidate, versions, True

    def is_virtual(self, name):
        rc, out, err = self.run([_common.require_bin("apt-cache", self.ctx), "showpkg", name])
        if rc != 0:
            return False
        provides = out.split("Reverse Provides:", 1)
        return len(provides) == 2 and bool(provides[1].strip())


def best_match(candidate, versions, version_cmp, version):
    """Ansible's package_best_match without python-apt's pin policy objects."""
    if version_cmp == "=":
        matching = [v for v in versions if fnmatch.fnmatch(v, version)]
        if not matching:
            return None
        best = matching[0]
        for v in matching[1:]:
            if version_compare(v, best) > 0:
                best = v
        return best
    return candidate


def decide_status(installed, installed_version, best, version_cmp, version):
    """Ansible's package_status tail: ``(version_is_installed, version_installable)``."""
    if not installed:
        return False, best
    if version_cmp == "=":
        ok = fnmatch.fnmatch(installed_version, version)
        upgrade = best and installed_version != best and fnmatch.fnmatch(best, version)
    elif version_cmp == ">=":
        ok = version_compare(installed_version, version) >= 0
        upgrade = best and installed_version != best and version_compare(best, version) >= 0
    else:
        ok = True
        upgrade = best and installed_version != best
    return ok, (best if upgrade else None)


def package_status(apt, name, version_cmp, version, state):
    """``(installed, version_is_installed, version_installable, has_files)`` like Ansible."""
    candidate, versions, known = apt.policy(name)
    installed, installed_version, has_files = apt.dpkg_status(name)
    if not known or (candidate is None and not versions and not installed):
        if state != "install":
            return installed, installed, None, has_files
        if apt.is_virtual(name):
            return False, False, True, False
        raise ModuleError("No package matching '%s' is available" % name)
    best = best_match(candidate, versions, version_cmp, version)
    ok, installable = decide_status(installed, installed_version, best, version_cmp, version)
    return installed, ok, installable, has_files


def parse_diff(output):
    """apt-get's plan between 'Reading state information...' and 'N upgraded'."""
    lines = output.splitlines()
    try:
        start = lines.index("Reading state information...")
    except ValueError:
        start = -1
    end = next((i for i, line in enumerate(lines)
                if re.match("[0-9]+ (packages )?upgraded", line)), len(lines))
    return {"prepared": "\n".join(lines[start + 1:end + 1])}


# --------------------------------------------------------------------------
# Cache
# --------------------------------------------------------------------------

def cache_mtime():
    if os.path.exists(_APT_UPDATE_SUCCESS_STAMP_PATH):
        return os.stat(_APT_UPDATE_SUCCESS_STAMP_PATH).st_mtime
    if os.path.exists(_APT_LISTS_PATH):
        return os.stat(_APT_LISTS_PATH).st_mtime
    return 0


def _cache_time():
    stamp = datetime.datetime.fromtimestamp(cache_mtime())
    return stamp, int(time.mktime(stamp.timetuple()))


def update_cache(apt, p, ctx):
    """Run apt-get update when asked and the cache is too old; ``(updated, time)``."""
    stamp, update_time = _cache_time()
    if not (p["update_cache"] or p["cache_valid_time"]):
        return False, update_time
    if stamp + datetime.timedelta(seconds=p["cache_valid_time"]) >= datetime.datetime.now():
        return False, update_time
    warnings = p["warnings"]
    err = ""
    jitter = random.randrange(1000) / 1000.0
    for attempt in range(p["update_cache_retries"]):
        if ctx.check_mode:
            break
        rc, out, err = apt.run([apt.apt_get, "update"] + _lock_opts(p))
        if rc == 0:
            break
        warnings.append("Failed to update cache after %d retries due to %s, retrying"
                        % (attempt + 1, err.strip()))
        delay = min(2 ** attempt + jitter, p["update_cache_retry_max_delay"] + jitter)
        time.sleep(delay)
        warnings.append("Sleeping for %d seconds, before attempting to refresh the cache again"
                        % int(round(delay)))
    else:
        raise ModuleError("Failed to update apt cache after %d retries: %s"
                          % (p["update_cache_retries"], err.strip() or "unknown reason"))
    after = _cache_time()[1]
    return ctx.check_mode or after != update_time, after


# --------------------------------------------------------------------------
# Actions
# --------------------------------------------------------------------------

def _dpkg_opts(p):
    opts = []
    for option in p["dpkg_options"].split(","):
        opts += ["-o", "Dpkg::Options::=--%s" % option]
    return opts


def _lock_opts(p):
    return ["-o", "DPkg::Lock::Timeout=%d" % p["lock_timeout"]]


def _common_flags(p, ctx):
    flags = []
    if p["force"]:
        flags.append("--force-yes")
    if ctx.check_mode:
        flags.append("--simulate")
    return flags


def _cmd_text(argv):
    return " ".join(argv)


def install(apt, p, ctx, specs, upgrade):
    """Install ``specs`` (Ansible's install()); ``(ok, result)``."""
    to_install = []
    names = []
    apt.policies([package_split(spec)[0] for spec in specs])
    for spec in specs:
        name, version_cmp, version = package_split(spec)
        names.append(name)
        installed, version_ok, installable, _ = package_status(apt, name, version_cmp, version,
                                                                "install")
        if not installed and p["only_upgrade"]:
            continue
        if not version_ok and not installable:
            return False, {"msg": "no available installation candidate for %s" % spec}
        if installable and (not installed or upgrade or not version_ok):
            if installable is not True:
                to_install.append("%s=%s" % (name, installable))
            elif version:
                to_install.append("%s=%s" % (name, version))
            else:
                to_install.append(name)
        elif version_ok and installable and version_cmp == "=":
            to_install.append("%s=%s" % (name, version))
    if not to_install:
        result = {"changed": False}
    else:
        ok, result = _apt_get_install(apt, p, ctx, to_install)
        if not ok:
            return False, result
    if not ctx.check_mode:
        _mark_manual(apt, names)
    return True, result


def _apt_get_install(apt, p, ctx, packages):
    argv = [apt.apt_get, "-y"] + _dpkg_opts(p) + _lock_opts(p)
    if p["only_upgrade"]:
        argv.append("--only-upgrade")
    argv += _common_flags(p, ctx)
    if p["autoremove"]:
        argv.append("--auto-remove")
    if p["fail_on_autoremove"]:
        argv.append("--no-remove")
    argv += ["install"] + packages
    if p["default_release"]:
        argv += ["-t", p["default_release"]]
    if p["install_recommends"] is not None:
        argv += ["-o", "APT::Install-Recommends=%s" % ("yes" if p["install_recommends"] else "no")]
    if p["allow_unauthenticated"]:
        argv.append("--allow-unauthenticated")
    if p["allow_downgrade"]:
        argv.append("--allow-downgrades")
    if p["allow_change_held_packages"]:
        argv.append("--allow-change-held-packages")
    rc, out, err = apt.run(argv)
    if rc:
        return False, {"msg": "'%s' failed: %s" % (_cmd_text(argv), err), "stdout": out,
                       "stderr": err, "rc": rc}
    return True, {"changed": True, "stdout": out, "stderr": err,
                  "diff": parse_diff(out) if ctx.diff_mode else {}}


def _mark_manual(apt, names):
    if not names:
        return
    mark = _common.get_bin_path("apt-mark", apt.ctx.child_env())
    if mark is None:
        apt.params["warnings"].append("Could not find apt-mark binary, not marking package(s) "
                                      "as manually installed.")
        return
    argv = [mark, "manual"] + names
    rc, out, err = apt.run(argv)
    if rc != 0:
        raise ModuleError("'%s' failed: %s" % (_cmd_text(argv), err), stdout=out, stderr=err,
                          rc=rc)


def remove(apt, p, ctx, specs):
    """Remove ``specs`` (Ansible's remove()); the full result."""
    to_remove = []
    apt.policies([package_split(spec)[0] for spec in specs])
    for spec in specs:
        name, version_cmp, version = package_split(spec)
        installed, version_ok, _, has_files = package_status(apt, name, version_cmp, version,
                                                             "remove")
        if version_ok or (has_files and p["purge"]):
            to_remove.append(spec)
    if not to_remove:
        return {"changed": False}
    argv = [apt.apt_get, "-q", "-y"] + _dpkg_opts(p) + _lock_opts(p)
    if p["purge"]:
        argv.append("--purge")
    argv += _common_flags(p, ctx)
    if p["autoremove"]:
        argv.append("--auto-remove")
    if p["allow_change_held_packages"]:
        argv.append("--allow-change-held-packages")
    argv += ["remove"] + to_remove
    rc, out, err = apt.run(argv)
    if rc:
        raise ModuleError("'apt-get remove %s' failed: %s" % (" ".join(to_remove), err),
                          stdout=out, stderr=err, rc=rc)
    return {"changed": True, "stdout": out, "stderr": err,
            "diff": parse_diff(out) if ctx.diff_mode else {}}


def autoremove(apt, p, ctx):
    argv = [apt.apt_get, "-y"] + _dpkg_opts(p) + _lock_opts(p)
    if p["purge"]:
        argv.append("--purge")
    if p["force"]:
        argv.append("--force-yes")
    argv.append("autoremove")
    if ctx.check_mode:
        argv.append("--simulate")
    rc, out, err = apt.run(argv)
    if rc:
        raise ModuleError("'apt-get autoremove' failed: %s" % err, stdout=out, stderr=err, rc=rc)
    return {"changed": _AUTOREMOVE_CHANGED in out, "stdout": out, "stderr": err,
            "diff": parse_diff(out) if ctx.diff_mode else {}}


def install_deb(apt, p, ctx, debs):
    """Install local .deb files whose version differs from the installed one."""
    dpkg_deb = _common.require_bin("dpkg-deb", ctx)
    wanted = []
    for deb in debs.split(","):
        deb = os.path.abspath(deb.strip())
        rc, out, err = apt.run([dpkg_deb, "-f", deb, "Package", "Version"])
        if rc != 0:
            raise ModuleError("Unable to install package: %s" % (err.strip() or out.strip()))
        fields = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
        installed, version, _ = apt.dpkg_status(fields.get("Package", ""))
        if installed and version and version_compare(version, fields.get("Version", "")) == 0:
            continue
        wanted.append(deb)
    if not wanted:
        return {"changed": False, "stdout": "", "stderr": "", "diff": ""}
    ok, result = _apt_get_install(apt, p, ctx, wanted)
    if not ok:
        raise ModuleError(result.pop("msg"), **result)
    return result


# --------------------------------------------------------------------------
# The module
# --------------------------------------------------------------------------

def _params(args):
    for canonical, aliases in (("name", ("pkg", "package")),
                               ("update_cache", ("update-cache",)),
                               ("default_release", ("default-release",)),
                               ("install_recommends", ("install-recommends",)),
                               ("allow_unauthenticated", ("allow-unauthenticated",)),
                               ("allow_downgrade", ("allow-downgrade", "allow_downgrades",
                                                    "allow-downgrades"))):
        _common.resolve_aliases(args, canonical, aliases)
    p = {
        "name": _common.opt_list(args, "name"),
        "state": _common.check_choice(_common.opt_str(args, "state", "present"), "state",
                                      ("absent", "build-dep", "fixed", "latest", "present")),
        "deb": _common.opt_path(args.get("deb")),
        "default_release": _common.opt_str(args, "default_release"),
        "install_recommends": _common.opt_bool(args, "install_recommends", None),
        "update_cache": _common.opt_bool(args, "update_cache", None),
        "update_cache_retries": _common.opt_int(args, "update_cache_retries", 5),
        "update_cache_retry_max_delay": _common.opt_int(args, "update_cache_retry_max_delay", 12),
        "cache_valid_time": _common.opt_int(args, "cache_valid_time", 0),
        "dpkg_options": _common.opt_str(args, "dpkg_options", DPKG_OPTIONS),
        "lock_timeout": _common.opt_int(args, "lock_timeout", 60),
        "warnings": [],
    }
    for flag in ("purge", "force", "autoremove", "only_upgrade", "allow_unauthenticated",
                 "allow_downgrade", "allow_change_held_packages", "fail_on_autoremove",
                 "force_apt_get"):
        p[flag] = _common.opt_bool(args, flag, False)
    if p["state"] in ("build-dep", "fixed"):
        raise ModuleError("ioc's apt module does not support state=%s" % p["state"])
    if p["name"] is not None and p["deb"] is not None:
        raise ModuleError("parameters are mutually exclusive: deb|package")
    if not (p["autoremove"] or p["deb"] or p["name"] is not None or p["update_cache"]):
        raise ModuleError("one of the following is required: autoremove, deb, package, "
                          "update_cache, upgrade")
    for name in p["name"] or ():
        if name == "*" or any(c in name.split("=")[0] for c in "*?["):
            raise ModuleError("ioc's apt module does not expand wildcards in package names "
                              "(got '%s')" % name)
        if name.count("=") > 1:
            raise ModuleError("invalid package spec: %s" % name)
    return p


def _finish(result, p):
    if p["warnings"]:
        result["warnings"] = p["warnings"] + result.get("warnings", [])
    return result


@_common.module_entry
def run(args, ctx):
    """Bring packages to ``state`` (see the module docstring)."""
    _common.check_unsupported(args, OPTIONS, args.pop("_ioc_module", "apt"))
    p = _params(args)
    apt = _Apt(ctx, p)
    updated, update_time = update_cache(apt, p, ctx)
    cache_keys = {"cache_updated": updated, "cache_update_time": update_time}
    if (p["update_cache"] or p["cache_valid_time"]) and not p["name"] and not p["deb"]:
        return _finish(dict(cache_keys, changed=updated), p)
    if p["deb"]:
        if p["state"] != "present":
            raise ModuleError("deb only supports state=present")
        return _finish(install_deb(apt, p, ctx, p["deb"]), p)
    specs = [n.strip() for n in p["name"] or ()]
    if not specs and p["autoremove"]:
        return _finish(autoremove(apt, p, ctx), p)
    if p["state"] == "absent":
        return _finish(remove(apt, p, ctx, specs), p)
    ok, result = install(apt, p, ctx, specs, upgrade=p["state"] == "latest")
    result.update(cache_keys)
    if not ok:
        result["failed"] = True
    return _finish(result, p)
