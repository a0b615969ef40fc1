"""Fallback factory: where the run stopped and why in plain words, what was observed (from projections), next steps.

Nothing here reads the draft: a fallback must never repeat prose the guards did not let through.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from core.contracts.evidence import CanonicalRecord, EvidenceStatus, InvocationState
from core.contracts.release import FailureCause, FallbackMessage, FallbackStage
from core.evidence.subjects import shorten
from core.release.facts import FACT_MAX, error_reason, observed_facts
from core.release.wording import EVIDENCE_STEP, FAILURE_STAGE, FAILURE_STEP, REVIEW_UNAVAILABLE_STEP
from core.tools.registry import spec_for

__all__ = ("FACT_MAX", "STAGE_TEXT", "build_fallback", "failure_fallback", "failure_stage", "next_steps_for",
           "observed_facts")

STEPS_MAX = 6
_NO_STEP_CODES = frozenset({"BUDGET_EXHAUSTED", "CANCELLED"})
REASON_MAX = 600

STAGE_TEXT: Mapping[FallbackStage, str] = MappingProxyType({
    FallbackStage.EVIDENCE_CHECK: "the evidence check: the draft's citations do not match this run's tool calls",
    FallbackStage.EVIDENCE_STORE: "the evidence check: this run's tool results could not be read",
    FallbackStage.REVIEW_UNSUPPORTED: "the independent review: the evidence does not support the draft",
    FallbackStage.REVIEW_UNAVAILABLE: "the independent review could not be completed",
    FallbackStage.NO_DRAFT: "the diagnosis could not be finished",
    FallbackStage.KNOWLEDGE_UNVERIFIED: "no verified answer from the runbooks",
})


def failure_stage(cause: FailureCause) -> str:
    """'the diagnosis could not be finished: <cause in words>' for FAILURE outcomes."""
    return f"{STAGE_TEXT[FallbackStage.NO_DRAFT]}: {FAILURE_STAGE[cause]}"


def _record_steps(record: CanonicalRecord, services: dict[str, str]) -> list[str]:
    """Next steps one finished call suggests (a call that found evidence about a service adds that service)."""
    args = record.effective_arguments or record.arguments
    status = record.evidence_status if record.state is InvocationState.READY else EvidenceStatus.ERROR
    reason = ""
    if status is EvidenceStatus.ERROR:
        code = (record.projection or {}).get("error", {}).get("code") if record.projection else None
        if (code or (record.error.code if record.error else "")) in _NO_STEP_CODES:
            return []  # the run's own budget or cancel: the failure's step says what to do
        reason = error_reason(record, record.projection or {})
    hints = spec_for(record.tool_name).next_steps(status or EvidenceStatus.ERROR, record.projection or {}, args, reason)
    if hints.looked_at is not None:
        services.setdefault(*hints.looked_at)
    return list(hints.steps)


def next_steps_for(records: Sequence[CanonicalRecord], run_id: str | None, first: Sequence[str] = ()) -> list[str]:
    """Concrete next steps: `first` (what fits the failure), then what the run's calls suggest, then the trace."""
    steps: list[str] = list(first)
    services: dict[str, str] = {}
    for record in records:
        if record.state in (InvocationState.READY, InvocationState.FAILED):
            steps += _record_steps(record, services)
    steps[len(first):len(first)] = [
        f"Check {service}'s dashboards, recent deploys and error rates {window}." for service, window in services.items()
    ]
    if not records and not first:
        steps.append("Ask again naming the service and the time window, so the tools can be pointed at them.")
    if run_id:
        steps.append(f"`/diag trace {run_id}` shows every step this run took.")
    return list(dict.fromkeys(steps))[:STEPS_MAX]


def _first_steps(kind: FallbackStage, cause: FailureCause | None) -> list[str]:
    if cause is not None:
        return [FAILURE_STEP[cause]]
    if kind is FallbackStage.REVIEW_UNAVAILABLE:
        return [REVIEW_UNAVAILABLE_STEP]
    if kind in (FallbackStage.EVIDENCE_CHECK, FallbackStage.EVIDENCE_STORE, FallbackStage.REVIEW_UNSUPPORTED):
        return [EVIDENCE_STEP]
    return []


def build_fallback(
    records: Sequence[CanonicalRecord],
    kind: FallbackStage,
    reason: str,
    next_steps: list[str] | None = None,
    *,
    run_id: str | None = None,
    limit: int = 8,
    cause: FailureCause | None = None,
    question: str = "",
) -> FallbackMessage:
    """A fallback message from projections only: stage and reason in words, observed facts, next steps."""
    mine = [r for r in records if run_id is None or r.run_id == run_id]
    steps = next_steps if next_steps is not None else next_steps_for(mine, run_id, _first_steps(kind, cause))
    stage = failure_stage(cause) if cause is not None else STAGE_TEXT[kind]
    return FallbackMessage(
        stage=stage,
        reason=shorten(reason, REASON_MAX),
        kind=kind,
        cause=cause,
        observed_facts=observed_facts(mine, limit=limit, question=question),
        next_steps=[shorten(s, 300) for s in steps],
    )


def failure_fallback(records: Sequence[CanonicalRecord], cause: FailureCause, *, run_id: str | None = None,
                     question: str = "") -> FallbackMessage:
    """The FAILURE message for a run that wrote no draft: the cause in words and the step that fits it."""
    return build_fallback(records, FallbackStage.NO_DRAFT, "", run_id=run_id, cause=cause, question=question)
