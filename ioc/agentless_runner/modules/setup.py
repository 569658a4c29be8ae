"""``setup``: gather facts about the target with the stdlib only.

A real but smaller fact set than Ansible's: platform, distribution, python,
user, env, date_time, dns, cmdline, processors, memory, mounts, IPv4
networking (from /proc and sysfs, no external command), package and service
manager, and local facts from ``fact_path``. Subsets: ``all``, ``min``,
``hardware``, ``network`` (and their ``!`` negations); other Ansible subset
names are accepted and gather nothing extra.
"""
import configparser
import datetime
import fnmatch
import getpass
import json
import os
import platform
import pwd
import re
import socket
import struct
import subprocess
import sys
import time

from ioc.agentless_runner.context import ModuleError
from ioc.agentless_runner.modules import _common

OPTIONS = frozenset({"gather_subset", "filter", "gather_timeout", "fact_path"})
SUPPORTS_CHECK_MODE = True

#: Subset names Ansible knows; only hardware and network select anything here.
KNOWN_SUBSETS = frozenset({
    "all", "min", "hardware", "network", "virtual", "ohai", "facter", "apparmor", "caps",
    "cmdline", "date_time", "distribution", "dns", "env", "fips", "local", "lsb",
    "pkg_mgr", "platform", "python", "selinux", "service_mgr", "ssh_pub_keys", "user",
    "devices", "dmi", "interfaces", "mounts", "processor", "memory",
})

OS_FAMILY = {}
for _family, _names in (
        ("RedHat", ("RedHat", "Fedora", "CentOS", "Scientific", "OracleLinux", "Amazon",
                    "AlmaLinux", "Rocky", "CloudLinux", "EulerOS", "openEuler", "Virtuozzo")),
        ("Debian", ("Debian", "Ubuntu", "Raspbian", "Linux Mint", "Kali", "Devuan",
                    "Pop!_OS", "Neon", "Parrot", "Deepin")),
        ("Suse", ("SLES", "SLED", "openSUSE", "openSUSE Leap", "openSUSE Tumbleweed", "SUSE")),
        ("Archlinux", ("Archlinux", "Manjaro", "EndeavourOS")),
        ("Alpine", ("Alpine",)), ("Gentoo", ("Gentoo",)), ("Void", ("Void",))):
    for _name in _names:
        OS_FAMILY[_name] = _family

#: os-release ID -> Ansible's distribution name, where capitalize() is wrong.
DISTRO_NAMES = {
    "amzn": "Amazon", "rhel": "RedHat", "centos": "CentOS", "ol": "OracleLinux",
    "almalinux": "AlmaLinux", "rocky": "Rocky", "sles": "SLES", "sled": "SLED",
    "opensuse": "openSUSE", "opensuse-leap": "openSUSE Leap",
    "opensuse-tumbleweed": "openSUSE Tumbleweed", "arch": "Archlinux",
    "linuxmint": "Linux Mint", "pop": "Pop!_OS", "neon": "KDE neon", "raspbian": "Debian",
    "cloudlinux": "CloudLinux", "openeuler": "openEuler", "endeavouros": "EndeavourOS",
}

PKG_MGRS = (("/usr/bin/apt-get", "apt"), ("/usr/bin/dnf5", "dnf5"), ("/usr/bin/dnf", "dnf"),
            ("/usr/bin/yum", "yum"), ("/usr/bin/zypper", "zypper"),
            ("/usr/bin/pacman", "pacman"), ("/sbin/apk", "apk"), ("/usr/bin/apk", "apk"),
            ("/usr/bin/emerge", "portage"), ("/usr/bin/xbps-install", "xbps"))


def _read(path, default=None):
    """Content of a small text file, stripped, or ``default``."""
    try:
        with open(path) as f:
            return f.read().strip()
    except (OSError, UnicodeDecodeError):
        return default


def _lines(path):
    """Lines of a text file ([] when unreadable)."""
    content = _read(path)
    return content.splitlines() if content else []


# --------------------------------------------------------------------------
# min subset
# --------------------------------------------------------------------------

def platform_facts():
    """system, kernel, machine, architecture, hostname, fqdn, nodename, domain..."""
    fqdn = socket.getfqdn()
    machine = platform.machine()
    facts = {
        "system": platform.system(), "kernel": platform.release(),
        "kernel_version": platform.version(), "machine": machine,
        "python_version": platform.python_version(), "fqdn": fqdn,
        "hostname": platform.node().split(".")[0], "nodename": platform.node(),
        "domain": ".".join(fqdn.split(".")[1:]),
        "userspace_bits": platform.architecture()[0].replace("bit", ""),
        "architecture": machine,
    }
    if machine == "x86_64":
        facts["userspace_architecture"] = "x86_64" if facts["userspace_bits"] == "64" else "i386"
    machine_id = _read("/var/lib/dbus/machine-id") or _read("/etc/machine-id")
    if machine_id:
        facts["machine_id"] = machine_id
    return facts


def _os_release():
    """/etc/os-release (or /usr/lib/os-release) as a dict."""
    info = {}
    for line in _lines("/etc/os-release") or _lines("/usr/lib/os-release"):
        key, sep, value = line.partition("=")
        if sep:
            info[key.strip()] = value.strip().strip("'\"")
    return info


def distribution_facts():
    """distribution, version, major version, release, os_family (from os-release)."""
    info = _os_release()
    dist_id = info.get("ID", "")
    name = DISTRO_NAMES.get(dist_id) or dist_id.capitalize() or "OtherLinux"
    version = info.get("VERSION_ID", "")
    if dist_id == "debian":
        best = _read("/etc/debian_version", "")
        version = best if best[:1].isdigit() else version
    release = info.get("VERSION_CODENAME") or info.get("UBUNTU_CODENAME")
    if release is None and "(" in info.get("VERSION", ""):
        release = info["VERSION"].split("(", 1)[1].split(")", 1)[0].split(",")[0].strip()
    version = version or "NA"
    return {
        "distribution": name, "distribution_version": version,
        "distribution_major_version": version.split(".")[0] or "NA",
        "distribution_release": "NA" if release is None else release,
        "os_family": OS_FAMILY.get(name, name),
    }


def python_facts():
    """python_version is in platform facts; this is the ``python`` dict."""
    vi = sys.version_info
    return {"python": {
        "executable": sys.executable,
        "version": {"major": vi[0], "minor": vi[1], "micro": vi[2],
                    "releaselevel": vi[3], "serial": vi[4]},
        "version_info": list(vi), "has_sslcontext": True,
        "type": sys.implementation.name.capitalize() if sys.implementation.name != "cpython"
        else "CPython",
    }}


def user_facts():
    """user_id, user_uid/gid, user_dir, user_shell, user_gecos, real/effective ids."""
    try:
        pw = pwd.getpwuid(os.getuid())
        name = pw.pw_name
    except KeyError:
        pw, name = None, getpass.getuser()
    facts = {"user_id": name, "real_user_id": os.getuid(), "effective_user_id": os.geteuid(),
             "real_group_id": os.getgid(), "effective_group_id": os.getegid()}
    if pw is not None:
        facts.update(user_uid=pw.pw_uid, user_gid=pw.pw_gid, user_gecos=pw.pw_gecos,
                     user_dir=pw.pw_dir, user_shell=pw.pw_shell)
    return facts


def date_time_facts():
    """ansible_date_time: all values are strings, as in Ansible."""
    epoch = time.time()
    now = datetime.datetime.fromtimestamp(epoch)
    utcnow = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc)
    return {"date_time": {
        "year": now.strftime("%Y"), "month": now.strftime("%m"),
        "weekday": now.strftime("%A"), "weekday_number": now.strftime("%w"),
        "weeknumber": now.strftime("%W"), "day": now.strftime("%d"),
        "hour": now.strftime("%H"), "minute": now.strftime("%M"),
        "second": now.strftime("%S"), "epoch": str(int(epoch)), "epoch_int": str(int(epoch)),
        "date": now.strftime("%Y-%m-%d"), "time": now.strftime("%H:%M:%S"),
        "iso8601_micro": utcnow.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "iso8601": utcnow.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "iso8601_basic": now.strftime("%Y%m%dT%H%M%S%f"),
        "iso8601_basic_short": now.strftime("%Y%m%dT%H%M%S"),
        "tz": time.strftime("%Z"), "tz_dst": time.tzname[1], "tz_offset": time.strftime("%z"),
    }}


def misc_facts():
    """env, cmdline, dns, fips, uptime."""
    facts = {"env": dict(os.environ), "fips": _read("/proc/sys/crypto/fips_enabled") == "1"}
    cmdline = _read("/proc/cmdline")
    if cmdline:
        parsed = {}
        for item in cmdline.split():
            key, sep, value = item.partition("=")
            parsed[key] = value if sep else True
        facts["cmdline"] = parsed
    dns = {}
    for line in _lines("/etc/resolv.conf"):
        fields = line.split()
        if not fields or fields[0].startswith(("#", ";")):
            continue
        if fields[0] == "nameserver" and len(fields) > 1:
            dns.setdefault("nameservers", []).append(fields[1])
        elif fields[0] in ("domain", "sortlist") and len(fields) > 1:
            dns[fields[0]] = fields[1] if fields[0] == "domain" else fields[1:]
        elif fields[0] in ("search", "options"):
            dns[fields[0]] = fields[1:]
    facts["dns"] = dns
    uptime = _read("/proc/uptime")
    if uptime:
        facts["uptime_seconds"] = int(float(uptime.split()[0]))
    return facts


def pkg_mgr_facts():
    """pkg_mgr: the first package manager found."""
    for path, name in PKG_MGRS:
        if os.path.exists(path):
            return {"pkg_mgr": name}
    return {"pkg_mgr": "unknown"}


def service_mgr_facts():
    """service_mgr, detected like Ansible's ServiceMgrFactCollector on Linux."""
    proc_1 = _read("/proc/1/comm")
    if proc_1 is None and os.path.islink("/sbin/init"):
        proc_1 = os.readlink("/sbin/init")
    if proc_1 is not None:
        proc_1 = os.path.basename(proc_1).strip()
        if proc_1 == "init" or proc_1.endswith("sh"):
            proc_1 = None
    if proc_1:
        return {"service_mgr": {"runit-init": "runit", "openrc-init": "openrc"}.get(proc_1, proc_1)}
    if os.path.isdir("/run/systemd/system") or os.path.isdir("/dev/.run/systemd"):
        name = "systemd"
    elif os.path.exists("/sbin/openrc"):
        name = "openrc"
    elif os.path.isdir("/etc/init.d/"):
        name = "sysvinit"
    else:
        name = "service"
    return {"service_mgr": name}


def _run_fact_script(path, timeout):
    """Output of an executable .fact file."""
    out = subprocess.run([path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, timeout=timeout, check=False).stdout
    return out.decode("utf-8", "replace")


def _parse_fact(text):
    """JSON, else INI (as a dict of sections), else an error string."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    cp = configparser.ConfigParser()
    try:
        cp.read_string(text)
    except configparser.Error:
        return "error loading facts as JSON or ini - please check content"
    return {s: dict(cp.items(s)) for s in cp.sections()}


def local_facts(fact_path, timeout):
    """ansible_local: the *.fact files of ``fact_path`` (executables are run)."""
    local = {}
    if not fact_path or not os.path.isdir(fact_path):
        return {"local": local}
    for name in sorted(os.listdir(fact_path)):
        if not name.endswith(".fact"):
            continue
        path = os.path.join(fact_path, name)
        try:
            if os.access(path, os.X_OK):
                text = _run_fact_script(path, timeout)
            else:
                text = _read(path, "")
        except (OSError, subprocess.SubprocessError) as e:
            local[name[:-5]] = "Failure executing fact script (%s), err %s" % (path, e)
            continue
        local[name[:-5]] = _parse_fact(text)
    return {"local": local}


# --------------------------------------------------------------------------
# hardware subset
# --------------------------------------------------------------------------

def processor_facts():
    """processor, processor_count/cores/threads_per_core/vcpus/nproc from /proc/cpuinfo."""
    procs, sockets, cores = [], {}, {}
    physid = coreid = None
    entries = 0
    for line in _lines("/proc/cpuinfo"):
        key, _, val = (s.strip() for s in line.partition(":"))
        if key == "processor":
            entries += 1
            procs.append(val)
        elif key in ("model name", "vendor_id", "Processor", "cpu"):
            procs.append(val)
        elif key == "physical id":
            physid = val
            sockets.setdefault(physid, 1)
        elif key == "core id":
            coreid = val
            cores.setdefault(coreid, 1)
        elif key == "cpu cores" and physid is not None:
            sockets[physid] = int(val)
        elif key == "siblings" and coreid is not None:
            cores[coreid] = int(val)
    count = len(sockets) or entries or 1
    per_socket = (list(sockets.values()) or [1])[0] or 1
    threads = max((list(cores.values()) or [per_socket])[0] // per_socket, 1)
    try:
        nproc = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        nproc = entries
    return {"processor": procs, "processor_count": count, "processor_cores": per_socket,
            "processor_threads_per_core": threads,
            "processor_vcpus": threads * count * per_socket, "processor_nproc": nproc}


def memory_facts():
    """memtotal_mb, memfree_mb, swaptotal_mb, swapfree_mb and memory_mb from /proc/meminfo."""
    mem = {}
    for line in _lines("/proc/meminfo"):
        key, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            mem[key] = int(fields[0]) // 1024
    if not mem:
        return {}
    total, free = mem.get("MemTotal", 0), mem.get("MemFree", 0)
    nocache_free = free + mem.get("Buffers", 0) + mem.get("Cached", 0)
    swap_total, swap_free = mem.get("SwapTotal", 0), mem.get("SwapFree", 0)
    return {"memtotal_mb": total, "memfree_mb": free, "swaptotal_mb": swap_total,
            "swapfree_mb": swap_free,
            "memory_mb": {"real": {"total": total, "used": total - free, "free": free},
                          "nocache": {"free": nocache_free, "used": total - nocache_free},
                          "swap": {"total": swap_total, "free": swap_free,
                                   "used": swap_total - swap_free, "cached": mem.get("SwapCached", 0)}}}


def _unescape_mount(field):
    """Decode /proc/mounts octal escapes (\\040 is a space)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _mount_size(mountpoint):
    """Ansible's get_mount_size (statvfs); {} when it fails."""
    try:
        vfs = os.statvfs(mountpoint)
    except OSError:
        return {}
    return {"size_total": vfs.f_frsize * vfs.f_blocks, "size_available": vfs.f_frsize * vfs.f_bavail,
            "block_size": vfs.f_bsize, "block_total": vfs.f_blocks,
            "block_available": vfs.f_bavail, "block_used": vfs.f_blocks - vfs.f_bavail,
            "inode_total": vfs.f_files, "inode_available": vfs.f_favail,
            "inode_used": vfs.f_files - vfs.f_favail}


def _uuids():
    """Device path -> filesystem UUID from /dev/disk/by-uuid."""
    uuids = {}
    try:
        names = os.listdir("/dev/disk/by-uuid")
    except OSError:
        return uuids
    for name in names:
        uuids[os.path.realpath(os.path.join("/dev/disk/by-uuid", name))] = name
    return uuids


def mount_facts():
    """ansible_mounts: real (device-backed, network or bind) mounts from /proc/mounts."""
    mounts, uuids = [], _uuids()
    for line in _lines("/proc/mounts"):
        fields = line.split()
        if len(fields) < 4:
            continue
        device, mount, fstype, options = (_unescape_mount(f) for f in fields[:4])
        if not device.startswith(("/", "\\")) and ":/" not in device and fstype != "none":
            continue
        entry = {"device": device, "mount": mount, "fstype": fstype, "options": options,
                 "dump": 0, "passno": 0, "uuid": uuids.get(os.path.realpath(device), "N/A")}
        entry.update(_mount_size(mount))
        mounts.append(entry)
    return {"mounts": mounts}


# --------------------------------------------------------------------------
# network subset
# --------------------------------------------------------------------------

def _hex_ip(value):
    """Dotted quad of a little-endian hex IPv4 from /proc/net/route."""
    return socket.inet_ntoa(struct.pack("<L", int(value, 16)))


def _default_route():
    """(interface, gateway) of the IPv4 default route, or (None, None)."""
    for line in _lines("/proc/net/route")[1:]:
        fields = line.split()
        if len(fields) > 7 and fields[1] == "00000000" and fields[7] == "00000000":
            return fields[0], _hex_ip(fields[2])
    return None, None


def _ioctl_addr(ifname, request):
    """An IPv4 address-type ioctl (SIOCGIFADDR...) on ``ifname``; None on failure."""
    import fcntl
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        packed = struct.pack("256s", ifname.encode()[:15])
        return socket.inet_ntoa(fcntl.ioctl(s.fileno(), request, packed)[20:24])
    except OSError:
        return None
    finally:
        s.close()


def _interface_ipv4(ifname):
    """Ansible's per-interface IPv4 dict for ``ifname`` ({} without an address)."""
    address = _ioctl_addr(ifname, 0x8915)  # SIOCGIFADDR
    netmask = _ioctl_addr(ifname, 0x891b)  # SIOCGIFNETMASK
    if not address or not netmask:
        return {}
    mask = struct.unpack("!L", socket.inet_aton(netmask))[0]
    addr = struct.unpack("!L", socket.inet_aton(address))[0]
    info = {"address": address, "netmask": netmask, "prefix": str(bin(mask).count("1")),
            "network": socket.inet_ntoa(struct.pack("!L", addr & mask)),
            "broadcast": _ioctl_addr(ifname, 0x8919) or ""}  # SIOCGIFBRDADDR
    return info


def _sysfs_iface(ifname):
    """macaddress, mtu, type of an interface from /sys/class/net."""
    base = "/sys/class/net/" + ifname
    arptype = _read(base + "/type")
    kind = {"1": "ether", "772": "loopback", "65534": "tunnel", "776": "tunnel6"}
    info = {"macaddress": _read(base + "/address", "unknown"),
            "type": kind.get(arptype, "unknown")}
    mtu = _read(base + "/mtu")
    if mtu and mtu.isdigit():
        info["mtu"] = int(mtu)
    return info


def _all_ipv4_addresses():
    """Local non-loopback IPv4 addresses, from /proc/net/fib_trie."""
    addrs, last = [], None
    for line in _lines("/proc/net/fib_trie"):
        text = line.strip()
        if text.startswith("|--"):
            last = text[3:].strip()
        elif text == "/32 host LOCAL" and last and not last.startswith("127."):
            if last not in addrs:
                addrs.append(last)
    return addrs


def network_facts():
    """interfaces, default_ipv4, all_ipv4_addresses."""
    try:
        interfaces = sorted(name for _, name in socket.if_nameindex())
    except OSError:
        interfaces = []
    facts = {"interfaces": interfaces, "all_ipv4_addresses": _all_ipv4_addresses(),
             "default_ipv4": {}}
    ifname, gateway = _default_route()
    if ifname:
        info = _interface_ipv4(ifname)
        if info:
            info.update(_sysfs_iface(ifname), interface=ifname, alias=ifname, gateway=gateway)
            facts["default_ipv4"] = info
    return facts


# --------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------

def _subsets(gather_subset):
    """The non-min groups to gather ('hardware', 'network') and whether min is wanted."""
    items = gather_subset if isinstance(gather_subset, list) else str(gather_subset).split(",")
    items = [str(i).strip() for i in items if str(i).strip()]
    for item in items:
        if item.lstrip("!") not in KNOWN_SUBSETS:
            raise ModuleError("Bad subset '%s' given to Ansible. gather_subset options allowed: %s"
                              % (item.lstrip("!"), ", ".join(sorted(KNOWN_SUBSETS))))
    group_of = {"hardware": "hardware", "processor": "hardware", "memory": "hardware",
                "mounts": "hardware", "devices": "hardware", "network": "network",
                "interfaces": "network"}
    includes = {i for i in items if not i.startswith("!")}
    excludes = {i[1:] for i in items if i.startswith("!")}
    groups = {"hardware", "network"} if "all" in includes and "all" not in excludes else set()
    groups |= {group_of[i] for i in includes if i in group_of}
    groups -= {group_of[i] for i in excludes if i in ("hardware", "network")}
    return groups, "!min" not in items, items


def _gather(groups, want_min, args):
    """Collect the facts (unprefixed names)."""
    facts = {}
    if want_min:
        for collect in (platform_facts, distribution_facts, python_facts, user_facts,
                        date_time_facts, misc_facts, pkg_mgr_facts, service_mgr_facts):
            facts.update(collect())
        fact_path = _common.opt_path(args.get("fact_path")) or "/etc/ansible/facts.d"
        facts.update(local_facts(fact_path, float(args.get("gather_timeout") or 10)))
    if "hardware" in groups:
        facts.update(processor_facts())
        facts.update(memory_facts())
        facts.update(mount_facts())
    if "network" in groups:
        facts.update(network_facts())
    return facts


def _filters(value):
    """``filter`` as a list of fnmatch patterns ([] means everything)."""
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    return [v.strip() for v in str(value).split(",")]


@_common.module_entry
def run(args, ctx):
    """Return ``{"ansible_facts": {...}, "changed": False}``."""
    _common.check_unsupported(args, OPTIONS, "setup")
    groups, want_min, subset = _subsets(args.get("gather_subset") or ["all"])
    facts = {"ansible_" + k: v for k, v in _gather(groups, want_min, args).items()}
    facts["gather_subset"] = subset
    facts["module_setup"] = True
    patterns = [p for p in _filters(args.get("filter")) if p and p != "*"]
    if patterns:
        facts = {k: v for k, v in facts.items() if any(fnmatch.fnmatch(k, p) for p in patterns)}
    return {"ansible_facts": facts, "changed": False}
