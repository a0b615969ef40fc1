"""Progress of a run as the delivery channels see it: one stage vocabulary and a typed detail (SPEC §10).

Progress carries only what the tools did and which stage runs — never draft text, prompts or raw payloads.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from core.contracts.evidence import EvidenceStatus

SUBJECT_MAX = 200


class ProgressStage(StrEnum):
    """Where a run is. Every stage is reported only when it really starts."""

    ROUTING = "routing"
    """Deciding whether the message is a diagnosis, a runbook question or chat."""
    PLANNING = "planning"
    """The model is choosing what to query next (or reading what the tools returned)."""
    TOOL_STARTED = "tool_started"
    """A tool call was admitted and is running."""
    TOOL_FINISHED = "tool_finished"
    """A tool call ended (evidence found, nothing matched, or it could not run)."""
    EVIDENCE_CHECK = "evidence_check"
    """The submitted draft's citations and numbers are checked against this run's tool calls."""
    REPAIR = "repair"
    """The evidence check failed once; the citations are being repaired and checked again."""
    REVIEW = "review"
    """The independent review: does the verified evidence support the draft?"""
    RELEASE = "release"
    """Both checks passed (or a fallback was decided): the final message is being prepared."""
    CITATION_CHECK = "citation_check"
    """A runbook answer's citations are checked against this run's lookups."""


class ToolProgress(BaseModel):
    """One tool call as progress shows it: what was queried and, once it ended, what it showed."""

    model_config = ConfigDict(extra="forbid")

    tool_call_id: str = Field(description="The call's id (a task key for the channel; never shown to users).")
    tool: str = Field(max_length=64, description="Tool name as the model asked for it (may be unknown).")
    subject: str = Field(default="", max_length=SUBJECT_MAX,
                         description="What was queried: service, keywords, window, or the first words of the SQL.")
    evidence_status: EvidenceStatus | None = Field(default=None, description="Set when the call ended.")
    count: int | None = Field(default=None, ge=0, description="Matches the backend found (set when it ended).")
    error_code: str | None = Field(default=None, max_length=64, description="Why it could not run (ERROR only).")


class ProgressUpdate(BaseModel):
    """One progress report: the stage, plus the detail that stage has."""

    model_config = ConfigDict(extra="forbid")

    stage: ProgressStage
    tool: ToolProgress | None = Field(default=None, description="TOOL_STARTED / TOOL_FINISHED only.")
    step: int | None = Field(default=None, ge=0, description="PLANNING: the model step number (1 = before any tool).")
    tool_calls: int | None = Field(default=None, ge=0, description="PLANNING: tool calls made so far in this run.")
    cited_calls: int | None = Field(default=None, ge=0, description="Checks: how many calls the draft cites.")
    violations: int | None = Field(default=None, ge=0, description="REPAIR: how many findings the first check had.")
