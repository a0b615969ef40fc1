"""ModelStep: the one way a stage calls the model (agent, knowledge, repair, judge, router).

Each call gets the smaller of the stage's timeout setting and the time the run has left (minus what the
later stages need), a MODEL_CALL timeline event — also when the call is cut off by the deadline or a cancel —
the reasoning audit, and one exception for "no answer": ModelUnavailable.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

from core.contracts.run import EventType, StopReason
from core.llm.model import ModelReply, ModelUnavailable
from core.llm.text_calls import calls_in_text, data_texts, implied_submit
from core.ports import AuditStore, ChatModel, Timeline
from core.run import DeadlinePassed, RunCancelled, RunContext, bounded, call_timeout

log = logging.getLogger(__name__)

T = TypeVar("T")
DEADLINE_SLACK_S = 0.05


class LoopStopped(Exception):
    """Raised inside a loop to end it with a stop reason."""

    def __init__(self, reason: StopReason) -> None:
        super().__init__(reason.value)
        self.reason = reason


async def race(ctx: RunContext, work: Awaitable[T]) -> T:
    """Await work, but stop at once on cancellation (→ CANCELLED) or at the run's deadline (→ DEADLINE).

    Work runs in the current task; a cancel or the deadline cancels it there (no helper tasks per await).
    """
    try:
        return await bounded(work, ctx.cancelled, ctx.seconds_left())
    except RunCancelled:
        raise LoopStopped(StopReason.CANCELLED) from None
    except DeadlinePassed:
        raise LoopStopped(StopReason.DEADLINE) from None


class ModelStep:
    """One stage's model calls: bounded by settings and the run's deadline, recorded, audited."""

    def __init__(
        self,
        model: ChatModel,
        model_name: str,
        stage: str,
        *,
        timeout_s: float = 60.0,
        audit: AuditStore | None = None,
    ) -> None:
        self.model = model
        self.model_name = model_name
        self.stage = stage
        self.timeout_s = timeout_s
        self.audit = audit

    async def call(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        step: int,
        run_id: str | None = None,
        timeline: Timeline | None = None,
        time_left_s: float | None = None,
        reserve_s: float = 0.0,
        ctx: RunContext | None = None,
    ) -> ModelReply:
        """One completion. With ctx, a cancel or the run's deadline ends it as LoopStopped; otherwise the timeout
        (setting, capped by time_left_s - reserve_s) bounds the whole call, retries included → ModelUnavailable."""
        if ctx is not None:
            time_left_s = ctx.seconds_left() if time_left_s is None else time_left_s
            timeline = timeline or ctx.timeline
            run_id = run_id or ctx.run_id
        timeout_s = call_timeout(self.timeout_s, time_left_s, reserve_s)
        started = time.monotonic()
        summary: dict[str, Any] = {"stage": self.stage, "model": self.model_name, "step": step}
        try:
            reply = await self._complete(messages, tools, timeout_s, ctx)
        except LoopStopped as stop:
            await _record(timeline, {**summary, "cut_off": stop.reason.value}, started)
            raise
        except ModelUnavailable as exc:
            # A transport timeout cut short by the run's own deadline is the deadline, not a model failure.
            if ctx is not None and ctx.seconds_left() <= DEADLINE_SLACK_S:
                await _record(timeline, {**summary, "cut_off": StopReason.DEADLINE.value}, started)
                raise LoopStopped(StopReason.DEADLINE) from None
            await _record(timeline, {**summary, "error": "model_unavailable", "status_code": exc.status_code}, started)
            if ctx is not None:
                raise LoopStopped(StopReason.MODEL_UNAVAILABLE) from None
            raise
        except asyncio.CancelledError:
            await asyncio.shield(_record(timeline, {**summary, "cut_off": "cancelled"}, started))
            raise
        summary.update({"tool_calls": len(reply.tool_calls), "finish_reason": reply.finish_reason})
        if tools and not reply.tool_calls:
            reply, found = read_text_calls(reply, messages, tools)
            summary.update(found)
        await _record(timeline, summary, started)
        if self.audit is not None and run_id is not None:
            await self.audit.record_reasoning(run_id, self.stage, step, reply.reasoning)
        return reply

    async def _complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, timeout_s: float, ctx: RunContext | None
    ) -> ModelReply:
        work = self.model.complete(model=self.model_name, messages=messages, tools=tools, timeout_s=timeout_s)
        bounded = asyncio.timeout(timeout_s)
        try:
            async with bounded:
                return await (race(ctx, work) if ctx is not None else work)
        except TimeoutError:
            if bounded.expired():
                raise ModelUnavailable(f"the {self.stage} model call timed out after {timeout_s:.1f} s") from None
            raise


def read_text_calls(
    reply: ModelReply, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
) -> tuple[ModelReply, dict[str, Any]]:
    """A reply that should carry tool calls but has none: the calls written in its content, if any (validated later by
    the caller exactly like native ones), or else the arguments of an offered submit function written without its
    name, and what the timeline records about them."""
    given = data_texts(messages)
    found = calls_in_text(reply.content, given)
    if not found.calls and not found.echoed and tools:
        implied = implied_submit(reply.content, tools, given)
        if implied.calls or implied.echoed:
            found = implied
    notes: dict[str, Any] = {}
    if found.echoed:
        notes["echoed_calls_ignored"] = found.echoed
    if found.too_long:
        notes["content_too_long_for_calls"] = True
    if not found.calls:
        return reply, notes
    notes.update({"tool_calls": len(found.calls), "calls_from_text": found.format})
    parsed = reply.model_copy(update={"tool_calls": found.calls, "content": found.remainder or None,
                                      "calls_from_text": found.format})
    return parsed, notes


async def _record(timeline: Timeline | None, summary: dict[str, Any], started: float) -> None:
    """Record a MODEL_CALL event; a failing timeline never fails the call it describes."""
    if timeline is None:
        return
    try:
        await timeline.record(EventType.MODEL_CALL, summary, (time.monotonic() - started) * 1000)
    except Exception as exc:
        log.warning("could not record a model call event (%s)", type(exc).__name__)
