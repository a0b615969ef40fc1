"""Model steps end in time: timeouts come from the run's deadline, and every call — even one cut off — is on the trace."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from core.contracts.release import SemanticVerdictKind
from core.contracts.run import EventType, StopReason
from core.llm.model import ModelReply
from core.llm.model_step import ModelStep
from core.llm.prompts import PromptLibrary
from core.release.release import POST_MARGIN_S, review_time_s
from core.run import call_timeout
from core.settings import PROMPTS_DIR
from core.steps.agent import DiagnosisAgent
from core.steps.judge import LlmSemanticJudge
from testkit.models import ScriptedChatModel, reply
from tests.fakes.agent_doubles import FakeBoundary, RecordingAudit, RecordingTimeline, make_ctx
from tests.unit.test_semantic_guard import DRAFT, snapshot
from tests.waiting import until


class HangingModel:
    """A model endpoint that accepts the request and never answers (ignores its timeout, like a stuck proxy)."""

    def __init__(self) -> None:
        self.timeouts: list[float] = []

    async def complete(self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                       timeout_s: float = 60.0) -> ModelReply:
        self.timeouts.append(timeout_s)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


@pytest.fixture
def prompts() -> PromptLibrary:
    return PromptLibrary(PROMPTS_DIR)


def test_a_call_gets_the_smaller_of_its_setting_and_the_time_left() -> None:
    """Per-call timeout: the setting, capped by what is left of the run minus the later stages' reserve."""
    assert call_timeout(60.0, None) == 60.0
    assert call_timeout(60.0, 10.0) == 10.0
    assert call_timeout(60.0, 10.0, reserve_s=4.0) == 6.0
    assert 0 < call_timeout(60.0, -5.0) < 0.01


async def test_a_hanging_reviewer_ends_unavailable_within_the_time_it_was_given(prompts: PromptLibrary) -> None:
    """Three attempts share the time left: a reviewer that never answers gives UNAVAILABLE in about that time."""
    model = HangingModel()
    timeline = RecordingTimeline()
    judge = LlmSemanticJudge(model, "g", prompts, max_attempts=3, timeout_s=60.0)
    started = time.monotonic()
    verdict = await judge.judge("q", DRAFT, snapshot(), time_left_s=0.6, timeline=timeline)
    elapsed = time.monotonic() - started
    assert verdict.verdict is SemanticVerdictKind.UNAVAILABLE
    assert elapsed < 1.5
    assert all(t <= 0.6 for t in model.timeouts)
    calls = timeline.of(EventType.MODEL_CALL)
    assert calls
    assert all(c["stage"] == "semantic_guard" and c["error"] == "model_unavailable" for c in calls)


def test_the_review_budget_leaves_the_posting_margin_before_the_deadline() -> None:
    """With time to spare the review ends POST_MARGIN_S before the deadline; at the deadline it still gets a floor."""
    assert review_time_s(100.0) == 100.0 - POST_MARGIN_S
    assert review_time_s(0.0) > 0


async def test_an_agent_call_cut_off_by_the_deadline_is_on_the_trace(prompts: PromptLibrary) -> None:
    """The model call running when the deadline passes is recorded as cut off, with its duration."""
    ctx, timeline = make_ctx(deadline_s=0.3)
    agent = DiagnosisAgent(HangingModel(), "m", FakeBoundary(), prompts, RecordingAudit())
    result = await agent.run(ctx, None)
    assert result.stop_reason is StopReason.DEADLINE
    (event,) = [(s, d) for t, s, d in timeline.events if t is EventType.MODEL_CALL]
    assert event[0]["cut_off"] == "deadline"
    assert event[1] >= 250


async def test_an_agent_call_cut_off_by_a_cancel_is_on_the_trace(prompts: PromptLibrary) -> None:
    """A cancel during a model call ends the loop CANCELLED and records the call as cut off."""
    ctx, timeline = make_ctx()
    agent = DiagnosisAgent(HangingModel(), "m", FakeBoundary(), prompts, RecordingAudit())
    asyncio.get_running_loop().call_later(0.1, ctx.cancelled.set)
    result = await agent.run(ctx, None)
    assert result.stop_reason is StopReason.CANCELLED
    assert timeline.of(EventType.MODEL_CALL)[0]["cut_off"] == "cancelled"


async def test_a_call_cut_off_by_the_services_backstop_is_recorded_then_cancelled() -> None:
    """An outer cancellation (the service's hard backstop) still leaves the MODEL_CALL event, then propagates."""
    timeline = RecordingTimeline()
    model = HangingModel()
    step = ModelStep(model, "m", "router", timeout_s=60.0)
    task = asyncio.ensure_future(step.call([], None, step=1, timeline=timeline))
    await until(lambda: bool(model.timeouts), message="the model call to be sent")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert timeline.of(EventType.MODEL_CALL) == [{"stage": "router", "model": "m", "step": 1, "cut_off": "cancelled"}]


async def test_the_agent_timeout_setting_reaches_the_endpoint(prompts: PromptLibrary) -> None:
    """DIAG_MODEL_TIMEOUT_S-style settings reach each call, capped by the run's deadline."""
    submit = json.dumps({"analysis": [{"analysis_id": "a1", "kind": "NORMAL", "text": "x", "tool_call_ids": ["c"]}],
                         "limitations": {"scope": "s"}})
    model = ScriptedChatModel([reply(calls=[("s", "submit_diagnosis_draft", submit)])])
    ctx, _ = make_ctx(deadline_s=500.0)
    await DiagnosisAgent(model, "m", FakeBoundary(), prompts, RecordingAudit(), call_timeout_s=7.0).run(ctx, None)
    assert model.requests[0].timeout_s == 7.0
