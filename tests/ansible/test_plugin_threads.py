"""Ansible's plugins, called by several runners at once.

The dispatcher answers each runner's call of a plugin ioc lacks on a thread
of its own. Ansible's plugin loader is not thread-safe: two first calls of
``subelements`` at once had one of them fail "No filter named
'subelements'" (ansible-core 2.21) or print "Skipping plugin ... as it seems
to be invalid" (2.19), one CI run in three (the conformance playbook
filter_results_tuples, whose two hosts ask at the same moment).
"""
from __future__ import annotations

import json
import os
import subprocess
import textwrap

from tests.ansible.test_mitogen_batch import ROOT, ansible_python  # noqa: F401

#: Eight threads call one plugin at the same moment, in a fresh process
#: (nothing loaded yet); what each got and what Ansible displayed meanwhile.
PROBE = textwrap.dedent("""
    import json, sys, threading
    from ioc.ansible.plugins import AnsiblePlugins
    from ioc.controller.plugins import PluginFailure

    shown = []
    host = AnsiblePlugins(display=lambda method, args, kwargs: shown.append([method, args]))
    kind, name, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    barrier = threading.Barrier(8)
    got = {}

    def call(i):
        barrier.wait()
        try:
            got[i] = host.call(kind, name, args, {})
        except PluginFailure as exc:
            got[i] = "failed: %s" % exc

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"got": [repr(got[i]) for i in range(8)], "shown": shown}, default=repr))
""")


def _at_once(python: str, kind: str, name: str, args: object) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([python, "-c", PROBE, kind, name, json.dumps(args)], env=env,
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "WARNING" not in r.stderr, r.stderr
    return json.loads(r.stdout)


def test_first_calls_of_a_filter_at_once_all_get_its_result(ansible_python):  # noqa: F811
    users = [{"name": "alice", "groups": ["wheel", "adm"]}]
    expected = repr([(users[0], "wheel"), (users[0], "adm")])
    for _ in range(3):  # (the race lost about one run in two before)
        seen = _at_once(ansible_python, "filter", "subelements", [users, "groups"])
        assert seen["got"] == [expected] * 8
        assert seen["shown"] == []


def test_first_calls_of_a_test_at_once_all_get_its_result(ansible_python):  # noqa: F811
    for _ in range(3):
        seen = _at_once(ansible_python, "test", "subset", [[1], [1, 2]])
        assert seen["got"] == ["True"] * 8
        assert seen["shown"] == []
