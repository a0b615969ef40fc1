"""Words about tool calls, shared by the tools' specs (core/tools/<tool>/spec.py builds its subject, label and facts
from them): whitespace-collapsed and redacted text cut only between whole tokens (a quoted SQL literal is one token,
never mid-word), windows in words, plurals, the question's words.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, TypeVar

from core.evidence.redaction import Redactor

_SPACE = re.compile(r"\s+")
# A SQL-ish token: a quoted literal (with '' escapes) or a quoted identifier counts as one token.
_TOKEN = re.compile(r"'(?:[^']|'')*'?|\"[^\"]*\"?|`[^`]*`?|\S+")
ELLIPSIS = "…"
SQL_WORDS_MAX = 90
QUERY_MAX = 60
SERVICE_MAX = 60
_WORD = re.compile(r"[a-z0-9][a-z0-9_.-]{2,}")


def question_words(question: str) -> frozenset[str]:
    """The question's words of 3+ characters, lower-cased (service names, statuses, keywords)."""
    return frozenset(_WORD.findall(question.lower()))


def overlap(text: str, words: frozenset[str]) -> int:
    """How many of `words` the text contains (as words of 3+ characters)."""
    return len(words & set(_WORD.findall(text.lower()))) if words else 0


_REDACTOR = Redactor()
"""One memo for the process: subjects and labels repeat (the first look asks the same queries every run, each call's
subject is built when it starts, when it ends and for the report's sources)."""


def flat(text: Any) -> str:
    """Whitespace collapsed and secrets redacted."""
    return _REDACTOR.redact(_SPACE.sub(" ", str(text)).strip())


K = TypeVar("K")
_MEMO_ENTRIES = 2048
_MEMO_TEXT_CHARS = 1024


class _Remembered:
    """Bounded memos for the process, as the redactor's: shorten's answers for short texts (the same services,
    queries, levels and statements are shortened when each call starts, when it ends and for the report: a pure
    function of the text and the limit, the rules being the shipped ones) and short_window's for ISO-time strings (a
    run's calls share a window, and the first look's repeat)."""

    def __init__(self) -> None:
        self.shortened: dict[tuple[str, int], str] = {}
        self.windows: dict[tuple[str, str], str] = {}


_MEMO = _Remembered()


def _remember(memo: dict[K, str], key: K, answer: str) -> str:
    """`answer` kept under `key` in a bounded memo (emptied when full; atomic, so projection threads and the loop
    may share it)."""
    if len(memo) >= _MEMO_ENTRIES:
        memo.clear()
    memo[key] = answer
    return answer


def shorten(text: Any, limit: int) -> str:
    """Collapse whitespace, redact secrets and cut to `limit` characters at a token boundary, with a marker.

    Only a window of the text is flattened and redacted (a 16 KB SQL argument costs what a short one does: this runs
    on the event loop when a call starts and ends); the window grows while whitespace or redaction shrank it so much
    that the cut could fall short of it. What lies past the window is never shown, so a secret cut by the window's
    edge is beyond the cut too."""
    if type(text) is str and len(text) <= _MEMO_TEXT_CHARS:
        known = _MEMO.shortened.get((text, limit))
        return known if known is not None else _remember(_MEMO.shortened, (text, limit), _shorten(text, limit))
    return _shorten(text, limit)


def _shorten(text: Any, limit: int) -> str:
    raw = str(text)
    window = limit * 4 + 256
    while True:
        shown = flat(raw[:window])
        if window >= len(raw) or len(shown) >= limit + 256:
            return cut_words(shown, limit)
        window *= 4


def cut_words(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters between whole tokens, ending with '…' when anything was cut.

    A single token longer than the limit is cut inside (there is no boundary to cut at)."""
    if len(text) <= limit:
        return text
    room = max(0, limit - 1)
    kept = ""
    for match in _TOKEN.finditer(text):
        if match.end() > room:
            break
        kept = text[: match.end()]
    if not kept:
        kept = text[:room]
    return kept.rstrip() + ELLIPSIS


def plural(count: Any, noun: str) -> str:
    """'1 row', '37 rows', '2 matches', '3 series'."""
    if count == 1 or noun.endswith("series"):
        return f"{count} {noun}"
    return f"{count} {noun}es" if noun.endswith(("ch", "sh", "s", "x")) else f"{count} {noun}s"


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def window_text(start: Any, end: Any) -> str:
    """'between 22:30 and 23:30 UTC on 2026-11-29' (or the raw values when they are not ISO times)."""
    a, b = _parse_time(start), _parse_time(end)
    if a is None or b is None:
        if start or end:
            return f"between {shorten(start or '?', 40)} and {shorten(end or '?', 40)}"
        return "in the default window"
    zone = " UTC" if a.utcoffset() is not None and a.utcoffset() == b.utcoffset() and not a.utcoffset() else ""
    if a.date() == b.date():
        return f"between {a:%H:%M} and {b:%H:%M}{zone} on {a:%Y-%m-%d}"
    return f"between {a:%Y-%m-%d %H:%M} and {b:%Y-%m-%d %H:%M}{zone}"


def short_window(start: Any, end: Any) -> str:
    """'22:30-23:30 UTC' (same day; an en dash in the text) or '' when the window is not known yet."""
    if type(start) is str and type(end) is str and len(start) <= 64 and len(end) <= 64:
        known = _MEMO.windows.get((start, end))
        return known if known is not None else _remember(_MEMO.windows, (start, end), _short_window(start, end))
    return _short_window(start, end)


def _short_window(start: Any, end: Any) -> str:
    a, b = _parse_time(start), _parse_time(end)
    if a is None or b is None:
        return ""
    zone = " UTC" if a.utcoffset() is not None and a.utcoffset() == b.utcoffset() and not a.utcoffset() else ""
    if a.date() == b.date():
        return f"{a:%H:%M}–{b:%H:%M}{zone}"
    return f"{a:%m-%d %H:%M}–{b:%m-%d %H:%M}{zone}"


def sql_words(sql: Any, limit: int = SQL_WORDS_MAX) -> str:
    """The first words of a SQL statement, whole tokens only."""
    return shorten(sql or "", limit)
