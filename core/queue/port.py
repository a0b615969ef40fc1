"""The turn queue's port (SPEC §10); core/queue/redis_streams.py and core/queue/memory.py implement it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from core.queue.job import Claim, Enqueued, QueueDepth, Started, TurnJob


class JobQueue(Protocol):
    """The turn queue (core/queue/): Redis Streams for several processes, or in-process (SPEC §10)."""

    @property
    def durable(self) -> bool:
        """True when jobs outlive this process (another worker can take them over)."""
        ...

    async def enqueue(self, job: TurnJob, max_jobs: int) -> Enqueued:
        """Queue a job unless its message was queued before or `max_jobs` are unfinished."""
        ...

    async def take(self, consumer: str, count: int, block_s: float) -> list[Claim]:
        """Up to `count` new deliveries for `consumer`, waiting up to `block_s` for the first."""
        ...

    async def reclaim(self, consumer: str, idle_s: float, count: int) -> list[Claim]:
        """Take over deliveries whose worker stopped heartbeating `idle_s` ago."""
        ...

    async def heartbeat(self, consumer: str, claims: Sequence[Claim]) -> list[Claim]:
        """Keep `consumer`'s deliveries; returns those another worker has taken over."""
        ...

    async def begin(self, job: TurnJob, run_id: str) -> str | None:
        """Record the attempt's run id; the previous attempt's, if one started."""
        ...

    async def next_in_thread(self, job: TurnJob) -> bool:
        """True when no earlier unfinished job of the same thread is ahead of this one."""
        ...

    async def start(self, job: TurnJob, run_id: str) -> Started:
        """next_in_thread, then is_cancelled, then begin, in one step: WAIT, CANCELLED, or STARTED (with begin's
        previous run id)."""
        ...

    async def finish(self, claim: Claim) -> None:
        """The job is answered: remove it."""
        ...

    async def hand_back(self, claim: Claim) -> None:
        """Give an unfinished job back for another worker (shutdown)."""
        ...

    async def cancel_queued(self, session_key: str) -> int:
        """Flag the session's not yet started jobs as cancelled; how many."""
        ...

    async def cancel_job(self, job_id: str) -> bool:
        """Flag one not yet started job as cancelled."""
        ...

    async def is_cancelled(self, job_id: str) -> bool: ...

    async def job_of_run(self, run_id: str) -> str | None: ...

    async def current_run(self, job_id: str) -> str | None: ...

    async def job_state(self, job_id: str) -> str | None:
        """`queued` (waiting or running), `done`, or None."""
        ...

    async def depth(self) -> QueueDepth: ...

    async def forget_consumers(self, idle_s: float) -> int:
        """Remove idle consumers with nothing pending (replicas that are gone)."""
        ...
