"""``ioc-ssh HOST [-- COMMAND...]``: a shell, or a command, on an inventory host.

The host is reached as an ioc run reaches it: its connection settings come
from the inventory, ``host_vars/``, ``group_vars/``, ``-e`` and ansible.cfg
by the run's own code (:meth:`PlaybookRun.connection_spec`), and the ssh
command line is the one mitogen builds for the run's connection from the
same options (:func:`ioc.transport.connector.ssh_command_line`):
``ansible_host``, ``ansible_port``, ``ansible_user``, the private key, the
ssh arguments (``-o HostKeyAlias=...`` among them), host key checking,
ConnectTimeout and keepalives. A ``mitogen_via`` chain is followed as a run
follows it: the ssh to the host is started *on* the hop (an ``ssh`` run by
the hop's ssh), so the hop's keys and known hosts apply, as they do for the
runner ioc starts there.

ssh replaces this process (``exec``): the exit code is the command's (or
ssh's 255), and with a terminal on stdin ssh gets ``-t`` at every hop so the
shell or command has a real terminal.

``ioc-ssh --persist[=SECONDS] HOST -- COMMAND`` runs the command through
``ioc-run --persist``'s daemon (:mod:`ioc.warmd`) instead: in the host's
runner there (``mitogen_via`` hops included), connecting it if the daemon
has none with these settings, and keeping it for the next run -- no ssh
handshake on a warm tree. The command runs without a terminal (``/bin/sh
-c`` in the runner, stdin passed when it is not a terminal); its output is
written when it ends, and the exit code is its own (255 when the host
could not be reached). A shell needs a terminal, which the runner cannot
give: ``--persist`` without a command is refused.
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import Any, List, Optional

from ioc import cli, loader
from ioc import inventory as inv
from ioc.callbacks import CallbackSet
from ioc.controller.playbook import PlaybookRun
from ioc.controller.state import RunOptions
from ioc.errors import IocError
from ioc.transport.spec import ConnectionSpec


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ioc-ssh",
        description="A shell (or, after --, a command) on an inventory host, over the ssh "
                    "connection ioc-run would make to it (mitogen_via hops included). The "
                    "exit code is the command's, or 255 when ssh failed.")
    parser.add_argument("host", help="an inventory host name")
    parser.add_argument("command", nargs="*",
                        help="the command line to run (after --), as `ssh HOST COMMAND`")
    parser.add_argument("-i", "--inventory", action="append", default=[],
                        help="inventory file or directory, or a comma-separated host list "
                             "(repeatable); default: ansible.cfg's inventory")
    parser.add_argument("-e", "--extra-vars", action="append", default=[],
                        help="k=v pairs, YAML/JSON, or @file (they win over host variables)")
    parser.add_argument("-u", "--user", dest="remote_user", help="connect as this user")
    parser.add_argument("-c", "--connection", help="connection type: ssh or local")
    parser.add_argument("-T", "--timeout", type=int, help="SSH connection timeout in seconds")
    parser.add_argument("--private-key", "--key-file", dest="private_key_file",
                        help="use this file to authenticate the connection")
    parser.add_argument("--ssh-common-args", help="extra ssh arguments")
    parser.add_argument("--ssh-extra-args", help="extra ssh arguments, after the common ones")
    parser.add_argument("-n", "--dry-run", action="store_true",
                        help="print the command line instead of running it")
    parser.add_argument("--persist", "--persist=SECONDS", action="store_true",
                        help="run the command (after --; no shell) in the host's runner kept "
                             "by ioc-run's per-user daemon for SECONDS idle (default 60): "
                             "no ssh handshake when it has one (docs/ioc-run.md)")
    parser.add_argument("--persist-stop", action="store_true",
                        help="end the --persist daemon and every runner it keeps, and exit")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    rest: List[str] = []
    if "--" in argv:  # everything after it is the command, options included
        at = argv.index("--")
        argv, rest = argv[:at], argv[at + 1:]
    if cli.WARM is None and ("--persist-stop" in argv or any(
            a == "--persist" or a.startswith("--persist=") for a in argv)):
        # (ioc-ssh and python -m ioc.ssh start at ioc.warm.ssh_main)
        print("[ERROR]: --persist and --persist-stop are ioc-ssh's entry point's "
              "(ioc.warm.ssh_main), not ioc.ssh.main's", file=sys.stderr)
        return cli.EXIT_ERROR
    args = build_parser().parse_args(argv)
    command = list(args.command) + rest
    if cli.WARM is not None and not command:
        print("[ERROR]: ioc-ssh --persist runs a command (after --) in the host's runner, "
              "which has no terminal to give a shell: run ioc-ssh without --persist for "
              "a shell", file=sys.stderr)
        return cli.EXIT_ERROR
    try:
        spec = connection_spec(args)
    except IocError as exc:
        cli.report_error(exc)
        return exc.exit_code
    if cli.WARM is not None and not args.dry_run:
        return warm_command(cli.WARM, args.host, spec, " ".join(command))
    tty = sys.stdin.isatty()
    line = " ".join(command) if command else None
    argv_out = command_line(spec, line, tty)
    if args.dry_run:
        print(shlex.join(argv_out))
        return 0
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(argv_out[0], argv_out)
    except OSError as exc:
        print("[ERROR]: cannot run %s: %s" % (argv_out[0], exc.strerror), file=sys.stderr)
    return 255


def warm_command(warm: Any, host: str, spec: ConnectionSpec, line: str) -> int:
    """``line`` in ``host``'s runner kept by the daemon (``warm``, an
    :class:`ioc.warmd.Warm`; ``--persist``): its exit code."""
    from ioc.transport import commands

    connector = warm.connector(forks=1)
    connector.settle(host, spec)  # (other settings than its runner's: a new runner)
    data = b"" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer.read()
    reply = commands.serve(connector, host, spec, {"op": "exec", "cmd": line, "in_data": data})
    if "error" in reply:
        print("[ERROR]: %s: %s" % (host, reply["msg"]), file=sys.stderr)
        return 255
    sys.stdout.flush()
    sys.stdout.buffer.write(reply["stdout"])
    sys.stdout.flush()
    sys.stderr.flush()
    sys.stderr.buffer.write(reply["stderr"])
    sys.stderr.flush()
    return int(reply["rc"])


def connection_spec(args: argparse.Namespace) -> ConnectionSpec:
    """``args.host``'s connection, worked out by the run's own code (a play on
    that host, as ``ioc-run`` would run it)."""
    from ioc.ansible.config import read_settings

    settings = read_settings()
    extra = loader.parse_extra_vars(args.extra_vars)
    basedir = os.getcwd()
    inventory = cli.load_inventory(cli.inventory_sources(args, settings), basedir)
    if not inv.match_hosts(inventory, args.host):
        raise IocError("%s is not a host of the inventory" % args.host)
    book = loader.load_playbook_data(
        [{"hosts": args.host, "gather_facts": False, "tasks": []}],
        os.path.join(basedir, "__ioc_ssh__"), extra_vars=extra)
    run = PlaybookRun(book, inventory, extra, CallbackSet([]),
                      RunOptions(connection_vars=cli.connection_vars(args, settings)))
    return run.connection_spec(args.host)


def command_line(spec: ConnectionSpec, command: Optional[str], tty: bool) -> List[str]:
    """The argv that runs ``command`` (a shell command line; None: a login shell)
    on ``spec``'s host, started where ioc starts its runner: from the
    controller, or (``mitogen_via``) on the hop, whose own command line
    then carries this one."""
    if spec.transport == "local":
        here = ["/bin/sh", "-c", command] if command is not None \
            else [os.environ.get("SHELL") or "/bin/sh", "-l"]
    else:
        from ioc.transport.connector import ssh_command_line
        from ioc.transport.keepalive import from_environment

        here = ssh_command_line(spec, from_environment())
        if tty:
            here.insert(1, "-t")
        if command is not None:
            here.append(command)
    if spec.via_spec is None:
        return here
    return command_line(spec.via_spec, shlex.join(here), tty)


if __name__ == "__main__":
    sys.exit(main())
