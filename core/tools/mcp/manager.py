"""The MCP servers of DIAG_TOOLSETS_FILE, connected: started and listed at start, one call at a time per server,
restarted when they die or hang, closed (stdio children ended) with the process.

Start never raises for a server: one that does not start or answer is a problem line and offers nothing; the file
being invalid is the caller's (load_toolsets) fatal error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from core.tools.mcp.config import McpServerConfig, ToolsetsFile
from core.tools.mcp.sdk import CallResult, Connection, ServerUnavailable
from core.tools.mcp.selection import OfferedTool, select

log = logging.getLogger(__name__)

IDLE_PING_S = 0.25
"""A connection idle this long is pinged before a call, so a server that died in between is restarted first."""
PING_TIMEOUT_S = 2.0
RESTART_BACKOFF_S = 5.0
"""After a failed (re)start, calls within this many seconds fail at once instead of waiting for another start."""


@dataclass
class ServerState:
    """One server: its configuration, live connection, what it offers and what went wrong."""

    config: McpServerConfig
    offered: list[OfferedTool] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    available: bool = False
    connection: Connection | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_failure: str = ""
    failed_at: float = 0.0
    restarts: int = 0
    listed: int = 0


class McpManager:
    """Every configured MCP server, and the tools they offer under mcp_<server>_<tool>."""

    def __init__(self, toolsets: ToolsetsFile, *, strict: bool = True) -> None:
        self._servers = {config.name: ServerState(config) for config in toolsets.mcp}
        self._strict = strict
        self._retiring: set[asyncio.Task[None]] = set()
        self._tools: dict[str, OfferedTool] = {}

    @property
    def servers(self) -> list[ServerState]:
        return list(self._servers.values())

    @property
    def tools(self) -> dict[str, OfferedTool]:
        """Offered tools by function name, in file order."""
        return dict(self._tools)

    async def start(self) -> None:
        """Connect to every server at once and list its tools; problems are recorded, never raised."""
        await asyncio.gather(*(self._start(state) for state in self._servers.values()))
        for state in self._servers.values():
            for tool in state.offered:
                if tool.function in self._tools:
                    state.problems.append(f"{tool.function} is offered twice; the second is dropped")
                    continue
                self._tools[tool.function] = tool

    async def _start(self, state: ServerState) -> None:
        config = state.config
        try:
            conn = await Connection.open(config)
        except ServerUnavailable as exc:
            state.problems.append(f"the server did not start or answer: {exc}")
            state.last_failure, state.failed_at = str(exc), time.monotonic()
            return
        try:
            async with asyncio.timeout(config.timeout_s):
                listed = await conn.list_tools()
        except (TimeoutError, Exception) as exc:
            reason = "tools/list did not answer in time" if isinstance(exc, TimeoutError) else f"tools/list failed: {exc}"
            state.problems.append(f"the server started but {reason}")
            await conn.close()
            return
        state.listed = len(listed)
        state.offered, problems = select(config, listed, strict=self._strict)
        state.problems.extend(problems)
        state.connection, state.available = conn, True

    async def call(self, function: str, arguments: dict[str, Any]) -> CallResult:
        """Call one offered tool, one call at a time per server; TimeoutError, ServerUnavailable or ServerError
        otherwise. A call that times out or is cancelled retires the connection (a hung server is restarted)."""
        tool = self._tools[function]
        state = self._servers[tool.server]
        async with state.lock:
            conn = await self._connection(state)
            try:
                return await conn.call(tool.tool, arguments, state.config.timeout_s)
            except ServerUnavailable:
                self._retire(state)
                raise
            except (TimeoutError, asyncio.CancelledError):
                self._retire(state)
                raise

    async def _connection(self, state: ServerState) -> Connection:
        conn = state.connection
        if conn is not None and not conn.broken.is_set():
            idle = time.monotonic() - conn.last_used
            if idle < IDLE_PING_S or await conn.alive(min(PING_TIMEOUT_S, state.config.timeout_s)):
                return conn
            log.info("MCP server %s stopped answering while idle; restarting it", state.config.name)
        if conn is not None:
            self._retire(state)
        since = time.monotonic() - state.failed_at
        if state.failed_at and since < RESTART_BACKOFF_S:
            raise ServerUnavailable(f"the server is down (its last start failed {since:.0f} s ago: {state.last_failure})")
        try:
            state.connection = await Connection.open(state.config)
        except ServerUnavailable as exc:
            state.last_failure, state.failed_at = str(exc), time.monotonic()
            raise
        state.restarts += 1
        state.failed_at = 0.0
        log.info("MCP server %s restarted (%d restarts)", state.config.name, state.restarts)
        return state.connection

    def _retire(self, state: ServerState) -> None:
        """Close the server's connection in the background (a stdio server's stop can take seconds)."""
        conn, state.connection = state.connection, None
        if conn is None:
            return
        task = asyncio.get_running_loop().create_task(conn.close(), name=f"mcp-close-{state.config.name}")
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)

    async def close(self) -> None:
        """Close every connection (stdio servers end) and wait for retiring ones; never raises."""
        for state in self._servers.values():
            self._retire(state)
        pending = list(self._retiring)
        if pending:
            with contextlib.suppress(Exception):
                await asyncio.gather(*pending, return_exceptions=True)
