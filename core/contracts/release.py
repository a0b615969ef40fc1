"""Guard findings, the verified snapshot, and the release outcome shown to users."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

from core.contracts.draft import DiagnosisDraft, KnowledgeAnswer
from core.contracts.evidence import EvidenceStatus, ToolNameStr


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


class Derivation(BaseModel):
    """A quantity the guard accepted as derived from grounded ones (a declared derivation of SPEC §5)."""

    path: str = Field(description="Where in the draft, e.g. 'analysis[0].text'.")
    quantity: str = Field(description="The quantity as written, e.g. '28 minutes'.")
    kind: str = Field(description="Its kind, e.g. 'duration'.")
    rule: str = Field(description="TIME_DIFFERENCE, WINDOW_LENGTH, PERCENT_OF, ITEM_COUNT or SUM.")
    value: float = Field(description="The derived value (seconds for durations).")
    inputs: list[str] = Field(default_factory=list, description="What it was derived from, in words.")
    tool_call_ids: list[str] = Field(default_factory=list)


class VerifiedEvidenceSnapshot(BaseModel):
    """The verified projections of every cited call (and nothing else), frozen for the SemanticGuard."""

    run_id: str
    projections: dict[str, dict[str, Any]] = Field(description="tool_call_id -> projection JSON, as the agent saw it.")
    effective_arguments: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="tool_call_id -> effective arguments of the call."
    )
    rule_set_version: str
    warnings: list[Violation] = Field(default_factory=list)
    derivations: list[Derivation] = Field(
        default_factory=list, description="Quantities grounded by a declared derivation, so the SemanticGuard sees them."
    )


class StoredDraft(BaseModel):
    """A draft as the EvidenceGuard checked it, kept in the audit store for `diagbot replay` (internal: never shown).

    It holds what the guard read (the run's canonical records without raw backend results, and the instruction-like
    spans the agent was shown), so a later rules file can re-check it after the records left Redis."""

    run_id: str
    stage: str = Field(description="'initial' (the agent's draft) or 'repair' (the repaired draft).")
    draft: DiagnosisDraft
    records: list[dict[str, Any]] = Field(default_factory=list, description="The run's canonical records (no raw result).")
    untrusted: list[str] = Field(default_factory=list)
    rule_set_version: str
    valid: bool
    codes: list[str] = Field(default_factory=list, description="Violation codes of that check, in order.")
    recorded_at: datetime


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


class FallbackStage(StrEnum):
    """Where a run that published no report stopped."""

    EVIDENCE_CHECK = "evidence_check"
    """The draft's citations or numbers did not match this run's tool calls (after one repair)."""
    EVIDENCE_STORE = "evidence_store"
    """The store of this run's tool results could not be read, so the draft could not be checked."""
    REVIEW_UNSUPPORTED = "review_unsupported"
    """The independent review judged that the verified evidence does not support the draft."""
    REVIEW_UNAVAILABLE = "review_unavailable"
    """The independent review could not be completed."""
    NO_DRAFT = "no_draft"
    """The run ended without a draft (budget, deadline, cancel, model failure: see FailureCause)."""
    KNOWLEDGE_UNVERIFIED = "knowledge_unverified"
    """A runbook answer's citations did not verify."""


class FailureCause(StrEnum):
    """Why a run ended without a draft: the agent's stop reasons (other than submitted) and the service's own."""

    BUDGET_STEPS = "budget_steps"
    BUDGET_TOOL_CALLS = "budget_tool_calls"
    BUDGET_OBSERVATION = "budget_observation"
    DEADLINE = "deadline"
    CANCELLED = "cancelled"
    MODEL_UNAVAILABLE = "model_unavailable"
    WIRE_FORMAT = "wire_format"
    NO_DRAFT = "no_draft"
    INTERNAL_ERROR = "internal_error"
    STORAGE = "storage"
    WORKER_STOPPED = "worker_stopped"


class FactTable(BaseModel):
    """A few rows of a SQL result, as strings, with their column names (bounded by the fallback factory)."""

    columns: list[str] = Field(default_factory=list, max_length=12)
    rows: list[list[str]] = Field(default_factory=list, max_length=8)
    total_rows: int = Field(default=0, ge=0, description="Rows the query returned (may exceed the rows shown).")


class ObservedFact(BaseModel):
    """A bounded fact taken from a tool projection (never from draft prose)."""

    text: str = Field(max_length=400, description="One plain sentence: what was queried and what it returned.")
    tool_call_id: str = Field(description="Internal: which call (for the trace; never shown in Slack).")
    tool_name: ToolNameStr
    evidence_status: EvidenceStatus
    lines: list[str] = Field(default_factory=list, max_length=3,
                             description="The most telling log lines or runbook excerpt, each bounded.")
    table: FactTable | None = Field(default=None, description="SQL rows that match the question best.")


class EvidenceSource(BaseModel):
    """A cited call as shown under a published report."""

    tool_call_id: str
    tool_name: ToolNameStr
    evidence_status: EvidenceStatus
    label: str = Field(description="Short human label, e.g. 'query_logs order-service \"timeout\" (37 matches)'.")


class PublishedReport(BaseModel):
    """A SUCCESS diagnosis as published: the structured draft plus its sources."""

    run_id: str
    draft: DiagnosisDraft
    sources: list[EvidenceSource]
    evidence: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="tool_call_id -> the verified projection the guards checked (bounded), for 'Show evidence'.")
    evidence_arguments: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="tool_call_id -> effective arguments of the cited call (labels, deep links).")
    question: str = Field(default="", max_length=4000, description="The question the report answers.")


class FallbackMessage(BaseModel):
    """What a SAFE_FALLBACK or FAILURE shows instead of a report."""

    stage: str = Field(description="Where it got stuck, in plain words.")
    reason: str = Field(default="", description="Why, in plain sentences (never raw codes, ids or reprs).")
    kind: FallbackStage | None = Field(default=None, description="Where it stopped, as a stage.")
    cause: FailureCause | None = Field(default=None, description="FAILURE only: why no draft was written.")
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
