"""The turn queue's contract on both implementations: real Redis Streams and the in-process queue."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis

from core.contracts.run import SessionKey
from core.errors import StoreUnavailable
from core.observability.metrics import Metrics
from core.ports import JobQueue
from core.queue.job import Enqueued, Started, StartState, TurnJob, turn_job_id
from core.queue.memory import InMemoryJobQueue
from core.queue.poison import DEAD_LETTER_MAXLEN, MAX_DEAD_RAW_BYTES
from core.queue.redis_streams import RedisJobQueue
from tests.metrics_text import sample

SESSION = SessionKey(team="T1", channel="C1", thread_ts="100.0")


def job(ts: str, session: SessionKey = SESSION, run_id: str | None = None) -> TurnJob:
    return TurnJob(job_id=turn_job_id(session.channel, ts), session=session, text="why?", user="U1", message_ts=ts,
                   run_id=run_id or f"run-{ts}")


@pytest.fixture(params=["redis", "memory"])
async def queue(request: pytest.FixtureRequest, redis_client: aioredis.Redis, key_prefix: str) -> AsyncIterator[JobQueue]:
    if request.param == "redis":
        yield RedisJobQueue(redis_client, key_prefix)
    else:
        yield InMemoryJobQueue()


@pytest.fixture
def redis_queue(redis_client: aioredis.Redis, key_prefix: str) -> RedisJobQueue:
    return RedisJobQueue(redis_client, key_prefix)


async def test_a_message_is_queued_once_whatever_the_retries(queue: JobQueue) -> None:
    assert await queue.enqueue(job("1.1"), 10) is Enqueued.QUEUED
    assert await queue.enqueue(job("1.1", run_id="other"), 10) is Enqueued.DUPLICATE
    [claim] = await queue.take("w1", 10, 0.1)
    assert claim.job.run_id == "run-1.1"
    assert not claim.redelivered
    await queue.finish(claim)
    assert await queue.enqueue(job("1.1"), 10) is Enqueued.DUPLICATE  # finished: still the same message
    assert await queue.take("w1", 10, 0.05) == []


async def test_the_bound_refuses_new_jobs_and_frees_as_jobs_finish(queue: JobQueue) -> None:
    assert await queue.enqueue(job("1.1"), 2) is Enqueued.QUEUED
    assert await queue.enqueue(job("1.2"), 2) is Enqueued.QUEUED
    assert await queue.enqueue(job("1.3"), 2) is Enqueued.FULL
    depth = await queue.depth()
    assert depth.jobs == 2
    assert depth.oldest_age_s >= 0
    claims = await queue.take("w1", 1, 0.1)
    await queue.finish(claims[0])
    assert await queue.enqueue(job("1.3"), 2) is Enqueued.QUEUED  # refused before: nothing recorded for it


async def test_turns_of_one_thread_run_in_arrival_order(queue: JobQueue) -> None:
    other = SessionKey(team="T1", channel="C1", thread_ts="200.0")
    for j in (job("1.1"), job("1.2"), job("2.1", other), job("1.3")):
        await queue.enqueue(j, 10)
    claims = {c.job.message_ts: c for c in await queue.take("w1", 10, 0.1)}
    assert [await queue.next_in_thread(claims[ts].job) for ts in ("1.1", "1.2", "2.1", "1.3")] == [
        True, False, True, False]
    await queue.finish(claims["1.1"])
    assert await queue.next_in_thread(claims["1.2"].job)
    assert not await queue.next_in_thread(claims["1.3"].job)


async def test_a_hand_back_keeps_the_threads_order_and_raises_the_attempt(queue: JobQueue) -> None:
    await queue.enqueue(job("1.1"), 10)
    await queue.enqueue(job("1.2"), 10)
    first, second = await queue.take("w1", 10, 0.1)
    assert await queue.begin(first.job, "run-1.1") is None
    await queue.hand_back(first)
    [again] = await queue.take("w2", 10, 0.1)
    assert again.job.job_id == first.job.job_id
    assert again.job.attempt == 2
    assert again.redelivered
    assert not await queue.next_in_thread(second.job)  # the handed-back turn is still ahead of it
    assert await queue.next_in_thread(again.job)
    assert await queue.begin(again.job, "run-b") == "run-1.1"  # the re-run links to the first run
    assert await queue.current_run(again.job.job_id) == "run-b"
    assert await queue.job_of_run("run-b") == again.job.job_id
    assert (await queue.depth()).jobs == 2


async def test_cancel_reaches_turns_still_waiting_but_not_started_ones(queue: JobQueue) -> None:
    await queue.enqueue(job("1.1"), 10)
    await queue.enqueue(job("1.2"), 10)
    first, _ = await queue.take("w1", 10, 0.1)
    await queue.begin(first.job, first.job.run_id)
    assert await queue.cancel_queued(SESSION.as_str()) == 1  # 1.1 has started: the gate's cancel reaches it
    assert await queue.is_cancelled(turn_job_id("C1", "1.2"))
    assert not await queue.is_cancelled(first.job.job_id)
    assert await queue.job_of_run("run-1.2") == turn_job_id("C1", "1.2")
    assert not await queue.cancel_job(turn_job_id("C1", "1.2"))  # flagged once
    assert await queue.job_state(turn_job_id("C1", "1.2")) == "queued"
    assert await queue.job_state("C1:unknown") is None


async def test_start_is_thread_order_then_cancel_then_begin_in_one_step(queue: JobQueue) -> None:
    """start answers what next_in_thread, is_cancelled and begin would, in that order, and records only a go."""
    await queue.enqueue(job("1.1"), 10)
    await queue.enqueue(job("1.2"), 10)
    await queue.enqueue(job("1.3"), 10)
    first, second, third = await queue.take("w1", 10, 0.1)
    assert await queue.start(second.job, "run-x") == Started(StartState.WAIT)  # 1.1 is ahead
    assert await queue.current_run(second.job.job_id) is None  # a wait records nothing
    assert await queue.cancel_job(second.job.job_id)
    assert await queue.start(first.job, "run-1.1") == Started(StartState.STARTED)
    assert await queue.current_run(first.job.job_id) == "run-1.1"
    assert await queue.job_of_run("run-1.1") == first.job.job_id
    assert await queue.start(first.job, "run-1.1") == Started(StartState.STARTED)  # the same attempt: no previous
    assert await queue.start(first.job, "run-again") == Started(StartState.STARTED, "run-1.1")
    await queue.finish(first)
    assert await queue.start(second.job, "run-1.2") == Started(StartState.CANCELLED)  # first now, but cancelled
    assert await queue.current_run(second.job.job_id) is None
    await queue.finish(second)
    assert await queue.start(third.job, "run-1.3") == Started(StartState.STARTED)


async def test_take_waits_for_a_job_up_to_its_block_time(queue: JobQueue) -> None:
    taker = asyncio.create_task(queue.take("w1", 1, 2.0))
    await asyncio.sleep(0.05)  # the taker is blocked on the empty queue (that is the behaviour under test)
    await queue.enqueue(job("1.1"), 10)
    claims = await asyncio.wait_for(taker, 3.0)
    assert [c.job.message_ts for c in claims] == ["1.1"]


async def test_a_dead_workers_delivery_is_taken_over_after_its_idle_time(redis_queue: RedisJobQueue) -> None:
    await redis_queue.enqueue(job("1.1"), 10)
    [mine] = await redis_queue.take("dead", 1, 0.1)
    assert await redis_queue.reclaim("alive", 0.3, 10) == []  # not idle yet
    await asyncio.sleep(0.4)  # the owner does not heartbeat: that is the failure under test
    [taken] = await redis_queue.reclaim("alive", 0.3, 10)
    assert taken.job.job_id == mine.job.job_id
    assert taken.redelivered
    assert await redis_queue.heartbeat("dead", [mine]) == [mine]  # the old owner learns it lost the job
    assert await redis_queue.heartbeat("alive", [taken]) == []


async def test_a_heartbeat_keeps_a_delivery_from_being_taken_over(redis_queue: RedisJobQueue) -> None:
    await redis_queue.enqueue(job("1.1"), 10)
    [mine] = await redis_queue.take("w1", 1, 0.1)
    for _ in range(4):
        await asyncio.sleep(0.15)  # shorter than the idle time, four times over: only heartbeats keep it
        assert await redis_queue.heartbeat("w1", [mine]) == []
        assert await redis_queue.reclaim("w2", 0.3, 10) == []
    await redis_queue.finish(mine)
    assert (await redis_queue.depth()).jobs == 0


async def test_a_delivery_finished_meanwhile_is_not_reported_taken_over(redis_queue: RedisJobQueue) -> None:
    await redis_queue.enqueue(job("1.1"), 10)
    [mine] = await redis_queue.take("w1", 1, 0.1)
    await redis_queue.finish(mine)  # the worker's upkeep listed it just before its run finished
    assert await redis_queue.heartbeat("w1", [mine]) == []


async def test_a_stale_head_of_a_thread_never_blocks_it(redis_queue: RedisJobQueue, redis_client: aioredis.Redis,
                                                        key_prefix: str) -> None:
    await redis_queue.enqueue(job("1.1"), 10)
    await redis_queue.enqueue(job("1.2"), 10)
    _, second = await redis_queue.take("w1", 10, 0.1)
    await redis_client.delete(f"{key_prefix}turn-job:C1:1.1")  # its record expired or was lost
    assert await redis_queue.next_in_thread(second.job)


async def test_an_entry_that_names_no_thread_is_dead_lettered_counted_and_not_retried(
        redis_client: aioredis.Redis, key_prefix: str) -> None:
    metrics = Metrics()
    queue = RedisJobQueue(redis_client, key_prefix, metrics)
    await queue.enqueue(job("1.1"), 10)
    await redis_client.xadd(f"{key_prefix}turns", {"job": b"{not json"})
    await redis_client.xadd(f"{key_prefix}turns", {"job": b"x" * 200_000})
    await redis_client.xadd(f"{key_prefix}turns", {"other": b"field"})
    claims = await queue.take("w1", 10, 0.1)
    assert [c.job.message_ts for c in claims] == ["1.1"]
    assert (await queue.depth()).jobs == 1
    assert await queue.reclaim("w2", 0.0, 10) != []  # only the real job is left to take over
    dead = await dead_letters(redis_client, queue)
    assert [d[b"raw"][:9] for d in dead] == [b"{not json", b"x" * 9, b""]
    assert all(len(d[b"raw"]) <= MAX_DEAD_RAW_BYTES + 40 for d in dead)  # bounded, with a "cut" marker
    assert {d[b"answered"] for d in dead} == {b"0"}
    assert sample(metrics.render().decode(), "diagbot_queue_jobs_total", event="poison") == 3


async def dead_letters(client: aioredis.Redis, queue: RedisJobQueue) -> list[dict[bytes, bytes]]:
    """The dead-letter stream's entries' fields, oldest first."""
    entries: Any = await client.xrange(queue.dead_letters)
    return [fields for _, fields in entries]


def hostile(ts: str, **fields: Any) -> TurnJob:
    """A job as a newer, older or hostile writer may enqueue it: fine to encode, not valid to decode."""
    valid = job(ts)
    return TurnJob.model_construct(**{**dict(valid), **fields})


async def test_an_entry_that_fails_validation_is_handed_out_as_poison_addressing_its_thread(
        redis_client: aioredis.Redis, key_prefix: str) -> None:
    metrics = Metrics()
    queue = RedisJobQueue(redis_client, key_prefix, metrics)
    assert await queue.enqueue(hostile("1.1", text="x" * 5000), 10) is Enqueued.QUEUED
    await queue.enqueue(job("1.2"), 10)
    poisoned, normal = await queue.take("w1", 10, 0.1)
    assert poisoned.poison is not None
    assert normal.poison is None
    assert "text" in poisoned.poison.reason
    assert (poisoned.job.job_id, poisoned.job.session, poisoned.job.text) == ("C1:1.1", SESSION, "")
    assert not await queue.next_in_thread(normal.job)  # the poison entry is first in the thread's order ...
    await queue.finish(poisoned)
    assert await queue.next_in_thread(normal.job)  # ... and leaves it when finished
    assert await queue.job_state("C1:1.1") == "done"
    [dead] = await dead_letters(redis_client, queue)
    assert dead[b"answered"] == b"1"
    assert dead[b"raw"][:1] == b"{"
    assert (await queue.depth()).jobs == 1
    assert sample(metrics.render().decode(), "diagbot_queue_jobs_total", event="poison") == 1


async def test_a_poison_entry_whose_worker_died_is_taken_over_as_poison_again(
        redis_queue: RedisJobQueue) -> None:
    await redis_queue.enqueue(hostile("1.1", attempt=0), 10)
    [first] = await redis_queue.take("died", 10, 0.1)
    [again] = await redis_queue.reclaim("w2", 0.0, 10)
    assert first.poison is not None
    assert again.poison is not None
    assert again.redelivered


async def test_the_dead_letter_stream_is_bounded(redis_client: aioredis.Redis, key_prefix: str) -> None:
    queue = RedisJobQueue(redis_client, key_prefix)
    for _ in range(3):
        for _ in range(DEAD_LETTER_MAXLEN // 2):
            await redis_client.xadd(f"{key_prefix}turns", {"job": b"[]"})
        await queue.take("w1", DEAD_LETTER_MAXLEN, 0.1)
    # XADD MAXLEN ~ trims whole macro nodes (100 entries by default): close to the bound, never far past it.
    assert DEAD_LETTER_MAXLEN <= await redis_client.xlen(queue.dead_letters) <= DEAD_LETTER_MAXLEN + 100
    assert await redis_client.xlen(f"{key_prefix}turns") == 0


async def test_gone_consumers_are_forgotten_busy_ones_kept(redis_queue: RedisJobQueue, redis_client: aioredis.Redis,
                                                           key_prefix: str) -> None:
    await redis_queue.enqueue(job("1.1"), 10)
    await redis_queue.enqueue(job("1.2"), 10)
    await redis_queue.take("busy", 1, 0.1)
    [done] = await redis_queue.take("idle", 1, 0.1)
    await redis_queue.finish(done)
    assert await redis_queue.forget_consumers(0.0) == 1
    names = {c["name"] for c in await redis_client.xinfo_consumers(f"{key_prefix}turns", "workers")}
    assert names == {b"busy"}


async def test_an_unreachable_redis_is_a_clear_store_error() -> None:
    client = aioredis.from_url("redis://127.0.0.1:1", socket_connect_timeout=0.2)
    try:
        with pytest.raises(StoreUnavailable, match="turn queue"):
            await RedisJobQueue(client).enqueue(job("1.1"), 10)
    finally:
        await client.aclose()


async def test_each_take_over_counts_as_a_delivery(redis_queue: RedisJobQueue) -> None:
    await redis_queue.enqueue(job("1.1"), 10)
    await redis_queue.take("first", 1, 0.1)
    counts = [(await redis_queue.reclaim(f"w{i}", 0.0, 10))[0].deliveries for i in range(3)]
    assert counts == [2, 3, 4]


async def test_a_lost_stream_is_recreated_and_its_new_jobs_taken(redis_queue: RedisJobQueue,
                                                                 redis_client: aioredis.Redis, key_prefix: str) -> None:
    await redis_queue.enqueue(job("1.1"), 10)
    [first] = await redis_queue.take("w1", 10, 0.1)
    await redis_queue.finish(first)
    await redis_client.delete(f"{key_prefix}turns")  # Redis restarted empty, failed over, or was flushed
    await redis_queue.enqueue(job("1.2"), 10)  # XADD makes a stream without the consumer group
    with pytest.raises(StoreUnavailable):
        await redis_queue.take("w1", 10, 0.1)  # NOGROUP: the worker logs it and retries
    [claim] = await redis_queue.take("w1", 10, 0.1)  # the retry recreates the group from the stream's start
    assert claim.job.message_ts == "1.2"
