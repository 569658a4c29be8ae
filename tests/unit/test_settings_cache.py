"""ioc-run's settings are kept between runs (``<cache>/ioc/settings.json``) and
read again whenever what they depend on changed: an ``ansible.cfg``, the
environment, the working directory.

Each reading is a fresh process (Ansible's constants are fixed when they are
imported), with its own cache directory.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional

ROOT = Path(__file__).resolve().parents[2]

READ = """
import json, sys
from ioc.ansible.config import read_settings
s = read_settings()
print(json.dumps({"forks": s.forks, "timeout": s.timeout, "unhonoured": s.unhonoured,
                  "read": "ansible.plugins.connection.ssh" in sys.modules}))
"""


def settings(cwd: Path, cache: Path, **env: str) -> Dict[str, object]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    environ.update(XDG_CACHE_HOME=str(cache), PYTHONPATH=str(ROOT), **env)
    proc = subprocess.run([sys.executable, "-c", READ], cwd=str(cwd), env=environ,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def kept(cache: Path) -> Optional[dict]:
    path = cache / "ioc" / "settings.json"
    return json.loads(path.read_text()) if path.exists() else None


def test_a_second_run_reads_the_kept_settings_without_asking_ansible(tmp_path):
    cache = tmp_path / "cache"
    first = settings(tmp_path, cache)
    assert first["read"] is True and first["forks"] == 5
    assert kept(cache)["entries"][0]["settings"]["forks"] == 5
    second = settings(tmp_path, cache)
    assert second["read"] is False  # (the ssh plugin's options were not read again)
    assert {k: v for k, v in second.items() if k != "read"} == \
        {k: v for k, v in first.items() if k != "read"}


def test_a_changed_ansible_cfg_or_environment_is_read_again(tmp_path):
    cache = tmp_path / "cache"
    assert settings(tmp_path, cache)["forks"] == 5
    (tmp_path / "ansible.cfg").write_text("[defaults]\nforks = 7\ntimeout = 23\n")
    again = settings(tmp_path, cache)
    assert (again["forks"], again["timeout"], again["read"]) == (7, 23, True)
    by_env = settings(tmp_path, cache, ANSIBLE_FORKS="9")
    assert (by_env["forks"], by_env["read"]) == (9, True)
    # an unhonoured setting is still named, from the kept settings too
    (tmp_path / "ansible.cfg").write_text("[defaults]\nforks = 7\n"
                                          "[ssh_connection]\nusetty = false\n")
    named = settings(tmp_path, cache)
    assert named["read"] is True
    assert named["unhonoured"] == [["ssh_connection use_tty", str(tmp_path / "ansible.cfg")]]
    assert settings(tmp_path, cache) == dict(named, read=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert settings(elsewhere, cache)["forks"] == 5  # (no ansible.cfg there)


def test_what_a_shell_changes_for_every_command_keeps_the_settings(tmp_path):
    """A shell sets ``_`` to each command's path and ``OLDPWD`` after each
    ``cd``: runs typed by hand differ there and nowhere else, and read the
    kept settings; any other variable still counts."""
    cache = tmp_path / "cache"
    assert settings(tmp_path, cache, _="/usr/bin/ioc-run", OLDPWD="/a", SHLVL="1")["read"]
    again = settings(tmp_path, cache, _="/usr/local/bin/ioc-run", OLDPWD="/b", SHLVL="2")
    assert again["read"] is False
    assert settings(tmp_path, cache, _="/x", OLDPWD="/b", SHLVL="2", SOME_PATH="/p")["read"]


def test_runs_alternating_between_projects_each_read_their_kept_settings(tmp_path):
    """One kept reading made a run in another directory (or another
    environment) read Ansible's settings again; the last few are kept."""
    cache = tmp_path / "cache"
    projects = []
    for n in range(3):
        project = tmp_path / ("p%d" % n)
        project.mkdir()
        (project / "ansible.cfg").write_text("[defaults]\nforks = %d\n" % (11 + n))
        projects.append(project)
        assert settings(project, cache)["read"] is True
    for n, project in enumerate(projects):
        again = settings(project, cache)
        assert (again["forks"], again["read"]) == (11 + n, False)
    assert len(kept(cache)["entries"]) == 3


def test_nothing_is_kept_from_a_directory_anyone_may_write(tmp_path):
    """Ansible ignores the ansible.cfg of a world-writable directory, with a
    warning: such a reading is made every time."""
    cache = tmp_path / "cache"
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    assert settings(shared, cache)["read"] is True
    assert kept(cache) is None
    assert settings(shared, cache)["read"] is True


def test_ansible_version_is_made_as_ansible_makes_it():
    """ioc-run's ``ansible_version`` (``ioc.ansible.config.version_info``, which spares
    importing ``ansible.cli``) equals ansible-core's ``CLI.version_info``."""
    from ansible.cli import CLI
    from ansible.release import __version__

    from ioc.ansible.config import version_info

    for version in (__version__, "2.21.5", "2.19.0b1", "2.20", "3", "2.21.0.dev0 (devel abc)"):
        import ansible.cli as cli_module

        saved = cli_module.__version__
        cli_module.__version__ = version
        try:
            assert version_info(version) == CLI.version_info(gitinfo=False), version
        finally:
            cli_module.__version__ = saved
