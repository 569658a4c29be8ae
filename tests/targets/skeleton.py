"""What a user sees of a target's run, reduced to what must be equal between strategies.

A run's stdout and its stderr are two streams, each read on its own (the
order in which lines of the two reach a console is timing: callback_default's
``runme.sh`` copies each through a ``tee`` of its own); a harness before
2026-11-27 kept only the console, one stream. Together they hold
ansible-test's own lines, ``runme.sh``'s ``set -x`` trace (stderr), and the
output of every ``ansible-playbook`` the target starts (the default callback
prints its banners and results on stdout, ``[ERROR]``/``[WARNING]`` on
stderr, and failures there too under ``display_failed_stderr``). :func:`view`
turns a stream into its **skeleton**: one line per thing the default callback
says about the run,

* banners: ``PLAY [...]``, ``TASK [...]``, ``RUNNING HANDLER [...]``,
  ``PLAY RECAP``, ``NO MORE HOSTS LEFT`` (the trailing stars dropped: their
  number only pads to the terminal width), and at ``-vv`` the ``task path:``
  line after a task banner;
* per-host status lines: ``ok``/``changed``/``skipping``/``failed``/``fatal``
  with the host, ``-> delegated host``, ``FAILED!``/``UNREACHABLE!`` and the
  ``(item=...)`` label; ``...ignoring``, ``included: <file> for <hosts>``,
  ``FAILED - RETRYING: ...``, ``skipping: no hosts matched``, ``META: ...``,
  ``NOTIFIED HANDLER ...``, ``ASYNC ...``;
* of a status line's result (the ``=> {...}`` JSON at ``-v``, one line or
  indented over several, or the indented YAML of
  ``callback_result_format=yaml``): its **top-level keys** and its ``msg`` — the
  failure message of a failed result, the text ``debug``/``assert`` print —
  not the other values, which carry timings, facts and checksums of the
  moment. One key is left out: ``src`` when it names a file in Ansible's
  per-task temporary directory (``~/.ansible/tmp/ansible-tmp-…/source``):
  the ``copy``/``template`` action uploads the content there and the module
  reports that upload, which is gone when the task ends; mitogen_batch
  ships the content with the batch and has no such file (the rule of
  ``tests/conformance/normalize.py``);
* messages: the first line of ``[ERROR]:``, ``ERROR!``, ``[WARNING]:`` and
  ``[DEPRECATION WARNING]:``, and each ``Origin: <file>:<line>:<col>`` of an
  error (where the error points is part of what it says);
* the PLAY RECAP lines (runs of blanks made single).

Each skeleton line remembers the last ``+ ansible-playbook ...`` line of the
trace before it and the last banner in its stream, so a difference can be
located (a stdout line by its task, a stderr line by its command).

Normalisation, the whole of it (:class:`Normaliser`, applied to every line
first), each rule because the value differs between two runs of the *same*
strategy:

* the private tree each strategy runs from becomes ``<tree>``;
* ansible-test's per-target work directory
  ``<target>-<8 random chars>-ÅÑŚÌβŁÈ``, its injector and python wrapper
  directories (``/tmp/ansible-test-XXXXXXXX-injector``,
  ``/tmp/python-XXXXXXXX-ansible``), Ansible's
  ``ansible-tmp-<time>-<pid>-<random>`` and ``ansible-local-<pid><random>``
  directories, ``mktemp`` names (``/tmp/tmp.XXXXXXXXXX``), Python
  ``tempfile`` names (``/tmp/tmpXXXXXXXX``) and those of Ansible's
  ``tempfile`` module (``/tmp/ansible.XXXXXXXX``, its default prefix; the
  ``setup_remote_tmp_dir`` target's ``/tmp/ansible.XXXXXXXX.test``): the
  random part becomes ``<rand>``;
* the job id of an ``async`` task (``async_wrapper``'s ``j<random>.<pid>``,
  which ``ASYNC OK on <host>: jid=...`` prints) becomes ``j<rand>``;
* a sha256/sha512-crypt hash with a 16-character salt
  (``$6$rounds=656000$<salt>$<hash>``: ``password_hash`` with no salt given
  draws one at random) becomes ``$6$rounds=656000$<rand>$<hash>``;
* a wall-clock time ``YYYY-MM-DD HH:MM:SS[.ffffff]`` becomes ``<time>``
  and a decimal number with four or more decimals ``<seconds>``: what
  targets print of ``command`` results (``start``/``end``) and their own
  measurements (``loops``: "tdiff=1.3583…").

Ordering: within the status lines of one task (between two banners or other
host-less lines), lines are grouped by host, each host's lines in their own
order, hosts sorted by name; an ``[ERROR]``/``[WARNING]`` block belongs to the
status line it precedes, ``...ignoring`` to the one it follows. The linear
strategy with forks > 1 prints hosts in the order its workers finish
(linear-semantics L1.4: unspecified), so two linear runs differ there. On
stderr, where a message has no status line after it, consecutive message
blocks (a message and its ``Origin:`` lines) that name the same ``Origin:``
are one task's messages for several hosts: they are sorted.

Dropped lines: ``[DEPRECATION WARNING]: Use of strategy plugins not included
in ansible.builtin ...`` and the ``[WARNING]: Deprecation warnings can be
disabled ...`` line after it: Ansible announces any third-party strategy so,
and the candidate *is* one (ansible-test turns deprecation warnings off; a
target that turns them on sees it).
"""
from __future__ import annotations

import dataclasses
import json
import re
import shlex
import textwrap
from pathlib import Path
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Tuple

import yaml

# -- normalisation -----------------------------------------------------------------

_RANDOM = (
    # ansible-test's work dir per target: tempfile.mkdtemp(prefix=target + '-', suffix=...)
    (re.compile(r"(?<=-)[A-Za-z0-9_]{8}(?=-ÅÑŚÌβŁÈ)"), "<rand>"),
    (re.compile(r"/tmp/ansible-test-[A-Za-z0-9_]{8}-injector"), "/tmp/ansible-test-<rand>-injector"),
    (re.compile(r"/tmp/python-[A-Za-z0-9_]{8}-ansible"), "/tmp/python-<rand>-ansible"),
    (re.compile(r"ansible-tmp-[0-9.]+-[0-9]+-[0-9]+"), "ansible-tmp-<rand>"),
    (re.compile(r"ansible-local-[0-9]+[A-Za-z0-9_]{8}"), "ansible-local-<rand>"),
    (re.compile(r"/tmp/tmp\.[A-Za-z0-9]{10}"), "/tmp/tmp.<rand>"),
    (re.compile(r"/tmp/tmp[a-z0-9_]{8}(?![A-Za-z0-9_])"), "/tmp/tmp<rand>"),
    # Ansible's tempfile module: mkdtemp/mkstemp(prefix="ansible.", suffix="") in
    # TMPDIR, and setup_remote_tmp_dir's directory, made with it (suffix=".test")
    (re.compile(r"/tmp/ansible\.[a-z0-9_]{8}(?![A-Za-z0-9_-])"), "/tmp/ansible.<rand>"),
    # async_wrapper's job id, "j<random>.<its pid>" (ASYNC OK/POLL/FAILED lines, jid=)
    (re.compile(r"(?<![\w.])j[0-9]{1,12}\.[0-9]+(?![\w.])"), "j<rand>"),
    # wall-clock times in printed results (command's "start"/"end")
    (re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?"), "<time>"),
    # durations and clock readings targets print (loops: "tdiff=1.358381986618042")
    (re.compile(r"(?<![\w.])\d+\.\d{4,}(?![\w.])"), "<seconds>"),
    # password_hash's default: sha512_crypt with a random 16-character salt
    # (filter_core prints one); its salt and hash differ in every run
    (re.compile(r"\$([56])\$(rounds=\d+\$)?[./0-9A-Za-z]{16}\$[./0-9A-Za-z]{43,86}(?![./0-9A-Za-z])"),
     r"$\1$\2<rand>$<hash>"),
)


class Normaliser:
    """Replaces what differs between two runs of one strategy (see the module docstring)."""

    def __init__(self, tree: Optional[Path]) -> None:
        roots = []
        if tree is not None:
            roots = sorted({str(tree), str(Path(tree).resolve())}, key=len, reverse=True)
        self.roots = [r for r in roots if r and r != "."]

    def line(self, text: str) -> str:
        for root in self.roots:
            text = text.replace(root, "<tree>")
        for pattern, replacement in _RANDOM:
            text = pattern.sub(replacement, text)
        return text


# -- parsing the console ---------------------------------------------------------------

#: Ansible's per-task temporary directory on the target.
_ANSIBLE_TMP = re.compile(r"/\.ansible/tmp/ansible-tmp-")
_BANNER = re.compile(r"^(PLAY \[.*\]|PLAY|TASK \[.*\]|RUNNING HANDLER \[.*\]|PLAY RECAP|"
                     r"NO MORE HOSTS LEFT|PLAYBOOK: .*|CUSTOM STATS: |DRY RUN)"
                     r"(?: \[CHECK MODE\])? \*+$")
_STATUS = re.compile(r"^(?:ok|changed|skipping|failed|fatal): \[(?P<host>[^\]]*?)(?: -> [^\]]*)?\]")
_BODY = re.compile(r" => (?=\{(?:\"|\}|$))")
_RECAP = re.compile(r"^(?P<host>\S+)\s+: ok=\d+\s+changed=\d+\s+unreachable=\d+\s+failed=\d+")
_OTHER_EVENTS = re.compile(r"^(?:\.\.\.ignoring|included: .* for .*|FAILED - RETRYING: .*|"
                           r"skipping: no hosts matched|META: .*|NOTIFIED HANDLER .*|"
                           r"ASYNC (?:OK|FAILED|POLL) on .*)$")
_MESSAGE = re.compile(r"^(?:\[ERROR\]: |ERROR! |\[WARNING\]: |\[DEPRECATION WARNING\]: )")
_ORIGIN = re.compile(r"^Origin: ")
#: runme.sh's trace of an ansible-playbook command (``VAR=x ansible-playbook ...``), not
#: of an assignment that holds its output (``+ out='ansible-playbook [core ...]``).
_PLAYBOOK_TRACE = re.compile(r"^\++ (?:[A-Za-z_][A-Za-z0-9_]*=\S* )*(?:\S*/)?ansible-playbook(?: |$)")
_STRATEGY_DEPRECATION = (
    "[DEPRECATION WARNING]: Use of strategy plugins not included in ansible.builtin",
    "[WARNING]: Deprecation warnings can be disabled by setting",
)
#: ansible-test's own line when it leaves a target out (aliases, missing root or ssh).
_EXCLUDED = re.compile(r"^WARNING: Excluding .*tests marked .*$")


@dataclasses.dataclass(frozen=True)
class Line:
    """One skeleton line and where it was printed."""

    text: str
    #: The last ``+ ansible-playbook ...`` trace line before it ("" for a role target).
    command: str = ""
    #: The last banner before it.
    banner: str = ""
    #: The host a status line is about (orders lines within a task), else "".
    host: str = ""


def read_log(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def _summary(body: str, form: str = "json") -> str:
    """Keys and ``msg`` of a result (the raw text when it does not parse)."""
    try:
        value: Any = json.loads(body) if form == "json" else yaml.safe_load(body)
    except (ValueError, yaml.YAMLError):
        return " => " + " ".join(body.split())  # as printed, on one line
    if not isinstance(value, dict):
        return " => " + json.dumps(value, sort_keys=True, ensure_ascii=False)
    keys = [k for k in value if not (k == "src" and isinstance(value[k], str)
                                     and _ANSIBLE_TMP.search(value[k]))]
    text = " => {%s}" % ", ".join(sorted(keys))
    msg = value.get("msg")
    if msg is not None:
        text += " msg=" + (msg if isinstance(msg, str) else json.dumps(msg, sort_keys=True,
                                                                       ensure_ascii=False))
    return text


def _status(lines: Sequence[str], i: int) -> Tuple[str, int]:
    """A status line (and its result, when it spans lines): its skeleton text, lines used."""
    line = lines[i]
    match = _BODY.search(line)
    if not match:
        if line.rstrip().endswith(" =>") and i + 1 < len(lines) and lines[i + 1].startswith(" "):
            # callback_result_format=yaml: the result is the indented lines after it
            j = i + 1
            while j < len(lines) and lines[j].startswith(" "):
                j += 1
            body = textwrap.dedent("\n".join(lines[i + 1:j]))
            return line.rstrip()[:-len(" =>")] + _summary(body, "yaml"), j - i
        return line.rstrip(), 1
    head, body = line[:match.start()], line[match.end():]
    used = 1
    if body == "{":  # an indented result: up to the closing brace at column 0
        collected = [body]
        j = i + 1
        while j < len(lines) and lines[j].startswith(" "):
            collected.append(lines[j])
            j += 1
        if j < len(lines) and lines[j] == "}":
            body = "\n".join(collected + ["}"])
            used = j - i + 1
        # else: not a result (e.g. a runme.sh grep echoing the first line of one):
        # the line stands alone and the lines after it are read as usual.
    return head.rstrip() + _summary(body), used


def _units(text: str, normaliser: Normaliser) -> List[List[Line]]:
    """Skeleton lines in printed order, grouped into units (see :func:`view`)."""
    # Lines are recognised and results parsed as printed; only what the
    # skeleton keeps is normalised (a placeholder would break a result's JSON).
    lines = text.splitlines()
    norm = normaliser.line
    units: List[List[Line]] = []
    pending: List[Line] = []  # messages waiting for the status line they belong to
    command = banner = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if _PLAYBOOK_TRACE.match(line):
            command = norm(line.lstrip("+ ").strip())
            i += 1
            continue
        if line.startswith(_STRATEGY_DEPRECATION):
            i += 1
            continue
        banner_match = _BANNER.match(line.rstrip())
        if banner_match:
            banner = norm(banner_match.group(1))
            units.extend([[p] for p in pending])
            pending = []
            units.append([Line(banner, command, banner)])
            i += 1
            continue
        status = _STATUS.match(line)
        if status:
            text, used = _status(lines, i)
            host = status.group("host")
            units.append([dataclasses.replace(p, host=host) for p in pending]
                         + [Line(norm(text), command, banner, host)])
            pending = []
            i += used
            continue
        if line == "...ignoring" and units and units[-1][-1].host:
            units[-1].append(Line(line, command, banner, units[-1][-1].host))
            i += 1
            continue
        if line.startswith("task path: "):
            units.append([Line(norm(line.rstrip()), command, banner)])
            i += 1
            continue
        recap = _RECAP.match(line)
        if recap:
            units.append([Line(norm(" ".join(line.split())), command, banner)])
            i += 1
            continue
        if _OTHER_EVENTS.match(line.rstrip()):
            host = ""
            retry = re.match(r"^FAILED - RETRYING: \[([^\]]*?)(?: -> [^\]]*)?\]", line)
            if retry:
                host = retry.group(1)
            units.append([dataclasses.replace(p, host=host) for p in pending]
                         + [Line(norm(line.rstrip()), command, banner, host)])
            pending = []
            i += 1
            continue
        if _MESSAGE.match(line) or _ORIGIN.match(line):
            pending.append(Line(norm(line.rstrip()), command, banner))
        i += 1
    units.extend([[p] for p in pending])
    return units


def view(text: str, normaliser: Normaliser) -> List[Line]:
    """The skeleton of a console log, in canonical order (module docstring)."""
    out: List[Line] = []
    segment: List[List[Line]] = []

    def flush() -> None:
        # sorted() is stable: each host's units keep their order.
        for unit in sorted(segment, key=lambda u: u[-1].host):
            out.extend(unit)
        segment.clear()

    for unit in _units(text, normaliser):
        if unit[-1].host:
            segment.append(unit)
        else:
            flush()
            out.extend(unit)
    flush()
    return _one_task_messages_sorted(out)


def _one_task_messages_sorted(lines: List[Line]) -> List[Line]:
    """``lines`` with each run of consecutive host-less message blocks (a message
    line and the ``Origin:`` lines after it) that name the same origins sorted."""
    blocks: List[List[Line]] = []
    for line in lines:
        if blocks and _ORIGIN.match(line.text) and not line.host:
            blocks[-1].append(line)
        else:
            blocks.append([line])

    def place(block: List[Line]) -> Tuple[str, ...]:
        if block[0].host or not _MESSAGE.match(block[0].text):
            return ()
        return tuple(l.text for l in block[1:])

    out: List[Line] = []
    run: List[List[Line]] = []  # consecutive blocks of one place

    def end_run() -> None:
        for block in sorted(run, key=lambda b: [l.text for l in b]):
            out.extend(block)
        run.clear()

    for block in blocks:
        if run and place(block) != place(run[0]):
            end_run()
        if place(block):
            run.append(block)
        else:
            out.extend(block)
    end_run()
    return out


# -- comparing -----------------------------------------------------------------------


def recap(lines: Iterable[Line]) -> List[str]:
    """The PLAY RECAP lines of every ansible-playbook run, in order."""
    return [l.text for l in lines if _RECAP.match(l.text)]


def _where(line: Line) -> str:
    parts = []
    if line.command:
        parts.append("in `%s`" % line.command)
    if line.banner:
        parts.append("at %s" % line.banner)
    return ", ".join(parts)


#: A report quotes this much of a skeleton line (the files beside the logs have it whole).
QUOTE_LIMIT = 400


def _quote(text: str) -> str:
    if len(text) > QUOTE_LIMIT:
        text = text[:QUOTE_LIMIT] + "…"
    return json.dumps(text, ensure_ascii=False)


def first_unequal(a: Sequence[Line], b: Sequence[Line]) -> Optional[int]:
    """Index of the first skeleton line that differs (or that one side lacks)."""
    for i in range(max(len(a), len(b))):
        if i >= len(a) or i >= len(b) or a[i].text != b[i].text:
            return i
    return None


def brief_difference(a: Sequence[Line], rc_a: int, b: Sequence[Line], rc_b: int,
                     stream: str = "") -> str:
    """Where the runs part, in a few words (for a table): exit codes and the task
    (of a stream with no banners, the command)."""
    words = []
    if rc_a != rc_b:
        words.append("exit %d/%d" % (rc_a, rc_b))
    i = first_unequal(a, b)
    if i is not None:
        anchor = a[i] if i < len(a) else b[i]
        at = anchor.banner or ("`%s`" % anchor.command if anchor.command else "the start")
        words.append("%sat %s" % (stream + " " if stream else "", at))
    return ", ".join(words)


def first_difference(a: Sequence[Line], rc_a: int, b: Sequence[Line], rc_b: int,
                     names: Tuple[str, str] = ("linear", "mitogen_batch"),
                     stream: str = "") -> Optional[str]:
    """None when exit codes and skeletons are equal; else the first difference, in
    words (the line named with its ``stream``, when given)."""
    words = []
    if rc_a != rc_b:
        words.append("exit code %s %d, %s %d" % (names[0], rc_a, names[1], rc_b))
    i = first_unequal(a, b)
    if i is not None:
        left = a[i] if i < len(a) else None
        right = b[i] if i < len(b) else None
        anchor = left or right
        assert anchor is not None
        where = _where(anchor)
        words.append("%s%s: %s %s; %s %s" % (
            "%sline %d" % (stream + " " if stream else "", i + 1),
            " (%s)" % where if where else "",
            names[0], _quote(left.text) if left else "<nothing more>",
            names[1], _quote(right.text) if right else "<nothing more>"))
    return "; ".join(words) if words else None


def _first_unequal_stream(a: Mapping[str, Sequence[Line]], b: Mapping[str, Sequence[Line]]) -> str:
    """The first stream (in ``a``'s order) whose skeletons differ, or ""."""
    for stream in a:
        if first_unequal(a[stream], b.get(stream, [])) is not None:
            return stream
    return ""


def first_difference_of_streams(a: Mapping[str, Sequence[Line]], rc_a: int,
                                b: Mapping[str, Sequence[Line]], rc_b: int,
                                names: Tuple[str, str] = ("linear", "mitogen_batch"),
                                ) -> Optional[str]:
    """:func:`first_difference` of two runs' skeletons by stream (each compared on
    its own, in order): exit codes, and the first line of the first stream that differs."""
    stream = _first_unequal_stream(a, b)
    if not stream:
        return first_difference([], rc_a, [], rc_b, names)
    return first_difference(a[stream], rc_a, b.get(stream, []), rc_b, names, stream)


def brief_difference_of_streams(a: Mapping[str, Sequence[Line]], rc_a: int,
                                b: Mapping[str, Sequence[Line]], rc_b: int) -> str:
    stream = _first_unequal_stream(a, b)
    if not stream:
        return brief_difference([], rc_a, [], rc_b)
    return brief_difference(a[stream], rc_a, b.get(stream, []), rc_b, stream)


def not_run(text: str) -> Optional[str]:
    """ansible-test's reason for leaving the target out, when it ran nothing."""
    lines = text.splitlines()
    if not any(l.startswith("WARNING: All targets skipped.") for l in lines):
        return None
    reasons = [l[len("WARNING: "):] for l in lines if _EXCLUDED.match(l)]
    return "; ".join(reasons) or "all targets skipped"


def failure_summary(text: str, normaliser: Normaliser) -> str:
    """Why a run failed, for a report line: the last command runme.sh ran and
    the last error printed after it (a role target has no command).

    The commands of an exit trap (``trap cleanup EXIT``, traced as ``+ trap
    cleanup EXIT``) run after the one that failed: from the line that starts
    the trap's command on, the trace is not read (callback_default's last
    traced line is its cleanup's ``[[ -n '' ]]``, the failure a ``diff``)."""
    command, error = "", ""
    traps: List[str] = []
    for line in text.splitlines():
        if re.match(r"\+ [A-Za-z_./$(\[]", line):  # runme.sh's trace, not a diff line
            traced = line[2:].strip()
            if traced in traps:
                break
            trap = _trap_command(traced)
            if trap:
                traps.append(trap)
            command, error = traced, ""
        elif line.startswith(("fatal: ", "failed: ", "[ERROR]: ", "ERROR! ")) \
                and not line.startswith("...ignoring"):
            error = line.strip()
    words = []
    if command:
        words.append("last command `%s`" % normaliser.line(command)[:200])
    if error:
        words.append(normaliser.line(error)[:300])
    return ", ".join(words) or "no error line"


def _trap_command(traced: str) -> str:
    """The command ``trap <command> EXIT`` sets (its first line, as traced), or ""."""
    try:
        words = shlex.split(traced)
    except ValueError:
        return ""
    if len(words) >= 3 and words[0] == "trap" and words[1] != "-" \
            and any(w in ("EXIT", "0", "ERR") for w in words[2:]):
        return words[1].strip().splitlines()[0] if words[1].strip() else ""
    return ""
