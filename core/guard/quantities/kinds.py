"""Quantities of the fields whose kind a tool's spec declares (core/tools/contract.py QuantityKinds), beside the
guard's own reading of every value (typed by its field's name, its sibling unit field, its series' unit).

A declared count, number, duration/size/rate with its unit (fixed, or read from another field of the item), ratio
(0.14 is also 14 %), percentage, identifier, version or timestamp is typed as declared: `took: 95` declared as a
duration in seconds grounds "95 seconds", which its bare name never would. GUESS and WORDS fields are left to the
guard's reading; IGNORED fields are left out of it (see CallEvidence). Units are read by unit_values.unit_kind.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterator, Mapping
from typing import Any

from core.guard.quantities.model import Kind, Origin, Quantity, Shown
from core.guard.quantities.unit_values import typed_quantities, unit_kind
from core.tools.contract import FieldKind, FieldQuantity, QuantityKinds, ToolSpec

DECLARED = frozenset({FieldKind.TIMESTAMP, FieldKind.COUNT, FieldKind.NUMBER, FieldKind.DURATION, FieldKind.SIZE,
                      FieldKind.PERCENT, FieldKind.RATIO, FieldKind.RATE, FieldKind.IDENTIFIER, FieldKind.VERSION})
_RATIO = (Kind.PERCENT, 100.0)


def typed_fields(kinds: QuantityKinds) -> bool:
    """Whether the spec declares any field of an explicit kind (what spec_quantities types)."""
    return kinds.default.kind in DECLARED or any(fq.kind in DECLARED for fq in kinds.fields.values())


def spec_quantities(cid: str, spec: ToolSpec, projection: Mapping[str, Any]) -> Iterator[Shown]:
    """The declared fields' quantities of every listed item."""
    kinds, items = spec.quantities, spec.shown_items(projection)
    for leaf in spec.leaves(projection):
        declared = kinds.of(leaf.path)
        if declared.kind in DECLARED:
            item = items[leaf.item] if leaf.item < len(items) else None
            for quantity in declared_quantities(leaf.value, leaf.key, declared, item):
                yield Shown(quantity, Origin.RESULT, cid, leaf.item, leaf.key)


def unit_of(fq: FieldQuantity, item: Any) -> str:
    """The field's unit: its fixed unit, else the value of its unit field in the item ('' when neither says)."""
    if fq.unit:
        return fq.unit
    value: Any = item
    for part in (fq.unit_field or "").split(".") if fq.unit_field else ():
        value = value.get(part) if isinstance(value, Mapping) else None
    return value if fq.unit_field and isinstance(value, str) else ""


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def declared_quantities(value: Any, key: str, fq: FieldQuantity, item: Any) -> tuple[Quantity, ...]:
    """The quantities one value of a declared field shows (() when it is not a value of that kind)."""
    text = (repr(value) if isinstance(value, float) else str(value)).strip()
    if fq.kind is FieldKind.TIMESTAMP:
        return _moment(value, text, key)
    if fq.kind in (FieldKind.IDENTIFIER, FieldKind.VERSION):
        if not text or value is None or isinstance(value, bool):
            return ()
        number = _number(value)
        shown = str(int(number)) if fq.kind is FieldKind.IDENTIFIER and number is not None and number.is_integer() \
            else text.lower()
        return (Quantity(Kind.IDENTIFIER if fq.kind is FieldKind.IDENTIFIER else Kind.VERSION, shown, text, 0,
                         len(text), key=key),)
    number = _number(value)
    if number is None:
        return ()
    if fq.kind is FieldKind.COUNT:
        return (Quantity(Kind.COUNT, number, text, 0, len(text), key=key),)
    if fq.kind is FieldKind.PERCENT:
        return (Quantity(Kind.PERCENT, number, text, 0, len(text), key=key),)
    if fq.kind is FieldKind.RATIO:
        return typed_quantities(number, text, _RATIO, key)
    typed = unit_kind(unit_of(fq, item)) if fq.kind is not FieldKind.NUMBER else None
    return typed_quantities(number, text, typed, key)


def _moment(value: Any, text: str, key: str) -> tuple[Quantity, ...]:
    """A timestamp: ISO-8601 text, or seconds since the epoch."""
    number = _number(value) if not isinstance(value, str) else None
    try:
        moment = dt.datetime.fromtimestamp(number, dt.UTC) if number is not None else dt.datetime.fromisoformat(text)
    except (ValueError, OverflowError, OSError):
        return ()
    clock = moment.hour * 3600 + moment.minute * 60 + moment.second + moment.microsecond / 1e6
    return (Quantity(Kind.DATETIME, moment.date().isoformat(), text, 0, len(text), tolerance=1.0, clock=clock, key=key),)
