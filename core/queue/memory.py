"""The turn queue in this process (no REDIS_URL): the same interface and rules, nothing survives a restart."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from core.queue.job import Claim, Enqueued, QueueDepth, Started, StartState, TurnJob

MAX_RECORDS = 100_000  # finished-job records kept for dedup (oldest forgotten first)


@dataclass
class _Thread:
    order: list[str] = field(default_factory=list)  # unfinished job ids, arrival order


class InMemoryJobQueue:
    """JobQueue for one process: a FIFO of deliveries; a delivery is owned until finished or handed back."""

    durable = False

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._waiting: OrderedDict[str, Claim] = OrderedDict()
        self._running: dict[str, Claim] = {}
        self._state: OrderedDict[str, str] = OrderedDict()  # job id -> queued | done
        self._threads: dict[str, _Thread] = {}
        self._runs: dict[str, str] = {}  # job id -> current run id
        self._run_jobs: OrderedDict[str, str] = OrderedDict()  # run id -> job id (bounded like the records)
        self._cancelled: set[str] = set()
        self._arrived = asyncio.Condition()

    def __len__(self) -> int:
        return len(self._waiting) + len(self._running)

    @property
    def waiting(self) -> int:
        """Jobs no worker has taken yet."""
        return len(self._waiting)

    def _remember(self, job_id: str, state: str) -> None:
        self._state[job_id] = state
        self._state.move_to_end(job_id)
        while len(self._state) > MAX_RECORDS:
            old, _ = self._state.popitem(last=False)
            self._runs.pop(old, None)
            self._cancelled.discard(old)

    def _link(self, run_id: str, job_id: str) -> None:
        self._run_jobs[run_id] = job_id
        while len(self._run_jobs) > MAX_RECORDS:
            self._run_jobs.popitem(last=False)

    async def _add(self, claim: Claim) -> None:
        self._waiting[claim.entry] = claim
        async with self._arrived:
            self._arrived.notify_all()

    async def enqueue(self, job: TurnJob, max_jobs: int) -> Enqueued:
        """Queue a job unless its message was queued before or `max_jobs` are unfinished."""
        if job.job_id in self._state:
            return Enqueued.DUPLICATE
        if len(self) >= max_jobs:
            return Enqueued.FULL
        self._remember(job.job_id, "queued")
        self._threads.setdefault(job.session.as_str(), _Thread()).order.append(job.job_id)
        self._link(job.run_id, job.job_id)
        await self._add(Claim(job=job, entry=str(next(self._ids))))
        return Enqueued.QUEUED

    async def take(self, consumer: str, count: int, block_s: float) -> list[Claim]:
        """Up to `count` waiting deliveries, waiting up to `block_s` for the first."""
        if not self._waiting:
            async with self._arrived:
                try:
                    await asyncio.wait_for(self._arrived.wait_for(lambda: bool(self._waiting)), block_s)
                except TimeoutError:
                    return []
        taken: list[Claim] = []
        while self._waiting and len(taken) < count:
            _, claim = self._waiting.popitem(last=False)
            self._running[claim.entry] = claim
            taken.append(claim)
        return taken

    async def reclaim(self, consumer: str, idle_s: float, count: int) -> list[Claim]:
        """Nothing to take over: every worker of this queue is this process."""
        return []

    async def heartbeat(self, consumer: str, claims: Sequence[Claim]) -> list[Claim]:
        """Deliveries stay owned while this process lives: none is ever lost."""
        return []

    async def begin(self, job: TurnJob, run_id: str) -> str | None:
        """Record `run_id` as the job's current attempt; the previous attempt's run id, if one started."""
        previous = self._runs.get(job.job_id)
        self._runs[job.job_id] = run_id
        self._link(run_id, job.job_id)
        return None if previous == run_id else previous

    async def next_in_thread(self, job: TurnJob) -> bool:
        """True when no earlier unfinished job of the same thread is ahead of this one."""
        thread = self._threads.get(job.session.as_str())
        return thread is None or not thread.order or thread.order[0] == job.job_id or job.job_id not in thread.order

    async def start(self, job: TurnJob, run_id: str) -> Started:
        """next_in_thread, is_cancelled and begin in one call (as the Redis queue does in one script)."""
        if not await self.next_in_thread(job):
            return Started(StartState.WAIT)
        if await self.is_cancelled(job.job_id):
            return Started(StartState.CANCELLED)
        return Started(StartState.STARTED, await self.begin(job, run_id))

    def _leave_thread(self, job: TurnJob) -> None:
        key = job.session.as_str()
        thread = self._threads.get(key)
        if thread is not None:
            if job.job_id in thread.order:
                thread.order.remove(job.job_id)
            if not thread.order:
                del self._threads[key]

    async def finish(self, claim: Claim) -> None:
        """The job is answered: remove it; the thread's next job may run."""
        self._running.pop(claim.entry, None)
        self._waiting.pop(claim.entry, None)
        self._remember(claim.job.job_id, "done")
        self._leave_thread(claim.job)
        self._cancelled.discard(claim.job.job_id)

    async def hand_back(self, claim: Claim) -> None:
        """Give an unfinished job back (a new delivery, its attempt raised)."""
        self._running.pop(claim.entry, None)
        job = claim.job.model_copy(update={"attempt": claim.job.attempt + 1})
        await self._add(Claim(job=job, entry=str(next(self._ids))))

    async def cancel_queued(self, session_key: str) -> int:
        """Flag the session's jobs that have not started yet as cancelled; how many were flagged."""
        thread = self._threads.get(session_key)
        return sum([await self.cancel_job(job_id) for job_id in list(thread.order)] if thread else [])

    async def cancel_job(self, job_id: str) -> bool:
        """Flag one queued, not yet started job as cancelled; True when flagged."""
        if self._state.get(job_id) != "queued" or job_id in self._runs or job_id in self._cancelled:
            return False
        self._cancelled.add(job_id)
        return True

    async def job_of_run(self, run_id: str) -> str | None:
        """The job a run id belongs to."""
        return self._run_jobs.get(run_id)

    async def current_run(self, job_id: str) -> str | None:
        """The run id of the job's latest started attempt."""
        return self._runs.get(job_id)

    async def job_state(self, job_id: str) -> str | None:
        """`queued` (waiting or running), `done`, or None."""
        return self._state.get(job_id)

    async def is_cancelled(self, job_id: str) -> bool:
        """True when a cancel reached the job before it started."""
        return job_id in self._cancelled

    async def depth(self) -> QueueDepth:
        """Unfinished jobs and the age of the oldest."""
        claims = list(self._running.values()) + list(self._waiting.values())
        if not claims:
            return QueueDepth(0, 0.0)
        oldest = min(c.job.enqueued_at for c in claims)
        return QueueDepth(len(claims), max(0.0, time.time() - oldest))

    async def forget_consumers(self, idle_s: float) -> int:
        """No consumer records to clean up."""
        return 0
