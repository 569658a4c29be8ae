"""Ansible's ``k=v`` free-form argument syntax (``parse_kv`` / ``split_args``).

Used for free-form module arguments (``copy: src=a dest=b``,
``shell: echo hi chdir=/tmp``) and for ``-e k=v`` extra vars. Words are split
on spaces and newlines outside quotes and outside Jinja2 delimiters; a word
keeps its quotes, and only values of ``k=v`` pairs are unquoted.
"""
from __future__ import annotations

import codecs
import re
from typing import Any

__all__ = ["parse_kv", "split_args", "RAW_KEYS"]

#: The only ``k=v`` pairs ``command``-like modules peel off their free form.
RAW_KEYS = frozenset(
    ("chdir", "creates", "removes", "executable", "stdin", "warn",
     "stdin_add_newline", "strip_empty_ends")
)

_OPENERS = ("{{", "{%", "{#")
_CLOSERS = ("}}", "%}", "#}")
_SEPARATORS = " \n"
_ESCAPE_RE = re.compile(
    r"(\\U[0-9a-fA-F]{8}|\\u[0-9a-fA-F]{4}|\\x[0-9a-fA-F]{2}"
    r"|\\[0-7]{1,3}|\\N\{[^}]+\}|\\[\\'\"abfnrtv])"
)


def split_args(text: str) -> list[tuple[str, str]]:
    """Split free-form text into ``(word, whitespace after it)`` pairs.

    Keeping the whitespace lets ``_raw_params`` be rebuilt exactly as written
    (newlines of a multi-line ``shell: |`` included) once ``k=v`` words are
    removed.
    """
    words: list[tuple[str, str]] = []
    word: list[str] = []
    quote: str | None = None
    depth = 0
    i = 0
    while i < len(text):
        ch, pair = text[i], text[i:i + 2]
        if ch == "\\" and i + 1 < len(text):
            word.append(pair)
            i += 2
            continue
        if quote is not None:
            quote = None if ch == quote else quote
        elif pair in _OPENERS or (depth and pair in _CLOSERS):
            depth += 1 if pair in _OPENERS else -1
            word.append(pair)
            i += 2
            continue
        elif ch in "'\"":
            quote = ch
        elif ch in _SEPARATORS and not depth:
            _end_word(words, word, ch)
            i += 1
            continue
        word.append(ch)
        i += 1
    _end_word(words, word, "")
    return words


def _end_word(words: list[tuple[str, str]], word: list[str], sep: str) -> None:
    if word:
        words.append(("".join(word), sep))
        word.clear()
    elif words and sep:
        last, after = words[-1]
        words[-1] = (last, after + sep)


def parse_kv(text: str, check_raw: bool = False) -> dict[str, Any]:
    """Parse ``k=v`` words into a dict; other words go to ``_raw_params``.

    With ``check_raw`` (``command``, ``shell``, ``raw``, ``script``) only the
    keys in :data:`RAW_KEYS` are taken as options and every other word,
    ``FOO=bar`` included, stays in the command line. Values are strings.
    """
    options: dict[str, Any] = {}
    raw: list[str] = []
    for word, sep in split_args(text):
        pair = _split_pair(word)
        if pair is None or (check_raw and pair[0] not in RAW_KEYS):
            raw.append(word + sep)
        else:
            options[pair[0].strip()] = unquote(pair[1].strip())
    if raw:
        options["_raw_params"] = "".join(raw).rstrip(" ")
    return options


def _split_pair(word: str) -> tuple[str, str] | None:
    decoded = _decode_escapes(word)
    pos = 0
    while True:
        pos = decoded.find("=", pos + 1)
        if pos < 0:
            return None
        if decoded[pos - 1] != "\\":
            return decoded[:pos], decoded[pos + 1:]


def _decode_escapes(text: str) -> str:
    return _ESCAPE_RE.sub(lambda m: codecs.decode(m.group(0), "unicode-escape"), text)


def unquote(text: str) -> str:
    """Remove one pair of matching surrounding quotes, as Ansible does."""
    if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"" and text[-2] != "\\":
        return text[1:-1]
    return text
