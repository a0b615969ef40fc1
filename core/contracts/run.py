"""Turns, runs, sessions, budgets and timeline events."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from core.contracts.release import FallbackType, Outcome


class Intent(StrEnum):
    DIAGNOSIS = "DIAGNOSIS"
    KNOWLEDGE = "KNOWLEDGE"
    CHAT = "CHAT"


class StopReason(StrEnum):
    """Why a tool loop (the Diagnosis Agent, the Knowledge Answer) ended."""

    SUBMITTED = "submitted"
    BUDGET_STEPS = "budget_steps"
    BUDGET_TOOL_CALLS = "budget_tool_calls"
    BUDGET_OBSERVATION = "budget_observation"
    DEADLINE = "deadline"
    CANCELLED = "cancelled"
    MODEL_UNAVAILABLE = "model_unavailable"
    WIRE_FORMAT = "wire_format"


class SessionKey(BaseModel, frozen=True):
    """A Slack thread (or a CLI thread id) is one session."""

    team: str
    channel: str
    thread_ts: str

    def as_str(self) -> str:
        return f"{self.team}:{self.channel}:{self.thread_ts}"


class Turn(BaseModel):
    """One user message to process."""

    session: SessionKey
    text: str = Field(max_length=4000)
    user: str
    message_ts: str = Field(description="The user message's own ts (dedup key with channel).")
    run_id: str | None = Field(default=None, description="The id the run gets (chosen by the caller, so a watchdog "
                               "or a queue knows it before the run starts); a fresh one when None.")
    restart_of: str | None = Field(default=None, description="The run this one re-runs (its worker stopped first).")
    intent: Intent | None = Field(default=None, description="Set by the caller instead of the router: an alert's "
                                  "investigation is a DIAGNOSIS whatever its text looks like.")
    queued: bool = Field(default=False, description="The turn queue ordered it behind its thread's earlier turns "
                         "(core/turns/worker.py): the session lock is not taken a second time.")


class Budgets(BaseModel):
    """Per-run limits (SPEC §8)."""

    max_steps: int = 12
    max_tool_calls: int = 20
    tool_timeout_s: float = 15.0
    deadline_s: float = 180.0
    max_observation_bytes: int = 96 * 1024


class RunStatus(StrEnum):
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


class RunRecord(BaseModel):
    """A run as kept in SQL, with the versions it ran under (for explaining and replaying)."""

    run_id: str
    session_key: str
    team: str
    channel: str
    user: str
    query: str
    intent: Intent | None = None
    status: RunStatus = RunStatus.RUNNING
    outcome: Outcome | None = None
    fallback_type: FallbackType | None = None
    prompt_hashes: dict[str, str] = Field(default_factory=dict)
    rule_set_version: str = ""
    models: dict[str, str] = Field(default_factory=dict)
    published_report: dict[str, Any] | None = Field(
        default=None, description="PublishedReport JSON; set only for DIAGNOSIS + SUCCESS."
    )
    started_at: datetime
    finished_at: datetime | None = None


class EventType(StrEnum):
    RUN_STARTED = "RUN_STARTED"
    INTENT_ROUTED = "INTENT_ROUTED"
    MODEL_CALL = "MODEL_CALL"
    TOOL_CALL = "TOOL_CALL"
    FIRST_LOOK = "FIRST_LOOK"
    DRAFT_SUBMITTED = "DRAFT_SUBMITTED"
    EVIDENCE_GUARD_INITIAL = "EVIDENCE_GUARD_INITIAL"
    EVIDENCE_REPAIR = "EVIDENCE_REPAIR"
    EVIDENCE_GUARD_RECHECK = "EVIDENCE_GUARD_RECHECK"
    SEMANTIC_GUARD = "SEMANTIC_GUARD"
    RELEASE_DECISION = "RELEASE_DECISION"
    RUN_FINISHED = "RUN_FINISHED"
    RUN_FAILED = "RUN_FAILED"
    RUN_CANCELLED = "RUN_CANCELLED"


class TimelineEvent(BaseModel):
    """One ordered, safe event of a run. `summary` holds only safe scalars: names, statuses, counts, codes."""

    run_id: str
    seq: int = 0
    type: EventType
    at: datetime
    duration_ms: float = 0.0
    summary: dict[str, Any] = Field(default_factory=dict)
