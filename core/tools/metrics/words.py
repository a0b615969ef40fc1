"""Series in plain words: values in their unit ("14 %", "30.1 s", "1.5 GiB", "4.2/s"), times as hh:mm, what a
series is ("the error ratio of checkout-api") and how it moved ("rose from 0.2 % at 22:50 to 14 % at 23:05, peak
16 % at 23:12"). Used by the fallback's facts, progress and Show evidence; never by the agent."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

METRIC_LABEL = "metric"
CHANGE_LABEL = "change"
RATIO_CHANGE = "ratio to before"
FROM_ZERO = "from zero, window level"
"""The labels of the first look's ranking (core/tools/metrics/first_look.py): the metric's name, and what the value
is (the window's level over the level before it, or the window's level when the level before was zero)."""
SUBJECT_LABELS = ("service", "app", "application", "job", "instance", "pod", "container", "pool", "route", "status",
                  "code", "quantile", "le", "mode", "device")
_UNIT_WORDS = ("seconds", "bytes", "ratio", "percent", "total", "count", "sum", "info")
_BINARY = (("TiB", 2.0**40), ("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10))


def _digits(value: float, significant: int = 3) -> str:
    if value == 0:
        return "0"
    text = f"{value:.{significant}g}"
    if "e" in text:
        text = f"{value:,.0f}" if abs(value) >= 1 else f"{value:.2e}"
    return text


def value_words(value: Any, unit: str, kind: str) -> str:
    """A value in its unit, as an engineer writes it."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        return "no value"
    v = float(value)
    suffix = "/s" if kind == "rate" else ""
    if unit == "ratio":
        return f"{_digits(v * 100)} %"
    if unit == "percent":
        return f"{_digits(v)} %"
    if unit == "seconds":
        if abs(v) < 1 and v != 0:
            return f"{_digits(v * 1000)} ms{suffix}"
        return f"{_digits(v)} s{suffix}"
    if unit == "bytes":
        for name, size in _BINARY:
            if abs(v) >= size:
                return f"{_digits(v / size)} {name}{suffix}"
        return f"{_digits(v)} B{suffix}"
    unit_text = f" {unit}" if unit and unit not in ("", "unknown") else ""
    return f"{_digits(v)}{unit_text}{suffix}"


def clock_words(stamp: Any) -> str:
    """'23:05' for an ISO time on the minute, '23:05:30' otherwise ('' when unreadable)."""
    try:
        moment = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return ""
    return moment.strftime("%H:%M" if moment.second == 0 else "%H:%M:%S")


def metric_words(metric: str, unit: str) -> str:
    """'http_server_requests_error_ratio' -> 'http server requests error ratio' (unit words kept for ratios)."""
    name = metric.split(":")[-2] if metric.count(":") >= 2 else metric
    words = [w for w in name.replace(":", "_").split("_") if w]
    while len(words) > 1 and words[-1] in _UNIT_WORDS and not (words[-1] == "ratio" and unit == "ratio"):
        dropped = words.pop()
        if dropped == "seconds" and words[-1] not in ("duration", "latency", "time"):
            words.append("duration")
            break
    return " ".join(words) or metric


def subject_words(labels: Mapping[str, Any]) -> str:
    """The labels that say whose series it is, in words: 'checkout-api', 'order-service HikariPool-1'."""
    picked = [str(labels[k]) for k in SUBJECT_LABELS if k in labels and labels[k] not in ("", None)][:2]
    if "quantile" in labels:
        picked = [p for p in picked if p != str(labels["quantile"])] + [f"p{_quantile(labels['quantile'])}"]
    return " ".join(picked[:3])


def _quantile(value: Any) -> str:
    try:
        return _digits(float(value) * 100, 4)
    except (TypeError, ValueError):
        return str(value)


def series_title(item: Mapping[str, Any]) -> str:
    """'http server requests error ratio of checkout-api' (a computed series' name from its `metric` label, which
    label_replace keeps where functions drop `__name__`)."""
    labels = item.get("labels") if isinstance(item.get("labels"), Mapping) else {}
    name = item.get("metric") or (labels or {}).get(METRIC_LABEL) or "value"
    what = metric_words(str(name), str(item.get("unit") or ""))
    whose = subject_words(labels or {})
    return f"{what} of {whose}" if whose else what


def _at(item: Mapping[str, Any], key: str) -> tuple[Any, str]:
    mark = item.get(key)
    if not isinstance(mark, Mapping):
        return None, ""
    return mark.get("v"), clock_words(mark.get("t"))


def movement_words(item: Mapping[str, Any]) -> str:
    """'rose from 0 % at 22:30 to 57 % at 23:30, peak 86 % at 23:14' (or fell / stayed)."""
    unit, kind = str(item.get("unit") or ""), str(item.get("kind") or "")
    first, first_at = _at(item, "first")
    last, last_at = _at(item, "last")
    high, high_at = _at(item, "max")
    if not isinstance(first, int | float) or not isinstance(last, int | float):
        return "had no value in the window"

    def say(value: Any) -> str:
        return value_words(value, unit, kind)

    if first_at == last_at:
        return f"was {say(last)} at {last_at}"
    span = max(abs(first), abs(last), abs(high) if isinstance(high, int | float) else 0.0) or 1.0
    if abs(last - first) <= 0.05 * span:
        text = f"stayed near {say(last)} from {first_at} to {last_at}"
    else:
        verb = "rose" if last > first else "fell"
        text = f"{verb} from {say(first)} at {first_at} to {say(last)} at {last_at}"
    if isinstance(high, int | float) and high > max(first, last) and high_at and say(high) != say(max(first, last)):
        text += f", peak {say(high)} at {high_at}"
    return text


def series_sentence(item: Mapping[str, Any]) -> str:
    """'the http server requests error ratio of checkout-api rose from 0 % at 22:30 to 57 % at 23:30, peak ...'."""
    if change_of(item) is not None:
        return change_words(item)
    return f"the {series_title(item)} {movement_words(item)}"


def change_of(item: Mapping[str, Any]) -> str | None:
    """RATIO_CHANGE or FROM_ZERO for a series of the first look's ranking, else None."""
    labels = item.get("labels") if isinstance(item.get("labels"), Mapping) else {}
    change = (labels or {}).get(CHANGE_LABEL)
    return str(change) if change in (RATIO_CHANGE, FROM_ZERO) and not item.get("metric") else None


def change_words(item: Mapping[str, Any], before: str = "before the window") -> str:
    """A series of the first look's ranking (core/tools/metrics/first_look.py) in words: its value is its level in
    the window over its level `before`, or (FROM_ZERO) its level in the window after zero before."""
    value, _ = _at(item, "last")
    title = series_title(item)
    if not isinstance(value, int | float):
        return f"the {title} had no value"
    if change_of(item) == FROM_ZERO:
        labels = item.get("labels") if isinstance(item.get("labels"), Mapping) else {}
        rate = str((labels or {}).get(METRIC_LABEL, "")).endswith(("_total", "_count", "_sum"))
        level = f"{_digits(float(value))}/s" if rate else f"{_digits(float(value))} on average"
        return f"the {title} was {level} in the window, 0 {before}"
    if value == 0:
        return f"the {title} fell to 0 from its level {before}"
    return f"the {title} was {_digits(float(value))} times its level {before}"
