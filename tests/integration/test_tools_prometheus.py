"""query_metrics against a real Prometheus (Debian's, backfilled from the demo's OpenMetrics files with promtool), and
against small local servers speaking Prometheus' HTTP API for what a healthy server does not do (slow, 503, 422,
garbage, 100,000 series, refused credentials). Every bad input is one clear ERROR; the next call works."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from aiohttp import web
from pydantic import SecretStr

from core.errors import ToolFailure
from core.settings import DEMO_CLOCK, DEMO_DATA
from core.tools.metrics.args import MetricsArgs
from core.tools.metrics.embedded import EmbeddedMetrics
from core.tools.metrics.prometheus import PrometheusMetrics
from core.tools.metrics.tool import MetricsTool
from tests.fixtures.prometheus import PrometheusServer, free_port

TOKEN = "pr0m-t0ken-s3cret"
PASSWORD = "hunter2pw"


def _tool(url: str, token: str | None = None, timeout_s: float = 5.0) -> MetricsTool:
    backend = PrometheusMetrics(url, SecretStr(token) if token else None, timeout_s=timeout_s)
    return MetricsTool(backend, lambda: DEMO_CLOCK)


async def _fails(tool: MetricsTool, args: MetricsArgs) -> ToolFailure:
    with pytest.raises(ToolFailure) as failed:
        await tool.run(args)
    return failed.value


# ---- the real server ---------------------------------------------------------------------------------------------


async def test_range_query_matches_the_embedded_backend(prometheus_server: PrometheusServer) -> None:
    query = 'hikaricp_connections_active{service="order-service"}'
    tool = _tool(prometheus_server.url)
    embedded = MetricsTool(EmbeddedMetrics(DEMO_DATA / "metrics"), lambda: DEMO_CLOCK)
    try:
        real = await tool.run(MetricsArgs(query=query, step=60))
        local = await embedded.run(MetricsArgs(query=query, step=60))
    finally:
        await tool.aclose()
    [served], [embedded_item] = real.items, local.items
    assert served["labels"] == {"service": "order-service", "pool": "HikariPool-1"}
    for key in ("first", "last", "min", "max", "mean", "points_total", "points", "unit", "kind"):
        assert served[key] == embedded_item[key], key
    assert real.notes["backend"] == "prometheus"


async def test_rates_ratios_and_units_computed_by_prometheus(prometheus_server: PrometheusServer) -> None:
    tool = _tool(prometheus_server.url)
    try:
        rate = await tool.run(MetricsArgs(
            query='sum by (service) (rate(http_server_requests_total{status=~"5.."}[5m]))'))
        ratio = await tool.run(MetricsArgs(
            query='sum by (service) (rate(http_server_requests_total{status=~"5.."}[5m])) / '
                  "sum by (service) (rate(http_server_requests_total[5m]))"))
        p99 = await tool.run(MetricsArgs(query='max by (service) (http_server_requests_seconds{quantile="0.99"})',
                                         instant=True))
    finally:
        await tool.aclose()
    assert {i["kind"] for i in rate.items} == {"rate"}
    assert [i["labels"]["service"] for i in ratio.items][:2] == ["order-service", "checkout-api"]
    assert {(i["unit"], i["kind"]) for i in ratio.items} == {("ratio", "gauge")}
    assert 0.5 < ratio.items[0]["max"]["v"] <= 1
    assert p99.items[0]["unit"] == "seconds"
    assert p99.items[0]["last"]["v"] == pytest.approx(30.0, abs=0.2)


async def test_no_series_is_no_evidence_and_metadata_types_counters(prometheus_server: PrometheusServer) -> None:
    tool = _tool(prometheus_server.url)
    try:
        empty = await tool.run(MetricsArgs(query='up{job="nope"}'))
        counter = await tool.run(MetricsArgs(query='http_server_requests_total{service="checkout-api"}'))
    finally:
        await tool.aclose()
    assert empty.items == []
    assert empty.total_count == 0
    assert {i["kind"] for i in counter.items} == {"counter"}


@pytest.mark.parametrize(("query", "args", "code"), [
    ("rate(http_server_requests_total[5m]", {}, "METRICS_BAD_QUERY"),
    ('{service=~".+"}', {}, "METRICS_MATCHES_EVERYTHING"),
    ("up", {"start": DEMO_CLOCK - timedelta(days=3650)}, "INVALID_ARGUMENTS"),
    ("up", {"step": 0.01}, "INVALID_ARGUMENTS"),
    ("max_over_time(up[10y])", {}, "METRICS_RANGE_TOO_LONG"),
    ("max_over_time(up[1d:1s])", {}, "METRICS_TOO_MANY_POINTS"),
])
async def test_refused_before_prometheus_sees_it(prometheus_server: PrometheusServer, query: str, args: dict[str, Any],
                                                 code: str) -> None:
    tool = _tool(prometheus_server.url)
    try:
        failure = await _fails(tool, MetricsArgs(query=query, **args))
        assert failure.code == code
        ok = await tool.run(MetricsArgs(query="up"))  # nothing else broke
        assert len(ok.items) == 5
    finally:
        await tool.aclose()


async def test_prometheus_own_errors_are_named(prometheus_server: PrometheusServer) -> None:
    tool = _tool(prometheus_server.url)
    try:
        bad = await _fails(tool, MetricsArgs(query='label_replace(up, "x", "$1", "job", "(")'))
        # parses here (promql-parser knows newer functions), Prometheus 2.42 answers 400 bad_data
        unknown = await _fails(tool, MetricsArgs(query='sort_by_label(up{job="mysqld"}, "instance")'))
        # the session server runs with --query.max-samples=50000: 3,601 points x 32 series is more
        samples = await _fails(tool, MetricsArgs(query='{__name__=~"http_.*|hikaricp_.*"}', step=1))
    finally:
        await tool.aclose()
    assert bad.code == "METRICS_QUERY_FAILED"  # an invalid regex is an execution error (422) in Prometheus
    assert "invalid regular expression" in bad.message
    assert samples.code == "METRICS_TOO_MANY_SAMPLES"
    assert unknown.code == "METRICS_BAD_QUERY"
    assert 'unknown function with name "sort_by_label"' in unknown.message


async def test_unreachable_prometheus() -> None:
    tool = _tool(f"http://u:{PASSWORD}@127.0.0.1:{free_port()}")
    failure = await _fails(tool, MetricsArgs(query="up"))
    await tool.aclose()
    assert failure.code == "METRICS_UNREACHABLE"
    assert PASSWORD not in failure.message


# ---- servers that misbehave --------------------------------------------------------------------------------------

Handler = Callable[[web.Request], Any]


@pytest.fixture
async def fake() -> AsyncIterator[Callable[[Handler], Any]]:
    """Start a local server answering /api/v1/* with a handler; yields a starter returning its base URL."""
    runners: list[web.AppRunner] = []
    seen: list[dict[str, Any]] = []

    async def start(handler: Handler) -> str:
        async def wrapped(request: web.Request) -> web.StreamResponse:
            form = dict(await request.post()) if request.method == "POST" else dict(request.query)
            seen.append({"path": request.path, "form": form, "auth": request.headers.get("Authorization")})
            result = handler(request)
            return await result if asyncio.iscoroutine(result) else result  # type: ignore[no-any-return]

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", wrapped)
        runner = web.AppRunner(app)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        runners.append(runner)
        return f"http://127.0.0.1:{port}"

    start.seen = seen  # type: ignore[attr-defined]
    yield start
    for runner in runners:
        await runner.cleanup()


def _error(status: int, error_type: str, message: str) -> web.Response:
    return web.json_response({"status": "error", "errorType": error_type, "error": message}, status=status)


@pytest.mark.parametrize(("answer", "code", "words"), [
    (lambda r: web.Response(status=503, text="<html>Service Unavailable</html>"), "METRICS_UNAVAILABLE", "HTTP 503"),
    (lambda r: _error(503, "unavailable", "TSDB not ready"), "METRICS_UNAVAILABLE", "TSDB not ready"),
    (lambda r: _error(422, "execution", "query processing would load too many samples into memory in query execution"),
     "METRICS_TOO_MANY_SAMPLES", "too many samples"),
    (lambda r: _error(422, "execution", "vector cannot contain metrics with the same labelset"), "METRICS_QUERY_FAILED",
     "same labelset"),
    (lambda r: _error(400, "bad_data", 'invalid parameter "query": 1:5: parse error'), "METRICS_BAD_QUERY",
     "parse error"),
    (lambda r: _error(503, "timeout", "query timed out in expression evaluation"), "METRICS_TIMEOUT", "timed out"),
    (lambda r: web.Response(status=200, text="not json at all {"), "METRICS_BAD_RESPONSE", "not Prometheus"),
    (lambda r: web.json_response({"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}}]}}),
     "METRICS_BAD_RESPONSE", "documented shape"),
    (lambda r: web.json_response({"status": "success", "data": {"resultType": "matrix",
                                                               "result": [{"metric": {}, "values": [[1, "x"]]}]}}),
     "METRICS_BAD_RESPONSE", "documented shape"),
    (lambda r: web.Response(status=401, text="no"), "METRICS_UNAUTHORIZED", "DIAG_PROMETHEUS_TOKEN"),
])
async def test_bad_answers_are_clear_errors(fake: Any, answer: Handler, code: str, words: str) -> None:
    url = await fake(answer)
    tool = _tool(url.replace("http://", f"http://ops:{PASSWORD}@"), token=None)
    failure = await _fails(tool, MetricsArgs(query="up"))
    await tool.aclose()
    assert failure.code == code
    assert words in failure.message
    assert PASSWORD not in failure.message
    assert "127.0.0.1" not in failure.message


async def test_slow_prometheus_times_out_and_sends_its_own_timeout(fake: Any) -> None:
    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.json_response({"status": "success", "data": {"resultType": "matrix", "result": []}})

    url = await fake(slow)
    tool = _tool(url, token=TOKEN, timeout_s=0.3)
    started = asyncio.get_running_loop().time()
    failure = await _fails(tool, MetricsArgs(query="up"))
    elapsed = asyncio.get_running_loop().time() - started
    await tool.aclose()
    assert failure.code == "METRICS_TIMEOUT"
    assert elapsed < 3
    sent = next(s for s in fake.seen if s["path"] == "/api/v1/query_range")
    assert sent["form"]["timeout"] == "0.3s"
    assert sent["form"]["limit"] == "10001"
    assert sent["auth"] == f"Bearer {TOKEN}"
    assert TOKEN not in failure.message


async def test_a_hundred_thousand_series_is_refused(fake: Any) -> None:
    points = [[1795993200 + 60 * i, "1"] for i in range(3)]
    body = orjson.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "x", "pod": f"p{i}"}, "values": points} for i in range(100_000)]}})

    url = await fake(lambda r: web.Response(body=body, content_type="application/json"))
    tool = _tool(url)
    failure = await _fails(tool, MetricsArgs(query='x{job="a"}'))
    ok_body = orjson.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "x", "pod": f"p{i}"}, "values": [[1795993200, str(i)]]} for i in range(500)]}})
    url2 = await fake(lambda r: web.Response(body=ok_body, content_type="application/json"))
    tool2 = _tool(url2)
    many = await tool2.run(MetricsArgs(query='x{job="a"}'))
    await tool.aclose()
    await tool2.aclose()
    assert failure.code in ("METRICS_TOO_MANY_SERIES", "METRICS_RESPONSE_TOO_LARGE")
    assert many.total_count == 500
    assert len(many.items) == 20
    assert many.items[0]["labels"]["pod"] == "p499"  # top N by peak
    assert many.notes["series_not_listed"] == 480


async def test_oversized_answer_is_cut_off(fake: Any) -> None:
    async def huge(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        for _ in range(80):
            await response.write(b" " * (1 << 20))
        return response

    url = await fake(huge)
    backend = PrometheusMetrics(url, None, timeout_s=5, max_response_bytes=4 << 20)
    tool = MetricsTool(backend, lambda: datetime(2026, 11, 29, 23, 30, tzinfo=UTC))
    failure = await _fails(tool, MetricsArgs(query="up"))
    await tool.aclose()
    assert failure.code == "METRICS_RESPONSE_TOO_LARGE"


# ---- diagbot check ----------------------------------------------------------------------------------------------


async def test_check_probes_build_info_and_a_sample_query(prometheus_server: PrometheusServer) -> None:
    from core.health.result import Level
    from core.settings import Settings
    from core.tools.metrics.toolset import probe

    url = prometheus_server.url.replace("http://", f"http://ops:{PASSWORD}@")
    ok = await probe(Settings(diag_prometheus_url=url, diag_clock=DEMO_CLOCK))
    assert ok.level is Level.OK
    assert "Prometheus 2." in ok.detail
    assert "count(up) = 5" in ok.detail
    assert PASSWORD not in ok.detail
    ready = await probe(Settings(diag_prometheus_url=prometheus_server.url), sample=False)
    assert ready.level is Level.OK
    assert "count(up)" not in ready.detail
    down = await probe(Settings(diag_prometheus_url=f"http://ops:{PASSWORD}@127.0.0.1:{free_port()}"))
    assert down.level is Level.WARN
    assert "unreachable" in down.detail
    assert PASSWORD not in down.detail + down.fix
    folder = await probe(Settings())
    assert folder.level is Level.OK
    assert "39 series of 14 metrics" in folder.detail
