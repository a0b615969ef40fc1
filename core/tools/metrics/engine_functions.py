"""The functions the embedded PromQL evaluation knows (core/tools/metrics/engine.py), computed as Prometheus 2.x
computes them: rate / increase / delta with Prometheus' extrapolation to the range's edges, the *_over_time
aggregations, the arithmetic ones and label_replace."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

Points = Sequence[tuple[float, float]]
Labels = tuple[tuple[str, str], ...]


def _extrapolated(points: Points, end: float, range_s: float, *, counter: bool, rate: bool) -> float | None:
    """Prometheus' extrapolatedRate: the change over the points, extrapolated towards the range's edges."""
    if len(points) < 2:
        return None
    first_t, first_v = points[0]
    last_t, last_v = points[-1]
    change = last_v - first_v
    if counter:
        previous = 0.0
        for _, v in points:
            if v < previous:
                change += previous  # a counter reset
            previous = v
    to_start, to_end = first_t - (end - range_s), end - last_t
    sampled = last_t - first_t
    average = sampled / (len(points) - 1)
    if counter and change > 0 and first_v >= 0:
        to_start = min(to_start, sampled * (first_v / change))
    threshold = average * 1.1
    interval = sampled
    interval += to_start if to_start < threshold else average / 2
    interval += to_end if to_end < threshold else average / 2
    change *= interval / sampled
    return change / range_s if rate else change


def total(values: Sequence[float]) -> float:
    """The sum as Prometheus' float64 addition gives it: exact (fsum) when it can be, else plain addition (inf - inf
    is NaN, an overflow is inf) where fsum would raise."""
    try:
        return math.fsum(values)
    except (ValueError, OverflowError):
        return sum(values, 0.0)


def _over_time(fn: Callable[[list[float]], float]) -> Callable[[Points, float, float], float | None]:
    def apply(points: Points, end: float, range_s: float) -> float | None:
        return fn([v for _, v in points]) if points else None
    return apply


def _min(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return min(finite) if finite else math.nan


def _max(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return max(finite) if finite else math.nan


RANGE_FUNCTIONS: Mapping[str, Callable[[Points, float, float], float | None]] = MappingProxyType({
    "rate": lambda p, e, r: _extrapolated(p, e, r, counter=True, rate=True),
    "increase": lambda p, e, r: _extrapolated(p, e, r, counter=True, rate=False),
    "delta": lambda p, e, r: _extrapolated(p, e, r, counter=False, rate=False),
    "avg_over_time": _over_time(lambda vs: total(vs) / len(vs)),
    "sum_over_time": _over_time(total),
    "count_over_time": _over_time(lambda vs: float(len(vs))),
    "min_over_time": _over_time(_min),
    "max_over_time": _over_time(_max),
})


def range_value(name: str, points: Points, end: float, range_s: float) -> float | None:
    """One series' value of a range function over [end - range_s, end] (None: no value, the series is left out)."""
    return RANGE_FUNCTIONS[name](points, end, range_s)


def _ln(v: float) -> float:
    if math.isnan(v) or v < 0:
        return math.nan
    if v == 0:
        return -math.inf
    return math.log(v)


def _log(base: float) -> Callable[[float], float]:
    return lambda v: _ln(v) / math.log(base)


def _sqrt(v: float) -> float:
    return math.sqrt(v) if v >= 0 else math.nan


def _exp(v: float) -> float:
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


def _clamp(v: float, low: float, high: float) -> float:
    if low > high:
        return math.nan  # Prometheus returns no series; NaN is what a caller can tell apart
    return max(low, min(high, v)) if not math.isnan(v) else v


def _rounded(fn: Callable[[float], float]) -> Callable[[float], float]:
    return lambda v: float(fn(v)) if math.isfinite(v) else v


INSTANT_FUNCTIONS: Mapping[str, Callable[..., float]] = MappingProxyType({
    "abs": abs, "ln": _ln, "log2": _log(2.0), "log10": _log(10.0), "exp": _exp, "sqrt": _sqrt,
    "ceil": _rounded(math.ceil), "floor": _rounded(math.floor),
    "clamp_min": lambda v, low: max(v, low) if not math.isnan(v) else v,
    "clamp_max": lambda v, high: min(v, high) if not math.isnan(v) else v,
    "clamp": _clamp,
})
INSTANT_ARITY: Mapping[str, int] = MappingProxyType({"clamp_min": 1, "clamp_max": 1, "clamp": 2})
"""Number parameters after the vector (the others take none)."""

_GROUP = re.compile(r"\$\$|\$\{(\w+)\}|\$(\w+)")


def _expand(template: str, match: re.Match[str]) -> str:
    """Go's regexp Expand: $1, ${1}, $name, ${name}; $$ is a dollar; an unknown group is empty."""
    def one(ref: re.Match[str]) -> str:
        if ref.group(0) == "$$":
            return "$"
        key = ref.group(1) or ref.group(2)
        try:
            value = match.group(int(key)) if key.isdigit() else match.group(key)
        except IndexError:
            return ""
        return value or ""
    return _GROUP.sub(one, template)


def label_replace(labels: Labels, dst: str, replacement: str, src: str, regex: str) -> Labels:
    """Prometheus' label_replace: when the (fully anchored) regex matches src's value, dst becomes the expanded
    replacement (an empty one removes dst); otherwise the labels are unchanged."""
    have = dict(labels)
    match = re.compile(regex, re.DOTALL).fullmatch(have.get(src, ""))
    if match is None:
        return labels
    value = _expand(replacement, match)
    if value:
        have[dst] = value
    else:
        have.pop(dst, None)
    return tuple(sorted(have.items()))
