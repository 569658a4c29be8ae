"""ioc-run honours module_defaults, collections, the gathering keywords and port as
ansible-playbook 2.21 does, and refuses what it cannot honour before anything runs
(issue 13: no silent difference). Each test runs the real ``ioc-run`` and, where
the output is Ansible's to define, the real ``ansible-playbook`` on the same files.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import List

import pytest

from tests.integration.test_ansible_project import ansible_playbook, banners, ioc, write

pytestmark = pytest.mark.integration

COLLECTION_MODULE = '''
#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule

def main():
    module = AnsibleModule(argument_spec={"data": {"type": "str", "default": "acme"},
                                          "who": {"type": "str"}, "how": {"type": "str"}})
    module.exit_json(changed=False, ping="%s says %s" % ("NAME", module.params["data"]),
                     greeting="%s %s" % (module.params["how"], module.params["who"]))

if __name__ == "__main__":
    main()
'''

PLAYBOOK = """
- hosts: web
  gather_facts: false
  collections: [acme.tools]
  module_defaults:
    file: {{mode: '0600'}}
    ansible.builtin.copy: {{mode: '0640'}}
    group/acme.tools.people: {{how: "{{{{ 'hi' }}}}"}}
    group/testgroup: {{data: grouped}}
  tasks:
    - file: {{path: "{out}/a", state: touch}}
    - copy: {{content: "x", dest: "{out}/b"}}
    - block:
        - file: {{path: "{out}/c", state: touch}}
        - file: {{path: "{out}/d", state: touch, mode: '0604'}}
        - file: {{path: "{out}/e", state: touch}}
          module_defaults:
            file: {{mode: "{{{{ '0660' }}}}"}}
      module_defaults:
        file: {{mode: '0700'}}
    - command: pwd
      module_defaults: {{command: {{chdir: /}}}}
      register: cwd
    - ping:
      register: short
    - ansible.builtin.ping:
      register: builtin
    - greet: {{who: you}}
      register: greeted
    - block:
        - ping:
          register: listed
      collections: [ansible.builtin]
    - debug: msg="{{{{ cwd.stdout }}}} / {{{{ short.ping }}}} / {{{{ builtin.ping }}}} / {{{{ greeted.greeting }}}} / {{{{ listed.ping }}}}"
    - import_role: {{name: plainrole}}
- hosts: web
  gather_subset: ['!all']
  fact_path: "{facts}"
  gather_timeout: 7
  tasks:
    - debug: msg="{{{{ ansible_local.custom.colour }}}} {{{{ ansible_facts.keys() | length }}}}"
- hosts: web
  module_defaults:
    setup: {{gather_subset: ['!all', 'network'], fact_path: "{facts}"}}
  tasks:
    - debug: msg="{{{{ ansible_local.custom.colour }}}} {{{{ 'default_ipv4' in ansible_facts }}}} {{{{ 'mounts' in ansible_facts }}}}"
"""


def keyword_project(tmp_path: Path) -> None:
    coll = tmp_path / "collections" / "ansible_collections" / "acme" / "tools"
    write(coll / "galaxy.yml", "namespace: acme\nname: tools\nversion: 1.0.0\n")
    write(coll / "meta" / "runtime.yml", "action_groups:\n  people:\n    - greet\n")
    for name in ("ping", "greet"):
        write(coll / "plugins" / "modules" / ("%s.py" % name), COLLECTION_MODULE.replace("NAME", name))
    write(tmp_path / "roles" / "plainrole" / "meta" / "main.yml", "collections: [acme.tools]\n")
    write(tmp_path / "roles" / "plainrole" / "tasks" / "main.yml",
          "- ping:\n  register: rp\n- debug: var=rp.ping\n")
    write(tmp_path / "facts.d" / "custom.fact", '{"colour": "blue"}\n')
    write(tmp_path / "hosts", "[web]\nw1 ansible_connection=local ansible_python_interpreter=%s\n"
          % sys.executable)


def messages(stdout: str) -> List[str]:
    return re.findall(r'^    "(?:msg|rp\.ping)": (.*)$', stdout, re.M)


def test_module_defaults_collections_and_gathering_keywords_as_in_ansible(tmp_path):
    keyword_project(tmp_path)
    modes = {}
    outputs = {}
    for tool, run in (("ioc", ioc), ("ansible", ansible_playbook)):
        out = tmp_path / ("out-" + tool)
        out.mkdir()
        write(tmp_path / "site.yml", PLAYBOOK.format(out=out, facts=tmp_path / "facts.d"))
        outputs[tool] = run(tmp_path, "-i", "hosts", "site.yml")
        assert outputs[tool].returncode == 0, outputs[tool].stdout + outputs[tool].stderr
        modes[tool] = {p.name: oct(p.stat().st_mode & 0o777) for p in sorted(out.iterdir())}
    ours, theirs = outputs["ioc"], outputs["ansible"]
    assert modes["ioc"] == modes["ansible"] == {
        "a": "0o600", "b": "0o640", "c": "0o700", "d": "0o604", "e": "0o660"}
    assert messages(ours.stdout) == messages(theirs.stdout)
    assert messages(ours.stdout)[0] == '"/ / ping says acme / grouped / hi you / grouped"'
    assert messages(ours.stdout)[1] == '"ping says acme"'
    assert messages(ours.stdout)[3] == '"blue True False"'
    assert banners(ours.stdout) == banners(theirs.stdout)
    assert "ignored" not in ours.stderr


def test_the_play_port_is_the_default_and_ansible_port_wins(tmp_path, sshd):
    write(tmp_path / "hosts", "[web]\nh1 ansible_host={host}\nh2 ansible_host={host} "
          "ansible_port={port}\n[web:vars]\nansible_python_interpreter={python}\n"
          .format(host=sshd.host, port=sshd.port, python=sys.executable))
    write(tmp_path / "ansible.cfg", "[defaults]\nremote_user = %s\nprivate_key_file = %s\n"
          "host_key_checking = False\n[ssh_connection]\nssh_common_args = %s\n"
          % (sshd.user, sshd.client_key, sshd.host_ssh_args("h1")))
    write(tmp_path / "site.yml", """
        - hosts: h1
          port: %d
          gather_facts: false
          tasks:
            - ping:
        - hosts: h2
          port: 1
          gather_facts: false
          tasks:
            - ping:
    """ % sshd.port)
    r = ioc(tmp_path, "-i", "hosts", "site.yml")
    assert re.search(r"h1 +: ok=1 .*unreachable=0", r.stdout), r.stdout + r.stderr
    assert re.search(r"h2 +: ok=1 .*unreachable=0", r.stdout), r.stdout + r.stderr


@pytest.mark.parametrize("keyword", ["strategy: free", "debugger: on_failed"])
def test_a_keyword_ioc_run_cannot_honour_stops_it_before_anything_runs(tmp_path, keyword):
    write(tmp_path / "hosts", "[web]\nw1 ansible_connection=local\n")
    write(tmp_path / "site.yml", """
        - hosts: web
          gather_facts: false
          tasks:
            - debug: msg=before
        - hosts: web
          %s
          tasks:
            - debug: msg=never
    """ % keyword)
    r = ioc(tmp_path, "-i", "hosts", "site.yml")
    assert r.returncode != 0
    assert "PLAY [" not in r.stdout
    assert "site.yml:6" in r.stderr and "use ansible-playbook" in r.stderr, r.stderr
