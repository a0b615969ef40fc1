"""The Diagnosis Agent end to end over the openai SDK and the local scripted server, with the real ToolBoundary,
the real tools over the demo data, the real EvidenceGuard and the LLM semantic judge."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from core.contracts.release import SemanticVerdictKind
from core.contracts.run import EventType
from core.evidence.boundary import ToolBoundary
from core.guard.evidence_guard import EvidenceGuard
from core.guard.rules import load_rules
from core.llm.openai_model import OpenAIChatModel
from core.llm.prompts import PromptLibrary
from core.settings import PROMPTS_DIR, Settings
from core.steps.agent import DiagnosisAgent
from core.steps.judge import LlmSemanticJudge
from core.stores.canonical import InMemoryCanonicalStore
from core.stores.memory import InMemoryAuditStore
from testkit.tools import backends_for
from tests.fakes.agent_doubles import make_ctx
from tests.fakes.openai_server import FakeOpenAIServer

CLOCK = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)
QUERY = "why is order-service throwing errors?"
LOGS = {"service": "order-service", "query": "HikariPool", "level": "ERROR", "limit": 5}
NOTHING = {"service": "order-service", "query": "OutOfMemoryError", "level": "ERROR"}


@dataclass
class Rig:
    server: FakeOpenAIServer
    model: OpenAIChatModel
    agent: DiagnosisAgent
    canonical: InMemoryCanonicalStore
    audit: InMemoryAuditStore
    prompts: PromptLibrary


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    """Fake OpenAI server + OpenAIChatModel + real boundary and tools on the demo data (clock pinned)."""
    tools = await backends_for(Settings(diag_clock=CLOCK))
    canonical = InMemoryCanonicalStore()
    audit = InMemoryAuditStore()
    prompts = PromptLibrary(PROMPTS_DIR)
    async with FakeOpenAIServer() as server:
        model = OpenAIChatModel(server.base_url, "k", max_retries=1, backoff_base_s=0.01)
        agent = DiagnosisAgent(model, "agent-model", ToolBoundary(tools, canonical, audit), prompts, audit)
        yield Rig(server, model, agent, canonical, audit, prompts)
        await model.aclose()
    for tool in tools.values():
        closer = getattr(tool, "aclose", None)
        if closer is not None:
            await closer()
        elif hasattr(tool, "close"):
            tool.close()


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    """Projections the agent has sent back so far, in order."""
    return [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]


def submit_from_results(request: dict[str, Any]) -> dict[str, Any]:
    """A scripted model that cites exactly the ids it got back, by evidence status."""
    found = [p["tool_call_id"] for p in tool_results(request) if p["evidence_status"] == "EVIDENCE_FOUND"]
    empty = [p["tool_call_id"] for p in tool_results(request) if p["evidence_status"] == "NO_EVIDENCE"]
    analysis = [{"analysis_id": "a1", "kind": "NORMAL", "tool_call_ids": found,
                 "text": "order-service logged HikariPool connection-not-available errors"}]
    if empty:
        analysis.append({"analysis_id": "a2", "kind": "NEGATIVE_OBSERVATION", "tool_call_ids": empty,
                         "text": "the exact query for OutOfMemoryError in order-service matched nothing"})
    draft = {"conclusion": None, "analysis": analysis,
             "limitations": {"scope": "order-service ERROR logs", "missing_info": ["database state not checked"]}}
    return {"tool_calls": [{"id": "submit_1", "name": "submit_diagnosis_draft", "arguments": draft}]}


async def test_parallel_calls_without_ids_are_minted_cited_and_pass_the_evidence_guard(rig: Rig) -> None:
    """Two parallel calls without ids get minted ids; the draft citing them passes the real EvidenceGuard."""
    rig.server.push(
        {"tool_calls": [{"id": None, "name": "query_logs", "arguments": LOGS},
                        {"name": "query_logs", "arguments": NOTHING}], "reasoning_content": "plan: check logs"},
        submit_from_results,
    )
    ctx, timeline = make_ctx(QUERY)
    result = await rig.agent.run(ctx, None)
    assert result.stop_reason == "submitted"
    assert result.draft is not None
    second = rig.server.requests[1]
    assistant = next(m for m in second["messages"] if m["role"] == "assistant")
    wire_ids = [c["id"] for c in assistant["tool_calls"]]
    assert all(wire_ids)
    assert len(set(wire_ids)) == 2
    assert [p["tool_call_id"] for p in tool_results(second)] == wire_ids
    assert [p["evidence_status"] for p in tool_results(second)] == ["EVIDENCE_FOUND", "NO_EVIDENCE"]
    guard = await EvidenceGuard(rig.canonical, load_rules()).check(ctx.run_id, result.draft)
    assert guard.valid, guard.violations
    assert guard.snapshot is not None
    assert set(guard.snapshot.projections) == set(wire_ids)
    assert await rig.audit.reasoning(ctx.run_id) == [("agent", 1, "plan: check logs"), ("agent", 2, "unavailable")]
    assert [e["tool_calls"] for e in timeline.of(EventType.MODEL_CALL)] == [2, 1]
    assert "plan: check logs" not in json.dumps([s for _, s, _ in timeline.events])


async def test_duplicate_provider_ids_across_steps_stay_unique_on_the_wire(rig: Rig) -> None:
    """An Ollama-style server reusing 'call_0' every step still gets unique, matching ids back."""
    rig.server.push(
        {"tool_calls": [{"id": "call_0", "name": "query_logs", "arguments": LOGS}]},
        {"tool_calls": [{"id": "call_0", "name": "query_logs", "arguments": NOTHING}]},
        submit_from_results,
    )
    ctx, _ = make_ctx(QUERY)
    result = await rig.agent.run(ctx, None)
    assert result.stop_reason == "submitted"
    ids = [p["tool_call_id"] for p in tool_results(rig.server.requests[2])]
    assert ids[0] == "call_0"
    assert ids[1] != "call_0"
    records = await rig.canonical.list_run(ctx.run_id)
    assert sorted(r.tool_call_id for r in records) == sorted(ids)


async def test_fabricated_citation_is_caught_downstream_not_by_the_agent(rig: Rig) -> None:
    """The agent returns what the model submitted; a fabricated id is the EvidenceGuard's INVOCATION_MISSING."""
    draft = {"analysis": [{"analysis_id": "a1", "kind": "NORMAL", "text": "pool errors", "tool_call_ids": ["call_fake"]}],
             "limitations": {"scope": "s"}}
    rig.server.push({"tool_calls": [{"id": "c1", "name": "query_logs", "arguments": LOGS}]},
                    {"tool_calls": [{"id": "s1", "name": "submit_diagnosis_draft", "arguments": draft}]})
    ctx, _ = make_ctx(QUERY)
    result = await rig.agent.run(ctx, None)
    assert result.draft is not None
    guard = await EvidenceGuard(rig.canonical, load_rules()).check(ctx.run_id, result.draft)
    assert "INVOCATION_MISSING" in [v.code for v in guard.violations]


async def test_prose_then_invalid_json_ends_with_wire_format(rig: Rig) -> None:
    """Over the wire: prose gets one correction; a following invalid-JSON draft ends the run with 'wire_format'."""
    rig.server.push({"content": "It's the database."},
                    {"tool_calls": [{"id": "s1", "name": "submit_diagnosis_draft", "arguments": "{\"analysis\": ["}]})
    ctx, _ = make_ctx(QUERY)
    result = await rig.agent.run(ctx, None)
    assert (result.stop_reason, result.draft) == ("wire_format", None)
    correction = rig.server.requests[1]["messages"][-1]
    assert correction["role"] == "user"


async def test_server_error_is_retried_inside_one_step(rig: Rig) -> None:
    """A 500 on the first agent call is retried by the model port; the run still completes in two steps."""
    rig.server.push({"status": 500}, {"tool_calls": [{"id": "c1", "name": "query_logs", "arguments": LOGS}]},
                    submit_from_results)
    ctx, _ = make_ctx(QUERY)
    result = await rig.agent.run(ctx, None)
    assert (result.stop_reason, result.steps) == ("submitted", 2)
    assert len(rig.server.requests) == 3


async def test_model_down_ends_with_model_unavailable(rig: Rig) -> None:
    """Repeated 503s beyond the retry bound end the loop with 'model_unavailable'."""
    rig.server.push({"status": 503}, {"status": 503})
    ctx, _ = make_ctx(QUERY)
    result = await rig.agent.run(ctx, None)
    assert (result.stop_reason, result.draft) == ("model_unavailable", None)


async def test_slow_model_hits_the_run_deadline(rig: Rig) -> None:
    """A model answer slower than the run's deadline ends the run at the deadline."""
    rig.server.push({"content": "late", "delay_s": 3.0}, {"content": "late", "delay_s": 3.0})
    ctx, _ = make_ctx(QUERY, deadline_s=0.5)
    started = time.monotonic()
    result = await rig.agent.run(ctx, None)
    assert time.monotonic() - started < 2.5
    assert (result.stop_reason, result.draft) == ("deadline", None)


async def test_tool_call_budget_of_the_real_boundary_stops_the_loop(rig: Rig) -> None:
    """With max_tool_calls=1 the real boundary refuses the second call and the loop ends 'budget_tool_calls'."""
    rig.server.push({"tool_calls": [{"id": "c1", "name": "query_logs", "arguments": LOGS}]},
                    {"tool_calls": [{"id": "c2", "name": "query_logs", "arguments": NOTHING}]}, submit_from_results)
    ctx, _ = make_ctx(QUERY, max_tool_calls=1)
    result = await rig.agent.run(ctx, None)
    assert (result.stop_reason, result.draft) == ("budget_tool_calls", None)
    assert rig.server.remaining == 1


async def test_semantic_judge_over_the_wire_with_the_verified_snapshot(rig: Rig) -> None:
    """The judge sends exactly query, draft and snapshot without tools and reads the fenced verdict."""
    rig.server.push({"tool_calls": [{"id": "c1", "name": "query_logs", "arguments": LOGS}]}, submit_from_results,
                    {"content": "```json\n{\"verdict\": \"SUPPORTED\", \"reason\": \"logs show it\"}\n```",
                     "reasoning_content": "judge thinking"})
    ctx, _ = make_ctx(QUERY)
    result = await rig.agent.run(ctx, None)
    assert result.draft is not None
    guard = await EvidenceGuard(rig.canonical, load_rules()).check(ctx.run_id, result.draft)
    assert guard.snapshot is not None
    judge = LlmSemanticJudge(rig.model, "guard-model", rig.prompts, rig.audit)
    verdict = await judge.judge(QUERY, result.draft, guard.snapshot)
    assert verdict.verdict is SemanticVerdictKind.SUPPORTED
    request = rig.server.requests[-1]
    assert request["model"] == "guard-model"
    assert "tools" not in request
    body = json.loads(request["messages"][1]["content"])
    assert set(body) == {"query", "draft", "snapshot", "warnings"}
    assert set(body["snapshot"]["projections"]) == {"c1"}
    assert ("semantic_guard", 1, "judge thinking") in await rig.audit.reasoning(ctx.run_id)
