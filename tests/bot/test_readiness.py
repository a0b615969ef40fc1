"""/healthz is liveness, /readyz readiness: the server's Redis and database, the model endpoint and each tool backend,
cached a few seconds, 503 naming the failing parts (a dead DIAG_SQL_URL, a Redis outage), served in Socket Mode on PORT."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from pydantic import SecretStr

from bot.health import Readiness
from bot.serve import serve
from core.health.result import Check, CheckResult, Level
from core.settings import Settings
from tests.bot.slack_requests import SECRET
from tests.fakes.slack_server import FakeSlack
from tests.waiting import until


@pytest.fixture(autouse=True)
def _restore_gc() -> Iterator[None]:
    """serve() tunes the process-wide GC; put it back so other tests run under the defaults."""
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _get(session: aiohttp.ClientSession, url: str) -> tuple[int, Any]:
    """GET `url` once the server listens; its status and JSON body."""
    got: list[tuple[int, Any]] = []

    async def answered() -> bool:
        try:
            async with session.get(url) as resp:
                got.append((resp.status, await resp.json()))
                return True
        except aiohttp.ClientConnectionError:
            return False

    await until(answered, timeout_s=20, interval_s=0.05, message=f"an answer from {url}")
    return got[-1]


@contextlib.asynccontextmanager
async def _serving(settings: Settings) -> AsyncIterator[str]:
    stop = asyncio.Event()
    task = asyncio.create_task(serve(settings, stop))
    try:
        yield f"http://127.0.0.1:{settings.port}"
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)


def _http_settings(fake_slack: FakeSlack, tmp_path: Path, **extra: Any) -> Settings:
    return Settings(slack_bot_token=SecretStr("xoxb-test"), slack_signing_secret=SecretStr(SECRET),
                    slack_api_url=fake_slack.api_url, database_url=f"sqlite+aiosqlite:///{tmp_path}/diag.db",
                    port=_free_port(), **extra)


async def test_a_dead_sql_backend_keeps_serving_but_is_not_ready(fake_slack: FakeSlack, tmp_path: Path) -> None:
    """DIAG_SQL_URL on a closed port: the server serves, /healthz 200, /readyz 503 naming tool.query_mysql only."""
    settings = _http_settings(fake_slack, tmp_path, diag_sql_url="postgresql://u:hunter2@127.0.0.1:9/shop")
    async with _serving(settings) as base, aiohttp.ClientSession() as session:
        assert (await _get(session, f"{base}/healthz"))[0] == 200
        status, body = await _get(session, f"{base}/readyz")
        assert status == 503
        assert body["failing"] == ["tool.query_mysql"]
        assert "hunter2" not in str(body)
        assert "127.0.0.1" not in str(body)  # parts are named, details go to the log


async def test_everything_up_is_ready(fake_slack: FakeSlack, tmp_path: Path) -> None:
    """Embedded tool backends and SQLite: /readyz 200 with every part ok."""
    async with _serving(_http_settings(fake_slack, tmp_path)) as base, aiohttp.ClientSession() as session:
        status, body = await _get(session, f"{base}/readyz")
        assert status == 200, body
        assert body["ready"] is True
        assert {"database", "tool.query_logs", "tool.lookup_knowledge", "tool.query_mysql"} <= set(body["checks"])


@contextlib.contextmanager
def _own_redis() -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """A private redis-server on a free port (the shared one is never stopped); killed at the end."""
    binary = shutil.which("redis-server")
    if binary is None:  # .ci/run installs and starts Redis; a missing binary is a broken machine, not a skip
        pytest.fail("redis-server not installed: the readiness test stops a private Redis to prove the outage")
    port = _free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield port, proc
    finally:
        proc.kill()
        proc.wait()


async def _wait_redis(port: int) -> None:
    async def listening() -> bool:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            return False
        writer.close()
        return True

    await until(listening, timeout_s=10, interval_s=0.05, message=f"redis-server on port {port}")


async def test_a_redis_outage_makes_readyz_503_naming_redis(fake_slack: FakeSlack, tmp_path: Path) -> None:
    """Redis dies while serving: /readyz (after its cache) is 503 naming redis; /healthz stays 200 (liveness)."""
    with _own_redis() as (port, proc):
        await _wait_redis(port)
        settings = _http_settings(fake_slack, tmp_path, redis_url=f"redis://127.0.0.1:{port}/0")
        async with _serving(settings) as base, aiohttp.ClientSession() as session:
            status, body = await _get(session, f"{base}/readyz")
            assert status == 200, body
            proc.kill()
            proc.wait()

            async def failing() -> bool:
                nonlocal status, body
                status, body = await _get(session, f"{base}/readyz")
                return status != 200

            await until(failing, timeout_s=15, interval_s=0.1, message="/readyz to notice the outage")
            assert status == 503
            assert "redis" in body["failing"]
            assert (await _get(session, f"{base}/healthz"))[0] == 200


async def test_socket_mode_serves_health_on_port_when_set(fake_slack: FakeSlack, tmp_path: Path) -> None:
    """Socket Mode with PORT set: /healthz and /readyz answer on PORT."""
    settings = Settings(slack_bot_token=SecretStr("xoxb-test"), slack_app_token=SecretStr("xapp-test"),
                        slack_api_url=fake_slack.api_url, database_url=f"sqlite+aiosqlite:///{tmp_path}/diag.db",
                        port=_free_port())
    assert "port" in settings.model_fields_set
    stop = asyncio.Event()
    task = asyncio.create_task(serve(settings, stop))
    try:
        await fake_slack.wait_connected(timeout_s=20)
        async with aiohttp.ClientSession() as session:
            assert (await _get(session, f"http://127.0.0.1:{settings.port}/healthz"))[0] == 200
            status, body = await _get(session, f"http://127.0.0.1:{settings.port}/readyz")
            assert status == 200, body
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)


async def test_readiness_is_cached_and_shared() -> None:
    """Concurrent /readyz calls within the cache time run the checks once; after it, again."""
    runs = 0
    now = [0.0]

    async def counted() -> CheckResult:
        nonlocal runs
        runs += 1
        await asyncio.sleep(0.05)  # a slow check, so that the ten callers overlap (the sharing under test)
        return CheckResult(name="x", level=Level.OK, detail="ok")

    readiness = Readiness([Check("x", counted)], cache_s=5, clock=lambda: now[0])
    await asyncio.gather(*(readiness.results() for _ in range(10)))
    assert runs == 1
    now[0] = 4.9
    await readiness.results()
    assert runs == 1
    now[0] = 5.1
    await readiness.results()
    assert runs == 2
