"""Held-out shapes from Prometheus' HTTP API reference (prometheus.io/docs/prometheus/latest/querying/api, "Format
overview"): a successful answer may carry `warnings` ("errors that do not inhibit the request execution": Thanos'
and Mimir's partial responses) and `infos` (info-level annotations such as "metric might not be a counter"), and
values are strings that may be "NaN", "+Inf" or "-Inf". A local server speaks exactly that; the real MetricsTool and
projection read it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from core.evidence.projection import project
from core.settings import DEMO_CLOCK
from core.tools.metrics.args import MetricsArgs
from core.tools.metrics.prometheus import PrometheusMetrics
from core.tools.metrics.spec import MetricsSpec
from core.tools.metrics.tool import MetricsTool
from tests.fixtures.prometheus import free_port

T0 = DEMO_CLOCK.timestamp() - 600
WARNING = "partial response: store 10.0.0.7:10901 unreachable; the answer may miss series"
INFO = 'PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: "jobs" (1:6)'
ANSWER: dict[str, Any] = {
    "status": "success",
    "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "jobs", "service": "a"},
         "values": [[T0, "NaN"], [T0 + 60, "0.5"], [T0 + 120, "+Inf"], [T0 + 180, "-Inf"]]}]},
    "warnings": [WARNING],
    "infos": [INFO],
}


@pytest.fixture
async def prometheus_url(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    body = getattr(request, "param", ANSWER)

    async def answer(_: web.Request) -> web.Response:
        return web.json_response(body)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def test_warnings_and_infos_reach_the_projection_the_model_reads(prometheus_url: str) -> None:
    tool = MetricsTool(PrometheusMetrics(prometheus_url, None, timeout_s=5), lambda: DEMO_CLOCK)
    try:
        raw = await tool.run(MetricsArgs(query="rate(jobs[5m])", step=60))
    finally:
        await tool.aclose()
    projection = project("call_w", MetricsSpec(), raw, None)
    assert projection["evidence_status"] == "EVIDENCE_FOUND"
    assert projection["warnings"] == [WARNING, INFO]
    json.dumps(projection, allow_nan=False)  # NaN and ±Inf never reach the JSON as bare NaN/Infinity
    [series] = projection["series"]
    assert series["max"]["v"] == 0.5


@pytest.mark.parametrize("prometheus_url", [{k: v for k, v in ANSWER.items() if k not in ("warnings", "infos")}],
                         indirect=True)
async def test_an_answer_without_warnings_has_none(prometheus_url: str) -> None:
    tool = MetricsTool(PrometheusMetrics(prometheus_url, None, timeout_s=5), lambda: DEMO_CLOCK)
    try:
        raw = await tool.run(MetricsArgs(query="rate(jobs[5m])", step=60))
    finally:
        await tool.aclose()
    assert not project("call_w", MetricsSpec(), raw, None).get("warnings")
