"""The KV store's batch operations (set_many, renew_many, delete_many) keep the single ones' meaning, in Redis and in
memory, and the session gate uses them: its keeper renews every lease of every local run in one round trip per tick
instead of one per lease (a 60 s run held three leases renewed every 5 s: 36 round trips), and a run that ends
frees its keys in two."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from core.ports import KeyValueStore
from core.service.sessions import SessionGate, active_run_key, cancel_key, lock_key, session_run_key
from core.stores.kv import InMemoryKV, RedisKV
from tests.conftest import REDIS_URL
from tests.integration.test_canonical_redis import CountingRedis

pytestmark = pytest.mark.redis


@pytest.fixture(params=["redis", "memory"])
async def kv(request: pytest.FixtureRequest, redis_client: aioredis.Redis, key_prefix: str) -> KeyValueStore:
    return RedisKV(redis_client, prefix=key_prefix) if request.param == "redis" else InMemoryKV()


async def test_set_many_sets_every_key_with_the_ttl(kv: KeyValueStore) -> None:
    await kv.set_many({"a": "1", "b": "2"}, ttl_s=0.2)
    assert await kv.get_many(["a", "b"]) == ["1", "2"]
    await asyncio.sleep(0.3)
    assert await kv.get_many(["a", "b"]) == [None, None]


async def test_set_many_gives_the_keys_named_in_ttls_their_own_ttl(kv: KeyValueStore) -> None:
    await kv.set_many({"a": "1", "b": "2", "c": "3"}, ttl_s=0.2, ttls={"b": 5.0})
    assert await kv.get_many(["a", "b", "c"]) == ["1", "2", "3"]
    await asyncio.sleep(0.3)
    assert await kv.get_many(["a", "b", "c"]) == [None, "2", None]


async def test_gate_writes_its_marks_with_the_leases_and_keeps_them(kv: KeyValueStore) -> None:
    gate = SessionGate(kv, run_deadline_s=30, lease_s=0.3)
    async with gate.turn("s", "r1"), gate.active("s", "r1", asyncio.Event(), {"seen:s": ("r1", 5.0)}):
        assert await kv.get_many([active_run_key("r1"), session_run_key("s"), "seen:s"]) == ["s", "r1", "r1"]
    await asyncio.sleep(0.4)
    assert await kv.get_many([active_run_key("r1"), session_run_key("s"), "seen:s"]) == [None, None, "r1"]


async def test_renew_many_renews_only_the_leases_still_owned(kv: KeyValueStore) -> None:
    await kv.set_many({"mine": "me", "taken": "someone else"}, ttl_s=0.3)
    assert await kv.renew_many({"mine": "me", "taken": "me", "gone": "me"}, ttl_s=5) == [True, False, False]
    await asyncio.sleep(0.4)
    assert await kv.get("mine") == "me"
    assert await kv.get("taken") is None  # not renewed: lapsed with its own TTL
    assert await kv.get("gone") is None  # never written back
    assert await kv.renew_many({}, ttl_s=5) == []


async def test_delete_many_deletes_plain_keys_and_only_owned_leases(kv: KeyValueStore) -> None:
    await kv.set_many({"flag": "1", "lease": "me", "other": "someone else"}, ttl_s=5)
    await kv.delete_many(["flag", "absent"], owned={"lease": "me", "other": "me"})
    assert await kv.get_many(["flag", "lease", "other"]) == [None, None, "someone else"]
    await kv.delete_many([])


@pytest.fixture
async def counting(key_prefix: str) -> AsyncIterator[CountingRedis]:
    client = CountingRedis.from_url(REDIS_URL)
    assert isinstance(client, CountingRedis)
    client.commands = []
    yield client
    keys = [k async for k in client.scan_iter(match=f"{key_prefix}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


async def test_the_keeper_renews_all_leases_in_one_round_trip_and_a_run_ends_in_two(
    counting: CountingRedis, key_prefix: str
) -> None:
    runs = 10
    gate = SessionGate(RedisKV(counting, prefix=key_prefix), run_deadline_s=5, lease_s=0.3, cancel_poll_s=0.05)
    entered = asyncio.Event()
    leave = asyncio.Event()
    inside = 0

    async def turn(i: int) -> None:
        nonlocal inside
        async with gate.turn(f"s{i}", f"run{i}"), gate.active(f"s{i}", f"run{i}", asyncio.Event()):
            inside += 1
            if inside == runs:
                entered.set()
            await leave.wait()

    async with gate.turn("warm", "warm-up"), gate.active("warm", "warm-up", asyncio.Event()):
        await asyncio.sleep(0.15)  # a renewal tick too: every script is loaded (a fresh Redis answers NOSCRIPT once)
    tasks = [asyncio.create_task(turn(i)) for i in range(runs)]
    await entered.wait()
    counting.commands.clear()
    await asyncio.sleep(0.55)  # about five renewal ticks (every lease_s / 3 = 0.1 s) of 30 leases
    renewals = counting.commands.count("EVALSHA")
    assert 1 <= renewals <= 7, counting.commands
    raw = aioredis.Redis.from_url(REDIS_URL)
    try:
        assert await raw.exists(*(f"{key_prefix}{lock_key(f's{i}')}" for i in range(runs))) == runs  # still held
        counting.commands.clear()
        leave.set()
        await asyncio.gather(*tasks)
        assert counting.commands.count("EVALSHA") == 2 * runs  # delete_many of the run's keys + the lock's delete_if
        keys = [lock_key("s0"), active_run_key("run0"), session_run_key("s0"), cancel_key("run0")]
        assert await raw.exists(*(key_prefix + key for key in keys)) == 0
    finally:
        await raw.aclose()
        await gate.aclose()


async def test_count_present_counts_only_live_keys(redis_client: aioredis.Redis, key_prefix: str) -> None:
    kv = RedisKV(redis_client, prefix=key_prefix)
    assert await kv.count_present([]) == 0
    await kv.set("a", "1", 5)
    await kv.set("b", "2", 0.05)
    await asyncio.sleep(0.1)  # b lapsed
    assert await kv.count_present(["a", "b", "c"]) == 1


async def test_the_cancel_poll_counts_flags_and_reads_them_only_when_one_is_up(
    counting: CountingRedis, key_prefix: str
) -> None:
    kv = RedisKV(counting, prefix=key_prefix)
    gate = SessionGate(kv, run_deadline_s=5, cancel_poll_s=0.02)
    signals = [asyncio.Event() for _ in range(5)]
    leave = asyncio.Event()

    async def turn(i: int) -> None:
        async with gate.turn(f"s{i}", f"run{i}"), gate.active(f"s{i}", f"run{i}", signals[i]):
            await leave.wait()

    tasks = [asyncio.create_task(turn(i)) for i in range(5)]
    try:
        await asyncio.sleep(0.15)
        assert counting.commands.count("EXISTS") >= 2
        assert "MGET" not in counting.commands  # no flag up: nothing read
        await kv.set(cancel_key("run3"), "1", 5)  # another process cancels run3
        await asyncio.wait_for(signals[3].wait(), 1)
        assert "MGET" in counting.commands
        assert [signal.is_set() for signal in signals] == [False, False, False, True, False]
    finally:
        leave.set()
        await asyncio.gather(*tasks)
        await gate.aclose()
