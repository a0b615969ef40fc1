"""Slow and vanishing clients against both HTTP servers, with real sockets: a client sending its headers, or a
declared 1 MB body, one byte a second is disconnected after DIAG_HTTP_READ_TIMEOUT_S while /healthz keeps
answering; a request without fresh Slack signature headers is refused before its body is read; a client that
disconnects mid-body costs one warning line, never a traceback."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import pytest
from aiohttp import web

from bot.app import build_bot
from bot.health import Readiness, start_health_server, timed_runner
from bot.serve import build_web_app
from core.settings import Settings
from core.stores.kv import InMemoryKV
from tests.bot.conftest import FAST_DELIVERY
from tests.bot.fake_chat import FakeChat

TIMEOUT_S = 1.0
GIVE_UP_S = 15.0  # far beyond TIMEOUT_S: only a server that never drops the client fails


async def _serve(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = timed_runner(app, TIMEOUT_S)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, int(runner.addresses[0][1])


@pytest.fixture
async def events_port(settings: Settings, chat: FakeChat) -> AsyncIterator[int]:
    """The events server as `diagbot serve` runs it (request guard, timed runner), on a free port."""
    bot = build_bot(settings, chat, InMemoryKV(), delivery=FAST_DELIVERY)
    runner, port = await _serve(build_web_app(bot.app, signing_secret="s3cret", body_timeout_s=TIMEOUT_S))
    yield port
    await runner.cleanup()
    await bot.aclose(timeout_s=2)


@pytest.fixture
async def health_port() -> AsyncIterator[int]:
    """The Socket Mode health/metrics server, on a free port."""
    runner = await start_health_server(0, Readiness([]), read_timeout_s=TIMEOUT_S, host="127.0.0.1")
    yield int(runner.addresses[0][1])
    await runner.cleanup()


async def _healthz_ok(port: int) -> bool:
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}/healthz",
                                                              timeout=aiohttp.ClientTimeout(total=2)) as resp:
        return resp.status == 200


async def trickle(port: int, head: bytes, drip: bytes, *, check: Callable[[], Awaitable[bool]] | None = None
                  ) -> tuple[bytes, float, list[bool]]:
    """Send `head` at once, then `drip` one byte a second; what the server sent back, how long until it closed the
    connection, and the answers of `check` run while dripping."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started, received, checks = time.monotonic(), b"", []
    writer.write(head)
    try:
        for byte in drip:
            writer.write(bytes([byte]))
            await writer.drain()
            try:
                chunk = await asyncio.wait_for(reader.read(65536), timeout=1.0)
            except TimeoutError:
                chunk = None
            if chunk == b"":
                break  # closed by the server
            received += chunk or b""
            if check is not None:
                checks.append(await check())
            assert time.monotonic() - started < GIVE_UP_S, "the server kept a one-byte-a-second client"
    except (ConnectionResetError, BrokenPipeError):
        pass
    finally:
        writer.close()
    return received, time.monotonic() - started, checks


def _head(path: str, headers: dict[str, str]) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _signed(body_length: int) -> dict[str, str]:
    return {"Content-Type": "application/json", "Content-Length": str(body_length),
            "X-Slack-Request-Timestamp": str(int(time.time())), "X-Slack-Signature": "v0=" + "ab" * 32}


async def test_headers_sent_one_byte_a_second_are_cut_off_and_healthz_still_answers(events_port: int) -> None:
    received, took, checks = await trickle(events_port, b"POST /slack/events HTTP/1.1\r\n",
                                           b"X-Slow: " + b"a" * 60, check=lambda: _healthz_ok(events_port))
    assert received == b""  # dropped, not answered
    assert took < GIVE_UP_S
    assert checks
    assert all(checks)


async def test_a_declared_megabyte_sent_one_byte_a_second_is_refused_and_closed(events_port: int) -> None:
    received, _, checks = await trickle(events_port, _head("/slack/events", _signed(1024 * 1024)), b"{" * 60,
                                        check=lambda: _healthz_ok(events_port))
    assert received.startswith(b"HTTP/1.1 408")
    assert all(checks)


@pytest.mark.parametrize("headers", [
    {"Content-Type": "application/json", "Content-Length": str(1024 * 1024)},
    {**_signed(1024 * 1024), "X-Slack-Request-Timestamp": "1531420618"},  # stale
    {**_signed(1024 * 1024), "X-Slack-Signature": "v0=not-hex"},
], ids=["unsigned", "stale timestamp", "malformed signature"])
async def test_a_request_without_fresh_signature_headers_is_refused_before_its_body(
        events_port: int, headers: dict[str, str]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", events_port)
    try:
        writer.write(_head("/slack/events", headers) + b"{")  # one byte of a declared megabyte
        answer = await asyncio.wait_for(reader.read(65536), timeout=GIVE_UP_S)
        assert answer.startswith(b"HTTP/1.1 401")
        rest = await asyncio.wait_for(reader.read(65536), timeout=GIVE_UP_S)  # then the connection is closed
        assert rest == b""
    finally:
        writer.close()


async def test_the_health_server_cuts_off_slow_headers_and_slow_bodies(health_port: int) -> None:
    received, took, checks = await trickle(health_port, b"GET /healthz HTTP/1.1\r\n", b"X-Slow: " + b"a" * 60,
                                           check=lambda: _healthz_ok(health_port))
    assert (received, all(checks)) == (b"", True)
    assert took < GIVE_UP_S
    received, _, _ = await trickle(health_port, _head("/healthz", {"Content-Length": str(1024 * 1024)}), b"x" * 60)
    assert received.startswith(b"HTTP/1.1 405")  # answered at once; the unread body is not waited for


async def test_a_client_that_disconnects_mid_body_costs_one_warning_and_no_traceback(
        events_port: int, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        reader, writer = await asyncio.open_connection("127.0.0.1", events_port)
        writer.write(_head("/slack/events", {**_signed(10_000), "Expect": "100-continue"}))
        continued = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), GIVE_UP_S)  # the request is dispatched
        assert continued.startswith(b"HTTP/1.1 100")
        writer.write(b'{"type": "event_callback", ')
        await writer.drain()
        writer.transport.abort()  # reset, mid-body
        await _wait_for_log(caplog, "client went away")
    problems = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert problems == [], [r.getMessage() for r in problems]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert await _healthz_ok(events_port)


async def _wait_for_log(caplog: pytest.LogCaptureFixture, text: str) -> None:
    async with asyncio.timeout(GIVE_UP_S):
        while not any(text in r.getMessage() for r in caplog.records):  # noqa: ASYNC110 - logging has no event
            await asyncio.sleep(0.02)


