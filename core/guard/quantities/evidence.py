"""One call's evidence as typed quantities with origins, searched lazily.

Every value of a projection is a leaf with a key (a log field, a column, `count`); its quantities come from the
same extractor as the draft's (`leaf_quantities`), typed by the key where the value is bare (`duration_ms: 38` is
38 ms). A timestamp is a date-time, so its minute is never a count; a version's or an id's digits are part of the
version or id. The window (projection window or start/end arguments), the limit and the query text are separate
origins that ground only what they say (see Origin).

Searching: a claim is first looked for where its digits occur in the call's JSON text (one str.find per written
form), and only the leaf at each occurrence is read (`find`). When that finds nothing, the whole call is indexed
once (`index`), which answers every claim exactly, including rounding; the lazy search only ever says yes when the
full index would, so the answer never depends on which path ran.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import orjson

from core.contracts.evidence import CanonicalRecord
from core.guard.quantities.declared import declared_quantity, row_units
from core.guard.quantities.exact import Check
from core.guard.quantities.extract import bare_number, extract, extract_at
from core.guard.quantities.kinds import spec_quantities, typed_fields
from core.guard.quantities.match import clock_slot, shown_clock
from core.guard.quantities.model import Kind, Origin, Quantity, Shown
from core.guard.quantities.unit_values import typed_quantities, unit_typing
from core.guard.quantities.units import DURATION_UNITS_BY_SIZE
from core.tools.contract import FieldKind, QuantityKinds
from core.tools.registry import current_registry

ITEM_LISTS = ("logs", "rows", "evidence_blocks", "series")
RESULT_KEYS = frozenset({"count", *ITEM_LISTS})
"""What a projection shows as results; ids, status, truncation, errors and the window are not results."""
SKIPPED_FIELDS = frozenset({"score"})
"""Retrieval scores describe the search, not the environment."""
WINDOW_KEYS = (("window_start", "projection"), ("window_end", "projection"))
WINDOW_ARGUMENTS = ("start", "end")
LIMIT_ARGUMENTS = ("limit", "top_k")
QUERY_ARGUMENTS = ("query", "sql", "service", "level")
MAX_OCCURRENCES = 48
"""Past this many occurrences of one written form, indexing the whole call is cheaper than reading leaves."""

_BARE_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LINE_KEY = re.compile(r'\s*"((?:[^"\\]|\\.)*)": ')
_CLAIM_DIGITS = re.compile(r"[xX]?(\d[\d,]*(?:\.\d+)?)")

Accept = Callable[[Shown], bool]


def _json_key(raw: str) -> str:
    """A key as written in the indented JSON text (between its quotes), decoded: orjson escapes only quotes,
    backslashes and control characters, so a key without a backslash is written as it is."""
    return raw if "\\" not in raw else str(orjson.loads(f'"{raw}"'))


def iso_or_extract(value: str) -> list[Quantity]:
    """An ISO-8601 date-time (the usual timestamp or window bound) parsed directly, anything else extracted."""
    if 16 <= len(value) <= 35 and value[4:5] == "-" and value[10:11] in {"T", " "}:
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            moment = None
        if moment is not None:
            clock = moment.hour * 3600 + moment.minute * 60 + moment.second + moment.microsecond / 1e6
            return [Quantity(Kind.DATETIME, moment.date().isoformat(), value, 0, len(value), tolerance=1.0, clock=clock)]
    return extract(value, words=False)


def leaf_quantities(value: Any, key: str, words: bool = False) -> tuple[Quantity, ...]:
    """The quantities one evidence value shows, typed by its key where it is a bare value."""
    if isinstance(value, bool) or value is None:
        return ()
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            return ()
        return (bare_number(float(value), repr(value) if isinstance(value, float) else str(value), key),)
    if not isinstance(value, str):
        return ()
    stripped = value.strip()
    if _BARE_NUMBER.fullmatch(stripped):
        number = float(stripped)
        return (bare_number(number, stripped, key),) if math.isfinite(number) else ()
    return tuple(extract(value, words=True)) if words else tuple(iso_or_extract(value))


def _text_of(projection: Mapping[str, Any], items_field: str | None = None) -> str:
    results = {k: v for k, v in projection.items() if k in RESULT_KEYS or k == items_field}
    return orjson.dumps(results, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str).decode()


class CallEvidence:
    """The evidence of one referencable call, for one guard (kept in its caches: everything here is exact)."""

    def __init__(self, record: CanonicalRecord, moments: dict[str, tuple[Quantity, ...]] | None = None) -> None:
        self.tool_call_id = record.tool_call_id
        self._moments = moments if moments is not None else {}
        """Window text -> its quantities, shared by the calls of one check (they mostly search the same window);
        released once the window is read."""
        self.projection: Mapping[str, Any] = record.projection or {}
        self.arguments: Mapping[str, Any] = record.effective_arguments
        self._text: str | None = None
        self._columns: Sequence[Any] = self.projection.get("columns") or []
        self._leaves: dict[int, tuple[Shown, ...]] = {}
        self._index: tuple[Shown, ...] | None = None
        self._head: tuple[Shown, ...] | None = None
        self._head_seen: list[Shown] = []
        """The head as far as a search has read it (`_head_rest` yields the rest, in the same order)."""
        self._head_rest: Iterator[Shown] | None = None
        self._points: tuple[Shown, ...] | None = None
        self._extra: tuple[Shown, ...] | None = None
        self._clock_slots: dict[float, dict[int, list[Shown]]] = {}
        """Precision -> clock slot -> the extra() quantities showing a time in it (extra_candidates)."""
        self._query: tuple[Shown, ...] | None = None
        self._spec = current_registry().find(record.tool_name)
        self._items_field = (self._spec.items_field if self._spec is not None
                             and self._spec.items_field not in ITEM_LISTS else None)
        """A tool listing its items under a field of its own (MCP's `content`): read through its spec's leaves."""
        self._kinds = self._spec.quantities if self._spec is not None else QuantityKinds()
        self._typed = typed_fields(self._kinds)
        """The tool declares kinds the lazy search cannot read by key alone (core/guard/quantities/kinds.py): those
        fields are typed in the index, and every claim about this call is answered there."""

    @property
    def has_series(self) -> bool:
        """Whether the call lists metric series (query_metrics)."""
        return bool(self.projection.get("series"))

    @property
    def text(self) -> str:
        """The results as indented JSON (one value per line), built on first use."""
        if self._text is None:
            self._text = _text_of(self.projection, self._items_field)
        return self._text

    # ---- the lazy search ----------------------------------------------------------------------------------

    def find(self, forms: Sequence[str], accept: Accept, standalone: bool = False) -> Shown | None:
        """A result quantity accepted by `accept` at an occurrence of one of the written forms, else None.

        None means only "not found this way": the caller then asks `extra()` and `index()`. `standalone`: the claim
        is a plain number, so occurrences inside a time, date, version or id (after ':', '-', '.', a letter; before
        ':', '-', '.' and a digit) are skipped without reading their leaf (they can never show a plain number)."""
        if self._typed:
            return None
        text = self.text
        size = len(text)
        for form in forms:
            if not form:
                continue
            at, seen = text.find(form), 0
            while at >= 0:
                end = at + len(form)
                before = text[at - 1] if at > 0 else " "
                after = text[end] if end < size else " "
                skip = before.isdigit() or after.isdigit()
                if standalone and not skip:
                    skip = before in ":-.T_" or before.isalpha() or (
                        after in ":-.," and end + 1 < size and text[end + 1].isdigit()
                    )
                if not skip:
                    seen += 1
                    if seen > MAX_OCCURRENCES:
                        return self.search_index(accept)
                    for shown in self._leaf_at(at):
                        if accept(shown):
                            return shown
                at = text.find(form, at + 1)
        return None

    def find_exact(self, forms: Sequence[str], check: Check) -> bool:
        """Whether a result value writes one of the tokens (see core/guard/quantities/exact.py)."""
        text = self.text
        for form in forms:
            at = text.find(form)
            while at >= 0:
                if check(text, at, at + len(form)):
                    line = text.rfind("\n", 0, at) + 1
                    key = _LINE_KEY.match(text, line)
                    in_value = key is None or key.end() <= at  # in a value, not a key
                    if in_value and (key is None or _json_key(key.group(1)) not in SKIPPED_FIELDS):
                        return True
                at = text.find(form, at + 1)
        return False

    def search(self, forms: Sequence[str], accept: Accept, standalone: bool = False, query: bool = False) -> Shown | None:
        """find(), then the window and limit (and query), then the full index: the complete answer for this call."""
        found = self.find(forms, accept, standalone)
        if found is None:
            found = self.search_extra(accept, query)
        return found if found is not None else self.search_index(accept)

    def search_extra(self, accept: Accept, query: bool, claim: Quantity | None = None) -> Shown | None:
        """The window, limit and (when `query`) query quantities accepted by `accept`; given the claim `accept`
        grounds, only those that may show its value are tried (the same answer, see extra_candidates)."""
        extra = self.extra() if claim is None else self.extra_candidates(claim)
        found = next((s for s in extra if accept(s)), None)
        if found is None and query:
            found = next((s for s in self.query() if accept(s)), None)
        return found

    def search_index(self, accept: Accept) -> Shown | None:
        """A result quantity of the full index accepted by `accept` (a series' points are indexed only when its
        summary and everything else did not answer)."""
        found = self._first_in_head(accept)
        if found is None and self.has_series:
            found = next((s for s in self.points() if accept(s)), None)
        return found

    def _leaf_at(self, at: int) -> tuple[Shown, ...]:
        """The quantities of the leaf at text position `at` that may cover it (a long string: just the token there)."""
        text = self.text
        start = text.rfind("\n", 0, at) + 1
        kept = self._leaves.get(start)
        if kept is not None:
            return kept
        end = text.find("\n", at)
        line = text[start : end if end >= 0 else len(text)]
        key_match = _LINE_KEY.match(line)
        if key_match is not None:
            key, raw_at = _json_key(key_match.group(1)), key_match.end()
            if at - start < raw_at:  # the form occurs in the key, not the value
                return ()
        else:
            key, raw_at = self._column_of(start, line), len(line) - len(line.lstrip())
        raw = line[raw_at:].rstrip().rstrip(",")
        if not raw or raw[0] in "{[" or key in SKIPPED_FIELDS:
            return ()
        words = self._kinds.of(key).kind is FieldKind.WORDS
        inner = raw[1:-1]
        if raw[0] == '"' and "\\" not in raw and not words and len(inner) > 35 and not _BARE_NUMBER.fullmatch(inner.strip()):
            # a message: read only the token at the occurrence (extract_at tokenises exactly like extract)
            found = extract_at(inner, at - (start + raw_at + 1))
            return tuple(Shown(q, Origin.RESULT, self.tool_call_id, -1, key) for q in found)
        value = orjson.loads(raw)
        shown = tuple(Shown(q, Origin.RESULT, self.tool_call_id, -1, key) for q in leaf_quantities(value, key, words))
        self._leaves[start] = shown
        return shown

    def _column_of(self, line_start: int, line: str) -> str:
        """The column name of a row cell (a bare array element), from its position in the row."""
        text, indent, position = self.text, len(line) - len(line.lstrip()), 0
        cursor = line_start
        while cursor > 0:
            prev_start = text.rfind("\n", 0, cursor - 1) + 1
            prev = text[prev_start : cursor - 1]
            prev_indent = len(prev) - len(prev.lstrip())
            if prev_indent < indent:
                opener = _LINE_KEY.match(prev)
                if opener is not None:  # a list inside a field: the field names it
                    return _json_key(opener.group(1))
                break
            if prev_indent == indent:
                position += 1
            cursor = prev_start
        if position < len(self._columns):
            return str(self._columns[position])
        return ""

    # ---- the full index -------------------------------------------------------------------------------------

    def index(self) -> tuple[Shown, ...]:
        """Every result quantity of the call, with item and field (built once)."""
        if self._index is None:
            self._index = self.head() + self.points()
        return self._index

    def head(self) -> tuple[Shown, ...]:
        """The index without metric series' points (count, items, series labels and summaries)."""
        if self._head is None:
            self._head = (*self._head_seen, *self._rest_of_head())
            self._head_seen, self._head_rest = [], None
        return self._head

    def _rest_of_head(self) -> Iterator[Shown]:
        if self._head_rest is None:
            self._head_rest = self._walk()
        return self._head_rest

    def _first_in_head(self, accept: Accept) -> Shown | None:
        """The first head quantity accepted, reading the head only as far as needed (the rest is built when a later
        search goes past it): the same answer as scanning the whole head, without typing every point of a series
        whose summary already answered."""
        if self._head is not None:
            return next((s for s in self._head if accept(s)), None)
        found = next((s for s in self._head_seen if accept(s)), None)
        if found is not None:
            return found
        seen = self._head_seen
        for shown in self._rest_of_head():
            seen.append(shown)
            if accept(shown):
                return shown
        self._head = tuple(seen)
        self._head_seen, self._head_rest = [], None
        return None

    def points(self) -> tuple[Shown, ...]:
        """The quantities of metric series' points (values and times)."""
        if self._points is None:
            self._points = tuple(self._series(points=True))
        return self._points

    def _walk(self) -> Iterator[Shown]:
        cid, projection = self.tool_call_id, self.projection
        count = projection.get("count")
        if isinstance(count, int) and not isinstance(count, bool):
            yield Shown(Quantity(Kind.COUNT, float(count), str(count), key="count"), Origin.RESULT, cid, -1, "count")
        for i, key, value in self.leaves():
            words = self._kinds.of(key).kind is FieldKind.WORDS
            for quantity in leaf_quantities(value, key, words):
                yield Shown(quantity, Origin.RESULT, cid, i, key)
        yield from self._declared()
        yield from self._series()
        if self._spec is not None and self._typed:
            yield from spec_quantities(cid, self._spec, projection)

    def _series(self, points: bool = False) -> Iterator[Shown]:
        """Metric series (query_metrics): values typed by their series' unit and kind, times as date-times; the
        labels and summaries, or (points=True) the points."""
        cid = self.tool_call_id
        for i, item in enumerate(self.projection.get("series") or []):
            if not isinstance(item, dict):
                continue
            typed = unit_typing(str(item.get("unit") or ""), str(item.get("kind") or ""))
            for path, key, value in _series_leaves(item, points):
                if path in SERIES_VALUES and isinstance(value, int | float) and not isinstance(value, bool):
                    text = repr(value) if isinstance(value, float) else str(value)
                    found = typed_quantities(float(value), text, typed)
                else:
                    found = leaf_quantities(value, key)
                yield from (Shown(q, Origin.RESULT, cid, i, path) for q in found)

    def _declared(self) -> Iterator[Shown]:
        """Numbers whose unit a sibling field or the row's metric name declares, typed in that unit (besides their
        plain reading above): `value=92.0, unit="Percent"` is also 92 %."""
        cid, projection = self.tool_call_id, self.projection
        columns = [str(c) for c in self._columns]
        rows: list[tuple[int, Mapping[str, Any]]] = [
            (i, dict(zip(columns, row, strict=False))) for i, row in enumerate(projection.get("rows") or [])
            if isinstance(row, list)
        ]
        rows += [(i, log["fields"]) for i, log in enumerate(projection.get("logs") or [])
                 if isinstance(log, dict) and isinstance(log.get("fields"), dict)]
        for i, row in rows:
            for key, unit in row_units(row).items():
                value = row[key]
                quantity = declared_quantity(float(value), unit, repr(value) if isinstance(value, float) else str(value), key)
                if quantity is not None and math.isfinite(quantity.number):
                    yield Shown(quantity, Origin.RESULT, cid, i, key)

    def leaves(self) -> Iterator[tuple[int, str, Any]]:
        """(item index, field or column, value) of every listed item's scalar values."""
        projection = self.projection
        for i, log in enumerate(projection.get("logs") or []):
            if isinstance(log, dict):
                for key, value in log.items():
                    if isinstance(value, dict):
                        yield from ((i, str(k), v) for k, v in value.items() if not isinstance(v, dict | list))
                    elif key not in SKIPPED_FIELDS:
                        yield i, str(key), value
        columns = [str(c) for c in self._columns]
        for i, row in enumerate(projection.get("rows") or []):
            if isinstance(row, list):
                for j, value in enumerate(row):
                    yield i, columns[j] if j < len(columns) else "", value
        for i, block in enumerate(projection.get("evidence_blocks") or []):
            if isinstance(block, dict):
                yield from ((i, str(k), v) for k, v in block.items() if k not in SKIPPED_FIELDS)
        if self._items_field is not None and self._spec is not None:
            yield from ((leaf.item, leaf.key, leaf.value) for leaf in self._spec.leaves(projection))

    def items(self) -> int:
        """How many items the projection lists."""
        own = len(self.projection.get(self._items_field) or []) if self._items_field is not None else 0
        return own + sum(len(self.projection.get(name) or []) for name in ITEM_LISTS)

    # ---- window, limit, query --------------------------------------------------------------------------------

    def extra(self) -> tuple[Shown, ...]:
        """The window bounds (projection and arguments) and the limit, with their origins."""
        if self._extra is None:
            self._extra = tuple(self._window_and_limit())
            self._moments = {}
        return self._extra

    def extra_candidates(self, claim: Quantity) -> Sequence[Shown]:
        """The extra() quantities, in order, that may show the claim's value: for a time of day, those showing a
        time in the claim's slot (match.same_value grounds no other), looked up by slot; all of them otherwise."""
        if claim.kind is not Kind.TIME or not isinstance(claim.value, float):
            return self.extra()
        slots = self._clock_slots.get(claim.tolerance)
        if slots is None:
            slots = self._clock_slots[claim.tolerance] = {}
            for shown in self.extra():
                clock = shown_clock(shown.quantity)
                if clock is not None:
                    slots.setdefault(clock_slot(clock, claim.tolerance), []).append(shown)
        return slots.get(clock_slot(claim.value, claim.tolerance), ())

    def query(self) -> tuple[Shown, ...]:
        """The quantities of the query, SQL, service and level arguments (origin QUERY)."""
        if self._query is None:
            self._query = tuple(
                Shown(quantity, Origin.QUERY, self.tool_call_id, -1, key)
                for key in QUERY_ARGUMENTS
                if isinstance(value := self.arguments.get(key), str)
                for quantity in extract(value, words=False)
            )
        return self._query

    def window(self) -> list[Quantity]:
        """The searched window's bounds as date-times (projection first, then the start/end arguments)."""
        return [s.quantity for s in self.extra() if s.origin is Origin.WINDOW and s.quantity.kind is Kind.DATETIME]

    def _window_and_limit(self) -> Iterator[Shown]:
        cid = self.tool_call_id
        sources: list[tuple[str, Any]] = [(key, self.projection.get(key)) for key, _ in WINDOW_KEYS]
        sources += [(key, self.arguments.get(key)) for key in WINDOW_ARGUMENTS]
        moments = self._moments
        for key, value in sources:
            if isinstance(value, str):
                parsed = moments.get(value)
                if parsed is None:
                    parsed = moments[value] = tuple(iso_or_extract(value))
                for quantity in parsed:
                    yield Shown(quantity, Origin.WINDOW, cid, -1, key)
        for key in LIMIT_ARGUMENTS:
            value = self.arguments.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                yield Shown(Quantity(Kind.NUMBER, float(value), str(value), key=key), Origin.LIMIT, cid, -1, key)


SERIES_VALUES = frozenset({"first.v", "last.v", "min.v", "max.v", "mean", "point"})
"""The fields of a series item that are values of the series (typed by its unit); `point` is any points[n][1]."""


def _series_leaves(item: Mapping[str, Any], points: bool = False) -> Iterator[tuple[str, str, Any]]:
    """(path, key, value) of a series item's scalars: labels by their names and summary marks, or (points=True) the
    points as `point` (the value) and `point.t` (its time)."""
    if points:
        for pair in item.get("points") or []:
            if isinstance(pair, list) and len(pair) == 2:
                yield "point.t", "", pair[0]
                yield "point", "", pair[1]
        return
    for key, value in item.items():
        if key == "labels" and isinstance(value, dict):
            yield from ((f"labels.{k}", str(k), v) for k, v in value.items() if not isinstance(v, dict | list))
        elif isinstance(value, dict):
            yield from ((f"{key}.{k}", str(k), v) for k, v in value.items() if not isinstance(v, dict | list))
        elif not isinstance(value, list):
            yield key, key, value


def number_forms(value: float) -> list[str]:
    """How evidence may write a number: '37', '1024' and '1,024', '62.21'."""
    if value.is_integer():
        whole = int(value)
        return [str(whole), f"{whole:,}"] if whole >= 1000 else [str(whole)]
    return [f"{value:g}", f"{value:.2f}".rstrip("0")]


def search_forms(claim: Quantity) -> list[str]:
    """The written forms to look for first (an empty list goes straight to the full index)."""
    kind, value = claim.kind, claim.value
    digits = _CLAIM_DIGITS.match(claim.text)
    written = digits.group(1).replace(",", "") if digits else ""
    if kind in {Kind.COUNT, Kind.NUMBER, Kind.PERCENT} and isinstance(value, float):
        return number_forms(value) if claim.tolerance <= 0.5 else [written]
    if kind is Kind.DURATION and isinstance(value, float):
        forms = [written]
        for _, seconds in DURATION_UNITS_BY_SIZE:
            amount = value / seconds
            if amount >= 1 and abs(amount - round(amount)) < 1e-9:
                forms.append(str(round(amount)))
        return list(dict.fromkeys(forms))
    if kind in {Kind.SIZE, Kind.RATE}:
        return [written]
    if kind is Kind.TIME and isinstance(value, float) and claim.tolerance <= 60:
        return [f"{int(value // 3600):02d}:{int(value % 3600 // 60):02d}"]
    if kind in {Kind.DATE, Kind.DATETIME} and isinstance(value, str):
        return [value.lstrip("-")]
    if kind in {Kind.VERSION, Kind.IDENTIFIER} and isinstance(value, str):
        return list(dict.fromkeys([claim.text.lstrip("vV#:"), value.lstrip("#")]))
    return []
