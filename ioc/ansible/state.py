"""One native play as the parent's rooms share it (the ``ansible-playbook`` side).

While the dispatcher runs a play, several parts of the parent act on the
same play: the replay of its events to Ansible's callbacks
(:mod:`ioc.ansible.events`), the tasks it runs through Ansible
(:mod:`ioc.ansible.ansible_tasks`), dynamic includes
(:mod:`ioc.ansible.includes`) and the export of host variables
(:mod:`ioc.ansible.hostvars`). :class:`PlayState` is what they share:
Ansible's objects for the play, ioc's plan of it (it grows as includes are
spliced in), the play's hosts (refresh_inventory replaces them) and the
task whose callbacks are being sent.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple


def templar(loader: Any, variables: Dict[str, Any]) -> Any:
    """Ansible's templar for ``variables`` (its engine on 2.19+, where it has one)."""
    try:
        from ansible._internal._templating._engine import TemplateEngine as Templar
    except ImportError:
        from ansible.template import Templar  # type: ignore[no-redef]

    return Templar(loader=loader, variables=variables)


class PlayState:
    """A native play: Ansible's objects, ioc's plan, the hosts, the current task."""

    def __init__(self, strategy: Any, iterator: Any, play_context: Any, native: Any) -> None:
        #: Ansible's strategy (the ``mitogen_batch`` StrategyModule), its TQM
        #: and variable manager.
        self.strategy = strategy
        self.tqm = strategy._tqm
        self.vm = strategy._variable_manager
        self.iterator = iterator
        self.play = iterator._play
        self.play_context = play_context
        #: The play in IR (``ioc.ansible.convert.Converted``) and as planned
        #: (``PlannedPlay``); ``planned`` and ``program`` change with includes.
        self.converted, self.planned = native
        self.program = self.planned.plan.program
        #: Hosts failed in earlier plays are marked failed in the iterator (TQM.run).
        self.hosts = {h.name: h for h in strategy.get_hosts_left(iterator)
                      if not iterator.is_failed(h)}
        #: The play's hosts unreachable in an earlier play: linear's iterator
        #: holds them at the first task, a clear_host_errors brings them back.
        self.dormant = {name: strategy._inventory.get_host(name)
                        for name in strategy._hosts_cache or ()
                        if name in self.tqm._unreachable_hosts and name not in self.hosts}
        #: The Ansible Task (or handler) whose step is being replayed, and its IR.
        self.task: Any = None
        self.ir_task: Any = None
        #: Ansible's handler objects, by ioc's handler number.
        self.handler_objects: List[Any] = list(self.converted.handlers)

    def task_vars(self, host: Any) -> Tuple[Dict[str, Any], Any]:
        """The current task's variables for ``host``, as linear builds them, and a templar."""
        s = self.strategy
        task_vars = self.vm.get_vars(play=self.play, host=host, task=self.task,
                                     _hosts=s._hosts_cache, _hosts_all=s._hosts_cache_all)
        s.add_tqm_variables(task_vars, play=self.play)
        return task_vars, templar(s._loader, task_vars)

    def template_name(self, host_name: Optional[str]) -> None:
        """Template the current task's name with ``host_name``'s variables, as linear does."""
        task = self.task
        if not task.name or ("{{" not in str(task.name) and "{%" not in str(task.name)):
            return
        s = self.strategy
        host = self.hosts.get(host_name) if host_name else None
        task_vars = self.vm.get_vars(play=self.play, host=host, task=task,
                                     _hosts=s._hosts_cache, _hosts_all=s._hosts_cache_all)
        s.add_tqm_variables(task_vars, play=self.play)
        engine = templar(s._loader, task_vars)
        if hasattr(task, "post_validate_attribute"):
            task.post_validate_attribute("name", templar=engine)
        else:  # ansible-core < 2.21
            task.name = engine.template(task.name)
