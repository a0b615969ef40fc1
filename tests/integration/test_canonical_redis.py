"""Redis canonical store and key-value store against a real Redis: TTLs, atomic reserve, one MGET, order, outages."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from core.contracts.evidence import CanonicalRecord, EvidenceStatus, InvocationState, RawResult
from core.errors import StoreUnavailable
from core.stores.canonical import RedisCanonicalStore
from core.stores.kv import RedisKV
from testkit.tool_names import ToolName
from tests.conftest import REDIS_URL

pytestmark = pytest.mark.redis
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


class CountingRedis(aioredis.Redis):
    """A real Redis client that remembers the name of every command it sends (pipelines count as one round trip)."""

    commands: list[str]

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        self.commands.append(str(args[0]).upper())
        return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]


@pytest.fixture
async def counting_client(key_prefix: str) -> AsyncIterator[CountingRedis]:
    """A counting client on the test Redis; the test's keys are removed afterwards."""
    client = CountingRedis.from_url(REDIS_URL)
    assert isinstance(client, CountingRedis)
    client.commands = []
    yield client
    keys = [k async for k in client.scan_iter(match=f"{key_prefix}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


def _record(call_id: str, offset_s: float = 0, state: InvocationState = InvocationState.PENDING) -> CanonicalRecord:
    return CanonicalRecord(
        run_id="run-1", tool_call_id=call_id, tool_name=ToolName.QUERY_LOGS, arguments={"service": "order-service"},
        state=state, evidence_status=EvidenceStatus.EVIDENCE_FOUND if state == InvocationState.READY else None,
        raw_result=RawResult(items=[{"message": "timeout"}], total_count=1) if state == InvocationState.READY else None,
        started_at=T0 + timedelta(seconds=offset_s),
    )


async def test_put_writes_json_with_ttl_and_round_trips(redis_client: aioredis.Redis, key_prefix: str) -> None:
    """A record is stored under {prefix}inv:{run}:{id} as JSON and its raw result under {prefix}raw:{run}:{id},
    both with the TTL; read back with_raw it is equal to what was written."""
    store = RedisCanonicalStore(redis_client, prefix=key_prefix, ttl_s=600)
    record = _record("call_a", state=InvocationState.READY)
    await store.put(record)
    key, raw_key = f"{key_prefix}inv:run-1:call_a", f"{key_prefix}raw:run-1:call_a"
    stored, stored_raw = await redis_client.get(key), await redis_client.get(raw_key)
    assert stored is not None
    assert stored_raw is not None
    assert CanonicalRecord.model_validate_json(stored) == record.model_copy(update={"raw_result": None})
    assert RawResult.model_validate_json(stored_raw) == record.raw_result
    assert 590 <= await redis_client.ttl(key) <= 600
    assert 590 <= await redis_client.ttl(raw_key) <= 600
    assert 590 <= await redis_client.ttl(f"{key_prefix}run:run-1:order") <= 600
    assert (await store.get_many("run-1", ["call_a"], with_raw=True))["call_a"] == record


async def test_reserve_is_atomic_under_concurrency(redis_client: aioredis.Redis, key_prefix: str) -> None:
    """Many concurrent reserves of one id: exactly one wins; the id set carries the TTL."""
    store = RedisCanonicalStore(redis_client, prefix=key_prefix, ttl_s=600)
    results = await asyncio.gather(*(store.reserve("run-1", "call_x") for _ in range(20)))
    assert results.count(True) == 1
    assert await store.reserve("run-2", "call_x") is True
    assert 0 < await redis_client.ttl(f"{key_prefix}run:run-1:ids") <= 600


async def test_put_marks_the_id_as_used(redis_client: aioredis.Redis, key_prefix: str) -> None:
    """A record written without reserve still blocks a later reserve of its id."""
    store = RedisCanonicalStore(redis_client, prefix=key_prefix)
    await store.put(_record("call_a"))
    assert await store.reserve("run-1", "call_a") is False


@pytest.mark.parametrize("store_kind", ["redis", "memory"])
async def test_reserve_pending_claims_and_writes_once(redis_client: aioredis.Redis, key_prefix: str,
                                                      store_kind: str) -> None:
    """reserve_pending is reserve then put in one step: of concurrent claims of one id exactly one writes its
    record; a used id (reserved, or written by put) is refused with nothing written; the record is listed in order."""
    from core.stores.canonical import InMemoryCanonicalStore

    store = RedisCanonicalStore(redis_client, prefix=key_prefix, ttl_s=600) if store_kind == "redis" \
        else InMemoryCanonicalStore()
    records = [_record("call_x").model_copy(update={"arguments": {"n": i}}) for i in range(10)]
    results = await asyncio.gather(*(store.reserve_pending(r) for r in records))
    assert results.count(True) == 1
    [stored] = await store.list_run("run-1")
    assert stored == records[results.index(True)]
    assert await store.reserve("run-1", "call_x") is False
    assert await store.reserve("run-1", "call_y") is True
    assert await store.reserve_pending(_record("call_y")) is False
    await store.put(_record("call_z", 5))
    assert await store.reserve_pending(_record("call_z", 9).model_copy(update={"arguments": {}})) is False
    assert [r.tool_call_id for r in await store.list_run("run-1")] == ["call_x", "call_z"]
    kept = (await store.get_many("run-1", ["call_z"]))["call_z"]
    assert kept is not None
    assert kept.arguments == {"service": "order-service"}
    if store_kind == "redis":
        assert 590 <= await redis_client.ttl(f"{key_prefix}inv:run-1:call_x") <= 600
        assert 590 <= await redis_client.ttl(f"{key_prefix}run:run-1:order") <= 600


async def test_get_many_is_one_mget(counting_client: CountingRedis, key_prefix: str) -> None:
    """Reading ten records (some missing, duplicates asked twice) costs exactly one MGET command."""
    store = RedisCanonicalStore(counting_client, prefix=key_prefix)
    for i in range(8):
        await store.put(_record(f"c{i}", offset_s=i))
    counting_client.commands.clear()
    got = await store.get_many("run-1", [f"c{i}" for i in range(10)] + ["c0"])
    assert counting_client.commands == ["MGET"]
    assert [k for k, v in got.items() if v is None] == ["c8", "c9"]


async def test_reads_without_raw_leave_the_raw_result_out_and_stay_one_mget(
    counting_client: CountingRedis, key_prefix: str
) -> None:
    """The guard's read skips a 1 MB raw result (one MGET of record keys only); with_raw reads both in one MGET."""
    store = RedisCanonicalStore(counting_client, prefix=key_prefix)
    big = _record("big", state=InvocationState.READY).model_copy(
        update={"raw_result": RawResult(items=[{"message": "x" * 1_000_000}], total_count=1)})
    await store.put(big)
    counting_client.commands.clear()
    lean = (await store.get_many("run-1", ["big"]))["big"]
    full = (await store.get_many("run-1", ["big"], with_raw=True))["big"]
    assert counting_client.commands == ["MGET", "MGET"]
    assert lean is not None
    assert lean.raw_result is None
    assert full == big
    assert [r.raw_result for r in await store.list_run("run-1", with_raw=True)] == [big.raw_result]


async def test_get_many_of_nothing_sends_nothing(counting_client: CountingRedis, key_prefix: str) -> None:
    """An empty id list needs no round trip."""
    store = RedisCanonicalStore(counting_client, prefix=key_prefix)
    assert await store.get_many("run-1", []) == {}
    assert counting_client.commands == []


async def test_list_run_follows_call_order_and_state_updates_keep_position(redis_client: aioredis.Redis, key_prefix: str) -> None:
    """Records come back in start order; rewriting PENDING -> READY does not move a call."""
    store = RedisCanonicalStore(redis_client, prefix=key_prefix)
    for call_id, offset in (("first", 0), ("second", 1), ("third", 2)):
        await store.put(_record(call_id, offset))
    await store.put(_record("first", 0, InvocationState.READY))
    records = await store.list_run("run-1")
    assert [r.tool_call_id for r in records] == ["first", "second", "third"]
    assert records[0].state == InvocationState.READY
    assert await store.list_run("other-run") == []


async def test_corrupt_record_is_missing_and_logged(
    redis_client: aioredis.Redis, key_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A record that fails to parse reads as None (and is skipped by list_run), with a WARNING, never an exception."""
    store = RedisCanonicalStore(redis_client, prefix=key_prefix)
    await store.put(_record("good", 0))
    await store.put(_record("bad", 1))
    await redis_client.set(f"{key_prefix}inv:run-1:bad", "{not json")
    with caplog.at_level(logging.WARNING):
        got = await store.get_many("run-1", ["good", "bad"])
        listed = await store.list_run("run-1")
    assert got["bad"] is None
    assert got["good"] is not None
    assert [r.tool_call_id for r in listed] == ["good"]
    assert any("unreadable" in r.getMessage() for r in caplog.records)


async def test_list_run_dumps_are_the_json_dumps_of_list_run(redis_client: aioredis.Redis, key_prefix: str) -> None:
    """list_run_dumps gives, record for record and key for key, model_dump(mode="json") of list_run's records without
    their raw result (datetimes, floats, enums, a projection and an error included); an unreadable one is skipped."""
    store = RedisCanonicalStore(redis_client, prefix=key_prefix)
    ready = _record("second", 1, InvocationState.READY).model_copy(update={
        "projection": {"items": [{"message": "timeout", "n": 3, "ratio": 0.1 + 0.2}], "big": 2**70},
        "finished_at": T0 + timedelta(seconds=1.5), "duration_ms": 12.345678})
    await store.put(_record("first", 0))
    await store.put(ready)
    await store.put(_record("third", 2))
    await redis_client.set(f"{key_prefix}inv:run-1:third", "{not json")
    expected = [r.model_dump(mode="json", exclude={"raw_result"}) for r in await store.list_run("run-1")]
    dumps = await store.list_run_dumps("run-1")
    assert dumps == expected
    assert [list(d) for d in dumps] == [list(e) for e in expected]
    assert [d["tool_call_id"] for d in dumps] == ["first", "second"]
    assert await store.list_run_dumps("other-run") == []


@pytest.fixture
async def dead_client() -> AsyncIterator[aioredis.Redis]:
    """A client pointed at a closed port: every command fails to connect."""
    client = aioredis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0))
    yield client
    await client.aclose()


async def test_unreachable_redis_raises_store_unavailable(dead_client: aioredis.Redis) -> None:
    """Every canonical operation turns a connection failure into StoreUnavailable."""
    store = RedisCanonicalStore(dead_client)
    with pytest.raises(StoreUnavailable):
        await store.reserve("run-1", "c")
    with pytest.raises(StoreUnavailable):
        await store.put(_record("c"))
    with pytest.raises(StoreUnavailable):
        await store.get_many("run-1", ["c"])
    with pytest.raises(StoreUnavailable):
        await store.list_run("run-1")


async def test_redis_kv_set_if_absent_with_ttl(redis_client: aioredis.Redis, key_prefix: str) -> None:
    """SET NX PX: first caller wins, the PTTL is the requested milliseconds, set/get/delete work."""
    kv = RedisKV(redis_client, prefix=key_prefix)
    assert await kv.set_if_absent("event:Ev1", "1", 400.5) is True
    assert await kv.set_if_absent("event:Ev1", "2", 400.5) is False
    assert await kv.get("event:Ev1") == "1"
    assert 399_000 < await redis_client.pttl(f"{key_prefix}event:Ev1") <= 400_500
    await kv.set("event:Ev1", "3", 1)
    assert await kv.get("event:Ev1") == "3"
    await kv.delete("event:Ev1")
    assert await kv.get("event:Ev1") is None


async def test_redis_kv_key_expires(redis_client: aioredis.Redis, key_prefix: str) -> None:
    """A short TTL really expires the key, so a later set_if_absent succeeds."""
    kv = RedisKV(redis_client, prefix=key_prefix)
    assert await kv.set_if_absent("lock", "a", 0.05) is True
    await asyncio.sleep(0.1)  # the TTL passes: the expiry is the behaviour under test
    assert await kv.set_if_absent("lock", "b", 5) is True


async def test_redis_kv_unreachable_raises_store_unavailable(dead_client: aioredis.Redis) -> None:
    """The key-value store reports a down Redis as StoreUnavailable."""
    kv = RedisKV(dead_client)
    with pytest.raises(StoreUnavailable):
        await kv.set_if_absent("k", "v", 1)
    with pytest.raises(StoreUnavailable):
        await kv.get("k")
