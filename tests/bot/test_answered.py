"""The per-turn answer record (bot/final_once.py) as the turn runner and its watchdog use it, on real Redis: one final
message per user message whoever posts it, and a re-run edits the placeholder its first attempt kept."""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as aioredis
from slack_sdk.web.async_client import AsyncWebClient

from bot.final_once import answered, keep_placeholder, post_final_once
from bot.render.message import SlackMessage, run_metadata
from bot.watchdog import TurnTarget
from core.stores.kv import RedisKV
from tests.bot.conftest import FAST_DELIVERY
from tests.fakes.slack_server import FakeSlack


def final(run_id: str, text: str) -> SlackMessage:
    """A final message with its metadata."""
    return SlackMessage(text=text, blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": text}}],
                        metadata=run_metadata(run_id, "DIAGNOSIS", "SUCCESS", None))


async def test_the_watchdog_and_a_late_run_racing_post_one_final(fake_slack: FakeSlack, redis_client: aioredis.Redis,
                                                                 key_prefix: str) -> None:
    """The watchdog's FAILURE and the stuck run's late answer, from two processes at once: one final message."""
    client = AsyncWebClient(token="xoxb-test", base_url=fake_slack.api_url)
    target = TurnTarget("C1", "70.0", "70.0")
    until = time.monotonic() + 5
    owners = ["watchdog:run_1", "run_1"]
    results = await asyncio.gather(*(
        post_final_once(client, RedisKV(redis_client, prefix=key_prefix), target.key, owner, "C1", "70.0", None,
                        final("run_1", f"from {owner}"), until=until, policy=FAST_DELIVERY, wait_s=5)
        for owner in owners))
    assert sorted(r is None for r in results) == [False, True]
    assert len(fake_slack.finals("C1", "70.0")) == 1
    assert await answered(RedisKV(redis_client, prefix=key_prefix), target.key)


async def test_a_rerun_edits_the_placeholder_its_first_attempt_kept(fake_slack: FakeSlack, redis_client: aioredis.Redis,
                                                                    key_prefix: str) -> None:
    """Attempt 1 posted and kept the placeholder, then died; attempt 2 elsewhere answers in that same message."""
    client = AsyncWebClient(token="xoxb-test", base_url=fake_slack.api_url)
    kv = RedisKV(redis_client, prefix=key_prefix)
    target = TurnTarget("C1", "71.0", "71.0")
    first = str((await client.chat_postMessage(channel="C1", thread_ts="71.0", text="Looking into it…"))["ts"])
    assert await keep_placeholder(kv, target.key, first) == first
    assert await keep_placeholder(kv, target.key, "999.9") == first  # a later poster adopts the first one
    ts = await post_final_once(client, kv, target.key, "run_b", "C1", "71.0", first, final("run_b", "the answer"),
                               until=time.monotonic() + 5, policy=FAST_DELIVERY)
    assert ts == first
    assert [m["text"] for m in fake_slack.thread("C1", "71.0")] == ["the answer"]
