"""The metrics first look in whole runs (real services over the demo data, the local OpenAI server as the model): for
the service and window the question names, one query_metrics call ranking the series that moved most against the
time before the window, on the embedded folder and on a real Prometheus; it is in the trace (a TOOL_CALL and the
FIRST_LOOK event), reaches the model as a tool result, and a draft citing its values passes the EvidenceGuard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.bootstrap import build_services
from core.contracts.draft import DiagnosisDraft
from core.contracts.release import Outcome
from core.contracts.run import EventType, SessionKey, Turn
from core.guard.evidence_guard import EvidenceGuard
from core.guard.rules import load_rules
from core.settings import DEMO_CLOCK, Settings
from testkit.openai_server import FakeOpenAIServer
from tests.fixtures.prometheus import PrometheusServer

QUESTION = "why is order-service failing since 23:00?"


def _settings(server: FakeOpenAIServer, tmp_path: Path, **extra: Any) -> Settings:
    return Settings(openai_base_url=server.base_url, openai_api_key="k", diag_model="m", redis_url=None,
                    database_url=f"sqlite+aiosqlite:///{tmp_path}/runs.db", diag_clock=DEMO_CLOCK,
                    diag_model_tool_choice=None, **extra)


def _metrics_result(request: dict[str, Any]) -> dict[str, Any]:
    shown = [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]
    return next(p for p in shown if p["tool_name"] == "query_metrics")


def _pending(projection: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in projection["series"] if s["labels"]["metric"] == "hikaricp_connections_pending")


def draft_citing_the_ranking(request: dict[str, Any], claim: str | None = None) -> dict[str, Any]:
    """A summariser's draft: the pending connections' ratio to the half hour before, as the ranking shows it."""
    metrics = _metrics_result(request)
    ratio = _pending(metrics)["last"]["v"]
    text = claim or (f"order-service's hikaricp_connections_pending averaged {ratio:.1f} times its level of the half "
                     "hour before 23:00.")
    draft = {"conclusion": None, "analysis": [
        {"analysis_id": "a1", "kind": "NORMAL", "tool_call_ids": [metrics["tool_call_id"]], "text": text}],
        "action_plan": [], "recommendations": [],
        "limitations": {"scope": "The bot's first look at order-service's metrics.", "missing_info": []}}
    return {"tool_calls": [{"id": "s1", "name": "submit_diagnosis_draft", "arguments": draft}]}


async def _run(settings: Settings) -> tuple[Any, list[Any], Any]:
    services = await build_services(settings)
    try:
        turn = Turn(session=SessionKey(team="t", channel="c", thread_ts="1"), text=QUESTION, user="u", message_ts="1")
        outcome = await services.chat_service.handle(turn)
        events = await services.chat_service.timeline(outcome.run_id)
        guard = EvidenceGuard(services.canonical, load_rules())
        invented: dict[str, Any] = {"conclusion": None, "action_plan": [], "recommendations": [],
                    "limitations": {"scope": "s", "missing_info": []}}
        calls = [e.summary for e in events if e.type is EventType.TOOL_CALL and e.summary["tool"] == "query_metrics"]
        invented["analysis"] = [{"analysis_id": "a1", "kind": "NORMAL", "tool_call_ids": [calls[0]["tool_call_id"]],
                                 "text": "order-service's hikaricp_connections_pending averaged 97.5 times its "
                                         "level of the half hour before 23:00."}]
        verdict = await guard.check(outcome.run_id, DiagnosisDraft.model_validate(invented))
        return outcome, events, verdict
    finally:
        await services.aclose()


def _assert_metrics_look(events: list[Any]) -> dict[str, Any]:
    [look] = [e for e in events if e.type is EventType.FIRST_LOOK]
    assert look.summary["services"] == "order-service"
    assert "query_metrics=1" in look.summary["tools"]
    calls = [e for e in events if e.type is EventType.TOOL_CALL]
    assert all(c.summary["tool_call_id"].startswith("first_look_") for c in calls)
    [metrics] = [c for c in calls if c.summary["tool"] == "query_metrics"]
    assert metrics.summary["tool_call_id"] == f"first_look_{len(calls)}"  # after the logs' and the database's calls
    assert metrics.seq < look.seq
    return dict(metrics.summary)


async def _cited_run(settings: Settings, server: FakeOpenAIServer) -> tuple[Any, list[Any], Any, dict[str, Any]]:
    server.push({"content": '{"intent": "DIAGNOSIS"}'}, draft_citing_the_ranking,
                {"content": '{"verdict": "SUPPORTED", "reason": "restates the ranking"}'})
    outcome, events, invented = await _run(settings)
    return outcome, events, invented, _metrics_result(server.requests[1])


async def test_the_metrics_ranking_is_cited_and_verified_over_the_embedded_folder(tmp_path: Path) -> None:
    async with FakeOpenAIServer() as server:
        outcome, events, invented, shown = await _cited_run(_settings(server, tmp_path), server)
    assert outcome.outcome is Outcome.SUCCESS, outcome
    _assert_metrics_look(events)
    assert shown["evidence_status"] == "EVIDENCE_FOUND"
    metrics = {s["labels"]["metric"] for s in shown["series"]}
    assert {"hikaricp_connections_pending", "hikaricp_connections_timeout_total",
            "http_server_requests_error_ratio"} <= metrics
    from_zero = [s for s in shown["series"] if s["labels"].get("change") == "from zero, window level"]
    assert {s["labels"]["metric"] for s in from_zero} >= {"http_server_requests_error_ratio"}
    assert not invented.valid
    assert {v.code for v in invented.violations} == {"NUMBER_NOT_IN_EVIDENCE"}


async def test_the_metrics_ranking_over_a_real_prometheus(prometheus_server: PrometheusServer, tmp_path: Path) -> None:
    async with FakeOpenAIServer() as server:
        settings = _settings(server, tmp_path, diag_prometheus_url=prometheus_server.url)
        outcome, events, invented, shown = await _cited_run(settings, server)
    assert outcome.outcome is Outcome.SUCCESS, outcome
    _assert_metrics_look(events)
    assert shown["evidence_status"] == "EVIDENCE_FOUND"
    assert _pending(shown)["last"]["v"] > 10
    assert not invented.valid


@pytest.mark.parametrize("question", ["what is wrong since 23:00?", "anything odd tonight?"])
async def test_no_service_named_no_metrics_call(tmp_path: Path, question: str) -> None:
    """Without a service the metrics first look makes no call (a ranking across every series is neither bounded nor
    what an engineer reads first)."""
    async with FakeOpenAIServer() as server:
        server.push({"content": '{"intent": "DIAGNOSIS"}'}, {"content": "no calls"}, {"content": "still none"})
        services = await build_services(_settings(server, tmp_path))
        try:
            turn = Turn(session=SessionKey(team="t", channel="c", thread_ts="2"), text=question, user="u",
                        message_ts="2")
            outcome = await services.chat_service.handle(turn)
            events = await services.chat_service.timeline(outcome.run_id)
        finally:
            await services.aclose()
    assert not [e for e in events if e.type is EventType.TOOL_CALL and e.summary["tool"] == "query_metrics"]
