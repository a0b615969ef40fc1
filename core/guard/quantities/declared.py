"""Values whose unit is declared beside them: a `unit` field or column, a `<name>_unit` sibling, a metric name's suffix.

`value = 92.0, unit = "Percent"` (CloudWatch), `query_time = 2.5, query_time_unit = "s"`, a row of
`http_request_duration_seconds` = 0.25 (Prometheus' base-unit suffixes): the number alone is a plain number; with its
declared unit it is a percentage, a duration, a size, a count or a rate, and grounds "92 %", "2500 ms", "250 ms".

This is the API for tools that know their fields' units (SPEC §3: a tool declares the quantity kinds of its fields):
- `unit_values.unit_kind(unit)` (the metrics series' reader, shared): (kind, factor) for a unit name, or None;
- `metric_unit(name)`: the unit a metric name's suffix declares ('seconds', 'bytes', 'ratio', 'percent', 'count');
- `declared_quantity(value, unit, text, key)`: the typed Quantity of a value in that unit (a ratio of 0.14 is 14 %);
- `row_units(mapping)`: per field of one row / log line, the unit its siblings declare for it.
The evidence index (core/guard/quantities/evidence.py) types every numeric value through `row_units`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from core.guard.quantities.model import Kind, Quantity
from core.guard.quantities.unit_values import unit_quantities

_UNIT_KEYS = frozenset({"unit", "units", "uom", "unit_of_measure"})
_NUMBER_TEXT = re.compile(r"-?\d+(?:\.\d+)?")
_METRIC_KEYS = frozenset({"metric", "metric_name", "metricname", "__name__", "name", "series", "measurement"})
_VALUE_KEYS = frozenset({"value", "val", "avg", "average", "min", "minimum", "max", "maximum", "sum", "p50", "p90", "p95",
                         "p99", "last", "first", "mean", "median", "samplecount", "stat_value", "reading", "current"})
# Prometheus base-unit suffixes (https://prometheus.io/docs/practices/naming/): the last unit word of the name, before
# _total / _count / _sum / _bucket and the labels.
_METRIC_SUFFIX = re.compile(
    r"_(?P<unit>seconds|milliseconds|bytes|ratio|percent|celsius|meters|volts|amperes|joules|grams)"
    r"(?:_(?P<agg>total|count|sum|bucket|created))?$"
)


def metric_unit(name: str) -> str | None:
    """The unit a metric name declares by its suffix: 'http_request_duration_seconds' -> 'seconds',
    'process_resident_memory_bytes' -> 'bytes', 'node_cpu_saturation_ratio' -> 'ratio', '*_total' -> 'count'.
    A `_count` of a histogram or summary counts observations, whatever the unit of the observations."""
    base = name.split("{", 1)[0].strip().lower()
    found = _METRIC_SUFFIX.search(base)
    if found is not None:
        if found["agg"] in {"count", "bucket", "created"}:
            return "count" if found["agg"] == "count" else None
        return found["unit"] if found["agg"] != "total" or found["unit"] in {"seconds", "bytes"} else "count"
    if base.endswith(("_total", "_count")):
        return "count"
    return None


def declared_quantity(value: float, unit: str, text: str, key: str = "") -> Quantity | None:
    """The typed quantity of a value declared in `unit` (core/guard/quantities/unit_values.py reads the unit name),
    or None when the unit gives it no kind beyond the plain number it already is."""
    typed = [q for q in unit_quantities(value, text, unit, key=key) if q.kind is not Kind.NUMBER]
    return typed[0] if typed else None


def is_number_text(value: Any) -> bool:
    """A plain number written as text: how a SQL DECIMAL column comes back (core/tools/sql/values.py keeps its exact
    digits as a string), e.g. value = '92.50' beside unit = 'Percent'."""
    return isinstance(value, str) and len(value) <= 40 and _NUMBER_TEXT.fullmatch(value) is not None


def row_units(row: Mapping[str, Any]) -> dict[str, str]:
    """Field -> the unit declared for it in the same row or log line: `<field>_unit` / `<field>_units`, else a
    `unit` / `units` field for the value fields (value, avg, max, p99...) and, in a row naming its metric, for every
    numeric field; else the unit of the metric name's suffix."""
    units: dict[str, str] = {}
    shared = next((str(v) for k, v in row.items() if k.lower() in _UNIT_KEYS and isinstance(v, str)), None)
    metric = next((str(v) for k, v in row.items() if k.lower() in _METRIC_KEYS and isinstance(v, str)), None)
    from_metric = metric_unit(metric) if metric else None
    for key, value in row.items():
        if isinstance(value, bool) or not (isinstance(value, int | float) or is_number_text(value)):
            continue
        lowered = key.lower()
        own = row.get(f"{key}_unit", row.get(f"{key}_units"))
        if isinstance(own, str):
            units[key] = own
        elif shared is not None and (lowered in _VALUE_KEYS or metric is not None or len(row) <= 4):
            units[key] = shared
        elif from_metric is not None and (lowered in _VALUE_KEYS or len(row) <= 3):
            units[key] = from_metric
    return units
