"""One result series (labels and points in compact arrays), its summary, the ranking by peak and downsampling.

Points are kept as two `array('d')` (unix seconds, values): 16 bytes a point instead of ~100 for tuples of floats,
so a response at the byte bound stays a few tens of MB in memory. NaN values (Prometheus writes "NaN") are kept in
the points but never in the summary; a series without a finite value has no summary and ranks last.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from heapq import nlargest


@dataclass
class Series:
    """One series of a result: metric name, labels (without `__name__`) and points in time order."""

    name: str
    labels: dict[str, str]
    times: array[float] = field(default_factory=lambda: array("d"))
    values: array[float] = field(default_factory=lambda: array("d"))

    def add(self, t: float, v: float) -> None:
        self.times.append(t)
        self.values.append(v)

    def __len__(self) -> int:
        return len(self.times)


@dataclass(frozen=True)
class Point:
    """A point of a series."""

    t: float
    v: float


@dataclass(frozen=True)
class Summary:
    """First, last, min and max points with their times and the mean, over the finite values of a series."""

    first: Point
    last: Point
    low: Point
    high: Point
    mean: float
    points: int


def summarize(series: Series) -> Summary | None:
    """The summary of a series' finite values, or None when it has none."""
    times, values = series.times, series.values
    if len(values) == 1:  # an instant query's series: its one point is all of the summary
        only = values[0]
        if not math.isfinite(only):
            return None
        at = Point(times[0], only)
        return Summary(first=at, last=at, low=at, high=at, mean=math.fsum(values), points=1)
    finite = [i for i, v in enumerate(values) if math.isfinite(v)] if _has_nonfinite(values) else None
    if finite is not None:
        if not finite:
            return None
        times = array("d", (times[i] for i in finite))
        values = array("d", (values[i] for i in finite))
    if not values:
        return None
    high_v, low_v = max(values), min(values)
    hi, lo = values.index(high_v), values.index(low_v)
    return Summary(
        first=Point(times[0], values[0]), last=Point(times[-1], values[-1]),
        low=Point(times[lo], low_v), high=Point(times[hi], high_v),
        mean=math.fsum(values) / len(values), points=len(values),
    )


def _has_nonfinite(values: array[float]) -> bool:
    """True when some value is NaN or infinite (a finite sum proves there is none; an overflowing one checks each)."""
    return not math.isfinite(sum(values))


def peak(series: Series) -> float:
    """The ranking key: the largest finite value (-inf when there is none)."""
    values = series.values
    best = max(values, default=-math.inf)
    if math.isfinite(best):
        return best
    finite = [v for v in values if math.isfinite(v)]
    return max(finite, default=-math.inf)


def top_by_peak(series: Iterable[Series], n: int) -> list[Series]:
    """The n series with the highest peaks, highest first (ties keep their input order)."""
    indexed = list(enumerate(series))
    ranked = nlargest(n, indexed, key=lambda pair: (peak(pair[1]), -pair[0]))
    return [s for _, s in ranked]


def downsample(series: Series, buckets: int, keep: Sequence[float] = ()) -> list[Point]:
    """At most about `buckets` points showing the series' shape: the first and last, in each bucket of time the
    point farthest from the bucket's mean (so peaks and dips stay), and the points at the times in `keep`."""
    times, values = series.times, series.values
    n = len(times)
    if n == 0:
        return []
    if n <= max(2, buckets):
        return [Point(times[i], values[i]) for i in range(n)]
    chosen = {0, n - 1}
    wanted = set(keep)
    if wanted:
        chosen.update(i for i in range(n) if times[i] in wanted)
    inner = max(1, buckets - 2)
    width = (n - 2) / inner
    for b in range(inner):
        lo, hi = 1 + int(b * width), 1 + int((b + 1) * width)
        if hi <= lo:
            continue
        chunk = [values[i] for i in range(lo, hi) if math.isfinite(values[i])]
        if not chunk:
            continue
        mean = math.fsum(chunk) / len(chunk)
        best = max(range(lo, hi), key=lambda i: abs(values[i] - mean) if math.isfinite(values[i]) else -1.0)
        chosen.add(best)
    return [Point(times[i], values[i]) for i in sorted(chosen)]


def iso(t: float) -> str:
    """A point time as ISO-8601 UTC with a Z (milliseconds only when it has them)."""
    moment = datetime.fromtimestamp(t, UTC)
    spec = "milliseconds" if moment.microsecond else "seconds"
    return moment.isoformat(timespec=spec).replace("+00:00", "Z")
