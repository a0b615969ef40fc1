"""Turns as jobs: the listeners submit them (`TurnJobs`), workers run them (`JobWorker`), in any process.

A message becomes a `TurnJob` whose id is the message's identity (`<channel>:<ts>`). A worker takes jobs while it
holds fewer than DIAG_WORKER_CONCURRENCY that may run (taken or running; those waiting for their thread's earlier
turn do not count), heartbeats every job it holds, and takes over jobs whose worker stopped
heartbeating (kill -9, OOM, a lost host) for `claim_after_s` — those re-run from the start under a new run id linked
to the first, in the same placeholder. At shutdown a worker stops taking jobs, lets its runs finish within the grace
period and hands the rest back to the queue for another worker.

Each duty is done once, here or in one named place:

- duplicate messages: the queue's job id (enqueue is set-if-absent on it). Slack's event-id dedup in bot/ stays
  ahead of it only to skip the work of decoding and routing a retry; a turn's answer record (answers.py) stays
  because one job can be *run* twice (a take-over while the first worker was only slow), which no enqueue check
  can see.
- a thread's turns one at a time: the queue's thread order (`next_in_thread`), across processes; a queued turn
  (`Turn.queued`) does not take the core's session lock again. That lock (core/service/sessions.py) serialises
  only the turns that bypass the queue (the queue is down: run in this process; `diagbot ask`); the gate stays
  the cancel registry for every run.
- "a turn did not finish": a run that hangs → the watchdog (runner); a worker that died → the queue's take-over
  here (re-run, or FAILURE after MAX_DELIVERIES); a run whose job is gone (no durable queue) → recovery.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import socket
import time
import uuid
from dataclasses import dataclass, field

from core.contracts.run import Intent, SessionKey
from core.errors import StoreUnavailable
from core.observability.metrics import Metrics
from core.ports import ChatServicePort, JobQueue
from core.queue.job import Claim, Enqueued, StartState
from core.service.chat_service import new_run_id
from core.turns.runner import Attempt, TurnRunner, new_job, target_of
from core.turns.surface import Final, FinalKind

log = logging.getLogger(__name__)

FORGET_CONSUMERS_AFTER_S = 3600.0
MAX_DELIVERIES = 3  # a job whose process stopped on this many tries is answered with a FAILURE, not tried again
WAITERS_PER_RUN = 4  # jobs held waiting for their thread, per run slot (beyond it the worker stops taking)
STOP_TIMEOUT_S = 5.0


def consumer_name() -> str:
    """This process's consumer name: unique per start, so a restarted process never mistakes old deliveries for its
    own (they are taken over by idle time like any dead worker's)."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class TurnJobs:
    """What the listeners call: submit a message as a job; cancel a thread's turns wherever they are."""

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

    async def submit(self, session: SessionKey, text: str, user: str, message_ts: str, *,
                     intent: Intent | None = None) -> Enqueued:
        """Queue the turn (after the ack). A full queue gets an immediate "busy" answer; a queue that is down runs
        the turn in this process instead (not durable, but answered)."""
        if self.worker is not None:
            self.worker.start()
        job = new_job(session, text, user, message_ts, intent)
        try:
            result = await self._queue.enqueue(job, self._max_jobs)
        except StoreUnavailable as exc:
            log.warning("turn queue unavailable (%s); running turn %s in this process", exc, job.job_id)
            self._metrics.queue_job("direct")
            self._runner.start(session, text, user, message_ts, intent)
            return Enqueued.QUEUED
        self._metrics.queue_job(result.value)
        if result is Enqueued.FULL:
            log.warning("turn queue full (%d jobs); turn %s answered busy", self._max_jobs, job.job_id)
            busy = Final(FinalKind.BUSY, job.run_id, count=self._max_jobs)
            self._runner.spawn(self._runner.post_final(job, f"busy:{job.run_id}", busy), name=f"busy:{job.job_id}")
        return result

    async def cancel_session(self, session_key: str) -> bool:
        """Stop the thread's running run and its turns still waiting in the queue; False when neither existed.

        The waiting turns are flagged first: stopping the running one frees the thread, and a turn behind it that
        was not flagged yet would start in that gap."""
        try:
            queued = await self._queue.cancel_queued(session_key)
        except StoreUnavailable as exc:
            log.warning("queued turns of a session not cancelled: %s", exc)
            queued = 0
        stopped = await self._chat.cancel_session(session_key)
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


@dataclass(frozen=True)
class WorkerPolicy:
    """How many runs a worker takes at once (its timing is the runner's TurnTiming)."""

    concurrency: int = 16


@dataclass
class _Held:
    """One delivery this worker holds; the queue's hooks around its attempt (JobHooks)."""

    worker: JobWorker
    claim: Claim
    task: asyncio.Task[None] | None = None
    attempt: Attempt | None = None
    run_id: str = ""
    waiting: bool = False  # told to wait for its thread's earlier turn: does not count against the concurrency
    handed_back: bool = False
    finished: bool = field(default=False)

    async def ready(self) -> tuple[bool, str | None]:
        return await self.worker.ready(self)

    async def taken_over(self) -> None:
        await self.worker.finish(self)


class JobWorker:
    """Takes jobs from the queue and runs each through the TurnRunner."""

    def __init__(self, queue: JobQueue, runner: TurnRunner, policy: WorkerPolicy = WorkerPolicy(), *,
                 consumer: str | None = None, metrics: Metrics | None = None) -> None:
        self._queue = queue
        self._runner = runner
        self._timing = runner.timing
        self._policy = policy
        self.consumer = consumer or consumer_name()
        self._metrics = metrics or Metrics()
        self._held: dict[str, _Held] = {}
        self._waiting = 0  # held jobs told to wait for their thread's earlier turn (kept here, not counted per take)
        self._unfinished: dict[str, Claim] = {}  # answered, but the queue could not be told (the store was down)
        self._slot_freed = asyncio.Event()
        self._stopping = False
        self._tasks: list[asyncio.Task[None]] = []
        self._last_forget = 0.0
        self._reclaim_from = 0.0  # no take-overs before this (monotonic): set after a store outage

    @property
    def in_flight(self) -> int:
        """Jobs this worker holds (waiting for their thread or running)."""
        return len(self._held)

    def start(self) -> None:
        """Start taking jobs (call inside the running loop)."""
        if not self._tasks:
            self._tasks = [asyncio.create_task(self._take_loop(), name=f"queue-take:{self.consumer}"),
                           asyncio.create_task(self._keep_loop(), name=f"queue-keep:{self.consumer}")]

    def _free(self) -> int:
        """Slots for new jobs. A held job counts against the concurrency unless it is known to wait for its thread:
        one taken but not started yet is about to run, and leaving it out let the first worker to read a burst
        take far more than its share (312 of 500 with two workers of 250) while the other idled."""
        return min(self._policy.concurrency - (len(self._held) - self._waiting),
                   self._policy.concurrency * WAITERS_PER_RUN - len(self._held))

    async def _take_loop(self) -> None:
        while not self._stopping:
            free = self._free()
            if free <= 0:
                self._slot_freed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._slot_freed.wait(), self._timing.take_block_s)
                continue
            try:
                claims = await self._queue.take(self.consumer, free, self._timing.take_block_s)
            except StoreUnavailable as exc:
                log.warning("taking turn jobs failed: %s; retrying", exc)
                await asyncio.sleep(self._timing.store_retry_s)
                continue
            for claim in claims:
                self._launch(claim)

    def _launch(self, claim: Claim) -> None:
        if claim.entry in self._held:
            return
        held = self._held[claim.entry] = _Held(self, claim)
        held.task = asyncio.create_task(self._work(held), name=f"job:{claim.job.job_id}")

    async def _keep_loop(self) -> None:
        """Heartbeat held jobs, take over dead workers' ones, finish what an outage left, publish the depth."""
        while True:
            await asyncio.sleep(self._timing.heartbeat_s)
            try:
                await self._keep()
            except StoreUnavailable as exc:  # the next tick tries again; held jobs keep running
                log.warning("turn queue upkeep failed: %s", exc)
                # Nobody could heartbeat meanwhile, so once the store is back every job looks idle: take over
                # only after one claim_after_s of working store, in which every live worker has beaten again.
                self._reclaim_from = math.inf

    async def _keep(self) -> None:
        await self._catch_up()
        claims = [held.claim for held in self._held.values() if not held.handed_back]
        for lost in await self._queue.heartbeat(self.consumer, claims):
            log.warning("turn %s was taken over by another worker while this one ran it", lost.job.job_id)
        if self._reclaim_from == math.inf:
            self._reclaim_from = time.monotonic() + self._timing.claim_after_s
        if not self._stopping and time.monotonic() >= self._reclaim_from and (free := self._free()) > 0:
            for claim in await self._queue.reclaim(self.consumer, self._timing.claim_after_s, free):
                log.warning("taking over turn %s from a worker that stopped", claim.job.job_id)
                self._metrics.queue_job("reclaimed")
                self._launch(claim)
        depth = await self._queue.depth()
        self._metrics.queue_state(depth.jobs, depth.oldest_age_s)
        if time.monotonic() - self._last_forget > FORGET_CONSUMERS_AFTER_S / 4:
            self._last_forget = time.monotonic()
            await self._queue.forget_consumers(FORGET_CONSUMERS_AFTER_S)

    async def _catch_up(self) -> None:
        """After an outage: write the answer records and finish the jobs of turns answered meanwhile."""
        await self._runner.answers.flush()
        for entry, claim in list(self._unfinished.items()):
            await self._queue.finish(claim)  # raises while the store is still down: the next tick tries again
            del self._unfinished[entry]
            self._metrics.queue_job("finished")

    async def _work(self, held: _Held) -> None:
        claim = held.claim
        job = claim.job
        try:
            if claim.poison is not None:
                await self._refuse_poison(held)
                return
            if claim.redelivered and await self._answered(held):
                await self.finish(held)  # an earlier worker answered, then died (or lost the store) before finishing
                return
            if claim.deliveries > MAX_DELIVERIES:
                await self._give_up(held)
                return
            held.run_id = new_run_id() if claim.redelivered else job.run_id
            held.attempt = Attempt(job=job, run_id=held.run_id, hooks=held, adopt_placeholder=claim.redelivered)
            await self._runner.run(held.attempt)
        except asyncio.CancelledError:
            if not held.handed_back and not self._queue.durable:
                await asyncio.shield(self.finish(held))  # nothing survives this process anyway
            raise
        except Exception:  # the runner answers every turn itself; this is the queue's own bookkeeping failing
            log.exception("turn job %s failed", job.job_id)
        else:
            await self.finish(held)
        finally:
            self._release(held)

    async def _answered(self, held: _Held) -> bool:
        """A redelivered job: answered already (by its record, or — the record lost to an outage — in its thread
        by one of its runs)?"""
        job = held.claim.job
        runs = {job.run_id}
        with contextlib.suppress(StoreUnavailable):
            if current := await self._queue.current_run(job.job_id):
                runs.add(current)
        return await self._runner.answers.answered_anywhere(job.job_id, target_of(job), job.message_ts, runs)

    async def _give_up(self, held: _Held) -> None:
        """Every earlier try died with its process: say so in the thread, once, and finish the job."""
        job, tries = held.claim.job, held.claim.deliveries - 1
        log.error("turn %s: its process stopped on each of %d tries; answering FAILURE instead of a new try",
                  job.job_id, tries)
        self._metrics.queue_job("gave_up")
        run_id = await self._queue.current_run(job.job_id) or job.run_id
        await self._runner.post_final(job, f"gave-up:{held.claim.entry}", Final(FinalKind.GAVE_UP, run_id,
                                                                                 count=tries))
        await self.finish(held)

    async def _refuse_poison(self, held: _Held) -> None:
        """An entry that is not a turn job but names its thread: one plain final there, then out of the queue."""
        claim = held.claim
        assert claim.poison is not None
        log.error("queue entry %s for turn %s is not a turn job (%s); answered 'could not be processed'",
                  claim.entry, claim.job.job_id, claim.poison.reason)
        await self._runner.post_final(claim.job, f"poison:{claim.entry}", Final(FinalKind.UNPROCESSABLE,
                                                                                 claim.job.run_id))
        await self.finish(held)

    async def ready(self, held: _Held) -> tuple[bool, str | None]:
        """Wait until the job is first of its thread, then record the attempt; no go when cancelled meanwhile."""
        job = held.claim.job
        # polling: the thread's earlier turn may run in another process, so there is no event to wait on
        while (started := await self._queue.start(job, held.run_id)).state is StartState.WAIT:
            self._wait(held, True)
            await asyncio.sleep(self._timing.order_poll_s)
        self._wait(held, False)
        if started.state is StartState.CANCELLED:
            return False, None
        return True, started.previous

    def _wait(self, held: _Held, waiting: bool) -> None:
        if held.waiting is waiting or self._held.get(held.claim.entry) is not held:
            return
        held.waiting = waiting
        self._waiting += 1 if waiting else -1
        if waiting:
            self._slot_freed.set()  # a waiter gives its slot to a job that can run

    async def finish(self, held: _Held) -> None:
        """The job is answered: remove it from the queue (once the store answers: see _catch_up)."""
        if held.handed_back or held.finished:
            return
        held.finished = True
        try:
            await self._queue.finish(held.claim)
            self._metrics.queue_job("finished")
        except StoreUnavailable as exc:  # finished by _catch_up once the store is back (or found answered)
            log.warning("turn job %s not marked finished yet: %s", held.claim.job.job_id, exc)
            self._unfinished[held.claim.entry] = held.claim
        finally:
            self._release(held)

    def _release(self, held: _Held) -> None:
        if self._held.get(held.claim.entry) is held:
            del self._held[held.claim.entry]
            if held.waiting:
                self._waiting -= 1
            self._slot_freed.set()

    async def aclose(self, grace_s: float | None = None) -> None:
        """Stop taking jobs; let runs finish within the grace period; hand the rest back (or, without a durable
        queue, cancel them: their threads are told)."""
        grace_s = self._timing.shutdown_grace_s if grace_s is None else grace_s
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
        with contextlib.suppress(StoreUnavailable):
            await self._catch_up()
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
