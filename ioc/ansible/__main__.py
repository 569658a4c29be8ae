"""``python -m ioc.ansible``: the ``mitogen_batch`` strategy's command line.

* ``--strategy-dir`` prints the directory to name in ``ansible.cfg``'s
  ``strategy_plugins``;
* ``--plan <ansible-playbook arguments>`` prints each play's plan — which
  tasks run in which batch, which run through Ansible and why — and runs
  nothing (:func:`print_plans`);
* ``--serve`` is the dispatcher subprocess the strategy starts
  (:mod:`ioc.ansible.dispatcher`; internal: the pipe protocol on
  stdin/stdout, ``--log`` for a debug log, which ``IOC_BRIDGE_LOG`` sets,
  ``--socket`` for the ``ioc_runner`` connection plugin's requests).

Only ``--plan`` imports ``ansible``.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Optional, Sequence

from ioc.ansible.version import check_ansible_version, strategy_dir


def print_plans(argv: Sequence[str]) -> int:
    """``--plan``: each play's plan for ansible-playbook's arguments; runs nothing."""
    check_ansible_version()
    from ansible import context
    from ansible.cli.playbook import PlaybookCLI
    from ansible.executor.play_iterator import PlayIterator
    from ansible.playbook import Playbook
    from ansible.playbook.play_context import PlayContext
    from ansible.plugins.loader import add_all_plugin_dirs, init_plugin_loader
    from ioc.ansible.convert import Fallback
    from ioc.ansible.play import plan_for
    from ioc.ansible.state import templar
    from ioc.ansible.values import plain

    cli = PlaybookCLI(["ansible-playbook", *argv])
    cli.parse()
    init_plugin_loader(list(context.CLIARGS.get("collections_path") or []))
    for path in context.CLIARGS["args"]:
        add_all_plugin_dirs(os.path.dirname(os.path.abspath(path)).encode())
    loader, inventory, vm = cli._play_prereqs()
    for path in context.CLIARGS["args"]:
        book = Playbook.load(path, variable_manager=vm, loader=loader)
        for play in book.get_plays():
            loader.set_basedir(play._included_path or book._basedir)
            all_vars = vm.get_vars(play=play)
            play.post_validate(templar(loader, all_vars))
            new_play = play.copy()
            new_play.post_validate(templar(loader, all_vars))
            new_play.handlers = new_play.compile_roles_handlers() + new_play.handlers
            iterator = PlayIterator(inventory=inventory, play=new_play,
                                    play_context=PlayContext(new_play, {}, None),
                                    variable_manager=vm, all_vars=all_vars, start_at_done=False)
            try:
                _, _, text = plan_for(iterator, loader)
            except Fallback as why:
                text = "PLAY [%s]: runs whole with the linear strategy: %s" % (
                    plain(new_play.get_name()), why)
            print(text)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ioc.ansible",
                                     description="The mitogen_batch Ansible strategy's helpers.")
    parser.add_argument("--strategy-dir", action="store_true",
                        help="print the directory to name in ansible.cfg's strategy_plugins")
    parser.add_argument("--serve", action="store_true",
                        help="run as the strategy's dispatcher (internal: pipes on stdin/stdout)")
    parser.add_argument("--log", help="with --serve: append a debug log to this file")
    parser.add_argument("--socket", help="with --serve: the unix socket to serve the "
                                         "ioc_runner connection plugin on")
    parser.add_argument("--plan", nargs=argparse.REMAINDER, metavar="ANSIBLE-PLAYBOOK-ARGS",
                        help="print each play's plan (which tasks run in which batch, which "
                             "run through Ansible and why) for these ansible-playbook "
                             "arguments; runs nothing")
    args = parser.parse_args(argv)
    if args.plan is not None:
        return print_plans(args.plan)
    if args.strategy_dir:
        print(strategy_dir())
        return 0
    if args.serve:
        from ioc.ansible.dispatcher import serve

        if args.log:
            logging.basicConfig(filename=args.log, level=logging.INFO,
                                format="%(asctime)s %(name)s %(levelname)s %(message)s")
        # The protocol owns the real stdout; a stray print goes to stderr instead.
        out = os.fdopen(os.dup(1), "wb")
        os.dup2(2, 1)
        serve(sys.stdin.buffer, out, args.socket)
        return 0
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
