"""DiagnosisRelease: guard -> repair once -> guard -> semantic guard -> SUCCESS or a fixed fallback.

Nothing a user can see is produced from a draft unless both guards passed. Failures of the repairer, the
judge or the canonical store end in a fallback, never in a crash.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from core.contracts.draft import DiagnosisDraft
from core.contracts.evidence import CanonicalRecord, EvidenceStatus
from core.contracts.progress import ProgressStage, ProgressUpdate
from core.contracts.release import (
    EvidenceSource,
    FallbackStage,
    FallbackType,
    GuardResult,
    Outcome,
    PublishedReport,
    ReleaseOutcome,
    SemanticVerdict,
    SemanticVerdictKind,
    StoredDraft,
    VerifiedEvidenceSnapshot,
    Violation,
)
from core.contracts.run import EventType
from core.guard.evidence_guard import EvidenceGuard, GuardUnavailable
from core.observability.metrics import Metrics
from core.ports import CanonicalStore, DraftArchive, EvidenceRepairer, RecordDumps, SemanticJudge
from core.release.confirmation import with_confirmations
from core.release.evidence import kept_evidence
from core.release.fallback import build_fallback, failure_fallback
from core.release.review import shown_reason
from core.release.sources import call_summaries, label_for
from core.release.wording import failure_cause, violation_sentence, violation_sentences
from core.run import RunContext

logger = logging.getLogger(__name__)

REASON_MAX = 300
_CHECKS = MappingProxyType({EventType.EVIDENCE_GUARD_INITIAL: "initial", EventType.EVIDENCE_GUARD_RECHECK: "recheck"})
POST_MARGIN_S = 2.0
MIN_REVIEW_S = 3.0
REVIEW_UNAVAILABLE_REASON = ("The review model could not be reached or gave no usable answer, "
                             "so nothing unverified was published.")


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)


def _codes(violations: list[Violation]) -> list[str]:
    return sorted({v.code for v in violations})


def _guard_summary(result: GuardResult, cited: int) -> dict[str, Any]:
    return {
        "valid": result.valid,
        "violation_codes": _codes(result.violations),
        "warning_codes": _codes(result.warnings),
        "violations": len(result.violations),
        "warnings": len(result.warnings),
        "cited_calls": cited,
    }


def sources_of(snapshot: VerifiedEvidenceSnapshot) -> list[EvidenceSource]:
    """One labelled source per cited call of a verified snapshot, in citation order."""
    sources = []
    for cid, projection in snapshot.projections.items():
        tool = str(projection["tool_name"])
        sources.append(
            EvidenceSource(
                tool_call_id=cid,
                tool_name=tool,
                evidence_status=EvidenceStatus(projection["evidence_status"]),
                label=label_for(tool, projection, snapshot.effective_arguments.get(cid, {})),
            )
        )
    return sources


class DiagnosisRelease:
    """Publishes only drafts that pass the EvidenceGuard (after at most one repair) and the SemanticGuard."""

    def __init__(self, guard: EvidenceGuard, repairer: EvidenceRepairer, judge: SemanticJudge, canonical: CanonicalStore,
                 *, metrics: Metrics | None = None, drafts: DraftArchive | None = None) -> None:
        self._metrics = metrics or Metrics()
        self._drafts = drafts
        self._guard = guard
        self._repairer = repairer
        self._judge = judge
        self._canonical = canonical

    async def release(self, ctx: RunContext, draft: DiagnosisDraft) -> ReleaseOutcome:
        """Run the release pipeline for one submitted draft and record every stage on the timeline."""
        cited = len({cid for item in draft.analysis for cid in item.tool_call_ids})
        await self._progress(ctx, ProgressUpdate(stage=ProgressStage.EVIDENCE_CHECK, cited_calls=cited))
        result = await self._check(ctx, draft, EventType.EVIDENCE_GUARD_INITIAL)
        if result is None:
            return await self._store_failed(ctx)
        if not result.valid:
            await self._progress(ctx, ProgressUpdate(stage=ProgressStage.REPAIR, violations=len(result.violations)))
            repaired = await self._repair(ctx, draft, result.violations)
            if repaired is None:
                return await self._evidence_failed(ctx, result.violations)
            recheck = await self._check(ctx, repaired, EventType.EVIDENCE_GUARD_RECHECK)
            if recheck is None:
                return await self._store_failed(ctx)
            if not recheck.valid:
                return await self._evidence_failed(ctx, recheck.violations)
            draft, result = repaired, recheck
        if result.snapshot is None:  # for the type checker: a valid GuardResult always has one
            return await self._fallback(ctx, FallbackType.EVIDENCE_VALIDATION_FAILED, FallbackStage.EVIDENCE_CHECK,
                                        violation_sentence("NO_SNAPSHOT"))
        await self._progress(ctx, ProgressUpdate(stage=ProgressStage.REVIEW, cited_calls=len(result.snapshot.projections)))
        verdict = await self._verdict(ctx, draft, result.snapshot)
        if verdict.verdict is SemanticVerdictKind.SUPPORTED:
            # Confirmation is decided here, not by the model's flag: changes to a system always need a human.
            evidence, arguments = kept_evidence(result.snapshot)
            report = PublishedReport(run_id=ctx.run_id, draft=with_confirmations(draft), sources=sources_of(result.snapshot),
                                     evidence=evidence, evidence_arguments=arguments, question=ctx.query[:4000])
            outcome = ReleaseOutcome(run_id=ctx.run_id, outcome=Outcome.SUCCESS, report=report, verdict=verdict)
            await self._decide(ctx, outcome)
            return outcome
        if verdict.verdict is SemanticVerdictKind.UNSUPPORTED:
            # The judge's free text may repeat the rejected draft: shown only when it quotes verified evidence alone.
            reason = shown_reason(verdict.reason, result.snapshot)
            return await self._fallback(ctx, FallbackType.SEMANTIC_UNSUPPORTED, FallbackStage.REVIEW_UNSUPPORTED, reason,
                                        verdict=verdict)
        return await self._fallback(ctx, FallbackType.SEMANTIC_UNAVAILABLE, FallbackStage.REVIEW_UNAVAILABLE,
                                    REVIEW_UNAVAILABLE_REASON, verdict=verdict)

    async def failure(self, ctx: RunContext, reason: str) -> ReleaseOutcome:
        """FAILURE: the run produced no draft; `reason` is a FailureCause (or stop reason) value, said in words."""
        records = await self._records(ctx)
        message = failure_fallback(records, failure_cause(reason), run_id=ctx.run_id, question=ctx.query)
        outcome = ReleaseOutcome(run_id=ctx.run_id, outcome=Outcome.FAILURE, fallback=message)
        await self._decide(ctx, outcome)
        return outcome

    # ---- stages ---------------------------------------------------------------------------

    async def _check(self, ctx: RunContext, draft: DiagnosisDraft, event: EventType) -> GuardResult | None:
        """Guard one draft and record the event; None when the canonical store could not be read."""
        started = time.perf_counter()
        cited = len({cid for item in draft.analysis for cid in item.tool_call_ids})
        try:
            result = await self._guard.check(ctx.run_id, draft, ctx.untrusted_spans)
        except GuardUnavailable as exc:
            logger.warning("run %s: evidence guard could not read the canonical store: %s", ctx.run_id, exc)
            summary = {"valid": False, "error": "CANONICAL_UNAVAILABLE", "cited_calls": cited}
            await ctx.timeline.record(event, summary, duration_ms=_ms(started))
            return None
        summary = {**_guard_summary(result, cited), "rule_set_version": self._guard.rule_set_version}
        self._metrics.guard_checked(_CHECKS.get(event, event.value), (v.code for v in result.violations))
        await ctx.timeline.record(event, summary, duration_ms=_ms(started))
        await self._keep(ctx, draft, result, "initial" if event is EventType.EVIDENCE_GUARD_INITIAL else "repair")
        return result

    async def _keep(self, ctx: RunContext, draft: DiagnosisDraft, result: GuardResult, stage: str) -> None:
        """Keep the checked draft and what the guard read, for `diagbot replay`; never fails the run."""
        if self._drafts is None:
            return
        try:
            if isinstance(self._canonical, RecordDumps):  # the kept JSON as it is: no model built and dumped again
                records = await self._canonical.list_run_dumps(ctx.run_id)
            else:
                records = [r.model_dump(mode="json", exclude={"raw_result"})
                           for r in await self._canonical.list_run(ctx.run_id)]
            await self._drafts.record_draft(StoredDraft(
                run_id=ctx.run_id, stage=stage, draft=draft, untrusted=list(ctx.untrusted_spans),
                records=records,
                rule_set_version=self._guard.rule_set_version, valid=result.valid,
                codes=[v.code for v in result.violations], recorded_at=datetime.now(UTC),
            ))
        except Exception as exc:  # the audit is best effort; the release decision stands
            logger.warning("run %s: checked draft not kept for replay (%s)", ctx.run_id, type(exc).__name__)

    async def _repair(self, ctx: RunContext, draft: DiagnosisDraft, violations: list[Violation]) -> DiagnosisDraft | None:
        """One repair attempt; an exception or an empty answer counts as no repair."""
        started = time.perf_counter()
        records = await self._records(ctx)
        repaired: DiagnosisDraft | None = None
        error: str | None = None
        try:
            repaired = await self._repairer.repair(
                ctx.query, draft, violations, call_summaries(records, ctx.run_id), run_id=ctx.run_id,
                time_left_s=repair_time_s(ctx.seconds_left()), timeline=ctx.timeline,
            )
        except Exception as exc:
            error = type(exc).__name__
            logger.warning("run %s: evidence repair failed (%s); treated as no repair", ctx.run_id, error)
        summary: dict[str, Any] = {"repaired": repaired is not None, "input_violations": len(violations)}
        self._metrics.repair_attempted("error" if error else "repaired" if repaired is not None else "no_repair")
        if error:
            summary["error"] = error
        await ctx.timeline.record(EventType.EVIDENCE_REPAIR, summary, duration_ms=_ms(started))
        return repaired

    async def _verdict(self, ctx: RunContext, draft: DiagnosisDraft, snapshot: VerifiedEvidenceSnapshot) -> SemanticVerdict:
        """The SemanticGuard's verdict; any exception means UNAVAILABLE."""
        started = time.perf_counter()
        try:
            verdict = await self._judge.judge(ctx.query, draft, snapshot, time_left_s=review_time_s(ctx.seconds_left()),
                                              timeline=ctx.timeline)
        except Exception as exc:
            logger.warning("run %s: semantic guard failed (%s); treated as unavailable", ctx.run_id, type(exc).__name__)
            verdict = SemanticVerdict(verdict=SemanticVerdictKind.UNAVAILABLE, reason=f"the review failed ({type(exc).__name__})")
        summary = {"verdict": verdict.verdict.value, "reason": verdict.reason[:REASON_MAX]}
        self._metrics.semantic_verdict(verdict.verdict.value)
        await ctx.timeline.record(EventType.SEMANTIC_GUARD, summary, duration_ms=_ms(started))
        return verdict

    async def _evidence_failed(self, ctx: RunContext, violations: list[Violation]) -> ReleaseOutcome:
        reason = violation_sentences([v.code for v in violations])
        return await self._fallback(ctx, FallbackType.EVIDENCE_VALIDATION_FAILED, FallbackStage.EVIDENCE_CHECK, reason,
                                    violations=violations)

    async def _store_failed(self, ctx: RunContext) -> ReleaseOutcome:
        return await self._fallback(ctx, FallbackType.EVIDENCE_VALIDATION_FAILED, FallbackStage.EVIDENCE_STORE,
                                    violation_sentence("CANONICAL_UNAVAILABLE"))

    async def _fallback(
        self,
        ctx: RunContext,
        kind: FallbackType,
        stage: FallbackStage,
        reason: str,
        *,
        violations: list[Violation] | None = None,
        verdict: SemanticVerdict | None = None,
    ) -> ReleaseOutcome:
        records = await self._records(ctx)
        message = build_fallback(records, stage, reason, run_id=ctx.run_id, question=ctx.query)
        outcome = ReleaseOutcome(
            run_id=ctx.run_id,
            outcome=Outcome.SAFE_FALLBACK,
            fallback_type=kind,
            fallback=message,
            violations=violations or [],
            verdict=verdict,
        )
        await self._decide(ctx, outcome)
        return outcome

    async def _decide(self, ctx: RunContext, outcome: ReleaseOutcome) -> None:
        await self._progress(ctx, ProgressUpdate(stage=ProgressStage.RELEASE))
        fallback_type = outcome.fallback_type.value if outcome.fallback_type else None
        await ctx.timeline.record(EventType.RELEASE_DECISION, {"outcome": outcome.outcome.value, "fallback_type": fallback_type})

    async def _records(self, ctx: RunContext) -> list[CanonicalRecord]:
        """This run's records for fallbacks and repair input; none when the store is down."""
        try:
            return [r for r in await self._canonical.list_run(ctx.run_id) if r.run_id == ctx.run_id]
        except Exception as exc:
            logger.warning("run %s: canonical store unreadable for the fallback (%s)", ctx.run_id, type(exc).__name__)
            return []

    @staticmethod
    async def _progress(ctx: RunContext, update: ProgressUpdate) -> None:
        if ctx.progress is None:
            return
        try:
            await ctx.progress.update(ctx.run_id, update)
        except Exception as exc:  # progress is cosmetic: a failing Slack update must not stop the release
            logger.warning("run %s: progress update failed (%s)", ctx.run_id, type(exc).__name__)


def review_time_s(seconds_left: float) -> float:
    """What the SemanticGuard may spend: the run's time left minus the margin to post the outcome.

    A draft submitted at the very deadline still gets a short review (the service's backstop grace covers it)."""
    return max(seconds_left - POST_MARGIN_S, MIN_REVIEW_S)


def repair_time_s(seconds_left: float) -> float:
    """What the repair may spend: half of what is left after the posting margin (the recheck and review need the rest)."""
    return max((seconds_left - POST_MARGIN_S) / 2, MIN_REVIEW_S)
