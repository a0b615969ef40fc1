"""The lighter Redis pool and connection (core/stores/redis_pool.py) against a real Redis: the bound holds, a caller
beyond it waits and then fails clearly, big writes arrive whole, a dropped connection is replaced, and a slot goes
back to the pool on every path."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis.asyncio as aioredis
from redis.asyncio.connection import SSLConnection, UnixDomainSocketConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from core.stores.redis_client import redis_client_from_url
from core.stores.redis_pool import BoundedPool, LeanConnection, _ready
from tests.conftest import REDIS_URL

pytestmark = pytest.mark.redis


def small_client(max_connections: int, timeout: float = 2.0) -> tuple[aioredis.Redis, BoundedPool]:
    pool = BoundedPool.from_url(REDIS_URL, max_connections=max_connections, timeout=timeout, socket_timeout=5.0,
                                connection_class=LeanConnection)
    return aioredis.Redis.from_pool(pool), pool


def open_connections(pool: BoundedPool) -> int:
    return len(pool._available_connections) + len(pool._in_use_connections)


async def test_the_pool_never_opens_more_than_its_bound_and_callers_beyond_it_wait(key_prefix: str) -> None:
    client, pool = small_client(3)
    peak = 0

    async def one(i: int) -> None:
        nonlocal peak
        await client.blpop([f"{key_prefix}empty:{i}"], timeout=0.1)
        peak = max(peak, open_connections(pool))

    try:
        started = time.monotonic()
        await asyncio.gather(*(one(i) for i in range(12)))
        assert peak <= 3
        assert time.monotonic() - started >= 0.35  # 12 blocking calls through 3 connections: 4 waves of 0.1 s
        assert len(pool._in_use_connections) == 0
    finally:
        await client.aclose()


async def test_a_caller_that_waits_past_the_pool_timeout_gets_a_clear_connection_error(key_prefix: str) -> None:
    client, _ = small_client(1, timeout=0.2)
    try:
        async def hold() -> object:
            return await client.blpop([f"{key_prefix}empty"], timeout=1)

        holder = asyncio.create_task(hold())
        await asyncio.sleep(0.05)
        started = time.monotonic()
        with pytest.raises(RedisConnectionError, match="No connection available"):
            await client.get(f"{key_prefix}k")
        assert time.monotonic() - started < 0.9
        assert await holder is None
        assert await client.get(f"{key_prefix}k") is None  # the slot came back
    finally:
        await client.aclose()


async def test_a_write_bigger_than_the_socket_buffer_arrives_whole(key_prefix: str) -> None:
    client = redis_client_from_url(REDIS_URL)
    value = b"x" * (8 * 2**20)  # the kernel takes a fraction at once: the drain path runs under the socket timeout
    try:
        await client.set(f"{key_prefix}big", value, ex=60)
        assert await client.get(f"{key_prefix}big") == value
        await client.delete(f"{key_prefix}big")
    finally:
        await client.aclose()


async def test_a_connection_the_server_dropped_is_replaced_and_the_command_still_answers(key_prefix: str) -> None:
    client = redis_client_from_url(REDIS_URL)
    admin = aioredis.Redis.from_url(REDIS_URL)
    try:
        await client.set(f"{key_prefix}k", "v", ex=60)
        await admin.client_kill_filter(_id=str(await client.client_id()))
        assert await client.get(f"{key_prefix}k") == b"v"  # retried on a new connection
        await client.delete(f"{key_prefix}k")
    finally:
        await client.aclose()
        await admin.aclose()


async def test_errors_and_pipelines_give_every_slot_back(key_prefix: str) -> None:
    client, pool = small_client(2)
    try:
        await client.set(f"{key_prefix}s", "a string", ex=60)
        for _ in range(20):
            with pytest.raises(ResponseError):
                await client.lpush(f"{key_prefix}s", "x")  # WRONGTYPE
        async with client.pipeline(transaction=True) as pipe:
            pipe.incr(f"{key_prefix}n")
            pipe.expire(f"{key_prefix}n", 60)
            assert (await pipe.execute())[0] == 1
        script = client.register_script("return redis.call('GET', KEYS[1])")
        assert await script(keys=[f"{key_prefix}s"]) == b"a string"
        assert len(pool._in_use_connections) == 0
        started = time.monotonic()  # both slots free: two blocking calls run side by side
        await asyncio.gather(*(client.blpop([f"{key_prefix}e{i}"], timeout=0.2) for i in range(2)))
        assert time.monotonic() - started < 0.35
        await client.delete(f"{key_prefix}s", f"{key_prefix}n")
    finally:
        await client.aclose()


def test_only_plain_tcp_gets_the_lean_connection() -> None:
    assert redis_client_from_url(REDIS_URL).connection_pool.connection_class is LeanConnection
    assert redis_client_from_url("rediss://127.0.0.1:6390/0").connection_pool.connection_class is SSLConnection
    unix = redis_client_from_url("unix:///tmp/nothing.sock")
    assert unix.connection_pool.connection_class is UnixDomainSocketConnection



async def test_only_a_connected_connection_with_nothing_unread_skips_ensure_connection(key_prefix: str) -> None:
    """get_connection's fast path (_ready) takes a connection as it is only when it is connected with nothing unread:
    one with a reply left in its stream, or one not connected, goes through redis-py's ensure_connection as before."""
    client, pool = small_client(1)
    try:
        await client.ping()
        connection = await pool.get_connection()
        assert await _ready(connection)
        await connection.send_command("PING")  # its PONG is left unread
        await asyncio.sleep(0.05)
        assert not await _ready(connection)
        await connection.read_response()
        assert await _ready(connection)
        await connection.disconnect()
        assert not await _ready(connection)
        await pool.release(connection)
        assert await client.ping()  # reconnected by ensure_connection
    finally:
        await client.aclose()
