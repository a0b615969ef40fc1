"""An evidence value as quantities: each leaf of a projection (a log field, a column, a series' label or summary)
is read by the same extractor as the draft's, typed by its key where the value is bare (`duration_ms: 38` is 38 ms).
A timestamp is a date-time, so its minute is never a count; a version's or an id's digits are part of the version
or id.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from core.guard.quantities.extract import extract
from core.guard.quantities.model import Kind, Quantity
from core.guard.quantities.numbers import bare_number
from core.tools.contract import ToolSpec

ITEM_LISTS = ("logs", "rows", "evidence_blocks", "series")
RESULT_KEYS = frozenset({"count", *ITEM_LISTS})
"""What a projection shows as results; ids, status, truncation, errors and the window are not results."""
SKIPPED_FIELDS = frozenset({"score"})
"""Retrieval scores describe the search, not the environment."""

_BARE_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


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


Readings = dict[tuple[str, bool], tuple[Quantity, ...]]
"""(evidence text, with number words) -> its quantities, for one check: the calls of a run mostly share their window
bounds, timestamps and labels, so each is read once (a pure function of the text: never keyed by field)."""


def read_text(value: str, readings: Readings, words: bool = False) -> tuple[Quantity, ...]:
    """The quantities of an evidence text that is not a bare number (iso_or_extract, or extract with number words),
    read once per check."""
    found = readings.get((value, words))
    if found is None:
        found = readings[(value, words)] = tuple(extract(value, words=True)) if words else tuple(iso_or_extract(value))
    return found


def leaf_quantities(value: Any, key: str, words: bool = False, readings: Readings | None = None) -> tuple[Quantity, ...]:
    """The quantities one evidence value shows, typed by its key where it is a bare value (`readings`: the check's
    memo of texts read)."""
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
    if readings is not None:
        return read_text(value, readings, words)
    return tuple(extract(value, words=True)) if words else tuple(iso_or_extract(value))


def is_bare_number(text: str) -> bool:
    """Whether a string is one plain number (what leaf_quantities reads as a bare value)."""
    return _BARE_NUMBER.fullmatch(text) is not None


def projection_leaves(projection: Mapping[str, Any], columns: Sequence[Any], items_field: str | None = None,
                      spec: ToolSpec | None = None) -> Iterator[tuple[int, str, Any]]:
    """(item index, field or column, value) of every listed item's scalar values (not a series': series_leaves)."""
    for i, log in enumerate(projection.get("logs") or []):
        if isinstance(log, dict):
            for key, value in log.items():
                if isinstance(value, dict):
                    yield from ((i, str(k), v) for k, v in value.items() if not isinstance(v, dict | list))
                elif key not in SKIPPED_FIELDS:
                    yield i, str(key), value
    names = [str(c) for c in columns]
    for i, row in enumerate(projection.get("rows") or []):
        if isinstance(row, list):
            for j, value in enumerate(row):
                yield i, names[j] if j < len(names) else "", value
    for i, block in enumerate(projection.get("evidence_blocks") or []):
        if isinstance(block, dict):
            yield from ((i, str(k), v) for k, v in block.items() if k not in SKIPPED_FIELDS)
    if items_field is not None and spec is not None:
        yield from ((leaf.item, leaf.key, leaf.value) for leaf in spec.leaves(projection))


SERIES_VALUES = frozenset({"first.v", "last.v", "min.v", "max.v", "mean", "point"})
"""The fields of a series item that are values of the series (typed by its unit); `point` is any points[n][1]."""


def series_leaves(item: Mapping[str, Any], points: bool = False) -> Iterator[tuple[str, str, Any]]:
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
