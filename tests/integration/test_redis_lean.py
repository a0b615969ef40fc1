"""The stores' lean Redis commands (core/stores/redis_lean.py) against real servers: the same replies as redis-py's
client, the socket timeout, retries on a dropped connection, error replies, scripts after the server lost them,
and redis-py's own path for a pool that is not the lean one."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from core.stores.redis_client import redis_client_from_url
from core.stores.redis_lean import CommandLanes, LeanRedis
from core.stores.redis_pool import BoundedPool, LeanConnection
from tests.conftest import REDIS_URL
from tests.redis_server import redis_server

pytestmark = pytest.mark.redis


async def test_replies_are_the_ones_redis_py_reads_before_its_callbacks(key_prefix: str) -> None:
    client = redis_client_from_url(REDIS_URL)
    lean = LeanRedis(client)
    k = f"{key_prefix}k"
    try:
        assert await lean.execute("SET", k, "v", "PX", 60_000, "NX") == b"OK"
        assert await lean.execute("SET", k, "w", "PX", 60_000, "NX") is None  # taken: as redis-py's None
        assert await lean.execute("GET", k) == await client.get(k) == b"v"
        assert await lean.execute("MGET", k, f"{key_prefix}none") == await client.mget([k, f"{key_prefix}none"])
        script = lean.script("return {redis.call('GET', KEYS[1]), tonumber(ARGV[1]) + 1, false}")
        assert await script([k], [41]) == await client.register_script(script._text)(keys=[k], args=[41])
        assert await lean.execute("DEL", k) == 1
        assert len(client.connection_pool._in_use_connections) == 0
    finally:
        await client.aclose()


async def test_an_error_reply_raises_redis_pys_error_and_gives_the_connection_back(key_prefix: str) -> None:
    client = redis_client_from_url(REDIS_URL)
    lean = LeanRedis(client)
    try:
        await lean.execute("SET", f"{key_prefix}s", "a string", "PX", 60_000)
        for _ in range(3):
            with pytest.raises(ResponseError, match="WRONGTYPE"):
                await lean.execute("LPUSH", f"{key_prefix}s", "x")
        assert len(client.connection_pool._in_use_connections) == 0
        assert await lean.execute("GET", f"{key_prefix}s") == b"a string"  # the connection is still in step
        await lean.execute("DEL", f"{key_prefix}s")
    finally:
        await client.aclose()


async def test_a_connection_the_server_dropped_is_replaced_and_the_command_still_answers(key_prefix: str) -> None:
    client = redis_client_from_url(REDIS_URL)
    admin = aioredis.Redis.from_url(REDIS_URL)
    lean = LeanRedis(client)
    try:
        await lean.execute("SET", f"{key_prefix}k", "v", "PX", 60_000)
        await admin.client_kill_filter(_id=str(await client.client_id()))
        assert await lean.execute("GET", f"{key_prefix}k") == b"v"  # retried on a new connection
        await lean.execute("DEL", f"{key_prefix}k")
    finally:
        await client.aclose()
        await admin.aclose()


async def test_a_script_the_server_lost_is_loaded_again(tmp_path: Path) -> None:
    with redis_server(tmp_path / "redis") as server:
        client = redis_client_from_url(server.url)
        lean = LeanRedis(client)
        script = lean.script("return ARGV[1]")
        try:
            assert await script([], ["one"]) == b"one"
            await lean.execute("SCRIPT", "FLUSH")
            assert await script([], ["two"]) == b"two"
        finally:
            await client.aclose()


async def test_a_server_that_stops_answering_times_out_and_the_next_command_gets_a_fresh_connection(
        tmp_path: Path) -> None:
    with redis_server(tmp_path / "redis") as server:
        pool = BoundedPool.from_url(server.url, max_connections=4, socket_timeout=0.3, connection_class=LeanConnection,
                                    retry=Retry(NoBackoff(), 1))
        client = aioredis.Redis.from_pool(pool)
        lean = LeanRedis(client)
        pid = server._proc.pid if server._proc is not None else 0
        try:
            assert await lean.execute("PING") == b"PONG"
            os.kill(pid, signal.SIGSTOP)
            started = time.monotonic()
            try:
                with pytest.raises(RedisTimeoutError, match="Timeout reading"):
                    await lean.execute("PING")
            finally:
                os.kill(pid, signal.SIGCONT)
            assert 0.55 <= time.monotonic() - started < 2.0  # two reads (a try and one retry) of 0.3 s each
            assert len(pool._in_use_connections) == 0
            assert await asyncio.wait_for(lean.execute("PING"), 5) == b"PONG"
        finally:
            await client.aclose()


async def test_a_pool_that_is_not_the_lean_one_goes_through_redis_py(key_prefix: str) -> None:
    client = aioredis.Redis.from_url(REDIS_URL)  # redis-py's own pool and connection class
    lean = LeanRedis(client)
    try:
        assert await lean.execute("SET", f"{key_prefix}k", "v", "PX", 60_000) is True  # redis-py's SET callback
        assert await lean.script("return redis.call('GET', KEYS[1])")([f"{key_prefix}k"]) == b"v"
        await lean.execute("DEL", f"{key_prefix}k")
    finally:
        await client.aclose()


def lanes_client(lanes: int) -> tuple[aioredis.Redis, LeanRedis]:
    """A lean client whose commands share `lanes` writes at most."""
    client = redis_client_from_url(REDIS_URL)
    pool = client.connection_pool
    assert isinstance(pool, BoundedPool)
    pool.lanes = CommandLanes(pool, lanes)
    return client, LeanRedis(client)


async def test_concurrent_commands_share_writes_each_caller_gets_its_own_reply(key_prefix: str) -> None:
    client, lean = lanes_client(2)
    pool = client.connection_pool
    try:
        await asyncio.gather(*(lean.execute("SET", f"{key_prefix}{i}", str(i), "PX", 60_000) for i in range(300)))
        replies = await asyncio.gather(*(lean.execute("GET", f"{key_prefix}{i}") for i in range(300)))
        assert replies == [str(i).encode() for i in range(300)]
        assert len(pool._available_connections) + len(pool._in_use_connections) <= 2  # 300 at once, two lanes
        assert len(pool._in_use_connections) == 0
        await lean.execute("DEL", *(f"{key_prefix}{i}" for i in range(300)))
    finally:
        await client.aclose()


async def test_an_error_reply_in_a_shared_write_reaches_only_its_own_caller(key_prefix: str) -> None:
    client, lean = lanes_client(1)
    try:
        await lean.execute("SET", f"{key_prefix}s", "a string", "PX", 60_000)
        results = await asyncio.gather(*(lean.execute("LPUSH" if i % 3 == 0 else "GET", f"{key_prefix}s", *(
            ["x"] if i % 3 == 0 else [])) for i in range(30)), return_exceptions=True)
        for i, result in enumerate(results):
            if i % 3 == 0:
                assert isinstance(result, ResponseError)
                assert "WRONGTYPE" in str(result)
            else:
                assert result == b"a string"
        await lean.execute("DEL", f"{key_prefix}s")
    finally:
        await client.aclose()


async def test_a_caller_cancelled_in_line_is_left_out_and_the_others_are_answered(key_prefix: str) -> None:
    client, lean = lanes_client(1)
    try:
        first = asyncio.create_task(lean.execute("SET", f"{key_prefix}a", "1", "PX", 60_000))
        waiting = [asyncio.create_task(lean.execute("INCR", f"{key_prefix}n")) for _ in range(10)]
        await asyncio.sleep(0)  # all ten in line behind the first write
        waiting[3].cancel()
        assert await first == b"OK"
        done = await asyncio.gather(*waiting, return_exceptions=True)
        assert isinstance(done[3], asyncio.CancelledError)
        assert sorted(r for r in done if isinstance(r, int)) == list(range(1, 10))  # nine INCRs ran, once each
        await lean.execute("DEL", f"{key_prefix}a", f"{key_prefix}n")
    finally:
        await client.aclose()


async def test_a_leader_cancelled_with_others_on_the_wire_still_hands_out_their_replies(key_prefix: str) -> None:
    client, lean = lanes_client(1)
    try:
        blocker = asyncio.create_task(lean.execute("BLPOP", f"{key_prefix}empty", 0.3))  # holds the only lane
        await asyncio.sleep(0.05)
        leader = asyncio.create_task(lean.execute("BLPOP", f"{key_prefix}empty2", 0.3))  # leads the next write
        others = [asyncio.create_task(lean.execute("INCR", f"{key_prefix}n")) for _ in range(5)]
        assert await blocker is None  # the lane goes to `leader`, which sends the five INCRs with its BLPOP
        await asyncio.sleep(0.05)
        leader.cancel()
        assert sorted(await asyncio.gather(*others)) == [1, 2, 3, 4, 5]
        with pytest.raises(asyncio.CancelledError):
            await leader
        assert await lean.execute("GET", f"{key_prefix}n") == b"5"  # the connection is still in step
        assert len(client.connection_pool._in_use_connections) == 0
        await lean.execute("DEL", f"{key_prefix}n")
    finally:
        await client.aclose()


async def test_a_shared_write_cut_by_a_dropped_connection_is_sent_again_whole(key_prefix: str) -> None:
    client, lean = lanes_client(1)
    admin = aioredis.Redis.from_url(REDIS_URL)
    try:
        lane_id = await lean.execute("CLIENT", "ID")  # the one lane's connection
        leader = asyncio.create_task(lean.execute("BLPOP", f"{key_prefix}empty", 0.5))
        await asyncio.sleep(0.05)
        others = [asyncio.create_task(lean.execute("INCR", f"{key_prefix}n")) for _ in range(5)]
        await asyncio.sleep(0.05)  # in line behind the blocked BLPOP: sent with the next write, not yet run
        await admin.client_kill_filter(_id=str(lane_id))
        assert await leader is None  # sent again on a new connection, with the five behind it
        assert sorted(await asyncio.gather(*others)) == [1, 2, 3, 4, 5]  # each INCR ran once
        await lean.execute("DEL", f"{key_prefix}a", f"{key_prefix}n")
    finally:
        await client.aclose()
        await admin.aclose()
