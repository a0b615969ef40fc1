"""Workers sharing one queue: a burst is split by each worker's concurrency, and waiters do not hold run slots."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack_surface import SlackSurface
from core.contracts.run import SessionKey
from core.queue.redis_streams import RedisJobQueue
from core.stores.kv import InMemoryKV
from core.turns.answers import Answers
from core.turns.runner import TurnRunner, new_job
from core.turns.timing import TurnTiming
from core.turns.worker import JobWorker, WorkerPolicy
from tests.bot.fake_chat import FakeChat
from tests.fakes.slack_server import FakeSlack
from tests.waiting import until

TIMING = TurnTiming(claim_after_s=2.0)


def _worker(queue: RedisJobQueue, chat: FakeChat, client: AsyncWebClient, name: str, concurrency: int) -> JobWorker:
    runner = TurnRunner(chat, Answers(InMemoryKV(), SlackSurface(client, progress_interval_s=60)), TIMING)
    return JobWorker(queue, runner, WorkerPolicy(concurrency=concurrency), consumer=name)


async def test_a_burst_is_shared_between_workers_by_their_concurrency(
    fake_slack: FakeSlack, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    """Twelve jobs queued before either worker reads: the first to read takes only its 6, not jobs it cannot run yet."""
    queue = RedisJobQueue(redis_client, key_prefix)
    client = AsyncWebClient(token="xoxb-test", base_url=fake_slack.api_url)
    for i in range(12):
        session = SessionKey(team="T1", channel="C1", thread_ts=f"{100 + i}.0")
        await queue.enqueue(new_job(session, "why?", "U1", f"{100 + i}.5"), 100)
    chat = FakeChat(delay_s=1.5)
    first, second = _worker(queue, chat, client, "w1", 6), _worker(queue, chat, client, "w2", 6)
    first.start()
    await until(lambda: first.in_flight > 0, timeout_s=5)
    await asyncio.sleep(0.3)  # the first worker has read the burst and started its runs
    assert first.in_flight == 6  # before the fix it held all 12 while its runs had not started yet
    second.start()
    await until(lambda: second.in_flight == 6, timeout_s=5)
    assert first.in_flight == 6
    await until(lambda: len(chat.turns) == 12, timeout_s=10)
    await first.aclose(grace_s=5)
    await second.aclose(grace_s=5)


async def test_turns_waiting_for_their_thread_leave_the_slot_to_other_threads(
    fake_slack: FakeSlack, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    """Concurrency 2, three follow-ups in one thread ahead of another thread's turn: that turn still runs at once."""
    queue = RedisJobQueue(redis_client, key_prefix)
    client = AsyncWebClient(token="xoxb-test", base_url=fake_slack.api_url)
    busy = SessionKey(team="T1", channel="C1", thread_ts="200.0")
    for ts in ("200.1", "200.2", "200.3"):
        await queue.enqueue(new_job(busy, "why?", "U1", ts), 100)
    other = SessionKey(team="T1", channel="C1", thread_ts="300.0")
    await queue.enqueue(new_job(other, "why?", "U1", "300.1"), 100)
    chat = FakeChat(delay_s=3.0)
    worker = _worker(queue, chat, client, "w1", 2)
    worker.start()
    await until(lambda: {t.session.thread_ts for t in chat.turns} == {"200.0", "300.0"}, timeout_s=5)
    assert len(chat.turns) == 2  # the thread's later turns wait for its first
    assert worker.in_flight == 4
    await worker.aclose(grace_s=0.1)
