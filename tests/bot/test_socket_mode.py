"""`serve` in Socket Mode, end to end: apps.connections.open -> WebSocket `hello` -> envelopes acked by the real
AsyncSocketModeHandler -> one turn per user message, answers in the fake Web API; stop closes the socket."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import SecretStr
from slack_sdk.errors import SlackApiError

from bot.serve import serve
from core.observability.metrics import Metrics
from core.ports import KeyValueStore
from core.settings import Settings
from core.stores.kv import InMemoryKV
from tests.bot.fake_chat import FakeChat
from tests.bot.slack_requests import envelope, mention
from tests.fakes.slack_interactions import block_actions
from tests.fakes.slack_server import TEAM_ID, FakeSlack
from tests.metrics_text import sample
from tests.waiting import until


@pytest.fixture(autouse=True)
def _restore_gc() -> Iterator[None]:
    """serve() tunes the process-wide GC; put it back so other tests run under the defaults."""
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


@dataclass
class _Services:
    """The two things serve() takes from the core, here the in-test port double and an in-process store."""

    chat_service: FakeChat
    kv: KeyValueStore


def _settings(fake_slack: FakeSlack, **extra: object) -> Settings:
    return Settings(
        diag_slack_streaming=False, slack_bot_token=SecretStr("xoxb-test"), slack_app_token=SecretStr("xapp-test"),
                    slack_api_url=fake_slack.api_url, **extra)  # type: ignore[arg-type]


@asynccontextmanager
async def _serving(settings: Settings, fake_slack: FakeSlack, services: _Services | None = None) -> AsyncIterator[None]:
    """serve() as a task, connected to the fake socket; stopped through its `stop` event and awaited on exit."""
    stop = asyncio.Event()
    task = asyncio.create_task(serve(settings, stop, services=services))
    try:
        await fake_slack.wait_connected(timeout_s=20)
        yield
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)


async def _finals(fake_slack: FakeSlack) -> list[dict[str, object]]:
    return [c.params for c in fake_slack.calls if c.params.get("metadata")]


async def test_socket_mode_acks_envelopes_runs_one_turn_and_answers_commands(fake_slack: FakeSlack) -> None:
    """hello -> mention envelope acked -> placeholder replaced by the final report with metadata; a redelivery (same
    event_id, retry_attempt 1) is acked and starts nothing; /diag help is acked and answered; stop closes the socket."""
    chat = FakeChat(delay_s=0.0)
    async with _serving(_settings(fake_slack), fake_slack, _Services(chat, InMemoryKV())):
        assert fake_slack.calls_of("apps.connections.open")

        body = envelope(mention(ts="50.0"), event_id="EvSOCKET1")
        first = await fake_slack.push(fake_slack.events_api_envelope(body))
        assert await fake_slack.wait_for_ack(first) == {"envelope_id": first}
        metadata = await fake_slack.wait_for_metadata(timeout_s=10)
        assert metadata == {"event_type": "diag_run_finished", "event_payload": {
            "run_id": "run_1", "intent": "DIAGNOSIS", "outcome": "SUCCESS", "fallback_type": None}}
        [placeholder] = fake_slack.calls_of("chat.postMessage")
        assert placeholder.params["thread_ts"] == "50.0"
        assert placeholder.params["text"].startswith("Looking into it")
        [final] = await _finals(fake_slack)
        placeholder_ts = fake_slack.calls_of("chat.update")[-1].params["ts"]
        assert final["ts"] == placeholder_ts  # the placeholder was replaced, not a second message
        assert "DB connection timeouts" in str(final["text"])
        assert fake_slack.messages[("C1", placeholder_ts)]["metadata"] == metadata

        again = await fake_slack.push(fake_slack.events_api_envelope(body, retry_attempt=1, retry_reason="timeout"))
        assert await fake_slack.wait_for_ack(again) == {"envelope_id": again}

        form = {"token": "x", "team_id": TEAM_ID, "channel_id": "C1", "user_id": "U1", "command": "/diag",
                "text": "help", "response_url": fake_slack.response_url("socket"), "trigger_id": "1.2.3",
                "api_app_id": "A1"}
        command = await fake_slack.push(fake_slack.slash_command_envelope(form))
        assert await fake_slack.wait_for_ack(command) == {"envelope_id": command}
        answer = await fake_slack.next_response()
        assert answer["_key"] == "socket"
        assert answer["response_type"] == "ephemeral"
        assert "/diag trace" in str(answer["blocks"])

        # A sentinel mention pushed after the redelivery: once it is answered, the redelivery has been decided.
        sentinel = await fake_slack.push(fake_slack.events_api_envelope(envelope(mention(ts="51.0"))))
        await fake_slack.wait_until(lambda: bool(fake_slack.finals("C1", "51.0")), timeout_s=10,
                                    message="the sentinel's answer")
        assert [t.message_ts for t in chat.turns] == ["50.0", "51.0"]
        assert [c.params["thread_ts"] for c in fake_slack.calls_of("chat.postMessage")] == ["50.0", "51.0"]
        assert len(fake_slack.finals("C1", "50.0")) == 1
        assert all(len(fake_slack.acks_of(e)) == 1 for e in (first, again, command, sentinel))
    assert fake_slack.socket_connections == 1
    assert not fake_slack._sockets  # the client closed its WebSocket on stop


async def test_serve_builds_real_services_in_socket_mode(fake_slack: FakeSlack, tmp_path: Path) -> None:
    """serve(settings) alone (real build_services, no model configured): a mention over the socket ends FAILURE in
    the thread with the run metadata, and everything closes on stop."""
    settings = _settings(fake_slack, database_url=f"sqlite+aiosqlite:///{tmp_path}/diag.db")
    async with _serving(settings, fake_slack):
        sent = await fake_slack.push(fake_slack.events_api_envelope(envelope(mention(ts="60.0"))))
        await fake_slack.wait_for_ack(sent)
        final = await fake_slack.wait_for_metadata(timeout_s=20)
        assert final["event_payload"]["outcome"] == "FAILURE"
        assert fake_slack.calls_of("chat.postMessage")[0].params["thread_ts"] == "60.0"


async def test_refused_app_token_fails_serve_and_closes_the_socket_client(fake_slack: FakeSlack) -> None:
    """apps.connections.open refused (a bad xapp- token): serve() raises the Slack error and leaves no Socket Mode
    task or HTTP session behind."""
    fake_slack.fail("apps.connections.open", "invalid_auth")
    with pytest.raises(SlackApiError):
        await asyncio.wait_for(serve(_settings(fake_slack), asyncio.Event(), services=_Services(FakeChat(), InMemoryKV())),
                               20)
    def leftovers() -> list[asyncio.Task[object]]:  # tasks cancelled as serve() unwound finish within a few turns
        return [t for t in asyncio.all_tasks() if "process_messages" in repr(t.get_coro())]

    await until(lambda: not leftovers(), 5, message=lambda: f"Socket Mode tasks to finish: {leftovers()}")
    gc.collect()  # an unclosed aiohttp session would warn here (an error under filterwarnings=error)


async def test_stop_while_socket_mode_cannot_connect_returns_promptly(fake_slack: FakeSlack) -> None:
    """Slack keeps failing apps.connections.open (the SDK retries forever): SIGTERM/stop still ends serve() at once."""
    fake_slack.fail("apps.connections.open", "internal_error", times=100)
    stop = asyncio.Event()
    task = asyncio.create_task(serve(_settings(fake_slack), stop, services=_Services(FakeChat(), InMemoryKV())))
    await fake_slack.wait_for_calls("apps.connections.open", 2)  # refused twice: the SDK is in its retry loop
    stop.set()
    await asyncio.wait_for(task, 5)
    leftovers = [t for t in asyncio.all_tasks() if "process_messages" in repr(t.get_coro())]
    assert leftovers == []


@dataclass
class _MeteredServices(_Services):
    """The port double plus the metrics object serve() reads from real services."""

    metrics: Metrics


async def test_socket_mode_acks_are_timed(fake_slack: FakeSlack) -> None:
    """Each envelope's ack over the socket is observed in diagbot_slack_ack_duration_seconds{mode="socket"}."""
    metrics = Metrics()
    async with _serving(_settings(fake_slack), fake_slack, _MeteredServices(FakeChat(delay_s=0.0), InMemoryKV(), metrics)):
        first = await fake_slack.push(fake_slack.events_api_envelope(envelope(mention(ts="60.0"), event_id="EvSOCKET9")))
        await fake_slack.wait_for_ack(first)
        await fake_slack.wait_for_metadata(timeout_s=10)
    assert sample(metrics.render().decode(), "diagbot_slack_ack_duration_seconds_count", mode="socket") == 1


class _RecordingRetention:
    """Stands in for the RetentionScheduler: records that serve started and closed it."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def start(self) -> None:
        self.events.append("start")

    async def aclose(self) -> None:
        self.events.append("close")


@dataclass
class _ServicesWithRetention(_Services):
    """The port double plus the retention scheduler real services build."""

    retention: _RecordingRetention

    def retention_scheduler(self) -> _RecordingRetention:
        return self.retention


async def test_serve_runs_the_retention_job_while_serving(fake_slack: FakeSlack) -> None:
    """serve() starts the services' daily retention job when it starts serving and stops it on the way out."""
    retention = _RecordingRetention()
    async with _serving(_settings(fake_slack), fake_slack, _ServicesWithRetention(FakeChat(), InMemoryKV(), retention)):
        assert retention.events == ["start"]
    assert retention.events == ["start", "close"]


async def test_real_services_build_a_retention_job_over_their_database(tmp_path: Path) -> None:
    """build_services' retention_scheduler purges its own database (none without a database)."""
    from core.bootstrap import build_services
    from core.service.retention import RetentionScheduler

    services = await build_services(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/d.db", diag_retention_days=7))
    try:
        assert isinstance(services.retention_scheduler(), RetentionScheduler)
    finally:
        await services.aclose()


async def test_a_click_in_slacks_documented_shape_over_the_socket_shows_the_trace(fake_slack: FakeSlack) -> None:
    """A View trace click on the posted final, as Slack sends it over Socket Mode (an `interactive` envelope, the
    button's text a plain_text object), is acked and answered ephemerally on its response_url."""
    chat = FakeChat(delay_s=0.0)
    async with _serving(_settings(fake_slack), fake_slack, _Services(chat, InMemoryKV())):
        await fake_slack.push(fake_slack.events_api_envelope(envelope(mention(ts="70.0"))))
        await fake_slack.wait_until(lambda: bool(fake_slack.finals("C1", "70.0")), timeout_s=10)
        [final] = fake_slack.finals("C1", "70.0")
        click = block_actions(final, "view_trace", user="U1", message_ts=final["ts"],
                              response_url=fake_slack.response_url("click"))
        sent = await fake_slack.push(fake_slack.interactive_envelope(click))
        assert await fake_slack.wait_for_ack(sent) == {"envelope_id": sent}
        answer = await fake_slack.next_response()
        assert (answer["_key"], answer["response_type"]) == ("click", "ephemeral")
