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
from typing import Any, Callable, List, Optional, Sequence

from ioc import __version__, loader
from ioc.callbacks import Callback, CallbackSet
from ioc.callbacks.console import Console
from ioc.callbacks.jsonevents import JsonEvents
from ioc.controller.state import RunOptions
from ioc.controller.playbook import PlaybookRun, plan_playbook
from ioc.errors import IocError, LoadError, PlanError
from ioc.model import Inventory
from ioc.planner import TagFilter, explain
from ioc.planner.render import plan_graph, plan_to_dot, plan_to_json

LOG = logging.getLogger("ioc")

#: ansible-playbook's exit code for errors in the playbook or inventory.
EXIT_PARSE_ERROR = 4
EXIT_ERROR = 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ioc-run",
        description="Run an Ansible-style playbook in batches: one round trip per batch, "
                    "not one per task.")
    parser.add_argument("playbook", help="playbook file (YAML)")
    parser.add_argument("-i", "--inventory", action="append", default=[],
                        help="inventory file or directory, or a comma-separated host list "
                             "(repeatable); default: the implicit localhost")
    parser.add_argument("-l", "--limit", help="further limit the hosts with a pattern")
    parser.add_argument("-e", "--extra-vars", action="append", default=[],
                        help="k=v pairs, YAML/JSON, or @file (repeatable)")
    parser.add_argument("-f", "--forks", type=int, default=5,
                        help="hosts to connect to at once (default 5)")
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
    parser.add_argument("-K", "--ask-become-pass", action="store_true",
                        help="ask for the privilege escalation (become) password")
    parser.add_argument("--events", metavar="FILE",
                        help="also write every callback event as JSON lines to FILE")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more output (repeatable)")
    parser.add_argument("--version", action="version", version="ioc-run %s" % __version__)
    return parser


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


def ask_secret(prompt: str) -> str:
    """A password from the terminal (not echoed), or the first line of stdin without one."""
    if sys.stdin.isatty():
        return getpass.getpass(prompt)
    sys.stderr.write(prompt)
    sys.stderr.flush()
    return sys.stdin.readline().rstrip("\r\n")


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


def install_ansible_plugins() -> None:
    """Filters, tests and lookups ioc does not have run as Ansible's own plugins,
    answered by this process (``ioc.controller.plugins``)."""
    from ioc.ansible import plugins

    plugins.install()


def include_loader(attacher: Any) -> Callable[..., Any]:
    """``loader.load_include``, marking what it loads as the playbook was marked."""
    def load(play: Any, task: Any, args: Any, extra_vars: Any) -> Any:
        included = loader.load_include(play, task, args, extra_vars)
        return dataclasses.replace(included, nodes=attacher.nodes(included.nodes),
                                   handlers=attacher.nodes(included.handlers))
    return load


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose >= 4 else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        extra = loader.parse_extra_vars(args.extra_vars)
        playbook = loader.load_playbook(args.playbook, extra_vars=extra)
        attacher = ansible_modules(args.verbose)
        playbook = attacher.playbook(playbook)
        tags = TagFilter.parse(args.tags, args.skip_tags)
        if args.plan:
            print_plans(plan_playbook(playbook, per_task=args.per_task, tags=tags), args.plan_format)
            return 0
        playbook_dir = os.path.dirname(os.path.abspath(args.playbook))
        inventory = load_inventory(args.inventory, playbook_dir)
        become_password = ask_secret("BECOME password: ") if args.ask_become_pass else None
        sinks: List[Callback] = [Console(verbosity=args.verbose)]
        with contextlib.ExitStack() as stack:
            if args.events:
                sinks.append(JsonEvents(stack.enter_context(open(args.events, "w"))))
            run = PlaybookRun(playbook, inventory, extra, CallbackSet(sinks),
                              RunOptions(check=args.check, diff=args.diff, forks=args.forks,
                                         closure=not args.no_var_closure,
                                         become_password=become_password),
                              limit=args.limit, per_task=args.per_task, tags=tags,
                              reload_inventory=lambda: load_inventory(args.inventory, playbook_dir),
                              load_include=include_loader(attacher))
            run.modules = attacher.modules
            return run.run()
    except (LoadError, PlanError) as exc:
        print("ERROR! %s" % exc, file=sys.stderr)
        return EXIT_PARSE_ERROR
    except IocError as exc:
        print("ERROR! %s" % exc, file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("ERROR! User interrupted execution", file=sys.stderr)
        return 99


if __name__ == "__main__":
    sys.exit(main())
