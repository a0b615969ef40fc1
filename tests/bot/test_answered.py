"""The per-turn answer record (core/turns/answers.py) over the Slack surface, on real Redis: one final message per
user message whoever posts it, a re-run edits the placeholder its first attempt kept, and a final the store could not
record is found in the thread (its `diag_run_finished` metadata) instead of being answered again."""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as aioredis
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack_surface import SlackSurface
from core.contracts.release import Outcome, ReleaseOutcome
from core.stores.kv import RedisKV
from core.turns.answers import Answers
from core.turns.surface import Final, FinalKind, Target
from tests.bot.conftest import FAST_DELIVERY
from tests.fakes.slack_server import FakeSlack


def final(run_id: str) -> Final:
    """A SUCCESS chat final of `run_id`."""
    return Final(FinalKind.OUTCOME, run_id, outcome=ReleaseOutcome(run_id=run_id, intent="CHAT",
                                                                    outcome=Outcome.SUCCESS, chat_text="the answer"))


def answers_for(fake_slack: FakeSlack, redis_client: aioredis.Redis, key_prefix: str) -> tuple[Answers,
                                                                                                AsyncWebClient]:
    client = AsyncWebClient(token="xoxb-test", base_url=fake_slack.api_url)
    return Answers(RedisKV(redis_client, prefix=key_prefix), SlackSurface(client, delivery=FAST_DELIVERY)), client


async def test_the_watchdog_and_a_late_run_racing_post_one_final(fake_slack: FakeSlack, redis_client: aioredis.Redis,
                                                                 key_prefix: str) -> None:
    """The watchdog's FAILURE and the stuck run's late answer, from two processes at once: one final message."""
    until = time.monotonic() + 5
    owners = ["watchdog:run_1", "run_1"]
    results = await asyncio.gather(*(
        answers_for(fake_slack, redis_client, key_prefix)[0].post("C1:70.0", owner, Target("C1", "70.0"), None,
                                                                  final("run_1"), until=until, wait_s=5)
        for owner in owners))
    assert sorted(r is None for r in results) == [False, True]
    assert len(fake_slack.finals("C1", "70.0")) == 1
    assert await answers_for(fake_slack, redis_client, key_prefix)[0].answered("C1:70.0")


async def test_a_rerun_edits_the_placeholder_its_first_attempt_kept(fake_slack: FakeSlack, redis_client: aioredis.Redis,
                                                                    key_prefix: str) -> None:
    """Attempt 1 posted and kept the placeholder, then died; attempt 2 elsewhere answers in that same message."""
    answers, client = answers_for(fake_slack, redis_client, key_prefix)
    first = str((await client.chat_postMessage(channel="C1", thread_ts="71.0", text="Looking into it…"))["ts"])
    assert await answers.keep_placeholder("C1:71.0", first) == first
    assert await answers.keep_placeholder("C1:71.0", "999.9") == first  # a later poster adopts the first one
    ts = await answers.post("C1:71.0", "run_b", Target("C1", "71.0"), first, final("run_b"),
                            until=time.monotonic() + 5)
    assert ts == first
    assert [m["text"] for m in fake_slack.thread("C1", "71.0")] == ["the answer"]


async def test_a_final_the_store_could_not_record_is_found_in_the_thread(
        fake_slack: FakeSlack, redis_client: aioredis.Redis, key_prefix: str) -> None:
    """The answer went out but its record did not (an outage): a redelivered job finds the final in the thread —
    in its placeholder whatever run wrote it, or as a later reply of one of its runs — and writes the record."""
    answers, client = answers_for(fake_slack, redis_client, key_prefix)
    placeholder = str((await client.chat_postMessage(channel="C1", thread_ts="72.0", text="Working…"))["ts"])
    assert not await answers.answered_anywhere("C1:72.0", Target("C1", "72.0"), "72.0", {"run_a"})
    await answers.keep_placeholder("C1:72.0", placeholder)
    await client.chat_update(channel="C1", ts=placeholder, text="done", metadata={
        "event_type": "diag_run_finished", "event_payload": {"run_id": "run_x", "intent": None, "outcome": "FAILURE",
                                                             "fallback_type": None}})
    assert await answers.answered_anywhere("C1:72.0", Target("C1", "72.0"), "72.0", {"run_a"})
    assert await answers.answered("C1:72.0")  # recorded now

    await client.chat_postMessage(channel="C1", thread_ts="73.0", text="other turn's", metadata={
        "event_type": "diag_run_finished", "event_payload": {"run_id": "run_other", "intent": None,
                                                             "outcome": "SUCCESS", "fallback_type": None}})
    assert not await answers.answered_anywhere("C1:73.1", Target("C1", "73.0"), "73.1", {"run_b"})
    await client.chat_postMessage(channel="C1", thread_ts="73.0", text="ours", metadata={
        "event_type": "diag_run_finished", "event_payload": {"run_id": "run_b", "intent": None, "outcome": "SUCCESS",
                                                             "fallback_type": None}})
    assert await answers.answered_anywhere("C1:73.1", Target("C1", "73.0"), "73.1", {"run_b"})
