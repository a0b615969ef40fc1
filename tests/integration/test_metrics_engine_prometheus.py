"""The embedded backend's PromQL subset (core/tools/metrics/engine.py) answers what a real Prometheus answers over the
same files: the demo incident's metrics, backfilled into Debian's Prometheus 2.x (tests/fixtures/prometheus.py),
queried through both backends with the same arguments; the metrics first look's ranking query among them."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest

from core.settings import DEMO_CLOCK, DEMO_DATA
from core.tools.metrics.args import MetricsArgs
from core.tools.metrics.embedded import EmbeddedMetrics
from core.tools.metrics.first_look import moved_most_query
from core.tools.metrics.prometheus import PrometheusMetrics
from core.tools.metrics.tool import MetricsTool
from tests.fixtures.prometheus import PrometheusServer

QUERIES = [
    'rate(http_server_requests_total{service="checkout-api"}[5m])',
    'sum by (status) (increase(http_server_requests_total{service="order-service"}[10m]))',
    'delta(hikaricp_connections_pending{service="order-service"}[10m])',
    'max_over_time(hikaricp_pool_usage_ratio[15m]) > 0.5',
    'avg_over_time(hikaricp_connections_active{service="order-service"}[30m:1m] offset 30m)',
    'hikaricp_connections_active / hikaricp_connections_max',
    'hikaricp_connections_active / on(service) hikaricp_connections_max',
    'topk(3, http_server_requests_seconds{quantile="0.99"})',
    'bottomk(1, max_over_time(hikaricp_pool_usage_ratio[10m]))',
    'count_over_time(up{job="order-service"}[10m])',
    'abs(ln(hikaricp_pool_usage_ratio offset 40m)) * -1 + 2',
    'clamp_max(mysql_global_status_threads_connected, 100) >= bool 90',
    'up{job="order-service"} or up{job="checkout-api"} unless up == 0',
    'sum without (quantile) (http_server_requests_seconds{service="checkout-api"})',
    'min(sum_over_time(hikaricp_connections_timeout_total[5m])) - max(up)',
    'label_replace(up{job="payment-service"}, "host", "$1", "instance", "([^:]+).*")',
]


def _tools(url: str) -> tuple[MetricsTool, MetricsTool]:
    return (MetricsTool(PrometheusMetrics(url), lambda: DEMO_CLOCK),
            MetricsTool(EmbeddedMetrics(DEMO_DATA / "metrics"), lambda: DEMO_CLOCK))


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(float(a), float(b), rel_tol=1e-4, abs_tol=1e-9)


def _by_labels(items: list[dict[str, Any]]) -> dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, Any]]:
    return {(i["metric"], tuple(sorted(i["labels"].items()))): i for i in items}


def _same(real: list[dict[str, Any]], local: list[dict[str, Any]]) -> None:
    served, embedded = _by_labels(real), _by_labels(local)
    assert served.keys() == embedded.keys()
    for key, item in served.items():
        other = embedded[key]
        assert [p[0] for p in item["points"]] == [p[0] for p in other["points"]], key
        assert all(_close(a[1], b[1]) for a, b in zip(item["points"], other["points"], strict=True)), (key, item, other)
        assert (item["unit"], item["kind"]) == (other["unit"], other["kind"]), key


@pytest.mark.parametrize("query", QUERIES)
async def test_the_subset_answers_like_prometheus(prometheus_server: PrometheusServer, query: str) -> None:
    real_tool, local_tool = _tools(prometheus_server.url)
    try:
        for args in (MetricsArgs(query=query, step=60), MetricsArgs(query=query, instant=True)):
            real, local = await real_tool.run(args), await local_tool.run(args)
            assert real.items, query
            assert real.total_count == local.total_count
            _same(real.items, local.items)
    finally:
        await real_tool.aclose()


@pytest.mark.parametrize(("service", "minutes"), [("order-service", 30), ("checkout-api", 60), ("payment-service", 45)])
async def test_the_first_look_ranking_is_the_same_on_both_backends(prometheus_server: PrometheusServer, service: str,
                                                                    minutes: int) -> None:
    real_tool, local_tool = _tools(prometheus_server.url)
    args = MetricsArgs(query=moved_most_query(service, minutes * 60), start=DEMO_CLOCK - timedelta(minutes=minutes),
                       end=DEMO_CLOCK, instant=True)
    try:
        real, local = await real_tool.run(args), await local_tool.run(args)
    finally:
        await real_tool.aclose()
    assert 0 < len(real.items) <= 10
    assert all(i["labels"]["service"] == service and i["labels"]["metric"] for i in real.items)
    _same(real.items, local.items)
