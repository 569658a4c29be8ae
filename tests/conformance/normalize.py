"""Turn an Ansible event stream and an ioc event stream into comparable data.

Both streams are JSON lines of the same shape: ioc's ``--events`` output
(``ioc/callbacks/jsonevents.py``) and the ``ioc_jsonl`` Ansible callback
(``ansible_plugins/callback/ioc_jsonl.py``). :func:`normalize` returns
``(events, recap)``: ``events`` a list of one-line JSON strings (so a failing
comparison shows a readable diff), ``recap`` the PLAY RECAP counters per host.

The rules are few and each one is written down here with its reason:

Events dropped
  * ``transport``: ioc's own transport report (batches, calls); Ansible has no
    such callback.
  * ``warning``: Ansible's warnings go to the display, not to callbacks, so
    the Ansible side can never show them.

Fields dropped from events
  * ``playbook_start.path``: the command-line argument, not a property of the
    run.
  * ``play_start.hosts``: Ansible's ``v2_playbook_on_play_start`` receives
    only the play (its host *pattern*); the callback cannot know which hosts
    the play will run on. Which hosts run shows in the per-host events.

Action names
  * ``task_start.action``: ``ansible.builtin.X`` and ``ansible.legacy.X``
    become ``X``. Ansible reports the action as written, ioc its resolved
    name; both spellings name the same module (the task *name* shown for an
    unnamed task is not touched).

Placeholders
  * The run's working directory and its ``out_dir`` are replaced by
    ``<work>`` and ``<out>`` in every string: each engine runs in its own
    fresh copy, so the absolute paths differ by construction.
  * Ansible's per-task temporary directory (``…/.ansible/tmp/ansible-tmp-…``)
    becomes ``<ansible-tmp>``: a random name.
  * What follows "Make sure this host can be reached over ssh:" in the
    unreachable message of a pipelined ssh connection becomes ``<why>``:
    Ansible's own words for a closed port depend on a race (ssh exits first:
    ``'ssh: connect to host ... Connection refused'``; its write to ssh's
    stdin fails first: ``[Errno 32] Broken pipe``, with the address in single
    quotes and "SSH" in capitals). For a connection cut under a running task
    (``ssh2d``) what follows is whatever ssh printed as it died (nothing at
    ``LogLevel=ERROR``, else "Shared connection to ... closed."), where ioc,
    whose ssh is mitogen's, gives its own account of what was lost.

Async job ids
  * ``j<number>.<pid>`` (``ansible_job_id``, ``results_file``) becomes
    ``j<jid>``: the action draws the number at random, async_wrapper (or the
    runner) appends its pid.

Item labels
  * ``runner_item_*`` and ``runner_retry`` events get a ``label`` field: the
    ``(item=…)`` text the default callback prints (``_ansible_item_label``,
    else the loop variable), computed the same way for both engines, so the
    label is compared and not how the engine carries it.

Keys dropped anywhere inside a result (registered values shown by ``debug``
included)
  * ``_ansible_*``: Ansible's internal keys (the callback strips them too;
    ioc's JSON writes what its console callback receives).
  * ``start``, ``end``, ``delta``: wall-clock timestamps and durations of
    ``command``/``shell``.
  * ``invocation``: the module arguments as the module saw them, an echo of
    the task, not a result; Ansible removes it inconsistently (top level
    only, and only in some paths).
  * ``exception``: a Python traceback (or "(traceback unavailable)"),
    engine-internal text.
  * ``warnings``, ``deprecations``: engine/version-specific advice, not results.
  * ``src`` when its value lies in Ansible's per-task temporary directory
    (``<ansible-tmp>/.source.txt``): the copy/template action plugins upload
    the content to a random temporary file and the copy module reports that
    upload as ``src``. ioc writes from the shipped content and has no such
    file; a ``src`` naming a real path is kept and compared.

Gathered facts
  * ``ansible_facts`` in the result of the implicit ``Gathering Facts``
    task becomes ``"<facts>"``: Ansible's setup module reports hundreds of
    machine facts and ioc's runner a subset of them (docs/status.md), with
    values that change between two runs (time, load, free memory). The facts
    a playbook uses are compared through what it prints with them
    (facts_gathered.yml).

Keys dropped from a ``stat`` dictionary (the ``stat`` module's result)
  * ``atime``, ``mtime``, ``ctime``, ``inode``, ``dev``, ``version``:
    timestamps, inode numbers and the inode generation differ between two
    runs by construction.

The ``file_diff`` event
  * Only its result's ``changed`` and ``diff`` are compared: Ansible passes
    whatever the action's result holds when the diff is sent (``backup``
    from ``lineinfile``, nothing more from ``copy``), the diff is what the
    callback prints.

Keys dropped from the callback result of ``runner_*`` events only
  * top-level ``failed`` and ``skipped``, and the same keys in each entry of
    a loop's ``results``: ansible-core 2.19+ never passes them to callbacks
    (``Destination.NOT_CALLBACK``), they are the event's status (``runner_ok``
    / ``runner_failed`` / ``runner_skipped``), which is compared. The
    *registered* value keeps them, and the playbooks compare it through
    ``debug: var=…``, where this rule does not apply.

Order
  * Within each run of per-host events between two host-less events
    (``task_start``, ``handler_task_start``, ``play_start``, ``stats``, …),
    events are grouped by host in play-host order, each host's events kept
    in their own order: linear-semantics L1.4 leaves the interleaving of
    hosts inside one step unspecified (Ansible with forks=5 sends every
    host's ``runner_start`` first); the canonical replay is per-host groups.
  * The ``hosts`` of an ``include`` event are put in play-host order:
    Ansible lists the hosts of an included file in the order their include
    results came back from the forks (``included: notifier for h2, h1``), a
    race; the console rule for that line is the same (``console.py``).
  * ``time`` (ioc writes when it wrote each event) is dropped from every event.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, Iterable, List, Sequence, Tuple

DROPPED_EVENTS = frozenset({"transport", "warning"})
VOLATILE_KEYS = frozenset({
    "start", "end", "delta", "invocation", "exception", "warnings", "deprecations",
})
STAT_VOLATILE_KEYS = frozenset({"atime", "mtime", "ctime", "inode", "dev", "version"})
CALLBACK_ONLY_DROPPED = ("failed", "skipped")
GATHER_TASK = "Gathering Facts"
BUILTIN_PREFIX = re.compile(r"^ansible\.(builtin|legacy)\.")
ANSIBLE_TMP = re.compile(r"/[^\s'\"]*/\.ansible/tmp/ansible-tmp-[^/\s'\"]+")
JOB_ID = re.compile(r"(?<![\w.])j\d{1,12}\.\d+(?![\w.])")
NOT_SENT = re.compile(r"Data could not be sent to remote host ['\"]([^'\"]+)['\"]\. "
                      r"Make sure this host can be reached over (?:ssh|SSH)[:.].*", re.S)


def load(path: Path) -> List[Dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class _Paths:
    def __init__(self, replacements: Sequence[Tuple[str, str]]) -> None:
        # Longest first, so that <out> (inside <work>) wins over <work>.
        self.replacements = sorted(((str(p), name) for p, name in replacements if str(p)),
                                   key=lambda pair: -len(pair[0]))

    def text(self, value: str) -> str:
        for path, name in self.replacements:
            value = value.replace(path, name)
        value = NOT_SENT.sub(r"Data could not be sent to remote host \1. Make sure this host "
                             r"can be reached over ssh: <why>", value)
        value = JOB_ID.sub("j<jid>", value)
        return ANSIBLE_TMP.sub("<ansible-tmp>", value)


def _clean(value: Any, paths: _Paths) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(k, str) and (k.startswith("_ansible_") or k in VOLATILE_KEYS):
                continue
            if k == "src" and isinstance(v, str) and ANSIBLE_TMP.search(v):
                continue
            if k == "stat" and isinstance(v, dict):
                v = {sk: sv for sk, sv in v.items() if sk not in STAT_VOLATILE_KEYS}
            out[paths.text(k) if isinstance(k, str) else k] = _clean(v, paths)
        return out
    if isinstance(value, list):
        return [_clean(v, paths) for v in value]
    if isinstance(value, str):
        return paths.text(value)
    return value


def _drop_status_keys(result: Dict[str, Any]) -> Dict[str, Any]:
    result = {k: v for k, v in result.items() if k not in CALLBACK_ONLY_DROPPED}
    if isinstance(result.get("results"), list):
        result["results"] = [
            {k: v for k, v in r.items() if k not in CALLBACK_ONLY_DROPPED}
            if isinstance(r, dict) else r
            for r in result["results"]
        ]
    return result


def _item_label(result: Dict[str, Any]) -> Any:
    # As ansible.plugins.callback.CallbackBase._get_item_label.
    if "_ansible_item_label" in result:
        return result["_ansible_item_label"]
    return result.get(result.get("ansible_loop_var", "item"))


def _event(raw: Dict[str, Any], paths: _Paths) -> Dict[str, Any]:
    event = dict(raw)
    event.pop("time", None)  # when ioc wrote it: differs between any two runs
    if event["event"] == "playbook_start":
        event.pop("path", None)
    if event["event"] == "play_start":
        event.pop("hosts", None)
    if isinstance(event.get("action"), str):
        event["action"] = BUILTIN_PREFIX.sub("", event["action"])
    if event["event"].startswith("runner_item_") or event["event"] == "runner_retry":
        if isinstance(event.get("result"), dict) and (
                "ansible_loop_var" in event["result"] or "_ansible_item_label" in event["result"]):
            event["label"] = _item_label(event["result"])
    if event["event"] == "file_diff" and isinstance(event.get("result"), dict):
        event["result"] = {k: v for k, v in event["result"].items() if k in ("changed", "diff")}
    if isinstance(event.get("result"), dict):
        event["result"] = _drop_status_keys(event["result"])
        if event.get("task") == GATHER_TASK and "ansible_facts" in event["result"]:
            event["result"]["ansible_facts"] = "<facts>"
    return _clean(event, paths)


def _group_by_host(events: List[Dict[str, Any]], host_order: Sequence[str]) -> List[Dict[str, Any]]:
    rank = {h: i for i, h in enumerate(host_order)}
    out: List[Dict[str, Any]] = []
    run: List[Dict[str, Any]] = []

    def flush() -> None:
        # sorted() is stable: each host's own events keep their order.
        out.extend(sorted(run, key=lambda e: rank.get(e["host"], len(rank))))
        run.clear()

    for event in events:
        if "host" in event:
            run.append(event)
        else:
            flush()
            out.append(event)
    flush()
    return out


def normalize(raw_events: Iterable[Dict[str, Any]], *, workdir: Path, out_dir: Path,
              host_order: Sequence[str]) -> Tuple[List[str], Dict[str, Dict[str, int]]]:
    paths = _Paths([(workdir.resolve(), "<work>"), (workdir, "<work>"),
                    (out_dir.resolve(), "<out>"), (out_dir, "<out>")])
    events = [_event(e, paths) for e in raw_events if e.get("event") not in DROPPED_EVENTS]
    recap: Dict[str, Dict[str, int]] = {}
    for e in events:
        if e["event"] == "stats":
            recap = e["hosts"]
    events = _group_by_host(events, host_order)
    rank = {h: i for i, h in enumerate(host_order)}
    for e in events:
        if e["event"] == "include" and isinstance(e.get("hosts"), list):
            e["hosts"] = sorted(e["hosts"], key=lambda h: rank.get(h, len(rank)))
    return [json.dumps(e, sort_keys=True) for e in events], recap


def file_tree(root: Path) -> Dict[str, Any]:
    """Relative path → (kind, mode, content or link target) for everything under root."""
    tree: Dict[str, Any] = {}
    if not root.exists():
        return tree
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        st = path.lstat()
        mode = oct(st.st_mode & 0o7777)
        if path.is_symlink():
            tree[rel] = ("link", mode, str(path.readlink()))
        elif path.is_dir():
            tree[rel] = ("dir", mode, None)
        else:
            data = path.read_bytes()
            try:
                content: Any = data.decode()
            except UnicodeDecodeError:
                content = repr(data)
            tree[rel] = ("file", mode, content)
    return tree
