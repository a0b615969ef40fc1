"""Tool-call evidence: statuses, projections (what the agent sees) and canonical records (harness only)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

ToolNameStr = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,79}$")]
"""A tool's name as records carry it: any registered tool (core/tools/registry.py), native or `mcp_<server>_<tool>`."""


class EvidenceStatus(StrEnum):
    """What one invocation showed."""

    EVIDENCE_FOUND = "EVIDENCE_FOUND"
    """The query ran and returned at least one item."""
    NO_EVIDENCE = "NO_EVIDENCE"
    """The query ran and matched nothing. Never proof of health."""
    ERROR = "ERROR"
    """Invalid arguments, refused, timed out or backend down. Never evidence."""


class InvocationState(StrEnum):
    """Lifecycle of a canonical record."""

    PENDING = "PENDING"
    READY = "READY"
    FAILED = "FAILED"


class ToolError(BaseModel):
    """Why an invocation ended in ERROR, in words safe to show the agent."""

    code: str = Field(description="Stable machine code, e.g. INVALID_ARGUMENTS, SQL_REFUSED, TIMEOUT.")
    message: str = Field(description="One clear sentence for the agent and the operator.")


# ---- projections ---------------------------------------------------------------------------


class ProjectionBase(BaseModel):
    """Fields every projection has. The projection is the only thing the agent sees of a call; each tool's
    projection model (core/tools/<tool>/spec.py) adds its envelope fields and its item list."""

    model_config = ConfigDict(extra="forbid")

    tool_call_id: str = Field(description="The id the agent must cite for this call.")
    tool_name: ToolNameStr
    evidence_status: EvidenceStatus
    count: int = Field(ge=0, description="Total number of matches found by the backend (may exceed items shown).")
    truncated: bool = Field(default=False, description="True when items or text were cut to fit the bounds.")
    error: ToolError | None = Field(default=None, description="Set only when evidence_status is ERROR.")


# ---- what a backend returns before projection ----------------------------------------------


class RawResult(BaseModel):
    """A tool backend's full answer, kept only in the canonical record.

    `items` are JSON objects (a runbook section, a log line, a series...); a tabular tool (query_mysql) puts its
    column names in `columns` and each row as a list in `rows` instead.
    """

    items: list[dict[str, Any]] = Field(default_factory=list)
    columns: list[str] = Field(default_factory=list, description="Tabular results only.")
    rows: list[list[Any]] = Field(default_factory=list, description="Tabular results only.")
    total_count: int = Field(ge=0, description="All matches, even those beyond the limit.")
    effective_arguments: dict[str, Any] = Field(
        default_factory=dict, description="Arguments after defaults were applied (e.g. the resolved window)."
    )
    notes: dict[str, Any] = Field(
        default_factory=dict, description="Backend notes: skipped lines, files scanned, row cap hit..."
    )


# ---- canonical record (Redis, harness only) ------------------------------------------------


class CanonicalRecord(BaseModel):
    """The harness's full record of one tool call, keyed by (run_id, tool_call_id)."""

    run_id: str
    tool_call_id: str
    tool_name: ToolNameStr
    arguments: dict[str, Any] = Field(description="Arguments as the model sent them (after JSON decoding).")
    effective_arguments: dict[str, Any] = Field(
        default_factory=dict, description="Validated arguments with defaults applied; grounding source."
    )
    state: InvocationState
    evidence_status: EvidenceStatus | None = None
    raw_result: RawResult | None = None
    projection: dict[str, Any] | None = Field(default=None, description="The projection JSON exactly as given to the agent.")
    error: ToolError | None = None
    started_at: datetime
    finished_at: datetime | None = None
    duration_ms: float | None = None


class InvocationMeta(BaseModel):
    """Long-lived audit row of one call (SQL). Never holds raw payloads."""

    run_id: str
    tool_call_id: str
    tool_name: ToolNameStr
    state: InvocationState
    evidence_status: EvidenceStatus | None
    count: int = 0
    raw_bytes: int = 0
    projection_bytes: int = 0
    truncated: bool = False
    duration_ms: float = 0.0
    error_code: str | None = None
    started_at: datetime


class CallSummary(BaseModel):
    """One line about a referencable call, given to EvidenceRepair and used for fallbacks."""

    tool_call_id: str
    tool_name: ToolNameStr
    evidence_status: EvidenceStatus
    summary: str = Field(description="One-line safe summary, e.g. 'query_logs service=order-service query=timeout: 37 lines'.")
