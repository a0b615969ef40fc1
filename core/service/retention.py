"""The daily retention job (APScheduler): purge rows older than DIAG_RETENTION_DAYS; a failure is logged and
retried later, never raised into the server."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger

from core.observability.metrics import Metrics

log = logging.getLogger(__name__)

Purge = Callable[[datetime], Awaitable[dict[str, int]]]
DAY_S = 24 * 3600.0
FIRST_RUN_DELAY_S = 60.0
RETRY_DELAYS_S = (60.0, 300.0, 900.0, 3600.0)
JOB_ID, RETRY_ID = "retention", "retention-retry"


class RetentionScheduler:
    """Runs `purge(now - retention)` every `interval_s` (first after `first_run_delay_s`); on failure, retries after
    growing delays until a run succeeds. Start inside the running loop; `aclose()` stops it."""

    def __init__(self, purge: Purge, retention_days: int, *, metrics: Metrics | None = None,
                 interval_s: float = DAY_S, first_run_delay_s: float = FIRST_RUN_DELAY_S,
                 retry_delays_s: Sequence[float] = RETRY_DELAYS_S, clock: Callable[[], datetime] | None = None) -> None:
        if retention_days < 1:
            raise ValueError("DIAG_RETENTION_DAYS must be at least 1")
        self._purge = purge
        self._retention = timedelta(days=retention_days)
        self._metrics = metrics or Metrics()
        self._interval_s = interval_s
        self._first_run_delay_s = first_run_delay_s
        self._retry_delays_s = tuple(retry_delays_s) or RETRY_DELAYS_S
        self._clock = clock or (lambda: datetime.now(UTC))
        self._failures = 0
        self._scheduler = AsyncIOScheduler(timezone=UTC)

    def start(self) -> None:
        """Schedule the daily job (call with the event loop running)."""
        start = datetime.now(UTC) + timedelta(seconds=self._first_run_delay_s)
        # coalesce + max_instances=1: a slow purge or a suspended process never stacks runs.
        self._scheduler.add_job(self.run_once, IntervalTrigger(seconds=self._interval_s, start_date=start, timezone=UTC),
                                id=JOB_ID, coalesce=True, max_instances=1, misfire_grace_time=int(self._interval_s))
        self._scheduler.start()

    async def run_once(self) -> dict[str, int] | None:
        """One purge; returns rows deleted per table, or None after logging (and scheduling a retry of) a failure."""
        cutoff = self._clock() - self._retention
        try:
            deleted = await self._purge(cutoff)
        except Exception as exc:  # a database outage must not stop serving: log, count, retry later
            self._failures += 1
            delay = self._retry_delays_s[min(self._failures, len(self._retry_delays_s)) - 1]
            log.warning("retention purge failed (%s); retry %d in %.0f s", type(exc).__name__, self._failures, delay)
            self._metrics.retention_failed()
            self._schedule_retry(delay)
            return None
        self._failures = 0
        for table, count in deleted.items():
            self._metrics.retention_purged(table, count)
        log.info("retention purge: %d rows older than %s deleted (%s)", sum(deleted.values()), cutoff.date().isoformat(),
                 ", ".join(f"{t}={n}" for t, n in deleted.items()))
        return deleted

    def _schedule_retry(self, delay_s: float) -> None:
        if not self._scheduler.running:
            return
        run_at = datetime.now(UTC) + timedelta(seconds=delay_s)
        self._scheduler.add_job(self.run_once, DateTrigger(run_date=run_at, timezone=UTC), id=RETRY_ID,
                                replace_existing=True, misfire_grace_time=None)

    async def aclose(self) -> None:
        """Stop scheduling (a purge in progress is cancelled with the loop's other tasks at shutdown)."""
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
