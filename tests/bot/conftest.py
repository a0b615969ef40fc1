"""Fixtures: the fake Slack Web API, the app served over real HTTP, real Redis for dedup, a signed-request sender."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import aiohttp
import pytest
import redis.asyncio as aioredis
from aiohttp.test_utils import TestServer
from pydantic import SecretStr

from bot.app import SlackBot, build_bot
from bot.delivery import DeliveryPolicy
from bot.serve import build_web_app
from core.settings import Settings
from core.stores.kv import RedisKV
from core.turns.timing import TurnTiming
from tests.bot.fake_chat import FakeChat
from tests.bot.slack_requests import SECRET, SlackSender
from tests.fakes.slack_server import FakeSlack
from tests.waiting import until

# Retry budgets short enough for tests (production: DeliveryPolicy()).
FAST_DELIVERY = DeliveryPolicy(update_budget_s=0.3, cleanup_budget_s=0.3, final_budget_s=5.0, first_backoff_s=0.05)


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    """A running fake Slack Web API; channel C1 has members U1..U5 (paginated 2 per page)."""
    slack = await FakeSlack(members={"C1": ["U1", "U2", "U3", "U4", "U5"], "C2": ["U9"]}).start()
    yield slack
    await slack.aclose()


@pytest.fixture
def settings(fake_slack: FakeSlack) -> Settings:
    """Settings pointing the Web API client at the fake server."""
    return Settings(
        diag_slack_streaming=False, slack_bot_token=SecretStr("xoxb-test"), slack_signing_secret=SecretStr(SECRET),
                    slack_api_url=fake_slack.api_url)


@pytest.fixture
def chat() -> Iterator[FakeChat]:
    """The core port double (fast runs); a run left wedged by a test is let go at the end."""
    double = FakeChat(delay_s=0.0)
    yield double
    double.unstick.set()


@dataclass
class Harness:
    """Everything a bot test touches."""

    bot: SlackBot
    slack: FakeSlack
    chat: FakeChat
    send: SlackSender

    async def settle(self, timeout_s: float = 10.0) -> None:
        """Wait until every background turn has finished (queued ones included)."""
        quiet = 0

        def settled() -> bool:  # listeners start just after the ack: require a few idle checks in a row
            nonlocal quiet
            quiet = quiet + 1 if self.bot.deps.jobs.in_flight == 0 else 0
            return quiet >= 3

        await until(settled, timeout_s, interval_s=0.02, message="every background turn to finish")


@pytest.fixture
def timing() -> TurnTiming | None:
    """The turns' deadlines and watchdog (None: production's, from the settings); a test module may override it."""
    return None


@pytest.fixture
async def harness(settings: Settings, fake_slack: FakeSlack, chat: FakeChat, redis_client: aioredis.Redis,
                  key_prefix: str, timing: TurnTiming | None) -> AsyncIterator[Harness]:
    """The app built by build_bot, served by aiohttp on a local port, with dedup in real Redis."""
    bot = build_bot(settings, chat, RedisKV(redis_client, prefix=key_prefix), progress_interval_s=0.05,
                    delivery=FAST_DELIVERY, timing=timing)
    server = TestServer(build_web_app(bot.app))
    await server.start_server()
    async with aiohttp.ClientSession() as session:
        yield Harness(bot, fake_slack, chat, SlackSender(session, str(server.make_url("/slack/events"))))
        await bot.aclose(timeout_s=5)
    await server.close()
