"""Arguments of query_metrics (SPEC §3): the PromQL text, the window, the step and instant; and their resolution."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import Field, model_validator

from core.tools.native import WindowArgs

DEFAULT_WINDOW = timedelta(minutes=60)
MAX_RANGE = timedelta(days=31)
"""The longest window (and matrix or subquery range) a query may read: a month covers 'since last week' twice."""
MAX_POINTS = 11_000
"""Points per series: Prometheus' own cap on query_range resolution."""
DEFAULT_POINTS = 240
"""The default step gives at most this many points per series."""
NICE_STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)


class MetricsArgs(WindowArgs):
    """Arguments of query_metrics: one PromQL expression over a window (range) or at its end (instant)."""

    query: str = Field(
        min_length=1, max_length=4000,
        description='PromQL, e.g. hikaricp_connections_active{service="order-service"} or '
                    'sum by (service) (rate(http_server_requests_total{code=~"5.."}[5m])).',
    )
    start: datetime | None = Field(
        default=None, description="Window start, ISO-8601 (UTC if no offset). Default: 60 minutes before `end`."
    )
    end: datetime | None = Field(
        default=None, description="Window end, ISO-8601 (UTC if no offset). Default: the configured clock."
    )
    step: float | None = Field(
        default=None, gt=0, le=86_400,
        description="Seconds between points (range queries). Default: at most 240 points per series.",
    )
    instant: bool = Field(default=False, description="Evaluate at `end` only (one value per series).")

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, data: Any) -> Any:
        """A null means "use the default" (strict schemas send every optional field as null)."""
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None}
        return data


@dataclass(frozen=True)
class Window:
    """What a query really reads: [start, end] evaluated every `step` seconds (instant: at `end` only)."""

    start: datetime
    end: datetime
    step_s: float
    instant: bool

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()

    @property
    def points(self) -> int:
        """Points per series Prometheus returns for this window (1 for an instant query)."""
        return 1 if self.instant else int(self.seconds // self.step_s) + 1


class WindowRefused(ValueError):
    """The window or step breaks a bound; the message says which and what is allowed."""


def default_step(seconds: float) -> float:
    """The smallest 'nice' step (1 s, 15 s, 1 min, ...) giving at most DEFAULT_POINTS points over `seconds`."""
    wanted = seconds / (DEFAULT_POINTS - 1)
    for step in NICE_STEPS_S:
        if step >= wanted:
            return float(step)
    return float(math.ceil(wanted))


def resolve_window(args: MetricsArgs, now: datetime) -> Window:
    """The effective window: missing end is `now`, missing start 60 minutes before end; bounded (WindowRefused)."""
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    end = args.end or (now if args.start is None or args.start < now else args.start + DEFAULT_WINDOW)
    start = args.start or end - DEFAULT_WINDOW
    if start >= end:
        raise WindowRefused(f"start must be before end (end defaults to the clock, {end.isoformat()}).")
    seconds = (end - start).total_seconds()
    if seconds > MAX_RANGE.total_seconds():
        raise WindowRefused(
            f"the window is {seconds / 86400:.0f} days; query_metrics reads at most {MAX_RANGE.days} days: "
            "narrow start/end to the incident."
        )
    step = args.step if args.step is not None else default_step(seconds)
    window = Window(start, end, float(step), args.instant)
    if window.points > MAX_POINTS:
        smallest = math.ceil(seconds / (MAX_POINTS - 1))
        raise WindowRefused(
            f"step {step:g} s gives {window.points} points per series over this window; at most {MAX_POINTS} "
            f"(Prometheus' cap): use step >= {smallest} s or omit it."
        )
    return window
