"""The embedded query_metrics backend: PromQL over the OpenMetrics folder, evaluated as Prometheus would.

A range query gives each selected series a value at start, start + step, ... end: the latest sample at or before
that time and within the 5-minute lookback (Prometheus' default `--query.lookback-delta`); an instant query the same
at `end`. So the same files give the same points here and in a Prometheus backfilled from them. Beyond one plain
selector, the PromQL subset of core/tools/metrics/engine.py (offsets, subqueries, rate and *_over_time, the common
aggregations, arithmetic, comparisons, label_replace) is evaluated the same way at each step; what it lacks (`@`,
group_left, other functions) is ERROR naming DIAG_PROMETHEUS_URL.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_right
from pathlib import Path
from typing import Any

from core.errors import ToolFailure
from core.tools.metrics.args import Window
from core.tools.metrics.backend import MAX_SERIES_READ, Fetched
from core.tools.metrics.engine import evaluate as evaluate_query
from core.tools.metrics.engine_compile import Unsupported, compile_query
from core.tools.metrics.folder_index import SnapshotIndex
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
        self._index: SnapshotIndex | None = None

    def _indexed(self) -> SnapshotIndex:
        """The folder's snapshot now with what is derived from it (kept while no file changes)."""
        snapshot = self.folder.snapshot()
        index = self._index
        if index is None or index.snapshot is not snapshot:
            index = self._index = SnapshotIndex(snapshot)
        return index

    async def fetch(self, query: CheckedQuery, window: Window) -> Fetched:
        return await asyncio.to_thread(self.fetch_blocking, query, window)

    def fetch_blocking(self, query: CheckedQuery, window: Window) -> Fetched:
        """fetch's work, blocking (MetricsTool runs it in a worker thread with the raw result's making)."""
        if query.plain is None:
            return self._evaluate(query, window)
        return self._fetch(query.plain, window)

    def _fetch(self, selector: Selector, window: Window) -> Fetched:
        index = self._indexed()
        snapshot = index.snapshot
        out: list[Series] = []
        for series in index.selected(selector):
            evaluated = evaluate(series, window)
            if len(evaluated):
                out.append(evaluated)
        return Fetched(out, [_unit(s, snapshot) for s in out], _notes(snapshot))

    def _evaluate(self, query: CheckedQuery, window: Window) -> Fetched:
        index = self._indexed()
        try:
            root = index.compiled(query, lambda: compile_query(query.expr, index.selected))
        except Unsupported as exc:
            raise ToolFailure(
                "METRICS_NEEDS_PROMETHEUS",
                f"The embedded metrics backend does not evaluate {exc} (it answers selectors, offsets, subqueries, "
                "rate/increase/delta, *_over_time, abs/ln/clamp, label_replace, sum/avg/min/max/count/topk/bottomk, "
                "arithmetic, comparisons and and/or/unless); set DIAG_PROMETHEUS_URL for the rest.",
            ) from exc
        steps = [window.end.timestamp()] if window.instant else [
            window.start.timestamp() + k * window.step_s for k in range(window.points)]
        out = [s for s in evaluate_query(root, steps) if len(s)]
        if len(out) > MAX_SERIES_READ:
            raise ToolFailure("METRICS_TOO_MANY_SERIES",
                              f"The query returns more than {MAX_SERIES_READ:,} series; aggregate it or add label "
                              "matchers.")
        return Fetched(out, [index.unit(query)] * len(out), _notes(index.snapshot))

    async def aclose(self) -> None:
        return None


def _notes(snapshot: Snapshot) -> dict[str, Any]:
    notes: dict[str, Any] = {"backend": "embedded", "files_read": snapshot.files, "samples_in_files": snapshot.samples}
    if snapshot.unreadable:
        notes["unreadable_files"] = snapshot.unreadable[:10]
    if snapshot.untimed:
        notes["samples_without_timestamp_skipped"] = snapshot.untimed
    return notes


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
