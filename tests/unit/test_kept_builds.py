"""The controller keeps what mitogen sends for each runner module, and
mitogen's stripped core, between runs (ioc/transport/bootstrap.py,
``_KeptBuilds``): a runner must be sent exactly what mitogen would build
from the module's file as it is now, never a stale build."""
import importlib
import sys
import time
import zlib

import mitogen.master
import pytest

from ioc.transport import bootstrap


@pytest.fixture
def module_dir(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [n for n in sys.modules if n.startswith("buildprobe")]:
        del sys.modules[name]


@pytest.fixture
def responders():
    broker = mitogen.master.Broker()
    made = []

    def responder():
        router = mitogen.master.Router(broker)
        made.append(router)
        return router.responder

    yield responder
    broker.shutdown()
    broker.join()


NAMES = ("buildprobe", "buildprobe.main")


def _write(module_dir, body):
    pkg = module_dir / "buildprobe"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "other.py").write_text("")
    (pkg / "main.py").write_text("import buildprobe.other\n" + body)
    importlib.invalidate_caches()
    for name in [n for n in sys.modules if n.startswith("buildprobe")]:
        del sys.modules[name]
    importlib.import_module("buildprobe.main")


def _kept_then_filled(path, first, second, monkeypatch):
    """Build NAMES with ``first`` and keep them; fill ``second`` from the file,
    compressing nothing (any compression fails the test)."""
    kept = bootstrap._KeptBuilds(path)
    for name in NAMES:
        first._build_tuple(name)
    kept.learn(first, NAMES)
    kept.save()

    def no_compressing(*args, **kwargs):
        raise AssertionError("compressed a kept module again")

    with monkeypatch.context() as patch:
        patch.setattr(mitogen.master.zlib, "compress", no_compressing)
        bootstrap._KeptBuilds(path).fill(second, NAMES)
    return [second._cache.get(name) for name in NAMES]


def _built(responder):
    return [tuple(bytes(part) if isinstance(part, bytes) else part for part in
                  responder._build_tuple(name)) for name in NAMES]


def test_a_kept_build_is_what_mitogen_builds_from_the_unchanged_file(
        module_dir, tmp_path, responders, monkeypatch):
    _write(module_dir, "X = 1\n")
    filled = _kept_then_filled(str(tmp_path / "sent.json"), responders(), responders(),
                               monkeypatch)
    assert None not in filled
    fresh = _built(responders())
    assert [tuple(bytes(p) if isinstance(p, bytes) else p for p in t) for t in filled] == fresh
    assert zlib.decompress(filled[1][3]) == b"import buildprobe.other\nX = 1\n"


def test_a_changed_module_is_built_again(module_dir, tmp_path, responders, monkeypatch):
    path = str(tmp_path / "sent.json")
    _write(module_dir, "X = 1\n")
    kept = bootstrap._KeptBuilds(path)
    first = responders()
    for name in NAMES:
        first._build_tuple(name)
    kept.learn(first, NAMES)
    kept.save()
    _write(module_dir, "X = 22\n")  # (another size)
    second = responders()
    bootstrap._KeptBuilds(path).fill(second, NAMES)
    assert "buildprobe.main" not in second._cache
    assert zlib.decompress(second._build_tuple("buildprobe.main")[3]).endswith(b"X = 22\n")


def test_a_package_that_gained_a_module_lists_it(module_dir, tmp_path, responders, monkeypatch):
    path = str(tmp_path / "sent.json")
    _write(module_dir, "")
    kept = bootstrap._KeptBuilds(path)
    first = responders()
    first._build_tuple("buildprobe")
    kept.learn(first, ["buildprobe"])
    kept.save()
    time.sleep(0.01)  # (the directory's mtime moves on)
    (module_dir / "buildprobe" / "added.py").write_text("")  # (__init__.py unchanged)
    second = responders()
    bootstrap._KeptBuilds(path).fill(second, ["buildprobe"])
    assert "added" in second._build_tuple("buildprobe")[1]


def test_mitogens_core_is_stripped_once_and_kept(tmp_path):
    path = str(tmp_path / "sent.json")
    built = []

    def build():
        built.append(1)
        return mitogen.master._get_core_source()

    first = bootstrap._KeptBuilds(path)
    source = first.core_source(build)
    first.save()
    assert bootstrap._KeptBuilds(path).core_source(build) == source
    assert len(built) == 1
    assert source == mitogen.master._get_core_source()


def test_an_unreadable_file_is_no_error(module_dir, tmp_path, responders):
    cache = tmp_path / "sent.json"
    cache.write_text("{not json")
    _write(module_dir, "")
    responder = responders()
    bootstrap._KeptBuilds(str(cache)).fill(responder, NAMES)
    assert not any(name in responder._cache for name in NAMES)
