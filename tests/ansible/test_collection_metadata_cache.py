"""ioc keeps each collection's parsed ``runtime.yml`` between runs
(ioc/ansible/modules.py, ``keep_collection_metadata``): the routing a run
resolves plugins by is Ansible's own, read from the cache by the text's
digest, and a changed ``runtime.yml`` is parsed again."""
import json
import os
import subprocess

import pytest

from tests.ansible.test_mitogen_batch import ROOT
from tests.support.interpreters import find_python313

#: Resolves a few names through ``ansible.builtin``'s routing (a plain module,
#: an action plugin redirected, a name nobody has) and says what came of each.
SCRIPT = r"""
import json
from ioc.ansible import modules
from ansible.plugins.loader import action_loader, module_loader

modules.init_loader()
out = {}
for loader, name in ((module_loader, "ansible.builtin.ping"), (action_loader, "ansible.builtin.yum"),
                     (module_loader, "ansible.builtin.ioc_cached_alias")):
    found = loader.find_plugin_with_context(name)
    out[name] = [found.resolved, found.resolved_fqcn if found.resolved else None]
print(json.dumps(out))
"""


def _resolve(python, cache):
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), PYTHONPATH=str(ROOT))
    proc = subprocess.run([python, "-c", SCRIPT], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_routing_kept_between_runs_is_ansibles_and_is_what_runs_resolve_by(tmp_path):
    python = find_python313()
    if python is None:
        pytest.fail("no Python 3.13 with ansible-core 2.21 (scripts/test installs it)")
    cold = _resolve(python, tmp_path)
    kept = list((tmp_path / "ioc" / "collection-meta").glob("*.json"))
    assert len(kept) == 1  # (ansible.builtin's: the only collection these names reach)
    assert cold["ansible.builtin.ping"] == [True, "ansible.builtin.ping"]
    assert cold["ansible.builtin.yum"] == [True, "ansible.builtin.dnf"]  # routed by runtime.yml
    assert cold["ansible.builtin.ioc_cached_alias"] == [False, None]

    # What was kept is what Ansible's own parser makes of ansible.builtin's routing.
    check = subprocess.run(
        [python, "-c", "import json, os, ansible\n"
         "from ansible.utils.collection_loader._collection_meta import _meta_yml_to_dict\n"
         "path = os.path.join(os.path.dirname(ansible.__file__), 'config',"
         " 'ansible_builtin_runtime.yml')\n"
         "print(json.dumps(_meta_yml_to_dict(open(path, 'rb').read(), None)))"],
        capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stderr
    routing = json.loads(kept[0].read_text())["routing"]
    assert routing == json.loads(check.stdout)

    # A run resolves by the kept routing (a redirect added to the kept file is followed)...
    routing["plugin_routing"]["modules"]["ioc_cached_alias"] = {"redirect": "ansible.builtin.ping"}
    kept[0].write_text(json.dumps({"routing": routing}))
    assert _resolve(python, tmp_path)["ansible.builtin.ioc_cached_alias"] == \
        [True, "ansible.builtin.ping"]
    # ... and one whose file is unreadable parses the text again (and keeps it again).
    kept[0].write_text("{not json")
    again = _resolve(python, tmp_path)
    assert again == cold
    assert json.loads(kept[0].read_text())["routing"] == json.loads(check.stdout)
