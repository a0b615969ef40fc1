"""Progress: the placeholder is edited at most once per interval with the latest state, without blocking the run."""

from __future__ import annotations

import asyncio

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.progress import SlackProgress
from tests.fakes.slack_server import FakeSlack


@pytest.fixture
def client(fake_slack: FakeSlack) -> AsyncWebClient:
    """A Web API client against the fake server (a session per call, nothing to close)."""
    return AsyncWebClient(token="xoxb-test", base_url=fake_slack.api_url)


async def test_burst_of_updates_becomes_one_edit_with_the_last_state(fake_slack: FakeSlack, client: AsyncWebClient) -> None:
    """30 tool updates inside one interval produce one edit, showing the newest tool."""
    progress = SlackProgress(client, "C1", "1.0", min_interval_s=0.3)
    await progress.start()
    for i in range(30):
        await progress.update("run_p", "tool", {"tool_name": f"t{i}", "evidence_status": "NO_EVIDENCE", "count": 0})
    await asyncio.sleep(0.8)
    edits = fake_slack.calls_of("chat.update")
    assert len(edits) == 1
    text = edits[0].params["blocks"][0]["text"]["text"]
    assert "`t29` no matches (0)" in text
    assert "`t0`" not in text  # only the last few tools are listed
    assert "`run_p`" in text
    await progress.close()


async def test_update_returns_while_slack_is_slow_and_close_waits_for_the_edit_in_flight(
    fake_slack: FakeSlack, client: AsyncWebClient
) -> None:
    """With chat.update stuck, update() still returns at once; close() waits for the in-flight edit, then no more edits."""
    progress = SlackProgress(client, "C1", "1.0", min_interval_s=0.0)
    await progress.start()
    gate = fake_slack.hold["chat.update"] = asyncio.Event()
    await asyncio.wait_for(progress.update("run_p", "routing"), timeout=5)
    await fake_slack.wait_for_call("chat.update")
    await asyncio.wait_for(progress.update("run_p", "drafting"), timeout=5)  # not blocked by the stuck edit
    closing = asyncio.create_task(progress.close())
    await asyncio.sleep(0.05)
    assert not closing.done()  # an edit in flight is awaited so it cannot land after the final message
    gate.set()
    await asyncio.wait_for(closing, timeout=5)
    await progress.update("run_p", "judging")
    await asyncio.sleep(0.05)
    assert len(fake_slack.calls_of("chat.update")) == 1


async def test_placeholder_failure_means_no_edits(fake_slack: FakeSlack, client: AsyncWebClient) -> None:
    """If the placeholder cannot be posted, updates are dropped quietly (the final message is posted instead)."""
    fake_slack.fail("chat.postMessage", "not_in_channel")
    progress = SlackProgress(client, "C1", "1.0", min_interval_s=0.0)
    await progress.start()
    assert progress.ts is None
    await progress.update("run_p", "routing")
    await progress.close()
    assert fake_slack.calls_of("chat.update") == []
