"""The stores' and the turn queue's commands to Redis without redis-py's per-command layers.

A queued run sends about fifteen commands (bench/bench_pipeline.py counts them), each through
`Redis.execute_command`: awaited observability recorders, the HIMPORT check of every command, `set()`'s option
parsing, `read_response`'s asyncio.timeout and host string, AsyncScript's argument tuples. callgrind over a loop
of 2,000 commands on one connection (the client of core/stores/redis_client.py): `client.get` 223 k instructions
per command, `client.set(px=...)` 273 k, the same GET here 162 k.

What a command does here is what it does through redis-py, step for step:

- a connection from the client's pool (BoundedPool: the same bound and wait), given back on every path;
- the client's Retry policy around the send and the read: a connection or timeout error drops the connection,
  backs off and tries again (two quick retries), then raises redis-py's ConnectionError / TimeoutError;
- the socket timeout on the read, and the health check (PING) of a connection idle for its interval;
- an error reply raised as redis-py's exception class (the parser maps it: ResponseError, NoScriptError, ...);
- a script by EVALSHA, loaded with SCRIPT LOAD on NOSCRIPT (a Redis that restarted empty) and tried again.

Replies are the RESP values as read (bytes, ints, lists, None): no response callbacks, which only the commands
not sent here need (SET's 'OK' is read as b'OK' where redis-py says True; callers here test truth only). A client
whose pool is not the lean one (TLS, a Unix socket) goes through redis-py's `execute_command` and scripts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import NoScriptError
from redis.typing import EncodableT

from core.stores.redis_pool import BoundedPool, LeanConnection


class LeanRedis:
    """Commands through the client's own pool and connections, without `execute_command`'s layers."""

    def __init__(self, client: aioredis.Redis) -> None:
        self.client = client
        pool = client.connection_pool
        lean = isinstance(pool, BoundedPool) and pool.connection_class is LeanConnection
        self._pool: BoundedPool | None = pool if lean else None  # type: ignore[assignment]

    async def execute(self, *args: EncodableT) -> Any:
        """Send one command and return its reply (raw RESP value); redis-py's errors, after its retries."""
        pool = self._pool
        if pool is None:
            return await self.client.execute_command(*args)  # type: ignore[no-untyped-call]
        connection: LeanConnection = await pool.get_connection()  # type: ignore[assignment]
        try:
            return await connection.retry.call_with_retry(
                lambda: connection.roundtrip(args),
                lambda error, failures: connection.disconnect(error=error, failure_count=failures),
                with_failure_count=True,
            )
        finally:
            await pool.release(connection)

    def script(self, text: str) -> LeanScript:
        """A Lua script called by its SHA1 (loaded on first NOSCRIPT)."""
        return LeanScript(self, text)


class LeanScript:
    """`register_script`'s callable, over LeanRedis."""

    def __init__(self, redis: LeanRedis, text: str) -> None:
        self._redis = redis
        self._text = text
        self.sha = hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()

    async def __call__(self, keys: Sequence[str], args: Sequence[EncodableT] = ()) -> Any:
        try:
            return await self._redis.execute("EVALSHA", self.sha, len(keys), *keys, *args)
        except NoScriptError:  # the server lost its script cache (restarted, or SCRIPT FLUSH): load, then again
            await self._redis.execute("SCRIPT", "LOAD", self._text)
            return await self._redis.execute("EVALSHA", self.sha, len(keys), *keys, *args)
