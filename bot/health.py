"""GET /healthz (liveness: the event loop answers) and GET /readyz (readiness: Redis, database, model endpoint and
each tool backend, cached a few seconds; 503 names the failing parts). Bodies name parts, never URLs or secrets:
the details of a failing part are logged once when it starts failing."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence

from aiohttp import web

from core.health.result import Check, CheckResult, Level, run_checks

log = logging.getLogger(__name__)

READY_CACHE_S = 5.0
READY_CHECK_TIMEOUT_S = 2.5


class Readiness:
    """Runs the readiness checks at most once per `cache_s` (concurrent requests share one run)."""

    def __init__(self, checks: Sequence[Check], *, warnings: Sequence[CheckResult] = (), cache_s: float = READY_CACHE_S,
                 timeout_s: float = READY_CHECK_TIMEOUT_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._checks = list(checks)
        self._warnings = [w.name for w in warnings]
        self._cache_s = cache_s
        self._timeout_s = timeout_s
        self._clock = clock
        self._lock = asyncio.Lock()
        self._results: list[CheckResult] | None = None
        self._at = 0.0
        self._failing: set[str] = set()

    async def results(self) -> list[CheckResult]:
        """The latest results, re-run when older than the cache time."""
        async with self._lock:
            if self._results is None or self._clock() - self._at >= self._cache_s:
                self._results = await run_checks(self._checks, self._timeout_s)
                self._at = self._clock()
                self._log_changes(self._results)
            return self._results

    def _log_changes(self, results: list[CheckResult]) -> None:
        failing = {r.name for r in results if r.level in (Level.WARN, Level.FATAL)}
        for result in results:
            if result.name in failing - self._failing:
                log.warning("not ready: %s", result.line())
        for name in sorted(self._failing - failing):
            log.info("ready again: %s", name)
        self._failing = failing

    async def handle(self, _: web.Request) -> web.Response:
        """GET /readyz: 200 when every part is ok, else 503 with the failing parts' names."""
        results = await self.results()
        failing = [r.name for r in results if r.level in (Level.WARN, Level.FATAL)]
        body = {"ready": not failing, "failing": failing, "checks": {r.name: r.level.value for r in results},
                "start_warnings": self._warnings}
        return web.json_response(body, status=503 if failing else 200)


async def healthz(_: web.Request) -> web.Response:
    """GET /healthz: liveness only (the loop answers)."""
    return web.json_response({"ok": True})


def add_health_routes(app: web.Application, readiness: Readiness) -> None:
    """Add GET /healthz and GET /readyz to an aiohttp application."""
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readiness.handle)


def timed_runner(app: web.Application, read_timeout_s: float) -> web.AppRunner:
    """An AppRunner that drops slow clients: a request's headers must arrive within `read_timeout_s` of the
    connection (or of the previous response: aiohttp's keep-alive timer closes a connection whose handler still
    waits for a request head), and a body the handler does not read is drained for at most as long (lingering)."""
    return web.AppRunner(app, access_log=None, keepalive_timeout=read_timeout_s, lingering_time=read_timeout_s)


async def start_health_server(port: int, readiness: Readiness,
                              extra: Callable[[web.Application], None] | None = None, *,
                              read_timeout_s: float = 5.0, host: str = "0.0.0.0") -> web.AppRunner:
    """Serve /healthz and /readyz (plus the routes `extra` adds, e.g. /metrics) on `port` (Socket Mode with PORT
    set); clean up the returned runner."""
    app = web.Application()
    add_health_routes(app, readiness)
    if extra is not None:
        extra(app)
    runner = timed_runner(app, read_timeout_s)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    log.info("health endpoints on port %d (GET /healthz, GET /readyz%s)", port, ", GET /metrics" if extra else "")
    return runner
