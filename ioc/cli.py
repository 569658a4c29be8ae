"""``ioc-run``: run an Ansible-style playbook with inversion of control."""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import getpass
import json
import logging
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ioc import __version__, loader
from ioc import inventory as inv
from ioc.agentless_runner import trust
from ioc.callbacks import Callback, CallbackSet
from ioc.callbacks.console import Console
from ioc.callbacks.jsonevents import JsonEvents
from ioc.callbacks.progress import Progress
from ioc.controller.state import RunOptions
from ioc.controller.playbook import PlaybookRun, plan_playbook, warm_connector
from ioc.controller.stepping import Stepper
from ioc.errors import IocError
from ioc.model import Inventory, Playbook
from ioc.planner import TagFilter, explain
from ioc.planner.listing import listing
from ioc.planner.startat import start_at_task
from ioc.planner.render import plan_graph, plan_to_dot, plan_to_json

LOG = logging.getLogger("ioc")

#: In ``ioc-run --persist``'s daemon (``ioc.warmd``), during a run: what runs
#: keep (the connector, the files each runner holds); None in a plain run.
WARM: Optional[Any] = None

#: ansible-playbook's exit code for errors in the playbook or inventory.
EXIT_ERROR = 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ioc-run",
        description="Run an Ansible-style playbook in batches: one round trip per batch, "
                    "not one per task.")
    parser.add_argument("playbook", nargs="+",
                        help="playbook file(s) (YAML), run one after the other")
    parser.add_argument("-i", "--inventory", action="append", default=[],
                        help="inventory file or directory, or a comma-separated host list "
                             "(repeatable); default: ansible.cfg's inventory, else the "
                             "implicit localhost")
    parser.add_argument("-l", "--limit", help="further limit the hosts with a pattern")
    parser.add_argument("-e", "--extra-vars", action="append", default=[],
                        help="k=v pairs, YAML/JSON, or @file (repeatable)")
    parser.add_argument("-f", "--forks", type=int, default=None,
                        help="hosts to connect to at once (default: ansible.cfg's forks, 5)")
    add_access_options(parser)
    parser.add_argument("--list-hosts", action="store_true",
                        help="outputs a list of matching hosts; does not run anything else")
    parser.add_argument("--list-tasks", action="store_true",
                        help="list all tasks that would be executed")
    parser.add_argument("--list-tags", action="store_true", help="list all available tags")
    parser.add_argument("--syntax-check", action="store_true",
                        help="perform a syntax check on the playbook (and plan it), "
                             "but do not execute it")
    parser.add_argument("--step", action="store_true",
                        help="one-step-at-a-time: confirm each task before running")
    parser.add_argument("--start-at-task", help="start the playbook at the task matching this name")
    parser.add_argument("--force-handlers", action="store_true", default=None,
                        help="run handlers even if a task fails (default: ansible.cfg's "
                             "force_handlers)")
    parser.add_argument("--flush-cache", action="store_true",
                        help="accepted for ansible-playbook's command lines: ioc-run keeps no "
                             "fact cache between runs, so there is nothing to flush")
    parser.add_argument("-C", "--check", action="store_true", help="check mode: change nothing")
    parser.add_argument("-D", "--diff", action="store_true", help="show file differences")
    parser.add_argument("-t", "--tags", action="append", default=[],
                        help="only run tasks tagged with these values (comma-separated, repeatable)")
    parser.add_argument("--skip-tags", action="append", default=[],
                        help="skip tasks tagged with these values (comma-separated, repeatable)")
    parser.add_argument("--plan", action="store_true",
                        help="print the batches and why each ends; connect to nothing")
    parser.add_argument("--plan-format", choices=("text", "json", "dot"), default="text",
                        help="with --plan: text (default), json (a list, one entry per play) "
                             "or dot (one digraph per play)")
    parser.add_argument("--per-task", action="store_true",
                        help="one runner call per task (no batching), for comparison")
    parser.add_argument("--no-var-closure", action="store_true",
                        help="ship every host variable with every batch instead of only those "
                             "its tasks read (to measure what the closure saves)")
    parser.add_argument("--events", metavar="FILE",
                        help="also write every callback event as JSON lines to FILE")
    parser.add_argument("--persist", "--persist=SECONDS", action="store_true",
                        help="run through a per-user daemon that keeps the connections "
                             "(runners, become children, files sent) for SECONDS idle "
                             "(default 60), so the next run with the same settings "
                             "starts warm (docs/ioc-run.md); ioc-run's entry point "
                             "takes it off the command line")
    parser.add_argument("--persist-stop", action="store_true",
                        help="end the --persist daemon and every runner it keeps, and exit")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more output (repeatable)")
    parser.add_argument("--version", action=_Print, text=version_text,
                        help="show ioc-run's version, and mitogen's, ansible-core's and "
                             "Python's, and exit")
    parser.add_argument("--strategy-dir", action=_Print, text=strategy_dir_text,
                        help="print the directory to name in ansible.cfg's strategy_plugins "
                             "for the mitogen_batch strategy, and exit")
    return parser


class _Print(argparse.Action):
    """An option that prints ``text()`` and exits, as ``--version`` does (no playbook needed)."""

    def __init__(self, option_strings: Sequence[str], dest: str,
                 text: Callable[[], str], help: Optional[str] = None) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                         nargs=0, help=help)
        self.text = text

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: Optional[str] = None) -> None:
        print(self.text())
        parser.exit()


def add_access_options(parser: argparse.ArgumentParser) -> None:
    """How to reach the hosts: connection, become and vault options, as
    ``ansible-playbook`` names them (ioc-run's and ioc-adhoc's alike)."""
    conn = parser.add_argument_group("connection options (defaults from ansible.cfg, "
                                     "overridden by host variables, as in Ansible)")
    conn.add_argument("-u", "--user", dest="remote_user", help="connect as this user")
    conn.add_argument("-c", "--connection", help="connection type: ssh (smart, paramiko) or local")
    conn.add_argument("-T", "--timeout", type=int, help="SSH connection timeout in seconds")
    conn.add_argument("--private-key", "--key-file", dest="private_key_file",
                      help="use this file to authenticate the connection")
    conn.add_argument("-k", "--ask-pass", action="store_true", default=None,
                      help="ask for the SSH password (ansible_password wins where set)")
    conn.add_argument("--ssh-common-args", help="extra ssh arguments for every host")
    conn.add_argument("--ssh-extra-args", help="extra ssh arguments, after the common ones")
    priv = parser.add_argument_group("privilege escalation options")
    priv.add_argument("-b", "--become", action="store_true", default=None,
                      help="run operations with become (does not imply a password prompt)")
    priv.add_argument("--become-method", help="privilege escalation method: sudo or su")
    priv.add_argument("--become-user", help="run operations as this user (default root)")
    priv.add_argument("-K", "--ask-become-pass", action="store_true", default=None,
                      help="ask for the privilege escalation (become) password")
    vault = parser.add_argument_group("vault options")
    vault.add_argument("--vault-id", action="append", default=[], dest="vault_ids",
                       help="the vault identity to use (label@source, repeatable)")
    vault.add_argument("--vault-password-file", "--vault-pass-file", action="append", default=[],
                       dest="vault_password_files", help="vault password file (repeatable)")
    vault.add_argument("-J", "--ask-vault-password", "--ask-vault-pass", action="store_true",
                       default=None, dest="ask_vault_pass", help="ask for the vault password")

def _distribution_version(name: str) -> str:
    """The installed version of distribution ``name`` (read without importing it)."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def version_text() -> str:
    """``ioc-run --version``: ioc's version (the distribution's: pyproject.toml reads it
    from ``ioc.__version__``), where it runs from, and the versions of what it runs
    with, as ``ansible --version`` lists its own."""
    import ioc
    from ioc.ansible.version import strategy_dir

    return "\n".join([
        "ioc-run %s" % __version__,
        "  ioc python module location = %s" % os.path.dirname(os.path.abspath(ioc.__file__)),
        "  mitogen_batch strategy plugin dir = %s" % strategy_dir(),
        "  executable location = %s" % sys.argv[0],
        "  python version = %s (%s)" % (" ".join(sys.version.split()), sys.executable),
        "  mitogen version = %s" % _distribution_version("mitogen"),
        "  ansible-core version = %s" % _distribution_version("ansible-core"),
        "  jinja version = %s" % _distribution_version("jinja2"),
        "  pyyaml version = %s" % _distribution_version("PyYAML"),
    ])


def strategy_dir_text() -> str:
    """``ioc-run --strategy-dir``: where mitogen_batch.py is, in this install."""
    from ioc.ansible.version import strategy_dir

    return strategy_dir()


def load_inventory(sources: Sequence[str], playbook_dir: str) -> Inventory:
    """Inventory from ``-i`` sources (files, directories, ``h1,h2,`` lists).

    Without any, the implicit ``localhost`` on the local connection. Either
    way ``host_vars/`` and ``group_vars/`` beside the playbook apply.
    """
    if sources:
        inventory = loader.load_inventory(sources)
    else:
        inventory = loader.implicit_localhost_inventory()
    inventory = loader.add_vars_dirs(inventory, playbook_dir)
    return loader.ensure_localhost(inventory)


def new_names_vars(inventory: Inventory, names: Any, sources: Sequence[str],
                   playbook_dir: str) -> Inventory:
    """``host_vars/``/``group_vars/`` of hosts and groups that add_host or group_by
    created, from the same directories and in the same order as at load time."""
    for directory in loader.vars_dirs(sources) + [playbook_dir]:
        inventory = loader.add_vars_dirs(inventory, directory, only=names)
    return inventory


def inventory_sources(args: argparse.Namespace, settings: Any) -> List[str]:
    """``-i``, else ansible.cfg's ``inventory`` (Ansible's default ``/etc/ansible/hosts``
    when it exists); a configured source that does not exist is warned about and
    skipped, as ``ansible-playbook`` does."""
    if args.inventory:
        return list(args.inventory)
    out = []
    for source in settings.inventory:
        if os.path.exists(source) or ("," in source and not settings.inventory_default):
            out.append(source)
        elif not settings.inventory_default:
            warn("Unable to parse %s as an inventory source" % source)
    return out


def connection_vars(args: argparse.Namespace, settings: Any) -> Dict[str, Any]:
    """The ``ansible_*`` variables the command line and ansible.cfg default (host
    variables override them, as they override ``-u``, ``-c``, ... in Ansible)."""
    pairs = {
        "ansible_user": args.remote_user or settings.remote_user,
        "ansible_connection": args.connection or settings.connection,
        "ansible_timeout": args.timeout if args.timeout is not None else settings.timeout,
        "ansible_ssh_retries": settings.retries,
        "ansible_ssh_private_key_file": args.private_key_file or settings.private_key_file,
        "ansible_ssh_args": settings.ssh_args,
        "ansible_ssh_common_args": args.ssh_common_args or settings.ssh_common_args,
        "ansible_ssh_extra_args": args.ssh_extra_args or settings.ssh_extra_args,
    }
    out = {k: v for k, v in pairs.items() if v not in (None, "")}
    if not settings.host_key_checking:
        out["ansible_host_key_checking"] = False
    if settings.pipelining:
        out["ansible_pipelining"] = True
    return out


def become_defaults(args: argparse.Namespace, settings: Any) -> Dict[str, Any]:
    """``-b``, ``--become-user``, ``--become-method`` (and ansible.cfg's become settings):
    the defaults of the ``become*`` keywords, which plays, blocks and tasks override."""
    pairs = {
        "become": True if (args.become or settings.become) else None,
        "become_user": args.become_user or settings.become_user,
        "become_method": args.become_method or settings.become_method,
        "become_flags": settings.become_flags,
        "become_exe": settings.become_exe,
    }
    return {k: v for k, v in pairs.items() if v is not None}


def warn(text: str) -> None:
    print("[WARNING]: %s" % text, file=sys.stderr)


def warn_unhonoured(settings: Any) -> None:
    """One warning naming every set Ansible setting ioc-run does not honour."""
    if settings.unhonoured:
        warn("ioc-run does not honour these Ansible settings, which are set; they have no "
             "effect here (docs/ioc-run.md lists those it honours): %s"
             % "; ".join("%s from %s" % pair for pair in settings.unhonoured))


def ask_secret(prompt: str) -> str:
    """A password from the terminal (not echoed), or the first line of stdin without one."""
    if sys.stdin.isatty():
        return getpass.getpass(prompt)
    sys.stderr.write(prompt)
    sys.stderr.flush()
    return sys.stdin.readline().rstrip("\r\n")


def ask_passwords(args: argparse.Namespace, settings: Any) -> Tuple[Optional[str], Optional[str]]:
    """``-k`` and ``-K`` as ansible-playbook asks them: the SSH password first, then
    the become password, which defaults to the SSH password when left empty."""
    ask_ssh = settings.ask_pass if args.ask_pass is None else args.ask_pass
    ask_become = settings.become_ask_pass if args.ask_become_pass is None else args.ask_become_pass
    ssh = ask_secret("SSH password: ") if ask_ssh else None
    become = None
    if ask_become:
        become = ask_secret("BECOME password[defaults to SSH password]: " if ask_ssh
                            else "BECOME password: ")
        if ask_ssh and become == "":
            become = ssh
    return ssh or None, become


def print_plans(planned_plays: Sequence[Any], form: str) -> None:
    """``--plan``: every play's plan as text, JSON or DOT, on stdout."""
    if form == "text":
        for planned in planned_plays:
            print(explain(planned.plan))
        return
    graphs = [(p.plan, plan_graph(p.plan)) for p in planned_plays]
    if form == "json":
        print(json.dumps([plan_to_json(plan, graph) for plan, graph in graphs],
                         indent=2, sort_keys=True))
    else:
        sys.stdout.write("".join(plan_to_dot(plan, graph) for plan, graph in graphs))


def ansible_modules(verbosity: int) -> Any:
    """Ansible's module library: every module a task names that ioc does not run itself.

    A task whose module ioc does not implement (or whose options ioc's
    module lacks) runs Ansible's own module on the target, and facts are
    gathered by Ansible's ``setup``: ansible-core is a dependency of ioc.
    """
    from ioc.ansible.modules import attacher_for_ioc_run
    from ioc.controller.capabilities import runner_capabilities

    caps = runner_capabilities()
    attacher = attacher_for_ioc_run(caps.actions, caps.options, verbosity)
    install_ansible_plugins()
    return attacher


class _IncludeLoads(Callback):
    """What Ansible displays loading an included file (a deprecated module's
    routing), shown when the include is first reached, as linear loads the
    file then: never for an include no host reaches (an other-OS branch)."""

    def __init__(self, attacher: Any) -> None:
        self.attacher = attacher

    def playbook_on_include(self, included: str, hosts: Sequence[str],
                            item: Optional[Any] = None) -> None:
        self.attacher.loaded(included)


def install_ansible_plugins() -> None:
    """Filters, tests and lookups ioc does not have run as Ansible's own plugins,
    answered by this process (``ioc.controller.plugins``)."""
    from ioc.ansible import plugins

    plugins.install()


def include_loader(attacher: Any, search: Any = None) -> Callable[..., Any]:
    """``loader.load_include``, marking what it loads as the playbook was marked."""
    def load(play: Any, task: Any, args: Any, extra_vars: Any) -> Any:
        included = loader.load_include(play, task, args, extra_vars, search=search)
        return dataclasses.replace(included, nodes=attacher.nodes(included.nodes),
                                   handlers=attacher.nodes(included.handlers))
    return load


#: ansible-playbook's error when ``--limit`` (with the inventory) leaves no host.
NO_HOSTS = "Specified inventory, host pattern and/or --limit leaves us with no hosts to target."


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if WARM is None and ("--persist-stop" in argv or any(
            a == "--persist" or a.startswith("--persist=") for a in argv)):
        # (ioc-run and python -m ioc start at ioc.warm.main, which talks to the
        # daemon; this runs plays in the daemon, or in this process without one)
        print("[ERROR]: --persist and --persist-stop are ioc-run's (ioc.warm.main), "
              "not ioc.cli.main's", file=sys.stderr)
        return EXIT_ERROR
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose >= 4 else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if not os.environ.get("IOC_MITOGEN_DEBUG"):
        # mitogen's DEBUG log prints every call whole: a batch's variables,
        # no_log arguments, become passwords. -vvvv shows ioc's own debug log
        # only; IOC_MITOGEN_DEBUG=1 adds mitogen's (secrets included).
        logging.getLogger("mitogen").setLevel(logging.INFO)
    try:
        return run(args)
    except IocError as exc:
        report_error(exc)
        return exc.exit_code
    except KeyboardInterrupt:
        print("[ERROR]: User interrupted execution", file=sys.stderr)
        return 99


def report_error(exc: IocError) -> None:
    """``exc`` as ansible-playbook prints an error that ends the run (message,
    ``Origin:``, excerpt, on stderr), by ansible-core's own code; without
    ansible-core (the error may say it is missing), its message and origin."""
    try:
        from ioc.ansible.errors import display_error

        display_error(exc)
    except ImportError:
        where = "\nOrigin: %s\n" % exc.location.origin if exc.location is not None else ""
        print("[ERROR]: %s%s" % (exc.message, where), file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """One ``ioc-run``: settings, vault, playbooks, then a listing, a check or the run."""
    from ioc.ansible.config import read_settings, refuse_unsupported, role_search
    from ioc.ansible.vault import open_vault

    settings = read_settings()
    refuse_unsupported(settings)
    if args.verbose:  # (as ansible-playbook's first line at -v)
        print("Using %s as config file" % settings.config_file if settings.config_file
              else "No config file found; using defaults", flush=True)
    warn_unhonoured(settings)
    listing_only = args.list_hosts or args.list_tasks or args.list_tags or args.syntax_check
    vault = open_vault(args.vault_ids, args.vault_password_files,
                       bool(settings.ask_vault_pass if args.ask_vault_pass is None
                            else args.ask_vault_pass),
                       identity_list=settings.vault_identity_list,
                       configured_files=settings.vault_password_files)
    loader.set_vault(vault.decrypt)
    # (!unsafe text and !vault values travel to the runner as such)
    loader.set_text_kinds(trust.UntrustedText, trust.VaultedText, trust.WrittenTemplate)
    extra = loader.parse_extra_vars(args.extra_vars)
    search = role_search(settings, args.playbook)
    books = [loader.load_playbook(path, extra_vars=extra, search=search,
                                  gather_default=settings.gathering != "explicit",
                                  defaults=become_defaults(args, settings),
                                  force_handlers=bool(settings.force_handlers
                                                      if args.force_handlers is None
                                                      else args.force_handlers))
             for path in args.playbook]
    playbook_dir = os.path.dirname(os.path.abspath(args.playbook[0]))
    sources = inventory_sources(args, settings)
    # (as ansible-playbook, the inventory is read before the modules are
    # resolved; --plan and --syntax-check read none)
    inventory = None if args.plan or args.syntax_check else load_inventory(sources, playbook_dir)
    with contextlib.ExitStack() as warming:
        if inventory is not None and not listing_only:
            early = warm_up(books[0], inventory, extra, args, settings)
            if early is not None:
                warming.callback(early.shutdown)  # (unless the run takes it over)
        else:
            early = None
        return _resolve_and_run(args, settings, books, extra, inventory, sources, playbook_dir,
                                vault, search, listing_only, early, warming)


def warm_up(book: Playbook, inventory: Inventory, extra: Dict[str, Any],
            args: argparse.Namespace, settings: Any) -> Any:
    """Start connecting the first play's first hosts now, so that ssh and the
    runner's bootstrap (about ten round trips) run while Ansible's module
    library is imported and the playbook resolved and planned, not after.

    The warm-up is the first step's own attempt (a failure is reported there,
    as that step's: :meth:`ioc.transport.connector.Connector.warm`, binding);
    a host whose first connection comes later, after other work, connects
    afresh then. Not when a password is asked for (``-k``: later, as now),
    nor for a warm daemon's run (``--persist``: connected already).
    """
    if WARM is not None or (settings.ask_pass if args.ask_pass is None else args.ask_pass) \
            or not book.plays:
        return None
    first = book.plays[0]
    bare = dataclasses.replace(book, plays=(dataclasses.replace(
        first, gather_facts=False, pre_tasks=(), tasks=(), post_tasks=(), handlers=()),))
    probe = PlaybookRun(bare, inventory, extra, CallbackSet([]),
                        RunOptions(connection_vars=connection_vars(args, settings)),
                        limit=args.limit)
    return warm_connector(probe.first_contacts(),
                          args.forks if args.forks is not None else settings.forks)


def _resolve_and_run(args: argparse.Namespace, settings: Any, books: List[Playbook],
                     extra: Dict[str, Any], inventory: Optional[Inventory],
                     sources: Sequence[str], playbook_dir: str, vault: Any, search: Any,
                     listing_only: bool, early: Any,
                     warming: contextlib.ExitStack) -> int:
    """The rest of :func:`run`, once the first hosts are being connected."""
    from ioc.ansible.config import deprecated_reads, deprecation_warnings
    from ioc.ansible.prompt import ask_var
    from ioc.ansible.template_vars import template_vars

    attacher = ansible_modules(args.verbose)
    books = [attacher.playbook(book) for book in books]
    tags = TagFilter.parse(args.tags, args.skip_tags)
    if args.plan:
        print_plans([p for book in books for p in plan_playbook(book, per_task=args.per_task,
                                                                tags=tags)], args.plan_format)
        return 0
    found = True
    if args.start_at_task:
        books, found = start_at(books, args.start_at_task)
    if args.syntax_check:
        for book in books:
            plan_playbook(book, per_task=args.per_task, tags=tags)
            print("\nplaybook: %s" % book.path)
        return 0
    assert inventory is not None
    refuse_facts_modules(books, inventory, extra)
    if args.limit and not inventory.implicit_localhost and not inv.match_hosts(
            inventory, "all", args.limit):
        warn("Could not match supplied host pattern, ignoring: %s" % args.limit)
        print("[ERROR]: %s" % NO_HOSTS, file=sys.stderr)
        return EXIT_ERROR
    if listing_only:
        list_tags = TagFilter.parse(["never", "all"]) if args.list_tags and not (
            args.tags or args.skip_tags) else tags
        hosts_of = (lambda pattern: inv.match_hosts(inventory, pattern, args.limit)) \
            if args.list_hosts else None
        for book in books:
            print(listing(book, hosts_of, list_tags, args.list_tasks, args.list_tags), end="")
        return 0
    connection_password, become_password = ask_passwords(args, settings)
    from ioc.ansible.errors import error_chain_text, source_context, task_error_text

    console = Console(verbosity=args.verbose, color=settings.color, source_context=source_context,
                      task_error=task_error_text, error_chain=error_chain_text)
    # (what loading an included file displays comes before its ``included:`` line)
    sinks: List[Callback] = [_IncludeLoads(attacher), console]
    playbook = books[0] if len(books) == 1 else dataclasses.replace(
        books[0], plays=tuple(p for book in books for p in book.plays))
    ends = set()
    count = 0
    for book in books:
        count += len(book.plays)
        ends.add(count - 1)
    with contextlib.ExitStack() as stack:
        if args.events:
            sinks.append(JsonEvents(stack.enter_context(open(args.events, "w"))))
        playbook_run = PlaybookRun(
            playbook, inventory, extra, CallbackSet(sinks),
            RunOptions(check=args.check, diff=args.diff, verbosity=args.verbose,
                       forks=args.forks if args.forks is not None else settings.forks,
                       closure=not args.no_var_closure, become_password=become_password,
                       connection_password=connection_password,
                       become_allow_same_user=settings.become_allow_same_user,
                       error_on_missing_handler=settings.error_on_missing_handler,
                       deprecated=deprecated_reads(),
                       deprecation_warnings=deprecation_warnings(),
                       allow_broken_conditionals=settings.allow_broken_conditionals,
                       connection_vars=connection_vars(args, settings),
                       magic=options_magic(settings, sources,
                                           args.forks if args.forks is not None
                                           else settings.forks)),
            limit=args.limit, per_task=args.per_task, tags=tags,
            reload_inventory=lambda: load_inventory(sources, playbook_dir),
            new_names_vars=lambda inventory, names: new_names_vars(
                inventory, names, sources, playbook_dir),
            load_include=include_loader(attacher, search))
        playbook_run.modules = attacher.modules
        playbook_run.ask_var = ask_var
        playbook_run.stepper = Stepper(console.banner) if args.step else None
        playbook_run.payload_cache.decrypt = vault.decrypt
        playbook_run.payload_cache.template_vars = template_vars
        if sys.stdout.isatty() and not args.step and args.verbose < 4 \
                and os.environ.get("IOC_PROGRESS", "1") != "0":
            # (--step asks on the terminal; -vvvv's log lines go there unannounced)
            progress = console.progress = playbook_run.progress = Progress(sys.stdout)
            stack.callback(progress.close)
            for handler in logging.getLogger().handlers:  # (warnings on stderr)
                handler.addFilter(progress)
                stack.callback(handler.removeFilter, progress)
        playbook_run.playbook_ends = frozenset(ends) if len(books) > 1 else frozenset()
        if WARM is not None:
            WARM.attach(playbook_run)
        if early is not None:  # (the run ends it now)
            playbook_run.warmed = early
            warming.pop_all()
        code = playbook_run.run()
    if not found:
        print("[ERROR]: No matching task \"%s\" found. Note: --start-at-task can only follow "
              "static includes." % args.start_at_task, file=sys.stderr)
    return code


def options_magic(settings: Any, sources: Sequence[str], forks: int) -> Dict[str, Any]:
    """The magic variables ansible-playbook sets from itself and its options
    (``VariableManager._get_magic_variables``, ``load_options_vars``):
    ``ansible_playbook_python`` (ioc-run's Python), ``ansible_config_file``,
    ``ansible_forks``, ``ansible_inventory_sources`` (paths made absolute, a
    host list as written) and, when ansible-core is installed,
    ``ansible_version`` as its ``CLI.version_info`` gives it."""
    out: Dict[str, Any] = {
        "ansible_playbook_python": sys.executable,
        "ansible_config_file": settings.config_file,
        "ansible_forks": forks,
        "ansible_inventory_sources": [
            source if "," in source and not os.path.exists(source)
            else os.path.abspath(os.path.expanduser(source))
            for source in (sources or settings.inventory)],
    }
    from ioc.ansible.config import ansible_version

    version = ansible_version()
    if version is not None:  # (ioc-run without ansible-core: no version to give)
        out["ansible_version"] = version
    return out


def refuse_facts_modules(books: List[Playbook], inventory: Any, extra: Dict[str, Any]) -> None:
    """Refuse, before anything runs, a play that gathers facts where a variable
    names the modules to gather them with (``ansible_facts_modules``, the
    variable of ``FACTS_MODULES``; ``ansible_network_os``, whose facts module
    ``smart`` picks): ioc-run gathers with ``setup`` only, and would give the
    play other facts than Ansible's."""
    for name in ("ansible_facts_modules", "ansible_network_os"):
        _refuse_facts_chooser(name, books, inventory, extra)


def _refuse_facts_chooser(name: str, books: List[Playbook], inventory: Any,
                          extra: Dict[str, Any]) -> None:
    where = ""
    if name in extra:
        where = "an extra variable"
    else:
        found = next((h for h in inventory.hosts if name in inv.host_vars(inventory, h)), None)
        if found is not None:
            where = "the inventory (host %s)" % found
    for book in books:
        for play in book.plays:
            if not play.gather_facts:
                continue
            here = where or ("the play's vars" if name in play.vars else
                             "the play's vars_files" if name in play.vars_files else "")
            if here:
                raise IocError("%s is set in %s: ioc-run gathers facts with setup only "
                               "(FACTS_MODULES smart on a host that is no network OS); run this playbook with ansible-playbook "
                               "(the mitogen_batch strategy gathers with those modules), or set "
                               "gather_facts: false and run the modules as tasks"
                               % (name, here), play.location)


def start_at(books: List[Playbook], name: str) -> Tuple[List[Playbook], bool]:
    """``--start-at-task`` over several playbooks: later ones run whole once one matched."""
    out: List[Playbook] = []
    found = False
    for book in books:
        if not found:
            book, found = start_at_task(book, name)
        out.append(book)
    return out, found


if __name__ == "__main__":
    sys.exit(main())
