"""The embedded backend's PromQL evaluation: a subset of PromQL over the folder's series, evaluated as Prometheus 2.x
evaluates it (so a query answers the same here and in a Prometheus backfilled from the same files).

The subset: selectors with `offset`, range selectors, subqueries (`[range:step] offset`), number literals, unary minus,
the functions of FUNCTIONS (engine_functions.py), the aggregations sum / avg / min / max / count / topk / bottomk with
`by` / `without`, arithmetic (+ - * /), comparisons (filtering or `bool`) and and / or / unless, vector to vector
one-to-one (`on` / `ignoring`). Anything else (`@`, group_left, other functions) is Unsupported: the backend answers
ERROR naming DIAG_PROMETHEUS_URL. Like Prometheus, a result that would hold two series with the same labels (a
function dropped the metric names of two metrics) is an error, and evaluation stops past MAX_SAMPLES samples read.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from core.errors import ToolFailure
from core.tools.metrics.engine_functions import (
    INSTANT_FUNCTIONS,
    label_replace,
    range_value,
    total,
)
from core.tools.metrics.promql import NAME
from core.tools.metrics.series import Series

LOOKBACK_S = 300.0
"""Prometheus' default `--query.lookback-delta`: a selector sees the latest sample at most this old."""
MAX_SAMPLES = 5_000_000
"""Samples one query may read, each series a selector looks at counting one at least (so a window without data is
no free loop either): about 1.5 s of CPU. Prometheus' `--query.max-samples` is 50 M; the folder is small."""
DEFAULT_SUBQUERY_STEP_S = 60.0

Labels = tuple[tuple[str, str], ...]
"""Sorted (name, value) pairs, `__name__` among them while the metric name is kept."""
Vector = dict[Labels, float]
Matrix = dict[Labels, list[tuple[float, float]]]


class Unsupported(ValueError):
    """The expression uses PromQL the embedded backend does not evaluate (the message names it)."""


def _labels(name: str, labels: dict[str, str]) -> Labels:
    return tuple(sorted({**labels, NAME: name}.items()))


def drop_name(labels: Labels) -> Labels:
    return tuple(p for p in labels if p[0] != NAME)


class Budget:
    """One evaluation's state: samples read so far (past MAX_SAMPLES the query fails like Prometheus'
    --query.max-samples) and each range-function call's value at the last time asked. A compiled query is kept with
    its snapshot and may be evaluated in several threads at once, so what depends on the evaluation lives here."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = MAX_SAMPLES if limit is None else limit
        self.used = 0
        self.last: dict[Node, tuple[float, Vector | float]] = {}

    def spend(self, samples: int) -> None:
        self.used += samples
        if self.used > self.limit:
            raise ToolFailure("METRICS_TOO_MANY_SAMPLES",
                              f"The query reads more than {self.limit:,} samples in the embedded backend; narrow the "
                              "window, the ranges or the selectors.")


@dataclass(frozen=True, eq=False)
class Node(ABC):
    """A compiled expression node: evaluated at one time (seconds) into a vector, a matrix or a scalar."""

    @abstractmethod
    def instant(self, t: float, budget: Budget) -> Vector | float:
        """The expression's value at time `t`."""

    def steps(self, times: Sequence[float], budget: Budget) -> Matrix:
        """The vector at each of these (increasing) times as one matrix: each series' points in time order, the
        series in order of first appearance. Nodes that can override this to work per series instead of per step."""
        out: Matrix = {}
        for at in times:
            value = self.instant(at, budget)
            if not isinstance(value, dict):
                raise ToolFailure("METRICS_BAD_QUERY", "a subquery needs an instant vector, not a scalar.")
            for labels, v in value.items():
                out.setdefault(labels, []).append((at, v))
        return out


@dataclass(frozen=True, eq=False)
class Number(Node):
    value: float

    def instant(self, t: float, budget: Budget) -> Vector | float:
        return self.value


@dataclass(frozen=True, eq=False)
class Select(Node):
    """A vector selector: each series' latest sample at or before t - offset, within the lookback."""

    series: tuple[Series, ...]
    offset_s: float

    @cached_property
    def labels(self) -> tuple[Labels, ...]:
        """Each series' label set, built once (not at each step; the compiled query is kept with its snapshot)."""
        return tuple(_labels(s.name, s.labels) for s in self.series)

    def instant(self, t: float, budget: Budget) -> Vector | float:
        at_t = t - self.offset_s
        out: Vector = {}
        for labels, s in zip(self.labels, self.series, strict=True):
            i = bisect_right(s.times, at_t) - 1
            if i >= 0 and at_t - s.times[i] <= LOOKBACK_S:
                out[labels] = s.values[i]
        budget.spend(max(1, len(self.series)))  # the work, found or not: an empty window is no free loop
        return out

    def steps(self, times: Sequence[float], budget: Budget) -> Matrix:
        """Series by series: the same points as instant() at each time, without a vector per step."""
        budget.spend(max(1, len(self.series)) * len(times))
        rows: list[tuple[Labels, list[tuple[float, float]]]] = []
        offset = self.offset_s
        for labels, s in zip(self.labels, self.series, strict=True):
            st = s.times
            if not st:
                continue
            # only the times that can see a sample (from the first sample to the last one's lookback, a second
            # wider for rounding; the test in _points is the exact one)
            first = bisect_left(times, st[0] + offset - 1.0)
            last = bisect_right(times, st[-1] + offset + LOOKBACK_S + 1.0, first)
            points = _points(times, first, last, offset, st, s.values)
            if points:
                rows.append((labels, points))
        rows.sort(key=lambda row: row[1][0][0])  # stable: by first appearance, then in series order
        return dict(rows)


def _points(times: Sequence[float], first: int, last: int, offset: float, st: Sequence[float],
            sv: Sequence[float]) -> list[tuple[float, float]]:
    """One series' points at times[first:last]: its latest sample at or before each time - offset, within the
    lookback. Each search starts where the previous one ended and first looks only as far ahead as the previous
    one moved (the steps of a subquery are evenly spaced, and so are most series' samples), then, when the sample
    is beyond that, at the rest: every comparison reads a sample out of the series' array (a new float), so fewer
    comparisons are most of the cost."""
    points = []
    lo, stride, count = 0, 1, len(st)
    for i in range(first, last):
        at_t = times[i] - offset
        hi = lo + stride + 1
        if hi < count:
            found = bisect_right(st, at_t, lo, hi)
            if found == hi:  # every sample up to hi is at or before at_t: the rest decides
                found = bisect_right(st, at_t, hi)
        else:
            found = bisect_right(st, at_t, lo)
        stride, lo = found - lo, found
        if lo and at_t - st[lo - 1] <= LOOKBACK_S:
            points.append((times[i], sv[lo - 1]))
    return points


@dataclass(frozen=True, eq=False)
class RangeNode(ABC):
    """A range selector or a subquery: each series' points in [t - offset - range, t - offset]."""

    range_s: float
    offset_s: float

    @abstractmethod
    def matrix(self, t: float, budget: Budget) -> Matrix:
        """Each series' points in the range ending at `t`."""


@dataclass(frozen=True, eq=False)
class SelectRange(RangeNode):
    series: tuple[Series, ...]

    def matrix(self, t: float, budget: Budget) -> Matrix:
        end = t - self.offset_s
        out: Matrix = {}
        budget.spend(max(1, len(self.series)))
        for s in self.series:
            lo, hi = bisect_left(s.times, end - self.range_s), bisect_right(s.times, end)
            if hi > lo:
                out[_labels(s.name, s.labels)] = list(zip(s.times[lo:hi], s.values[lo:hi], strict=True))
                budget.spend(hi - lo)
        return out


@dataclass(frozen=True, eq=False)
class Subquery(RangeNode):
    inner: Node
    step_s: float

    def matrix(self, t: float, budget: Budget) -> Matrix:
        end = t - self.offset_s
        start = end - self.range_s
        step = self.step_s
        first = math.ceil(start / step - 1e-9) * step
        # the times first + k * step up to end (as adding one step at a time would test them): the count from a
        # division, then checked against that test
        bound = end + 1e-9
        count = max(0, int((bound - first) // step) + 1) if bound >= first else 0
        while count and first + (count - 1) * step > bound:
            count -= 1
        while first + count * step <= bound:
            count += 1
        return self.inner.steps([first + k * step for k in range(count)], budget)


@dataclass(frozen=True, eq=False)
class RangeCall(Node):
    """rate(), avg_over_time() ... of a range selector or subquery (the metric name is dropped)."""

    name: str
    arg: RangeNode

    def instant(self, t: float, budget: Budget) -> Vector | float:
        # The value at the last time asked (in the evaluation's budget): the compiler gives one node to every
        # occurrence of the same call, so a query repeating a subexpression (the first look's ranking uses each level
        # four times) evaluates it once per time.
        last = budget.last.get(self)
        if last is not None and last[0] == t:
            return last[1]  # consumers only read vectors
        out: Vector = {}
        for labels, points in self.arg.matrix(t, budget).items():
            value = range_value(self.name, points, t - self.arg.offset_s, self.arg.range_s)
            if value is not None:
                put_unique(out, drop_name(labels), value)
        budget.last[self] = (t, out)
        return out


@dataclass(frozen=True, eq=False)
class Shared(Node):
    """A subexpression the query writes more than once (by its PromQL text), one node for every occurrence: its
    value at the last time asked is kept in the evaluation's budget, as RangeCall keeps its own. The first look's
    ranking uses the window's and the baseline's levels four and three times, their ratio three times and its topk
    twice: without this each occurrence recomputed its vector (19 binary operations a call instead of 10). The
    budget counts the samples read, so a repeated subexpression's are counted once, as a repeated range call's."""

    inner: Node

    def instant(self, t: float, budget: Budget) -> Vector | float:
        last = budget.last.get(self)
        if last is not None and last[0] == t:
            return last[1]  # consumers only read vectors
        value = self.inner.instant(t, budget)
        budget.last[self] = (t, value)
        return value

    def steps(self, times: Sequence[float], budget: Budget) -> Matrix:
        return self.inner.steps(times, budget)


@dataclass(frozen=True, eq=False)
class Call(Node):
    """An instant-vector function (abs, ln, clamp_max ...): the metric name is dropped, like Prometheus does."""

    name: str
    arg: Node
    scalars: tuple[float, ...] = ()

    def instant(self, t: float, budget: Budget) -> Vector | float:
        value = self.arg.instant(t, budget)
        fn = INSTANT_FUNCTIONS[self.name]
        if not isinstance(value, dict):
            return fn(value, *self.scalars)
        out: Vector = {}
        for labels, v in value.items():
            put_unique(out, drop_name(labels), fn(v, *self.scalars))
        return out

    def steps(self, times: Sequence[float], budget: Budget) -> Matrix:
        fn, scalars = INSTANT_FUNCTIONS[self.name], self.scalars
        inner = self.arg.steps(times, budget)
        return _rekeyed({labels: [(at, fn(v, *scalars)) for at, v in points] for labels, points in inner.items()},
                        drop_name)


@dataclass(frozen=True, eq=False)
class LabelReplace(Node):
    arg: Node
    texts: tuple[str, str, str, str]
    renamed: dict[Labels, Labels] = field(default_factory=dict, compare=False, repr=False)
    """Each input label set's result, computed once (not at each step; the compiled query is kept with its
    snapshot, so across calls too: a pure function of the label set, a race between threads computes it twice alike)."""

    def _renamed(self, labels: Labels) -> Labels:
        out = self.renamed.get(labels)
        if out is None:
            out = self.renamed[labels] = label_replace(labels, *self.texts)
        return out

    def instant(self, t: float, budget: Budget) -> Vector | float:
        value = as_vector(self.arg.instant(t, budget), "label_replace")
        out: Vector = {}
        for labels, v in value.items():
            put_unique(out, self._renamed(labels), v)
        return out

    def steps(self, times: Sequence[float], budget: Budget) -> Matrix:
        return _rekeyed(self.arg.steps(times, budget), self._renamed)


@dataclass(frozen=True, eq=False)
class Aggregate(Node):
    op: str
    arg: Node
    grouping: tuple[str, ...] | None
    """The `by` labels; None with `without`."""
    without: tuple[str, ...]
    param: Node | None = None

    def instant(self, t: float, budget: Budget) -> Vector | float:
        value = as_vector(self.arg.instant(t, budget), self.op)
        groups: dict[Labels, list[tuple[Labels, float]]] = {}
        for labels, v in value.items():
            groups.setdefault(self._group(labels), []).append((labels, v))
        if self.op in ("topk", "bottomk"):
            return self._ranked(groups, t, budget)
        out: Vector = {}
        for key, members in groups.items():
            values = [v for _, v in members]
            out[key] = AGGREGATIONS[self.op](values)
        return out

    def _group(self, labels: Labels) -> Labels:
        if self.grouping is not None:
            return tuple(p for p in labels if p[0] in self.grouping)
        dropped = {NAME, *self.without}
        return tuple(p for p in labels if p[0] not in dropped)

    def _ranked(self, groups: dict[Labels, list[tuple[Labels, float]]], t: float, budget: Budget) -> Vector:
        k = self.param.instant(t, budget) if self.param is not None else 0.0
        if isinstance(k, dict) or not math.isfinite(k):
            raise ToolFailure("METRICS_BAD_QUERY", f"{self.op}'s parameter must be a number.")
        sign = -1.0 if self.op == "topk" else 1.0
        out: Vector = {}
        for members in groups.values():
            # NaN ranks last either way, like Prometheus; ties keep the input order.
            ranked = sorted(members, key=lambda m: (math.isnan(m[1]), sign * m[1] if not math.isnan(m[1]) else 0.0))
            for labels, v in ranked[: max(0, int(k))]:
                out[labels] = v
        return out


AGGREGATIONS: Mapping[str, Callable[[list[float]], float]] = MappingProxyType({
    "sum": total, "avg": lambda vs: total(vs) / len(vs), "count": lambda vs: float(len(vs)),
    "min": lambda vs: min((v for v in vs if not math.isnan(v)), default=math.nan),
    "max": lambda vs: max((v for v in vs if not math.isnan(v)), default=math.nan),
})
def as_vector(value: Vector | float, where: str) -> Vector:
    if not isinstance(value, dict):
        raise ToolFailure("METRICS_BAD_QUERY", f"{where} needs an instant vector, not a scalar.")
    return value


def _duplicate() -> ToolFailure:
    return ToolFailure("METRICS_BAD_QUERY", "vector cannot contain metrics with the same labelset (a function "
                       "dropped the metric names: keep them with label_replace(..., \"metric\", \"$1\", "
                       "\"__name__\", \"(.+)\") or aggregate).")


def put_unique(out: Vector, labels: Labels, value: float) -> None:
    if labels in out:
        raise _duplicate()
    out[labels] = value


def _rekeyed(matrix: Matrix, key: Callable[[Labels], Labels]) -> Matrix:
    """The matrix with each series' labels changed, as changing them at each step would give: two series getting
    the same labels at one time is the duplicate-labelset error, at different times they become one series (each
    group merged once: n log n however many series meet)."""
    groups: dict[Labels, list[list[tuple[float, float]]]] = {}
    for labels, points in matrix.items():
        groups.setdefault(key(labels), []).append(points)
    out: Matrix = {}
    for labels, members in groups.items():
        if len(members) == 1:
            out[labels] = members[0]
            continue
        merged = sorted((point for points in members for point in points), key=lambda point: point[0])
        if any(merged[i][0] == merged[i + 1][0] for i in range(len(merged) - 1)):
            raise _duplicate()
        out[labels] = merged
    return out


def evaluate(root: Node, times: Sequence[float]) -> list[Series]:
    """The expression at each time: one series per label set, in order of first appearance."""
    budget = Budget()
    found: dict[Labels, Series] = {}
    for t in times:
        value = root.instant(t, budget)
        if not isinstance(value, dict):
            value = {(): value}
        for labels, v in value.items():
            if labels not in found:
                as_dict = dict(labels)
                found[labels] = Series(as_dict.pop(NAME, ""), as_dict)
            found[labels].add(t, v)
    return list(found.values())
