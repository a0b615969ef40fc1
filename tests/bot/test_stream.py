"""StreamProgress against the fake Slack: tasks appended as they change, closed on stop, fallbacks when refused."""

from __future__ import annotations

import logging

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.stream import StreamProgress
from core.contracts.evidence import EvidenceStatus
from core.contracts.progress import ProgressStage, ProgressUpdate, ToolProgress
from tests.fakes.slack_server import FakeSlack
from tests.waiting import until


@pytest.fixture
def client(fake_slack: FakeSlack) -> AsyncWebClient:
    return AsyncWebClient(token="xoxb-test", base_url=fake_slack.api_url)


def _tool(stage: ProgressStage, status: EvidenceStatus | None = None) -> ProgressUpdate:
    return ProgressUpdate(stage=stage, tool=ToolProgress(tool_call_id="call_a", tool="query_logs",
                                                         subject='order-service "timeout"', evidence_status=status,
                                                         count=None if status is None else 3))


async def _progress(client: AsyncWebClient) -> StreamProgress:
    progress = StreamProgress(client, "C1", "9.0", user="U1", team="T1", min_interval_s=0.0)
    await progress.start()
    return progress


async def test_a_running_task_is_closed_complete_when_the_stream_stops(fake_slack: FakeSlack,
                                                                       client: AsyncWebClient) -> None:
    """A tool still running at close() is sent as complete in chat.stopStream; the stream is then no longer live."""
    progress = await _progress(client)
    await progress.update("run_s", _tool(ProgressStage.TOOL_STARTED))
    await fake_slack.wait_for_call("chat.appendStream")
    await progress.close()
    [stop] = fake_slack.calls_of("chat.stopStream")
    assert [(c["id"], c["status"]) for c in stop.params["chunks"] if c["type"] == "task_update"] == [("t1", "complete")]
    assert progress.ts is not None
    assert not fake_slack.streams[("C1", progress.ts)].streaming


async def test_a_stream_slack_closed_stops_appending_for_the_rest_of_the_turn(
        fake_slack: FakeSlack, client: AsyncWebClient, caplog: pytest.LogCaptureFixture) -> None:
    """After message_not_in_streaming_state no further append or stop is sent; the final still targets that ts."""
    progress = await _progress(client)
    fake_slack.fail("chat.appendStream", "message_not_in_streaming_state")
    with caplog.at_level(logging.WARNING, logger="bot.stream"):
        await progress.update("run_s", _tool(ProgressStage.TOOL_STARTED))
        await until(lambda: "message_not_in_streaming_state" in caplog.text, message="the refused append to be handled")
    await progress.update("run_s", _tool(ProgressStage.TOOL_FINISHED, EvidenceStatus.EVIDENCE_FOUND))
    await progress.close()
    assert len(fake_slack.calls_of("chat.appendStream")) == 1
    assert fake_slack.calls_of("chat.stopStream") == []
    assert progress.ts is not None


async def test_refused_stream_posts_the_placeholder_instead(fake_slack: FakeSlack, client: AsyncWebClient) -> None:
    """missing_scope on chat.startStream: the placeholder is posted and edited like before."""
    fake_slack.fail("chat.startStream", "missing_scope")
    progress = await _progress(client)
    assert fake_slack.streams == {}
    assert progress.ts is not None
    assert fake_slack.messages[("C1", progress.ts)]["text"] == "Looking into it…"  # the final replaces the placeholder
    await progress.close()
