"""`serve` in HTTP mode: builds the real services, serves /healthz and /slack/events on $PORT, shuts down cleanly."""

from __future__ import annotations

import asyncio
import gc
import socket
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from pydantic import SecretStr

from bot.serve import serve
from core.runtime import GC_GEN0_THRESHOLD
from core.settings import Settings
from tests.bot.slack_requests import SECRET, SlackSender, mention
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


async def test_http_mode_serves_health_and_events_then_stops(fake_slack: FakeSlack, tmp_path: Path) -> None:
    """Without SLACK_APP_TOKEN, serve() listens on PORT; signed events are acked; stop closes everything."""
    port = _free_port()
    settings = Settings(
        diag_slack_streaming=False, slack_bot_token=SecretStr("xoxb-test"), slack_signing_secret=SecretStr(SECRET),
                        slack_api_url=fake_slack.api_url, database_url=f"sqlite+aiosqlite:///{tmp_path}/diag.db",
                        port=port)
    stop = asyncio.Event()
    task = asyncio.create_task(serve(settings, stop))
    base = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as session:

        async def healthy() -> bool:
            try:
                async with session.get(f"{base}/healthz") as resp:
                    return resp.status == 200
            except aiohttp.ClientConnectionError:
                return False

        await until(healthy, timeout_s=20, interval_s=0.05, message="/healthz to answer 200")
        status, _ = await SlackSender(session, f"{base}/slack/events").event(mention(ts="41.0"))
        assert status == 200
        # No model is configured: the run ends FAILURE and says so in the thread.
        final = await fake_slack.wait_for_metadata(timeout_s=20)
        assert final["event_payload"]["outcome"] == "FAILURE"
    stop.set()
    await asyncio.wait_for(task, 20)


async def test_serve_tunes_gc_for_low_ack_latency(fake_slack: FakeSlack, tmp_path: Path) -> None:
    """serve() freezes the startup heap and raises the young-generation threshold (restored here afterwards)."""
    settings = Settings(
        diag_slack_streaming=False, slack_bot_token=SecretStr("xoxb-test"), slack_signing_secret=SecretStr(SECRET),
                        slack_api_url=fake_slack.api_url, database_url=f"sqlite+aiosqlite:///{tmp_path}/diag.db",
                        port=_free_port())
    stop = asyncio.Event()
    stop.set()
    await asyncio.wait_for(serve(settings, stop), 20)
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold()[0] == GC_GEN0_THRESHOLD
