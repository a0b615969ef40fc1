"""What the queue carries: one user message to answer (a turn job), and a worker's claim on it."""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel, Field

from core.contracts.run import Intent, SessionKey, Turn

MAX_JOB_BYTES = 16 * 1024  # a turn's text is ≤ 4,000 characters; anything far larger is not ours


def turn_job_id(channel: str, message_ts: str) -> str:
    """`<channel>:<message_ts>`: the user message's identity, its dedup key and its answer record's key."""
    return f"{channel}:{message_ts}"


class TurnJob(BaseModel):
    """One user message to answer. The same job may run more than once (a dead worker, a deploy); it is answered
    once (core/turns/answers.py)."""

    job_id: str
    session: SessionKey
    text: str = Field(max_length=4000)
    user: str
    message_ts: str
    run_id: str = Field(description="The first attempt's run id (known at enqueue: `/diag cancel` can name it).")
    attempt: int = Field(default=1, ge=1, description="Raised each time the job is handed back at shutdown.")
    enqueued_at: float = Field(default_factory=time.time, description="Epoch seconds of the first enqueue.")
    intent: Intent | None = Field(default=None, description="The turn's intent when its source fixes it (alerts).")

    def turn(self, run_id: str, restart_of: str | None) -> Turn:
        """The turn one attempt runs."""
        return Turn(session=self.session, text=self.text, user=self.user, message_ts=self.message_ts, run_id=run_id,
                    restart_of=restart_of, intent=self.intent, queued=True)

    def encode(self) -> str:
        return self.model_dump_json()

    @classmethod
    def decode(cls, raw: str | bytes) -> TurnJob:
        """Parse a stored job (ValueError when it is not one of ours or oversized)."""
        if len(raw) > MAX_JOB_BYTES:
            raise ValueError(f"queued job of {len(raw)} bytes exceeds {MAX_JOB_BYTES}")
        return cls.model_validate_json(raw)


class Enqueued(StrEnum):
    """What `JobQueue.enqueue` did."""

    QUEUED = "queued"
    DUPLICATE = "duplicate"  # the same user message was queued before (a retry, a double delivery)
    FULL = "full"  # DIAG_QUEUE_MAX jobs are waiting: the turn is refused with a "busy" answer


class StartState(StrEnum):
    """What `JobQueue.start` found."""

    WAIT = "wait"  # an earlier unfinished job of the same thread is ahead
    CANCELLED = "cancelled"  # a cancel reached the job before it started
    STARTED = "started"  # the attempt is recorded: it runs now


@dataclass(frozen=True)
class Started:
    """`JobQueue.start`'s answer: the state, and for STARTED the previous attempt's run id (if one started)."""

    state: StartState
    previous: str | None = None


@dataclass(frozen=True)
class Poison:
    """Why a queue entry is not a turn job, and its raw text as the dead-letter stream keeps it (bounded)."""

    reason: str
    raw: str


@dataclass(frozen=True)
class Claim:
    """A worker's hold on one delivery of a job: `entry` names the delivery (a stream entry id in Redis).

    With `poison` set the entry was not a turn job: `job` is a stand-in addressing its thread (no text), to be
    answered "could not be processed" and finished (core/queue/poison.py)."""

    job: TurnJob
    entry: str
    deliveries: int = 1
    poison: Poison | None = None

    @property
    def redelivered(self) -> bool:
        """True when an earlier delivery of this job may have started a run (a dead worker, a hand-back)."""
        return self.deliveries > 1 or self.job.attempt > 1


@dataclass(frozen=True)
class QueueDepth:
    """Jobs not yet finished (waiting or running) and the age of the oldest."""

    jobs: int
    oldest_age_s: float
