"""The ``mitogen_batch`` strategy: Ansible's linear strategy, one round trip per batch.

``StrategyModule`` (built on first access, so that importing this module
does not import ``ansible``; the version gate runs then) subclasses Ansible's
``linear`` strategy. For each play it:

1. converts and plans the play (:func:`ioc.ansible.play.plan_for`); a play
   that needs linear as a whole (a :class:`~ioc.ansible.convert.Fallback`,
   ``--step``, the task debugger) runs through the inherited ``run``;
2. sends it to the dispatcher subprocess (:class:`~ioc.ansible.pipe.Dispatcher`)
   and answers what the dispatcher tells and asks (:meth:`PlayRun.run`):
   events go to :class:`~ioc.ansible.events.EventReplay`, tasks and handlers
   that leave the batch to :class:`~ioc.ansible.ansible_tasks.AnsibleTasks`,
   dynamic includes to :class:`~ioc.ansible.includes.Includes`, requests for
   host variables to :class:`~ioc.ansible.hostvars.HostVarsExport`;
3. settles Ansible's own state from the dispatcher's summary
   (:meth:`PlayRun.finish`): failed and unreachable hosts, hosts done, the
   play ended, ``max_fail_percentage``; ``StrategyBase.run`` does the rest
   (the exit code, as linear's ``run`` would).
"""
from __future__ import annotations

import os
import sys
from typing import Any, Dict, List, Optional

from ioc.ansible.ansible_tasks import AnsibleTasks
from ioc.ansible.convert import FACTS_CHOOSERS, Fallback
from ioc.ansible.events import EventReplay
from ioc.ansible.hostvars import HostVarsExport
from ioc.ansible.includes import Includes
from ioc.ansible.pipe import Dispatcher, bridge_log
from ioc.ansible import routing
from ioc.ansible.play import foreign_steps, plan_for
from ioc.ansible.state import PlayState
from ioc.ansible.template_vars import template_vars
from ioc.ansible.values import plain, tagged
from ioc.ansible.version import check_ansible_version
from ioc.transport.spec import early_connections, transport_of


def build_strategy_class() -> type:
    """``StrategyModule``, after the version gate (imports ``ansible``)."""
    check_ansible_version()
    from ansible.plugins.loader import connection_loader
    from ansible.plugins.strategy import StrategyBase
    from ansible.plugins.strategy.linear import StrategyModule as LinearStrategy
    from ansible.utils.display import Display

    display = Display()
    # ioc_runner: tasks run through Ansible reach their hosts over ioc's runners.
    connection_loader.add_directory(routing.plugin_dir())

    class StrategyModule(LinearStrategy):
        """``strategy = mitogen_batch``: linear results, one round trip per batch."""

        def run(self, iterator, play_context):  # type: ignore[override]
            self._set_hosts_cache(iterator._play)
            _start_dispatcher()
            fallback: Optional[Fallback] = None
            play_run = None
            try:
                native = self._prepare(iterator, play_context)
                play_run = PlayRun(self, iterator, play_context, native)
                if play_run.state.hosts:
                    play_run.prepare()
            except Fallback as exc:
                fallback = exc
            if fallback is not None:
                # Linear runs outside the except clause: an error it raises
                # would otherwise have the Fallback as its context, and
                # Ansible's error chain would show it ("<<< caused by >>>",
                # a chained cause not collapsed into its parent's message).
                display.vv("mitogen_batch: play %r runs with the linear strategy: %s"
                           % (iterator._play.get_name(), fallback))
                log = bridge_log()
                if log:  # beside the plans of the native plays
                    with open(log, "a") as stream:
                        stream.write("PLAY [%s]: runs whole with the linear strategy: %s\n"
                                     % (plain(iterator._play.get_name()), fallback))
                return super().run(iterator, play_context)
            assert play_run is not None
            if not play_run.state.hosts:  # nothing to run: linear's own bookkeeping
                return super().run(iterator, play_context)
            return StrategyBase.run(self, iterator, play_context, play_run.run())

        def _prepare(self, iterator, play_context):
            if self._step or getattr(self, "debugger_active", False):
                raise Fallback("--step and the task debugger need the linear strategy")
            foreign_connection = _foreign_connection(self, iterator._play)
            if foreign_connection is not None:
                raise Fallback(foreign_connection)
            if _started_at_task(self._tqm, iterator):
                raise Fallback("--start-at-task: Ansible's iterator starts this play at the "
                               "task, or past its last one when none matches")
            if early_connections():
                _warm_up(self, iterator, play_context)
            converted, planned, text = plan_for(iterator, self._loader)
            foreign = foreign_steps(planned.plan)
            flushes = [step for step in foreign if step.handlers]
            points = [point for step in planned.plan.steps
                      for point in getattr(step, "suspend", ())
                      if point[0] not in getattr(step, "delegated", ())]
            display.vv("mitogen_batch: play %r runs in %d step(s), %d task(s) through Ansible%s%s"
                       % (converted.play.name, len(planned.plan.steps),
                          len(foreign) - len(flushes),
                          ", %d flush(es) with handlers through Ansible" % len(flushes)
                          if flushes else "",
                          ", %d more inside batches, for the hosts that reach them"
                          % len(points) if points else ""))
            for step in foreign:
                if step.handlers:  # a flush whose foreign handlers run through Ansible
                    display.vv("mitogen_batch: flush %d %s" % (step.index, step.reason))
                else:
                    display.vv("mitogen_batch: task %d %s" % (step.index, step.reason))
            for index, why in points:
                display.vv("mitogen_batch: task %d (in its batch) %s" % (index, why))
            display.vvv(text)
            log = bridge_log()
            if log:  # the plan beside the dispatcher's log of the steps it runs
                with open(log, "a") as stream:
                    stream.write(text + "\n")
            return converted, planned

    StrategyModule.__module__ = __name__
    return StrategyModule


def _start_dispatcher() -> None:
    """Start the dispatcher before the play is planned, so that its
    interpreter starts and imports ioc while the parent converts the play
    and builds its modules' payloads (the first play's ~0.3-1 s, more on a
    loaded machine, no longer before its first task). A play that then runs
    under linear leaves it idle; it ends with ``ansible-playbook``. An
    ``IOC_PERSIST`` daemon that cannot be used is reported by
    :meth:`PlayRun.run`, which asks again."""
    from ioc.warm import WarmError

    try:
        Dispatcher.get()
    except WarmError:
        pass


def _warm_up(strategy: Any, iterator: Any, play_context: Any) -> None:
    """Have the dispatcher start connecting the hosts this play (this serial
    batch) runs on before the play is planned: ssh and the runner's bootstrap
    (~10 round trips) then run while the parent converts the play and builds
    its modules' payloads, not after. Only a warm-up: a host that cannot be
    reached is reported by the play, at its first task that connects, as
    before (:meth:`ioc.transport.connector.Connector.warm`).

    The attempt is the play's first step's own when that step connects its
    hosts as it starts (binding): a host whose first attempt fails is
    UNREACHABLE there, after as many attempts as linear makes
    (``test_a_refused_first_connection_is_retried_with_ansible_ssh_retries``);
    a host first needed after other work connects afresh. A play that then
    falls back to linear makes linear's own attempt besides.
    ``IOC_EARLY_CONNECT=0`` turns it off."""
    from ansible import context
    from ioc.ansible.play import connection_layers
    from ioc.warm import WarmError

    hosts = [h for h in strategy.get_hosts_left(iterator) if not iterator.is_failed(h)]
    if not hosts:
        return
    try:
        layers = connection_layers(strategy, iterator, play_context, hosts)
    except Exception as exc:  # (planning meets it again, and says it where linear would)
        from ansible.utils.display import Display
        Display().vvv("mitogen_batch: no early connections: %s" % exc)
        return
    try:
        dispatcher = Dispatcher.get()
    except WarmError:
        return  # (PlayRun.run reports it)
    dispatcher.request({"op": "connect", "hosts": layers,
                        "forks": int(context.CLIARGS.get("forks") or 5),
                        "password": plain(play_context.password) or None})


def _started_at_task(tqm: Any, iterator: Any) -> bool:
    """Whether ``--start-at-task`` acts on this play: until a play has matched
    (the TQM's ``_start_at_done``, set before the strategy runs the play that
    matches), Ansible's ``PlayIterator`` walks each host's tasks up to the
    first that matches (``did_start_at_task``; fact gathering still runs) or,
    where none does, past the last one (the play runs nothing, not even fact
    gathering). ioc's plan starts at the play's first task: such a play is
    linear's to run."""
    from ansible import context

    if not context.CLIARGS.get("start_at_task"):
        return False
    if not tqm._start_at_done:
        return True  # no match in this play (nor before): every host is done already
    return any(getattr(state, "did_start_at_task", False)
               for state in iterator._host_states.values())


def decrypted(loader: Any, path: str) -> Dict[str, Any]:
    """A vault-encrypted file's plaintext, read by Ansible's loader with the run's
    secrets (``content``), or Ansible's message (``error``); never logged."""
    from ansible.errors import AnsibleError

    try:
        real = loader.get_real_file(path, decrypt=True)
    except AnsibleError as exc:
        return {"error": str(getattr(exc, "message", exc))}
    try:
        with open(real, "rb") as handle:
            return {"content": handle.read()}
    finally:
        loader.cleanup_tmp_file(real)


class PlayRun:
    """One native play: request the dispatcher, answer it, settle Ansible's state."""

    def __init__(self, strategy: Any, iterator: Any, play_context: Any, native: Any) -> None:
        self.state = PlayState(strategy, iterator, play_context, native)
        self.hostvars = HostVarsExport(self.state)
        self._request: Optional[Dict[str, Any]] = None
        self.includes = Includes(self.state)
        self.events = EventReplay(self.state)
        self.tasks = AnsibleTasks(self.state, self.hostvars)

    def prepare(self) -> None:
        """Make the dispatcher's request now, while the play may still run
        under linear instead: an inventory variable (``group_vars``,
        ``host_vars``) holding a vault value no secret given decrypts makes
        the play linear's (:class:`Fallback`), as in :func:`play_to_ir` for
        the play's own layers: Ansible decrypts a value only where a task
        uses it, and the inventory layer travels as plain values."""
        from ansible.parsing.vault import AnsibleVaultError

        try:
            self._request = self.request()
        except AnsibleVaultError as exc:
            raise Fallback("an inventory variable holds a vault value no secret given "
                           "decrypts (%s)" % str(getattr(exc, "message", exc)).rstrip(".")) \
                from None
        converted = self.state.converted
        if (converted.gather is not None and (converted.play.gather_facts
                                              or converted.gather_ir is not None)
                and not converted.converter.facts_modules_set
                and any(name in host.vars for name in FACTS_CHOOSERS
                        for host in self._request["inventory"].hosts.values())):
            # (the play's own layers: the converter gathers through Ansible)
            raise Fallback("an inventory variable sets %s: Ansible's fact gathering "
                           "chooses the modules per host" % " or ".join(FACTS_CHOOSERS))

    def request(self) -> Dict[str, Any]:
        """The dispatcher's ``play`` request (see :mod:`ioc.ansible.pipe`)."""
        from ansible import constants as C, context
        from ansible.release import __version__
        from ioc.ansible.config import deprecated_reads, deprecation_warnings
        from ioc.controller.state import RunOptions

        state = self.state
        names = [plain(n) for n in state.hosts]
        dormant = [plain(n) for n in state.dormant] if not state.play.serial else []
        # (a revived one's events name it like the others')
        state.hosts.update((name, state.dormant[name]) for name in dormant)
        inventory = self.hostvars.inventory()
        memory = self.hostvars.memory(names + dormant)
        cli = context.CLIARGS
        options = RunOptions(check=bool(cli.get("check")), diff=bool(cli.get("diff")),
                             verbosity=int(cli.get("verbosity") or 0),
                             forks=int(cli.get("forks") or 5),
                             # results shaped as this release's linear shapes them
                             shape="2.19" if __version__.startswith("2.19.") else "2.21",
                             # -K / --become-password-file (variables still win).
                             become_password=plain(state.play_context.become_pass) or None,
                             # -k / --connection-password-file (variables still win).
                             connection_password=plain(state.play_context.password) or None,
                             become_allow_same_user=bool(C.BECOME_ALLOW_SAME_USER),
                             error_on_missing_handler=bool(C.ERROR_ON_MISSING_HANDLER),
                             deprecated=deprecated_reads(as_installed=True),
                             deprecation_warnings=deprecation_warnings(),
                             allow_broken_conditionals=bool(
                                 C.config.get_config_value("ALLOW_BROKEN_CONDITIONALS")),
                             # (VariableManager._get_magic_variables: the inventory
                             # layer leaves every magic variable out)
                             magic={"ansible_playbook_python": sys.executable,
                                    "ansible_config_file": C.CONFIG_FILE})
        converted = state.converted
        from ioc.ansible import plugins as ansible_plugins
        from ioc.controller import plugins

        return {"op": "play", "planned": state.planned, "inventory": inventory,
                "plugins": plugins.declared(),
                # the playbook's and its roles' filter_plugins/ ...: the
                # dispatcher runs those plugins for the runners
                "plugin_paths": ansible_plugins.search_paths(),
                "modules": converted.converter.modules,
                "extra_vars": plain(state.vm.extra_vars), "hosts": names, "memory": memory,
                # unreachable in earlier plays: back if a clear_host_errors runs
                "dormant": dormant,
                # ansible_run_tags, ansible_skip_tags, ansible_limit, ...: what
                # Ansible's VariableManager derives from the command line
                # (load_options_vars), not the tags ioc would filter on.
                "options_vars": plain(state.vm._options_vars),
                "options": options, "host_vars_files": converted.host_vars_files,
                "skip": self._skip(),
                # ansible_play_hosts_all/ansible_play_hosts span every serial batch
                "hosts_all": [plain(n) for n in (state.strategy._hosts_cache_all or names)],
                "removed": [plain(n) for n in getattr(state.play, "_removed_hosts", ())
                            if n not in names]}

    def _skip(self) -> Dict[str, List[int]]:
        """Per host, the entries it does not run: gathering where ``gathering =
        smart`` finds its facts gathered already."""
        converted = self.state.converted
        index = converted.gather_index(self.state.program) if converted.skip_gather else None
        if index is None:
            return {}
        return {name: [index] for name in converted.skip_gather}

    def run(self) -> int:
        """Run the play in the dispatcher; Ansible's result code for it."""
        from ioc.warm import WarmError

        try:
            dispatcher = Dispatcher.get()
        except WarmError as exc:  # (IOC_PERSIST: a bad value, a daemon that cannot be used)
            from ansible.errors import AnsibleError
            raise AnsibleError("mitogen_batch: %s" % exc) from None
        dispatcher.request(self._request if self._request is not None else self.request())
        summary = None
        events, vm = self.events, self.state.vm
        for reply in dispatcher.replies():
            kind = reply[0]
            if kind == "step_start":
                events.step_start(*reply[1:])
            elif kind == "event":
                events.host_event(*reply[1:])
            elif kind == "step_end":
                events.announce_includes()
                if events.aborted is not None:
                    # What linear's _process_pending_results raises: the
                    # run ends here, without a recap (exit code 1).
                    from ansible.errors import AnsibleError
                    raise AnsibleError(events.aborted)
            elif kind == "left":
                events.host_left(*reply[1:])
            elif kind == "callback":
                events.play_level(reply[1], reply[2])
            elif kind == "display":  # as the strategy's results thread does for a worker
                from ansible.utils.display import Display
                getattr(Display(), reply[1])(*reply[2], **reply[3])
            elif kind == "runners":
                self.tasks.runners = (frozenset(reply[1]), dispatcher.socket)
            elif kind == "ansible":
                dispatcher.request(dict(self.tasks.run_task(*reply[1:]), op="ansible_done"))
            elif kind == "include":
                index, active = reply[1:]
                dispatcher.request(dict(self.includes.splice(
                    index, active, events.take_include_results()), op="include_done"))
            elif kind == "store":  # delegate_facts outside the play, run_once's others
                _, name, values, layer = reply
                values = tagged(values)  # (the runner's trusted text as Ansible's)
                if layer == "facts":
                    vm.set_host_facts(name, values)
                elif layer == "include_vars":
                    for key, value in values.items():
                        vm.set_host_variable(name, key, value)
                else:
                    vm.set_nonpersistent_facts(name, values)
            elif kind == "outside":
                dispatcher.request({"op": "outside_done",
                                    "hosts": self.hostvars.outside_hosts(reply[1])})
            elif kind == "decrypt":
                dispatcher.request(dict(decrypted(self.state.strategy._loader, reply[1]),
                                        op="decrypt_done"))
            elif kind == "template_vars":
                dispatcher.request({"op": "template_vars_done",
                                    "vars": template_vars(reply[1], reply[2])})
            elif kind == "ansible_handler":
                dispatcher.request(dict(self.tasks.run_handler(*reply[1:]), op="ansible_done"))
            elif kind == "done":
                summary = reply[1]
            elif kind == "error":
                from ansible.errors import AnsibleError
                raise AnsibleError("mitogen_batch: %s" % reply[1])
        return self.finish(summary or {})

    def finish(self, summary: Dict[str, Any]) -> int:
        """Ansible's view of the play's hosts after it, from the dispatcher's summary."""
        state = self.state
        tqm, iterator = state.tqm, state.iterator
        result = int(tqm.RUN_OK)
        for name, host_summary in (summary.get("hosts") or {}).items():
            status = host_summary["status"]
            if name in state.dormant:
                if status != "unreachable":  # a clear_host_errors revived it
                    tqm._unreachable_hosts.pop(name, None)
                    if status in ("failed", "stopped"):
                        tqm._failed_hosts[name] = True
                continue
            host = state.hosts[name]
            if status in ("failed", "stopped"):
                tqm._failed_hosts[name] = True
                iterator.mark_host_failed(host)
            elif status == "unreachable":
                tqm._unreachable_hosts[name] = True
                state.play._removed_hosts.append(name)
                if host_summary.get("fatal"):
                    # linear's any_errors_fatal marks it failed as well (L4.5)
                    tqm._failed_hosts[name] = True
            else:
                # The linear iterator never walked this host: it is done.
                from ansible.executor.play_iterator import IteratingStates

                iterator.set_run_state_for_host(name, IteratingStates.COMPLETE)
                if host_summary.get("marked"):
                    # Rescued, yet on linear's failed list: later plays leave it out.
                    tqm._failed_hosts[name] = True
        if summary.get("max_fail_hit"):
            result |= tqm.RUN_FAILED_BREAK_PLAY
        if self.events.ended:
            iterator.end_play = True
        return result


def _foreign_connection(strategy: Any, play: Any) -> Optional[str]:
    """Why the play's hosts need a connection plugin ioc does not drive (None: they do not).

    ioc reaches hosts over its own local and ssh transports; a host whose
    ``ansible_connection`` (or the play's ``connection``) names another
    plugin (``docker``, ``winrm``, one from the playbook's
    ``connection_plugins/``) runs the play under linear, as Ansible would.
    """
    from ansible._internal._templating._jinja_bits import is_possibly_template

    for name in strategy._hosts_cache:
        host = strategy._inventory.get_host(name)
        if host is None:
            continue
        variables = strategy._variable_manager.get_vars(play=play, host=host,
                                                        include_hostvars=False)
        connection = variables.get("ansible_connection") or play.connection
        if not isinstance(connection, str) or is_possibly_template(connection):
            continue
        if transport_of(connection) is None:
            return "host %s uses the connection plugin %r (ioc drives local and ssh)" \
                % (plain(name), plain(connection))
    return None


def __getattr__(name: str) -> Any:
    """``StrategyModule`` is built (and ansible imported) on first access."""
    if name == "StrategyModule":
        cls = build_strategy_class()
        globals()["StrategyModule"] = cls
        return cls
    raise AttributeError(name)
