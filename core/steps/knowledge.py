"""KnowledgeAnswerer: runbook questions answered from lookup_knowledge only, citations checked deterministically (SPEC §12)."""

from __future__ import annotations

import logging
from typing import Any

from core.contracts.draft import KnowledgeAnswer
from core.contracts.evidence import CanonicalRecord, EvidenceStatus, InvocationState
from core.contracts.progress import ProgressStage, ProgressUpdate
from core.contracts.release import FallbackStage, FallbackType, KnowledgeResult, Outcome, ReleaseOutcome
from core.contracts.run import StopReason
from core.llm.model_step import ModelStep
from core.llm.prompts import PromptLibrary
from core.llm.tool_loop import LoopConfig, ToolLoop
from core.ports import AuditStore, CanonicalStore, ChatModel, ToolInvoker
from core.release.fallback import build_fallback
from core.release.wording import FAILURE_STAGE, failure_cause
from core.run import RunContext
from core.steps.schemas import SUBMIT_KNOWLEDGE, knowledge_tools
from core.tools.args import normalised_arguments
from core.tools.knowledge.args import NAME as KNOWLEDGE_TOOL

log = logging.getLogger(__name__)

LOOKUP = KNOWLEDGE_TOOL
CORRECTION = f"Wire-format error: call {LOOKUP} if needed, then answer with exactly one call of {SUBMIT_KNOWLEDGE}."


def documents_found(records: list[CanonicalRecord]) -> list[str]:
    """Docs returned by this run's lookup_knowledge calls, in first-seen order."""
    docs: list[str] = []
    for record in records:
        if record.tool_name != LOOKUP or not record.projection:
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
        elif record.tool_name != LOOKUP:
            problems.append(f"{where}: not a {LOOKUP} call")
        elif record.state is not InvocationState.READY or record.evidence_status is not EvidenceStatus.EVIDENCE_FOUND:
            problems.append(f"{where}: call did not return evidence")
        elif not record.projection or record.projection.get("tool_call_id") != citation.tool_call_id:
            problems.append(f"{where}: projection missing or inconsistent")
        elif citation.doc not in documents_found([record]):
            problems.append(f"{where}: doc not in that call's results")
    return problems


def unverified_reason(problems: list[str], stop: str | None) -> str:
    """Why a runbook answer is not shown, in plain words (the detailed problems go to the log and the trace)."""
    if stop is not None:
        return f"No answer was written: {FAILURE_STAGE[failure_cause(stop)]}."
    if problems == ["no citations"]:
        return "The answer cited no runbook, so it could not be checked."
    return "The answer cited runbook sections that this run's lookups did not return."


class KnowledgeAnswerer:
    """The ToolLoop with lookup_knowledge only, ending with submit_knowledge_answer; only verified answers are SUCCESS."""

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
        tools: list[dict[str, Any]] | None = None,
    ) -> None:
        self.model_name = model_name
        self.canonical = canonical
        config = LoopConfig(
            stage="knowledge", prompt="knowledge_answer", tools=tools or knowledge_tools(), tool_names=frozenset({LOOKUP}),
            submit_name=SUBMIT_KNOWLEDGE, output=KnowledgeAnswer, correction=CORRECTION, max_steps=max_steps,
            normalise=normalised_arguments,
        )
        self._loop = ToolLoop(ModelStep(model, model_name, "knowledge", timeout_s=call_timeout_s, audit=audit),
                              boundary, prompts, config)

    async def answer(self, ctx: RunContext) -> ReleaseOutcome:
        """SUCCESS with a verified answer, else SAFE_FALLBACK KNOWLEDGE_UNVERIFIED with the documents found."""
        result = await self._loop.run(ctx, ctx.query)
        submitted, stop = result.output, result.stop_reason
        records = [r for r in await self.canonical.list_run(ctx.run_id) if r.run_id == ctx.run_id]
        docs = documents_found(records)
        if submitted is not None and ctx.progress is not None:
            await ctx.progress.update(ctx.run_id, ProgressUpdate(stage=ProgressStage.CITATION_CHECK,
                                                                 cited_calls=len(submitted.citations)))
        problems = await citation_problems(self.canonical, ctx.run_id, submitted) if submitted else []
        if submitted is not None and not problems:
            return ReleaseOutcome(run_id=ctx.run_id, intent="KNOWLEDGE", outcome=Outcome.SUCCESS,
                                  knowledge=KnowledgeResult(answer=submitted, documents_found=docs))
        log.info("knowledge run=%s unverified: %s", ctx.run_id, "; ".join(problems) or _said(stop))
        reason = unverified_reason(problems, str(stop) if submitted is None else None)
        return ReleaseOutcome(
            run_id=ctx.run_id,
            intent="KNOWLEDGE",
            outcome=Outcome.SAFE_FALLBACK,
            fallback_type=FallbackType.KNOWLEDGE_UNVERIFIED,
            knowledge=KnowledgeResult(answer=None, documents_found=docs),
            fallback=build_fallback(records, FallbackStage.KNOWLEDGE_UNVERIFIED, reason, run_id=ctx.run_id,
                                    question=ctx.query),
        )


def _said(stop: StopReason) -> str:
    return stop.value
