"""Turns as jobs: the listeners submit them (`TurnJobs`), workers run them (`JobWorker`), in any process.

A user message becomes a `TurnJob` whose id is the message's identity (`<channel>:<ts>`): a Slack retry or a
double delivery finds it queued already. A worker takes jobs while it has fewer than DIAG_WORKER_CONCURRENCY runs,
heartbeats every job it holds, and takes over jobs whose worker stopped heartbeating (kill -9, OOM, a lost host)
for `claim_after_s` — those re-run from the start under a new run id linked to the first, in the same placeholder.
Turns of one thread run one at a time in arrival order whichever worker holds them (the queue's thread order, then
the session lock). At shutdown a worker stops taking jobs, lets its runs finish within the grace period and hands
the rest back to the queue for another worker; its answers go out once whatever happens (bot/final_once.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass

from bot.final_once import answered
from bot.render.message import busy_message, gave_up_message, unprocessable_message
from bot.turns import MAX_TURN_TEXT, Attempt, Ready, TurnRunner
from core.contracts.run import SessionKey
from core.errors import StoreUnavailable
from core.observability.metrics import Metrics
from core.ports import ChatServicePort, JobQueue
from core.queue.job import Claim, Enqueued, TurnJob, turn_job_id
from core.service.chat_service import new_run_id

log = logging.getLogger(__name__)

TAKE_BLOCK_S = 1.0
ORDER_POLL_S = 0.1
STORE_RETRY_S = 1.0
FORGET_CONSUMERS_AFTER_S = 3600.0
MAX_DELIVERIES = 3  # a job whose process stopped on this many tries is answered with a FAILURE, not tried again
WAITERS_PER_RUN = 4  # jobs held waiting for their thread, per run slot (beyond it the worker stops taking)
STOP_TIMEOUT_S = 5.0


def consumer_name() -> str:
    """This process's consumer name: unique per start, so a restarted process never mistakes old deliveries for its
    own (they are taken over by idle time like any dead worker's)."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class TurnJobs:
    """What the listeners call: submit a user message as a job; cancel a thread's turns wherever they are."""

    def __init__(self, queue: JobQueue, runner: TurnRunner, chat: ChatServicePort, *, max_jobs: int,
                 metrics: Metrics | None = None, worker: JobWorker | None = None) -> None:
        self._queue = queue
        self._runner = runner
        self._chat = chat
        self._max_jobs = max_jobs
        self._metrics = metrics or Metrics()
        self.queue = queue
        self.worker = worker

    @property
    def in_flight(self) -> int:
        """Listeners deciding, background work, and this process's worker's jobs (queued here included)."""
        local = self.worker.in_flight if self.worker is not None else 0
        waiting = getattr(self._queue, "waiting", 0) if not self._queue.durable else 0
        return self._runner.in_flight + local + int(waiting)

    async def submit(self, session: SessionKey, text: str, user: str, message_ts: str) -> Enqueued:
        """Queue the turn (after the ack). A full queue gets an immediate "busy" answer; a queue that is down runs
        the turn in this process instead (not durable, but answered)."""
        if self.worker is not None:
            self.worker.start()
        job = TurnJob(job_id=turn_job_id(session.channel, message_ts), session=session, text=text[:MAX_TURN_TEXT],
                      user=user, message_ts=message_ts, run_id=new_run_id())
        try:
            result = await self._queue.enqueue(job, self._max_jobs)
        except StoreUnavailable as exc:
            log.warning("turn queue unavailable (%s); running turn %s in this process", exc, job.job_id)
            self._metrics.queue_job("direct")
            self._runner.start(session, text, user, message_ts)
            return Enqueued.QUEUED
        self._metrics.queue_job(result.value)
        if result is Enqueued.FULL:
            log.warning("turn queue full (%d jobs); turn %s answered busy", self._max_jobs, job.job_id)
            self._runner.spawn(self._runner.post_final(job, f"busy:{job.run_id}", busy_message(self._max_jobs,
                                                                                               job.run_id)),
                               name=f"busy:{job.job_id}")
        return result

    async def cancel_session(self, session_key: str) -> bool:
        """Stop the thread's running run and its turns still waiting in the queue; False when neither existed."""
        stopped = await self._chat.cancel_session(session_key)
        try:
            queued = await self._queue.cancel_queued(session_key)
        except StoreUnavailable as exc:
            log.warning("queued turns of a session not cancelled: %s", exc)
            queued = 0
        return stopped or queued > 0

    async def cancel_run(self, run_id: str) -> bool:
        """Stop a run wherever it runs, or its turn if it still waits in the queue; False when it is neither."""
        if await self._chat.cancel_run(run_id):
            return True
        try:
            job_id = await self._queue.job_of_run(run_id)
            return job_id is not None and await self._queue.cancel_job(job_id)
        except StoreUnavailable as exc:
            log.warning("cancel of queued run %s not recorded: %s", run_id, exc)
            return False


@dataclass
class _Held:
    claim: Claim
    task: asyncio.Task[None] | None = None
    attempt: Attempt | None = None
    running: bool = False  # past the thread-order wait: counts against the concurrency
    handed_back: bool = False


@dataclass(frozen=True)
class WorkerPolicy:
    """How a worker takes, holds and gives back jobs."""

    concurrency: int = 16
    claim_after_s: float = 30.0
    """A delivery not heartbeated for this long belongs to a dead worker and is taken over."""
    shutdown_grace_s: float = 30.0

    @property
    def heartbeat_s(self) -> float:
        """How often held jobs are heartbeated (and dead workers' jobs looked for)."""
        return max(0.05, min(5.0, self.claim_after_s / 4))


class JobWorker:
    """Takes jobs from the queue and runs each through the TurnRunner."""

    def __init__(self, queue: JobQueue, runner: TurnRunner, policy: WorkerPolicy = WorkerPolicy(), *,
                 consumer: str | None = None, metrics: Metrics | None = None) -> None:
        self._queue = queue
        self._runner = runner
        self._policy = policy
        self.consumer = consumer or consumer_name()
        self._metrics = metrics or Metrics()
        self._held: dict[str, _Held] = {}
        self._slot_freed = asyncio.Event()
        self._stopping = False
        self._tasks: list[asyncio.Task[None]] = []
        self._last_forget = 0.0

    @property
    def in_flight(self) -> int:
        """Jobs this worker holds (waiting for their thread or running)."""
        return len(self._held)

    @property
    def runs(self) -> int:
        """Jobs past their thread's wait, i.e. runs (capped by the concurrency)."""
        return sum(1 for held in self._held.values() if held.running)

    def start(self) -> None:
        """Start taking jobs (call inside the running loop)."""
        if not self._tasks:
            self._tasks = [asyncio.create_task(self._take_loop(), name=f"queue-take:{self.consumer}"),
                           asyncio.create_task(self._keep_loop(), name=f"queue-keep:{self.consumer}")]

    def _free(self) -> int:
        return min(self._policy.concurrency - self.runs,
                   self._policy.concurrency * WAITERS_PER_RUN - len(self._held))

    async def _take_loop(self) -> None:
        while not self._stopping:
            free = self._free()
            if free <= 0:
                self._slot_freed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._slot_freed.wait(), TAKE_BLOCK_S)
                continue
            try:
                claims = await self._queue.take(self.consumer, free, TAKE_BLOCK_S)
            except StoreUnavailable as exc:
                log.warning("taking turn jobs failed: %s; retrying", exc)
                await asyncio.sleep(STORE_RETRY_S)
                continue
            for claim in claims:
                self._launch(claim)

    def _launch(self, claim: Claim) -> None:
        if claim.entry in self._held:
            return
        held = self._held[claim.entry] = _Held(claim)
        held.task = asyncio.create_task(self._work(held), name=f"job:{claim.job.job_id}")

    async def _keep_loop(self) -> None:
        """Heartbeat held jobs, take over dead workers' jobs, publish the queue's depth."""
        while True:
            await asyncio.sleep(self._policy.heartbeat_s)
            try:
                await self._keep()
            except StoreUnavailable as exc:  # the next tick tries again; held jobs keep running
                log.warning("turn queue upkeep failed: %s", exc)

    async def _keep(self) -> None:
        claims = [held.claim for held in self._held.values() if not held.handed_back]
        for lost in await self._queue.heartbeat(self.consumer, claims):
            log.warning("turn %s was taken over by another worker while this one ran it", lost.job.job_id)
        if not self._stopping and (free := self._free()) > 0:
            for claim in await self._queue.reclaim(self.consumer, self._policy.claim_after_s, free):
                log.warning("taking over turn %s from a worker that stopped", claim.job.job_id)
                self._metrics.queue_job("reclaimed")
                self._launch(claim)
        depth = await self._queue.depth()
        self._metrics.queue_state(depth.jobs, depth.oldest_age_s)
        if time.monotonic() - self._last_forget > FORGET_CONSUMERS_AFTER_S / 4:
            self._last_forget = time.monotonic()
            await self._queue.forget_consumers(FORGET_CONSUMERS_AFTER_S)

    async def _work(self, held: _Held) -> None:
        claim = held.claim
        job = claim.job
        try:
            if claim.poison is not None:
                await self._refuse_poison(held)
                return
            if claim.redelivered and await answered(self._runner.kv, job.job_id):
                await self._finish(held)  # its earlier worker answered, then died before finishing the job
                return
            if claim.deliveries > MAX_DELIVERIES:
                await self._give_up(held)
                return
            run_id = new_run_id() if claim.redelivered else job.run_id
            held.attempt = Attempt(job=job, run_id=run_id, ready=lambda: self._ready(held, run_id),
                                   adopt_placeholder=claim.redelivered, on_taken_over=lambda: self._finish(held))
            await self._runner.run(held.attempt)
        except asyncio.CancelledError:
            if not held.handed_back and not self._queue.durable:
                await asyncio.shield(self._finish(held))  # nothing survives this process anyway
            raise
        except Exception:  # the runner answers every turn itself; this is the queue's own bookkeeping failing
            log.exception("turn job %s failed", job.job_id)
        else:
            await self._finish(held)
        finally:
            self._release(held)

    async def _give_up(self, held: _Held) -> None:
        """Every earlier try died with its process: say so in the thread, once, and finish the job."""
        job, tries = held.claim.job, held.claim.deliveries - 1
        log.error("turn %s: its process stopped on each of %d tries; answering FAILURE instead of a new try",
                  job.job_id, tries)
        self._metrics.queue_job("gave_up")
        run_id = await self._queue.current_run(job.job_id) or job.run_id
        await self._runner.post_final(job, f"gave-up:{held.claim.entry}", gave_up_message(run_id, tries))
        await self._finish(held)

    async def _refuse_poison(self, held: _Held) -> None:
        """An entry that is not a turn job but names its thread: one plain final there, then out of the queue."""
        claim = held.claim
        assert claim.poison is not None
        log.error("queue entry %s for turn %s is not a turn job (%s); answered 'could not be processed'",
                  claim.entry, claim.job.job_id, claim.poison.reason)
        await self._runner.post_final(claim.job, f"poison:{claim.entry}", unprocessable_message(claim.job.run_id))
        await self._finish(held)

    async def _ready(self, held: _Held, run_id: str) -> Ready:
        """Wait until the job is first of its thread, then record the attempt; no go when cancelled meanwhile."""
        job = held.claim.job
        while not await self._queue.next_in_thread(job):  # noqa: ASYNC110 - the thread may be in another process
            await asyncio.sleep(ORDER_POLL_S)
        if await self._queue.is_cancelled(job.job_id):
            return Ready(go=False)
        held.running = True
        previous = await self._queue.begin(job, run_id)
        return Ready(go=True, restart_of=previous)

    async def _finish(self, held: _Held) -> None:
        if held.handed_back:
            return
        try:
            await self._queue.finish(held.claim)
            self._metrics.queue_job("finished")
        except StoreUnavailable as exc:  # left pending: another worker finds it answered and finishes it
            log.warning("turn job %s not marked finished: %s", held.claim.job.job_id, exc)
        finally:
            self._release(held)

    def _release(self, held: _Held) -> None:
        if self._held.get(held.claim.entry) is held:
            del self._held[held.claim.entry]
            self._slot_freed.set()

    async def aclose(self, grace_s: float | None = None) -> None:
        """Stop taking jobs; let runs finish within the grace period; hand the rest back (or, without a durable
        queue, cancel them: their threads are told)."""
        grace_s = self._policy.shutdown_grace_s if grace_s is None else grace_s
        self._stopping = True
        take = self._tasks[0] if self._tasks else None
        if take is not None:
            take.cancel()
            await asyncio.wait({take}, timeout=STOP_TIMEOUT_S)
        running = {h.task for h in self._held.values() if h.task is not None}
        if running:
            await asyncio.wait(running, timeout=grace_s)
        for held in list(self._held.values()):
            await self._give_back(held)
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=STOP_TIMEOUT_S)
        self._tasks = []

    async def _give_back(self, held: _Held) -> None:
        """A job still held at the end of the grace period: back to the queue for another worker, or cancelled."""
        task = held.task
        if self._queue.durable:
            held.handed_back = True
            if held.attempt is not None:
                held.attempt.handing_back = True
            try:
                await self._queue.hand_back(held.claim)
                self._metrics.queue_job("handed_back")
                log.info("turn %s handed back to the queue at shutdown", held.claim.job.job_id)
            except StoreUnavailable as exc:  # left pending: another worker takes it over by idle time
                log.warning("turn %s not handed back (%s); it is taken over after the claim timeout",
                            held.claim.job.job_id, exc)
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=STOP_TIMEOUT_S)
        self._release(held)
