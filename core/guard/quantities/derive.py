"""Declared derivations (SPEC §5): the only quantities grounded without being shown. Each is deterministic and
bounded, and the guard records it in the snapshot so the SemanticGuard sees it.

- TIME_DIFFERENCE: a duration equal to the difference of two times stated in the same text and grounded there.
- WINDOW_LENGTH: a duration equal to the length of a cited call's searched window.
- PERCENT_OF: a percentage of two numbers of the same cited evidence (both stated in the text and grounded by one
  call, or a plausible part and whole of one listed item, e.g. `active=50 max=50` -> 100%: see percent_pairs.py).
- ITEM_COUNT: how many items a call lists; how many of them show a value the text names; how many distinct values a
  field has when the count's noun names the field ("3 pods" for three distinct `pod` values).
- SUM: the counts of the cited calls added up; a numeric column added up over the listed rows, when the count names
  that column ('70 timeouts') or says it is a total.
- RATE_OF: a grounded count over a grounded duration of the same text or a cited call's window length.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from core.guard.quantities.evidence import CallEvidence
from core.guard.quantities.match import fits
from core.guard.quantities.model import CLOCK_KINDS, NUMERIC_KINDS, Kind, Quantity, Shown
from core.guard.quantities.percent_pairs import names_a_field, plausible_pairs, text_words

MAX_NUMBERS_PER_ITEM = 24
MAX_DISTINCT_VALUES = 64
MAX_STATED = 16


@dataclass(frozen=True, slots=True)
class Derived:
    """How a claim was derived."""

    rule: str
    value: float
    inputs: tuple[str, ...]
    tool_call_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Stated:
    """Another quantity of the same text, grounded directly by `shown`."""

    claim: Quantity
    shown: Shown


def derive(claim: Quantity, stated: Sequence[Stated], calls: Sequence[CallEvidence], text: str) -> Derived | None:
    """The first declared derivation that yields the claim's value, or None."""
    if claim.kind is Kind.DURATION:
        relation = _RELATION.match(text, claim.end)
        if relation is not None and not _TIME_FOLLOWS.match(text, relation.end()):
            # '5 minutes after the deploy': a time between two events, not the length of a window
            return _time_difference(claim, stated) or _evidence_difference(claim, calls)
        return _time_difference(claim, stated) or _window_length(claim, calls)
    if claim.kind is Kind.PERCENT:
        return _percent_of(claim, stated, calls, text)
    if claim.kind is Kind.RATE:
        return _rate_of(claim, stated, calls)
    if claim.kind in NUMERIC_KINDS and isinstance(claim.value, float) and claim.value.is_integer():
        return _item_count(claim, calls, text) or _sum(claim, calls, text)
    return None


def _instant(q: Quantity) -> tuple[str | None, float] | None:
    if q.kind is Kind.DATETIME and q.clock is not None:
        return str(q.value), q.clock
    if q.kind is Kind.TIME and isinstance(q.value, float):
        return None, q.value
    return None


def _between(a: tuple[str | None, float], b: tuple[str | None, float]) -> float:
    if a[0] and b[0] and a[0] != b[0] and not a[0].startswith("-") and not b[0].startswith("-"):
        days = (datetime.fromisoformat(b[0]) - datetime.fromisoformat(a[0])).days
        return abs(days * 86400 + b[1] - a[1])
    return (b[1] - a[1]) % 86400


def _time_difference(claim: Quantity, stated: Sequence[Stated]) -> Derived | None:
    times = [(s.claim, instant) for s in stated[:MAX_STATED] if s.claim.kind in CLOCK_KINDS and (instant := _instant(s.claim))]
    for (qa, a), (qb, b) in itertools.combinations(times, 2):
        for first, second, qf, qs in ((a, b, qa, qb), (b, a, qb, qa)):
            diff = _between(first, second)
            if fits(claim, diff):
                ids = tuple(dict.fromkeys(s.shown.tool_call_id for s in stated if s.claim in (qf, qs)))
                return Derived("TIME_DIFFERENCE", diff, (f"from {qf.text}", f"to {qs.text}"), ids)
    return None


_RELATION = re.compile(r"\s+(?:after|before|later|earlier|of|since|from|ahead of|prior to)\b", re.IGNORECASE)
_TIME_FOLLOWS = re.compile(r"\s+(?:\w+\s+){0,2}?\d{1,2}:\d{2}")
"""'the 60 minutes before 23:30', 'the 28 minutes from 23:02': a window stated by its length and one end."""
MAX_MOMENTS = 64
"""Moments read per cited call for a difference between calls (its items' timestamps and date-time cells)."""


def _moments(call: CallEvidence) -> list[tuple[tuple[str | None, float], str]]:
    found: list[tuple[tuple[str | None, float], str]] = []
    for shown in call.index():
        if shown.item >= 0 and shown.quantity.kind is Kind.DATETIME and (instant := _instant(shown.quantity)):
            found.append((instant, shown.quantity.text))
            if len(found) >= MAX_MOMENTS:
                break
    return found


def _evidence_difference(claim: Quantity, calls: Sequence[CallEvidence]) -> Derived | None:
    """'within 5 minutes of the deploy', '2 minutes after the batch started': the difference of two moments the
    cited calls show, one from each of two calls (the text names the events, not their times)."""
    if len(calls) < 2:
        return None
    moments = [(call.tool_call_id, _moments(call)) for call in calls]
    for (cid_a, first), (cid_b, second) in itertools.combinations(moments, 2):
        for a, text_a in first:
            for b, text_b in second:
                diff = abs(_between(a, b) if a[0] and b[0] and a[0] != b[0] else b[1] - a[1])
                if fits(claim, diff):
                    return Derived("TIME_DIFFERENCE", diff, (f"from {text_a}", f"to {text_b}"), (cid_a, cid_b))
    return None


def _window_length(claim: Quantity, calls: Sequence[CallEvidence]) -> Derived | None:
    for call in calls:
        bounds = call.window()
        for start, end in ((bounds[i], bounds[i + 1]) for i in range(0, len(bounds) - 1, 2)):
            a, b = _instant(start), _instant(end)
            if a is None or b is None:
                continue
            length = _between(a, b)
            if fits(claim, length):
                return Derived("WINDOW_LENGTH", length, (f"window {start.text} to {end.text}",), (call.tool_call_id,))
    return None


def _ratios(numbers: Sequence[tuple[float, str]], at_most_whole: bool) -> Iterator[tuple[float, str, str]]:
    for (a, ta), (b, tb) in itertools.permutations(numbers[:MAX_NUMBERS_PER_ITEM], 2):
        if b > 0 and a >= 0 and (a <= b or not at_most_whole):
            yield 100.0 * a / b, ta, tb


def _percent_of(claim: Quantity, stated: Sequence[Stated], calls: Sequence[CallEvidence], text: str) -> Derived | None:
    by_call: dict[str, list[tuple[float, str]]] = {}
    for s in stated[:MAX_STATED]:
        if s.claim.kind in NUMERIC_KINDS:
            by_call.setdefault(s.shown.tool_call_id, []).append((s.claim.number, s.claim.text))
    for cid, numbers in by_call.items():
        for ratio, a, b in _ratios(numbers, at_most_whole=False):
            if fits(claim, ratio):
                return Derived("PERCENT_OF", ratio, (f"{a} of {b} (stated)",), (cid,))
    if len(by_call) > 1:  # '16 of the pool's 20 connections (80 %)': two stated numbers, each grounded by its call
        pooled = [n for numbers in by_call.values() for n in numbers]
        for ratio, a, b in _ratios(pooled, at_most_whole=True):
            if fits(claim, ratio):
                return Derived("PERCENT_OF", ratio, (f"{a} of {b} (stated)",), tuple(by_call))
    if by_call:  # the text says which numbers its percentage is of: no other pair is looked for
        return None
    rows: list[tuple[CallEvidence, dict[int, list[tuple[str, float, str]]]]] = []
    for call in calls:
        if call.has_series:
            continue  # a percentage of two values of one series (two points, a point and the mean) means nothing
        items: dict[int, list[tuple[str, float, str]]] = {}
        for shown in call.index():
            if shown.item >= 0 and shown.quantity.kind in NUMERIC_KINDS:
                label = f"{shown.field or 'value'}={shown.quantity.text}"
                cells = items.setdefault(shown.item, [])
                if len(cells) < MAX_NUMBERS_PER_ITEM:
                    cells.append((shown.field, shown.quantity.number, label))
        rows.append((call, items))
    words = text_words(text)
    named = [names_a_field((c[0] for cells in items.values() for c in cells), words) for _, items in rows]
    for i, (call, items) in enumerate(rows):
        elsewhere = any(n for j, n in enumerate(named) if j != i)
        for item, cells in items.items():
            for ratio, a, b in plausible_pairs(cells, words, elsewhere):
                if fits(claim, ratio):
                    return Derived("PERCENT_OF", ratio, (f"{a} of {b} in item {item}",), (call.tool_call_id,))
    return None


def _rate_of(claim: Quantity, stated: Sequence[Stated], calls: Sequence[CallEvidence]) -> Derived | None:
    """'493 lines in 60 minutes, about 8 per minute': a grounded count over a grounded duration stated in the same
    text, or over the length of a cited call's window."""
    numbers = [s for s in stated[:MAX_STATED] if s.claim.kind in NUMERIC_KINDS]
    spans = [(s.claim.number, s.claim.text, s.shown.tool_call_id) for s in stated[:MAX_STATED]
             if s.claim.kind is Kind.DURATION and s.claim.number > 0]
    for call in calls:
        bounds = call.window()
        if len(bounds) >= 2 and (a := _instant(bounds[0])) and (b := _instant(bounds[1])) and (length := _between(a, b)) > 0:
            spans.append((length, f"the window of {call.tool_call_id}", call.tool_call_id))
    for number in numbers:
        for seconds, label, cid in spans:
            rate = number.claim.number / seconds
            if fits(claim, rate):
                inputs = (f"{number.claim.text} over {label}",)
                return Derived("RATE_OF", rate, inputs, tuple(dict.fromkeys((number.shown.tool_call_id, cid))))
    return None


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


ITEM_NOUNS = frozenset({"line", "log", "entry", "entrie", "row", "result", "match", "matche", "record", "event", "message",
                        "hit", "item", "sample", "section", "block", "document", "runbook"})
"""Nouns that count listed items ('17 lines are shown'); any other noun must name what it counts."""


_LISTED = re.compile(r"[^.;:()]{0,48}?\b(?:shown|listed|returned|displayed|fetched|read|lines?|rows?|entries|results|matches)\b",
                     re.IGNORECASE)


def _names_items(claim: Quantity, nouns: list[str], call: CallEvidence, text: str) -> bool:
    """'17 lines', '5 of the 493 matching lines are shown', '5 were read', '3 deployments' (FROM deployments), and
    partitives over what is listed ('two of the timeouts')."""
    sql = str(call.arguments.get("sql", "")).lower()
    if any(n in ITEM_NOUNS or (sql and f" {n}" in sql) for n in nouns):
        return True
    return _LISTED.match(text, claim.end) is not None or text.startswith((" of the ", " of them", " of those"), claim.end)


def _item_count(claim: Quantity, calls: Sequence[CallEvidence], text: str) -> Derived | None:
    lowered = text.lower()
    nouns = [_singular(w) for w in claim.noun.split()]
    for call in calls:
        listed = call.items()
        counts_items = _names_items(claim, nouns, call, text)
        if listed and claim.number == listed and counts_items:
            return Derived("ITEM_COUNT", float(listed), (f"{listed} items listed",), (call.tool_call_id,))
        values: dict[str, Counter[str]] = {}
        for _, key, value in call.leaves():
            if isinstance(value, str | int) and not isinstance(value, bool) and key:
                values.setdefault(key, Counter())[str(value)] += 1
        for key, counter in values.items():
            if len(counter) > MAX_DISTINCT_VALUES:
                continue
            if nouns and _singular(key.lower()) in nouns and claim.number == len(counter):
                inputs = (f"{len(counter)} distinct {key} values",)
                return Derived("ITEM_COUNT", float(len(counter)), inputs, (call.tool_call_id,))
            for value, times in counter.items() if counts_items else ():
                if claim.number == times and len(value) >= 2 and value.lower() in lowered:
                    return Derived("ITEM_COUNT", float(times), (f"{times} items with {key}={value}",), (call.tool_call_id,))
    return None


_TOTAL = re.compile(
    r"\b(?:in total|total|totals|altogether|combined|together|summed|sum|overall|all told|add(?:s|ed)? up|across)\b",
    re.IGNORECASE,
)


def _sum(claim: Quantity, calls: Sequence[CallEvidence], text: str = "") -> Derived | None:
    counts = [(c.tool_call_id, c.projection.get("count")) for c in calls]
    numbers = [(cid, n) for cid, n in counts if isinstance(n, int) and not isinstance(n, bool)]
    if len(numbers) >= 2 and claim.number == sum(n for _, n in numbers):
        inputs = tuple(f"count {n} of {cid}" for cid, n in numbers)
        return Derived("SUM", float(claim.number), inputs, tuple(c for c, _ in numbers))
    for call in calls:
        columns: dict[str, float] = {}
        for shown in call.index():
            if shown.item >= 0 and shown.quantity.kind in NUMERIC_KINDS and shown.field and shown.quantity.key == shown.field:
                columns[shown.field] = columns.get(shown.field, 0.0) + shown.quantity.number
        nouns = [_singular(w) for w in claim.noun.split()]
        totals = _TOTAL.search(text) is not None
        words = {_singular(w) for w in re.findall(r"[a-z_]+", text.lower())}
        for column, total in columns.items():
            # a column's sum is a claim about that column: '70 timeouts' (column timeouts), 'requests were waiting'
            # (column waiting), or a total ('add up to', 'in total', 'across the samples')
            named = _singular(column.lower()) in nouns or _singular(column.lower()) in words
            if (totals or named) and fits(claim, total):
                return Derived("SUM", total, (f"sum of {column} over the listed items",), (call.tool_call_id,))
    return None
