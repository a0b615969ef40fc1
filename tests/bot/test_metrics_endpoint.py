"""GET /metrics over the real pipeline: a diagnosis shows under its outcome, its tool calls under their statuses,
its model calls per stage, the Slack ack latency; Slack API errors and retries count per method."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import redis.asyncio as aioredis
from aiohttp.test_utils import TestServer
from pydantic import SecretStr

from bot.app import build_bot
from bot.serve import build_web_app
from core.bootstrap import build_services
from core.observability.metrics import Metrics
from core.settings import DEMO_CLOCK, Settings
from core.stores.kv import RedisKV
from testkit.openai_server import FakeOpenAIServer
from tests.bot.conftest import Harness
from tests.bot.fake_chat import FakeChat
from tests.bot.slack_requests import SECRET, SlackSender, mention
from tests.bot.test_real_pipeline import _grounded_script
from tests.fakes.slack_server import FakeSlack
from tests.metrics_text import sample


@pytest.fixture
async def rig(fake_slack: FakeSlack, redis_client: aioredis.Redis, key_prefix: str, tmp_path: Path
              ) -> AsyncIterator[tuple[Harness, FakeOpenAIServer, aiohttp.ClientSession, str]]:
    """The app over real services with the metrics object bootstrap built; yields the /metrics URL too."""
    async with FakeOpenAIServer() as model_server:
        settings = Settings(
            diag_first_look=False,  # this test counts the agent's own calls; the first look: test_first_look_run.py
            diag_slack_streaming=False,
            slack_bot_token=SecretStr("xoxb-test"), slack_signing_secret=SecretStr(SECRET), slack_api_url=fake_slack.api_url,
            openai_base_url=model_server.base_url, openai_api_key=SecretStr("test"), diag_model="test-model",
            database_url=f"sqlite+aiosqlite:///{tmp_path}/diag.db", diag_clock=DEMO_CLOCK,
        )
        services = await build_services(settings, kv=RedisKV(redis_client, prefix=key_prefix))
        bot = build_bot(settings, services.chat_service, services.kv, progress_interval_s=0.05, metrics=services.metrics)
        server = TestServer(build_web_app(bot.app, services.metrics))
        await server.start_server()
        try:
            async with aiohttp.ClientSession() as session:
                sender = SlackSender(session, str(server.make_url("/slack/events")))
                yield Harness(bot, fake_slack, FakeChat(), sender), model_server, session, str(server.make_url("/metrics"))
                await bot.aclose(timeout_s=5)
        finally:
            await server.close()
            await services.aclose()


async def _scrape(session: aiohttp.ClientSession, url: str) -> str:
    async with session.get(url) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain")
        return await resp.text()


async def test_one_diagnosis_shows_in_metrics(rig: tuple[Harness, FakeOpenAIServer, aiohttp.ClientSession, str]) -> None:
    """After one grounded diagnosis: runs_total under DIAGNOSIS/SUCCESS, its tool call under FOUND, one model call per
    stage, a SUPPORTED verdict, a valid initial guard check, the ack observed, nothing in flight."""
    h, model, session, url = rig
    model.push(*_grounded_script())
    await h.send.event(mention(ts="51.0"))
    await h.settle(30)
    text = await _scrape(session, url)
    assert sample(text, "diagbot_runs_total", intent="DIAGNOSIS", outcome="SUCCESS", fallback_type="none") == 1
    assert sample(text, "diagbot_tool_calls_total", tool="query_logs", evidence_status="EVIDENCE_FOUND") == 1
    assert sample(text, "diagbot_tool_call_duration_seconds_count", tool="query_logs") == 1
    assert sample(text, "diagbot_model_call_duration_seconds_count", stage="router", result="ok") == 1
    assert sample(text, "diagbot_model_call_duration_seconds_count", stage="agent", result="ok") == 2
    assert sample(text, "diagbot_model_call_duration_seconds_count", stage="semantic_guard", result="ok") == 1
    assert sample(text, "diagbot_semantic_verdicts_total", verdict="SUPPORTED") == 1
    assert sample(text, "diagbot_guard_checks_total", check="initial", valid="true") == 1
    assert sample(text, "diagbot_slack_ack_duration_seconds_count", mode="http") == 1
    assert sample(text, "diagbot_run_duration_seconds_count", intent="DIAGNOSIS") == 1
    assert sample(text, "diagbot_runs_in_flight") == 0


async def test_slack_api_errors_and_retries_count_per_method(fake_slack: FakeSlack, settings: Settings,
                                                              redis_client: aioredis.Redis, key_prefix: str) -> None:
    """A refused placeholder post counts as an error of chat.postMessage; 429s on chat.update count as its retries."""
    metrics = Metrics()
    bot = build_bot(settings, FakeChat(delay_s=0.0), RedisKV(redis_client, prefix=key_prefix), progress_interval_s=0.05,
                    metrics=metrics)
    try:
        fake_slack.fail("chat.update", "ratelimited", times=2, status=429, retry_after=0)
        resp = await bot.deps.client.chat_postMessage(channel="C1", text="placeholder")
        await bot.deps.client.chat_update(channel="C1", ts=resp["ts"], text="final")
        fake_slack.fail("chat.postMessage", "channel_not_found")
        with pytest.raises(Exception, match="channel_not_found"):
            await bot.deps.client.chat_postMessage(channel="C404", text="x")
    finally:
        await bot.aclose(timeout_s=5)
    text = metrics.render().decode()
    assert sample(text, "diagbot_slack_api_retries_total", method="chat.update", reason="rate_limited") == 2
    assert sample(text, "diagbot_slack_api_errors_total", method="chat.update") == 0
    assert sample(text, "diagbot_slack_api_errors_total", method="chat.postMessage", error="channel_not_found") == 1
