"""query_metrics through the real services: the boundary's projection and record, the EvidenceGuard on a grounded and
an invented draft, and bad input as one ERROR; over the embedded demo metrics and over a real Prometheus."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from core.bootstrap import Services, build_services
from core.contracts.draft import DiagnosisDraft
from core.evidence.projection import projection_size
from core.guard.evidence_guard import EvidenceGuard
from core.guard.rules import load_rules
from core.run import RunContext
from core.settings import DEMO_CLOCK, Settings
from entrypoints.demo import demo_settings
from tests.fixtures.prometheus import PrometheusServer


@pytest.fixture
async def services(tmp_path: Path) -> AsyncIterator[Services]:
    built = await build_services(demo_settings(f"sqlite+aiosqlite:///{tmp_path}/m.db"))
    yield built
    await built.aclose()


def _ctx(services: Services, run_id: str) -> RunContext:
    return RunContext(run_id=run_id, session_key="T:C:1", query="how bad?", timeline=services.timeline_for(run_id))


def _draft(text: str, call_id: str) -> DiagnosisDraft:
    return DiagnosisDraft.model_validate({
        "conclusion": None,
        "analysis": [{"analysis_id": "a1", "kind": "NORMAL", "text": text, "tool_call_ids": [call_id]}],
        "action_plan": [], "recommendations": [], "limitations": {"scope": "checkout-api's 5xx ratio"}})


async def test_the_boundary_serves_query_metrics_and_the_guard_checks_it(services: Services) -> None:
    ctx = _ctx(services, "run-m1")
    projection = await services.boundary.invoke(
        ctx, "call_err", "query_metrics", {"query": 'http_server_requests_error_ratio{service="checkout-api"}'})
    assert projection["evidence_status"] == "EVIDENCE_FOUND"
    assert projection["tool_name"] == "query_metrics"
    assert projection_size(projection) <= 8192
    [series] = projection["series"]
    assert series["unit"] == "ratio"
    assert series["max"] == {"t": "2026-11-29T23:14:00Z", "v": 0.8621}
    guard = EvidenceGuard(services.canonical, load_rules())
    honest = await guard.check("run-m1", _draft("checkout-api's 5xx ratio peaked at 86.2% at 23:14.", "call_err"))
    assert honest.valid, honest.violations
    invented = await guard.check("run-m1", _draft("checkout-api's 5xx ratio peaked at 57%.", "call_err"))
    assert not invented.valid
    assert {v.code for v in invented.violations} == {"NUMBER_NOT_IN_EVIDENCE"}


@pytest.mark.parametrize(("arguments", "code"), [
    ({"query": "histogram_quantile(0.9, rate(http_server_requests_seconds_bucket[5m]))"}, "METRICS_NEEDS_PROMETHEUS"),
    ({"query": '{service=~".+"}'}, "METRICS_MATCHES_EVERYTHING"),
    ({"query": "sum("}, "METRICS_BAD_QUERY"),
    ({"query": "up", "start": "2016-11-29T00:00:00Z"}, "INVALID_ARGUMENTS"),
    ({"query": "up", "step": 0.001}, "INVALID_ARGUMENTS"),
    ({"query": ""}, "INVALID_ARGUMENTS"),
    ({"sql": "SELECT 1"}, "INVALID_ARGUMENTS"),
])
async def test_bad_input_is_one_error_and_nothing_else_breaks(services: Services, arguments: dict[str, object],
                                                              code: str) -> None:
    ctx = _ctx(services, "run-m2")
    projection = await services.boundary.invoke(ctx, None, "query_metrics", json.dumps(arguments))
    assert projection["evidence_status"] == "ERROR"
    assert projection["error"]["code"] == code
    after = await services.boundary.invoke(ctx, None, "query_metrics", {"query": "up"})
    assert after["evidence_status"] == "EVIDENCE_FOUND"


async def test_over_a_real_prometheus(prometheus_server: PrometheusServer, tmp_path: Path) -> None:
    settings = Settings(diag_prometheus_url=prometheus_server.url, diag_clock=DEMO_CLOCK, redis_url=None,
                        database_url=f"sqlite+aiosqlite:///{tmp_path}/p.db")
    built = await build_services(settings)
    try:
        ctx = _ctx(built, "run-m3")
        projection = await built.boundary.invoke(ctx, "call_rate", "query_metrics", {
            "query": 'sum by (service) (rate(http_server_requests_total{status=~"5.."}[5m]))'})
        assert projection["evidence_status"] == "EVIDENCE_FOUND"
        assert {s["kind"] for s in projection["series"]} == {"rate"}
        peak = projection["series"][0]["max"]["v"]
        guard = EvidenceGuard(built.canonical, load_rules())
        ok = await guard.check("run-m3", _draft(f"5xx responses peaked at {peak:g} per second.", "call_rate"))
        assert ok.valid, ok.violations
    finally:
        await built.aclose()


async def test_fallback_facts_speak_plain_words(services: Services) -> None:
    from core.release.facts import observed_facts

    ctx = _ctx(services, "run-m4")
    await services.boundary.invoke(ctx, "call_err", "query_metrics",
                                   {"query": 'http_server_requests_error_ratio{service="checkout-api"}'})
    await services.boundary.invoke(ctx, "call_bad", "query_metrics", {"query": "histogram_quantile(0.9, x_bucket)"})
    records = await services.canonical.list_run("run-m4")
    texts = [f.text for f in observed_facts(records, question="how bad are checkout-api's errors?")]
    assert ("The http server requests error ratio of checkout-api rose from 0 % at 22:30 to 57.1 % at 23:30, "
            "peak 86.2 % at 23:14") in texts
    assert any("needs Prometheus" in t or "Prometheus" in t for t in texts), texts
