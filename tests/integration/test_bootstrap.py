"""The runner's import closure reaches the target with the first message."""
from __future__ import annotations

import sys

import mitogen.core
import pytest

from ioc.agentless_runner import batch as runner_batch
from ioc.transport import bootstrap
from ioc.transport.spec import spec_for
from ioc.transport.connector import Connector

pytestmark = pytest.mark.integration

BATCH = {"v": 1, "host": "t", "start": 0, "end": 2, "state": {}, "vars": {},
         "tree": [{"i": 0, "t": {"action": "stat", "args": {"path": "/"}}},
                  {"i": 1, "t": {"action": "debug", "args": {"msg": "{{ [1, 2] | to_nice_yaml }}"}}}]}


def run_first_batch(hostvars, batch=BATCH, actions=("stat", "debug")):
    connector = Connector()
    try:
        ctx = connector.context("t", spec_for("t", hostvars))
        # As the controller does before each batch: the implementations of the
        # batch's modules travel with it.
        bootstrap.preload(connector.router, ctx, bootstrap.action_modules(actions))
        events = mitogen.core.Receiver(connector.router)
        ctx.call(runner_batch.run_batch, batch, events.to_sender())
        done = []
        while True:
            event = events.get().unpickle()
            if event["e"] == "end":
                break
            if event["e"] == "done":
                done.append(event)
        info = ctx.call(runner_batch.runner_info)
        return done, connector.router.responder.get_module_count, info
    finally:
        connector.shutdown()


def test_a_bare_python39_target_asks_for_no_module(sshd, python39):
    """No jinja2, no ioc on the target: still not one module request."""
    hostvars = {"ansible_host": sshd.host, "ansible_port": sshd.port, "ansible_user": sshd.user,
                "ansible_ssh_private_key_file": sshd.client_key,
                "ansible_ssh_common_args": sshd.host_ssh_args("t"),
                "ansible_python_interpreter": python39}
    done, requests, info = run_first_batch(hostvars)
    assert info["python"][:2] == [3, 9]
    assert [d["status"] for d in done] == ["ok", "ok"]
    assert done[1]["result"]["msg"] == "- 1\n- 2\n"  # YAML without PyYAML on the target
    assert requests == 0


def test_a_target_receives_only_the_module_implementations_it_uses():
    names = bootstrap.runner_closure()
    assert "ioc.agentless_runner.batch" in names and "jinja2.environment" in names
    assert not any(n.startswith("ioc.agentless_runner.modules.") for n in names)
    assert set(bootstrap.action_modules(["copy"])) >= {"ioc.agentless_runner.modules.copy",
                                                       "ioc.agentless_runner.modules._common"}
    assert "ioc.agentless_runner.modules.stat" not in bootstrap.action_modules(["copy"])


def test_the_controllers_ioc_wins_over_one_installed_on_the_target():
    """The local interpreter has ioc installed, yet the runner comes from us."""
    done, requests, info = run_first_batch({"ansible_connection": "local",
                                            "ansible_python_interpreter": sys.executable})
    assert info["source"].startswith("master:")  # mitogen's mark for modules it shipped
    assert requests == 0
    assert [d["status"] for d in done] == ["ok", "ok"]


def test_role_argument_validation_ships_ansibles_validator_with_the_batch(sshd, python39):
    """``validate_argument_spec`` runs in the runner with Ansible's ``ArgumentSpecValidator``:
    the module_utils it imports travel with the batch, not one import request."""
    spec = {"who": {"type": "str", "required": True}, "times": {"type": "int"}}
    tree = [{"i": 0, "t": {"action": "validate_argument_spec",
                           "args": {"argument_spec": spec, "provided_arguments": {"times": "3"}}}},
            {"i": 1, "t": {"action": "validate_argument_spec",
                           "args": {"argument_spec": spec, "provided_arguments": {"times": "x"}}}}]
    batch = dict(BATCH, tree=tree, vars={"play": {"who": "{{ 'w' ~ 'orld' }}"}})
    hostvars = {"ansible_host": sshd.host, "ansible_port": sshd.port, "ansible_user": sshd.user,
                "ansible_ssh_private_key_file": sshd.client_key,
                "ansible_ssh_common_args": sshd.host_ssh_args("t"),
                "ansible_python_interpreter": python39}
    done, requests, info = run_first_batch(hostvars, batch, ["validate_argument_spec"])
    assert info["python"][:2] == [3, 9]
    assert requests == 0
    assert done[0]["result"]["msg"] == "The arg spec validation passed"
    assert done[1]["status"] == "failed"
    assert done[1]["result"]["argument_errors"] == [
        "argument 'times' is of type str and we were unable to convert to int: "
        "\"'x'\" cannot be converted to an int"]
