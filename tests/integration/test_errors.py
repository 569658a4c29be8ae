"""ioc-run's errors read like ansible-playbook 2.21's: same words, layout, stream and exit code.

Each case is a small playbook a newcomer gets wrong. The real
``ansible-playbook`` (ansible-core 2.21) and ``ioc-run`` run it once each;
the error block (``[ERROR]: ...``, ``Origin: path:line:col``, the excerpt and
its caret) must be the same text on the same stream, and the exit codes equal.
"""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict

import pytest

from tests.integration.test_ansible_project import ansible_playbook, ioc, write

pytestmark = pytest.mark.integration

#: name -> (files, how the streams compare): "stderr" the whole of stderr is
#: equal (the run stops before any play); "task" the task's [ERROR] block and
#: its fatal line on stdout are equal.
CASES: Dict[str, tuple] = {
    "yaml syntax": ({"site.yml": """
        - hosts: localhost
          gather_facts: false
          tasks:
          - debug: msg=1
           - x: 1
        """}, "stderr"),
    "unknown task keyword": ({"site.yml": """
        - hosts: localhost
          gather_facts: false
          tasks:
            - name: t
              debug: msg=1
              bogus_kw: 1
        """}, "stderr"),
    "two actions": ({"site.yml": """
        - hosts: localhost
          gather_facts: false
          tasks:
            - debug: msg=1
              command: echo hi
        """}, "stderr"),
    "no action": ({"site.yml": """
        - hosts: localhost
          gather_facts: false
          tasks:
            - name: nothing
              when: true
        """}, "stderr"),
    "unknown play keyword": ({"site.yml": """
        - hosts: localhost
          gather_facts: false
          bogus_play: 1
          tasks: []
        """}, "stderr"),
    "undefined variable in a play keyword": ({"site.yml": """
        - hosts: "{{ target }}"
          gather_facts: false
          tasks: []
        """}, "stderr"),
    "missing role": ({"site.yml": """
        - hosts: localhost
          gather_facts: false
          roles:
            - no_such_role
        """}, "stderr"),
    "missing import": ({"site.yml": """
        - hosts: localhost
          gather_facts: false
          tasks:
            - import_tasks: no_such_file.yml
        """}, "first line"),
    "unknown module": ({"site.yml": """
        - hosts: localhost
          gather_facts: false
          tasks:
            - no_such_module: a=b
        """}, "stderr"),
    "bad module option": ({"site.yml": """
        - hosts: localhost
          gather_facts: false
          tasks:
            - name: t
              debug:
                msg: hi
                bogus: 1
        """}, "task"),
}


def task_error(stdout: str) -> str:
    """The [ERROR] block of the failed task and its fatal line."""
    match = re.search(r"^\[ERROR\]: .*?^fatal: [^\n]*", stdout, re.M | re.S)
    assert match, stdout
    return match.group(0)


@pytest.mark.parametrize("case", list(CASES))
def test_errors_read_as_ansible_playbook_prints_them(tmp_path: Path, case: str) -> None:
    files, compare = CASES[case]
    for name, text in files.items():
        write(tmp_path / name, text)
    args = ("-i", "localhost,", "-c", "local", "site.yml")
    with ThreadPoolExecutor(2) as pool:  # both at once: each is mostly its start-up
        their_run = pool.submit(ansible_playbook, tmp_path, *args)
        ours = ioc(tmp_path, *args)
        theirs = their_run.result()
    assert ours.returncode == theirs.returncode, (ours.stdout + ours.stderr, theirs.stderr)
    assert ours.stderr.startswith("[ERROR]: ") or compare == "task", ours.stderr
    if compare == "stderr":
        assert ours.stderr == theirs.stderr
        assert "PLAY [" not in ours.stdout
    elif compare == "first line":
        # ansible-core names no origin here (its help text follows the message on the
        # same line); ioc adds the line that imports the file, then the help text
        lines = ours.stderr.rstrip().splitlines()
        assert theirs.stderr.rstrip() == "%s %s" % (lines[0], lines[-1])
        assert lines[1] == "Origin: %s:4:7" % (tmp_path / "site.yml")
    else:
        assert task_error(ours.stdout) == task_error(theirs.stdout)
        assert "[ERROR]" not in ours.stderr


def test_a_target_python_too_old_or_missing_is_one_line(tmp_path: Path, sshd) -> None:
    """2.7 and 3.6: the host fails with its version and the minimum, no traceback;
    a wrong ansible_python_interpreter fails the task as in Ansible, not as ssh."""
    pythons = {"py27": "/root/.pyenv/versions/2.7.18/bin/python",
               "py36": "/root/.pyenv/versions/3.6.15/bin/python",
               "nopy": "/nonexistent/bin/python3"}
    write(tmp_path / "hosts", "".join(sshd.inventory_ini([name], python=python)
                                      for name, python in pythons.items()))
    write(tmp_path / "site.yml", """
        - hosts: all
          gather_facts: false
          tasks:
            - debug: msg="needs no connection"
            - command: "true"
            - debug: msg="never reached"
        """)
    r = ioc(tmp_path, "-i", "hosts", "site.yml")
    assert r.returncode == 2, r.stdout + r.stderr
    out = r.stdout + r.stderr
    # as in Ansible: the host fails at the first task that needs its Python
    for name in pythons:
        assert 'ok: [%s] => {\n    "msg": "needs no connection"' % name in r.stdout, r.stdout
    assert "never reached" not in r.stdout
    assert "Traceback" not in out and "UNREACHABLE" not in out, out
    for name, version in (("py27", "2.7.18"), ("py36", "3.6.15")):
        line = ("Task failed: %s's Python is %s (%s): ioc needs Python 3.9 or newer on the "
                "target; set ansible_python_interpreter to a newer one"
                % (name, version, pythons[name]))
        assert 'fatal: [%s]: FAILED! => {"changed": false, "msg": "%s"}' % (name, line) \
            in r.stdout.splitlines(), r.stdout
    missing = 'fatal: [nopy]: FAILED! => {"changed": false, "msg": "The module interpreter ' \
              "'/nonexistent/bin/python3' was not found.\"}"
    assert missing in r.stdout.splitlines(), r.stdout
    assert "[ERROR]: Task failed: Action failed: The module interpreter " \
           "'/nonexistent/bin/python3' was not found.\n" in r.stdout
    assert re.search(r"^nopy +: ok=1 +changed=0 +unreachable=0 +failed=1 ", r.stdout, re.M)
