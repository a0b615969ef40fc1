"""Guard findings, the verified snapshot, and the release outcome shown to users."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

from core.contracts.draft import DiagnosisDraft, KnowledgeAnswer
from core.contracts.evidence import EvidenceStatus, ToolName


class Severity(StrEnum):
    REJECT = "reject"
    WARN = "warn"


class Violation(BaseModel):
    """One finding of the EvidenceGuard."""

    code: str = Field(description="A violation code of SPEC §5, e.g. INVOCATION_MISSING.")
    path: str = Field(description="Where in the draft, e.g. 'analysis[2].tool_call_ids[0]'.")
    message: str = Field(description="Plain explanation, safe to log and show in a trace.")
    severity: Severity = Severity.REJECT
    rule_id: str = ""


class VerifiedEvidenceSnapshot(BaseModel):
    """The verified projections of every cited call (and nothing else), frozen for the SemanticGuard."""

    run_id: str
    projections: dict[str, dict[str, Any]] = Field(description="tool_call_id -> projection JSON, as the agent saw it.")
    effective_arguments: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="tool_call_id -> effective arguments of the call."
    )
    rule_set_version: str
    warnings: list[Violation] = Field(default_factory=list)


class GuardResult(BaseModel):
    """EvidenceGuard output: a snapshot when valid, else the rejecting violations."""

    valid: bool
    snapshot: VerifiedEvidenceSnapshot | None = None
    violations: list[Violation] = Field(default_factory=list, description="Reject-severity findings.")
    warnings: list[Violation] = Field(default_factory=list)


class SemanticVerdictKind(StrEnum):
    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"
    UNAVAILABLE = "UNAVAILABLE"
    """Not a model answer: the guard could not get a well-formed verdict."""


class SemanticVerdict(BaseModel):
    verdict: SemanticVerdictKind
    reason: str = Field(default="", max_length=1000)


class Outcome(StrEnum):
    SUCCESS = "SUCCESS"
    SAFE_FALLBACK = "SAFE_FALLBACK"
    FAILURE = "FAILURE"


class FallbackType(StrEnum):
    EVIDENCE_VALIDATION_FAILED = "EVIDENCE_VALIDATION_FAILED"
    SEMANTIC_UNSUPPORTED = "SEMANTIC_UNSUPPORTED"
    SEMANTIC_UNAVAILABLE = "SEMANTIC_UNAVAILABLE"
    KNOWLEDGE_UNVERIFIED = "KNOWLEDGE_UNVERIFIED"


class ObservedFact(BaseModel):
    """A bounded fact taken from a tool projection (never from draft prose)."""

    text: str = Field(max_length=400)
    tool_call_id: str
    tool_name: ToolName
    evidence_status: EvidenceStatus


class EvidenceSource(BaseModel):
    """A cited call as shown under a published report."""

    tool_call_id: str
    tool_name: ToolName
    evidence_status: EvidenceStatus
    label: str = Field(description="Short human label, e.g. 'query_logs order-service \"timeout\" (37 matches)'.")


class PublishedReport(BaseModel):
    """A SUCCESS diagnosis as published: the structured draft plus its sources."""

    run_id: str
    draft: DiagnosisDraft
    sources: list[EvidenceSource]


class FallbackMessage(BaseModel):
    """What a SAFE_FALLBACK or FAILURE shows instead of a report."""

    stage: str = Field(description="Where it got stuck, in plain words.")
    reason: str = Field(default="", description="Safe one-line reason (violation codes or guard reason).")
    observed_facts: list[ObservedFact] = Field(default_factory=list)
    next_steps: list[str] = Field(default_factory=list)


class KnowledgeResult(BaseModel):
    """A knowledge turn's answer, verified or not."""

    answer: KnowledgeAnswer | None = Field(default=None, description="Set only when citations verified.")
    documents_found: list[str] = Field(default_factory=list, description="Docs the run's lookups returned.")


class ReleaseOutcome(BaseModel):
    """The single thing a turn produces for the user."""

    run_id: str
    intent: Literal["DIAGNOSIS", "KNOWLEDGE", "CHAT"] = "DIAGNOSIS"
    outcome: Outcome
    fallback_type: FallbackType | None = None
    report: PublishedReport | None = None
    fallback: FallbackMessage | None = None
    knowledge: KnowledgeResult | None = None
    chat_text: str | None = None
    violations: list[Violation] = Field(default_factory=list)
    verdict: SemanticVerdict | None = None
