"""A series' unit and kind, from its metric name's suffix, the metadata (OpenMetrics `# UNIT`/`# TYPE`, Prometheus'
/api/v1/metadata) and what the query computed (rate, increase, a ratio of two rates, ...).

The unit is what a value is measured in: `seconds`, `bytes`, `ratio` (0-1, read as a percentage), `percent`
(0-100), another base unit from the name (`celsius`, `meters`, ...) or "" for a plain number. The kind says what a
value is: `gauge` (a level), `counter` (a raw cumulative total: grounds no rate and no count), `rate` (per second,
computed by the query), `increase` (a count over the query's range) and `count` (a number of series or samples).
Prometheus' naming conventions (https://prometheus.io/docs/practices/naming/) put base units in the name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

import promql_parser as pp

Kind = Literal["gauge", "counter", "rate", "increase", "count", "unknown"]
KINDS: tuple[Kind, ...] = ("gauge", "counter", "rate", "increase", "count", "unknown")

_BASE_UNITS = frozenset({
    "seconds", "bytes", "ratio", "percent", "celsius", "meters", "volts", "amperes", "joules", "grams", "hertz",
    "watts", "kelvin",
})
_ALIASES: Mapping[str, str] = MappingProxyType({
    "second": "seconds", "byte": "bytes", "percentage": "percent", "pct": "percent", "utilisation": "ratio",
    "utilization": "ratio",
})
_COUNTER_SUFFIXES = ("_total", "_created")
_TOKEN = re.compile(r"[_:]")
_RATE_FUNCS = frozenset({"rate", "irate"})
_PER_SECOND_FUNCS = frozenset({"deriv"})
_INCREASE_FUNCS = frozenset({"increase"})
_COUNT_FUNCS = frozenset({"count_over_time", "absent", "absent_over_time", "changes", "resets", "present_over_time"})
_KEEP_FIRST_ARG = frozenset({
    "abs", "ceil", "floor", "round", "clamp", "clamp_max", "clamp_min", "sort", "sort_desc", "label_replace",
    "label_join", "avg_over_time", "min_over_time", "max_over_time", "last_over_time", "sum_over_time",
    "delta", "idelta", "predict_linear", "holt_winters", "double_exponential_smoothing", "sort_by_label",
    "sort_by_label_desc", "mad_over_time", "stddev_over_time",
})
_KEEP_SECOND_ARG = frozenset({"quantile_over_time", "histogram_quantile"})
_COUNT_AGGS = frozenset({"count", "count_values"})
_KEEP_AGGS = frozenset({"sum", "avg", "min", "max", "topk", "bottomk", "quantile", "group", "stddev", "stdvar",
                        "limitk", "limit_ratio"})


@dataclass(frozen=True)
class SeriesUnit:
    """The unit and kind of a query's result series."""

    unit: str = ""
    kind: Kind = "unknown"

    @property
    def per_second(self) -> bool:
        return self.kind == "rate"


PLAIN = SeriesUnit()


def name_unit(name: str) -> str:
    """The base unit a metric name ends in: `http_request_duration_seconds_sum` -> seconds, `..._ratio` -> ratio,
    `instance:node_cpu_utilisation:ratio` -> ratio; "" when none."""
    lowered = name.lower()
    for suffix in (*_COUNTER_SUFFIXES, "_sum", "_bucket", "_count"):
        if lowered.endswith(suffix):
            if suffix == "_count":
                return ""
            lowered = lowered[: -len(suffix)]
            break
    tokens = [t for t in _TOKEN.split(lowered) if t]
    for token in reversed(tokens[-2:]):
        token = _ALIASES.get(token, token)
        if token in _BASE_UNITS:
            return token
    return ""


def metric_unit(name: str, metadata_type: str = "", metadata_unit: str = "") -> SeriesUnit:
    """A raw selected series' unit and kind: a counter by its `_total` name or its metadata type, else a gauge."""
    unit = _ALIASES.get(metadata_unit.lower(), metadata_unit.lower()) if metadata_unit else name_unit(name)
    if unit not in _BASE_UNITS:
        unit = name_unit(name)
    lowered = name.lower()
    counter = metadata_type == "counter" or lowered.endswith(_COUNTER_SUFFIXES) or (
        lowered.endswith(("_count", "_sum", "_bucket")) and metadata_type in ("", "histogram", "summary")
    )
    if lowered.endswith("_count"):
        unit = ""
    return SeriesUnit(unit, "counter" if counter else "gauge")


Types = Mapping[str, tuple[str, str]]
"""metric name -> (type, unit) from metadata."""


def expression_unit(expr: pp.Expr, types: Types | None = None) -> SeriesUnit:
    """The unit and kind of an expression's result, from its structure (unknown where it cannot be told). Seconds
    per second (the rate of a CPU or busy-time counter) is a share: a ratio."""
    unit = _unit(expr, types or {})
    return SeriesUnit("ratio", "gauge") if unit == SeriesUnit("seconds", "rate") else unit


def _unit(expr: pp.Expr, types: Types) -> SeriesUnit:
    if isinstance(expr, pp.VectorSelector):
        name = expr.name or next((m.value for m in expr.matchers.matchers if m.name == "__name__"
                                  and str(m.op).endswith("Equal") and "Not" not in str(m.op)), "")
        kind, unit = types.get(name, ("", ""))
        return metric_unit(name, kind, unit) if name else PLAIN
    if isinstance(expr, pp.MatrixSelector):
        return _unit(expr.vector_selector, types)
    if isinstance(expr, pp.ParenExpr | pp.SubqueryExpr | pp.UnaryExpr):
        return _unit(expr.expr, types)
    if isinstance(expr, pp.Call):
        return _call_unit(expr, types)
    if isinstance(expr, pp.AggregateExpr):
        op = str(expr.op)
        if op in _COUNT_AGGS:
            return SeriesUnit("", "count")
        return _unit(expr.expr, types) if op in _KEEP_AGGS else PLAIN
    if isinstance(expr, pp.BinaryExpr):
        return _binary_unit(expr, types)
    return PLAIN


def _call_unit(expr: pp.Call, types: Types) -> SeriesUnit:
    name, args = expr.func.name, [a for a in expr.args if isinstance(a, pp.Expr)]
    exprs = [a for a in args if not isinstance(a, pp.NumberLiteral | pp.StringLiteral)]
    if not exprs:
        return PLAIN
    inner = _unit(exprs[0], types)
    if name in _RATE_FUNCS:
        return _per_second(inner)
    if name in _PER_SECOND_FUNCS:
        return SeriesUnit(inner.unit, "rate") if inner.kind != "counter" else PLAIN
    if name in _INCREASE_FUNCS:
        return SeriesUnit(inner.unit, "increase") if inner.kind == "counter" else PLAIN
    if name in _COUNT_FUNCS:
        return SeriesUnit("", "count")
    if name in _KEEP_FIRST_ARG or name in _KEEP_SECOND_ARG:
        if inner.kind == "counter" and name not in ("label_replace", "label_join", "sort", "sort_desc"):
            return PLAIN  # e.g. max_over_time of a raw counter: a cumulative level, not a rate or a count
        if name == "histogram_quantile":
            return SeriesUnit(inner.unit, "gauge")
        return inner
    return PLAIN


def _per_second(inner: SeriesUnit) -> SeriesUnit:
    """rate() of a counter: per second of its unit."""
    if inner.kind != "counter":
        return PLAIN
    return SeriesUnit(inner.unit, "rate")


def _number(expr: pp.Expr) -> float | None:
    while isinstance(expr, pp.ParenExpr):
        expr = expr.expr
    return expr.val if isinstance(expr, pp.NumberLiteral) else None


def _binary_unit(expr: pp.BinaryExpr, types: Types) -> SeriesUnit:
    op = str(expr.op).strip()
    left_n, right_n = _number(expr.lhs), _number(expr.rhs)
    left = PLAIN if left_n is not None else _unit(expr.lhs, types)
    right = PLAIN if right_n is not None else _unit(expr.rhs, types)
    if op in ("and", "unless") or (op in (">", "<", ">=", "<=", "==", "!=") and not _returns_bool(expr)):
        return left  # a filter keeps the left side's values
    if op == "or":
        return left if left == right else PLAIN
    if op in ("+", "-"):
        if right_n is not None:
            return left if left.kind != "counter" else PLAIN
        return left if left == right and left.kind != "counter" else PLAIN
    if op == "*":
        return _scaled(left, right_n) if right_n is not None else (
            _scaled(right, left_n) if left_n is not None else PLAIN)
    if op == "/":
        return _divided(left, right, right_n)
    return PLAIN


def _returns_bool(expr: pp.BinaryExpr) -> bool:
    modifier = expr.modifier
    return bool(modifier is not None and modifier.return_bool)


def _scaled(unit: SeriesUnit, factor: float | None) -> SeriesUnit:
    if factor == 1:
        return unit
    if factor == 100 and unit.unit == "ratio" and unit.kind in ("gauge", "unknown"):
        return SeriesUnit("percent", "gauge")
    if factor == 60 and unit.kind == "rate":
        return PLAIN  # per minute: the draft says "per minute" from the per-second value itself
    return PLAIN


def _divided(left: SeriesUnit, right: SeriesUnit, right_n: float | None) -> SeriesUnit:
    if right_n is not None:
        if right_n == 100 and left.unit == "percent":
            return SeriesUnit("ratio", "gauge")
        return left if right_n == 1 else PLAIN
    measured = {"gauge", "rate", "increase", "count"}
    if left.kind not in measured or right.kind not in measured:
        return PLAIN
    if left.unit == right.unit and left.per_second == right.per_second:
        return SeriesUnit("ratio", "gauge")  # errors/requests, used/limit: a share
    if right.unit == "" and left.per_second == right.per_second and left.unit:
        return SeriesUnit(left.unit, "gauge")  # rate(x_seconds_sum) / rate(x_seconds_count): seconds per request
    return PLAIN
