"""A real Ansible collection for the tests: community.general, from PyPI's ``ansible``.

The community ``ansible`` package bundles the collections; its wheel is
fetched once with pip (``pip download --no-deps``) into
``~/.cache/ioc/collections`` and only ``community.general`` (10 MB of its
600) is unpacked there. Point ``ANSIBLE_COLLECTIONS_PATH`` at the returned
directory.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

#: The release whose community.general (11.x) supports ansible-core 2.19 to 2.21.
ANSIBLE_PACKAGE = "ansible==12.3.0"
CACHE = Path(os.environ.get("IOC_COLLECTIONS_CACHE", str(Path.home() / ".cache/ioc/collections")))
PREFIX = "ansible_collections/community/general/"


def community_general() -> str:
    """The collections path holding community.general (fetched on first use)."""
    if (CACHE / PREFIX / "MANIFEST.json").is_file():
        return str(CACHE)
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp,
                        ANSIBLE_PACKAGE], check=True)
        wheel = next(Path(tmp).glob("ansible-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                if name.startswith(PREFIX):
                    archive.extract(name, str(CACHE))
    return str(CACHE)
