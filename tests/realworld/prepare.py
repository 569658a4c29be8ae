"""Set-up step of the real-world suite (``scripts/test`` runs it): nothing is
fetched at test time.

* the Debian 12 root file system every target starts from
  (:func:`tests.realworld.sandbox.build_rootfs`, debootstrap, once);
* the collections the vendored roles use and ansible-core does not ship
  (``community.general``, ``ansible.posix``, ``community.mysql`` and
  ``ansible.mysql`` it now redirects to), taken from the ``ansible``
  community package on PyPI (:data:`ANSIBLE_PACKAGE`, the release built for
  ansible-core 2.21) with pip's ordinary ``download`` and unpacked into
  ``<cache>/collections/ansible_collections`` -- only those four, and not
  into any interpreter's site-packages, so the rest of the suite runs
  without them as before.

``python -m tests.realworld.prepare`` is idempotent and quick when all is in
place.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.realworld.sandbox import build_rootfs, cache_dir, rootfs_ready

ANSIBLE_PACKAGE = "ansible==14.5.0"
COLLECTIONS = ("community.general", "ansible.posix", "community.mysql", "ansible.mysql")


def collections_path() -> Path:
    """The directory to put on ``ANSIBLE_COLLECTIONS_PATH``."""
    return cache_dir() / "collections"


def _stamp() -> Path:
    return collections_path() / ".ioc-complete"


def collections_ready() -> bool:
    return _stamp().is_file() and _stamp().read_text().split("\n")[0] == ANSIBLE_PACKAGE


def ensure_collections(python: str) -> Path:
    """Unpack :data:`COLLECTIONS` from the ``ansible`` wheel (downloaded with ``python -m pip``)."""
    target = collections_path()
    if collections_ready():
        return target
    wheels = cache_dir() / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    version = ANSIBLE_PACKAGE.split("==")[1]
    wheel = wheels / ("ansible-%s-py3-none-any.whl" % version)
    if not wheel.is_file():
        subprocess.run([python, "-m", "pip", "download", "-q", "--no-deps", ANSIBLE_PACKAGE,
                        "-d", str(wheels)], check=True, stdin=subprocess.DEVNULL)
    building = target.with_name(target.name + ".building")
    shutil.rmtree(building, ignore_errors=True)
    versions = {}
    with zipfile.ZipFile(wheel) as z:
        for name in COLLECTIONS:
            prefix = "ansible_collections/%s/" % name.replace(".", "/")
            members = [m for m in z.namelist() if m.startswith(prefix)]
            if not members:
                raise RuntimeError("%s has no collection %s" % (wheel.name, name))
            for member in members:
                z.extract(member, building)
            manifest = json.loads(z.read(prefix + "MANIFEST.json"))
            versions[name] = manifest["collection_info"]["version"]
    shutil.rmtree(target, ignore_errors=True)
    building.rename(target)
    _stamp().write_text(ANSIBLE_PACKAGE + "\n" + json.dumps(versions, sort_keys=True) + "\n")
    return target


def collection_versions() -> dict:
    if not collections_ready():
        return {}
    return json.loads(_stamp().read_text().split("\n")[1])


def main() -> int:
    python = sys.argv[1] if len(sys.argv) > 1 else sys.executable
    if not rootfs_ready():
        build_rootfs(log=lambda msg: print("tests/realworld: " + msg, file=sys.stderr))
    ensure_collections(python)
    return 0


if __name__ == "__main__":
    sys.exit(main())
