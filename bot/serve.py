"""`diagbot serve`: Socket Mode when SLACK_APP_TOKEN is set, else HTTP (/slack/events, /healthz, /readyz) on $PORT;
in Socket Mode /healthz and /readyz are served on PORT when it is set."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import signal
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError

from bot.alert_webhook import AlertWebhook, add_alert_routes
from bot.app import SlackBot, build_bot
from bot.health import Readiness, add_health_routes, start_health_server, timed_runner
from bot.ingress import IngressThread, MainLoop, ingress_app
from bot.metering import ack_timer, add_metrics_route
from bot.request_guard import request_guard
from bot.slack_errors import error_code
from core.health.catalog import readiness_checks
from core.health.result import CheckResult
from core.observability.metrics import Metrics
from core.ports import ChatServicePort, JobQueue, KeyValueStore
from core.queue.memory import InMemoryJobQueue
from core.queue.redis_streams import RedisJobQueue
from core.runtime import tune_gc
from core.settings import Settings
from core.turns.recovery import TurnRecovery

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
EVENTS_ONLY_NEEDS_REDIS = ("DIAG_SERVE_RUNS=false needs REDIS_URL: the runs are left to `diagbot worker` processes, "
                           "which take them from the queue shared through Redis")
# apps.connections.open errors that no retry will fix: fail at start-up with a clear message.
FATAL_TOKEN_ERRORS = frozenset({"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired",
                                "not_allowed_token_type", "missing_scope"})


class ServeNeedsRedis(Exception):
    """`diagbot serve` with DIAG_SERVE_RUNS=false but no shared queue: its turns would never run."""


class ServingServices(Protocol):
    """What serve() needs from the core (core.bootstrap.Services has it; tests may pass a lighter double)."""

    @property
    def chat_service(self) -> ChatServicePort: ...

    @property
    def kv(self) -> KeyValueStore: ...


def build_web_app(app: AsyncApp, metrics: Metrics | None = None, readiness: Readiness | None = None, *,
                  signing_secret: str | None = None, body_timeout_s: float = 5.0,
                  alerts: AlertWebhook | None = None) -> web.Application:
    """Bolt's aiohttp application for the Events API behind the request guard, plus GET /healthz, GET /readyz,
    (with metrics) GET /metrics and (with alerts) POST /alerts/alertmanager. The guard verifies with
    `signing_secret`, by default the Bolt app's own."""
    web_app = app.web_app(path=EVENTS_PATH)
    secret = signing_secret if signing_secret is not None else str(getattr(app, "_signing_secret", "") or "")
    web_app.middlewares.append(request_guard(secret, EVENTS_PATH, body_timeout_s=body_timeout_s))
    add_health_routes(web_app, readiness or Readiness([]))
    add_alert_routes(web_app, alerts)
    if metrics is not None:
        web_app.middlewares.append(ack_timer(metrics, EVENTS_PATH))
        add_metrics_route(web_app, metrics)
    return web_app


def build_readiness(settings: Settings, services: ServingServices, warnings: Sequence[CheckResult] = ()) -> Readiness:
    """Readiness over the server's own Redis and database clients, the model endpoint and each tool backend."""
    checks = readiness_checks(settings, getattr(services, "redis", None), getattr(services, "database", None))
    return Readiness(checks, warnings=warnings)


def stop_event() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    return stop


async def open_services(settings: Settings) -> Any:
    from core.bootstrap import build_services  # the one wiring place; imported here so bot/ stays importable alone

    services = build_services(settings)
    return await services if inspect.isawaitable(services) else services


async def _first_wss_url(handler: Any) -> None:
    """Ask for the first WebSocket URL ourselves: the SDK's connect() retries every error forever, so a refused
    app token would otherwise loop silently instead of failing at start-up."""
    try:
        handler.client.wss_uri = await handler.client.issue_new_wss_url()
    except SlackApiError as exc:
        code = error_code(exc)
        if code in FATAL_TOKEN_ERRORS:
            log.error("Slack refused SLACK_APP_TOKEN (%s): it must be an app-level xapp- token with connections:write",
                      code)
            raise
        log.warning("apps.connections.open failed (%s); retrying", code)
    except Exception as exc:  # network: the SDK's connect loop retries
        log.warning("apps.connections.open failed (%s); retrying", error_code(exc))


async def _run_socket_mode(app: AsyncApp, app_token: str, stop: asyncio.Event, metrics: Metrics) -> None:
    """Connect in Socket Mode and serve until `stop`; stop also ends a connect that is still retrying."""
    from bot.socket_metering import MeteredSocketModeHandler

    handler = MeteredSocketModeHandler(app, app_token, metrics=metrics)
    connecting: asyncio.Future[Any] | None = None
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await _first_wss_url(handler)
        connecting = asyncio.ensure_future(handler.connect_async())  # type: ignore[no-untyped-call]
        await asyncio.wait({connecting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if connecting.done():
            connecting.result()
            log.info("diagbot connected in Socket Mode")
            await stopping
    finally:
        for fut in (connecting, stopping):
            if fut is not None and not fut.done():
                fut.cancel()
        await asyncio.wait([f for f in (connecting, stopping) if f is not None])
        await handler.close_async()  # type: ignore[no-untyped-call]
        # close() cancels the SDK's receive/monitor/process tasks without waiting; let them finish here.
        sdk_tasks = [t for t in (handler.client.message_processor, handler.client.current_session_monitor,
                                 handler.client.message_receiver) if t is not None]
        if sdk_tasks:
            await asyncio.wait(sdk_tasks, timeout=5)


async def _serve_socket_mode(bot_app: AsyncApp, app_token: str, settings: Settings, readiness: Readiness,
                             stop: asyncio.Event, metrics: Metrics, alerts: AlertWebhook | None = None) -> None:
    """Socket Mode, with /healthz, /readyz and /metrics on PORT when PORT is set (or the alert webhook is on:
    it is served there too)."""
    health = None
    if "port" in settings.model_fields_set or (alerts is not None and alerts.enabled):
        def extra(app: web.Application) -> None:
            add_metrics_route(app, metrics)
            add_alert_routes(app, alerts)

        health = await start_health_server(settings.port, readiness, extra=extra,
                                           read_timeout_s=settings.diag_http_read_timeout_s)
    try:
        await _run_socket_mode(bot_app, app_token, stop, metrics)
    finally:
        if health is not None:
            await health.cleanup()


async def _serve_http(bot_app: AsyncApp, settings: Settings, readiness: Readiness, stop: asyncio.Event,
                      metrics: Metrics, alerts: AlertWebhook | None = None) -> None:
    """Serve on PORT from the ingress thread (bot/ingress.py): acks never wait for the runs' work on this loop."""
    secret = settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else ""
    timeout = settings.diag_http_read_timeout_s
    main = MainLoop(asyncio.get_running_loop())
    ingress = IngressThread(lambda: ingress_app(bot_app, main, readiness, path=EVENTS_PATH, signing_secret=secret,
                                                body_timeout_s=timeout, metrics=metrics, alerts=alerts),
                            "0.0.0.0", settings.port, runner=lambda app: timed_runner(app, timeout))
    await ingress.start()
    log.info("diagbot listening on port %d (POST %s, GET /healthz, GET /readyz, GET /metrics)", settings.port,
             EVENTS_PATH)
    try:
        await stop.wait()
    finally:
        await ingress.aclose()
        await main.drain()


def queue_for(services: ServingServices, metrics: Metrics | None = None) -> JobQueue:
    """The turn queue: Redis Streams on the services' Redis (shared by every serve and worker process), else
    in this process."""
    redis = getattr(services, "redis", None)
    if redis is None:
        return InMemoryJobQueue()
    return RedisJobQueue(redis, getattr(services, "redis_prefix", "diag:"), metrics)


@dataclass
class WorkingBot:
    """A bot working the turn queue, with what its process serves from."""

    bot: SlackBot
    services: ServingServices
    metrics: Metrics


@contextlib.asynccontextmanager
async def working_bot(settings: Settings, services: ServingServices | None = None, *,
                      work: bool = True) -> AsyncIterator[WorkingBot]:
    """Build the bot over the turn queue and start working it (unless `work` is off: events only) and the recovery
    job; at the end stop taking turns, let runs finish within DIAG_SHUTDOWN_GRACE_S or hand them back (SIGTERM),
    and close what was opened here (services passed in belong to the caller). Shared by `diagbot serve` and
    `diagbot worker`."""
    owned: Any = None
    if services is None:
        services = owned = await open_services(settings)
    metrics: Metrics = getattr(services, "metrics", None) or Metrics()  # lighter test doubles may have none
    feedback = getattr(services, "feedback", None)  # votes go to SQL with the real services
    bot = build_bot(settings, services.chat_service, services.kv, metrics=metrics, feedback=feedback,
                    queue=queue_for(services, metrics), work=work)
    tune_gc()
    bot.start()
    timing = bot.deps.runner.timing
    recovery = TurnRecovery(services.chat_service, bot.deps.jobs.queue, bot.deps.runner.answers,
                            interval_s=timing.recovery_interval_s, min_age_s=timing.stale_run_age_s)
    recovery.start()
    try:
        yield WorkingBot(bot, services, metrics)
    finally:
        await recovery.aclose()
        await bot.aclose(settings.diag_shutdown_grace_s)
        if owned is not None:
            await owned.aclose()


def _start_retention(services: ServingServices) -> Any:
    """Start the daily retention purge of real services (doubles without a database have none)."""
    make = getattr(services, "retention_scheduler", None)
    retention = make() if callable(make) else None
    if retention is not None:
        retention.start()
    return retention


async def serve(settings: Settings, stop: asyncio.Event | None = None, *,
                services: ServingServices | None = None, warnings: Sequence[CheckResult] = ()) -> None:
    """Run the Slack app until SIGINT/SIGTERM (or `stop`), then close everything it opened.

    Without `services` the real ones are built from `settings` (and closed at the end); services passed in belong to
    the caller, who closes them.
    """
    stop = stop or stop_event()
    if not settings.diag_serve_runs and not settings.redis_url and getattr(services, "redis", None) is None:
        raise ServeNeedsRedis(EVENTS_ONLY_NEEDS_REDIS)
    async with working_bot(settings, services, work=settings.diag_serve_runs) as working:
        if not settings.diag_serve_runs:
            log.info("taking events only (DIAG_SERVE_RUNS=false): runs are left to diagbot worker processes")
        readiness = build_readiness(settings, working.services, warnings)
        retention = _start_retention(working.services)
        try:
            if settings.slack_app_token is not None:
                await _serve_socket_mode(working.bot.app, settings.slack_app_token.get_secret_value(), settings,
                                         readiness, stop, working.metrics, working.bot.alerts)
            else:
                await _serve_http(working.bot.app, settings, readiness, stop, working.metrics, working.bot.alerts)
        finally:
            if retention is not None:
                await retention.aclose()
