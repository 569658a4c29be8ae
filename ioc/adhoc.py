"""``ioc-adhoc``: one module on many hosts, as Ansible's ``ansible`` command runs it.

``ioc-adhoc PATTERN -i INVENTORY -m MODULE -a ARGS`` builds the one-task
play ``ansible``'s ad-hoc CLI builds (``ansible/cli/adhoc.py``: ``hosts:
PATTERN``, ``gather_facts: no``, one task) and runs it through ioc's
planner and executor like any playbook: every module works as it does in a
play, one runner call per host. Around it, the conveniences of fleet tools
(ParaMgmt): ``--push``/``--pull``/``--script`` (the ``copy``, ``fetch`` and
``script`` modules), ``?HOST`` in the arguments standing for each host's
inventory name, ``--retries`` for hosts that could not be reached, one
coloured block per host, a closing count, and a file of the failed hosts
that ``-l @FILE`` reads for the next attempt (docs/ioc-run.md, "ioc-adhoc").
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, TextIO

from ioc import cli, loader
from ioc import inventory as inv
from ioc.agentless_runner import trust
from ioc.callbacks import Callback, CallbackSet
from ioc.callbacks.base import Status, TaskView
from ioc.callbacks.jsonevents import JsonEvents
from ioc.controller.playbook import PlaybookRun
from ioc.controller.state import RunOptions
from ioc.errors import IocError

#: ``ansible``'s exit codes (its TaskQueueManager's RUN_FAILED_HOSTS and
#: RUN_UNREACHABLE_HOSTS): unreachable wins when both happened, as there.
EXIT_FAILED = 2
EXIT_UNREACHABLE = 4
#: Where the names of the hosts that failed go unless ``--failed-file`` says.
DEFAULT_FAILED_FILE = "ioc-adhoc.failed"
#: ``ansible``'s default module (``DEFAULT_MODULE_NAME``).
DEFAULT_MODULE = "command"
#: Modules whose result ``ansible`` prints as ``rc=N >>`` and the output, not as
#: JSON (its ``MODULE_NO_JSON``, plus ``script``, whose result is a command's).
COMMAND_LIKE = frozenset(("command", "shell", "raw", "script", "win_command", "win_shell"))
#: Modules whose free-form argument is a command line, never ``k=v`` pairs.
FREE_FORM = COMMAND_LIKE
#: Pause before the first retry of unreachable hosts; it doubles, up to MAX_BACKOFF.
FIRST_BACKOFF = 1.0
MAX_BACKOFF = 30.0
#: The placeholder for each host's inventory name in the arguments (ParaMgmt's).
HOST_PLACEHOLDER = "?HOST"

_COLORS = {"ok": "0;32", "warn": "0;33", "bad": "0;31"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ioc-adhoc",
        description="Run one module (by default a command) on the hosts a pattern selects, "
                    "as Ansible's ad-hoc `ansible` command does, through ioc's runner: "
                    "one round trip per host.",
        epilog="`?HOST` in -a, --push, --pull and --script stands for each host's inventory "
               "name ({{ inventory_hostname }} works too). Exit code: 0 every host ok, "
               "2 a host failed, 4 a host was unreachable (as `ansible`), 1 an error "
               "before anything ran.")
    parser.add_argument("pattern", help="host pattern (as `ansible`'s)")
    parser.add_argument("-i", "--inventory", action="append", default=[],
                        help="inventory file or directory, or a comma-separated host list "
                             "(repeatable); default: ansible.cfg's inventory")
    parser.add_argument("-l", "--limit", help="further limit the hosts with a pattern; "
                                              "@FILE reads host names from FILE, one a line")
    parser.add_argument("-e", "--extra-vars", action="append", default=[],
                        help="k=v pairs, YAML/JSON, or @file (repeatable)")
    parser.add_argument("-f", "--forks", type=int, default=None,
                        help="hosts to connect to at once (default: ansible.cfg's forks, 5)")
    what = parser.add_argument_group("what to run (one of -m/-a, --push, --pull, --script)")
    what.add_argument("-m", "--module-name", dest="module_name", default=None,
                      help="the module (action) to run (default: %s)" % DEFAULT_MODULE)
    what.add_argument("-a", "--args", dest="module_args", default="",
                      help="the module's options as k=v pairs or a JSON object; a command "
                           "line for command, shell, raw and script")
    what.add_argument("--push", nargs=2, metavar=("SRC", "DEST"),
                      help="copy the local file or directory SRC to DEST on every host "
                           "(the copy module)")
    what.add_argument("--pull", nargs=2, metavar=("SRC", "DESTDIR"),
                      help="fetch the file SRC from every host into DESTDIR/<host>/ "
                           "(the fetch module)")
    what.add_argument("--script", nargs="+", metavar=("FILE", "ARGS"),
                      help="transfer the local script FILE to every host and run it there "
                           "with ARGS (the script module); put it after the pattern")
    out = parser.add_argument_group("output")
    out.add_argument("-o", "--one-line", action="store_true",
                     help="one line per host (as `ansible -o`)")
    out.add_argument("--failed-file", default=DEFAULT_FAILED_FILE, metavar="FILE",
                     help="write the names of the hosts that failed or were unreachable "
                          "there, one a line, for `-l @FILE` next time (default: %s in the "
                          "current directory; removed when every host succeeds; '' writes "
                          "none)" % DEFAULT_FAILED_FILE)
    out.add_argument("--retries", type=int, default=0, metavar="N",
                     help="run again, up to N times, on the hosts that could not be reached "
                          "(connection failures only: not a host whose connection was lost "
                          "while the module ran), after 1, 2, 4 ... %d s"
                          % MAX_BACKOFF)
    out.add_argument("--events", metavar="FILE",
                     help="also write every callback event as JSON lines to FILE")
    out.add_argument("-v", "--verbose", action="count", default=0, help="more output")
    parser.add_argument("--persist", "--persist=SECONDS", action="store_true",
                        help="run through ioc-run's per-user daemon, which keeps the "
                             "connections for SECONDS idle (default 60): the next run with "
                             "the same settings makes no ssh connection (docs/ioc-run.md); "
                             "the entry point takes it off the command line")
    parser.add_argument("--persist-stop", action="store_true",
                        help="end the --persist daemon and every runner it keeps, and exit")
    parser.add_argument("--list-hosts", action="store_true",
                        help="outputs a list of matching hosts; does not run anything else")
    parser.add_argument("-C", "--check", action="store_true", help="check mode: change nothing")
    parser.add_argument("-D", "--diff", action="store_true", help="show file differences")
    cli.add_access_options(parser)
    return parser


def task_of(args: argparse.Namespace) -> Dict[str, Any]:
    """The play's one task, as ``ansible``'s ``_play_ds`` builds it from ``-m``/``-a``
    (or from ``--push``, ``--pull``, ``--script``), ``?HOST`` made a template."""
    chosen = [name for name, value in (("-m/-a", args.module_name or args.module_args),
                                       ("--push", args.push), ("--pull", args.pull),
                                       ("--script", args.script)) if value]
    if len(chosen) > 1:
        raise IocError("%s: choose one" % " and ".join(chosen))
    if args.push:
        src, dest = args.push
        task: Dict[str, Any] = {"copy": {"src": os.path.abspath(os.path.expanduser(src)),
                                         "dest": dest}}
    elif args.pull:
        src, destdir = args.pull
        # fetch's flat mode with a directory dest: DESTDIR/<host>/<basename of SRC>
        directory = os.path.join(os.path.abspath(os.path.expanduser(destdir)),
                                 "{{ inventory_hostname }}", "")
        task = {"fetch": {"src": src, "dest": directory, "flat": True}}
    elif args.script:
        script = os.path.abspath(os.path.expanduser(args.script[0]))
        task = {"script": shlex.join([script] + list(args.script[1:]))}
    else:
        module = args.module_name or DEFAULT_MODULE
        raw = args.module_args or ""
        if short_name(module) in FREE_FORM and not raw:
            raise IocError("No argument passed to %s module" % module)
        value: Any = raw
        if raw.startswith("{") and raw.endswith("}"):
            try:
                value = json.loads(raw)
            except ValueError:
                value = raw
        task = {module: value if value != "" else None}
    return _placeholders(task)


def _placeholders(value: Any) -> Any:
    """``value`` with every ``?HOST`` replaced by ``{{ inventory_hostname }}``."""
    if isinstance(value, str):
        return value.replace(HOST_PLACEHOLDER, "{{ inventory_hostname }}")
    if isinstance(value, dict):
        return {k: _placeholders(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_placeholders(v) for v in value]
    return value


def short_name(action: str) -> str:
    """``ansible.builtin.command`` (or ``ansible.legacy.command``) is ``command``."""
    for prefix in ("ansible.builtin.", "ansible.legacy.", "ansible.windows."):
        if action.startswith(prefix):
            return action[len(prefix):]
    return action


@dataclass
class Outcome:
    """What became of one host: its status and result (the last attempt's)."""

    status: Status
    result: Dict[str, Any]

    @property
    def succeeded(self) -> bool:
        return self.status in (Status.OK, Status.SKIPPED)

    @property
    def unconnected(self) -> bool:
        """Unreachable without ever running anything: no connection was made (a
        connection lost under a running task is not retried: it may have run)."""
        return self.status is Status.UNREACHABLE and not self.result.get("_ioc_lost")


class PerHost(Callback):
    """One block per host as its result comes: ``ansible``'s ``minimal`` callback's
    (or with ``-o`` its ``oneline`` callback's) lines, coloured green (ok), yellow
    (ok, but the command wrote to stderr, or a module other than a command
    changed something) or red (failed, unreachable)."""

    def __init__(self, out: TextIO, color: bool, one_line: bool) -> None:
        self.out = out
        self.color = color
        self.one_line = one_line
        self.outcomes: Dict[str, Outcome] = {}

    def runner_result(self, host: str, task: TaskView, status: Status, result: Dict[str, Any],
                      ignored: bool = False) -> None:
        self.outcomes[host] = Outcome(status, result)
        for warning in result.get("warnings") or ():
            self.warning(str(warning))
        self._print(self.text(host, short_name(task.action), status, result),
                    self.color_of(short_name(task.action), status, result))

    def warning(self, message: str) -> None:
        print("[WARNING]: %s" % message, file=sys.stderr)

    @staticmethod
    def color_of(action: str, status: Status, result: Dict[str, Any]) -> str:
        if status in (Status.FAILED, Status.UNREACHABLE):
            return "bad"
        if result.get("stderr") or (result.get("changed") and action not in COMMAND_LIKE):
            return "warn"
        return "ok"

    def text(self, host: str, action: str, status: Status, result: Dict[str, Any]) -> str:
        if status is Status.SKIPPED:
            return "%s | SKIPPED" % host
        if status is Status.UNREACHABLE:
            if self.one_line:
                return "%s | UNREACHABLE!: %s" % (host, result.get("msg", ""))
            return "%s | UNREACHABLE! => %s" % (host, dump(result, 4))
        state = "FAILED" if status is Status.FAILED else (
            "CHANGED" if result.get("changed") else "SUCCESS")
        if action in COMMAND_LIKE and "module_stderr" not in result \
                and "ansible_job_id" not in result:
            return self._command(host, state, result)
        if status is Status.FAILED:
            state = "FAILED!"
        if self.one_line:
            return "%s | %s => %s" % (host, state, dump(result, 0).replace("\n", ""))
        return "%s | %s => %s" % (host, state, dump(result, 4))

    def _command(self, host: str, state: str, result: Dict[str, Any]) -> str:
        rc = result.get("rc", -1)
        stdout, stderr = str(result.get("stdout", "")), str(result.get("stderr", ""))
        if self.one_line:
            line = "%s | %s | rc=%s | (stdout) %s" % (host, state, rc, _flat(stdout))
            return line + (" (stderr) %s" % _flat(stderr) if stderr else "")
        parts = ["%s | %s | rc=%s >>" % (host, state, rc)]
        parts += [text for text in (stdout, stderr, str(result.get("msg", "") or ""))
                  if text]
        return "\n".join(parts)

    def _print(self, text: str, color: str) -> None:
        if self.color:
            text = "\n".join("\033[%sm%s\033[0m" % (_COLORS[color], line)
                             for line in text.split("\n"))
        self.out.write(text + "\n")
        self.out.flush()


def _flat(text: str) -> str:
    return text.replace("\n", "\\n").replace("\r", "\\r")


#: What ``ansible``'s callbacks leave out of a result they print as JSON (its
#: ``_dump_results`` and result cleaning, below ``-vvv``; as ioc-run's console).
NOT_DUMPED = frozenset({"failed", "skipped", "exception", "invocation", "diff", "warnings",
                        "deprecations"})


def dump(result: Dict[str, Any], indent: Optional[int]) -> str:
    """The result as ``ansible`` prints it: without its internal keys."""
    shown = {k: v for k, v in result.items()
             if not k.startswith("_ansible_") and not k.startswith("_ioc_")
             and k not in NOT_DUMPED}
    return json.dumps(shown, indent=indent, ensure_ascii=False, sort_keys=True, default=str)


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if cli.WARM is None and ("--persist-stop" in argv or any(
            a == "--persist" or a.startswith("--persist=") for a in argv)):
        # (ioc-adhoc and python -m ioc.adhoc start at ioc.warm.adhoc_main)
        print("[ERROR]: --persist and --persist-stop are ioc-adhoc's entry point's "
              "(ioc.warm.adhoc_main), not ioc.adhoc.main's", file=sys.stderr)
        return cli.EXIT_ERROR
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose >= 4 else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if not os.environ.get("IOC_MITOGEN_DEBUG"):
        logging.getLogger("mitogen").setLevel(logging.INFO)  # (see ioc.cli.main)
    try:
        return run(args)
    except IocError as exc:
        cli.report_error(exc)
        return exc.exit_code
    except KeyboardInterrupt:
        print("[ERROR]: User interrupted execution", file=sys.stderr)
        return 99


def run(args: argparse.Namespace) -> int:
    from ioc.ansible.config import (deprecated_reads, deprecation_warnings, read_settings,
                                    refuse_unsupported)
    from ioc.ansible.vault import open_vault
    from ioc.ansible.template_vars import template_vars

    settings = read_settings()
    refuse_unsupported(settings)
    cli.warn_unhonoured(settings)
    vault = open_vault(args.vault_ids, args.vault_password_files,
                       bool(settings.ask_vault_pass if args.ask_vault_pass is None
                            else args.ask_vault_pass),
                       identity_list=settings.vault_identity_list,
                       configured_files=settings.vault_password_files)
    loader.set_vault(vault.decrypt)
    # (!unsafe text and !vault values travel to the runner as such)
    loader.set_text_kinds(trust.UntrustedText, trust.VaultedText, trust.WrittenTemplate)
    extra = loader.parse_extra_vars(args.extra_vars)
    basedir = os.getcwd()
    sources = cli.inventory_sources(args, settings)
    inventory = cli.load_inventory(sources, basedir)
    hosts = inv.match_hosts(inventory, args.pattern, args.limit)
    if not hosts:
        if args.limit:
            cli.warn("Could not match supplied host pattern, ignoring: %s" % args.limit)
            print("[ERROR]: %s" % cli.NO_HOSTS, file=sys.stderr)
            return cli.EXIT_ERROR
        cli.warn("No hosts matched, nothing to do")
        return 0
    if args.list_hosts:
        print("  hosts (%d):" % len(hosts))
        for host in hosts:
            print("    %s" % host)
        return 0
    play = {"name": "Ansible Ad-Hoc", "hosts": args.pattern, "gather_facts": False,
            "tasks": [task_of(args)]}
    book = loader.load_playbook_data([play], os.path.join(basedir, "__adhoc_playbook__"),
                                     extra_vars=extra,
                                     defaults=cli.become_defaults(args, settings))
    attacher = cli.ansible_modules(args.verbose)
    book = attacher.playbook(book)
    connection_password, become_password = cli.ask_passwords(args, settings)
    options = RunOptions(check=args.check, diff=args.diff, verbosity=args.verbose,
                         forks=args.forks if args.forks is not None else settings.forks,
                         become_password=become_password,
                         connection_password=connection_password,
                         become_allow_same_user=settings.become_allow_same_user,
                         error_on_missing_handler=settings.error_on_missing_handler,
                         deprecated=deprecated_reads(),
                         deprecation_warnings=deprecation_warnings(),
                         allow_broken_conditionals=settings.allow_broken_conditionals,
                         connection_vars=cli.connection_vars(args, settings))
    color = sys.stdout.isatty() if settings.color is None else bool(settings.color)
    shown = PerHost(sys.stdout, color, args.one_line)
    events = open(args.events, "w") if args.events else None
    try:
        limit = args.limit
        for attempt in range(args.retries + 1):
            sinks: List[Callback] = [shown] + ([JsonEvents(events)] if events else [])
            playbook_run = PlaybookRun(book, inventory, extra, CallbackSet(sinks), options,
                                       limit=limit,
                                       reload_inventory=lambda: cli.load_inventory(sources,
                                                                                   basedir))
            playbook_run.modules = attacher.modules
            playbook_run.payload_cache.decrypt = vault.decrypt
            playbook_run.payload_cache.template_vars = template_vars
            if cli.WARM is not None:  # (in the --persist daemon: its connections)
                cli.WARM.attach(playbook_run)
            playbook_run.run()
            lost = [h for h in hosts if h in shown.outcomes and shown.outcomes[h].unconnected]
            if not lost or attempt == args.retries:
                break
            pause = min(FIRST_BACKOFF * 2 ** attempt, MAX_BACKOFF)
            print("retrying %d unreachable host%s in %gs (retry %d of %d): %s"
                  % (len(lost), "" if len(lost) == 1 else "s", pause, attempt + 1,
                     args.retries, ", ".join(lost)), file=sys.stderr)
            time.sleep(pause)
            limit = ",".join(lost)
    finally:
        if events is not None:
            events.close()
    return summarise(hosts, shown.outcomes, args.failed_file, sys.stdout)


def summarise(hosts: Sequence[str], outcomes: Dict[str, Outcome], failed_file: str,
              out: TextIO) -> int:
    """The closing lines, the failed-hosts file, and ``ansible``'s exit code.

    A host without a result (the run ended before it got one) counts as failed.
    """
    failed = [h for h in hosts if h not in outcomes or not outcomes[h].succeeded]
    out.write("%d succeeded, %d failed, %d total\n"
              % (len(hosts) - len(failed), len(failed), len(hosts)))
    if failed:
        out.write("failed: %s\n" % " ".join(failed))
    if failed_file:
        if failed:
            with open(failed_file, "w", encoding="utf-8") as stream:
                stream.write("".join("%s\n" % h for h in failed))
            out.write("(their names are in %s: -l @%s runs on them alone)\n"
                      % (failed_file, failed_file))
        elif os.path.exists(failed_file):
            os.remove(failed_file)  # a previous run's: no host failed this time
    out.flush()
    if any(outcomes.get(h) is not None and outcomes[h].status is Status.UNREACHABLE
           for h in failed):
        return EXIT_UNREACHABLE
    return EXIT_FAILED if failed else 0


if __name__ == "__main__":
    sys.exit(main())
