"""The runner's side of Ansible's own modules: parsing what a module printed.

What a user sees of a module run is the result dict these functions build
from the module's stdout, stderr and exit code, the way Ansible's
``ActionBase._parse_returned_data`` builds it. The end-to-end behaviour is
in tests/ansible/test_mitogen_batch_modules.py.
"""
from __future__ import annotations

import json
import zlib

import mitogen.core

from ioc.agentless_runner import ansible_module, results
from ioc.controller.payloads import PayloadCache, collect_modules


def parse(stdout: str, stderr: str = "", rc: int = 0) -> dict:
    return ansible_module.parse_returned_data(stdout.encode(), stderr.encode(), rc)


def test_a_module_result_is_its_json_without_internal_keys():
    result = parse(json.dumps({"changed": True, "x": 1, "_ansible_parsed": True,
                               "_ansible_no_log": False}))
    assert result == {"changed": True, "x": 1, "_ansible_no_log": False}


def test_text_around_the_json_is_dropped_and_junk_after_it_warned():
    result = parse("MOTD banner\n" + json.dumps({"ok": 1}) + "\ntrailing junk\n")
    assert result["ok"] == 1
    assert result["warnings"] == ["Module invocation had junk after the JSON data: trailing junk"]


def test_output_without_json_is_a_module_failure_with_stdout_and_stderr():
    result = parse("Traceback: no module named foo\n", "boom\n", 1)
    assert result["failed"] is True and result["rc"] == 1
    assert result["msg"].startswith("MODULE FAILURE")
    assert result["module_stdout"] == "Traceback: no module named foo\n"
    assert result["module_stderr"] == "boom\n"


def test_no_output_at_all_says_so():
    assert parse("", "", 137)["msg"] == ("MODULE FAILURE: No output\n"
                                         "See stdout/stderr for the exact error")


def test_an_uncaught_module_exception_reads_as_ansible_2_21_words_it():
    summary = {"__ansible_type": "ErrorSummary",
               "event": {"__ansible_type": "Event", "msg": "boom"}}
    result = parse(json.dumps({"failed": True, "exception": summary}))
    assert result["msg"] == "Task failed: Module failed: boom"
    assert result["exception"] == results.TRACEBACK_UNAVAILABLE


def test_a_failed_result_gets_an_exception_key_on_2_21_only():
    assert parse(json.dumps({"failed": True, "msg": "no"}))["exception"] == \
        results.TRACEBACK_UNAVAILABLE
    results.SHAPE[0] = "2.19"
    try:
        assert "exception" not in parse(json.dumps({"failed": True, "msg": "no"}))
    finally:
        results.SHAPE[0] = "2.21"


class _Modules:
    def __init__(self) -> None:
        self.files = {"zA": zlib.compress(b"a"), "zB": zlib.compress(b"b"),
                      "zW": zlib.compress(b"wrapper")}
        self.specs = {"m1": {"wrapper": "zW", "entries": [["a.py", "zA"]]},
                      "m2": {"wrapper": "zW", "entries": [["a.py", "zA"], ["b.py", "zB"]]}}

    def digests(self, key: str) -> list:
        spec = self.specs[key]
        return [spec["wrapper"]] + [d for _, d in spec["entries"]]

    def prepare(self, keys) -> None:
        pass  # built already


def test_module_files_cross_each_connection_once_and_shared_files_once():
    cache, modules = PayloadCache(), _Modules()
    first: dict = {}
    specs = collect_modules(cache, "web1", modules, ["m1"], first)
    assert set(specs) == {"m1"} and set(first) == {"zW", "zA"}
    assert all(isinstance(b, mitogen.core.Blob) for b in first.values())
    second: dict = {}
    collect_modules(cache, "web1", modules, ["m1", "m2"], second)
    assert set(second) == {"zB"}  # module_utils shared with m1 are not sent again
    other: dict = {}
    collect_modules(cache, "web2", modules, ["m2"], other)
    assert set(other) == {"zW", "zA", "zB"}  # another connection gets its own copy


def test_the_payload_zip_is_rebuilt_from_compressed_files():
    files = {"zA": zlib.compress(b"print(1)\n")}
    spec = {"fqn": "ansible.modules.t", "entries": [["ansible/modules/t.py", "zA"]]}
    import io
    import zipfile
    payload = ansible_module.payload_zip(spec, files.__getitem__)
    with zipfile.ZipFile(io.BytesIO(payload)) as zf:
        assert zf.read("ansible/modules/t.py") == b"print(1)\n"


def test_a_lazy_module_set_builds_a_payload_only_when_it_is_shipped():
    """ioc-run marks tasks at load time; walking module_utils waits for shipping."""
    from ioc.ansible import modules

    modules.init_loader()
    mset = modules.ModuleSet(lazy=True)
    key, why = mset.add(modules.resolve("ansible.legacy.ping"), "ping")
    assert why is None and key in mset.pending and key not in mset.specs
    assert mset.digests(key) and key in mset.specs and not mset.pending
    assert any(name.endswith("module_utils/basic.py") for name, _ in mset.specs[key]["entries"])


def test_module_utils_are_parsed_once_per_run_and_payloads_are_unchanged(monkeypatch):
    """Nine modules of a role reach ``basic`` and the ~70 files behind it each:
    the parent parses each ``module_utils`` file once (it parsed 635 files, 141
    of them different, before its first task), and every payload holds the
    files Ansible's own ``recursive_finder`` puts in it."""
    import contextlib

    from ansible.executor import module_common as mc
    from ioc.ansible import modules

    names = ["stat", "file", "lineinfile", "getent", "user"]
    modules.init_loader()

    def build(memo: bool) -> tuple:
        parsed: list = []
        compile_ast = mc._compile_module_ast

        def counting(module_name, source_code):
            parsed.append(module_name)
            return compile_ast(module_name, source_code)

        monkeypatch.setattr(mc, "_compile_module_ast", counting)
        monkeypatch.setattr(modules, "_TREES", {})
        monkeypatch.setattr(modules, "_FINDERS", {})
        if not memo:
            monkeypatch.setattr(modules, "_parsed_once", lambda mc: contextlib.nullcontext())
        mset = modules.ModuleSet()
        keys = [mset.add(modules.resolve("ansible.legacy." + n), n)[0] for n in names]
        monkeypatch.undo()
        return [mset.specs[k]["entries"] for k in keys], parsed

    entries, parsed = build(memo=True)
    reference, parsed_by_ansible = build(memo=False)
    assert entries == reference
    assert len(parsed) == len(set(parsed)), "a module_utils file was parsed twice"
    assert len(parsed_by_ansible) > 2 * len(parsed)
