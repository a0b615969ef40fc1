"""A TCP proxy in front of a real server (Redis, PostgreSQL…) that a test can cut and restore: a real outage.

`cut()` stops listening and drops every open connection (clients see resets, then refused connections);
`restore()` listens again on the same port. Bytes are forwarded unchanged in both directions.
"""

from __future__ import annotations

import asyncio
import contextlib


class TcpProxy:
    """127.0.0.1:<port> -> target_host:target_port."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target_host = target_host
        self.target_port = target_port
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._pipes: set[asyncio.Task[None]] = set()

    async def start(self) -> TcpProxy:
        """Listen (on a free port the first time, on the same port after a cut)."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(self.target_host, self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self._writers.update({writer, up_writer})
        for src, dst in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pipe(src, dst))
            self._pipes.add(task)
            task.add_done_callback(self._pipes.discard)

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writers.discard(dst)
            dst.transport.abort()

    async def cut(self) -> None:
        """The outage starts: no new connections, and every open one is dropped."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()
        await asyncio.sleep(0)  # one loop turn: the aborted transports run their connection_lost callbacks

    async def restore(self) -> None:
        """The outage ends: listen again on the same port."""
        await self.start()

    async def aclose(self) -> None:
        """Cut for good and wait for the forwarding tasks."""
        await self.cut()
        for task in list(self._pipes):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
