"""Values whose unit is written beside them: a metric series' `unit` (and `kind`), a SQL or log `unit` column or
field (`value` + `unit` = `Percent`, `Seconds`, `Bytes`, `Count/Second`: CloudWatch's unit names, Prometheus' base
units, and the short spellings of units.py).

A value always shows itself as a plain number (what the lazy text search reads), plus the quantity its unit makes:
a ratio 0.14 a percentage of 14, `seconds` a duration, `bytes` a size (binary and decimal claims both match), a
per-second unit (or a series computed as a rate) a rate. A raw counter's value (`kind` counter: a cumulative total
since the process started) grounds no rate and no duration or size: only the plain number it is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from types import MappingProxyType

from core.guard.quantities.model import Kind, Quantity
from core.guard.quantities.units import DURATION_SECONDS, SIZE_BYTES

_NAMED: Mapping[str, tuple[Kind, float]] = MappingProxyType({
    "ratio": (Kind.PERCENT, 100.0), "fraction": (Kind.PERCENT, 100.0),
    "percent": (Kind.PERCENT, 1.0), "percentage": (Kind.PERCENT, 1.0), "pct": (Kind.PERCENT, 1.0),
    "%": (Kind.PERCENT, 1.0),
    "kilobytes": (Kind.SIZE, 1e3), "megabytes": (Kind.SIZE, 1e6), "gigabytes": (Kind.SIZE, 1e9),
    "terabytes": (Kind.SIZE, 1e12), "kibibytes": (Kind.SIZE, 2.0**10), "mebibytes": (Kind.SIZE, 2.0**20),
    "gibibytes": (Kind.SIZE, 2.0**30),
})
_PER_SECOND = re.compile(r"^(?P<unit>[a-z%]*)\s*(?:/\s*(?:s|sec|second)|per\s*second|_per_second|ps)$")
_CLEAN = re.compile(r"[\s_-]+")


def unit_kind(unit: str) -> tuple[Kind, float] | None:
    """The kind and factor a written unit gives a value ('Seconds' -> duration x1, 'ratio' -> percent x100,
    'Count/Second' -> rate x1, 'Kilobytes/Second' -> rate of bytes, None for a count or an unknown unit)."""
    text = _CLEAN.sub(" ", unit.strip().lower()).strip()
    if not text or text in ("count", "none", "1", "unit", "units"):
        return None
    per = _PER_SECOND.match(text.replace(" ", ""))
    if per is not None:
        inner = per["unit"]
        base = _base(inner) if inner not in ("", "count", "1", "requests", "req", "ops", "events") else None
        return Kind.RATE, (base[1] if base is not None and base[0] is Kind.SIZE else 1.0)
    return _base(text.replace(" ", ""))


def _base(text: str) -> tuple[Kind, float] | None:
    named = _NAMED.get(text)
    if named is not None:
        return named
    if text in DURATION_SECONDS:
        return Kind.DURATION, DURATION_SECONDS[text]
    if text in SIZE_BYTES:
        return Kind.SIZE, SIZE_BYTES[text][0]
    if text.endswith("s") and text[:-1] in SIZE_BYTES:
        return Kind.SIZE, SIZE_BYTES[text[:-1]][0]
    return None


def unit_typing(unit: str, kind: str = "") -> tuple[Kind, float] | None:
    """What a value of this unit (and series kind) shows besides its plain number: (kind, factor), or None."""
    if kind == "counter":
        return None
    typed = unit_kind(unit)
    if kind == "rate" and (typed is None or typed[0] is not Kind.RATE):
        factor = typed[1] if typed is not None and typed[0] is Kind.SIZE else 1.0
        typed = (Kind.RATE, factor)
    if typed is not None and typed[0] is Kind.RATE and typed[1] != 1.0:
        return None  # bytes per second: no rate claim of bytes is typed by the extractor yet
    return typed


def typed_quantities(value: float, text: str, typed: tuple[Kind, float] | None, key: str = "") -> tuple[Quantity, ...]:
    """A value's plain number and, when `typed` (from unit_typing) says so, the quantity its unit makes."""
    if not math.isfinite(value):
        return ()
    plain = Quantity(Kind.NUMBER, value, text, 0, len(text), key=key)
    if typed is None:
        return (plain,)
    return (plain, Quantity(typed[0], value * typed[1], text, 0, len(text), key=key))


def unit_quantities(value: float, text: str, unit: str, kind: str = "", key: str = "") -> tuple[Quantity, ...]:
    """The quantities a value shows given its unit and (for metric series) its kind."""
    return typed_quantities(value, text, unit_typing(unit, kind), key)
