"""A backend's series as the canonical raw result: the top N by peak, each with its labels, unit, kind, summary
(first/last/min/max with their times, mean) and its points downsampled to RAW_POINTS (extremes kept); the other
series are counted, never silently dropped."""

from __future__ import annotations

import math
from typing import Any

from core.contracts.evidence import RawResult
from core.tools.metrics.args import Window
from core.tools.metrics.backend import Fetched
from core.tools.metrics.promql import CheckedQuery
from core.tools.metrics.series import Point, Series, downsample, iso, summarize, top_by_peak
from core.tools.metrics.units import SeriesUnit

MAX_SERIES_SHOWN = 20
RAW_POINTS = 400
SIGNIFICANT = 6


def number(value: float) -> float | None:
    """A value as shown: 6 significant digits (finite), None for NaN or infinities."""
    if not math.isfinite(value):
        return None
    rounded = float(f"{value:.{SIGNIFICANT}g}")
    return int(rounded) if rounded.is_integer() and abs(rounded) < 2**53 else rounded


class IsoTimes(dict[float, str]):
    """iso() of the times of one result, each written once: its series share their times (an instant query's every
    point and summary is at one time)."""

    def __missing__(self, t: float) -> str:
        text = self[t] = iso(t)
        return text


class ShownNumbers(dict[float, float | None]):
    """number() of the values of one result, each worked out once: a series' summary repeats values of its points
    (an instant query's one point is its first, last, min, max and mean). Equal floats show alike (0.0 and -0.0 both
    as 0); a NaN is a new key each time, shown as None."""

    def __missing__(self, value: float) -> float | None:
        shown = self[value] = number(value)
        return shown


def point(p: Point, times: IsoTimes | None = None, numbers: ShownNumbers | None = None) -> dict[str, Any]:
    return {"t": iso(p.t) if times is None else times[p.t], "v": number(p.v) if numbers is None else numbers[p.v]}


def series_item(series: Series, unit: SeriesUnit, points: int = RAW_POINTS, times: IsoTimes | None = None,
                numbers: ShownNumbers | None = None) -> dict[str, Any]:
    """One series as a raw item (its summary from every point, its points downsampled); `times` and `numbers`
    remember the times and values written for the result's other series."""
    times = IsoTimes() if times is None else times
    numbers = ShownNumbers() if numbers is None else numbers
    summary = summarize(series)
    item: dict[str, Any] = {"metric": series.name, "labels": dict(sorted(series.labels.items())),
                            "unit": unit.unit, "kind": unit.kind, "points_total": len(series)}
    if summary is not None:
        item |= {"first": point(summary.first, times, numbers), "last": point(summary.last, times, numbers),
                 "min": point(summary.low, times, numbers), "max": point(summary.high, times, numbers),
                 "mean": numbers[summary.mean]}
        keep: tuple[float, ...] = (summary.low.t, summary.high.t)
    else:
        keep = ()
    item["points"] = [[times[p.t], numbers[p.v]] for p in downsample(series, points, keep)]
    return item


def effective_arguments(query: CheckedQuery, window: Window) -> dict[str, Any]:
    """The arguments the query really ran with (window resolved against the clock, step chosen)."""
    return {"query": query.text, "start": iso(window.start.timestamp()), "end": iso(window.end.timestamp()),
            "step": number(window.step_s), "instant": window.instant}


def raw_result(fetched: Fetched, query: CheckedQuery, window: Window, max_series: int = MAX_SERIES_SHOWN) -> RawResult:
    """The raw result of one call: the top `max_series` series by peak, highest first."""
    units = {id(s): u for s, u in zip(fetched.series, fetched.units, strict=True)}
    shown = top_by_peak(fetched.series, max_series)
    times, numbers = IsoTimes(), ShownNumbers()
    items = [series_item(s, units[id(s)], times=times, numbers=numbers) for s in shown]
    total = len(fetched.series)
    notes: dict[str, Any] = dict(fetched.notes)
    notes |= {"series_total": total, "series_listed": len(items), "order": "highest peak first"}
    if total > len(items):
        notes["series_not_listed"] = total - len(items)
    if not window.instant:
        notes["points_per_series_max"] = window.points
    if fetched.warnings:
        notes["backend_warnings"] = fetched.warnings
    return RawResult(items=items, total_count=total, effective_arguments=effective_arguments(query, window),
                     notes=notes)
