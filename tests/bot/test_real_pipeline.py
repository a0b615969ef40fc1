"""End to end without doubles in core: signed Slack requests -> the app -> the real ChatService (build_services) with
the local scripted OpenAI-compatible server, demo tools, SQLite and real Redis -> the fake Slack Web API."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import redis.asyncio as aioredis
from aiohttp.test_utils import TestServer
from pydantic import SecretStr

from bot.app import build_bot
from bot.serve import build_web_app
from core.bootstrap import build_services
from core.settings import DEMO_CLOCK, Settings
from core.stores.kv import RedisKV
from entrypoints.demo import recorded_reply
from testkit.openai_server import FakeOpenAIServer
from tests.bot.conftest import Harness
from tests.bot.fake_chat import FakeChat
from tests.bot.slack_requests import SECRET, SlackSender, mention, message
from tests.fakes.slack_server import FakeSlack

HIKARI = {"service": "order-service", "query": "HikariPool", "level": "ERROR"}


def _route(intent: str) -> dict[str, Any]:
    return {"content": json.dumps({"intent": intent})}


def _grounded_script() -> list[Any]:
    draft = {
        "conclusion": {"text": "order-service is failing on HikariPool connection errors.", "based_on_analysis_ids": ["a1"]},
        "analysis": [{"analysis_id": "a1", "kind": "NORMAL", "text": "order-service logged HikariPool connection errors.",
                      "tool_call_ids": ["{{call:1}}"]}],
        "action_plan": [], "recommendations": [],
        "limitations": {"scope": "order-service ERROR logs in the default window", "missing_info": []},
    }
    return [
        _route("DIAGNOSIS"),
        {"tool_calls": [{"id": "call_t0", "name": "query_logs", "arguments": HIKARI}]},
        recorded_reply({"tool_calls": [{"id": "call_submit", "name": "submit_diagnosis_draft", "arguments": draft}]}),
        {"content": json.dumps({"verdict": "SUPPORTED", "reason": "the cited lines show it"})},
    ]


@pytest.fixture
async def real(fake_slack: FakeSlack, redis_client: aioredis.Redis, key_prefix: str, tmp_path: Path
               ) -> AsyncIterator[tuple[Harness, FakeOpenAIServer]]:
    """The app over the real services; the model is the local scripted server."""
    async with FakeOpenAIServer() as model_server:
        settings = Settings(
            slack_bot_token=SecretStr("xoxb-test"), slack_signing_secret=SecretStr(SECRET), slack_api_url=fake_slack.api_url,
            openai_base_url=model_server.base_url, openai_api_key=SecretStr("test"), diag_model="test-model",
            database_url=f"sqlite+aiosqlite:///{tmp_path}/diag.db", diag_clock=DEMO_CLOCK,
        )
        services = await build_services(settings, kv=RedisKV(redis_client, prefix=key_prefix))
        bot = build_bot(settings, services.chat_service, services.kv, progress_interval_s=0.05)
        server = TestServer(build_web_app(bot.app))
        await server.start_server()
        try:
            async with aiohttp.ClientSession() as session:
                sender = SlackSender(session, str(server.make_url("/slack/events")))
                yield Harness(bot, fake_slack, FakeChat(), sender), model_server
                await bot.aclose(timeout_s=5)
        finally:
            await server.close()
            await services.aclose()


async def test_grounded_diagnosis_reaches_slack_and_its_trace_is_viewable(real: tuple[Harness, FakeOpenAIServer]) -> None:
    """A mention runs the real pipeline; the published report lands in the thread; a follow-up reply is a chat turn;
    the run's trace is shown to a channel member."""
    h, model = real
    model.push(*_grounded_script())
    await h.send.event(mention(ts="31.0"))
    await h.settle(30)
    final = h.slack.calls_of("chat.update")[-1].params
    payload = final["metadata"]["event_payload"]
    assert (payload["intent"], payload["outcome"], payload["fallback_type"]) == ("DIAGNOSIS", "SUCCESS", None)
    blocks = json.dumps(final["blocks"], ensure_ascii=False)
    assert "HikariPool connection errors" in blocks
    assert "query_logs" in blocks
    run_id = payload["run_id"]

    model.push(_route("CHAT"))
    await h.send.event(message("thanks, what else can you do?", ts="31.5", thread_ts="31.0"))
    await h.settle(30)
    chat_final = h.slack.calls_of("chat.update")[-1].params["metadata"]["event_payload"]
    assert (chat_final["intent"], chat_final["outcome"]) == ("CHAT", "SUCCESS")

    await h.send.command(f"trace {run_id}", user="U3", response_url=h.slack.response_url())
    trace = json.dumps((await h.slack.next_response())["blocks"])
    assert "RUN_STARTED" in trace
    assert "SEMANTIC_GUARD" in trace
    assert "RUN_FINISHED" in trace
