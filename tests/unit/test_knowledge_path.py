"""KnowledgeAnswerer over the real ToolBoundary and the real knowledge tool on the demo runbooks."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from core.contracts.release import FallbackType, Outcome
from core.contracts.run import EventType
from core.evidence.boundary import ToolBoundary
from core.llm.model import ModelUnavailable
from core.llm.prompts import PromptLibrary
from core.settings import DEMO_DATA, PROMPTS_DIR
from core.steps.knowledge import KnowledgeAnswerer
from core.stores.canonical import InMemoryCanonicalStore
from core.stores.memory import InMemoryAuditStore
from core.tools.knowledge.tool import KnowledgeTool
from testkit.models import ModelRequest, ScriptedChatModel, reply
from testkit.tool_names import ToolName
from tests.fakes.agent_doubles import make_ctx

HIKARI_DOC = "runbooks/hikaricp-pool-exhaustion.md"
LOOKUP = json.dumps({"query": "HikariCP pool exhausted", "top_k": 3})
LOOKUP_B = json.dumps({"query": "slow queries", "top_k": 3})
Parts = tuple[ToolBoundary, InMemoryCanonicalStore, InMemoryAuditStore]


@pytest.fixture
async def parts() -> AsyncIterator[Parts]:
    """A real boundary with the real knowledge tool over the demo runbooks."""
    tool = KnowledgeTool(DEMO_DATA / "knowledge")
    canonical = InMemoryCanonicalStore()
    audit = InMemoryAuditStore()
    yield ToolBoundary({ToolName.LOOKUP_KNOWLEDGE: tool}, canonical, audit), canonical, audit
    tool.close()


def answerer(model: ScriptedChatModel, parts: Parts) -> KnowledgeAnswerer:
    boundary, canonical, audit = parts
    return KnowledgeAnswerer(model, "m", boundary, PromptLibrary(PROMPTS_DIR), canonical, audit)


def returned(request: ModelRequest) -> list[dict[str, Any]]:
    """Projections the model got back so far."""
    return [json.loads(m["content"]) for m in request.messages if m["role"] == "tool"]


def cite_first_doc(request: ModelRequest) -> Any:
    """Submit an answer citing the first doc of the first lookup, with its real tool_call_id."""
    projection = returned(request)[0]
    doc = projection["evidence_blocks"][0]["doc"]
    answer = {"answer": f"The runbook {doc} describes pool exhaustion.",
              "citations": [{"tool_call_id": projection["tool_call_id"], "doc": doc}]}
    return reply(calls=[("s1", "submit_knowledge_answer", json.dumps(answer))])


def submit_citing(call_id: str, doc: str) -> Any:
    answer = {"answer": "The runbook says to check long transactions.", "citations": [{"tool_call_id": call_id, "doc": doc}]}
    return reply(calls=[("s1", "submit_knowledge_answer", json.dumps(answer))])


async def test_verified_citation_gives_success(parts: Any) -> None:
    """A citation of a real FOUND lookup of this run naming a doc in its results is verified: SUCCESS."""
    model = ScriptedChatModel([reply(calls=[("k1", "lookup_knowledge", LOOKUP)]), cite_first_doc])
    ctx, timeline = make_ctx("what does the runbook say about HikariCP exhaustion?")
    outcome = await answerer(model, parts).answer(ctx)
    assert outcome.outcome is Outcome.SUCCESS
    assert outcome.intent == "KNOWLEDGE"
    assert outcome.knowledge is not None
    assert outcome.knowledge.answer is not None
    assert outcome.knowledge.answer.citations[0].doc == HIKARI_DOC
    assert HIKARI_DOC in outcome.knowledge.documents_found
    assert model.requests[0].tool_names == ["lookup_knowledge", "submit_knowledge_answer"]
    assert model.requests[0].messages[0]["content"].startswith("# Knowledge Answer")
    assert len(timeline.of(EventType.MODEL_CALL)) == 2


async def test_identical_repeated_lookups_cost_one_lookup(parts: Any) -> None:
    """Two identical lookups with one reused id: one record, two unique wire ids, the second answered from the first."""
    model = ScriptedChatModel([reply(calls=[("k", "lookup_knowledge", LOOKUP), ("k", "lookup_knowledge", LOOKUP)]),
                               cite_first_doc])
    _, canonical, _ = parts
    ctx, _ = make_ctx("hikari runbook?")
    outcome = await answerer(model, parts).answer(ctx)
    assert outcome.outcome is Outcome.SUCCESS
    wire = [m["tool_call_id"] for m in model.requests[1].messages if m["role"] == "tool"]
    assert len(set(wire)) == 2
    assert [p["tool_call_id"] for p in returned(model.requests[1])] == [wire[0], wire[0]]
    assert [r.tool_call_id for r in await canonical.list_run(ctx.run_id)] == [wire[0]]


async def test_fabricated_call_id_is_unverified(parts: Any) -> None:
    """Citing a tool_call_id that is not a call of this run gives SAFE_FALLBACK KNOWLEDGE_UNVERIFIED with the docs found."""
    model = ScriptedChatModel([reply(calls=[("k1", "lookup_knowledge", LOOKUP)]), submit_citing("k999", HIKARI_DOC)])
    ctx, _ = make_ctx("what does the runbook say about HikariCP?")
    outcome = await answerer(model, parts).answer(ctx)
    assert outcome.outcome is Outcome.SAFE_FALLBACK
    assert outcome.fallback_type is FallbackType.KNOWLEDGE_UNVERIFIED
    assert outcome.knowledge is not None
    assert outcome.knowledge.answer is None
    assert HIKARI_DOC in outcome.knowledge.documents_found
    assert outcome.fallback is not None
    assert outcome.fallback.reason == "The answer cited runbook sections that this run's lookups did not return."


async def test_doc_not_in_that_calls_results_is_unverified(parts: Any) -> None:
    """A real call id with a doc it did not return does not verify."""
    model = ScriptedChatModel([reply(calls=[("k1", "lookup_knowledge", LOOKUP)]), submit_citing("k1", "runbooks/made-up.md")])
    ctx, _ = make_ctx("what does the runbook say about HikariCP?")
    outcome = await answerer(model, parts).answer(ctx)
    assert outcome.fallback_type is FallbackType.KNOWLEDGE_UNVERIFIED
    assert outcome.fallback is not None
    assert "did not return" in outcome.fallback.reason


async def test_no_evidence_lookup_is_not_a_source(parts: Any) -> None:
    """A lookup that found nothing cannot be cited."""
    nothing = json.dumps({"query": "zzqqxx quantum flux capacitor"})
    model = ScriptedChatModel([reply(calls=[("k1", "lookup_knowledge", nothing)]), submit_citing("k1", HIKARI_DOC)])
    ctx, _ = make_ctx("flux capacitor runbook?")
    outcome = await answerer(model, parts).answer(ctx)
    assert outcome.fallback_type is FallbackType.KNOWLEDGE_UNVERIFIED
    assert returned(model.requests[1])[0]["evidence_status"] == "NO_EVIDENCE"
    assert outcome.knowledge is not None
    assert outcome.knowledge.documents_found == []


async def test_answer_without_citations_is_unverified(parts: Any) -> None:
    """An answer with no citations is never a verified answer."""
    answer = json.dumps({"answer": "Restart it.", "citations": []})
    model = ScriptedChatModel([reply(calls=[("s1", "submit_knowledge_answer", answer)])])
    ctx, _ = make_ctx("runbook for restarts?")
    outcome = await answerer(model, parts).answer(ctx)
    assert outcome.fallback_type is FallbackType.KNOWLEDGE_UNVERIFIED
    assert outcome.fallback is not None
    assert outcome.fallback.reason == "The answer cited no runbook, so it could not be checked."


async def test_other_tools_are_not_offered_or_run(parts: Any) -> None:
    """A call of query_logs on the knowledge path is a wire-format mistake and never reaches a tool."""
    model = ScriptedChatModel([reply(calls=[("x1", "query_logs", '{"service": "a", "query": "b"}')]),
                               reply(calls=[("x2", "query_mysql", '{"sql": "SELECT 1"}')])])
    _, canonical, _ = parts
    ctx, _ = make_ctx("runbook?")
    outcome = await answerer(model, parts).answer(ctx)
    assert outcome.fallback_type is FallbackType.KNOWLEDGE_UNVERIFIED
    assert await canonical.list_run(ctx.run_id) == []
    assert "unknown function 'query_logs'" in model.requests[1].messages[-1]["content"]


async def test_prose_gets_one_correction_then_the_answer_verifies(parts: Any) -> None:
    """Prose first gets a corrective user message; a correct lookup + submit afterwards still verifies."""
    model = ScriptedChatModel([reply("The runbook says restart."), reply(calls=[("k1", "lookup_knowledge", LOOKUP)]),
                               cite_first_doc])
    ctx, _ = make_ctx("hikari runbook?")
    outcome = await answerer(model, parts).answer(ctx)
    assert outcome.outcome is Outcome.SUCCESS
    assert model.requests[1].messages[-1]["role"] == "user"


async def test_invalid_answer_twice_is_unverified(parts: Any) -> None:
    """Two malformed submits end the path without a verified answer."""
    model = ScriptedChatModel([reply(calls=[("s1", "submit_knowledge_answer", "{bad")]),
                               reply(calls=[("s2", "submit_knowledge_answer", '{"answer": 5}')])])
    ctx, _ = make_ctx("hikari runbook?")
    outcome = await answerer(model, parts).answer(ctx)
    assert outcome.fallback_type is FallbackType.KNOWLEDGE_UNVERIFIED
    assert outcome.fallback is not None
    assert "required format" in outcome.fallback.reason


async def test_model_down_is_unverified(parts: Any) -> None:
    """A model that cannot be reached gives KNOWLEDGE_UNVERIFIED (model_unavailable)."""
    model = ScriptedChatModel([ModelUnavailable("down")])
    ctx, _ = make_ctx("hikari runbook?")
    outcome = await answerer(model, parts).answer(ctx)
    assert outcome.fallback is not None
    assert "could not be reached" in outcome.fallback.reason


async def test_reasoning_goes_to_the_audit(parts: Any) -> None:
    """Knowledge-path reasoning is stored per step, 'unavailable' when absent."""
    _, _, audit = parts
    model = ScriptedChatModel([reply(calls=[("k1", "lookup_knowledge", LOOKUP)], reasoning="ponder"), cite_first_doc])
    ctx, _ = make_ctx("hikari runbook?")
    await answerer(model, parts).answer(ctx)
    assert await audit.reasoning(ctx.run_id) == [("knowledge", 1, "ponder"), ("knowledge", 2, "unavailable")]


async def test_tool_budget_of_the_real_boundary_ends_the_path(parts: Any) -> None:
    """With max_tool_calls=1 the second lookup is refused and the path ends unverified (budget_tool_calls)."""
    model = ScriptedChatModel([reply(calls=[("k1", "lookup_knowledge", LOOKUP)]),
                               reply(calls=[("k2", "lookup_knowledge", LOOKUP_B)]), cite_first_doc])
    ctx, _ = make_ctx("hikari runbook?", max_tool_calls=1)
    outcome = await answerer(model, parts).answer(ctx)
    assert outcome.fallback is not None
    assert "tool-call budget ran out" in outcome.fallback.reason
    assert outcome.knowledge is not None
    assert HIKARI_DOC in outcome.knowledge.documents_found
