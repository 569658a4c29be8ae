"""Running a whole playbook: plan every play first, then run them in order."""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ioc import inventory as inv
from ioc.callbacks import Callback, Stats
from ioc.controller.capabilities import runner_capabilities
from ioc.controller.connection import Connector, spec_for
from ioc.controller.payloads import PayloadCache
from ioc.controller.play import HostState, HostStatus, PlayExecutor, RunOptions
from ioc.controller.transport import TransportReport
from ioc.model import Inventory, Play, Playbook
from ioc.planner import Plan, plan_play

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class PlannedPlay:
    play: Play
    plan: Plan


def plan_playbook(playbook: Playbook, per_task: bool = False) -> List[PlannedPlay]:
    """Plan every play; any PlanError surfaces before a host is contacted."""
    caps = runner_capabilities()
    return [PlannedPlay(play, plan_play(play, caps, per_task=per_task)) for play in playbook.plays]


class PlaybookRun:
    """One ``ioc-run`` invocation: inventory, plans, connections, results."""

    def __init__(self, playbook: Playbook, inventory: Inventory, extra_vars: Mapping[str, Any],
                 callbacks: Callback, options: RunOptions, limit: Optional[str] = None,
                 per_task: bool = False) -> None:
        self.playbook = playbook
        self.inventory = inventory
        self.extra_vars = dict(extra_vars)
        self.callbacks = callbacks
        self.options = options
        self.limit = limit
        self.plans = plan_playbook(playbook, per_task=per_task)
        self.stats = Stats()
        self.transport = TransportReport()
        self.payload_cache = PayloadCache()
        #: Hosts that failed or became unreachable leave every later play (L1.5).
        self.lost: Dict[str, HostStatus] = {}
        #: Facts and set_fact/register values outlive a play (Ansible keeps them
        #: in its variable manager for the whole run).
        self.memory: Dict[str, Dict[str, Dict[str, Any]]] = {}

    def run(self) -> int:
        """Run every play; return ansible-playbook's exit code."""
        connector = Connector(forks=self.options.forks)
        try:
            self.callbacks.playbook_on_start(self.playbook.path)
            for planned in self.plans:
                if not self.run_play(planned, connector):
                    break
        finally:
            connector.shutdown()
        self.callbacks.stats(self.stats)
        self.callbacks.transport_report(self.transport)
        return self.stats.exit_code()

    def run_play(self, planned: PlannedPlay, connector: Connector) -> bool:
        """Run one play; False when no host is left for later plays (L1.9)."""
        play = planned.play
        matched = inv.match_hosts(self.inventory, play.hosts, self.limit)
        hosts = [h for h in matched if h not in self.lost]
        self.callbacks.play_start(play.name, hosts)
        if not hosts:
            self.callbacks.warning("Could not match supplied host pattern, ignoring: %s" % play.hosts
                                   if not matched else "no hosts left to run on")
            return True
        states = {h: self._host_state(play, h) for h in hosts}
        executor = PlayExecutor(
            plan=planned.plan, hosts=states, connector=connector, callbacks=self.callbacks,
            stats=self.stats, options=self.options,
            static_layers={"play": {**play.vars, **play.vars_files}, "extra": self.extra_vars},
            magic=self._magic(play, hosts), transport=self.transport,
            payload_cache=self.payload_cache)
        executor.run()
        self.transport.batches += len(planned.plan.steps)
        self.transport.per_task_calls += sum(
            len([e for e in planned.plan.entries_of(b) if not (e.implicit and e.is_flush)])
            for b in planned.plan.steps
        ) * len(hosts)
        for host, state in states.items():
            self.memory[host] = {"facts": state.facts, "runtime": state.runtime}
            if state.status in (HostStatus.FAILED, HostStatus.UNREACHABLE):
                self.lost[host] = state.status
        # L1.9: when every host of the play failed or became unreachable, later
        # plays do not run (and 2.19 prints no NO MORE HOSTS LEFT for it).
        return any(s.status in (HostStatus.ACTIVE, HostStatus.ENDED) for s in states.values())

    def _host_state(self, play: Play, host: str) -> HostState:
        inventory_vars = dict(play.role_defaults)
        inventory_vars.update(inv.host_vars(self.inventory, host))
        merged = {**inventory_vars, **play.vars, **play.vars_files, **self.extra_vars}
        inventory_vars["group_names"] = inv.group_names(self.inventory, host)
        memory = self.memory.get(host, {})
        return HostState(name=host, spec=spec_for(host, merged), inventory_vars=inventory_vars,
                         facts=dict(memory.get("facts", {})),
                         runtime=dict(memory.get("runtime", {})))

    def _magic(self, play: Play, hosts: Sequence[str]) -> Dict[str, Any]:
        return {
            "groups": inv.groups_dict(self.inventory),
            "ansible_play_hosts_all": list(hosts),
            "ansible_play_name": play.name,
            "ansible_check_mode": self.options.check,
            "ansible_diff_mode": self.options.diff,
            "playbook_dir": os.path.abspath(play.basedir),
            "ansible_run_tags": ["all"],
            "ansible_skip_tags": [],
        }
