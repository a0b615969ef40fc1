"""The agent's only outputs: DiagnosisDraft (submit_diagnosis_draft) and KnowledgeAnswer (submit_knowledge_answer).

These models are the JSON schemas the model is given, so every field is documented and capped (SPEC §4).
Caps are enforced here: a draft over the caps fails validation, which the agent loop treats as a
wire-format mistake (one corrective turn). Semantic checks (closure, citations) are the EvidenceGuard's
job, not the schema's, so that they produce violation codes instead of validation errors.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

MAX_TEXT = 1000
MAX_ANALYSES = 20
MAX_ACTIONS = 10
MAX_RECOMMENDATIONS = 10
MAX_CALLS_PER_ANALYSIS = 10


class AnalysisKind(StrEnum):
    """What kind of observation an analysis item is."""

    NORMAL = "NORMAL"
    """A positive observation; may cite only EVIDENCE_FOUND calls."""
    NEGATIVE_OBSERVATION = "NEGATIVE_OBSERVATION"
    """'This exact query matched nothing'; may cite only NO_EVIDENCE calls. Never 'healthy' or 'ruled out'."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Conclusion(_Strict):
    """The overall answer; null in the draft when evidence is thin."""

    text: str = Field(max_length=MAX_TEXT, description="The conclusion, in one or two sentences.")
    based_on_analysis_ids: list[str] = Field(
        default_factory=list, max_length=MAX_ANALYSES, description="Analysis ids this conclusion rests on."
    )


class Analysis(_Strict):
    """One observation grounded in tool calls of this run."""

    analysis_id: str = Field(default="", max_length=64, description="Unique id within the draft, e.g. 'a1'.")
    kind: AnalysisKind | None = Field(
        default=None, description="NORMAL (cites EVIDENCE_FOUND calls) or NEGATIVE_OBSERVATION (cites NO_EVIDENCE calls)."
    )
    text: str = Field(default="", max_length=MAX_TEXT, description="What the cited calls show. Numbers must appear in them.")
    tool_call_ids: list[str] = Field(
        default_factory=list,
        max_length=MAX_CALLS_PER_ANALYSIS,
        description="tool_call_id values of THIS run's calls that show it (at least one).",
    )


class Action(_Strict):
    """A next step for the humans on call."""

    action: str = Field(default="", max_length=MAX_TEXT, description="What to do.")
    based_on_analysis_ids: list[str] = Field(default_factory=list, max_length=MAX_ANALYSES)
    requires_human_confirmation: bool = Field(
        default=True, description="True for anything that changes a system (restart, scale, rollback, config)."
    )


class Recommendation(_Strict):
    """A longer-term suggestion, within what the analyses show."""

    text: str = Field(default="", max_length=MAX_TEXT)
    based_on_analysis_ids: list[str] = Field(default_factory=list, max_length=MAX_ANALYSES)


class Limitations(_Strict):
    """What this diagnosis did not cover."""

    scope: str = Field(default="", max_length=MAX_TEXT, description="What was examined (services, window, sources).")
    missing_info: list[str] = Field(
        default_factory=list, max_length=20, description="Evidence that was not available or not checked."
    )


class DiagnosisDraft(_Strict):
    """Arguments of submit_diagnosis_draft: the whole internal report, never shown as is."""

    conclusion: Conclusion | None = Field(default=None, description="Null when the evidence is thin.")
    analysis: list[Analysis] = Field(default_factory=list, max_length=MAX_ANALYSES)
    action_plan: list[Action] = Field(default_factory=list, max_length=MAX_ACTIONS)
    recommendations: list[Recommendation] = Field(default_factory=list, max_length=MAX_RECOMMENDATIONS)
    limitations: Limitations = Field(default_factory=Limitations)


class KnowledgeCitation(_Strict):
    """One source of a knowledge answer."""

    tool_call_id: str = Field(description="A lookup_knowledge call of this run that returned the doc.")
    doc: str = Field(description="The doc path exactly as in that call's evidence_blocks.")


class KnowledgeAnswer(_Strict):
    """Arguments of submit_knowledge_answer."""

    answer: str = Field(max_length=3000, description="What the runbooks say, attributed to them, not to this environment.")
    citations: list[KnowledgeCitation] = Field(default_factory=list, max_length=10)
