"""A lighter connection pool and connection for redis-py's asyncio client: same bound, same timeouts, less per command.

bench/bench_pipeline.py's cost account found a queued run's ~27 Redis round trips to be about a third of a worker's
CPU, and a loop of GETs measured 85 us of CPU per command through redis-py 8's BlockingConnectionPool against 48 us
here. Per command, redis-py's blocking pool enters an asyncio.Condition and a timeout, its base pool an asyncio.Lock,
and both await observability recorders and an event dispatch on every get and release; the connection sends every
command through asyncio.wait_for, a new Task each, even when the socket takes the bytes at once.

- BoundedPool: at most `max_connections` connections, and a caller beyond them waits for a free one while the pool
  makes progress, failing (redis ConnectionError, as BlockingConnectionPool raises) once no connection was opened or
  given back for `timeout`, instead of MaxConnectionsError at once. A semaphore
  does the waiting; a free slot is taken without suspending. The pool's own lists are touched only between awaits,
  which asyncio's single thread makes atomic (redis-py's base pool skips its lock the same way outside
  maintenance mode, which this client never enables).
- LeanConnection: writes a command and awaits the drain (under the socket timeout) only when the socket did not
  take every byte; errors are redis-py's own (TimeoutError / ConnectionError, the connection dropped).

Both lean on ConnectionPool's lists and AbstractConnection's writer, stable across redis-py 8 (pinned in
pyproject.toml); tests/integration/test_redis_pool.py holds them to the bound, the timeout, big writes and
dropped connections.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.connection import AbstractConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.typing import EncodableT

_UTF8 = frozenset({"utf-8", "utf8", "UTF-8", "UTF8"})


class LeanConnection(aioredis.Connection):
    """A TCP connection that skips asyncio.wait_for when a write needs no wait, and packs commands with less work
    per argument."""

    def pack_command(self, *args: EncodableT) -> list[bytes]:
        """redis-py's pack_command, byte for byte on the wire, for what the stores send (a command name of letters,
        then str, bytes and int arguments): one type test and a `%`-format per argument instead of the encoder's
        isinstance chain and a join of a growing buffer per argument (a first look's canonical puts, EVALSHA of 11
        arguments and 2.5 kB: 4.1 against 10-15 us of CPU per command). Anything else (a float, a bool, a memoryview,
        a command name redis-py would split, an encoding other than strict UTF-8) is packed by redis-py itself, so its
        bytes and its errors stay what they were (tests/unit/test_redis_pack.py)."""
        first = args[0] if args else None
        encoder = self.encoder
        if (type(first) is not str or not first.isalpha() or encoder.encoding not in _UTF8
                or encoder.encoding_errors != "strict"):
            return super().pack_command(*args)
        out: list[bytes] = [b"*%d\r\n" % len(args)]
        for arg in args:
            data: bytes
            if type(arg) is str:
                data = arg.encode()
            elif type(arg) is bytes:
                data = arg
            elif type(arg) is int:
                data = b"%d" % arg  # int.__repr__, as redis-py's encoder writes it
            else:
                return super().pack_command(*args)
            out.append(b"$%d\r\n" % len(data))
            out.append(data)
            out.append(b"\r\n")
        return [b"".join(out)]  # one part: the transport joins a write's parts anyway

    async def send_packed_command(self, command: bytes | str | Iterable[bytes], check_health: bool = True) -> None:
        writer = self._writer
        if writer is None or not self.is_connected:
            await super().send_packed_command(command, check_health)  # connects first, as redis-py does
            return
        if check_health:
            await self.check_health()  # type: ignore[no-untyped-call]
        if isinstance(command, str):
            command = command.encode()
        parts = [command] if isinstance(command, bytes) else command
        try:
            writer.writelines(parts)
            transport = writer.transport
            if transport.get_write_buffer_size() or transport.is_closing():
                await asyncio.wait_for(writer.drain(), self.socket_timeout)
        except TimeoutError:
            await self.disconnect(nowait=True)
            raise RedisTimeoutError("Timeout writing to socket") from None
        except OSError as exc:
            await self.disconnect(nowait=True)
            raise RedisConnectionError(f"Error while writing to socket. {exc}") from exc
        except BaseException:
            await self.disconnect(nowait=True)  # a write cut short leaves the stream unusable
            raise

    async def exchange(self, commands: Sequence[Sequence[EncodableT]], replies: list[Any], *,
                       hold_cancel: bool = False) -> bool:
        """Send `commands` in one write and read their replies in order, appending each to `replies` (an error
        reply as its exception object), as send_command + read_response do per command: health check, socket
        timeout (here for the whole exchange, from a timer handle instead of an asyncio.timeout context), the
        connection dropped on any failure. On a failure the replies read so far stay in `replies`.

        `hold_cancel`: the commands are other callers' too (core/stores/redis_lean.py), so a cancel of this task
        waits for their replies instead of dropping them (the parser resumes a reply a cancel cut short); True is
        returned when one came, for the caller to raise once its batch is settled."""
        parts: list[bytes] = []
        for command in commands:
            parts.extend(self.pack_command(*command))
        await self.send_packed_command(parts)
        loop = asyncio.get_running_loop()
        expired: list[bool] = []
        timer = None if self.socket_timeout is None else loop.call_later(self.socket_timeout, self._expire, expired)
        held = False
        try:
            while len(replies) < len(commands):
                try:
                    replies.append(await self._parser.read_response())  # type: ignore[attr-defined]
                except asyncio.CancelledError:
                    if not hold_cancel or expired:
                        raise
                    held = True
        except BaseException as exc:
            await self.disconnect(nowait=True)  # a read cut short leaves the stream unusable
            if expired:
                raise RedisTimeoutError(f"Timeout reading from {self._host_error()}") from None
            if isinstance(exc, OSError):
                raise RedisConnectionError(f"Error while reading from {self._host_error()} : {exc.args}") from exc
            raise
        finally:
            if timer is not None:
                timer.cancel()
        if expired:  # the timer fired as the last reply came in: the connection is being dropped
            await self.disconnect(nowait=True)
        if self.health_check_interval:
            self.next_health_check = loop.time() + self.health_check_interval
        return held

    def _expire(self, expired: list[bool]) -> None:
        """The socket timeout passed with no reply: end the read (the connection is dropped, as redis-py does)."""
        expired.append(True)
        if self._writer is not None:
            self._writer.transport.abort()


async def _ready(connection: AbstractConnection) -> bool:
    """True when the connection is connected with nothing unread (False for anything ensure_connection must see)."""
    if not connection.is_connected:
        return False
    try:
        return not await connection.can_read()
    except (RedisConnectionError, RedisTimeoutError, OSError):  # can_read dropped the socket: reconnect as before
        return False


MAX_WAITS = 15  # with the client's 2 s: a caller waits at most 30 s for a connection, however busy the pool


class BoundedPool(aioredis.ConnectionPool):
    """At most `max_connections`; beyond them callers wait up to `timeout` seconds for a free one."""

    def __init__(self, *, timeout: float = 2.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._slots = asyncio.Semaphore(self.max_connections)
        self._wait_s = timeout
        self._progress = 0  # connections opened or given back: a waiter fails only when none was for `timeout`
        self._opening = 0  # connections being opened now (their handshakes are progress too)
        self.lanes: Any = None  # core/stores/redis_lean.py's CommandLanes, shared by every store on the client

    async def get_connection(self, *_: Any, **__: Any) -> AbstractConnection:
        await self._take_slot()
        try:
            connection: AbstractConnection = self.get_available_connection()  # type: ignore[no-untyped-call]
        except BaseException:
            self._slots.release()
            raise
        self._opening += 1
        try:
            # A connected connection with nothing unread is what ensure_connection makes sure of; it is checked here
            # without connect()'s retry layers (three coroutines and a lambda per command). Anything else (not
            # connected, data left unread, a broken socket) goes through ensure_connection as before.
            if not await _ready(connection):
                await self.ensure_connection(connection)
        except BaseException:
            await self.release(connection)
            raise
        finally:
            self._opening -= 1
        self._progress += 1
        return connection

    async def _take_slot(self) -> None:
        """A free slot at once; else wait while the pool makes progress (a burst opening hundreds of connections on a
        loaded machine takes longer than `timeout`), and fail once, for a whole `timeout`, no connection was being opened
        and none was opened or given back (every holder is stuck), or after MAX_WAITS of them."""
        if not self._slots.locked():
            await self._slots.acquire()  # a free slot: no suspension, no timer
            return
        for _ in range(MAX_WAITS):
            progress = self._progress
            try:
                async with asyncio.timeout(self._wait_s):
                    await self._slots.acquire()
                return
            except TimeoutError as exc:
                if self._progress == progress and not self._opening:
                    raise RedisConnectionError("No connection available.") from exc
        raise RedisConnectionError("No connection available.")

    async def release(self, connection: AbstractConnection) -> None:
        if connection not in self._in_use_connections:
            return  # released already (redis-py releases on some error paths too): the slot went back then
        self._in_use_connections.remove(connection)
        try:
            if connection.should_reconnect():  # type: ignore[no-untyped-call]
                await connection.disconnect()
        finally:
            self._available_connections.append(connection)
            self._progress += 1
            self._slots.release()
