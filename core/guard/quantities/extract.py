"""The one quantity extractor, for draft text and evidence alike: typed quantities with normalised values.

Recognised, in this order at each position: ISO date-times (`2026-11-29T23:05:28Z`, `2026-11-29 22:50`), dates
(`2026-11-29`, `Nov 29`, `29 November 2026`), times of day (`23:05`, `23:05:28.123`, `2:02 pm`, `11pm`), IP
addresses, versions (`v4.18.0`, `4.18.0`, `v2`; `version 4.18`), identifiers with digits (`HikariPool-1`,
`SKU-2321`, `#1042`, `redis:6379`, hex ids), and numbers with what follows them: a magnitude (`42k`, `1.2M`,
`1e3`), a percent sign, a duration/size/rate unit (`30000ms`, `30 s`, `2-hour`, `512MiB`, `120 req/s`), or a noun
(a count: `3 pods`, `17 times`, `x3`). A bare number takes its kind from a `key=` before it (`latency_ms=30064` is
a duration, `status=502` an identifier) or from cue words (`HTTP 503`, `port 5432`, `error 1040`).
Digits glued after a letter or `_` are part of a word (`p99`, `k8s`, `call_12`, `HikariPool1`); ordinals, status
classes (`5xx`) and `24/7` are not quantities. Spelled-out numbers are read first (core/guard/quantities/words.py).

Where each token is: core/guard/quantities/tokens.py; what a number token is: core/guard/quantities/numbers.py;
here each token is typed, ranges take their unit, and `extract_at` reads the one token at an offset.
"""

from __future__ import annotations

import re

from core.guard.quantities.clock import datetime_quantity, month_date, time_quantity
from core.guard.quantities.model import Kind, Quantity
from core.guard.quantities.numbers import classify_number
from core.guard.quantities.tokens import scan
from core.guard.quantities.words import digits_for_words

_ALNUM_SKIP = re.compile(r"\d+(?:st|nd|rd|th)|[1-5]xx|\d+x", re.IGNORECASE)
_COMPOSITE = re.compile(r"(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?", re.IGNORECASE)
_LIMIT_CUE_AFTER = re.compile(r"\W{0,2}(?:\w+\W+){0,2}(?:limit|cap|max(?:imum)?)\b", re.I)
_LIMIT_WORDS = frozenset({"limit", "limited", "first", "top", "capped", "cap", "max", "maximum", "page"})


def is_limit_statement(text: str, claim: Quantity) -> bool:
    """Whether a number is written as a statement about a query limit: 'the first 20', 'limit 20', 'up to 20',
    '20 (the limit)'. Only such statements may rest on a call's limit argument."""
    before = text[max(0, claim.start - 24) : claim.start].lower().split()[-3:]
    if _LIMIT_WORDS.intersection(w.strip("(\"'[,") for w in before):
        return True
    joined = " ".join(before)
    return joined.endswith(("at most", "up to")) or _LIMIT_CUE_AFTER.match(text, claim.end) is not None


def _alnum(token: str, start: int, end: int) -> Quantity | None:
    if _ALNUM_SKIP.fullmatch(token) or token.lower() == "24/7":
        return None
    composite = _COMPOSITE.fullmatch(token)
    if composite is not None and any(composite.groups()):
        h, m, s = (int(g) if g else 0 for g in composite.groups())
        return Quantity(Kind.DURATION, h * 3600.0 + m * 60.0 + s, token, start, end, 0.5)
    return Quantity(Kind.IDENTIFIER, token.lower(), token, start, end)


def _quantity(text: str, match: re.Match[str]) -> Quantity | None:
    group = match.lastgroup  # each alternative is one outer named group, closed last
    written, start, end = match.group(0), match.start(), match.end()
    if group == "n":
        if text.startswith("24/7", start) or (text.startswith("7", start) and text[max(0, start - 3) : start] == "24/"):
            return None
        return classify_number(text, match)
    if group == "dt":
        return datetime_quantity(written, start, end)
    if group == "time":
        return time_quantity(written, match["ampm"] or match["ampm2"], start, end)
    if group == "ip" or group == "ident":
        return Quantity(Kind.IDENTIFIER, written.lower(), written, start, end)
    if group == "version":
        return Quantity(Kind.VERSION, written.lstrip("vV").lower(), written, start, end)
    if group == "date":
        # an impossible date (2026-11-55) is still a date claim: no evidence shows it, so it is never grounded
        return Quantity(Kind.DATE, written.replace("/", "-"), written, start, end)
    if group == "mdate":
        return month_date(written, start, end)
    if group == "port":
        return Quantity(Kind.IDENTIFIER, written[1:], written, start, end)
    return _alnum(written, start, end)


def extract(text: str, *, words: bool = True) -> list[Quantity]:
    """Every quantity of a text, in order. `words`: read spelled-out numbers too (draft text; spans then refer to
    the text with digits for words)."""
    if words:
        text = digits_for_words(text)
    found = [q for match in scan(text, 0) if (q := _quantity(text, match)) is not None]
    return _ranges(text, found) if len(found) > 1 else found


_RANGE_JOIN = re.compile(r"\s?(?:-|–|—|to|up to)\s?")
_UNIT_KINDS = frozenset({Kind.DURATION, Kind.SIZE, Kind.PERCENT, Kind.RATE})


def _ranges(text: str, found: list[Quantity]) -> list[Quantity]:
    """'30.0-30.1 s', '18 to 26 %': the first number of a range takes the unit written after the second."""
    for i in range(len(found) - 1):
        first, second = found[i], found[i + 1]
        if first.kind not in (Kind.NUMBER, Kind.COUNT) or second.kind not in _UNIT_KINDS or first.key:
            continue
        if _RANGE_JOIN.fullmatch(text, first.end, second.start) is None:
            continue
        digits = _BARE_DIGITS.match(second.text)
        if digits is None or not float(digits.group(0).replace(",", "")):
            continue
        factor = second.number / float(digits.group(0).replace(",", ""))
        found[i] = Quantity(second.kind, first.number * factor, first.text, first.start, first.end, first.tolerance * factor)
    return found


_BARE_DIGITS = re.compile(r"\d[\d,]*(?:\.\d+)?")


_LAST_SEPARATOR = re.compile(r".*[=()\[\]{};\"'!?<>&*@|\\~^$`\t\n\r]", re.DOTALL)
"""Up to the last character no token holds (any punctuation but `_-/.:,%#+`): a token covering an offset after it
starts after it, and scanning from there finds the same tokens after it (nothing before it reaches past it), unless
a letter follows it (scan takes a word right after its start as a possible month name, which after a separator it
never is)."""


def three_spaces_back(text: str, offset: int) -> int:
    """Where the word three spaces before `offset` starts (0 when there are fewer): no token reaches further back."""
    start = offset
    for _ in range(3):
        space = text.rfind(" ", 0, start)
        if space < 0:
            start = 0
            break
        start = space
    return start + 1 if start > 0 or text[:1] == " " else 0


def extract_at(text: str, offset: int) -> list[Quantity]:
    """The quantity of `text` whose token covers `offset` (empty when none), as extract(text, words=False) would
    find it, reading only a few words around it: no token spans more than three spaces before its digits, nor
    holds a separator (`=`, a bracket, a quote: `idle=0` is read from its `0`)."""
    start = three_spaces_back(text, offset)
    separated = _LAST_SEPARATOR.match(text, start, offset)
    if separated is not None and not text[separated.end() : separated.end() + 1].isalpha():
        start = separated.end()  # (after a letter a month name could start there: `(Nov 3` is not read as a date)
    for match in scan(text, start):
        if match.end() > offset:
            if match.start() > offset:
                return []
            quantity = _quantity(text, match)  # only the covering token is typed, not the ones before it
            return [quantity] if quantity is not None else []
    return []


def extract_with_text(text: str) -> tuple[str, list[Quantity]]:
    """(the text with digits for number words, its quantities): spans refer to the returned text."""
    converted = digits_for_words(text)
    return converted, extract(converted, words=False)
