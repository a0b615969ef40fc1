"""The stores' and the turn queue's commands to Redis without redis-py's per-command layers, and concurrent
commands sharing writes instead of opening a connection each.

A queued run sends about fifteen commands (bench/bench_pipeline.py counts them), each through
`Redis.execute_command`: awaited observability recorders, the HIMPORT check of every command, `set()`'s option
parsing, `read_response`'s asyncio.timeout and host string, AsyncScript's argument tuples. callgrind over a loop
of 2,000 commands on one connection (the client of core/stores/redis_client.py): `client.get` 223 k instructions
per command, `client.set(px=...)` 273 k, the same GET here 162 k.

And a worker that starts 250 runs at once sent their first commands in one loop turn, each on a connection of its
own: the pool grew to 250 connections, each about 2.8 M instructions to open (callgrind, 200 at once) and four
round trips of handshake. Here at most LANES commands (or batches) are on the wire at once; a command that finds
every lane busy waits for the next write, which carries every command waiting by then (pipelined: one write,
the replies read in order). Each lane is led by one of its callers: the first command on an idle lane is written
at once, by its own task, as before; the caller that leads a batch reads the others' replies and hands them out.

What a command does here is what it does through redis-py, step for step:

- a connection from the client's pool (BoundedPool: the same bound and wait), given back on every path;
- the client's Retry policy around the send and the read: a connection or timeout error drops the connection,
  backs off and sends again the commands whose replies were not read (redis-py resends a lone command alike),
  then raises redis-py's ConnectionError / TimeoutError to every caller left;
- the socket timeout on the read, and the health check (PING) of a connection idle for its interval;
- an error reply raised as redis-py's exception class, to its own caller only (the parser maps it: ResponseError,
  NoScriptError, ...);
- a script by EVALSHA, loaded with SCRIPT LOAD on NOSCRIPT (a Redis that restarted empty) and tried again.

A caller cancelled while it waits is left out of the next write; a leader cancelled while its batch is on the
wire reads the batch to its end first (the others' commands ran: their replies are theirs), then raises.
Replies are the RESP values as read (bytes, ints, lists, None): no response callbacks, which only the commands
not sent here need (SET's 'OK' is read as b'OK' where redis-py says True; callers here test truth only). A client
whose pool is not the lean one (TLS, a Unix socket) goes through redis-py's `execute_command` and scripts.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import deque
from collections.abc import Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError
from redis.typing import EncodableT

from core.stores.redis_pool import BoundedPool, LeanConnection

LANES = 16  # commands or batches on the wire at once, per client (the pool stays near this many connections)
MAX_BATCH = 256  # commands in one write; the rest wait for the next


class _Call:
    """One caller's command in a lane: its reply (or error) once read; `future` for a caller waiting on a leader."""

    __slots__ = ("args", "future")

    def __init__(self, args: Sequence[EncodableT], future: asyncio.Future[Any] | None) -> None:
        self.args = args
        self.future = future


_LEAD = object()  # a waiting caller's future result: lead the next batch


class CommandLanes:
    """At most `lanes` writes in flight per pool; commands arriving meanwhile go together in the next one."""

    def __init__(self, pool: BoundedPool, lanes: int = LANES) -> None:
        self._pool = pool
        self._lanes = lanes
        self._busy = 0
        self._waiting: deque[_Call] = deque()

    async def execute(self, args: Sequence[EncodableT]) -> Any:
        """One command's reply; redis-py's errors, after its retries."""
        if self._busy < self._lanes:
            self._busy += 1
            return await self._lead(_Call(args, None))
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        call = _Call(args, future)
        self._waiting.append(call)
        try:
            result = await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled() and future.exception() is None and future.result() is _LEAD:
                self._busy -= 1  # promoted, then cancelled before leading: the lane goes to the next in line
                self._promote()
            raise
        if result is _LEAD:
            return await self._lead(call)
        return result

    def _promote(self) -> None:
        """Hand a free lane to the first caller still waiting (it sends everything waiting when it runs)."""
        while self._waiting and self._busy < self._lanes:
            call = self._waiting.popleft()
            if call.future is not None and not call.future.done():
                self._busy += 1
                call.future.set_result(_LEAD)

    async def _lead(self, own: _Call) -> Any:
        """Send `own` with the commands waiting now (the lane is taken); settle theirs, return or raise its own."""
        batch = [own]
        while self._waiting and len(batch) < MAX_BATCH:
            call = self._waiting.popleft()
            if call.future is not None and not call.future.done():
                batch.append(call)
        outcome = _Outcome()
        try:
            await self._send(batch, outcome)
        finally:
            self._busy -= 1
            self._settle_all(batch, outcome)
            self._promote()
        if outcome.held:
            raise asyncio.CancelledError
        if not outcome.replies:
            assert outcome.error is not None
            raise outcome.error
        if isinstance(outcome.replies[0], ResponseError):
            raise outcome.replies[0] from None
        return outcome.replies[0]

    def _settle_all(self, batch: list[_Call], outcome: _Outcome) -> None:
        """Hand the others their replies; those left without one get the error that ended the batch, or, when
        nothing was sent (this leader was cancelled or found no connection), go back to the head of the line."""
        for call, reply in zip(batch[1:], outcome.replies[1:], strict=False):
            _settle(call, reply)
        left = [call for call in batch[max(1, len(outcome.replies)):] if call.future is not None]
        if not outcome.sent:
            self._waiting.extendleft(reversed(left))
            return
        for call in left:
            if call.future is not None and not call.future.done():
                call.future.set_exception(_own_copy(outcome.error))

    async def _send(self, batch: list[_Call], outcome: _Outcome) -> None:
        """Write the batch and read its replies into `outcome` (with the client's retries); the error that ended it
        early is kept there, not raised, unless it is this task's own cancel with nothing of the others sent."""
        connection: LeanConnection = await self._pool.get_connection()  # type: ignore[assignment]
        hold = len(batch) > 1

        async def exchange() -> None:
            outcome.sent = True
            commands = [call.args for call in batch[len(outcome.replies):]]
            if await connection.exchange(commands, outcome.replies, hold_cancel=hold):
                outcome.held = True

        try:
            await connection.retry.call_with_retry(
                exchange, lambda error, failures: connection.disconnect(error=error, failure_count=failures),
                with_failure_count=True)
        except Exception as exc:
            outcome.error = exc
        finally:
            await self._pool.release(connection)


class _Outcome:
    """What a batch came to: the replies read (in order), the error that ended it, whether anything was written,
    whether a cancel of its leader was held back."""

    __slots__ = ("error", "held", "replies", "sent")

    def __init__(self) -> None:
        self.replies: list[Any] = []
        self.error: Exception | None = None
        self.sent = False
        self.held = False


def _own_copy(error: Exception | None) -> Exception:
    """The error that ended a batch, one instance per caller (each raises it in its own task)."""
    if error is None:
        return RedisConnectionError("the write carrying this command was cut short")
    try:
        return type(error)(*error.args)
    except TypeError:
        return error


def _settle(call: _Call, reply: Any) -> None:
    future = call.future
    if future is None or future.done():  # its caller was cancelled meanwhile: the reply is dropped
        return
    if isinstance(reply, ResponseError):
        future.set_exception(reply)
    else:
        future.set_result(reply)


class LeanRedis:
    """Commands through the client's own pool and connections, without `execute_command`'s layers."""

    def __init__(self, client: aioredis.Redis) -> None:
        self.client = client
        pool = client.connection_pool
        self._lanes: CommandLanes | None = None
        if isinstance(pool, BoundedPool) and pool.connection_class is LeanConnection:
            if pool.lanes is None:  # one set of lanes per pool: every store on the client shares them
                pool.lanes = CommandLanes(pool)
            self._lanes = pool.lanes

    async def execute(self, *args: EncodableT) -> Any:
        """Send one command and return its reply (raw RESP value); redis-py's errors, after its retries."""
        if self._lanes is None:
            return await self.client.execute_command(*args)  # type: ignore[no-untyped-call]
        return await self._lanes.execute(args)

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
