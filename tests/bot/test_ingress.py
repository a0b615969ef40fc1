"""The ingress thread (bot/ingress.py): events acked without the main loop, everything else answered from it.

Requests follow Slack's references, not our code: event_callback and url_verification bodies from the Events API
reference, signatures from "Verifying requests from Slack" (tests/bot/slack_requests.py)."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.health import Readiness
from bot.ingress import SWITCH_INTERVAL_S, IngressThread, MainLoop, ingress_app, is_event_callback
from bot.serve import EVENTS_PATH
from tests.bot.slack_requests import SECRET, SlackSender, envelope, mention, sign
from tests.fakes.slack_server import FakeSlack
from tests.waiting import until


@dataclass
class Served:
    bolt: AsyncApp
    seen: list[dict[str, Any]]
    base: str
    sender: SlackSender


@pytest.fixture
async def served(fake_slack: FakeSlack) -> AsyncIterator[Served]:
    bolt = AsyncApp(signing_secret=SECRET, client=AsyncWebClient(token="xoxb-test", base_url=fake_slack.api_url))
    seen: list[dict[str, Any]] = []

    @bolt.event("app_mention")
    async def on_mention(event: dict[str, Any]) -> None:
        seen.append(event)

    @bolt.command("/diag")
    async def on_command(ack: AsyncAck) -> None:
        await ack(text="answered on the main loop")

    main = MainLoop(asyncio.get_running_loop())
    ingress = IngressThread(lambda: ingress_app(bolt, main, Readiness([]), path=EVENTS_PATH, signing_secret=SECRET,
                                                body_timeout_s=5.0), "127.0.0.1", 0)
    port = await ingress.start()
    base = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as session:
        yield Served(bolt, seen, base, SlackSender(session, base + EVENTS_PATH))
    await ingress.aclose()
    await main.drain()


def post_event_blocking(url: str, event: dict[str, Any]) -> int:
    """A signed event_callback sent from a plain thread (the test's loop may be blocked meanwhile)."""
    body = json.dumps(envelope(event))
    ts = int(time.time())
    request = urllib.request.Request(url, data=body.encode(), method="POST", headers={
        "Content-Type": "application/json", "X-Slack-Request-Timestamp": str(ts),
        "X-Slack-Signature": sign(SECRET, ts, body)})
    with urllib.request.urlopen(request, timeout=10) as resp:
        return int(resp.status)


async def test_event_is_acked_while_the_main_loop_is_busy(served: Served) -> None:
    """Once one event went through Bolt, a later one is answered 200 even while the main loop cannot run, and is
    dispatched to the listener once it can."""
    status, _ = await served.sender.event(mention(ts="1.0"))
    assert status == 200
    await until(lambda: len(served.seen) == 1, message="the first mention dispatched")

    statuses: list[int] = []
    answered = threading.Event()

    def client() -> None:
        statuses.append(post_event_blocking(served.base + EVENTS_PATH, mention(ts="2.0")))
        answered.set()

    thread = threading.Thread(target=client)
    thread.start()
    answered_while_blocked = answered.wait(10)  # blocks this (the main) loop: no Bolt, no listener can run
    thread.join()
    assert answered_while_blocked
    assert statuses == [200]
    await until(lambda: len(served.seen) == 2, message="the second mention dispatched after the loop was free")
    assert served.seen[1]["ts"] == "2.0"


async def test_first_event_gets_bolts_failure_so_slack_retries(served: Served) -> None:
    """Until one event_callback has gone through Bolt, each waits for its dispatch: a failure there is a 500."""
    calls = 0

    @served.bolt.middleware
    async def fails_once(next: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("auth.test unreachable")
        return await next()

    status, _ = await served.sender.event(mention(ts="3.0"))
    assert status == 500
    status, _ = await served.sender.event(mention(ts="3.0"), retry_num=1)
    assert status == 200
    await until(lambda: len(served.seen) == 1, message="the retried mention dispatched")


async def test_commands_and_url_verification_are_answered_from_the_main_loop(served: Served) -> None:
    status, body = await served.sender.command("help", user="U1", response_url="http://127.0.0.1:9/unused")
    assert status == 200
    assert "answered on the main loop" in body
    status, body = await served.sender.post(json.dumps({"type": "url_verification", "challenge": "c-42",
                                                        "token": "x"}), "application/json")
    assert status == 200
    assert "c-42" in body


async def test_guard_refuses_at_the_ingress(served: Served) -> None:
    body = json.dumps(envelope(mention(ts="4.0")))
    status, _ = await served.sender.post(body, "application/json", signature="v0=" + "0" * 64)
    assert status == 401
    assert served.seen == []


async def test_health_is_the_main_loops(served: Served) -> None:
    async with served.sender.session.get(served.base + "/healthz") as resp:
        assert resp.status == 200
        assert (await resp.json()) == {"ok": True}
    async with served.sender.session.get(served.base + "/readyz") as resp:
        assert resp.status == 200


async def test_switch_interval_is_lowered_while_serving_and_restored(fake_slack: FakeSlack) -> None:
    before = sys.getswitchinterval()
    main = MainLoop(asyncio.get_running_loop())
    bolt = AsyncApp(signing_secret=SECRET, client=AsyncWebClient(token="xoxb-test", base_url=fake_slack.api_url))
    ingress = IngressThread(lambda: ingress_app(bolt, main, Readiness([]), path=EVENTS_PATH, signing_secret=SECRET,
                                                body_timeout_s=5.0), "127.0.0.1", 0)
    await ingress.start()
    assert sys.getswitchinterval() <= SWITCH_INTERVAL_S
    await ingress.aclose()
    assert sys.getswitchinterval() == before


def test_only_event_callbacks_take_the_fast_path() -> None:
    assert is_event_callback(json.dumps(envelope(mention())).encode(), "application/json")
    assert not is_event_callback(b'{"type": "url_verification", "challenge": "x"}', "application/json")
    assert not is_event_callback(b"payload=%7B%7D", "application/x-www-form-urlencoded")
    assert not is_event_callback(b"[1]", "application/json")
