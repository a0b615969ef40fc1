"""The embedded query_metrics backend: plain selectors over the OpenMetrics folder, evaluated as Prometheus would.

A range query gives each selected series a value at start, start + step, ... end: the latest sample at or before
that time and within the 5-minute lookback (Prometheus' default `--query.lookback-delta`); an instant query the same
at `end`. So the same files give the same points here and in a Prometheus backfilled from them. Anything beyond one
plain selector (functions, operators, offsets, `@`) needs PromQL evaluation: ERROR naming DIAG_PROMETHEUS_URL.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_right
from pathlib import Path

from core.errors import ToolFailure
from core.tools.metrics.args import Window
from core.tools.metrics.backend import MAX_SERIES_READ, Fetched
from core.tools.metrics.openmetrics import MetricsFolder, Snapshot, family_name
from core.tools.metrics.promql import CheckedQuery, Selector
from core.tools.metrics.series import Series
from core.tools.metrics.units import SeriesUnit, metric_unit

LOOKBACK_S = 300.0


class EmbeddedMetrics:
    """query_metrics over DIAG_METRICS_PATH."""

    source = "embedded"

    def __init__(self, path: Path) -> None:
        self.folder = MetricsFolder(path)

    async def fetch(self, query: CheckedQuery, window: Window) -> Fetched:
        if query.plain is None:
            raise ToolFailure(
                "METRICS_NEEDS_PROMETHEUS",
                "The embedded metrics backend answers plain selectors only (a metric name with label matchers, e.g. "
                'hikaricp_connections_active{service="order-service"}); functions, operators, offsets and @ need '
                "Prometheus: set DIAG_PROMETHEUS_URL.",
            )
        return await asyncio.to_thread(self._fetch, query.plain, window)

    def _fetch(self, selector: Selector, window: Window) -> Fetched:
        snapshot = self.folder.snapshot()
        selected = [s for s in snapshot.series if selector.matches(s.name, s.labels)]
        if len(selected) > MAX_SERIES_READ:
            raise ToolFailure("METRICS_TOO_MANY_SERIES",
                              f"The selector matches {len(selected):,} series (at most {MAX_SERIES_READ:,}); add label "
                              "matchers.")
        out: list[Series] = []
        for series in selected:
            evaluated = evaluate(series, window)
            if len(evaluated):
                out.append(evaluated)
        units = [_unit(s, snapshot) for s in out]
        notes = {"backend": "embedded", "files_read": snapshot.files, "samples_in_files": snapshot.samples}
        if snapshot.unreadable:
            notes["unreadable_files"] = snapshot.unreadable[:10]
        if snapshot.untimed:
            notes["samples_without_timestamp_skipped"] = snapshot.untimed
        return Fetched(out, units, notes)

    async def aclose(self) -> None:
        return None


def _unit(series: Series, snapshot: Snapshot) -> SeriesUnit:
    meta = snapshot.meta.get(family_name(series.name, snapshot.meta))
    return metric_unit(series.name, meta.type if meta else "", meta.unit if meta else "")


def evaluate(series: Series, window: Window) -> Series:
    """The series as Prometheus evaluates a plain selector over the window (range) or at its end (instant)."""
    out = Series(series.name, dict(series.labels))
    times, values = series.times, series.values
    start, end = window.start.timestamp(), window.end.timestamp()
    steps = [end] if window.instant else (start + k * window.step_s for k in range(window.points))
    for t in steps:
        at = bisect_right(times, t) - 1
        if at >= 0 and t - times[at] <= LOOKBACK_S:
            out.add(t, values[at])
    return out
