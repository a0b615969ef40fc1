"""Progress: the placeholder is edited at most once per interval with the latest state, without blocking the run."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.progress import SlackProgress
from bot.slack_surface import SlackSurface
from core.contracts.evidence import EvidenceStatus
from core.contracts.progress import ProgressStage, ProgressUpdate, ToolProgress
from core.contracts.run import SessionKey
from core.stores.kv import InMemoryKV
from core.turns.answers import Answers
from core.turns.runner import TurnRunner
from tests.bot.fake_chat import FakeChat
from tests.fakes.slack_server import FakeSlack


def runner_for(chat: FakeChat, client: AsyncWebClient, progress_interval_s: float) -> TurnRunner:
    """The turn runner over the Slack surface (in-process answer records)."""
    return TurnRunner(chat, Answers(InMemoryKV(), SlackSurface(client, progress_interval_s=progress_interval_s)))

ROUTING = ProgressUpdate(stage=ProgressStage.ROUTING)
PLANNING = ProgressUpdate(stage=ProgressStage.PLANNING, step=1, tool_calls=0)
REVIEW = ProgressUpdate(stage=ProgressStage.REVIEW, cited_calls=1)


def _finished(service: str) -> ProgressUpdate:
    return ProgressUpdate(stage=ProgressStage.TOOL_FINISHED, tool=ToolProgress(
        tool_call_id=f"call_{service}", tool="query_logs", subject=f'{service} "timeout"',
        evidence_status=EvidenceStatus.NO_EVIDENCE, count=0))


@pytest.fixture
def client(fake_slack: FakeSlack) -> AsyncWebClient:
    """A Web API client against the fake server (a session per call, nothing to close)."""
    return AsyncWebClient(token="xoxb-test", base_url=fake_slack.api_url)


async def test_burst_of_updates_becomes_one_edit_with_the_last_state(fake_slack: FakeSlack, client: AsyncWebClient) -> None:
    """30 tool updates inside one interval produce one edit, showing the newest tool."""
    progress = SlackProgress(client, "C1", "1.0", min_interval_s=0.3)
    await progress.start()
    for i in range(30):
        await progress.update("run_p", _finished(f"svc-{i}"))
    await fake_slack.wait_for_calls("chat.update", 1)
    await asyncio.sleep(0.6)  # a negative: two more intervals pass without an edit (nothing changed since)
    await progress.close()
    edits = fake_slack.calls_of("chat.update")
    assert len(edits) == 1
    text = edits[0].params["blocks"][0]["text"]["text"]
    assert 'Logs · svc-29 "timeout" — no matches (not proof of health)' in text
    assert "svc-0 " not in text  # only the last few tools are listed
    assert "22 earlier steps" in text
    assert "`run_p`" in text


async def test_update_returns_while_slack_is_slow_and_close_waits_for_the_edit_in_flight(
    fake_slack: FakeSlack, client: AsyncWebClient
) -> None:
    """With chat.update stuck, update() still returns at once; close() waits for the in-flight edit, then no more edits."""
    progress = SlackProgress(client, "C1", "1.0", min_interval_s=0.0)
    await progress.start()
    gate = fake_slack.hold["chat.update"] = asyncio.Event()
    await asyncio.wait_for(progress.update("run_p", ROUTING), timeout=5)
    await fake_slack.wait_for_call("chat.update")
    await asyncio.wait_for(progress.update("run_p", PLANNING), timeout=5)  # not blocked by the stuck edit
    closing = asyncio.create_task(progress.close())
    done, _ = await asyncio.wait({closing}, timeout=0.05)  # a negative: close() is still waiting 50 ms later
    assert not done  # an edit in flight is awaited so it cannot land after the final message
    gate.set()
    await asyncio.wait_for(closing, timeout=5)
    await fake_slack.wait_for_calls("chat.update", 1)
    await progress.update("run_p", REVIEW)
    await progress.update("run_p", PLANNING)
    await asyncio.sleep(0.05)  # a negative: no edit is sent after close(), however long one waits (interval 0 here)
    assert len(fake_slack.calls_of("chat.update")) == 1


async def test_placeholder_failure_means_no_edits(fake_slack: FakeSlack, client: AsyncWebClient) -> None:
    """If the placeholder cannot be posted, updates are dropped quietly (the final message is posted instead)."""
    fake_slack.fail("chat.postMessage", "not_in_channel")
    progress = SlackProgress(client, "C1", "1.0", min_interval_s=0.0)
    await progress.start()
    assert progress.ts is None
    await progress.update("run_p", ROUTING)
    await progress.close()
    assert fake_slack.calls_of("chat.update") == []


class _BrokenNetworkClient(AsyncWebClient):
    """A Web API client whose placeholder works but whose edits die on the network (after the SDK's own retries)."""

    def __init__(self, fake: FakeSlack, fail_post: bool = False) -> None:
        super().__init__(token="xoxb-test", base_url=fake.api_url)
        self.fail_post = fail_post
        self.gate = asyncio.Event()
        self.in_flight = asyncio.Event()

    async def chat_postMessage(self, **kwargs: Any) -> Any:
        if self.fail_post:
            raise aiohttp.ClientConnectionError("connection refused")
        return await super().chat_postMessage(**kwargs)

    async def chat_update(self, **kwargs: Any) -> Any:
        if kwargs.get("metadata"):  # the final message: the network is back by then
            return await super().chat_update(**kwargs)
        self.in_flight.set()
        await self.gate.wait()
        raise aiohttp.ServerDisconnectedError()


async def test_network_error_on_edit_in_flight_does_not_break_close(fake_slack: FakeSlack) -> None:
    """A progress edit that dies on the network while close() waits for it must not propagate (the final message
    still has to be delivered after close())."""
    client = _BrokenNetworkClient(fake_slack)
    progress = SlackProgress(client, "C1", "1.0", min_interval_s=0.0)
    await progress.start()
    await progress.update("run_p", ROUTING)
    await asyncio.wait_for(client.in_flight.wait(), 5)
    closing = asyncio.create_task(progress.close())
    await asyncio.sleep(0)  # let close() run up to its wait for the edit in flight
    assert not closing.done()
    client.gate.set()
    await asyncio.wait_for(closing, 5)


async def test_network_error_on_placeholder_is_not_fatal(fake_slack: FakeSlack) -> None:
    """If Slack is unreachable for the placeholder, start() logs and returns (the run goes on, the final is posted)."""
    progress = SlackProgress(_BrokenNetworkClient(fake_slack, fail_post=True), "C1", "1.0", min_interval_s=0.0)
    await progress.start()
    assert progress.ts is None
    await progress.close()


async def test_turn_delivers_final_message_when_a_progress_edit_dies(fake_slack: FakeSlack) -> None:
    """End of a turn: a progress edit lost to the network does not cost the user the final report."""
    client = _BrokenNetworkClient(fake_slack)
    chat = FakeChat(delay_s=0.3)
    runner = runner_for(chat, client, progress_interval_s=0.0)
    task = runner.start(SessionKey(team="T1", channel="C1", thread_ts="1.0"), "why?", "U1", "1.0")
    await asyncio.wait_for(client.in_flight.wait(), 5)
    await asyncio.wait_for(chat.finished.wait(), 5)  # the run has returned: the turn's close() waits for the edit
    assert fake_slack.finals("C1", "1.0") == []
    client.gate.set()
    await asyncio.wait_for(task, 5)
    [final] = fake_slack.finals("C1", "1.0")
    assert final["metadata"]["event_payload"]["outcome"] == "SUCCESS"
    assert len(fake_slack.thread("C1", "1.0")) == 1  # the placeholder became the answer


async def test_cancelled_turn_stops_progress_edits(fake_slack: FakeSlack, client: AsyncWebClient) -> None:
    """A turn cancelled at shutdown stops its progress task too (no edits from an orphaned task afterwards)."""
    chat = FakeChat(delay_s=30)
    runner = runner_for(chat, client, progress_interval_s=0.05)
    runner.start(SessionKey(team="T1", channel="C1", thread_ts="2.0"), "why?", "U1", "2.0")
    await asyncio.wait_for(chat.started.wait(), 5)
    await runner.aclose(timeout_s=0.0)
    before = len(fake_slack.calls_of("chat.update"))
    tasks = [t for t in asyncio.all_tasks() if t.get_coro().__qualname__.startswith("SlackProgress")]  # type: ignore[union-attr]
    assert tasks == []
    await asyncio.sleep(0.2)  # a negative: four progress intervals pass without an edit from an orphaned task
    assert len(fake_slack.calls_of("chat.update")) == before


async def test_turn_cancelled_at_shutdown_replaces_placeholder_with_a_final_note(
    fake_slack: FakeSlack, client: AsyncWebClient
) -> None:
    """Shutdown cancels a run still going after the grace period: the thread is told (with the run metadata) instead
    of keeping "Looking into it…" forever."""
    chat = FakeChat(delay_s=30)
    runner = runner_for(chat, client, progress_interval_s=0.05)
    runner.start(SessionKey(team="T1", channel="C1", thread_ts="3.0"), "why?", "U1", "3.0")
    await asyncio.wait_for(chat.started.wait(), 5)
    await asyncio.wait_for(runner.aclose(timeout_s=0.0), 10)
    final = fake_slack.calls_of("chat.update")[-1].params
    assert final["metadata"]["event_payload"] == {"run_id": "run_1", "intent": None, "outcome": "FAILURE",
                                                  "fallback_type": None}
    assert "restart" in final["text"]
    assert fake_slack.messages[("C1", final["ts"])]["text"] == final["text"]
