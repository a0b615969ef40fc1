"""LlmSemanticJudge: isolated input, strict verdict parsing, bounded retries, and input-cap shortening."""

from __future__ import annotations

import json

import pytest

from core.contracts.draft import Analysis, AnalysisKind, DiagnosisDraft, Limitations
from core.contracts.release import SemanticVerdictKind, VerifiedEvidenceSnapshot, Violation
from core.llm.model import ModelUnavailable
from core.llm.prompts import PromptLibrary
from core.settings import PROMPTS_DIR
from core.steps.judge import SHORTENED_MARK, LlmSemanticJudge, build_judge_input, parse_verdict
from core.stores.memory import InMemoryAuditStore
from testkit.models import ScriptedChatModel, reply

DRAFT = DiagnosisDraft(
    analysis=[Analysis(analysis_id="a1", kind=AnalysisKind.NORMAL, text="order-service logged 2 pool timeouts " + "y" * 900,
                       tool_call_ids=["c1"])],
    limitations=Limitations(scope="order-service logs"),
)
SUPPORTED = '{"verdict": "SUPPORTED", "reason": "the logs show the timeouts"}'


def snapshot(lines: int = 2, message_chars: int = 50) -> VerifiedEvidenceSnapshot:
    """A snapshot with one logs projection of `lines` lines of `message_chars` characters."""
    logs = [{"timestamp": f"2026-11-29T23:0{i % 10}:00Z", "service": "order-service", "level": "ERROR",
             "message": "timeout " + "x" * message_chars, "fields": {}} for i in range(lines)]
    projection = {"tool_call_id": "c1", "tool_name": "query_logs", "evidence_status": "EVIDENCE_FOUND",
                  "count": lines, "truncated": False, "logs": logs}
    return VerifiedEvidenceSnapshot(run_id="run_1", projections={"c1": projection}, rule_set_version="r1",
                                    warnings=[Violation(code="NUMBER_WEAK", path="analysis[0]", message="weak")])


@pytest.fixture
def prompts() -> PromptLibrary:
    return PromptLibrary(PROMPTS_DIR)


async def test_supported_verdict_from_a_single_isolated_call(prompts: PromptLibrary) -> None:
    """One call, no tools, system = guard prompt, user = exactly query + draft + snapshot + warnings."""
    model = ScriptedChatModel([reply(SUPPORTED)])
    verdict = await LlmSemanticJudge(model, "guard-model", prompts).judge("why?", DRAFT, snapshot())
    assert verdict.verdict is SemanticVerdictKind.SUPPORTED
    assert verdict.reason == "the logs show the timeouts"
    (request,) = model.requests
    assert request.tools is None
    assert request.model == "guard-model"
    assert [m["role"] for m in request.messages] == ["system", "user"]
    assert request.messages[0]["content"] == prompts.get("semantic_guard")
    body = json.loads(request.messages[1]["content"])
    assert set(body) == {"query", "draft", "snapshot", "warnings"}
    assert body["draft"] == DRAFT.model_dump(mode="json")
    assert body["snapshot"]["projections"] == snapshot().projections
    assert body["warnings"] == [{"code": "NUMBER_WEAK", "path": "analysis[0]", "message": "weak"}]


async def test_unsupported_verdict_in_a_json_fence_is_accepted(prompts: PromptLibrary) -> None:
    """A ```json fenced answer is tolerated."""
    model = ScriptedChatModel([reply('```json\n{"verdict": "UNSUPPORTED", "reason": "says ruled out"}\n```')])
    verdict = await LlmSemanticJudge(model, "g", prompts).judge("q", DRAFT, snapshot())
    assert (verdict.verdict, verdict.reason) == (SemanticVerdictKind.UNSUPPORTED, "says ruled out")


@pytest.mark.parametrize(
    "content",
    [
        "SUPPORTED",
        'Sure! {"verdict": "SUPPORTED", "reason": "ok"}',
        '{"verdict": "MOSTLY_SUPPORTED", "reason": "ok"}',
        '{"verdict": "SUPPORTED", "reason": 3}',
        '["SUPPORTED"]',
        '{"verdict": "UNAVAILABLE", "reason": "x"}',
        None,
    ],
)
def test_malformed_answers_are_rejected(content: str | None) -> None:
    """Prose, prose around JSON, unknown verdicts, non-string reasons, non-objects and empty content are malformed."""
    assert parse_verdict(content, 4096) is None


def test_answer_over_the_output_cap_is_malformed() -> None:
    """A well-formed answer longer than the output cap is treated as malformed."""
    long = json.dumps({"verdict": "SUPPORTED", "reason": "r" * 5000})
    assert parse_verdict(long, 4096) is None
    assert parse_verdict(long, 10_000) is not None


async def test_malformed_then_valid_answer_is_retried(prompts: PromptLibrary) -> None:
    """A malformed answer is retried with the same frozen input and the next valid answer wins."""
    model = ScriptedChatModel([reply("I think it's fine"), reply(SUPPORTED)])
    verdict = await LlmSemanticJudge(model, "g", prompts).judge("q", DRAFT, snapshot())
    assert verdict.verdict is SemanticVerdictKind.SUPPORTED
    assert model.requests[0].messages == model.requests[1].messages


async def test_malformed_answers_until_max_attempts_give_unavailable(prompts: PromptLibrary) -> None:
    """Three malformed answers (incl. a tool call) exhaust max_attempts=3: UNAVAILABLE, no fourth call."""
    model = ScriptedChatModel([reply("nope"), reply(calls=[("x", "query_logs", "{}")]), reply("{}"), reply(SUPPORTED)])
    verdict = await LlmSemanticJudge(model, "g", prompts, max_attempts=3).judge("q", DRAFT, snapshot())
    assert verdict.verdict is SemanticVerdictKind.UNAVAILABLE
    assert "3 attempts" in verdict.reason
    assert model.remaining == 1


async def test_transport_errors_are_retried_then_unavailable(prompts: PromptLibrary) -> None:
    """ModelUnavailable counts as a failed attempt; after max_attempts the verdict is UNAVAILABLE."""
    model = ScriptedChatModel([ModelUnavailable("down", status_code=503), ModelUnavailable("down")])
    verdict = await LlmSemanticJudge(model, "g", prompts, max_attempts=2).judge("q", DRAFT, snapshot())
    assert verdict.verdict is SemanticVerdictKind.UNAVAILABLE
    assert "HTTP 503" in verdict.reason


async def test_transport_error_then_verdict_succeeds(prompts: PromptLibrary) -> None:
    """A transport error followed by a valid answer gives that answer."""
    model = ScriptedChatModel([ModelUnavailable("down"), reply(SUPPORTED)])
    verdict = await LlmSemanticJudge(model, "g", prompts).judge("q", DRAFT, snapshot())
    assert verdict.verdict is SemanticVerdictKind.SUPPORTED


async def test_reasoning_is_recorded_in_the_audit_only(prompts: PromptLibrary) -> None:
    """Provider reasoning of the guard call goes to the audit under the snapshot's run id, not into the verdict."""
    audit = InMemoryAuditStore()
    model = ScriptedChatModel([reply(SUPPORTED, reasoning="hidden thoughts")])
    verdict = await LlmSemanticJudge(model, "g", prompts, audit).judge("q", DRAFT, snapshot())
    assert "hidden" not in verdict.reason
    assert await audit.reasoning("run_1") == [("semantic_guard", 1, "hidden thoughts")]


def test_input_under_the_cap_is_not_shortened() -> None:
    """Small inputs go through unchanged."""
    body, shortened = build_judge_input("q", DRAFT, snapshot(), 96 * 1024)
    assert not shortened
    assert SHORTENED_MARK not in json.dumps(body)


def test_input_over_the_cap_shortens_snapshot_items_evenly_never_the_draft() -> None:
    """Over the cap, every long snapshot item is cut to the same length and marked; the draft stays intact."""
    big = snapshot(lines=40, message_chars=2000)
    cap = 16 * 1024
    body, shortened = build_judge_input("q", DRAFT, big, cap)
    assert shortened
    assert len(json.dumps(body, ensure_ascii=False).encode()) <= cap
    assert body["draft"] == DRAFT.model_dump(mode="json")
    messages = [line["message"] for line in body["snapshot"]["projections"]["c1"]["logs"]]
    assert len(messages) == 40
    assert all(m.endswith(SHORTENED_MARK) for m in messages)
    assert len({len(m) for m in messages}) == 1
    assert "shortened" in body["snapshot"]["note"]
    assert big.projections["c1"]["logs"][0]["message"].endswith("x")


def test_many_items_keep_the_same_leading_count_per_projection_and_say_how_many_were_omitted() -> None:
    """When even the shortest texts do not fit, every projection keeps the same number of items and counts the rest."""
    big = snapshot(lines=400, message_chars=100)
    two = VerifiedEvidenceSnapshot(run_id="run_1", rule_set_version="r1", projections={
        "c1": big.projections["c1"], "c2": dict(big.projections["c1"], tool_call_id="c2")})
    body, shortened = build_judge_input("q", DRAFT, two, 24 * 1024)
    assert shortened
    assert len(json.dumps(body, ensure_ascii=False).encode()) <= 24 * 1024
    kept = {cid: len(p["logs"]) for cid, p in body["snapshot"]["projections"].items()}
    assert kept["c1"] == kept["c2"]
    assert 1 <= kept["c1"] < 400
    assert body["snapshot"]["projections"]["c1"]["items_omitted_for_review"] == 400 - kept["c1"]
    assert body["snapshot"]["projections"]["c1"]["logs"][0]["message"].endswith(SHORTENED_MARK)
    assert body["draft"] == DRAFT.model_dump(mode="json")


async def test_judge_sends_the_shortened_input_when_over_the_cap(prompts: PromptLibrary) -> None:
    """The request the model receives respects the configured input cap."""
    model = ScriptedChatModel([reply(SUPPORTED)])
    judge = LlmSemanticJudge(model, "g", prompts, input_cap_bytes=20 * 1024)
    await judge.judge("q", DRAFT, snapshot(lines=40, message_chars=2000))
    user = model.requests[0].messages[1]["content"]
    assert len(user.encode()) <= 20 * 1024
    assert SHORTENED_MARK in user
