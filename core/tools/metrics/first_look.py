"""query_metrics' first look (core/steps/first_look.py, through the toolset's `first_look` hook): the series of a
named service that moved most in the window against the same length of time just before it.

One instant query per service, evaluated at the window's end, the same PromQL on Prometheus and on the embedded
folder (core/tools/metrics/engine.py evaluates it):

- a gauge's level is its mean over the window (`avg_over_time` of a subquery), a counter's (`_total`, `_count`,
  `_sum`) its rate over the window; histogram buckets and `_created` are left out;
- the value shown per series is the window's level divided by the baseline's (the window just before, same
  length), labelled change="ratio to before": 3 is three times the level before, 0.25 a quarter of it, 0 fell to
  zero; a series whose baseline was zero shows its window level instead, labelled change="from zero, window
  level" (its ratio would be infinite); unchanged and 0/0 series are left out;
- the TOP_SERIES series with the largest |ln(ratio)| are kept (doubling and halving rank alike, from or to zero
  first). `label_replace` keeps each series' metric name in a `metric` label, because PromQL functions drop
  `__name__` and two metrics of one service would otherwise collide (Prometheus refuses such a vector).

No service named, no call: the only bounded choice would read every series of the backend (our own bound refuses a
selector without a restricting matcher, and a production Prometheus would spend its sample budget on it), and a
list of what moved most across everything is mostly unrelated churn (batch jobs, autoscaling); the engineer starts
from the service the alert or the question names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from core.tools.contract import PlannedCall
from core.tools.metrics.args import NICE_STEPS_S
from core.tools.metrics.words import CHANGE_LABEL, FROM_ZERO, METRIC_LABEL, RATIO_CHANGE

TOOL = "query_metrics"
TOP_SERIES = 10
SUBQUERY_POINTS = 60
"""Points per series each level is the mean (or rate) of: enough for a mean, few for the backend."""
SERVICE_LABEL = "service"
COUNTER_SUFFIXES = "total|count|sum"
LEFT_OUT_SUFFIXES = "total|count|sum|bucket|created"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def subquery_step(seconds: int) -> int:
    """The smallest nice step giving at most SUBQUERY_POINTS points over the window."""
    wanted = seconds / SUBQUERY_POINTS
    return next((step for step in NICE_STEPS_S if step >= wanted), NICE_STEPS_S[-1])


def moved_most_query(service: str, seconds: int) -> str:
    """The PromQL of the ranking for one service and a window of `seconds` ending at the evaluation time."""
    step = subquery_step(seconds)
    service_matcher = f"{SERVICE_LABEL}={_quoted(service)}"
    gauges = f'{{{service_matcher},__name__!~".+_({LEFT_OUT_SUFFIXES})"}}'
    counters = f'{{{service_matcher},__name__=~".+_({COUNTER_SUFFIXES})"}}'

    def named(selector: str) -> str:
        return f'label_replace({selector}, "{METRIC_LABEL}", "$1", "__name__", "(.+)")'

    def level(offset: str) -> str:
        window = f"[{seconds}s:{step}s]{offset}"
        return f"(avg_over_time({named(gauges)}{window}) or rate({named(counters)}{window}))"

    window, before = level(""), level(f" offset {seconds}s")
    ratio = f"({window} / {before})"
    ranked = f"topk({TOP_SERIES}, abs(ln({ratio})) > 0)"
    changed = f'label_replace(({ratio} and {ranked}) < +Inf, "{CHANGE_LABEL}", "{RATIO_CHANGE}", "", "")'
    from_zero = f'label_replace(({window} and {ranked}) unless ({before} != 0), "{CHANGE_LABEL}", "{FROM_ZERO}", "", "")'
    return f"{changed} or {from_zero}"


_RANKING = re.compile(r'^label_replace\(\(\(\(avg_over_time\(label_replace\(\{service="(?:[^"\\]|\\.)*",__name__!~.*'
                      r'\[(\d+)s:\d+s\] offset \1s.* and topk\(\d+, abs\(ln\(', re.DOTALL)


def ranking_window(arguments: Mapping[str, Any]) -> int | None:
    """The window's seconds when a call's query is the first look's ranking (moved_most_query), else None."""
    match = _RANKING.match(str(arguments.get("query") or ""))
    return int(match.group(1)) if match else None


def metrics_first_look(service: str | None, start: datetime, end: datetime) -> tuple[PlannedCall, ...]:
    """The ranking call for a named service over [start, end] (none without a service or a window)."""
    seconds = int((end - start).total_seconds())
    if not service or seconds < 60:
        return ()
    return (PlannedCall(TOOL, {"query": moved_most_query(service, seconds), "start": start.isoformat(),
                               "end": end.isoformat(), "instant": True}),)
