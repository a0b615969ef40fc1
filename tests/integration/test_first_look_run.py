"""The first look in a whole run (real services over the demo data, the local OpenAI server as the model): its calls
are ordinary tool calls of the run, in the trace, given to the agent as its starting evidence and citable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.bootstrap import build_services
from core.contracts.release import Outcome
from core.contracts.run import EventType, SessionKey, Turn
from core.settings import DEMO_CLOCK, Settings
from testkit.openai_server import FakeOpenAIServer

QUESTION = "why is order-service failing since 23:00?"


def settings(server: FakeOpenAIServer, tmp_path: Path, **extra: Any) -> Settings:
    return Settings(openai_base_url=server.base_url, openai_api_key="k", diag_model="m", redis_url=None,
                    database_url=f"sqlite+aiosqlite:///{tmp_path}/runs.db", diag_clock=DEMO_CLOCK,
                    diag_model_tool_choice=None, **extra)


def results(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]


def cite_first_look(request: dict[str, Any]) -> dict[str, Any]:
    """A small model that only summarises: it cites the first look's ERROR lines and the latest deployments."""
    shown = results(request)
    errors = next(p for p in shown if p["tool_name"] == "query_logs" and p["evidence_status"] == "EVIDENCE_FOUND")
    deploys = next(p for p in shown if p["tool_name"] == "query_mysql" and "deployed_at" in p.get("columns", []))
    message = errors["logs"][0]["message"]
    draft = {"conclusion": None, "analysis": [
        {"analysis_id": "a1", "kind": "NORMAL", "tool_call_ids": [errors["tool_call_id"]],
         "text": f"order-service logs '{message}' at ERROR level."},
        {"analysis_id": "a2", "kind": "NORMAL", "tool_call_ids": [deploys["tool_call_id"]],
         "text": "The deployments table lists the latest deployments of the services."}],
        "action_plan": [], "recommendations": [],
        "limitations": {"scope": "The bot's first look at order-service.", "missing_info": []}}
    return {"tool_calls": [{"id": "s1", "name": "submit_diagnosis_draft", "arguments": draft}]}


async def run(server: FakeOpenAIServer, tmp_path: Path, **extra: Any) -> tuple[Any, list[Any]]:
    services = await build_services(settings(server, tmp_path, **extra))
    try:
        turn = Turn(session=SessionKey(team="t", channel="c", thread_ts="1"), text=QUESTION, user="u", message_ts="1")
        outcome = await services.chat_service.handle(turn)
        return outcome, await services.chat_service.timeline(outcome.run_id)
    finally:
        await services.aclose()


async def test_a_model_that_only_cites_the_first_look_gets_a_verified_report(tmp_path: Path) -> None:
    """The first look runs before the agent's first step (ERROR and WARN lines, the top message's count, the
    deployments table), is in the trace, reaches the model as tool results, and a draft citing it is published."""
    async with FakeOpenAIServer() as server:
        server.push({"content": '{"intent": "DIAGNOSIS"}'}, cite_first_look,
                    {"content": '{"verdict": "SUPPORTED", "reason": "quoted"}'})
        outcome, events = await run(server, tmp_path)
        agent_request = server.requests[1]
    assert outcome.outcome is Outcome.SUCCESS, outcome
    look = [e for e in events if e.type is EventType.FIRST_LOOK]
    assert len(look) == 1
    assert look[0].summary["services"] == "order-service"
    assert look[0].summary["window"] == "named in the question"
    calls = [e.summary for e in events if e.type is EventType.TOOL_CALL]
    assert all(c["tool_call_id"].startswith("first_look_") for c in calls)
    assert {c["tool"] for c in calls} == {"query_logs", "query_mysql", "query_metrics"}
    assert calls[-1]["tool"] == "query_metrics"  # the toolsets' calls come last: the others keep their ids
    first = results(agent_request)
    assert first[0]["tool_name"] == "query_logs"
    assert "First look" in agent_request["messages"][1]["content"]
    assert agent_request["messages"][0]["content"].startswith("# Diagnosis Agent")
    errors = next(e for e in events if e.type is EventType.TOOL_CALL)
    assert errors.seq < look[0].seq < next(e for e in events if e.type is EventType.MODEL_CALL and
                                             e.summary.get("stage") == "agent").seq


async def test_the_first_look_can_be_turned_off_per_deployment(tmp_path: Path) -> None:
    """DIAG_FIRST_LOOK=0: no first-look calls, no FIRST_LOOK event; the agent starts from the question alone."""
    async with FakeOpenAIServer() as server:
        server.push({"content": '{"intent": "DIAGNOSIS"}'}, {"content": "no calls"}, {"content": "still none"})
        outcome, events = await run(server, tmp_path, diag_first_look=False)
        agent_request = server.requests[1]
    assert outcome.outcome is Outcome.FAILURE
    assert not [e for e in events if e.type in (EventType.FIRST_LOOK, EventType.TOOL_CALL)]
    assert [m["role"] for m in agent_request["messages"]] == ["system", "user"]


async def test_repeating_a_first_look_call_is_answered_from_its_result(tmp_path: Path) -> None:
    """The agent asking exactly what the first look asked gets that result again, with no second backend query."""
    def repeat(request: dict[str, Any]) -> dict[str, Any]:
        assistant = next(m for m in request["messages"] if m["role"] == "assistant")
        call = assistant["tool_calls"][0]["function"]
        return {"tool_calls": [{"id": "again", "name": call["name"], "arguments": json.loads(call["arguments"])}]}

    async with FakeOpenAIServer() as server:
        server.push({"content": '{"intent": "DIAGNOSIS"}'}, repeat, {"content": "x"}, {"content": "y"})
        _, events = await run(server, tmp_path)
        repeated = results(server.requests[2])[-1]
    tool_calls = [e.summary for e in events if e.type is EventType.TOOL_CALL]
    assert all(c["tool_call_id"].startswith("first_look_") for c in tool_calls)
    assert "not run again" in repeated["note"]
