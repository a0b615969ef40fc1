"""The narrow port between the turn lifecycle and the chat surface it answers on (Slack: bot/slack_surface.py).

A turn needs three things from a surface: a progress message for a target, the delivery of its one final message
to that target, and — after an outage of the shared stores — a way to tell whether a final is already there.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from core.contracts.progress import ProgressUpdate
from core.contracts.release import ReleaseOutcome


@dataclass(frozen=True)
class Target:
    """Where a turn answers: a channel and, when it answers inside one, a thread. Without a thread the progress
    message is posted at the top level and becomes the thread (a turn that starts its own)."""

    channel: str
    thread_ts: str | None = None


class FinalKind(StrEnum):
    """What a final message says."""

    OUTCOME = "outcome"  # the run's release outcome (SUCCESS, SAFE_FALLBACK or FAILURE)
    BUSY = "busy"  # the queue is full: nothing was started for the message
    GAVE_UP = "gave_up"  # every try died with its process: not tried again
    CANCELLED_BEFORE_START = "cancelled_before_start"  # cancelled while it waited behind its thread
    INTERNAL_ERROR = "internal_error"  # the run crashed before producing an outcome
    SHUTDOWN = "shutdown"  # the process stopped and nobody re-runs the turn (no durable queue)
    UNPROCESSABLE = "unprocessable"  # a queue entry that is not a turn job but names its thread (core/queue/poison)


@dataclass(frozen=True)
class Final:
    """A turn's one final message, as data: the surface renders it (and carries `run_id` in its metadata)."""

    kind: FinalKind
    run_id: str | None
    outcome: ReleaseOutcome | None = None
    duration_s: float | None = None
    restart_of: str | None = None
    """The first run id, when this final ends a re-run (the message says so)."""
    count: int = 0
    """BUSY: how many turns wait; GAVE_UP: how many tries died."""


class TurnProgress(Protocol):
    """A turn's progress message (a placeholder edited in place, or a stream)."""

    run_id: str | None

    @property
    def ts(self) -> str | None: ...

    async def start(self) -> None: ...

    async def update(self, run_id: str, update: ProgressUpdate) -> None: ...

    async def close(self) -> None: ...


class TurnSurface(Protocol):
    """What the lifecycle asks of the chat surface."""

    def progress(self, target: Target, *, user: str, team: str, placeholder_ts: str | None) -> TurnProgress:
        """The progress message of one attempt; with `placeholder_ts` (an earlier attempt's) that same message."""
        ...

    async def deliver(self, target: Target, placeholder_ts: str | None, final: Final, *, until: float) -> str | None:
        """Put `final` in the target (in the placeholder when there is one), retrying until `until` (monotonic);
        its ts, or None when it could not be delivered (logged). Never raises for a surface failure."""
        ...

    async def final_in_thread(self, target: Target, placeholder_ts: str | None, after_ts: str,
                              run_ids: Collection[str]) -> str | None:
        """The ts of a final message already in the target for one of `run_ids` (or in the placeholder, whatever
        its run), None when there is none; raises when the surface cannot tell."""
        ...
