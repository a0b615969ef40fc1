"""The Slack app factory: no global app at import; everything it needs is passed in (SPEC §10)."""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp
from slack_bolt.async_app import AsyncApp
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from bot.access import ChannelMembers, RunAccess
from bot.actions import register_actions
from bot.alert_surface import SlackAlertSurface
from bot.alert_webhook import AlertWebhook
from bot.ask_gate import AskGate
from bot.assistant import build_assistant
from bot.commands import register_commands
from bot.dedup import Deduplicator
from bot.delivery import DeliveryPolicy
from bot.deps import BotDeps
from bot.events import register_events
from bot.metering import CountingRetryHandler, MeteredWebClient
from bot.outgoing import OutgoingRedaction, RedactingWebClient, install_respond_redaction
from bot.progress import MIN_INTERVAL_S
from bot.render.links import SourceLinks
from bot.render.message import RenderOptions
from bot.slack_surface import SlackSurface
from bot.unhandled import register_unhandled
from core.alerts.intake import AlertIntake
from core.alerts.policy import AlertPolicy
from core.contracts.run import RunRecord
from core.observability.metrics import Metrics
from core.ports import ChatServicePort, FeedbackPort, JobQueue, KeyValueStore
from core.queue.memory import InMemoryJobQueue
from core.service.feedback import FeedbackService
from core.settings import Settings
from core.stores.memory import InMemoryFeedbackStore
from core.turns.answers import Answers
from core.turns.runner import TurnRunner
from core.turns.timing import TurnTiming
from core.turns.worker import JobWorker, TurnJobs, WorkerPolicy

SLACK_API_DEFAULT = "https://slack.com/api/"
# Outgoing Web API calls in flight at once. Slack rate-limits posting (~1 msg/s per channel) anyway; a small pool
# keeps bursts of background posts (many runs finishing together) from starving the acks on the same event loop.
MAX_SLACK_CONNECTIONS = 10


def build_client(settings: Settings, session: aiohttp.ClientSession | None = None,
                 metrics: Metrics | None = None) -> AsyncWebClient:
    """Web API client: base URL from SLACK_API_URL, retries for 429 (Retry-After), 5xx and connection errors.

    With `session`, calls share one connection pool (no TLS handshake per call); without, each call opens its own.
    Failed calls and retries are counted in `metrics` by method.
    """
    metrics = metrics or Metrics()
    base_url = settings.slack_api_url or SLACK_API_DEFAULT
    if not base_url.endswith("/"):
        base_url += "/"
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    return RedactingWebClient.wrap(MeteredWebClient(
        token=token,
        base_url=base_url,
        session=session,
        metrics=metrics,
        retry_handlers=[
            CountingRetryHandler(AsyncRateLimitErrorRetryHandler(max_retry_count=3), "rate_limited", metrics),
            CountingRetryHandler(AsyncServerErrorRetryHandler(max_retry_count=2), "server_error", metrics),
            CountingRetryHandler(AsyncConnectionErrorRetryHandler(max_retry_count=2), "connection_error", metrics),
        ],
    ), OutgoingRedaction())


@dataclass
class SlackBot:
    """The Bolt app plus the state its listeners share (tests wait on `deps.runner`)."""

    app: AsyncApp
    deps: BotDeps
    session: aiohttp.ClientSession | None = None
    alerts: AlertWebhook | None = None

    def start(self) -> None:
        """Start working queued turns (inside the running loop; a first submitted turn starts it too)."""
        if self.deps.jobs.worker is not None:
            self.deps.jobs.worker.start()

    async def aclose(self, timeout_s: float = 10.0) -> None:
        """Stop taking turns; let running ones finish within `timeout_s` (the shutdown grace), hand the rest back to
        a durable queue or cancel them; close the connection pool we opened."""
        if self.deps.jobs.worker is not None:
            await self.deps.jobs.worker.aclose(timeout_s)
        await self.deps.runner.aclose(timeout_s)
        await self.deps.dedup.aclose()
        if self.session is not None:
            await self.session.close()


def build_bot(settings: Settings, chat: ChatServicePort, kv: KeyValueStore, *, client: AsyncWebClient | None = None,
              progress_interval_s: float = MIN_INTERVAL_S, pooled: bool = True,
              metrics: Metrics | None = None, delivery: DeliveryPolicy = DeliveryPolicy(),
              feedback: FeedbackPort | None = None, timing: TurnTiming | None = None,
              queue: JobQueue | None = None, work: bool = True) -> SlackBot:
    """Build the app and its listeners' shared state (call inside a running loop when pooled; close with aclose).

    Turns go to `queue` (in-process without one); with `work` this process also works the queue (DIAG_WORKER_*)."""
    session = None
    if client is None and pooled:
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=MAX_SLACK_CONNECTIONS))
    # Every message leaves through this client or respond(): both redact secrets (bot/outgoing.py).
    outgoing = OutgoingRedaction()
    client = RedactingWebClient.wrap(client or build_client(settings, session, metrics), outgoing)
    signing_secret = settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else ""
    app = AsyncApp(client=client, signing_secret=signing_secret, name="diagbot")
    install_respond_redaction(app, outgoing)
    timing = timing or TurnTiming.from_settings(settings)
    surface = SlackSurface(client, progress_interval_s=progress_interval_s, streaming=settings.diag_slack_streaming,
                           delivery=delivery, render=render_options(settings))
    runner = TurnRunner(chat, Answers(kv, surface, timing), timing)
    queue = queue or InMemoryJobQueue()
    worker = JobWorker(queue, runner, worker_policy(settings), metrics=metrics) if work else None
    jobs = TurnJobs(queue, runner, chat, max_jobs=settings.diag_queue_max, metrics=metrics, worker=worker)
    intake = AlertIntake(AlertPolicy.from_settings(settings), kv, SlackAlertSurface(client), jobs, metrics=metrics)
    deps = BotDeps(
        chat=chat,
        client=client,
        dedup=Deduplicator(kv),
        runner=runner,
        jobs=jobs,
        access=RunAccess(chat, ChannelMembers(client)),
        feedback=feedback or FeedbackService(InMemoryFeedbackStore(), _RunsOf(chat), metrics),
        gate=AskGate(settings.access_policy, client),
        render=render_options(settings),
        alerts=intake,
    )
    app.use(build_assistant(deps))  # DMs' assistant threads; other events fall through to the listeners below
    register_events(app, deps)
    register_commands(app, deps)
    register_actions(app, deps)
    register_unhandled(app)  # last: only what no listener above handles
    return SlackBot(app=app, deps=deps, session=session, alerts=AlertWebhook(intake, runner.spawn, metrics))


class _RunsOf:
    """The run look-up a bot built without a feedback service needs (votes stay in this process)."""

    def __init__(self, chat: ChatServicePort) -> None:
        self._chat = chat

    async def get(self, run_id: str) -> RunRecord | None:
        return await self._chat.get_run(run_id)


def worker_policy(settings: Settings) -> WorkerPolicy:
    """DIAG_WORKER_CONCURRENCY (the timing, DIAG_QUEUE_CLAIM_AFTER_S and DIAG_SHUTDOWN_GRACE_S, is TurnTiming's)."""
    return WorkerPolicy(concurrency=settings.diag_worker_concurrency)


def render_options(settings: Settings) -> RenderOptions:
    """Presentation settings for the renderers: deep-link templates and the feedback control's form."""
    return RenderOptions(links=SourceLinks.from_settings(settings),
                         plain_feedback=settings.diag_slack_plain_feedback)


def build_app(settings: Settings, chat: ChatServicePort, kv: KeyValueStore, *,
              client: AsyncWebClient | None = None) -> AsyncApp:
    """The Bolt AsyncApp with events, commands and actions registered (unpooled client: nothing to close)."""
    return build_bot(settings, chat, kv, client=client, pooled=False).app
