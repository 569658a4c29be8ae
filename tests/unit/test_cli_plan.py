"""``ioc-run --plan --plan-format text|json|dot``: parsable output, no connection attempted.

The inventory's host connects through a ProxyCommand that leaves a marker
file before failing: any connection attempt would leave it, so its absence
(and rc 0) shows none was made.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PLAYBOOK = """\
- name: first
  hosts: web
  tasks:
    - name: check
      command: uptime
      register: up
    - name: once
      debug: msg="{{ up.stdout }}"
      run_once: true
    - name: after
      debug: msg=after
- name: second
  hosts: web
  gather_facts: false
  tasks:
    - debug: msg=x
"""


def run_plan(tmp_path, *extra):
    marker = tmp_path / "connected"
    (tmp_path / "hosts.ini").write_text(
        "[web]\nnowhere ansible_host=192.0.2.1 ansible_port=1 "
        "ansible_ssh_common_args='-o ProxyCommand=\"touch %s; false\"'\n" % marker)
    book = tmp_path / "play.yml"
    book.write_text(PLAYBOOK)
    proc = subprocess.run([sys.executable, "-m", "ioc", str(book), "-i", str(tmp_path / "hosts.ini"),
                           "--plan", *extra], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists(), "--plan tried to connect"
    assert "UNREACHABLE" not in proc.stdout + proc.stderr
    return proc.stdout


def test_json_is_a_list_with_one_plan_per_play(tmp_path):
    plans = json.loads(run_plan(tmp_path, "--plan-format", "json"))
    assert [p["play"]["name"] for p in plans] == ["first", "second"]
    assert plans[0]["play"]["location"] == "play.yml:1"
    first = plans[0]
    assert [s["kind"] for s in first["steps"]] == ["batch", "controller", "batch"]
    once = first["steps"][1]
    assert once["once"] is True and once["where"] == "target"
    assert once["reason"] == "run_once: task once (play.yml:7)"
    assert once["tasks"] == [{"index": 3, "name": "once", "action": "debug",
                              "location": "play.yml:7", "implicit": False}]
    assert {"from": 2, "to": 3, "vars": ["up"]} in first["edges"]


def test_json_output_is_sorted_and_indented(tmp_path):
    text = run_plan(tmp_path, "--plan-format", "json")
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


def test_dot_is_one_digraph_per_play(tmp_path):
    text = run_plan(tmp_path, "--plan-format", "dot")
    assert text.count("digraph ") == 2
    assert text.count("{") == text.count("}")
    assert 'label="step 2: controller (target, once)\\nrun_once: task once (play.yml:7)"' in text
    assert 'n2 -> n3 [label="up"];' in text
    assert "style=dashed, ltail=cluster_1, lhead=cluster_2" in text


@pytest.mark.parametrize("extra", [(), ("--plan-format", "text")])
def test_text_is_the_default(tmp_path, extra):
    text = run_plan(tmp_path, *extra)
    assert "PLAY [first] (play.yml:1)" in text
    assert "step 2: controller step (target, once): run_once: task once (play.yml:7)" in text
    assert "rule: only the first active host runs it" in text


def test_unknown_format_is_a_usage_error(tmp_path):
    book = tmp_path / "play.yml"
    book.write_text(PLAYBOOK)
    proc = subprocess.run([sys.executable, "-m", "ioc", str(book), "--plan", "--plan-format", "svg"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr
