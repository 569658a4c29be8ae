"""Run a play's batches through the runner in this process, for unit tests.

This exercises the real planner and the real batch executor; only the
transport is absent (the runner's events are collected in a list instead of
travelling over mitogen). Integration tests cover the transport.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from ioc import loader
from ioc.ansible.modules import attach
from ioc.agentless_runner.batch import HostRun
from ioc.controller.capabilities import runner_capabilities
from ioc.model import WIRE_VERSION, to_wire
from ioc.planner import plan_play, wire_tree


@dataclass
class HostResult:
    events: List[Dict[str, Any]] = field(default_factory=list)
    state: Dict[str, Any] = field(default_factory=dict)
    status: str = "ok"
    calls: int = 0

    def done(self) -> List[Dict[str, Any]]:
        return [e for e in self.events if e["e"] == "done"]

    def names(self) -> List[str]:
        return [e["name"] for e in self.events if e["e"] == "start"]

    def result_of(self, name: str) -> Dict[str, Any]:
        """The final result of the (last) step started with ``name``."""
        key = None
        for event in self.events:
            if event["e"] == "start" and event["name"] == name:
                key = event["k"]
            if event["e"] == "done" and event["k"] == key:
                found = event
        return found

    @property
    def runtime(self) -> Dict[str, Any]:
        return self.state.get("runtime", {})


def run_text(tmp_path: Path, text: str, host: str = "h1", per_task: bool = False,
             extra: Optional[Dict[str, Any]] = None, check: bool = False,
             host_vars: Optional[Dict[str, Any]] = None) -> HostResult:
    """Load ``text`` as a playbook and run its first play's batches for ``host``."""
    path = tmp_path / "play.yml"
    path.write_text(text)
    play = attach(loader.load_playbook(str(path), extra_vars=extra or {})).plays[0]
    plan = plan_play(play, runner_capabilities(), per_task=per_task)
    out = HostResult()
    state: Dict[str, Any] = {}
    for batch in plan.steps:
        if out.status != "ok":
            break
        wire = {
            "v": WIRE_VERSION, "host": host, "start": batch.start, "end": batch.end,
            "tree": wire_tree(plan.program.tree, batch.start, batch.end),
            "handlers": [to_wire(h) for h in plan.program.handlers],
            "vars": {"inventory": dict(host_vars or {}), "play": {**play.vars, **play.vars_files},
                     "extra": dict(extra or {}),
                     "magic": {"inventory_hostname": host, "groups": {"all": [host]},
                               "ansible_check_mode": check}},
            "state": state,
            "options": {"check": check},
        }
        batch_events: List[Dict[str, Any]] = []
        HostRun(wire, batch_events.append).run()
        end = batch_events.pop()
        out.events.extend(batch_events)
        out.calls += 1
        state = end["state"]
        out.state = state
        out.status = end["status"]
    return out
