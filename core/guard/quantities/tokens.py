"""Where the quantities of a text are: the extractor's token grammar and the scan that finds each token.

Recognised, in this order at each position: ISO date-times (`2026-11-29T23:05:28Z`, `2026-11-29 22:50`), dates
(`2026-11-29`, `Nov 29`, `29 November 2026`), times of day (`23:05`, `23:05:28.123`, `2:02 pm`, `11pm`), IP
addresses, versions (`v4.18.0`, `4.18.0`, `v2`), identifiers with digits (`HikariPool-1`, `SKU-2321`, `#1042`,
`redis:6379`, hex ids), and numbers with what is written right after them (a magnitude, a percent sign, a
duration/size/rate unit). Every token holds a digit, and where tokens start and end never depends on their types
(core/guard/quantities/extract.py types them).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from core.guard.quantities.clock import MONTHS
from core.guard.quantities.units import DURATION_SECONDS, SIZE_BYTES

_MONTH = r"(?=[adfjmnos])(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_SPACED_UNITS = tuple(sorted(
    [u for u in DURATION_SECONDS if len(u) > 1 and u not in {"wk", "wks"}] + [u for u in SIZE_BYTES if len(u) > 1] + ["s", "h"],
    key=len,
    reverse=True,
))
_GLUED_UNITS = tuple(sorted([*_SPACED_UNITS, "m", "d", "w", "b", "wk", "wks"], key=len, reverse=True))
_RATE_TIME = r"(?:s|sec|second|min|minute|h|hr|hour)"
_SPACED_FIRST = "".join(sorted({unit[0].lower() for unit in _SPACED_UNITS}))
_GLUED_FIRST = "".join(sorted({unit[0].lower() for unit in _GLUED_UNITS}))
"""The first letters of the units (the lookahead before each alternation of units only skips, case-insensitively,
what no unit could match: the same tokens, without trying every unit at every number); `[A-Za-z]++` in a rate gives
back no letter, as a shorter run of letters could never be followed by '/' or ' per ' anyway."""

TOKEN = re.compile(
    rf"""
    (?P<dt>(?<![\w.])\d{{4}}-\d{{2}}-\d{{2}}(?:[T\ ]|\ at\ )\d{{1,2}}:\d{{2}}(?::\d{{2}}(?:[.,]\d+)?)?
        (?:\ ?(?:Z|UTC|GMT|[+-]\d{{2}}:?\d{{2}}))?)
    |(?P<date>(?<![\w.])\d{{4}}[-/]\d{{2}}[-/]\d{{2}}(?!\d|:\d))
    |(?P<mdate>(?<![\w])(?:{_MONTH}\ \d{{1,2}}(?:st|nd|rd|th)?(?:,?\ \d{{4}})?
        |\d{{1,2}}(?:st|nd|rd|th)?\ {_MONTH}(?:,?\ \d{{4}})?)(?![\w:]))
    |(?P<time>(?<![\w.:])\d{{1,2}}:\d{{2}}(?::\d{{2}}(?:[.,]\d+)?)?(?:\ ?(?P<ampm>[ap]\.?m\.?)(?![a-z]))?(?!\d|:\d)
        |(?<![\w.:])\d{{1,2}}\ ?(?P<ampm2>[ap]\.?m\.?)(?![a-z]))
    |(?P<ip>(?<![\w.])\d{{1,3}}(?:\.\d{{1,3}}){{3}}(?::\d{{1,5}})?(?![\w.]))
    |(?P<version>(?<![\w.])(?:[vV]\d+(?:\.\d+)*(?:-[0-9A-Za-z.]+)?|\d+\.\d+\.\d+(?:[-+][0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?)(?![\w]))
    |(?P<ident>(?<![\w-])[A-Za-z][A-Za-z0-9_]*(?:[-/.][A-Za-z0-9_]+)*-\d[A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*(?![\w-])|\#\d+\b)
    |(?P<port>(?<=[A-Za-z0-9\]]):\d{{2,5}}(?!\d|:\d))
    |(?P<n>(?P<num>(?<![\w.,])(?P<x>[xX])?(?P<digits>(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d+)?)(?:[eE](?P<exp>[-+]?\d{{1,3}}))?)
        (?:(?P<mag>(?-i:k|K|M|bn))(?![A-Za-z]))?
        (?:(?P<pct>\ ?%|\ (?:percent|pct)\b)
          |(?P<rate>\ ?(?:[A-Za-z]++\ ?)?(?:/|\ per\ )(?P<rtime>{_RATE_TIME})\b|\ ?(?P<rshort>rps|qps|tps|rpm)\b)
          |(?:-|\ )(?=[{_SPACED_FIRST}])(?P<sunit>{"|".join(_SPACED_UNITS)})(?![A-Za-z])
          |(?=[{_GLUED_FIRST}])(?P<gunit>{"|".join(_GLUED_UNITS)})(?![A-Za-z0-9_])
        )?
        (?![A-Za-z0-9_]))
    |(?P<alnum>(?<![\w.])\d[A-Za-z0-9_]*[A-Za-z_][A-Za-z0-9_]*)
    """,
    re.VERBOSE | re.IGNORECASE,
)
_DIGITS = re.compile(r"\d+")


def scan(text: str, at: int) -> Iterator[re.Match[str]]:
    """Each token from `at` on (extract.py types it: where tokens start and end never depends on their types)."""
    token = TOKEN.match
    for run in _DIGITS.finditer(text, at):
        digit = run.start()
        if digit < at:
            continue  # inside the previous token
        before = text[digit - 1] if digit > at else " "
        if before == " " or before in "(=\"'[,;":  # the usual case: a token starts at the digit
            match = token(text, digit)
            if match is None and before == " " and digit - at >= 2 and text[digit - 2].isalpha():
                match = _month_first(text, digit, at)
            elif match is not None and before == " " and digit - at >= 2 and text[digit - 2].isalpha():
                match = _month_first(text, digit, at) or match
        else:
            match = None
            for start in _starts(text, digit, at):
                candidate = token(text, start)
                if candidate is not None and candidate.end() > digit:
                    match = candidate
                    break
        if match is None or match.end() <= digit:
            continue
        yield match
        at = match.end()


def _starts(text: str, digit: int, floor: int) -> Iterator[int]:
    """Where a token holding the digit at `digit` may start, earliest first: a month name before it ('Nov 29'), the
    start of its word ('HikariPool-1', 'x3', 'v4.18.0'), a one-character prefix ('#12', ':6379'), the digit."""
    word = digit
    while word > floor and (text[word - 1].isalnum() or text[word - 1] in "_./-"):
        word -= 1
    if word == digit and digit >= 2 and text[digit - 1] == " " and text[digit - 2].isalpha():
        month = text.rfind(" ", floor, digit - 1) + 1
        if month >= floor and text[month : digit - 1].rstrip(".").lower()[:3] in MONTHS:
            yield max(month, floor)
    if word < digit:
        yield word
    if digit > floor and text[digit - 1] in "xXvV#:" and digit - 1 != word:
        yield digit - 1
    yield digit


def _month_first(text: str, digit: int, floor: int) -> re.Match[str] | None:
    """'Nov 29': the token starts at the month name before the digits."""
    month = max(text.rfind(" ", floor, digit - 1) + 1, floor)
    if text[month : digit - 1].rstrip(".").lower()[:3] in MONTHS:
        found = TOKEN.match(text, month)
        if found is not None and found.end() > digit:
            return found
    return None
