"""KnowledgeAnswerer: runbook questions answered from lookup_knowledge only, citations checked deterministically (SPEC §12)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from pydantic import ValidationError

from core.contracts.draft import KnowledgeAnswer
from core.contracts.evidence import CanonicalRecord, EvidenceStatus, InvocationState, ToolName
from core.contracts.release import FallbackType, KnowledgeResult, Outcome, ReleaseOutcome
from core.contracts.run import EventType
from core.llm.model import ChatModel, ModelReply, ModelUnavailable
from core.llm.prompts import PromptLibrary
from core.llm.wire import assistant_message, decode_arguments, system_message, tool_message, user_message
from core.ports import AuditStore, CanonicalStore
from core.release.fallback import build_fallback
from core.service.run_context import RunContext
from core.steps.agent import LoopStopped, StopReason, ToolInvoker, budget_stop_reason, race, validation_summary
from core.steps.schemas import SUBMIT_KNOWLEDGE, knowledge_tools

log = logging.getLogger(__name__)

LOOKUP = ToolName.LOOKUP_KNOWLEDGE.value
CORRECTION = f"Wire-format error: call {LOOKUP} if needed, then answer with exactly one call of {SUBMIT_KNOWLEDGE}."


def documents_found(records: list[CanonicalRecord]) -> list[str]:
    """Docs returned by this run's lookup_knowledge calls, in first-seen order."""
    docs: list[str] = []
    for record in records:
        if record.tool_name is not ToolName.LOOKUP_KNOWLEDGE or not record.projection:
            continue
        for block in record.projection.get("evidence_blocks") or []:
            doc = block.get("doc") if isinstance(block, dict) else None
            if isinstance(doc, str) and doc not in docs:
                docs.append(doc)
    return docs


async def citation_problems(canonical: CanonicalStore, run_id: str, answer: KnowledgeAnswer) -> list[str]:
    """Why the answer's citations do not verify (empty when every one is a FOUND lookup of this run showing that doc)."""
    if not answer.citations:
        return ["no citations"]
    records = await canonical.get_many(run_id, [c.tool_call_id for c in answer.citations])
    problems: list[str] = []
    for index, citation in enumerate(answer.citations):
        record = records.get(citation.tool_call_id)
        where = f"citations[{index}]"
        if record is None or record.run_id != run_id:
            problems.append(f"{where}: call not in this run")
        elif record.tool_name is not ToolName.LOOKUP_KNOWLEDGE:
            problems.append(f"{where}: not a {LOOKUP} call")
        elif record.state is not InvocationState.READY or record.evidence_status is not EvidenceStatus.EVIDENCE_FOUND:
            problems.append(f"{where}: call did not return evidence")
        elif not record.projection or record.projection.get("tool_call_id") != citation.tool_call_id:
            problems.append(f"{where}: projection missing or inconsistent")
        elif citation.doc not in documents_found([record]):
            problems.append(f"{where}: doc not in that call's results")
    return problems


class KnowledgeAnswerer:
    """Loop of lookup_knowledge calls ending with submit_knowledge_answer; only verified answers are SUCCESS."""

    def __init__(
        self,
        model: ChatModel,
        model_name: str,
        boundary: ToolInvoker,
        prompts: PromptLibrary,
        canonical: CanonicalStore,
        audit: AuditStore,
        *,
        max_steps: int = 6,
        call_timeout_s: float = 60.0,
    ) -> None:
        self.model = model
        self.model_name = model_name
        self.boundary = boundary
        self.prompts = prompts
        self.canonical = canonical
        self.audit = audit
        self.max_steps = max_steps
        self.call_timeout_s = call_timeout_s
        self._tools = knowledge_tools()

    async def answer(self, ctx: RunContext) -> ReleaseOutcome:
        """SUCCESS with a verified answer, else SAFE_FALLBACK KNOWLEDGE_UNVERIFIED with the documents found."""
        submitted, stop = await self._converse(ctx)
        records = [r for r in await self.canonical.list_run(ctx.run_id) if r.run_id == ctx.run_id]
        docs = documents_found(records)
        problems = await citation_problems(self.canonical, ctx.run_id, submitted) if submitted else []
        if submitted is not None and not problems:
            return ReleaseOutcome(run_id=ctx.run_id, intent="KNOWLEDGE", outcome=Outcome.SUCCESS,
                                  knowledge=KnowledgeResult(answer=submitted, documents_found=docs))
        reason = "; ".join(problems) if submitted is not None else f"no answer was submitted ({stop})"
        log.info("knowledge run=%s unverified: %s", ctx.run_id, reason)
        return ReleaseOutcome(
            run_id=ctx.run_id,
            intent="KNOWLEDGE",
            outcome=Outcome.SAFE_FALLBACK,
            fallback_type=FallbackType.KNOWLEDGE_UNVERIFIED,
            knowledge=KnowledgeResult(answer=None, documents_found=docs),
            fallback=build_fallback(records, "no verified answer from the runbooks", reason, run_id=ctx.run_id),
        )

    async def _converse(self, ctx: RunContext) -> tuple[KnowledgeAnswer | None, StopReason]:
        messages = [system_message(self.prompts.get("knowledge_answer")), user_message(ctx.query)]
        mistakes = 0
        step = 0
        try:
            while True:
                if ctx.cancelled.is_set():
                    raise LoopStopped("cancelled")
                if step >= min(self.max_steps, ctx.budgets.max_steps):
                    raise LoopStopped("budget_steps")
                step += 1
                reply = await self._call_model(ctx, messages, step)
                submitted, mistake, budget = await self._handle(ctx, reply, messages)
                if submitted is not None:
                    return submitted, "submitted"
                if budget:
                    raise LoopStopped(budget_stop_reason(ctx))
                if mistake:
                    mistakes += 1
                    if mistakes > 1:
                        raise LoopStopped("wire_format")
        except LoopStopped as stop:
            return None, stop.reason

    async def _call_model(self, ctx: RunContext, messages: list[dict[str, Any]], step: int) -> ModelReply:
        started = time.monotonic()
        timeout_s = max(0.001, min(self.call_timeout_s, ctx.seconds_left()))
        try:
            reply = await race(ctx, self.model.complete(model=self.model_name, messages=messages, tools=self._tools,
                                                        timeout_s=timeout_s))
        except ModelUnavailable:
            await ctx.timeline.record(EventType.MODEL_CALL, {"stage": "knowledge", "model": self.model_name, "step": step,
                                                             "error": "model_unavailable"}, (time.monotonic() - started) * 1000)
            raise LoopStopped("model_unavailable") from None
        await ctx.timeline.record(
            EventType.MODEL_CALL,
            {"stage": "knowledge", "model": self.model_name, "step": step, "tool_calls": len(reply.tool_calls),
             "finish_reason": reply.finish_reason},
            (time.monotonic() - started) * 1000,
        )
        await self.audit.record_reasoning(ctx.run_id, "knowledge", step, reply.reasoning)
        return reply

    async def _handle(
        self, ctx: RunContext, reply: ModelReply, messages: list[dict[str, Any]]
    ) -> tuple[KnowledgeAnswer | None, bool, bool]:
        """Run the step's lookups and read its submit: (answer, wire-format mistake, budget exhausted)."""
        if not reply.tool_calls:
            messages.append({"role": "assistant", "content": reply.content or ""})
            messages.append(user_message(CORRECTION))
            return None, True, False
        positions = [i for i, c in enumerate(reply.tool_calls) if c.name == LOOKUP]
        calls = [reply.tool_calls[i] for i in positions]
        results = await race(ctx, asyncio.gather(*(self.boundary.invoke(ctx, c.id, c.name, c.arguments) for c in calls)))
        projections = dict(zip(positions, results, strict=True))  # by position: identical calls may repeat
        answer: KnowledgeAnswer | None = None
        mistake = budget = False
        ids: list[str] = []
        answers: list[dict[str, Any]] = []
        for index, call in enumerate(reply.tool_calls):
            call_id = call.id or f"knowledge_call_{len(messages)}_{index}"
            if index in projections:
                projection = projections[index]
                call_id = str(projection.get("tool_call_id") or call_id)
                error = projection.get("error") or {}
                budget = budget or "BUDGET" in str(error.get("code", "") if isinstance(error, dict) else "")
                answers.append(tool_message(call_id, projection))
            elif call.name == SUBMIT_KNOWLEDGE:
                parsed, text = _read_answer(call.arguments)
                answer = answer or parsed
                mistake = mistake or parsed is None
                answers.append(tool_message(call_id, text))
            else:
                mistake = True
                answers.append(tool_message(call_id, f"Wire-format error: unknown function {call.name!r}. {CORRECTION}"))
            ids.append(call_id)
        if len(set(ids)) != len(ids):  # duplicate provider ids: the wire needs unique ones
            ids = [f"{i}_{n}" if ids.count(i) > 1 else i for n, i in enumerate(ids)]
            answers = [dict(a, tool_call_id=i) for a, i in zip(answers, ids, strict=True)]
        messages.append(assistant_message(reply.content, reply.tool_calls, ids))
        messages.extend(answers)
        return answer, mistake and answer is None, budget


def _read_answer(arguments: str) -> tuple[KnowledgeAnswer | None, str]:
    decoded = decode_arguments(arguments)
    if decoded is None:
        return None, f"Wire-format error: the arguments of {SUBMIT_KNOWLEDGE} must be one JSON object."
    try:
        return KnowledgeAnswer.model_validate(decoded), "Answer received."
    except ValidationError as exc:
        return None, f"Wire-format error: the answer violates its schema ({validation_summary(exc)})."
