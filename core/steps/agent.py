"""DiagnosisAgent: the ReAct loop that calls read-only tools through the ToolBoundary and submits one DiagnosisDraft."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from core.contracts.draft import DiagnosisDraft
from core.contracts.evidence import ToolName
from core.contracts.release import PublishedReport
from core.contracts.run import EventType
from core.llm.model import ChatModel, ModelReply, ModelToolCall, ModelUnavailable
from core.llm.prompts import PromptLibrary
from core.llm.wire import assistant_message, decode_arguments, system_message, tool_message, user_message
from core.ports import AuditStore
from core.service.run_context import CancelScope, RunContext
from core.steps.schemas import SUBMIT_DIAGNOSIS, diagnosis_tools

log = logging.getLogger(__name__)

T = TypeVar("T")
StopReason = Literal[
    "submitted", "budget_steps", "budget_tool_calls", "budget_observation", "deadline", "cancelled",
    "model_unavailable", "wire_format",
]
DEADLINE_SLACK_S = 0.05
TOOL_NAMES = frozenset(t.value for t in ToolName)
PREVIOUS_REPORT_LABEL = "Previous published report, not evidence for this run; its tool_call_ids are not citable"
CORRECTION_PROSE = (
    "Wire-format error: answer only with function calls. Call the tools you need, then call "
    f"{SUBMIT_DIAGNOSIS} exactly once with the whole draft. Do not answer in prose."
)


class ToolInvoker(Protocol):
    """The ToolBoundary as the agent sees it: never raises for bad input, returns the projection JSON."""

    async def invoke(
        self, ctx: RunContext, tool_call_id: str | None, name: str, arguments: str | dict[str, Any]
    ) -> dict[str, Any]: ...


class AgentResult(BaseModel):
    """How the agent loop ended: the submitted draft (if any) and why it stopped."""

    draft: DiagnosisDraft | None = None
    stop_reason: StopReason
    steps: int = 0
    tool_calls: int = 0


class LoopStopped(Exception):
    """Raised inside a loop to end it with a stop reason."""

    def __init__(self, reason: StopReason) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class _StepOutcome:
    draft: DiagnosisDraft | None = None
    mistakes: list[str] = field(default_factory=list)
    budget_stop: StopReason | None = None


async def race(ctx: RunContext, work: Awaitable[T]) -> T:
    """Await work, but stop at once on cancellation (→ 'cancelled') or at the run's deadline (→ 'deadline').

    Work runs in the current task; a cancel or the deadline cancels it there (no helper tasks per await).
    """
    with CancelScope(ctx.cancelled) as scope:
        deadline = asyncio.timeout(ctx.seconds_left())
        try:
            async with deadline:
                result = await work
        except TimeoutError:
            if deadline.expired():
                raise LoopStopped("deadline") from None
            raise
    if scope.cancelled_caught:
        raise LoopStopped("cancelled")
    return result


def render_previous_report(report: PublishedReport) -> str:
    """The previous published report as labelled context (never evidence)."""
    body = json.dumps(report.model_dump(mode="json"), ensure_ascii=False)
    return f"{PREVIOUS_REPORT_LABEL}:\n{body}"


def validation_summary(exc: ValidationError, limit: int = 8) -> str:
    """A short, safe list of schema errors (location and message, never the input values)."""
    parts = [f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors(include_input=False)]
    more = f" (+{len(parts) - limit} more)" if len(parts) > limit else ""
    return "; ".join(parts[:limit]) + more


class DiagnosisAgent:
    """Plans, calls tools and writes the whole draft; budgets are enforced by the ToolBoundary and this loop's limits."""

    def __init__(
        self,
        model: ChatModel,
        model_name: str,
        boundary: ToolInvoker,
        prompts: PromptLibrary,
        audit: AuditStore,
        *,
        call_timeout_s: float = 60.0,
        corrective_turns: int = 1,
    ) -> None:
        self.model = model
        self.model_name = model_name
        self.boundary = boundary
        self.prompts = prompts
        self.audit = audit
        self.call_timeout_s = call_timeout_s
        self.corrective_turns = corrective_turns
        self._tools = diagnosis_tools()

    async def run(self, ctx: RunContext, previous_report: PublishedReport | None) -> AgentResult:
        """Run the ReAct loop until a draft is submitted or a budget, the deadline, cancel or the model stops it."""
        user = ctx.query if previous_report is None else f"{ctx.query}\n\n---\n{render_previous_report(previous_report)}"
        messages = [system_message(self.prompts.get("diagnosis_agent")), user_message(user)]
        state = _LoopState()
        try:
            while True:
                self._check_limits(ctx, state)
                outcome = await self._step(ctx, messages, state)
                if outcome.draft is not None:
                    return self._result(outcome.draft, "submitted", ctx, state)
                if outcome.budget_stop is not None:
                    raise LoopStopped(outcome.budget_stop)
                if outcome.mistakes:
                    state.mistakes += 1
                    if state.mistakes > self.corrective_turns:
                        raise LoopStopped("wire_format")
        except LoopStopped as stop:
            log.info("agent stopped run=%s reason=%s steps=%d", ctx.run_id, stop.reason, state.steps)
            return self._result(None, stop.reason, ctx, state)

    def _check_limits(self, ctx: RunContext, state: _LoopState) -> None:
        if ctx.cancelled.is_set():
            raise LoopStopped("cancelled")
        if ctx.seconds_left() <= 0:
            raise LoopStopped("deadline")
        if state.steps >= ctx.budgets.max_steps:
            raise LoopStopped("budget_steps")
        if max(ctx.observation_bytes, state.observation_bytes) >= ctx.budgets.max_observation_bytes:
            raise LoopStopped("budget_observation")

    async def _step(self, ctx: RunContext, messages: list[dict[str, Any]], state: _LoopState) -> _StepOutcome:
        state.steps += 1
        ctx.steps = state.steps
        if ctx.progress is not None:
            await ctx.progress.update(ctx.run_id, "drafting", {"step": state.steps})
        reply = await self._call_model(ctx, messages, state.steps)
        outcome = _StepOutcome()
        if not reply.tool_calls:
            messages.append({"role": "assistant", "content": reply.content or ""})
            messages.append(user_message(CORRECTION_PROSE))
            outcome.mistakes.append("no function call")
            return outcome

        positions = [i for i, c in enumerate(reply.tool_calls) if c.name in TOOL_NAMES]
        results: list[dict[str, Any]] = []
        if len(positions) == 1:  # one call needs no gather (and no task)
            results.append(await race(ctx, self._invoke(ctx, reply.tool_calls[positions[0]], outcome)))
        elif positions:
            results = await race(ctx, asyncio.gather(*(self._invoke(ctx, reply.tool_calls[i], outcome) for i in positions)))
        projections = dict(zip(positions, results, strict=True))  # by position: identical calls may repeat
        answers: dict[int, dict[str, Any]] = {}
        wire_ids: list[str] = []
        for index, call in enumerate(reply.tool_calls):
            if index in projections:
                projection = projections[index]
                wire_id = str(projection.get("tool_call_id") or state.wire_id(call.id))
                state.used_ids.add(wire_id)
                answers[index] = tool_message(wire_id, projection)
                state.note_projection(projection, outcome, ctx, answers[index]["content"])
            else:
                wire_id = state.wire_id(call.id)
                answers[index] = tool_message(wire_id, self._handle_other(call, outcome))
            wire_ids.append(wire_id)
        messages.append(assistant_message(reply.content, reply.tool_calls, wire_ids))
        messages.extend(answers[i] for i in range(len(reply.tool_calls)))
        if outcome.draft is not None:
            await ctx.timeline.record(EventType.DRAFT_SUBMITTED, _draft_summary(outcome.draft))
        return outcome

    async def _call_model(self, ctx: RunContext, messages: list[dict[str, Any]], step: int) -> ModelReply:
        started = time.monotonic()
        timeout_s = max(0.001, min(self.call_timeout_s, ctx.seconds_left()))
        try:
            reply = await race(
                ctx, self.model.complete(model=self.model_name, messages=messages, tools=self._tools, timeout_s=timeout_s)
            )
        except ModelUnavailable as exc:
            await ctx.timeline.record(
                EventType.MODEL_CALL,
                {"stage": "agent", "model": self.model_name, "step": step, "error": "model_unavailable",
                 "status_code": exc.status_code},
                (time.monotonic() - started) * 1000,
            )
            # A transport timeout cut short by the run's own deadline is the deadline, not a model failure.
            raise LoopStopped("deadline" if ctx.seconds_left() <= DEADLINE_SLACK_S else "model_unavailable") from None
        await ctx.timeline.record(
            EventType.MODEL_CALL,
            {"stage": "agent", "model": self.model_name, "step": step, "tool_calls": len(reply.tool_calls),
             "finish_reason": reply.finish_reason},
            (time.monotonic() - started) * 1000,
        )
        await self.audit.record_reasoning(ctx.run_id, "agent", step, reply.reasoning)
        return reply

    async def _invoke(self, ctx: RunContext, call: ModelToolCall, outcome: _StepOutcome) -> dict[str, Any]:
        if decode_arguments(call.arguments) is None:
            outcome.mistakes.append(f"{call.name}: arguments are not a JSON object")
        return await self.boundary.invoke(ctx, call.id, call.name, call.arguments)

    def _handle_other(self, call: ModelToolCall, outcome: _StepOutcome) -> str:
        """Answer a non-tool call: accept a valid submit, or explain the wire-format mistake."""
        if call.name != SUBMIT_DIAGNOSIS:
            outcome.mistakes.append(f"unknown function {call.name!r}")
            available = ", ".join([*sorted(TOOL_NAMES), SUBMIT_DIAGNOSIS])
            return f"Wire-format error: unknown function {call.name!r}. Available: {available}."
        arguments = decode_arguments(call.arguments)
        if arguments is None:
            outcome.mistakes.append("draft arguments are not a JSON object")
            return f"Wire-format error: the arguments of {SUBMIT_DIAGNOSIS} must be one JSON object. Submit again."
        try:
            draft = DiagnosisDraft.model_validate(arguments)
        except ValidationError as exc:
            outcome.mistakes.append("draft schema violation")
            return f"Wire-format error: the draft violates its schema ({validation_summary(exc)}). Submit a corrected draft."
        if outcome.draft is None:
            outcome.draft = draft
        return "Draft received."

    def _result(self, draft: DiagnosisDraft | None, reason: StopReason, ctx: RunContext, state: _LoopState) -> AgentResult:
        return AgentResult(draft=draft, stop_reason=reason, steps=state.steps, tool_calls=state.tool_calls)


class _LoopState:
    """Counters of one run of the loop."""

    def __init__(self) -> None:
        self.steps = 0
        self.mistakes = 0
        self.tool_calls = 0
        self.observation_bytes = 0
        self.used_ids: set[str] = set()

    def wire_id(self, model_id: str | None) -> str:
        """The id to send back on the wire: the model's own when unused, else a fresh one."""
        chosen = model_id if model_id and model_id not in self.used_ids else f"call_{uuid.uuid4().hex[:16]}"
        self.used_ids.add(chosen)
        return chosen

    def note_projection(
        self, projection: dict[str, Any], outcome: _StepOutcome, ctx: RunContext, wire_text: str | None = None
    ) -> None:
        """Count a projection; wire_text, when given, is its tool_message content (saves encoding it again)."""
        self.tool_calls += 1
        if wire_text is None:
            self.observation_bytes += len(json.dumps(projection, default=str).encode())
        else:
            self.observation_bytes += ascii_json_size(wire_text)
        error = projection.get("error") or {}
        code = str(error.get("code", "")) if isinstance(error, dict) else ""
        if "BUDGET" in code:
            outcome.budget_stop = budget_stop_reason(ctx)


def ascii_json_size(text: str) -> int:
    """len(json.dumps(v, default=str).encode()) given text = json.dumps(v, ensure_ascii=False, default=str).

    The two encodings differ only in escaping: with ensure_ascii every character from U+007F up is written as
    \\uXXXX (6 bytes), or as a surrogate pair (12 bytes) above U+FFFF, where the other writes the character itself.
    """
    size = len(text) + 5 * text.count("\x7f")
    if not text.isascii():
        size += sum(5 if ord(c) < 0x10000 else 11 for c in text if ord(c) > 0x7F)
    return size


def budget_stop_reason(ctx: RunContext) -> StopReason:
    """Which budget a BUDGET_EXHAUSTED answer of the boundary ran into."""
    if ctx.tool_calls >= ctx.budgets.max_tool_calls:
        return "budget_tool_calls"
    if ctx.seconds_left() <= 0:
        return "deadline"
    return "budget_observation"


def _draft_summary(draft: DiagnosisDraft) -> dict[str, Any]:
    return {
        "analyses": len(draft.analysis),
        "actions": len(draft.action_plan),
        "recommendations": len(draft.recommendations),
        "has_conclusion": draft.conclusion is not None,
    }
