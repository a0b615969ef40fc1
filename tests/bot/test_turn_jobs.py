"""Turns as queued jobs, with two bot replicas sharing one real Redis queue and one fake Slack: every message is
answered once, in arrival order per thread, across hand-backs at shutdown, a full queue and cancels."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
import redis.asyncio as aioredis
from pydantic import SecretStr

from bot.app import SlackBot, build_bot
from core.contracts.release import ReleaseOutcome
from core.contracts.run import RunRecord, SessionKey, Turn
from core.ports import ProgressSink
from core.queue.job import Enqueued, TurnJob
from core.queue.redis_streams import RedisJobQueue
from core.settings import Settings
from core.stores.kv import InMemoryKV, RedisKV
from core.turns.answers import answer_key
from core.turns.recovery import TurnRecovery
from tests.bot.conftest import FAST_DELIVERY
from tests.bot.fake_chat import FakeChat
from tests.fakes.slack_server import FakeSlack
from tests.waiting import until


class OrderedChat(FakeChat):
    """FakeChat that logs when each turn starts and ends (by message ts), shared by both replicas' records."""

    def __init__(self, log: list[str], delay_s: float = 0.0) -> None:
        super().__init__(delay_s=delay_s)
        self.log = log

    async def handle(self, turn: Turn, progress: ProgressSink | None = None) -> ReleaseOutcome:
        self.log.append(f"start {turn.message_ts}")
        try:
            return await super().handle(turn, progress)
        finally:
            self.log.append(f"end {turn.message_ts}")


@dataclass
class Replicas:
    a: SlackBot
    b: SlackBot
    chat_a: OrderedChat
    chat_b: OrderedChat
    slack: FakeSlack
    log: list[str]

    def finals(self, thread_ts: str) -> list[dict[str, Any]]:
        return self.slack.finals("C1", thread_ts)

    async def until(self, check: Callable[[], bool], timeout_s: float = 10.0) -> None:
        async with asyncio.timeout(timeout_s):
            while not check():  # noqa: ASYNC110 - the fake Slack has no event per edit
                await asyncio.sleep(0.02)


async def _depth_is_zero(queue: RedisJobQueue) -> bool:
    return (await queue.depth()).jobs == 0


def session(thread_ts: str) -> SessionKey:
    return SessionKey(team="T1", channel="C1", thread_ts=thread_ts)


@pytest.fixture
async def replicas(fake_slack: FakeSlack, redis_client: aioredis.Redis, key_prefix: str,
                   request: pytest.FixtureRequest) -> AsyncIterator[Replicas]:
    marker = request.node.get_closest_marker("queue_settings")
    extra: dict[str, Any] = marker.kwargs if marker else {}
    settings = Settings(diag_slack_streaming=False, slack_bot_token=SecretStr("xoxb-test"),
                        slack_api_url=fake_slack.api_url, diag_queue_claim_after_s=0.6, **extra)
    log: list[str] = []
    chats = OrderedChat(log, delay_s=0.3), OrderedChat(log, delay_s=0.3)
    bots = [build_bot(settings, chat, RedisKV(redis_client, key_prefix), progress_interval_s=0.05,
                      delivery=FAST_DELIVERY, queue=RedisJobQueue(redis_client, key_prefix)) for chat in chats]
    for bot in bots:
        bot.start()
    yield Replicas(bots[0], bots[1], chats[0], chats[1], fake_slack, log)
    for bot in bots:
        await bot.aclose(timeout_s=2)


async def test_a_message_delivered_to_both_replicas_runs_and_is_answered_once(replicas: Replicas) -> None:
    results = await asyncio.gather(*(r.deps.jobs.submit(session("10.0"), "why?", "U1", "10.0")
                                     for r in (replicas.a, replicas.b, replicas.a, replicas.b)))
    assert sorted(results) == sorted([Enqueued.QUEUED, *[Enqueued.DUPLICATE] * 3])
    await replicas.until(lambda: len(replicas.finals("10.0")) == 1)
    await asyncio.sleep(0.5)  # nothing else may arrive: that absence is the behaviour under test
    assert len(replicas.finals("10.0")) == 1
    assert len(replicas.chat_a.turns) + len(replicas.chat_b.turns) == 1


async def test_turns_of_one_thread_run_one_at_a_time_in_arrival_order_whichever_replica(replicas: Replicas) -> None:
    for i, bot in enumerate([replicas.a, replicas.b, replicas.a, replicas.b]):
        await bot.deps.jobs.submit(session("20.0"), f"turn {i}", "U1", f"20.{i + 1}")
    await replicas.until(lambda: replicas.log.count("end 20.4") == 1, timeout_s=15)
    assert replicas.log == [f"{kind} 20.{i}" for i in range(1, 5) for kind in ("start", "end")]


async def test_at_shutdown_unfinished_runs_are_handed_back_and_answered_once_in_the_same_placeholder(
        replicas: Replicas) -> None:
    replicas.chat_a.delay_s = replicas.chat_b.delay_s = 2.0
    await replicas.b.deps.jobs.worker.aclose(0)  # type: ignore[union-attr]  # only A takes the job
    await replicas.a.deps.jobs.submit(session("30.0"), "why?", "U1", "30.0")
    await replicas.until(lambda: bool(replicas.chat_a.turns))
    replicas.b.deps.jobs.worker = None
    restarted = build_bot(Settings(diag_slack_streaming=False, slack_bot_token=SecretStr("xoxb-test"),
                                   slack_api_url=replicas.slack.api_url),
                          replicas.chat_b, replicas.b.deps.runner.answers.kv, progress_interval_s=0.05, delivery=FAST_DELIVERY,
                          queue=replicas.a.deps.jobs.queue)
    await replicas.a.deps.jobs.worker.aclose(0.1)  # type: ignore[union-attr]  # SIGTERM: grace 0.1 s < the run
    replicas.chat_b.delay_s = 0.1
    restarted.start()
    try:
        await replicas.until(lambda: len(replicas.finals("30.0")) == 1)
        [final] = replicas.finals("30.0")
        assert "Re-run from the start" in str(final["blocks"])
        assert len(replicas.slack.thread("C1", "30.0")) == 1  # the placeholder became the answer; no second message
        assert len(replicas.slack.calls_of("chat.postMessage")) == 1
        assert [t.restart_of for t in replicas.chat_b.turns] == [replicas.chat_a.turns[0].run_id]
    finally:
        await restarted.aclose(timeout_s=2)


@pytest.mark.queue_settings(diag_shutdown_grace_s=5.0)
async def test_runs_that_finish_inside_the_grace_period_are_not_restarted(replicas: Replicas) -> None:
    await replicas.b.deps.jobs.worker.aclose(0)  # type: ignore[union-attr]
    replicas.b.deps.jobs.worker = None
    await replicas.a.deps.jobs.submit(session("40.0"), "why?", "U1", "40.0")
    await replicas.until(lambda: bool(replicas.chat_a.turns))
    await replicas.a.deps.jobs.worker.aclose(5.0)  # type: ignore[union-attr]
    assert len(replicas.finals("40.0")) == 1
    assert "Re-run" not in str(replicas.finals("40.0")[0]["blocks"])
    assert (await replicas.a.deps.jobs.queue.depth()).jobs == 0


@pytest.mark.queue_settings(diag_queue_max=1)
async def test_a_full_queue_answers_busy_at_once(replicas: Replicas) -> None:
    replicas.chat_a.delay_s = replicas.chat_b.delay_s = 1.0
    assert await replicas.a.deps.jobs.submit(session("50.0"), "why?", "U1", "50.0") is Enqueued.QUEUED
    assert await replicas.b.deps.jobs.submit(session("51.0"), "why?", "U1", "51.0") is Enqueued.FULL
    await replicas.until(lambda: bool(replicas.slack.thread("C1", "51.0")))
    [busy] = replicas.finals("51.0")  # a final message: one per user message, with its metadata
    assert "too busy" in busy["text"]
    assert "Nothing was started" in busy["text"]
    await replicas.until(lambda: len(replicas.finals("50.0")) == 1)


async def test_stop_reaches_the_running_turn_and_the_turns_waiting_behind_it(replicas: Replicas) -> None:
    replicas.chat_a.delay_s = replicas.chat_b.delay_s = 30.0
    await replicas.a.deps.jobs.submit(session("60.0"), "first", "U1", "60.0")
    await replicas.b.deps.jobs.submit(session("60.0"), "second", "U1", "60.1")
    await replicas.until(lambda: bool(replicas.chat_a.active or replicas.chat_b.active))
    # The double's cancel is per replica (the real SessionGate's crosses processes through Redis; tested with it in
    # tests/integration/test_session_leases.py): ask the replica running it; the queued turn is cancelled in Redis.
    running = replicas.a if replicas.chat_a.active else replicas.b
    assert await running.deps.jobs.cancel_session(session("60.0").as_str())
    await replicas.until(lambda: len(replicas.finals("60.0")) == 2)
    texts = [str(m["blocks"]) for m in replicas.finals("60.0")]
    assert any("Cancelled before it started" in t for t in texts)
    assert replicas.log.count("start 60.1") == 0  # the waiting turn never ran


async def test_recovery_finishes_a_run_left_running_by_a_dead_process_once(replicas: Replicas) -> None:
    stale = RunRecord(run_id="run_dead", session_key="T1:C1:70.0", team="T1", channel="C1", user="U1", query="why?",
                      started_at=datetime(2026, 1, 1, tzinfo=UTC))
    replicas.chat_a.stale = replicas.chat_b.stale = [stale]
    recoveries = [TurnRecovery(bot.deps.chat, bot.deps.jobs.queue, bot.deps.runner.answers, interval_s=60,
                               min_age_s=90) for bot in (replicas.a, replicas.b)]
    assert sum(await asyncio.gather(*(r.run_once() for r in recoveries))) >= 1
    [final] = replicas.finals("70.0")
    assert final["metadata"]["event_payload"]["outcome"] == "FAILURE"
    assert await recoveries[0].run_once() == 1  # the record is still stale in the double: finished again, not posted
    assert len(replicas.finals("70.0")) == 1


async def test_a_queue_that_is_down_still_answers_the_turn_in_this_process(fake_slack: FakeSlack) -> None:
    """Redis unreachable when the turn is submitted: not durable, but answered once (the dedup failed closed already)."""
    client = aioredis.from_url("redis://127.0.0.1:1", socket_connect_timeout=0.2)
    settings = Settings(diag_slack_streaming=False, slack_bot_token=SecretStr("xoxb-test"),
                        slack_api_url=fake_slack.api_url)
    bot = build_bot(settings, FakeChat(), InMemoryKV(), progress_interval_s=0.05, delivery=FAST_DELIVERY,
                    queue=RedisJobQueue(client, "down:"))
    try:
        assert await bot.deps.jobs.submit(session("80.0"), "why?", "U1", "80.0") is Enqueued.QUEUED
        async with asyncio.timeout(10):
            while not fake_slack.finals("C1", "80.0"):  # noqa: ASYNC110 - the fake Slack has no event per edit
                await asyncio.sleep(0.02)
        assert len(fake_slack.finals("C1", "80.0")) == 1
    finally:
        await bot.aclose(timeout_s=2)
        await client.aclose()


async def test_a_turn_whose_process_died_on_every_try_is_answered_failure_not_tried_again(
        replicas: Replicas, redis_client: aioredis.Redis, key_prefix: str) -> None:
    """A question that kills its worker each time must not take the whole fleet down one process after another."""
    await replicas.a.deps.jobs.worker.aclose(0)  # type: ignore[union-attr]
    await replicas.b.deps.jobs.worker.aclose(0)  # type: ignore[union-attr]
    queue = RedisJobQueue(redis_client, key_prefix)
    await queue.enqueue(job_for("90.0"), 10)
    await queue.take("died-1", 1, 0.1)
    for i in range(2, 4):  # two more processes took it over and died too
        await queue.reclaim(f"died-{i}", 0.0, 10)
    restarted = build_bot(Settings(diag_slack_streaming=False, slack_bot_token=SecretStr("xoxb-test"),
                                   slack_api_url=replicas.slack.api_url, diag_queue_claim_after_s=0.2),
                          replicas.chat_b, RedisKV(redis_client, key_prefix), progress_interval_s=0.05,
                          delivery=FAST_DELIVERY, queue=queue)
    restarted.start()
    try:
        await replicas.until(lambda: len(replicas.finals("90.0")) == 1)
        [final] = replicas.finals("90.0")
        assert "3 times" in final["text"]
        assert final["metadata"]["event_payload"]["outcome"] == "FAILURE"
        assert replicas.chat_b.turns == []  # not tried a fourth time
        # The job is finished just after its final is posted: wait on that, not on the order of the two.
        await until(lambda: _depth_is_zero(queue), 5, message="the job to leave the queue")
    finally:
        await restarted.aclose(timeout_s=2)


def job_for(ts: str) -> TurnJob:
    return TurnJob(job_id=f"C1:{ts}", session=session(ts), text="why?", user="U1", message_ts=ts, run_id=f"run-{ts}")


async def test_a_turn_whose_worker_died_after_claiming_its_answer_record_is_still_answered(
        replicas: Replicas, redis_client: aioredis.Redis, key_prefix: str) -> None:
    """kill -9 between the answer record's claim and Slack receiving the final: the placeholder must not stay."""
    await replicas.a.deps.jobs.worker.aclose(0)  # type: ignore[union-attr]
    await replicas.b.deps.jobs.worker.aclose(0)  # type: ignore[union-attr]
    queue = RedisJobQueue(redis_client, key_prefix)
    kv = RedisKV(redis_client, key_prefix)
    job = job_for("95.0")
    await queue.enqueue(job, 10)
    [claim] = await queue.take("died", 1, 0.1)
    await queue.begin(claim.job, job.run_id)  # the first attempt ran ...
    placeholder = await replicas.a.deps.client.chat_postMessage(channel="C1", thread_ts="95.0", text="Working…")
    await replicas.a.deps.runner.answers.keep_placeholder(job.job_id, str(placeholder["ts"]))
    claim_ttl_s = replicas.a.deps.runner.timing.answer_claim_ttl_s
    assert await kv.set_if_absent(answer_key(job.job_id), f"claim:{job.run_id}", claim_ttl_s)  # ... and died here
    restarted = build_bot(Settings(diag_slack_streaming=False, slack_bot_token=SecretStr("xoxb-test"),
                                   slack_api_url=replicas.slack.api_url, diag_queue_claim_after_s=0.2),
                          replicas.chat_b, kv, progress_interval_s=0.05, delivery=FAST_DELIVERY, queue=queue)
    restarted.start()
    try:
        await replicas.until(lambda: len(replicas.finals("95.0")) == 1, timeout_s=20)
        assert len(replicas.slack.thread("C1", "95.0")) == 1  # in the first attempt's placeholder
    finally:
        await restarted.aclose(timeout_s=2)


async def test_a_poison_entry_is_answered_in_its_thread_and_the_next_turn_of_that_thread_runs(
        replicas: Replicas, redis_client: aioredis.Redis, key_prefix: str) -> None:
    """A queue entry that is not a valid job (a foreign writer, a version skew) must not hold its thread for a day."""
    queue = RedisJobQueue(redis_client, key_prefix)
    await redis_client.xadd(f"{key_prefix}turns", {"job": b"\xff{garbage"})  # names no thread: dead-lettered
    # Over the job's text bound: fails validation, yet names its thread (and holds its place in the thread's order).
    foreign = TurnJob.model_construct(**{**dict(job_for("97.1")), "text": "x" * 9000, "session": session("97.0")})
    assert await queue.enqueue(foreign, 10) is Enqueued.QUEUED
    await replicas.a.deps.jobs.submit(session("97.0"), "and now?", "U1", "97.2")
    await replicas.until(lambda: len(replicas.finals("97.0")) == 2)
    [refused] = [m for m in replicas.finals("97.0") if "could not be processed" in m["text"]]
    assert refused["text"] == "This request could not be processed; please ask again."
    assert refused["metadata"]["event_payload"]["outcome"] == "FAILURE"
    assert "xxxx" not in str(refused)
    assert [t.message_ts for t in replicas.chat_a.turns + replicas.chat_b.turns] == ["97.2"]  # the next turn ran
    assert await redis_client.xlen(queue.dead_letters) == 2
    await until(lambda: _depth_is_zero(queue), 5, message="the jobs to leave the queue")
