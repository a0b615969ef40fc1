"""The one module that speaks to the official `mcp` SDK (2.x): connect, initialise, list tools, call a tool.

Everything above it sees plain data (ListedTool, CallResult) and two exceptions (ServerUnavailable for a server that
cannot be reached or dropped the connection, ServerError for a JSON-RPC error answer), so an SDK upgrade touches
this file only. The SDK's contexts (the stdio process or HTTP client, the session's task group) must be entered and
left in one task: each Connection owns a task that holds them open until the connection is closed or breaks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, TextIO

import httpx2
import mcp_types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from core.evidence.redaction import redact
from core.tools.mcp.config import START_TIMEOUT_S, McpServerConfig

log = logging.getLogger(__name__)

CLIENT_INFO = types.Implementation(name="diagbot", version="1")
STDERR_TAIL_CHARS = 600
MAX_LIST_PAGES = 20



class ServerUnavailable(Exception):
    """The server did not start, did not answer, or the connection broke; the message is safe to show."""


class ServerError(Exception):
    """The server answered a request with a JSON-RPC error; `message` is the server's (unredacted) text."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class InvalidResult(Exception):
    """The server answered tools/call, but the SDK refused the result against the tool's own output schema
    (structured content missing or not conforming): that call is not evidence; the connection is fine."""


# The SDK's ClientSession.validate_tool_result raises a bare RuntimeError with these words (mcp 2.x).
_SCHEMA_REFUSALS = ("has an output schema but did not return structured content",
                    "Invalid structured content returned by tool", "Invalid schema for tool")


@dataclass(frozen=True)
class ListedTool:
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool | None
    destructive: bool | None


@dataclass(frozen=True)
class CallResult:
    """A tools/call answer as JSON: content blocks (by type), structured content, isError."""

    is_error: bool
    content: list[dict[str, Any]]
    structured: Any


class _PayloadFreeLogs(logging.Filter):
    """The SDK logs unparsable server lines with the line and a traceback: keep one plain sentence instead, so no
    raw tool payload reaches our logs."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info or record.args:
            record.msg = f"{record.getMessage().splitlines()[0][:120]} (details withheld: they may hold tool output)"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
        return True


def quiet_sdk_logs() -> None:
    """Install the payload-free filter on every SDK logger (a logger's filters do not see its children's records, so
    each one gets it; idempotent, and the SDK's modules are all imported by now)."""
    names = [n for n in list(logging.root.manager.loggerDict) if n == "mcp" or n.startswith(("mcp.", "mcp_types"))]
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _PayloadFreeLogs) for f in logger.filters):
            logger.addFilter(_PayloadFreeLogs())


def _listed(tool: types.Tool) -> ListedTool:
    hints = tool.annotations
    return ListedTool(
        name=tool.name,
        description=(tool.description or "").strip(),
        input_schema=dict(tool.input_schema),
        read_only=None if hints is None else hints.read_only_hint,
        destructive=None if hints is None else hints.destructive_hint,
    )


def _block(block: Any) -> dict[str, Any]:
    """One content block as JSON (binary data is not evidence: its size and type are kept, not its bytes)."""
    data: dict[str, Any] = block.model_dump(mode="json", by_alias=True, exclude_none=True)
    data.pop("_meta", None)
    data.pop("annotations", None)
    if isinstance(data.get("data"), str):
        data["data"] = f"<{len(data['data'])} base64 characters omitted>"
    resource = data.get("resource")
    if isinstance(resource, dict) and isinstance(resource.get("blob"), str):
        resource["blob"] = f"<{len(resource['blob'])} base64 characters omitted>"
    return data


def _stdio_command(config: McpServerConfig) -> StdioServerParameters:
    """The server's argv behind our launcher, which makes the server die with this process (Linux) and execs it."""
    assert config.command is not None
    argv = [sys.executable, "-m", "core.tools.mcp.launcher", *config.command]
    return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(config.env))


class Connection:
    """One initialised session with one server. Build with `await Connection.open(config)`; `close()` ends it (and a
    stdio server's process). `broken` is set when the server went away or sent something that is not JSON-RPC."""

    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self.broken = asyncio.Event()
        self.broken_reason = ""
        self._closing = asyncio.Event()
        self._ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
        self._stderr: TextIO | None = None
        self._owner: asyncio.Task[None] | None = None
        self.last_used = time.monotonic()

    @classmethod
    async def open(cls, config: McpServerConfig) -> Connection:
        """Start (or reach) the server and initialise the session; ServerUnavailable naming why otherwise."""
        quiet_sdk_logs()
        conn = cls(config)
        conn._owner = asyncio.create_task(conn._own(), name=f"mcp-{config.name}")
        try:
            async with asyncio.timeout(min(START_TIMEOUT_S, max(config.timeout_s, 5.0))):
                conn._session = await asyncio.shield(conn._ready)
        except TimeoutError:
            await conn.close()
            raise ServerUnavailable(f"did not finish initialising within {START_TIMEOUT_S:.0f} s{conn._stderr_tail()}") from None
        except ServerUnavailable:
            await conn.close()
            raise
        return conn

    async def _own(self) -> None:
        """Hold the SDK's contexts open until close() or a break; report the start's outcome through _ready."""
        if self.config.command is not None:  # outside the SDK's contexts, so a failed start can still be read
            self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115 (closed below)
        try:
            async with contextlib.AsyncExitStack() as stack:
                session = await self._enter(stack)
                await session.initialize()
                if not self._ready.done():
                    self._ready.set_result(session)
                await self._until_closed()
        except Exception as exc:  # the SDK's task groups raise ExceptionGroups: _reason unwraps them
            reason = _reason(exc)
            if not self._ready.done():
                self._ready.set_exception(ServerUnavailable(f"{reason}{self._stderr_tail()}"))
            elif not self._closing.is_set():
                log.warning("MCP server %s: connection ended: %s", self.config.name, reason)
            self._break(reason)
        finally:
            self._break("the connection was closed")
            if not self._ready.done():
                self._ready.set_exception(ServerUnavailable("the connection was closed while starting"))
            if self._stderr is not None:
                self._stderr.close()

    async def _enter(self, stack: contextlib.AsyncExitStack) -> ClientSession:
        if self.config.command is not None:
            errlog = self._stderr if self._stderr is not None else sys.stderr
            read, write = await stack.enter_async_context(stdio_client(_stdio_command(self.config), errlog=errlog))
        else:
            assert self.config.url is not None
            timeout = httpx2.Timeout(self.config.timeout_s, read=self.config.timeout_s + 5)
            client = await stack.enter_async_context(httpx2.AsyncClient(headers=dict(self.config.headers), timeout=timeout))
            read, write = await stack.enter_async_context(streamable_http_client(self.config.url, http_client=client))
        return await stack.enter_async_context(
            ClientSession(read, write, message_handler=self._on_message, client_info=CLIENT_INFO)
        )

    async def _until_closed(self) -> None:
        closing = asyncio.ensure_future(self._closing.wait())
        broken = asyncio.ensure_future(self.broken.wait())
        try:
            await asyncio.wait({closing, broken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closing.cancel()
            broken.cancel()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):  # a line that is not JSON-RPC: the stream can no longer be trusted
            self._break("the server sent a message that is not valid JSON-RPC")

    def _break(self, reason: str) -> None:
        if not self.broken.is_set():
            self.broken_reason = reason
            self.broken.set()

    def _stderr_tail(self) -> str:
        if self._stderr is None or self._stderr.closed:
            return ""
        try:
            self._stderr.flush()
            self._stderr.seek(0)
            tail = self._stderr.read()[-STDERR_TAIL_CHARS:].strip()
        except (OSError, ValueError):
            return ""
        return f"; its stderr ends: {redact(' '.join(tail.split()))}" if tail else ""

    async def close(self) -> None:
        """End the session (a stdio server gets EOF, then SIGTERM/SIGKILL from the SDK); never raises."""
        self._closing.set()
        owner = self._owner
        if owner is not None and not owner.done():
            with contextlib.suppress(asyncio.CancelledError, TimeoutError, Exception):
                async with asyncio.timeout(10):
                    await asyncio.shield(owner)
            if not owner.done():
                owner.cancel()

    # ---- requests (the caller serialises them: one at a time per server) -------------------------------------

    _session: ClientSession

    async def list_tools(self) -> list[ListedTool]:
        """Every tool the server lists (all pages, bounded)."""
        tools: list[ListedTool] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            result = await self._request(self._session.list_tools(params=params))
            tools.extend(_listed(tool) for tool in result.tools)
            cursor = result.next_cursor
            if not cursor:
                break
        return tools

    async def alive(self, timeout_s: float) -> bool:
        """Whether the server still answers a ping (a server that died while idle is found before a call fails)."""
        if self.broken.is_set():
            return False
        try:
            async with asyncio.timeout(timeout_s):
                await self._request(self._session.send_ping())
        except (TimeoutError, ServerUnavailable):
            return False
        except ServerError:
            return True  # it answered, if only to refuse ping
        self.last_used = time.monotonic()
        return True

    async def call(self, name: str, arguments: dict[str, Any], timeout_s: float) -> CallResult:
        """One tools/call; TimeoutError after timeout_s, ServerError for an error answer, ServerUnavailable if the
        connection breaks meanwhile."""
        try:
            async with asyncio.timeout(timeout_s):
                result = await self._request(self._session.call_tool(name, arguments))
        finally:
            self.last_used = time.monotonic()
        if not isinstance(result, types.CallToolResult):
            raise ServerError(0, "the server answered with something other than a tool result")
        return CallResult(
            is_error=bool(result.is_error),
            content=[_block(block) for block in result.content],
            structured=result.structured_content,
        )

    async def _request(self, request: Any) -> Any:
        """Await one SDK request, giving up as soon as the connection breaks (a dead server answers nothing)."""
        if self.broken.is_set():
            request.close()
            raise ServerUnavailable(self.broken_reason)
        call = asyncio.ensure_future(request)
        broken = asyncio.ensure_future(self.broken.wait())
        try:
            await asyncio.wait({call, broken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            broken.cancel()
            if not call.done():
                call.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await call
        if not call.done() or call.cancelled():
            raise ServerUnavailable(self.broken_reason or "the connection ended")
        exc = call.exception()
        if isinstance(exc, MCPError):
            if exc.code == types.CONNECTION_CLOSED:
                self._break("the server closed the connection")
                raise ServerUnavailable(self.broken_reason) from None
            raise ServerError(exc.code, exc.message) from None
        if isinstance(exc, RuntimeError) and any(words in str(exc) for words in _SCHEMA_REFUSALS):
            raise InvalidResult(str(exc)) from None  # refused after a whole answer: the connection still works
        if exc is not None:
            self._break(_reason(exc))
            raise ServerUnavailable(_reason(exc)) from None
        return call.result()


def _reason(exc: BaseException) -> str:
    """Plain words for why a connection failed (the innermost error of an exception group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError):
        return f"the command was not found ({exc.filename or exc})"
    if isinstance(exc, httpx2.ConnectError):
        return "the connection was refused or the host is unreachable"
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"the server answered HTTP {exc.response.status_code}"
    if isinstance(exc, MCPError):
        return f"the server refused the session: {exc.message[:200]}"
    if isinstance(exc, ServerUnavailable | ServerError):
        return str(exc)
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return redact(f"{type(exc).__name__}: {text}") if text else type(exc).__name__
