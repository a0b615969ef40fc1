"""Durable turns with real processes: two `diagbot serve` replicas in HTTP mode share one Redis and one PostgreSQL
database. A replica killed with kill -9 while it runs ≥ 10 turns, or stopped with SIGTERM (a deploy), loses no
answer: each turn gets exactly one final message, in its first placeholder, within 90 s."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from tests.bot.slack_requests import mention
from tests.fakes.cluster import Cluster, cluster
from tests.sql_databases import empty_database

pytestmark = [pytest.mark.postgres, pytest.mark.redis]
IN_FLIGHT = 12
ANSWER_WITHIN_S = 90.0


async def send_mentions(c: Cluster, replica_index: int, count: int, text: str, first_ts: int) -> list[str]:
    sender = c.sender(c.replicas[replica_index])
    threads = [f"{first_ts + i}.000100" for i in range(count)]
    for ts in threads:
        status, _ = await sender.event(mention(f"<@UBOT> {text} (thread {ts})", ts=ts), event_id=f"Ev{ts}")
        assert status == 200
    return threads


async def runs_by_status(database_url: str) -> dict[str, str]:
    engine = create_async_engine(database_url.replace("postgres://", "postgresql+asyncpg://", 1)
                                 if database_url.startswith("postgres://") else
                                 database_url.replace("postgresql://", "postgresql+asyncpg://", 1))
    try:
        async with engine.connect() as conn:
            rows = (await conn.execute(sa.text("SELECT run_id, status FROM runs"))).all()
        return {str(r[0]): str(r[1]) for r in rows}
    finally:
        await engine.dispose()


def assert_one_final_each(c: Cluster, threads: list[str]) -> None:
    for ts in threads:
        finals = c.finals(ts)
        assert len(finals) == 1, f"thread {ts}: {len(finals)} final messages"
        assert len(c.slack.thread("C1", ts)) == 1, f"thread {ts}: a second message besides its answer"


async def test_kill_minus_9_with_runs_in_flight_loses_no_answer(tmp_path: Path) -> None:
    async with empty_database("postgres", tmp_path) as url, cluster(tmp_path, url) as c:
        await c.start("a")
        threads = await send_mentions(c, 0, IN_FLIGHT, "delay=120 redo=1 why?", 1000)
        await c.until(lambda: c.chat_model.calls >= IN_FLIGHT, 30, f"{IN_FLIGHT} runs in flight on a")
        await c.start("b")
        killed_at = time.monotonic()
        c.replicas[0].kill()
        await c.replicas[0].wait()
        assert not any(c.finals(ts) for ts in threads)  # nothing was answered before the kill
        await c.until(lambda: all(c.finals(ts) for ts in threads), ANSWER_WITHIN_S, "every turn answered")
        assert time.monotonic() - killed_at < ANSWER_WITHIN_S
        await asyncio.sleep(2.0)  # late duplicates would arrive now: their absence is the behaviour under test
        assert_one_final_each(c, threads)
        for ts in threads:
            assert "Re-run from the start" in str(c.finals(ts)[0]["blocks"])
        statuses = await runs_by_status(url)
        assert sum(1 for s in statuses.values() if s == "FAILED") == IN_FLIGHT  # the killed runs, superseded
        assert sum(1 for s in statuses.values() if s == "FINISHED") == IN_FLIGHT  # their re-runs


async def test_sigterm_lets_short_runs_finish_and_hands_long_ones_to_the_other_replica(tmp_path: Path) -> None:
    async with empty_database("postgres", tmp_path) as url, cluster(tmp_path, url, DIAG_SHUTDOWN_GRACE_S="3") as c:
        await c.start("a")
        short = await send_mentions(c, 0, 6, "delay=1.5 why?", 2000)
        long = await send_mentions(c, 0, 6, "delay=120 redo=2 why?", 3000)
        await c.until(lambda: c.chat_model.calls >= 12, 30, "12 runs in flight on a")
        await c.start("b")
        c.chat_model.delays_seen.clear()
        c.replicas[0].terminate()
        assert await c.replicas[0].wait(30) == 0  # a clean exit within the grace period (+ start-up of the rest)
        await c.until(lambda: all(c.finals(ts) for ts in short + long), ANSWER_WITHIN_S, "every turn answered")
        await asyncio.sleep(2.0)  # no late second answer may arrive
        assert_one_final_each(c, short + long)
        for ts in short:  # finished inside the grace period: not restarted
            assert "Re-run" not in str(c.finals(ts)[0]["blocks"])
        for ts in long:
            assert "Re-run from the start" in str(c.finals(ts)[0]["blocks"])
        assert sorted(c.chat_model.delays_seen) == [2.0] * 6  # only the long ones ran again
        assert "restarted while this run was working" not in str([c.finals(ts) for ts in short + long])


async def test_a_worker_process_answers_the_turns_of_a_killed_serve_replica(tmp_path: Path) -> None:
    """`diagbot worker` (no signing secret: it takes no events) shares the queue: it re-runs what serve was running."""
    async with empty_database("postgres", tmp_path) as url, cluster(tmp_path, url) as c:
        await c.start("a")
        threads = await send_mentions(c, 0, 4, "delay=120 redo=1 why?", 4000)
        await c.until(lambda: c.chat_model.calls >= 4, 30, "4 runs in flight on a")
        await c.start("w", command="worker", SLACK_SIGNING_SECRET="")
        c.replicas[0].kill()
        await c.replicas[0].wait()
        await c.until(lambda: all(c.finals(ts) for ts in threads), ANSWER_WITHIN_S, "every turn answered by w")
        assert_one_final_each(c, threads)
        assert "posting only" in c.replicas[1].log() or "taking turns" in c.replicas[1].log()
