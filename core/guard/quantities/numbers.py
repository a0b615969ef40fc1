"""What a number token is: its value and rounding, and its kind from what is written around it.

A magnitude, unit, percent sign or rate after it (`42k`, `30000ms`, `14 %`, `120 req/s`); else a `key=` before it
(`latency_ms=30064` is a duration, `status=502` an identifier); else cue words (`HTTP 503`, `port 5432`, `error
1040`, `version 4.18`); else a noun after it makes it a count (`3 pods`, `17 times`, `x3`), and nothing else a plain
number. Words right before it bound it ('about 490', 'more than 400'; see core/guard/quantities/match.py:fits). An
evidence value standing alone (a JSON number, a whole-number string) takes its kind from its field's name
(`bare_number`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from types import MappingProxyType

from core.guard.quantities.clock import decimals
from core.guard.quantities.model import Kind, Quantity
from core.guard.quantities.units import DURATION_SECONDS, MAGNITUDES, RATE_SHORTHANDS, SIZE_BYTES

_HTTP_REASON = re.compile(
    r"\s(?:OK|Created|Accepted|No Content|Moved|Found|Not Modified|Bad Request|Unauthorized|Forbidden|Not Found"
    r"|Method Not|Conflict|Gone|Too Many|Internal|Not Implemented|Bad Gateway|Service Unavailable|Gateway Time-?out)\b"
)
_HTTP_WORDS = frozenset({"http", "status", "responded", "returned", "returning", "returns", "response", "code", "answered",
                         "answering", "answers", "answer"})
_STATUS_VERBS = frozenset({"responded", "failed", "answered", "returned", "rejected", "errored", "replied", "aborted"})
_STATUS_NOUN = re.compile(r"\s(?:responses?|status(?:es)?|status codes?|replies)\b", re.IGNORECASE)
"""'341 502 responses': a number of 100-599 before 'responses' is an HTTP status."""
_DOTTED = re.compile(r"\d+(?:\.\d+)*")
_CODE_WORDS = frozenset({"port", "error", "errno", "err", "code", "sqlstate"})
_VERSION_WORDS = frozenset({"version", "versions", "release", "build", "tag"})
_KEY_UNIT = re.compile(
    r"(?:^|_)(?:(?P<dur>ns|us|ms|millis|s|sec|secs|seconds|min|mins|minutes|hours)|(?P<size>bytes|kb|mb|gb|kib|mib|gib)"
    r"|(?P<pct>pct|percent|percentage)|(?P<rate>rps|qps|per_s|per_sec|per_second)|(?P<id>status|code|port|id|version))$"
)
_DURATION_WORDS = frozenset({"took", "after", "in", "for", "within", "over", "lasted", "waited", "timeout"})
_NOUN_AFTER = re.compile(r"\ (?:more\ |new\ |other\ |distinct\ |separate\ |consecutive\ )?[A-Za-z]{2,}(?:\ [A-Za-z]{2,})?")


def _number_value(match: re.Match[str]) -> tuple[float, float]:
    """(value, tolerance) of a number match: magnitudes, exponents and written decimals set the rounding."""
    digits = match["digits"].replace(",", "")
    value = float(digits)
    step = 10.0 ** -decimals(digits)
    if match["exp"]:
        scale = float(f"1e{int(match['exp'])}")  # 1e400 is inf here, where 10.0 ** 400 raises OverflowError
        value *= scale
        step *= scale
    if match["mag"]:
        factor = MAGNITUDES[match["mag"]]
        value *= factor
        step *= factor
    if not math.isfinite(value):
        return value, 0.0  # beyond any float: no tolerance, which would be infinite and take any evidence value
    return value, step / 2


def _unit_quantity(match: re.Match[str], value: float, tol: float, text: str) -> Quantity | None:
    start, end = match.start(), match.end()
    if end == match.end("num"):
        return None  # nothing written after the digits (no magnitude, unit, percent sign or rate): most numbers
    unit = match["sunit"] or match["gunit"]
    if match["pct"]:
        return Quantity(Kind.PERCENT, value, text, start, end, tol)
    if match["rtime"] or match["rshort"]:
        per = match["rtime"] or RATE_SHORTHANDS.get(_fold(match["rshort"]), "")
        seconds = DURATION_SECONDS.get(_fold(per)) or DURATION_SECONDS.get(_fold(per)[:1])
        if seconds is None:
            return None  # a spelling only the pattern's case folding took for a unit: the number stays plain
        return Quantity(Kind.RATE, value / seconds, text, start, end, tol / seconds)
    if unit is None:
        return None
    spelled = unit if unit in DURATION_SECONDS else _fold(unit)
    if spelled in DURATION_SECONDS and unit not in {"M"}:
        factor = DURATION_SECONDS[spelled]
        return Quantity(Kind.DURATION, value * factor, text, start, end, tol * factor)
    if spelled.lower() in SIZE_BYTES:
        decimal, binary = SIZE_BYTES[spelled.lower()]
        return Quantity(Kind.SIZE, value * decimal, text, start, end, tol * decimal, alt=value * binary)
    return None


_RE_FOLDS = MappingProxyType(str.maketrans({"ſ": "s", "ı": "i", "İ": "i", "\u212a": "k"}))
"""Letters that re's IGNORECASE matches to an ASCII letter of a unit while str.lower() keeps them apart (long s,
dotless i, capital I with dot, the Kelvin sign): '12 per ſec' is the pattern's '12 per sec'."""


def _fold(spelling: str) -> str:
    """A unit as the table spells it, whatever case folding the token pattern matched it with."""
    return spelling.translate(_RE_FOLDS).lower()


def key_kind(key: str) -> tuple[Kind, float] | None:
    """The kind (and unit factor) a field, column or `key=` name gives a bare value: `latency_ms` -> duration in ms."""
    k = key.lower().rsplit(".", 1)[-1]
    found = _KEY_UNIT.search(k)
    if found is None:
        return None
    if found["dur"]:
        return Kind.DURATION, DURATION_SECONDS["ms" if found["dur"] == "millis" else found["dur"]]
    if found["size"]:
        return Kind.SIZE, SIZE_BYTES[found["size"]][0]
    if found["pct"]:
        return Kind.PERCENT, 1.0
    if found["rate"]:
        return Kind.RATE, 1.0
    if found["id"] == "version":
        return Kind.VERSION, 1.0
    return Kind.IDENTIFIER, 1.0


def bare_number(value: float, text: str, key: str) -> Quantity:
    """A standalone evidence value (a JSON number or a whole-number string), typed by its field or column name."""
    typed = key_kind(key) if key else None
    if typed is None:
        return Quantity(Kind.NUMBER, value, text, 0, len(text), key=key)
    kind, factor = typed
    if kind in {Kind.IDENTIFIER, Kind.VERSION}:
        shown = text if kind is Kind.VERSION else (str(int(value)) if float(value).is_integer() else text)
        return Quantity(kind, shown.lower(), text, 0, len(text), key=key)
    alt = value * factor * 1.024 if kind is Kind.SIZE and factor > 1 else None
    return Quantity(kind, value * factor, text, 0, len(text), alt=alt, key=key)


_BOUNDS = (
    ("~", ("about", "around", "roughly", "approximately", "approx.", "approx", "circa", "ca.", "some", "close to",
           "on the order of", "an estimated")),
    ("<", ("nearly", "almost", "just under", "just below", "a little under", "a bit under", "just shy of", "not quite")),
    (">", ("just over", "just above", "a little over", "a bit over", "slightly over", "slightly more than", "just past")),
    ("<=", ("fewer than", "less than", "under", "below", "at most", "no more than", "within", "not more than")),
    (">=", ("more than", "over", "above", "at least", "exceeding", "in excess of", "upwards of", "no less than",
            "not less than")),
)
_BOUND_WORDS = tuple(sorted(((word, bound) for bound, words in _BOUNDS for word in words), key=lambda p: len(p[0]), reverse=True))
_BOUND_WORDS_BY_LAST: Mapping[str, tuple[tuple[str, str], ...]] = MappingProxyType({
    last: tuple(pair for pair in _BOUND_WORDS if pair[0][-1] == last) for last in {word[-1] for word, _ in _BOUND_WORDS}
})
"""_BOUND_WORDS (longest first) by their last character: only those can end the text before a number."""
_BOUNDED_KINDS = frozenset({Kind.COUNT, Kind.NUMBER, Kind.PERCENT, Kind.DURATION, Kind.SIZE, Kind.RATE})


def _bound(text: str, start: int) -> str:
    """How the words right before a number bound it ('about 490', 'just over 30 s', 'more than 400', '~493')."""
    if start and text[start - 1] == "~":
        return "~"
    before = text[max(0, start - 24) : start].lower().rstrip()
    if not before or (not before[-1].isalpha() and before[-1] != "."):
        return ""
    for word, bound in _BOUND_WORDS_BY_LAST.get(before[-1], ()):
        if before.endswith(word) and (len(before) == len(word) or not before[-len(word) - 1].isalnum()):
            return bound
    return ""


def classify_number(text: str, match: re.Match[str]) -> Quantity | None:
    found = _classify_plain(text, match)
    if found is not None and found.kind in _BOUNDED_KINDS:
        bound = _bound(text, match.start())
        if bound:
            found.bound = bound
    return found


def _classify_plain(text: str, match: re.Match[str]) -> Quantity | None:
    value, tol = _number_value(match)
    start, end = match.start(), match.end()
    written = match.group(0)
    typed = _unit_quantity(match, value, tol, written)
    if typed is not None:
        if typed.kind is Kind.DURATION and match["gunit"] == "s" and _status_plural(text, match, value):
            return Quantity(Kind.IDENTIFIER, str(int(value)), written, start, end)
        return typed  # (its text and span are the match's)
    before = text[max(0, start - 40) : start]
    key = _key_before(text, start) if not match["x"] else None
    if key is not None:
        keyed = key_kind(key)
        if keyed is not None:
            kind, factor = keyed
            if kind in {Kind.IDENTIFIER, Kind.VERSION}:
                return Quantity(kind, match["digits"].replace(",", "").lower(), written, start, end, key=key)
            return Quantity(kind, value * factor, written, start, end, tol * factor, key=key)
    tail = before[-24:].rstrip()
    last = [w.strip("([{\"'").lower() for w in tail.rsplit(None, 2)[-2:]] if tail[-1:].isalpha() else []
    prev = last[-1] if last else ""
    integer = match["digits"].replace(",", "").isdigit() and not match["exp"] and not match["mag"]
    if integer and not match["x"]:
        http = prev in _HTTP_WORDS or (prev == "with" and len(last) == 2 and last[0] in _STATUS_VERBS)
        if 100 <= value <= 599 and (http or _HTTP_REASON.match(text, end) or _STATUS_NOUN.match(text, end)):
            return Quantity(Kind.IDENTIFIER, match["digits"], written, start, end)
        if prev in _CODE_WORDS:
            return Quantity(Kind.IDENTIFIER, match["digits"], written, start, end)
    if prev in _VERSION_WORDS and not match["x"] and _DOTTED.fullmatch(match["digits"]):
        return Quantity(Kind.VERSION, match["digits"], written, start, end)
    noun = _NOUN_AFTER.match(text, end) if integer else None
    count = bool(match["x"]) or noun is not None
    word = noun.group(0).strip().lower() if noun is not None else ""
    return Quantity(Kind.COUNT if count else Kind.NUMBER, value, written, start, end, tol, noun=word)


def _key_before(text: str, start: int) -> str | None:
    """The name in 'name=' or 'name: ' right before a number ('latency_ms=30064'), read backwards."""
    i = start - 1
    if i >= 0 and text[i] == " ":
        i -= 1
    if i < 0 or text[i] not in "=:":
        return None
    i -= 1
    if i >= 0 and text[i] == " ":
        i -= 1
    j = i
    while j >= 0 and i - j < 40 and (text[j].isalnum() or text[j] in "_."):
        j -= 1
    key = text[j + 1 : i + 1]
    return key if key and (key[0].isalpha() or key[0] == "_") else None


def _status_plural(text: str, match: re.Match[str], value: float) -> bool:
    """'502s' after no duration word reads as HTTP 502 responses ('a spike of 502s'), not 502 seconds."""
    if not (100 <= value <= 599 and match["digits"].isdigit()):
        return False
    words = text[max(0, match.start() - 16) : match.start()].lower().split()
    return not (words and (words[-1] in _DURATION_WORDS or words[-2:] == ["timed", "out"]))
