"""The controller keeps mitogen's import scan of each module between runs
(ioc/transport/bootstrap.py, ``_ScanCache``): what a runner is sent must
follow the module's file as it is now, never a stale scan."""
import importlib
import sys

import mitogen.master
import pytest

from ioc.transport import bootstrap


@pytest.fixture
def module_dir(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [n for n in sys.modules if n.startswith("scanprobe")]:
        del sys.modules[name]


def _write(module_dir, imports):
    pkg = module_dir / "scanprobe"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "other.py").write_text("")
    (pkg / "third.py").write_text("")
    (pkg / "main.py").write_text("".join("import scanprobe.%s\n" % n for n in imports))
    importlib.invalidate_caches()
    importlib.import_module("scanprobe.main")


def test_an_unchanged_module_is_answered_from_the_file_of_an_earlier_run(
        module_dir, tmp_path, monkeypatch):
    cache = str(tmp_path / "cache" / "imports.json")
    _write(module_dir, ["other"])
    first = bootstrap._ScanCache(cache)
    assert "scanprobe.other" in first.find_related_imports("scanprobe.main")
    first.save()

    def no_compiling(self, fullname):
        raise AssertionError("scanned %s again" % fullname)

    monkeypatch.setattr(mitogen.master.ModuleFinder, "find_related_imports", no_compiling)
    second = bootstrap._ScanCache(cache)
    assert "scanprobe.other" in second.find_related_imports("scanprobe.main")


def test_a_changed_module_is_scanned_again(module_dir, tmp_path):
    cache = str(tmp_path / "cache" / "imports.json")
    _write(module_dir, ["other"])
    first = bootstrap._ScanCache(cache)
    first.find_related_imports("scanprobe.main")
    first.save()
    del sys.modules["scanprobe.main"]
    _write(module_dir, ["other", "third"])  # (one line longer: another size)
    second = bootstrap._ScanCache(cache)
    assert "scanprobe.third" in second.find_related_imports("scanprobe.main")


def test_an_unreadable_cache_file_is_no_error(module_dir, tmp_path):
    cache = tmp_path / "imports.json"
    cache.write_text("{not json")
    _write(module_dir, ["other"])
    finder = bootstrap._ScanCache(str(cache))
    assert "scanprobe.other" in finder.find_related_imports("scanprobe.main")
    finder.save()
    assert "scanprobe.main" in cache.read_text()


def test_a_kept_scan_answers_as_mitogen_does_in_this_process(module_dir, tmp_path):
    """mitogen keeps only the imports this process has loaded; a scan kept by
    a process that had loaded more must not widen (or narrow) the answer."""
    cache = str(tmp_path / "cache" / "imports.json")
    _write(module_dir, ["other", "third"])
    first = bootstrap._ScanCache(cache)
    assert {"scanprobe.other", "scanprobe.third"} <= set(
        first.find_related_imports("scanprobe.main"))
    first.save()
    del sys.modules["scanprobe.third"]  # (this process has not loaded it)
    second = bootstrap._ScanCache(cache)
    answer = second.find_related_imports("scanprobe.main")
    assert answer == mitogen.master.ModuleFinder().find_related_imports("scanprobe.main")
    assert "scanprobe.third" not in answer
