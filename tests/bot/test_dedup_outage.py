"""Dedup through a real Redis outage (a TCP proxy in front of the real server, cut and restored): Slack's retries are
dropped while the store is down, a first delivery is answered once, and the store takes over again when it is back."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import pytest
import redis.asyncio as aioredis
from aiohttp.test_utils import TestServer

from bot.app import SlackBot, build_bot
from bot.dedup import Deduplicator
from bot.serve import build_web_app
from core.settings import Settings
from core.stores.kv import RedisKV
from core.stores.redis_client import redis_client_from_url
from tests.bot.conftest import FAST_DELIVERY
from tests.bot.fake_chat import FakeChat
from tests.bot.slack_requests import SlackSender, mention
from tests.fakes.slack_server import FakeSlack
from tests.fakes.tcp_proxy import TcpProxy
from tests.waiting import until

OUTAGE_S = 20.0


@dataclass
class Replica:
    """One bot process's worth of state: its app over HTTP, its Redis client (through the proxy), its sender."""

    bot: SlackBot
    send: SlackSender
    redis: aioredis.Redis
    server: TestServer

    async def idle(self, timeout_s: float = 10.0) -> None:
        """Wait until no listener or turn of this replica is at work (a few idle checks in a row: listeners start
        just after the ack)."""
        quiet = 0

        def settled() -> bool:
            nonlocal quiet
            quiet = quiet + 1 if self.bot.deps.jobs.in_flight == 0 else 0
            return quiet >= 3

        await until(settled, timeout_s, interval_s=0.02, message="the replica to go idle")


@pytest.fixture
async def proxy() -> AsyncIterator[TcpProxy]:
    """A cuttable path to the real Redis on 127.0.0.1:6379."""
    p = await TcpProxy("127.0.0.1", 6379).start()
    yield p
    await p.aclose()


@pytest.fixture
async def replicas(settings: Settings, chat: FakeChat, proxy: TcpProxy, key_prefix: str,
                   redis_client: aioredis.Redis) -> AsyncIterator[list[Replica]]:
    """Two bots sharing one Redis (through the proxy) and one core double, each served over real HTTP."""
    made: list[Replica] = []
    async with aiohttp.ClientSession() as session:
        for _ in range(2):
            client = redis_client_from_url(f"redis://127.0.0.1:{proxy.port}/0")
            bot = build_bot(settings, chat, RedisKV(client, prefix=key_prefix), progress_interval_s=0.05,
                            delivery=FAST_DELIVERY)
            bot.deps.dedup = Deduplicator(RedisKV(client, prefix=key_prefix), writeback_interval_s=0.2)
            server = TestServer(build_web_app(bot.app))
            await server.start_server()
            made.append(Replica(bot, SlackSender(session, str(server.make_url("/slack/events"))), client, server))
        yield made
        for r in made:
            await r.bot.aclose(timeout_s=5)
            await r.server.close()
            await r.redis.aclose()


async def test_a_message_delivered_three_times_across_a_20s_redis_outage_gets_one_answer(
        replicas: list[Replica], proxy: TcpProxy, fake_slack: FakeSlack, chat: FakeChat, redis_client: aioredis.Redis,
        key_prefix: str, caplog: pytest.LogCaptureFixture) -> None:
    """First delivery and Slack's first retry during a 20 s outage, the second retry (to the other replica) after it:
    one run, one answer; the claim taken during the outage reaches Redis once it is back."""
    a, b = replicas
    event = mention(ts="50.000001")
    loop = asyncio.get_running_loop()
    await proxy.cut()
    started = loop.time()
    with pytest.raises(Exception):  # noqa: PT011, B017 - the outage is real: whatever redis-py raises for it
        await a.redis.ping()
    with caplog.at_level(logging.WARNING, logger="bot.dedup"):
        assert (await a.send.event(event, event_id="EvOut1"))[0] == 200
        await a.idle()
    # the event and the message claims, held in this process only
    assert caplog.text.count("first delivery claimed in this process only") == 2
    assert (await a.send.event(event, event_id="EvOut1", retry_num=1))[0] == 200  # Slack's immediate retry
    await b.send.event(event, event_id="EvOut1", retry_num=1)  # ...which may reach the other replica too
    await asyncio.gather(a.idle(), b.idle())
    assert len(chat.turns) == 1
    await asyncio.sleep(max(0.0, OUTAGE_S - (loop.time() - started)))  # the outage itself lasts OUTAGE_S
    await proxy.restore()
    claims = [f"{key_prefix}diag:dedup:event:EvOut1", f"{key_prefix}diag:dedup:msg:C1:50.000001"]

    async def written_back() -> bool:
        return bool(await redis_client.exists(*claims) == len(claims))

    await until(written_back, timeout_s=10, interval_s=0.05, message="replica A's outage-time claims in Redis")
    await b.send.event(event, event_id="EvOut1", retry_num=2)  # the retry after about a minute, to replica B
    await asyncio.gather(a.idle(), b.idle())
    assert len(chat.turns) == 1
    assert len(fake_slack.finals("C1", "50.000001")) == 1


async def test_dedup_recovers_when_the_store_returns(replicas: list[Replica], proxy: TcpProxy, chat: FakeChat) -> None:
    """After an outage, claims are shared through Redis again: a message and its retry on two replicas run once."""
    a, b = replicas
    await proxy.cut()
    await a.send.event(mention(ts="51.000001"), event_id="EvOut2")
    await a.idle()
    await proxy.restore()
    await a.send.event(mention(ts="52.000001"), event_id="EvOut3")
    await b.send.event(mention(ts="52.000001"), event_id="EvOut3", retry_num=1)
    await b.send.event(mention(ts="52.000001"), event_id="EvOut4")  # the same message as a second event (message)
    await asyncio.gather(a.idle(), b.idle())
    assert [t.message_ts for t in chat.turns] == ["51.000001", "52.000001"]


async def test_first_deliveries_during_an_outage_are_answered_once_per_process(
        replicas: list[Replica], proxy: TcpProxy, chat: FakeChat) -> None:
    """With the store down, a mention delivered twice to one process (app_mention + message) runs once there."""
    a, _ = replicas
    await proxy.cut()
    await a.send.event(mention(ts="53.000001"), event_id="EvOut5")
    await a.send.event(mention(ts="53.000001"), event_id="EvOut6")
    await a.idle()
    assert [t.message_ts for t in chat.turns] == ["53.000001"]
