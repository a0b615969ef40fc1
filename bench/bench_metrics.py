"""query_metrics cost: projection time and bytes for 1, 100 and 10,000 series x 11,000 points, through the embedded
backend (OpenMetrics files) and the Prometheus backend (a local server answering the HTTP API's documented JSON), and
the EvidenceGuard's cold check over a draft citing 10 series next to one Redis MGET of their records.

Run: python bench/bench_metrics.py   (Redis at 127.0.0.1:6379 or $TEST_REDIS_URL for the guard part). 2 cores,
shared with other work: read the ratios, not the absolute times. 10,000 x 11,000 points (110 M samples, ~3 GB of
Prometheus JSON) is over the response bound (32 MiB): what is measured is how fast the bound refuses it; the same
count of series in memory (shared point arrays) measures the ranking and projection alone.

`python bench/bench_metrics.py --first-look` measures only the metrics first look's ranking call (one instant query
per service, core/tools/metrics/first_look.py) on the demo folder: CPU ms per call, the folder parsed once before.
Every call pays for its check and its evaluation the same way a run does (nothing of a result is kept across calls).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from array import array
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis
from aiohttp import web

from core.contracts.draft import DiagnosisDraft
from core.contracts.evidence import CanonicalRecord, RawResult
from core.errors import ToolFailure
from core.guard.evidence_guard import EvidenceGuard
from core.guard.rules import load_rules
from core.settings import DEMO_CLOCK, DEMO_DATA
from core.stores.canonical import RedisCanonicalStore
from core.tools.metrics.args import MetricsArgs, resolve_window
from core.tools.metrics.backend import Fetched
from core.tools.metrics.embedded import EmbeddedMetrics
from core.tools.metrics.first_look import metrics_first_look
from core.tools.metrics.prometheus import PrometheusMetrics
from core.tools.metrics.promql import check_query
from core.tools.metrics.result import raw_result
from core.tools.metrics.series import Series
from core.tools.metrics.tool import MetricsTool
from core.tools.metrics.units import SeriesUnit
from testkit.metrics import metrics_record

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
POINTS = 11_000
STEP_S = 15
START = datetime(2026, 11, 27, 0, 0, tzinfo=UTC)
END = START + timedelta(seconds=STEP_S * (POINTS - 1))
T0 = START.timestamp()
SIZES = (1, 100, 10_000)


def _value(series: int, i: int) -> float:
    return round(0.05 + (i * 7919 + series * 104729) % 1000 / 2000 + (0.4 if 6000 <= i < 6400 else 0.0), 4)


def _args() -> MetricsArgs:
    return MetricsArgs(query='bench_usage_ratio{job="bench"}', start=START, end=END, step=STEP_S)


def _projection(raw: RawResult) -> tuple[dict[str, Any], float]:
    started = time.perf_counter()
    rec = metrics_record("bench", {"query": "bench"}, raw, "bench")
    return rec.projection or {}, time.perf_counter() - started


def _line(kind: str, n: int, seconds: float, raw: RawResult | None, projection: dict[str, Any] | None,
          note: str = "") -> None:
    size = len(json.dumps(projection, separators=(",", ":"), ensure_ascii=False).encode()) if projection else 0
    shown = len(projection.get("series", [])) if projection else 0
    total = raw.total_count if raw is not None else 0
    print(f"{kind:11} {n:>6} series x {POINTS} points: {seconds * 1000:9.1f} ms  projection {size:5d} B, "
          f"{shown:2d} of {total} series listed {note}")


# ---- embedded ---------------------------------------------------------------------------------------------------


def _write_openmetrics(folder: Path, n: int) -> None:
    with (folder / "bench.om").open("w", encoding="utf-8") as out:
        out.write("# TYPE bench_usage_ratio gauge\n# UNIT bench_usage_ratio ratio\n# HELP bench_usage_ratio Bench.\n")
        for s in range(n):
            labels = f'{{job="bench",pod="pod-{s:05d}"}}'
            out.writelines(f"bench_usage_ratio{labels} {_value(s, i)} {int(T0) + STEP_S * i}\n" for i in range(POINTS))
        out.write("# EOF\n")


async def embedded(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if n * POINTS > 5_000_000:
            # a file of the size 10,000 x 11,000 samples would take (sparse: the listing refuses it by size)
            with (folder / "bench.om").open("wb") as out:
                out.truncate(n * POINTS * 52)
        else:
            _write_openmetrics(folder, n)
        tool = MetricsTool(EmbeddedMetrics(folder), lambda: END)
        started = time.perf_counter()
        try:
            raw = await tool.run(_args())
        except ToolFailure as exc:
            _line("embedded", n, time.perf_counter() - started, None, None, f"-> ERROR {exc.code}")
            return
        first = time.perf_counter() - started
        started = time.perf_counter()
        raw = await tool.run(_args())  # parsed files are kept: the second query only evaluates
        again = time.perf_counter() - started
        projection, projecting = _projection(raw)
        _line("embedded", n, first + projecting, raw, projection,
              f"(parse+query {first * 1000:.0f} ms, cached query {again * 1000:.0f} ms, projection {projecting * 1000:.1f} ms)")


# ---- prometheus -------------------------------------------------------------------------------------------------


def _series_json(s: int) -> bytes:
    values = ",".join(f'[{T0 + STEP_S * i:.3f},"{_value(s, i)}"]' for i in range(POINTS))
    return (f'{{"metric":{{"__name__":"bench_usage_ratio","job":"bench","pod":"pod-{s:05d}"}},'
            f'"values":[{values}]}}').encode()


async def _serve(n: int) -> tuple[web.AppRunner, str]:
    """A server answering query_range with n series; the body is built before the clock starts (up to just past the
    client's 32 MiB bound: a larger answer is refused there, whatever follows)."""
    head, parts, size = b'{"status":"success","data":{"resultType":"matrix","result":[', [], 0
    for s in range(n):
        part = _series_json(s)
        parts.append(part)
        size += len(part)
        if size > 36 * 2**20:
            break
    body = head + b",".join(parts) + (b"]}}" if len(parts) == n else b"")

    async def answer(request: web.Request) -> web.StreamResponse:
        if request.path != "/api/v1/query_range":
            return web.json_response({"status": "success", "data": {}})
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        try:
            for at in range(0, len(body), 1 << 20):
                await response.write(body[at:at + (1 << 20)])
        except (ConnectionError, RuntimeError):
            pass  # the client stopped reading at its byte bound
        return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


async def prometheus(n: int) -> None:
    runner, url = await _serve(n)
    tool = MetricsTool(PrometheusMetrics(url, None, timeout_s=120), lambda: END)
    try:
        started = time.perf_counter()
        try:
            raw = await tool.run(_args())
        except ToolFailure as exc:
            _line("prometheus", n, time.perf_counter() - started, None, None, f"-> ERROR {exc.code}")
            return
        fetched = time.perf_counter() - started
        projection, projecting = _projection(raw)
        _line("prometheus", n, fetched + projecting, raw, projection,
              f"(HTTP+parse+rank {fetched * 1000:.0f} ms, projection {projecting * 1000:.1f} ms)")
    finally:
        await tool.aclose()
        await runner.cleanup()


# ---- ranking and projection alone -------------------------------------------------------------------------------


def in_memory(n: int) -> None:
    times = array("d", (T0 + STEP_S * i for i in range(POINTS)))
    shared = array("d", (_value(0, i) for i in range(POINTS)))
    distinct = [array("d", (_value(s, i) for i in range(POINTS))) for s in range(min(n, 50))]
    series = [Series("bench_usage_ratio", {"job": "bench", "pod": f"pod-{s:05d}"}, times,
                     distinct[s] if s < len(distinct) else shared) for s in range(n)]
    fetched = Fetched(series, [SeriesUnit("ratio", "gauge")] * n)
    query, window = check_query(_args().query), resolve_window(_args(), END)
    started = time.perf_counter()
    raw = raw_result(fetched, query, window)
    ranked = time.perf_counter() - started
    projection, projecting = _projection(raw)
    _line("in memory", n, ranked + projecting, raw, projection,
          f"(rank+summaries {ranked * 1000:.0f} ms, projection {projecting * 1000:.1f} ms)")


# ---- the guard --------------------------------------------------------------------------------------------------


def _series_records(count: int) -> list[CanonicalRecord]:
    records = []
    for c in range(count):
        series = Series("http_server_requests_error_ratio", {"service": f"svc-{c}"})
        for i in range(240):
            series.add(T0 + 15 * i, round(0.002 + (0.5 if i >= 120 else 0) + (i % 7) / 1000, 4))
        fetched = Fetched([series], [SeriesUnit("ratio", "gauge")])
        args = MetricsArgs(query=f'http_server_requests_error_ratio{{service="svc-{c}"}}', start=START,
                           end=START + timedelta(minutes=60))
        raw = raw_result(fetched, check_query(args.query), resolve_window(args, END))
        records.append(metrics_record(f"call_m_{c}", {"query": args.query}, raw, "bench-metrics"))
    return records


def _draft(records: list[CanonicalRecord]) -> DiagnosisDraft:
    analyses = []
    for i, rec in enumerate(records):
        s = (rec.projection or {})["series"][0]
        first, last, peak = s["first"], s["last"], s["max"]
        text = (f"The error ratio of svc-{i} rose from {first['v'] * 100:.1f}% at {first['t'][11:16]} to "
                f"{last['v'] * 100:.1f}% at {last['t'][11:16]}, peaking at {peak['v'] * 100:.1f}%.")
        analyses.append({"analysis_id": f"a{i}", "kind": "NORMAL", "text": text, "tool_call_ids": [rec.tool_call_id]})
    return DiagnosisDraft.model_validate({
        "conclusion": {"text": "Every service's error ratio rose above 50% at 00:30.", "based_on_analysis_ids": ["a0"]},
        "analysis": analyses, "action_plan": [], "recommendations": [],
        "limitations": {"scope": "error ratio series of the services, 00:00-01:00"}})


async def guard_check(iterations: int = 300, warmup: int = 20) -> None:
    client = aioredis.from_url(REDIS_URL)
    prefix = f"bench:{uuid.uuid4().hex[:8]}:"
    store = RedisCanonicalStore(client, prefix, ttl_s=300)
    try:
        records = _series_records(10)
        for rec in records:
            await store.put(rec)
        draft, rules = _draft(records), load_rules()
        result = await EvidenceGuard(store, rules).check("bench-metrics", draft)
        assert result.valid, [(v.code, v.message) for v in result.violations]
        keys = [store.record_key("bench-metrics", r.tool_call_id) for r in records]
        mget_t, cold_t = [], []
        for i in range(warmup + iterations):
            t0 = time.perf_counter()
            await client.mget(keys)
            t1 = time.perf_counter()
            await EvidenceGuard(store, rules).check("bench-metrics", draft)
            t2 = time.perf_counter()
            if i >= warmup:
                mget_t.append(t1 - t0)
                cold_t.append(t2 - t1)
        ratio = statistics.median(c / m for c, m in zip(cold_t, mget_t, strict=True))
        kib = sum(len(json.dumps(r.projection)) for r in records) / 1024
        print(f"guard, cold check of a draft citing 10 series ({kib:.0f} KiB of projections): "
              f"{statistics.median(cold_t) * 1e6:.0f} us, MGET {statistics.median(mget_t) * 1e6:.0f} us: "
              f"{ratio:.2f}x MGET (paired median, goal <= 5x)")
    finally:
        left = [k async for k in client.scan_iter(match=f"{prefix}*")]
        if left:
            await client.delete(*left)
        await client.aclose()


# ---- the first look's ranking ------------------------------------------------------------------------------------


FIRST_LOOK_CALLS = 200
FIRST_LOOK_SERVICES = ("order-service", "checkout-api", "payment-service")


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def _cpu_ms(seconds: float, calls: int) -> str:
    return f"{seconds * 1000 / calls:6.2f} ms CPU/call"


async def first_look(calls: int = FIRST_LOOK_CALLS) -> None:
    """The ranking call of each service over the default 60-minute window ending at the demo clock: the check and
    the evaluation alone (the worker-thread part of a call), then the whole tool call (window, check, evaluation,
    result), CPU time of the whole process per call."""
    backend = EmbeddedMetrics(DEMO_DATA / "metrics")
    tool = MetricsTool(backend, lambda: DEMO_CLOCK)
    started = time.process_time()
    backend.folder.snapshot()
    parsed = time.process_time() - started
    print(f"first look ranking, demo folder parsed once: {parsed * 1000:.0f} ms CPU; {await asyncio.to_thread(_uptime)}")
    for service in FIRST_LOOK_SERVICES:
        [call] = metrics_first_look(service, DEMO_CLOCK - timedelta(minutes=60), DEMO_CLOCK)
        args = MetricsArgs.model_validate(call.arguments)
        window = resolve_window(args, DEMO_CLOCK)
        shown = len(backend._evaluate(check_query(args.query), window).series)  # the worker-thread part
        started = time.process_time()
        for _ in range(calls):
            backend._evaluate(check_query(args.query), window)
        evaluating = time.process_time() - started
        started = time.process_time()
        for _ in range(calls):
            await tool.run(args)
        whole = time.process_time() - started
        print(f"  {service:16} {shown:2d} series: check + evaluate {_cpu_ms(evaluating, calls)}, "
              f"whole tool call {_cpu_ms(whole, calls)} ({calls} calls)")
    # an alert's 'firing since <moment>' gives each run its own window length: a text never checked before
    started = time.process_time()
    for k in range(calls):
        [call] = metrics_first_look("order-service", DEMO_CLOCK - timedelta(seconds=3000 + k), DEMO_CLOCK)
        await tool.run(MetricsArgs.model_validate(call.arguments))
    print(f"  order-service, a new window length each call (the check not kept): whole tool call "
          f"{_cpu_ms(time.process_time() - started, calls)}; {await asyncio.to_thread(_uptime)}")


async def main() -> None:
    if "--first-look" in sys.argv[1:]:
        await first_look()
        return
    print(f"query_metrics bench, {POINTS} points per series, step {STEP_S} s (2 cores, shared)")
    for n in SIZES:
        in_memory(n)
    for n in SIZES:
        await embedded(n)
    for n in SIZES:
        await prometheus(n)
    await guard_check()


if __name__ == "__main__":
    asyncio.run(main())
