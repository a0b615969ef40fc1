"""Canonical records of query_metrics calls over the demo incident's metrics (demo/data/metrics), for the grounding
corpus: the real tool and the real spec's projection, with the demo's pinned clock. Imported by make_records.py;
`records()` returns the records as JSON lines, and `inline()` the records of series no embedded query can produce
(a rate and a byte series, as Prometheus would return them), given inline by the cases.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from core.contracts.evidence import CanonicalRecord, RawResult
from core.settings import DEMO_CLOCK, DEMO_DATA
from core.tools.metrics.args import MetricsArgs
from core.tools.metrics.embedded import EmbeddedMetrics
from core.tools.metrics.result import series_item
from core.tools.metrics.series import Series
from core.tools.metrics.tool import MetricsTool
from core.tools.metrics.units import SeriesUnit
from testkit.metrics import metrics_record

RUN = "eval-demo"
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("m_err", {"query": 'http_server_requests_error_ratio{service="checkout-api"}'}),
    ("m_err_all", {"query": "http_server_requests_error_ratio"}),
    ("m_pool", {"query": 'hikaricp_pool_usage_ratio{service="order-service"}'}),
    ("m_active", {"query": 'hikaricp_connections_active{service="order-service"}'}),
    ("m_pending", {"query": 'hikaricp_connections_pending{service="order-service"}'}),
    ("m_p99", {"query": 'http_server_requests_seconds{service="order-service",quantile="0.99"}'}),
    ("m_cpu", {"query": "instance:node_cpu_utilisation:ratio"}),
    ("m_threads", {"query": "mysql_global_status_threads_running"}),
    ("m_502_total", {"query": 'http_server_requests_total{service="checkout-api",status="502"}'}),
    ("m_none", {"query": 'http_server_requests_error_ratio{service="notification-service"}'}),
    ("m_err_late", {"query": 'http_server_requests_error_ratio{service="checkout-api"}',
                    "start": "2026-11-29T22:50:00Z", "end": "2026-11-29T23:10:00Z", "step": 60}),
]


def record(call_id: str, arguments: dict[str, Any], raw: RawResult, run_id: str = RUN) -> CanonicalRecord:
    """The canonical record the boundary keeps for a query_metrics call with this raw result."""
    return metrics_record(call_id, arguments, raw, run_id)


async def _records() -> list[CanonicalRecord]:
    tool = MetricsTool(EmbeddedMetrics(DEMO_DATA / "metrics"), lambda: DEMO_CLOCK)
    out = []
    for call_id, arguments in CALLS:
        raw = await tool.run(MetricsArgs.model_validate(arguments))
        out.append(record(call_id, arguments, raw))
    return out


def records() -> list[str]:
    """The metrics records as JSON lines (records.jsonl's format)."""
    return [r.model_dump_json(exclude={"raw_result"}) for r in asyncio.run(_records())]


def _synthetic(call_id: str, query: str, name: str, labels: dict[str, str], unit: SeriesUnit,
               values: list[float]) -> dict[str, Any]:
    start = datetime(2026, 11, 29, 22, 30, tzinfo=UTC).timestamp()
    series = Series(name, labels)
    for i, value in enumerate(values):
        series.add(start + 300 * i, value)
    raw = RawResult(items=[series_item(series, unit)], total_count=1,
                    effective_arguments={"query": query, "start": "2026-11-29T22:30:00Z",
                                         "end": "2026-11-29T23:30:00Z", "step": 300, "instant": False})
    return record(call_id, {"query": query}, raw, run_id="eval").model_dump(mode="json", exclude={"raw_result"})


def inline() -> dict[str, dict[str, Any]]:
    """Records of a per-second rate, a raw-counter view of the same requests and a byte series (as Prometheus
    would answer `sum(rate(...))`, `sum(...)` and a memory gauge), every 5 minutes from 22:30 to 23:30."""
    rate = [8.2, 8.4, 8.1, 8.3, 8.0, 8.2, 21.5, 42.0, 40.8, 39.9, 41.2, 40.1, 38.7]
    memory = [1.2e9, 1.21e9, 1.22e9, 1.2e9, 1.25e9, 1.3e9, 1.45e9, 1.61e9, 1.7e9, 1.75e9, 1.8e9, 1.78e9, 1.79e9]
    totals = [12000 + 2460 * i for i in range(13)]
    return {
        "x_rate": _synthetic("x_rate", 'sum(rate(http_server_requests_total{service="checkout-api",status=~"5.."}[5m]))',
                             "", {}, SeriesUnit("", "rate"), rate),
        "x_mem": _synthetic("x_mem", 'container_memory_working_set_bytes{pod="order-service-7d9fb-65693"}',
                            "container_memory_working_set_bytes", {"pod": "order-service-7d9fb-65693"},
                            SeriesUnit("bytes", "gauge"), memory),
        "x_total": _synthetic("x_total", 'sum(http_server_requests_total{service="checkout-api"})', "",
                              {}, SeriesUnit("", "counter"), [float(t) for t in totals]),
    }
