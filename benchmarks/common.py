"""What the latency tests and the benchmark runner share: the plays, inventories
pointing at a delay proxy, and the ``ssh`` command line ioc's connections use.
"""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
REALISTIC = ROOT / "playbooks" / "realistic.yml"

#: Tasks in the generated plays.
N_TASKS = 100
N_ITEMS = 100


def tasks_play(n: int = N_TASKS) -> str:
    """One play of ``n`` ``command`` tasks (each its own task, no loop)."""
    lines = ["- name: %d command tasks" % n, "  hosts: all", "  gather_facts: false",
             "  tasks:"]
    for i in range(n):
        lines += ["    - name: task %d" % i, "      command: echo %d" % i]
    return "\n".join(lines) + "\n"


def loop_play(n: int = N_ITEMS) -> str:
    """One ``command`` task with a loop of ``n`` items."""
    return "\n".join([
        "- name: a %d-item loop" % n, "  hosts: all", "  gather_facts: false", "  tasks:",
        "    - name: loop",
        "      command: echo {{ item }}",
        "      loop: \"{{ range(%d) | list }}\"" % n,
    ]) + "\n"


def realistic_task_count() -> int:
    """Tasks in playbooks/realistic.yml, handlers included (a rough count for reports)."""
    import yaml

    play = yaml.safe_load(REALISTIC.read_text())[0]
    return len(play.get("tasks", [])) + len(play.get("handlers", []))


def inventory(names: Sequence[str], *, host: str, port: int, user: str, key: str,
              ssh_args: Callable[[str], str], python: str,
              extra: str = "") -> str:
    """INI inventory: every name reaches ``host:port`` (e.g. a delay proxy).

    ``ssh_args(name)`` gives the host's ``ansible_ssh_common_args``; pass
    ``-o HostKeyAlias=<name>`` there so that each name is its own connection.
    """
    lines = []
    for name in names:
        fields = [
            name,
            "ansible_host=%s" % host,
            "ansible_port=%d" % port,
            "ansible_user=%s" % user,
            "ansible_ssh_private_key_file=%s" % key,
            "ansible_ssh_common_args=%s" % shlex.quote(ssh_args(name)),
            "ansible_python_interpreter=%s" % python,
        ]
        if extra:
            fields.append(extra)
        lines.append(" ".join(fields))
    return "\n".join(lines) + "\n"


def ioc_ssh_argv(hostvars: Dict[str, object], *command: str) -> List[str]:
    """The ``ssh`` argv ioc's connection to a host with ``hostvars`` starts,
    running ``command`` instead of mitogen's bootstrap.

    Built by ioc's own :func:`ioc.transport.spec.spec_for` and
    :func:`ioc.transport.connector.ssh_command_line` (what ``ioc-ssh`` runs:
    mitogen's own ``get_boot_command`` with the connector's options, ``-o
    LogLevel ERROR``, ``Compression yes``, ``ServerAliveInterval 15``,
    ``BatchMode yes``, the host key options, then the user's ssh
    arguments), so a baseline ``ssh host true`` pays exactly what ioc's ssh pays.
    """
    from ioc.transport.connector import ssh_command_line
    from ioc.transport.keepalive import from_environment
    from ioc.transport.spec import spec_for

    spec = spec_for("probe", hostvars)
    argv = ssh_command_line(spec, from_environment())
    assert argv[-1] == spec.hostname, argv
    return argv + list(command)


def hostvars_of(inventory_line: str) -> Dict[str, str]:
    """The variables of one INI host line (``name k=v k='v w' ...``)."""
    fields = shlex.split(inventory_line)
    return dict(f.split("=", 1) for f in fields[1:])


def median(values: Sequence[float]) -> Optional[float]:
    vals = sorted(values)
    if not vals:
        return None
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2
