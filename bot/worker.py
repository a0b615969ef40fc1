"""`diagbot worker`: works queued turns only, beside any number of `diagbot serve` processes sharing REDIS_URL and
DATABASE_URL. It posts with the bot token like serve does; with PORT set it serves /healthz, /readyz and /metrics."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from bot.health import start_health_server
from bot.metering import add_metrics_route
from bot.serve import ServingServices, build_readiness, stop_event, working_bot
from core.health.result import CheckResult
from core.settings import Settings

log = logging.getLogger(__name__)

NEEDS_REDIS = ("diagbot worker needs REDIS_URL: the queue it works is shared through Redis (without REDIS_URL turns "
               "are queued in the `diagbot serve` process, which works them itself)")


class WorkerNeedsRedis(Exception):
    """`diagbot worker` without REDIS_URL."""


async def work(settings: Settings, stop: asyncio.Event | None = None, *, services: ServingServices | None = None,
               warnings: Sequence[CheckResult] = ()) -> None:
    """Work the shared queue until SIGINT/SIGTERM (or `stop`); then finish or hand back the runs in flight."""
    if not settings.redis_url and services is None:
        raise WorkerNeedsRedis(NEEDS_REDIS)
    stop = stop or stop_event()
    health = None
    try:
        async with working_bot(settings, services) as working:
            if "port" in settings.model_fields_set:
                health = await start_health_server(settings.port,
                                                   build_readiness(settings, working.services, warnings),
                                                   extra=lambda app: add_metrics_route(app, working.metrics))
            worker = working.bot.deps.jobs.worker
            log.info("diagbot worker %s taking turns (%d at a time)", worker.consumer if worker else "?",
                     settings.diag_worker_concurrency)
            await stop.wait()
    finally:  # /healthz answers until the runs in flight have finished or gone back to the queue
        if health is not None:
            await health.cleanup()
