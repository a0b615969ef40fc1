"""query_metrics' static description (the toolset contract): projection, quantity kinds, words and views."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pydantic import Field

from core.contracts.evidence import EvidenceStatus, ProjectionBase, RawResult
from core.evidence.subjects import short_window, shorten
from core.tools.contract import (
    ArgumentRoles,
    Cleaner,
    EvidenceView,
    Fact,
    FieldKind,
    FieldQuantity,
    Nouns,
    QuantityKinds,
    SeriesLine,
    SeriesView,
    StepHints,
    ToolSpec,
)
from core.tools.metrics.args import MetricsArgs
from core.tools.metrics.first_look import ranking_window
from core.tools.metrics.projection import fit_series
from core.tools.metrics.tool import TOOL_NAME
from core.tools.metrics.words import (
    FROM_ZERO,
    change_of,
    change_words,
    clock_words,
    series_sentence,
    series_title,
    subject_words,
    value_words,
)

SERIES_BUDGET_BYTES = 7000
"""What the series may take of the default 8 KiB projection (the envelope and the window take the rest)."""
DEFAULT_ITEM_CHARS = 500
MAX_FACT_SERIES = 3
MAX_WARNINGS = 10  # Prometheus' warnings and infos shown in the projection (5 of each are kept)
WARNING_CHARS = 300
_VALUE = FieldQuantity(FieldKind.GUESS, unit_field="unit")
_TIME = FieldQuantity(FieldKind.TIMESTAMP)
QUANTITIES = QuantityKinds(MappingProxyType({
    **{f"{key}.v": _VALUE for key in ("first", "last", "min", "max")},
    **{f"{key}.t": _TIME for key in ("first", "last", "min", "max")},
    "mean": _VALUE,
    "points.*.1": _VALUE,
    "points.*.0": _TIME,
    "points_total": FieldQuantity(FieldKind.COUNT),
    "unit": FieldQuantity(FieldKind.IGNORED),
    "kind": FieldQuantity(FieldKind.IGNORED),
    "metric": FieldQuantity(FieldKind.IDENTIFIER),
}), default=FieldQuantity(FieldKind.GUESS))
"""Series values are typed by their item's `unit` (and `kind`: a raw counter grounds no rate); times are times."""


class MetricsProjection(ProjectionBase):
    """Projection of a query_metrics call: the series, highest peak first."""

    tool_name: str = TOOL_NAME
    window_start: str | None = Field(default=None, description="Effective start of the window (ISO-8601).")
    window_end: str | None = Field(default=None, description="Effective end of the window (ISO-8601).")
    step_s: float | None = Field(default=None, description="Seconds between points (absent for an instant query).")
    warnings: list[str] = Field(default_factory=list, description=(
        "Prometheus' warnings and infos about this answer (a partial response may miss series); absent when none."))
    series: list[dict[str, Any]] = Field(default_factory=list, description=(
        "Per series: metric, labels, unit, kind (gauge, counter, rate per second, increase, count), first/last/min/"
        "max as {t, v}, mean, points_total and downsampled points [[t, v], ...]."))


def _args(raw: RawResult | None) -> Mapping[str, Any]:
    return raw.effective_arguments if raw is not None else {}


class MetricsSpec(ToolSpec):
    """query_metrics: PromQL over Prometheus or the embedded OpenMetrics folder."""

    name = TOOL_NAME
    args_model = MetricsArgs
    summary = ("Query metrics with PromQL over a time window: per series its labels, unit, first/last/min/max/mean "
               "with times and downsampled points, highest peak first.")
    projection_model = MetricsProjection
    items_field = "series"
    nouns = Nouns(kind="Metrics", what="metrics query", found="series", label="series")
    quantities = QUANTITIES
    arguments = ArgumentRoles(window=("start", "end"), projection_window=("window_start", "window_end"),
                              query=("query",))
    link_setting = "diag_metrics_link_template"

    def envelope(self, raw: RawResult | None, clean: Cleaner) -> dict[str, Any]:
        args = _args(raw)
        out: dict[str, Any] = {"window_start": args.get("start"), "window_end": args.get("end")}
        if raw is not None and not args.get("instant"):
            out["step_s"] = args.get("step")
        found = raw.notes.get("backend_warnings") if raw is not None else None
        if isinstance(found, list) and found:
            out["warnings"] = [clean.text(w, WARNING_CHARS) for w in found[:MAX_WARNINGS]]
        return out

    def project_items(self, raw: RawResult, limit: int, clean: Cleaner) -> list[Any]:
        budget = SERIES_BUDGET_BYTES * max(1, clean.item_chars) // DEFAULT_ITEM_CHARS
        items = [i for i in raw.items[:limit] if isinstance(i, dict)]
        shown, cut = fit_series(items, 0, max(512, budget), clean.text)
        if cut or len(items) < len(raw.items):
            clean.cut()
        return shown

    # words
    def subject(self, arguments: Mapping[str, Any], projection: Mapping[str, Any] | None) -> str:
        """'hikaricp_pool_usage_ratio{service="order-service"}, 22:30-23:30 UTC' (the effective window once known)."""
        text = shorten(arguments.get("query") or "", 100) + (" at its end" if arguments.get("instant") else "")
        shown = projection or {}
        window = short_window(shown.get("window_start") or arguments.get("start"),
                              shown.get("window_end") or arguments.get("end"))
        return f"{text}, {window}" if window else text

    def label_subject(self, arguments: Mapping[str, Any], projection: Mapping[str, Any]) -> str:
        return shorten(arguments.get("query") or "", 160)

    def fact(self, status: EvidenceStatus, projection: Mapping[str, Any], arguments: Mapping[str, Any],
             words: frozenset[str]) -> Fact:
        query = shorten(arguments.get("query") or "", 100)
        if status is EvidenceStatus.NO_EVIDENCE:
            return Fact(f"The metrics query {query} returned no series in the window — this does not show all is well.")
        series = [s for s in self.shown_items(projection) if isinstance(s, dict)]
        seconds = ranking_window(arguments)
        if seconds is not None and series:
            return _ranking_fact(series, seconds)
        ranked = sorted(series, key=lambda s: _mentions(s, words), reverse=True)[:MAX_FACT_SERIES]
        count = int(projection.get("count") or len(series))
        head = series_sentence(ranked[0]) if ranked else f"the metrics query {query} returned {count} series"
        text = head[0].upper() + head[1:]
        if count > 1:
            text += f" ({count} series in all)"
        return Fact(text[:400], lines=tuple(series_sentence(s)[:200] for s in ranked[1:]))

    def error_subject(self, arguments: Mapping[str, Any]) -> str:
        return f"The metrics query {shorten(arguments.get('query') or '', 100)}"

    def next_steps(self, status: EvidenceStatus, projection: Mapping[str, Any], arguments: Mapping[str, Any],
                   reason: str) -> StepHints:
        error = projection.get("error") if isinstance(projection.get("error"), Mapping) else {}
        if status is EvidenceStatus.ERROR and (error or {}).get("code") == "METRICS_NEEDS_PROMETHEUS":
            return StepHints(("Point DIAG_PROMETHEUS_URL at Prometheus to evaluate that PromQL, or ask within the "
                              "embedded subset (selectors, rate, *_over_time, sum/max by, arithmetic).",))
        return super().next_steps(status, projection, arguments, reason)

    # views
    def evidence_view(self, projection: Mapping[str, Any]) -> EvidenceView | None:
        series = [s for s in self.shown_items(projection) if isinstance(s, dict)]
        if not series:
            return None
        lines = tuple(_line(s) for s in series)
        window = f"{clock_words(projection.get('window_start'))}–{clock_words(projection.get('window_end'))} UTC"
        step = projection.get("step_s")
        if isinstance(step, int | float):
            window += f", every {value_words(step, 'seconds', 'gauge')}"
        more = max(0, int(projection.get("count") or 0) - len(series))
        return SeriesView(lines, window, more)

    def telling_item(self, projection: Mapping[str, Any], words: frozenset[str], limit: int) -> str:
        series = [s for s in self.shown_items(projection) if isinstance(s, dict)]
        if not series:
            return ""
        best = max(series, key=lambda s: _mentions(s, words))
        text = series_sentence(best)
        return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"

    def link_values(self, arguments: Mapping[str, Any], projection: Mapping[str, Any]) -> Mapping[str, Any] | None:
        series = [s for s in self.shown_items(projection) if isinstance(s, dict)]
        labels = series[0].get("labels") if series and isinstance(series[0].get("labels"), Mapping) else {}
        return {"service": (labels or {}).get("service", ""), "query": arguments.get("query", ""),
                "start": arguments.get("start", ""), "end": arguments.get("end", "")}


def _moved(item: Mapping[str, Any]) -> float:
    """How far a ranking series moved: |ln(ratio)|, infinite from or to zero (-1 without a value)."""
    mark = item.get("last") if isinstance(item.get("last"), Mapping) else {}
    value = (mark or {}).get("v")
    if change_of(item) == FROM_ZERO or value == 0:
        return math.inf
    if not isinstance(value, int | float) or value < 0:
        return -1.0
    return abs(math.log(value))


def _ranking_fact(series: list[dict[str, Any]], seconds: int) -> Fact:
    """The first look's ranking in words: what moved most, against the same length of time before the window."""
    span = f"{seconds // 60} minutes" if seconds < 7200 else f"{seconds / 3600:g} hours"
    before = f"in the {span} before"
    ordered = [change_words(s, before) for s in sorted(series, key=_moved, reverse=True)[:MAX_FACT_SERIES]]
    head = f"Of the series that moved most against the {span} before the window, {ordered[0]}"
    more = f" ({len(series)} series listed)" if len(series) > 1 else ""
    return Fact((head + more)[:400], lines=tuple(line[:200] for line in ordered[1:]))


def _mentions(series: Mapping[str, Any], words: frozenset[str]) -> int:
    labels = series.get("labels") if isinstance(series.get("labels"), Mapping) else {}
    text = " ".join([str(series.get("metric", "")), *(str(v) for v in (labels or {}).values())]).lower()
    return sum(1 for w in words if len(w) > 2 and w.lower() in text)


def _line(item: Mapping[str, Any]) -> SeriesLine:
    unit, kind = str(item.get("unit") or ""), str(item.get("kind") or "")
    values = tuple(p[1] if isinstance(p[1], int | float) else None for p in item.get("points") or []
                   if isinstance(p, list) and len(p) == 2)

    def at(key: str) -> str:
        mark = item.get(key) if isinstance(item.get(key), Mapping) else {}
        return f"{value_words((mark or {}).get('v'), unit, kind)} at {clock_words((mark or {}).get('t'))}"

    labels = item.get("labels") if isinstance(item.get("labels"), Mapping) else {}
    title = series_title(item) if subject_words(labels or {}) else str(item.get("metric") or "series")
    if (change := change_of(item)) is not None:
        title = f"{title} ({change})"
    return SeriesLine(title=title, values=values, low=at("min"), high=at("max"), last=at("last"),
                      marks=(f"first {at('first')}", f"peak {at('max')}"))
