"""Fault injection through the real HTTP app and the fake Slack: every fault the bot can survive ends in exactly one
visible final message and no stale placeholder; the ones it cannot (the channel is gone) are logged with the channel
and the reason."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from tests.bot.conftest import Harness
from tests.bot.slack_requests import mention
from tests.fakes import slack_faults as faults
from tests.fakes.slack_faults import Injected

BODIES = {
    "text_500": faults.text(500),
    "text_200": faults.text(200),
    "html_502": faults.html(502),
    "html_200": faults.html(200),
    "bad_json_500": faults.bad_json(500),
    "bad_json_200": faults.bad_json(200),
    "empty_500": faults.empty(500),
    "empty_200": faults.empty(200),
    "reset": faults.reset(),
    "json_500": faults.json_error("internal_error", 500),
    "json_503": faults.json_error("service_unavailable", 503),
    "ratelimited_429": faults.ratelimited(0),
    "ratelimited_200": faults.json_error("ratelimited"),
}
# One of each shape, for the slower paths (progress edits, the placeholder with the SDK's own retries).
SHAPES = {k: BODIES[k] for k in ("text_500", "html_200", "empty_500", "reset", "ratelimited_429")}
# Documented chat.update errors after which the answer can still be shown (as a new message, or as the short note).
UPDATE_CODES = ["message_not_found", "cant_update_message", "edit_window_closed", "not_in_channel", "is_inactive",
                "update_failed", "fatal_error", "request_timeout", "invalid_blocks", "msg_too_long", "no_text",
                "msg_blocks_too_long", "invalid_metadata_format", "metadata_too_large", "too_many_attachments"]
# Documented chat.postMessage errors the final post may meet once, after which Slack answers again.
POST_CODES = ["internal_error", "fatal_error", "service_unavailable", "request_timeout", "ratelimited", "invalid_blocks",
              "msg_too_long", "msg_blocks_too_long", "invalid_metadata_format", "metadata_too_large"]


def assert_one_answer(h: Harness, thread_ts: str, outcome: str = "SUCCESS") -> dict[str, Any]:
    """Exactly one visible final message in the thread, and nothing else there (no placeholder left behind)."""
    thread = h.slack.thread("C1", thread_ts)
    finals = h.slack.finals("C1", thread_ts)
    assert len(finals) == 1, [m.get("text") for m in thread]
    assert finals[0]["metadata"]["event_payload"]["outcome"] == outcome
    assert [m.get("text") for m in thread] == [finals[0].get("text")], "a stale placeholder or a second answer"
    return finals[0]


@pytest.mark.parametrize("fault", list(BODIES.values()), ids=list(BODIES))
async def test_final_update_failing_with_any_body_posts_the_answer_and_removes_the_placeholder(
        harness: Harness, fault: Injected) -> None:
    """chat.update keeps failing (every body Slack or a proxy can send): the answer is posted, the placeholder deleted."""
    harness.slack.plan.inject("chat.update", fault, times=None)
    await harness.send.event(mention(ts="30.0"))
    await harness.settle()
    final = assert_one_answer(harness, "30.0")
    assert any(b["type"] == "header" for b in final["blocks"])  # the full report, not a note
    assert len(harness.slack.deleted) == 1


@pytest.mark.parametrize("fault", list(BODIES.values()), ids=list(BODIES))
async def test_transient_final_update_failure_is_retried_in_place(harness: Harness, fault: Injected) -> None:
    """One failed final edit (any body) is retried on the same message: the placeholder becomes the answer."""
    harness.chat.delay_s = 0.0
    harness.slack.plan.inject("chat.update", fault, times=1, when=faults.final_message)
    await harness.send.event(mention(ts="31.0"))
    await harness.settle()
    assert_one_answer(harness, "31.0")
    assert harness.slack.deleted == []
    assert len(harness.slack.calls_of("chat.postMessage")) == 1  # only the placeholder was ever posted


@pytest.mark.parametrize("code", UPDATE_CODES)
async def test_documented_update_errors_leave_one_answer(harness: Harness, code: str) -> None:
    """Each documented chat.update error, on every edit: one answer (report or short note), no placeholder."""
    harness.slack.plan.inject("chat.update", faults.json_error(code), times=None)
    await harness.send.event(mention(ts="32.0"))
    await harness.settle()
    final = assert_one_answer(harness, "32.0")
    if code in {"invalid_blocks", "msg_too_long", "no_text", "msg_blocks_too_long", "invalid_metadata_format",
                "metadata_too_large", "too_many_attachments"}:
        assert final["text"] == f"I couldn't post the full report ({code}); see /diag trace run_1"


@pytest.mark.parametrize("code", POST_CODES)
async def test_documented_post_errors_on_the_fallback_post_leave_one_answer(harness: Harness, code: str) -> None:
    """The placeholder is gone and the first post of the answer meets a documented error: still one answer."""
    harness.slack.plan.inject("chat.update", faults.json_error("message_not_found"), times=None)
    harness.slack.plan.inject("chat.postMessage", faults.json_error(code), calls={2})  # call 1 is the placeholder
    await harness.send.event(mention(ts="33.0"))
    await harness.settle()
    assert_one_answer(harness, "33.0")


@pytest.mark.parametrize("fault", list(SHAPES.values()), ids=list(SHAPES))
async def test_failing_progress_edits_never_end_the_turn(harness: Harness, fault: Injected) -> None:
    """Progress edits failing with any body are dropped; the final edit still turns the placeholder into the answer."""
    harness.chat.delay_s = 0.3
    harness.slack.plan.inject("chat.update", fault, calls={1, 2})  # the progress edits, not the final one
    await harness.send.event(mention(ts="34.0"))
    await harness.settle()
    assert_one_answer(harness, "34.0")
    assert harness.slack.deleted == []


@pytest.mark.parametrize("fault", [BODIES["text_500"], BODIES["html_200"], BODIES["reset"]],
                         ids=["text_500", "html_200", "reset"])
async def test_placeholder_that_cannot_be_posted_does_not_stop_the_turn(harness: Harness, fault: Injected) -> None:
    """The placeholder post fails with any body (the SDK's retries included): the run still runs and posts its answer."""
    harness.slack.plan.inject("chat.postMessage", fault, calls={1, 2, 3, 4})
    await harness.send.event(mention(ts="35.0"))
    await harness.settle(timeout_s=20)
    assert_one_answer(harness, "35.0")
    assert harness.chat.turns


async def test_answer_arrives_when_slack_comes_back(harness: Harness) -> None:
    """Slack's chat methods fail for ~3 s (placeholder and final alike): the answer lands once they are back."""
    harness.slack.plan.inject("chat.postMessage", faults.text(503), times=None)
    harness.slack.plan.inject("chat.update", faults.text(503), times=None)
    await harness.send.event(mention(ts="36.0"))
    await asyncio.sleep(3.0)  # the outage itself: longer than every retry budget but the final message's
    await harness.slack.wait_until(lambda: any(c.params.get("metadata") for c in harness.slack.calls), timeout_s=15,
                                   message="an attempt at the final message during the outage")
    assert harness.slack.finals("C1", "36.0") == []
    harness.slack.plan.clear()
    await harness.settle(timeout_s=20)
    assert_one_answer(harness, "36.0")


async def test_channel_not_found_is_logged_with_the_channel_and_the_reason(
        harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    """Nothing can reach a channel Slack does not know: nothing is shown, and the log says where and why."""
    harness.slack.plan.inject("chat.postMessage", faults.json_error("channel_not_found"), times=None)
    with caplog.at_level(logging.WARNING):
        await harness.send.event(mention(ts="37.0"))
        await harness.settle()
    assert harness.slack.thread("C1", "37.0") == []
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("not delivered in channel C1: channel_not_found" in m for m in errors), errors
    assert len(harness.slack.calls_of("chat.postMessage")) == 2  # placeholder once, final once: no hammering


async def test_placeholder_that_cannot_be_deleted_is_neutralised(harness: Harness) -> None:
    """The answer had to be posted below and chat.delete fails too: the placeholder becomes a pointer without metadata."""
    harness.slack.plan.inject("chat.update", faults.json_error("internal_error", 500), times=None,
                              when=faults.final_message)
    harness.slack.plan.inject("chat.delete", faults.json_error("cant_delete_message"), times=None)
    harness.chat.delay_s = 0.0
    await harness.send.event(mention(ts="38.0"))
    await harness.settle()
    thread = harness.slack.thread("C1", "38.0")
    assert len(harness.slack.finals("C1", "38.0")) == 1
    assert [m["text"] for m in thread if not m.get("metadata")] == ["The answer is in the next message."]
