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
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from core.guard.quantities.clock import MONTHS, datetime_quantity, decimals, month_date, time_quantity
from core.guard.quantities.model import Kind, Quantity
from core.guard.quantities.units import DURATION_SECONDS, MAGNITUDES, RATE_SHORTHANDS, SIZE_BYTES
from core.guard.quantities.words import digits_for_words

_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_SPACED_UNITS = tuple(sorted(
    [u for u in DURATION_SECONDS if len(u) > 1 and u not in {"wk", "wks"}] + [u for u in SIZE_BYTES if len(u) > 1] + ["s", "h"],
    key=len,
    reverse=True,
))
_GLUED_UNITS = tuple(sorted([*_SPACED_UNITS, "m", "d", "w", "b", "wk", "wks"], key=len, reverse=True))
_RATE_TIME = r"(?:s|sec|second|min|minute|h|hr|hour)"

_TOKEN = re.compile(
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
          |(?P<rate>\ ?(?:[A-Za-z]+\ ?)?(?:/|\ per\ )(?P<rtime>{_RATE_TIME})\b|\ ?(?P<rshort>rps|qps|tps|rpm)\b)
          |(?:-|\ )(?P<sunit>{"|".join(_SPACED_UNITS)})(?![A-Za-z])
          |(?P<gunit>{"|".join(_GLUED_UNITS)})(?![A-Za-z0-9_])
        )?
        (?![A-Za-z0-9_]))
    |(?P<alnum>(?<![\w.])\d[A-Za-z0-9_]*[A-Za-z_][A-Za-z0-9_]*)
    """,
    re.VERBOSE | re.IGNORECASE,
)
_DIGITS = re.compile(r"\d+")
_ALNUM_SKIP = re.compile(r"\d+(?:st|nd|rd|th)|[1-5]xx|\d+x", re.IGNORECASE)
_COMPOSITE = re.compile(r"(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?", re.IGNORECASE)
_HTTP_REASON = re.compile(
    r"\s(?:OK|Created|Accepted|No Content|Moved|Found|Not Modified|Bad Request|Unauthorized|Forbidden|Not Found"
    r"|Method Not|Conflict|Gone|Too Many|Internal|Not Implemented|Bad Gateway|Service Unavailable|Gateway Time-?out)\b"
)
_LIMIT_CUE_AFTER = re.compile(r"\W{0,2}(?:\w+\W+){0,2}(?:limit|cap|max(?:imum)?)\b", re.I)
_HTTP_WORDS = frozenset({"http", "status", "responded", "returned", "returning", "returns", "response", "code", "answered",
                         "answering", "answers", "answer"})
_STATUS_VERBS = frozenset({"responded", "failed", "answered", "returned", "rejected", "errored", "replied", "aborted"})
_STATUS_NOUN = re.compile(r"\s(?:responses?|status(?:es)?|status codes?|replies)\b", re.IGNORECASE)
"""'341 502 responses': a number of 100-599 before 'responses' is an HTTP status."""
_DOTTED = re.compile(r"\d+(?:\.\d+)*")
_CODE_WORDS = frozenset({"port", "error", "errno", "err", "code", "sqlstate"})
_VERSION_WORDS = frozenset({"version", "versions", "release", "build", "tag"})
_LIMIT_WORDS = frozenset({"limit", "limited", "first", "top", "capped", "cap", "max", "maximum", "page"})
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
        value *= 10.0 ** int(match["exp"])
        step *= 10.0 ** int(match["exp"])
    if match["mag"]:
        factor = MAGNITUDES[match["mag"]]
        value *= factor
        step *= factor
    return value, step / 2


def _unit_quantity(match: re.Match[str], value: float, tol: float, text: str) -> Quantity | None:
    start, end = match.start(), match.end()
    unit = match["sunit"] or match["gunit"]
    if match["pct"]:
        return Quantity(Kind.PERCENT, value, text, start, end, tol)
    if match["rtime"] or match["rshort"]:
        per = match["rtime"] or RATE_SHORTHANDS[match["rshort"].lower()]
        seconds = DURATION_SECONDS[per.lower()] if per.lower() in DURATION_SECONDS else DURATION_SECONDS[per.lower()[0]]
        return Quantity(Kind.RATE, value / seconds, text, start, end, tol / seconds)
    if unit is None:
        return None
    spelled = unit if unit in DURATION_SECONDS else unit.lower()
    if spelled in DURATION_SECONDS and unit not in {"M"}:
        factor = DURATION_SECONDS[spelled]
        return Quantity(Kind.DURATION, value * factor, text, start, end, tol * factor)
    if spelled.lower() in SIZE_BYTES:
        decimal, binary = SIZE_BYTES[spelled.lower()]
        return Quantity(Kind.SIZE, value * decimal, text, start, end, tol * decimal, alt=value * binary)
    return None


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


def _classify_number(text: str, match: re.Match[str]) -> Quantity | None:
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
        return Quantity(typed.kind, typed.value, written, start, end, typed.tolerance, alt=typed.alt)
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


def is_limit_statement(text: str, claim: Quantity) -> bool:
    """Whether a number is written as a statement about a query limit: 'the first 20', 'limit 20', 'up to 20',
    '20 (the limit)'. Only such statements may rest on a call's limit argument."""
    before = text[max(0, claim.start - 24) : claim.start].lower().split()[-3:]
    if _LIMIT_WORDS.intersection(w.strip("(\"'[,") for w in before):
        return True
    joined = " ".join(before)
    return joined.endswith(("at most", "up to")) or _LIMIT_CUE_AFTER.match(text, claim.end) is not None


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
        return _classify_number(text, match)
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
    found = [q for match in _scan(text, 0) if (q := _quantity(text, match)) is not None]
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


def extract_at(text: str, offset: int) -> list[Quantity]:
    """The quantity of `text` whose token covers `offset` (empty when none), as extract(text, words=False) would
    find it, reading only a few words around it: no token spans more than three spaces before its digits."""
    start = offset
    for _ in range(3):
        space = text.rfind(" ", 0, start)
        if space < 0:
            start = 0
            break
        start = space
    start = start + 1 if start > 0 or text[:1] == " " else 0
    for match in _scan(text, start):
        if match.end() > offset:
            if match.start() > offset:
                return []
            quantity = _quantity(text, match)  # only the covering token is typed, not the ones before it
            return [quantity] if quantity is not None else []
    return []


def _scan(text: str, at: int) -> Iterator[re.Match[str]]:
    """Each token from `at` on (`_quantity` types it: where tokens start and end never depends on their types)."""
    token = _TOKEN.match
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
        found = _TOKEN.match(text, month)
        if found is not None and found.end() > digit:
            return found
    return None


def extract_with_text(text: str) -> tuple[str, list[Quantity]]:
    """(the text with digits for number words, its quantities): spans refer to the returned text."""
    converted = digits_for_words(text)
    return converted, extract(converted, words=False)
