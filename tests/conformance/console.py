"""What a user reads: the default callback's console of two runs, made comparable.

:func:`normalize` takes a run's console (stdout and stderr as one stream, as a
terminal shows them) and returns its lines with only what is volatile made
equal, each rule with its reason:

* The run's working directory and its ``out_dir`` become ``<work>`` and
  ``<out>``: each engine runs in its own fresh copy (as in ``normalize.py``).
* ``-v``'s "Using <path> as config file" names ``<config>``: each run is
  given an empty ``ansible.cfg`` of its own, and a reference run is shared
  by the tests of both engines, made in another test's directory.
* Ansible's per-task temporary directory (``…/.ansible/tmp/ansible-tmp-…``)
  becomes ``<ansible-tmp>``: a random name.
* The values of ``start``, ``end`` and ``delta`` in printed results become
  ``<time>``: wall-clock timestamps and durations of ``command``/``shell``.
* An async job id ``j<number>.<pid>`` becomes ``j<jid>`` (normalize.py).
* "Data could not be sent to remote host …" loses what follows it and
  the quotes around the host: Ansible's words for a closed port depend on a
  race (see ``normalize.py``): ssh.py says ``"h". … over ssh: <why>`` when
  writing to ssh's stdin fails, and ``'h'. … over SSH.`` (with the cause,
  such as "[Errno 32] Broken pipe", printed after it) when the initial data
  cannot be sent. For a connection cut under a running task, ``<why>`` is
  what ssh printed as it died (often nothing), where ioc gives its own
  account of what was lost. An ``[ERROR]`` block with such a ``<why>`` that
  repeats one printed before is dropped: Ansible prints each distinct error
  text once per run (``Display._deduplicate``), so two hosts' unreachable
  errors print once or twice depending on whether the race gave them the
  same words (CI saw both for ``unreachable_delegate_loop``).
* Results of one task from several hosts: ansible-playbook runs forks 5 and
  prints each host's lines as that host finishes, so within a task the
  hosts' blocks are put in play order (each host's own lines keep their
  order; a block is a status line with the lines that continue it, and the
  ``[ERROR]``/``[WARNING]`` lines or the file diff printed for that result
  just before it).
  ``included: <file> for h1, h2`` lists its hosts in play order too. A
  loop's ``...ignoring`` (its host's end of the task, after its items)
  names no host: it may come after another host's items, so it goes to the
  end of its task.
* ioc-run's own report line (``ioc: N batch(es); …``) is dropped: it is
  ioc's addition on stderr, nothing Ansible prints.
* Ansible's deprecation of strategy plugins outside ``ansible.builtin`` is
  dropped: ansible-playbook prints it for every third-party strategy, so for
  every mitogen_batch run. With it goes the line Ansible prints once per run
  before its first deprecation warning ("Deprecation warnings can be
  disabled…"), in both runs: which deprecation comes first moves it.

  Every banner ends its task's blocks, ``NO MORE HOSTS LEFT`` too: when
  the last host to finish a task was not the last in play order, that
  banner followed another host's result (CI saw ``dead_max_fail_percentage``
  move h2's ``fatal`` below it).

Nothing else is changed: banners, status lines, printed results, ``[ERROR]``
blocks with their ``Origin:`` excerpts, warnings, the recap.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional, Sequence

from tests.conformance.normalize import JOB_ID

#: Where a block of a task's output starts: a host's status line (a result,
#: an item, a retry, an async poll), or the error/warning lines printed just
#: before one. Anything else continues the block above it.
_RESULT = re.compile(r"^(ok|changed|skipping|fatal|failed|FAILED - RETRYING|ASYNC [A-Z]+ on"
                     r"|ASYNC POLL on)[: ]")
_PREFACE = re.compile(r"^(\[(ERROR|WARNING|DEPRECATION WARNING)\]|--- before)")
_HOST = re.compile(r"\[([^\]]+)\]")
_ASYNC_HOST = re.compile(r"^ASYNC [A-Z]+ on ([^:]+):")
_SECTION = re.compile(r"^(PLAY|TASK|RUNNING HANDLER|PLAY RECAP|NO MORE HOSTS LEFT) ?\[?.*\*{3,}$")
_INCLUDED = re.compile(r"^(included: .* for )(.*?)( => \(item=.*\))?$")
_TIMES = re.compile(r'"(start|end|delta)": "[^"]*"')
_TMP = re.compile(r"/[^\s'\"]*/\.ansible/tmp/ansible-tmp-[^\s'\"/]+")
_DROPPED = ("ioc: ", "[DEPRECATION WARNING]: Use of strategy plugins not included in "
            "ansible.builtin are deprecated",
            "[WARNING]: Deprecation warnings can be disabled by setting")
_NOT_SENT_WHY = "reached over ssh: <why>"
_WHY = re.compile(r"Data could not be sent to remote host \\?[\"']([^\"'\\]+)\\?[\"']\. "
                  r"Make sure this host can be reached over (?:ssh|SSH)[:.][^\"\n]*")


_CONFIG = re.compile(r"^(Using ).+( as config file)$", re.M)


def normalize(text: str, workdir: Path, out_dir: Path, hosts: Sequence[str]) -> List[str]:
    """The console ``text`` of one run as comparable lines (see the module's rules)."""
    text = text.replace(str(out_dir), "<out>").replace(str(workdir), "<work>")
    text = _TMP.sub("<ansible-tmp>", text)
    text = _CONFIG.sub(r"\1<config>\2", text)
    text = _TIMES.sub(lambda m: '"%s": "<time>"' % m.group(1), text)
    text = JOB_ID.sub("j<jid>", text)
    text = _WHY.sub(r"Data could not be sent to remote host \1. Make sure this host can be "
                    r"reached over ssh: <why>", text)
    lines = [line for line in text.splitlines() if not line.startswith(_DROPPED)]
    out: List[str] = []
    section: List[List[str]] = []
    rank = {host: n for n, host in enumerate(hosts)}

    ignoring: List[str] = []  # a loop's "...ignoring" lines of the current task
    shown: set = set()  # the [ERROR] blocks with a <why> printed so far

    def flush() -> None:
        for block in _in_play_order(section, rank):
            if _PREFACE.match(block[0]) and _NOT_SENT_WHY in block[0]:
                text = "\n".join(block).rstrip()
                if text in shown:
                    continue  # (see the module's rule: Ansible's dedup, raced)
                shown.add(text)
            out.extend(block)
        out.extend(ignoring)
        section.clear()
        ignoring.clear()

    preface = False  # the block open now is [ERROR]/[WARNING] lines before a result
    for line in lines:
        m = _INCLUDED.match(line)
        if m:
            named = sorted(m.group(2).split(", "), key=lambda h: rank.get(h, len(rank)))
            line = m.group(1) + ", ".join(named) + (m.group(3) or "")
        if _SECTION.match(line):
            # (the blank line a banner starts with ends the block before it)
            blank = bool(section) and section[-1][-1] == "" and section[-1].pop() == ""
            flush()
            out.extend([""] * blank + [line])
            preface = False
        elif _RESULT.match(line) and not (preface and section):
            section.append([line])
        elif _RESULT.match(line):
            section[-1].append(line)  # the result the [ERROR]/[WARNING] lines were for
            preface = False
        elif _PREFACE.match(line) and not preface:
            section.append([line])
            preface = True
        elif line == "...ignoring" and section and any(
                _RESULT.match(text) and "(item=" in text for text in section[-1]):
            ignoring.append(line)
        elif section:
            section[-1].append(line)
        else:
            out.append(line)
    flush()
    return out


def _in_play_order(blocks: List[List[str]], rank: dict) -> List[List[str]]:
    """A task's ``blocks``: first the ``[ERROR]``/``[WARNING]`` lines, then the
    results, each by the play order of the host they came with (stable: a
    host's own blocks keep their order; a block naming no host stays with the
    one before it). Ansible shows an error or warning once per run, before the
    result of whichever host finished first, so it is not tied to one host."""
    prefaces = []
    results = []
    last = -1
    for block in blocks:
        host = _host_of(block)
        if host is not None:
            last = rank.get(host, len(rank))
        split = next((n for n, line in enumerate(block) if _RESULT.match(line)), len(block)) \
            if _PREFACE.match(block[0]) else 0
        if split:
            prefaces.append((last, block[:split]))
        if block[split:]:
            results.append((last, block[split:]))
    return [block for _, block in sorted(prefaces, key=lambda pair: pair[0])] + \
        [block for _, block in sorted(results, key=lambda pair: pair[0])]


def _host_of(block: List[str]) -> Optional[str]:
    """The host of the block's status line (``[h2 -> h1]``: h2, the task's host)."""
    for line in block:
        if _RESULT.match(line):
            m = _ASYNC_HOST.match(line) or _HOST.search(line)  # ("ASYNC OK on h1: jid=...")
            return m.group(1).split(" -> ")[0] if m else None
    return None
