"""Session locks are leases with an owner (real Redis): renewed while the owner lives, lapsing soon after it dies;
and ending a run never waits on a helper task that ignores its cancel (the redis-py hang of issue 10)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import pytest
import redis.asyncio as aioredis

from core.run import CancelSignal
from core.service.sessions import SessionGate, active_run_key, cancel_key, lock_key
from core.stores.kv import InMemoryKV, RedisKV

pytestmark = pytest.mark.redis


class CancelSwallowingKV(InMemoryKV):
    """A KV whose reads swallow a cancel, as a redis-py 8 call can: a task cancelled inside keeps running."""

    swallow = True

    async def _swallow_cancel(self) -> None:
        try:
            await asyncio.sleep(0.02)  # a slow read, so a cancel lands inside it
        except asyncio.CancelledError:
            if not self.swallow:
                raise
            # the cancel is lost, like a redis-py connection retry swallowing it

    async def get(self, key: str) -> str | None:
        await self._swallow_cancel()
        return await super().get(key)

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        await self._swallow_cancel()
        return await super().get_many(keys)


async def test_ending_a_run_never_waits_for_the_cancel_poller() -> None:
    """A run ends at once even when the cancel poller's KV calls swallow cancellation."""
    kv = CancelSwallowingKV()
    gate = SessionGate(kv, run_deadline_s=5, cancel_poll_s=0.005)

    signals: list[CancelSignal] = []

    async def turns() -> None:
        for i in range(30):
            signals.append(CancelSignal())
            async with gate.turn("s", f"r{i}"), gate.active("s", f"r{i}", signals[-1]):
                await asyncio.sleep(0.011)  # each turn's run, longer than a few cancel polls

    task = asyncio.create_task(turns())
    done, _ = await asyncio.wait({task}, timeout=5)  # not a timeout around the turns: a hung one would swallow it too
    if task not in done:  # unblock the hung poller so the test fails instead of hanging the suite
        kv.swallow = False
        for signal in signals:
            signal.set()
        await asyncio.wait({task}, timeout=5)
        pytest.fail("a turn hung waiting for its cancel poller")
    task.result()
    await gate.aclose()


async def test_cancel_flag_set_elsewhere_reaches_the_run(redis_client: aioredis.Redis, key_prefix: str) -> None:
    """A cancel flag written by another process (another gate on the same Redis) sets the run's cancel event."""
    here = SessionGate(RedisKV(redis_client, key_prefix), run_deadline_s=5, cancel_poll_s=0.02)
    there = SessionGate(RedisKV(redis_client, key_prefix), run_deadline_s=5)
    cancelled = CancelSignal()
    async with here.turn("s", "r1"), here.active("s", "r1", cancelled):
        assert await there.cancel_session("s")
        async with asyncio.timeout(2):
            await cancelled.wait()
    await here.aclose()


async def test_live_owner_keeps_its_lease_past_the_ttl(redis_client: aioredis.Redis, key_prefix: str) -> None:
    """While the owner runs, its lease is renewed: another process cannot take the session even after lease_s."""
    owner = SessionGate(RedisKV(redis_client, key_prefix), run_deadline_s=5, lease_s=0.3)
    other = SessionGate(RedisKV(redis_client, key_prefix), run_deadline_s=5, lease_s=0.3, lock_poll_s=0.01)
    order: list[str] = []

    async def second() -> None:
        async with other.turn("s", "r2"):
            order.append("r2")

    async with owner.turn("s", "r1"), owner.active("s", "r1", CancelSignal()):
        task = asyncio.create_task(second())
        await asyncio.sleep(1.2)  # four lease lengths pass (the lapse a renewal must prevent is the behaviour)
        order.append("r1 done")
        assert await RedisKV(redis_client, key_prefix).get(active_run_key("r1")) == "s"  # the heartbeat is renewed
    await asyncio.wait_for(task, 2)
    assert order == ["r1 done", "r2"]
    await owner.aclose()


async def test_dead_owner_frees_the_session_within_its_lease(redis_client: aioredis.Redis, key_prefix: str) -> None:
    """A lock whose owner stopped renewing (its process died) lapses within lease_s; the next turn then runs."""
    kv = RedisKV(redis_client, key_prefix)
    await kv.set(lock_key("s"), "run_of_dead_process", 0.5)
    gate = SessionGate(kv, run_deadline_s=180, lease_s=0.5, lock_poll_s=0.01)
    started = time.monotonic()
    async with gate.turn("s", "r2"):
        waited = time.monotonic() - started
    assert 0.3 < waited < 1.5


async def test_release_never_frees_another_owners_lease(redis_client: aioredis.Redis, key_prefix: str) -> None:
    """An owner whose lease lapsed and was taken does not delete the new owner's lock when it finishes."""
    kv = RedisKV(redis_client, key_prefix)
    gate = SessionGate(kv, run_deadline_s=5, lease_s=10)
    async with gate.turn("s", "r1"):
        await kv.set(lock_key("s"), "r2", 10)  # r1's lease lapsed and r2 took the session meanwhile
    assert await kv.get(lock_key("s")) == "r2"
    assert not await kv.renew(lock_key("s"), "r1", 10)
    assert not await kv.delete_if(lock_key("s"), "r1")
    assert await kv.delete_if(lock_key("s"), "r2")


async def test_finished_run_leaves_no_keys(redis_client: aioredis.Redis, key_prefix: str) -> None:
    """After a turn the lock, the heartbeat and the cancel flag are gone."""
    kv = RedisKV(redis_client, key_prefix)
    gate = SessionGate(kv, run_deadline_s=5)
    async with gate.turn("s", "r1"), gate.active("s", "r1", CancelSignal()):
        assert await gate.cancel_run("r1")
    assert await kv.get_many([lock_key("s"), active_run_key("r1"), cancel_key("r1")]) == [None, None, None]
    await gate.aclose()
