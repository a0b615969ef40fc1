"""What a query_metrics backend returns and the protocol both backends implement."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from core.tools.metrics.args import Window
from core.tools.metrics.promql import CheckedQuery
from core.tools.metrics.series import Series
from core.tools.metrics.units import SeriesUnit

MAX_SERIES_READ = 10_000
"""Series one answer may carry (Prometheus' `limit`); more is an ERROR asking for a narrower query."""


@dataclass
class Fetched:
    """Every series a backend answered with, each series' unit, and notes about how it was read."""

    series: list[Series]
    units: list[SeriesUnit]
    notes: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


class MetricsBackend(Protocol):
    """Evaluates a checked query over a window; raises ToolFailure for a clear ERROR."""

    source: str
    """"embedded" or "prometheus" (shown in the notes and in `diagbot check`)."""

    async def fetch(self, query: CheckedQuery, window: Window) -> Fetched: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class BlockingFetch(Protocol):
    """A backend whose fetch is blocking work of this process (the embedded folder): the tool runs it and the raw
    result's making in one worker thread."""

    def fetch_blocking(self, query: CheckedQuery, window: Window) -> Fetched: ...
