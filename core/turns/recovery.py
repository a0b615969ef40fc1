"""The recovery job (APScheduler): no placeholder stays "working…" after its process died and nobody re-runs it.

Every `recovery_interval_s` it asks the core for runs still recorded RUNNING whose heartbeat stopped (`stale_runs`,
older than `stale_run_age_s`). For each:

- its turn is still a job in the queue (a worker re-runs it or takes it over by idle time): leave it — the re-run
  answers the thread and records the old run as superseded;
- otherwise (the job is finished, unknown, or the process had no durable queue) the run is finished FAILED through
  `ChatService.abandon` and its thread gets that FAILURE through the answer record (a turn already answered gets
  nothing, and several replicas recovering at once post once).
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from core.contracts.release import FailureCause
from core.contracts.run import RunRecord
from core.ports import ChatServicePort, JobQueue
from core.turns.answers import Answers
from core.turns.surface import Final, FinalKind, Target

log = logging.getLogger(__name__)

POST_BUDGET_S = 30.0
JOB_ID = "turn-recovery"


def thread_of(run: RunRecord) -> str:
    """The thread ts of a run's session (`team:channel:thread_ts`)."""
    return run.session_key.rsplit(":", 1)[-1]


class TurnRecovery:
    """Finishes runs whose process died and whose turn nobody re-runs, with a FAILURE in their thread."""

    def __init__(self, chat: ChatServicePort, queue: JobQueue, answers: Answers, *, interval_s: float,
                 min_age_s: float) -> None:
        self._chat = chat
        self._queue = queue
        self._answers = answers
        self._interval_s = interval_s
        self._min_age_s = min_age_s
        self._scheduler = AsyncIOScheduler(timezone=UTC)

    def start(self) -> None:
        """Schedule the job (inside the running loop); the first pass runs after one interval."""
        first = datetime.now(UTC) + timedelta(seconds=self._interval_s)
        self._scheduler.add_job(self.run_once, IntervalTrigger(seconds=self._interval_s, start_date=first,
                                                               timezone=UTC),
                                id=JOB_ID, coalesce=True, max_instances=1, misfire_grace_time=int(self._interval_s))
        self._scheduler.start()

    async def aclose(self) -> None:
        """Stop scheduling."""
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)

    async def run_once(self) -> int:
        """One pass; how many runs it finished. Failures are logged and retried at the next pass."""
        try:
            stale = await self._chat.stale_runs(self._min_age_s)
        except Exception as exc:
            log.warning("recovery: listing stale runs failed (%s); retrying next pass", type(exc).__name__)
            return 0
        finished = 0
        for run in stale:
            try:
                finished += await self._recover(run)
            except Exception as exc:  # one bad record must not stop the others
                log.warning("recovery of run %s failed: %s", run.run_id, type(exc).__name__)
        return finished

    async def _recover(self, run: RunRecord) -> int:
        job_id = await self._queue.job_of_run(run.run_id)
        if job_id is not None and await self._queue.job_state(job_id) == "queued":
            return 0  # still a job: a worker re-runs it (or takes it over by idle time) and answers
        outcome = await self._chat.abandon(run.session_key, run.run_id, FailureCause.WORKER_STOPPED)
        log.warning("recovery: run %s was left running by a process that stopped; finished FAILED", run.run_id)
        key = job_id or f"run:{run.run_id}"
        if await self._answers.answered(key):
            return 1
        placeholder = await self._answers.placeholder(key)
        await self._answers.post(key, f"recovery:{run.run_id}", Target(run.channel, thread_of(run)), placeholder,
                                 Final(FinalKind.OUTCOME, run.run_id, outcome=outcome),
                                 until=time.monotonic() + POST_BUDGET_S, wait_s=0)
        return 1
