"""Slack API faults: 429 retried honouring Retry-After, refused reports replaced by a short note, oversized reports fit."""

from __future__ import annotations

from tests.bot.conftest import Harness
from tests.bot.oversized import max_outcome
from tests.bot.slack_requests import mention


async def test_rate_limited_post_is_retried_after_retry_after(harness: Harness) -> None:
    """A 429 with Retry-After on chat.postMessage is retried by the SDK handler and the placeholder lands."""
    harness.slack.fail("chat.postMessage", "ratelimited", status=429, retry_after=1)
    await harness.send.event(mention(ts="20.0"))
    await harness.settle()
    posts = harness.slack.calls_of("chat.postMessage")
    assert len(posts) == 2
    assert posts[0].params == posts[1].params
    assert harness.slack.calls_of("chat.update")[-1].params["metadata"]["event_type"] == "diag_run_finished"


async def test_refused_report_becomes_short_thread_message(harness: Harness) -> None:
    """When Slack refuses the report (invalid_blocks), the thread gets a short note pointing at /diag trace."""
    harness.slack.fail("chat.update", "invalid_blocks", times=10)
    await harness.send.event(mention(ts="21.0"))
    await harness.settle()
    note = harness.slack.calls_of("chat.postMessage")[-1].params
    assert note["text"] == "I couldn't post the full report (invalid_blocks); see /diag trace run_1"
    assert note["thread_ts"] == "21.0"
    assert note["metadata"]["event_payload"]["run_id"] == "run_1"


async def test_failed_update_falls_back_to_posting_the_report(harness: Harness) -> None:
    """If the placeholder cannot be edited (message_not_found), the full report is posted in the thread instead."""
    harness.slack.fail("chat.update", "message_not_found", times=10)
    await harness.send.event(mention(ts="22.0"))
    await harness.settle()
    final = harness.slack.calls_of("chat.postMessage")[-1].params
    assert final["thread_ts"] == "22.0"
    assert final["metadata"]["event_payload"]["outcome"] == "SUCCESS"
    assert any(b["type"] == "header" for b in final["blocks"])


async def test_oversized_report_fits_and_fake_slack_accepts_it(harness: Harness) -> None:
    """A report with every schema cap reached is truncated with a marker and accepted by Slack's block checks."""
    harness.chat.make_outcome = max_outcome
    await harness.send.event(mention(ts="23.0"))
    await harness.settle()
    final = harness.slack.calls_of("chat.update")[-1].params
    assert final["metadata"]["event_payload"]["outcome"] == "SUCCESS"
    assert "…shortened to fit Slack's message limits" in str(final["blocks"])
    assert harness.slack.messages[("C1", final["ts"])]["blocks"] == final["blocks"]
    assert "<!channel>" not in str(final["blocks"])
    assert "&lt;!channel&gt;" in str(final["blocks"])
    assert not any("couldn't post" in c.params.get("text", "") for c in harness.slack.calls_of("chat.postMessage"))


async def test_refused_report_replaces_the_placeholder_with_the_note(harness: Harness) -> None:
    """When Slack refuses the report's blocks, the note replaces the placeholder, so no "Looking into it…" is left."""
    harness.slack.fail("chat.update", "invalid_blocks")  # only the final report's update is refused
    harness.chat.delay_s = 0.0
    await harness.send.event(mention(ts="24.0"))
    await harness.settle()
    [placeholder] = harness.slack.calls_of("chat.postMessage")
    ts = harness.slack.calls_of("chat.update")[-1].params["ts"]
    stored = harness.slack.messages[("C1", ts)]
    assert stored["thread_ts"] == "24.0"
    assert stored["text"] == "I couldn't post the full report (invalid_blocks); see /diag trace run_1"
    assert stored["metadata"]["event_payload"]["run_id"] == "run_1"
    assert placeholder.params["text"].startswith("Looking into it")


async def test_run_crash_final_message_carries_metadata_and_replaces_placeholder(harness: Harness) -> None:
    """An internal error still ends the turn like every other: placeholder replaced, plain text, run metadata."""
    harness.chat.fail_with = RuntimeError("secret internals")
    await harness.send.event(mention(ts="25.0"))
    await harness.settle()
    final = harness.slack.calls_of("chat.update")[-1].params
    assert final["metadata"] == {"event_type": "diag_run_finished", "event_payload": {
        "run_id": "run_1", "intent": None, "outcome": "FAILURE", "fallback_type": None}}
    assert "stopped without a result" in final["text"]
    assert "stopped without a result" in final["blocks"][0]["text"]["text"]
    assert len(harness.slack.calls_of("chat.postMessage")) == 1


async def test_run_crash_with_placeholder_gone_posts_the_error_instead(harness: Harness) -> None:
    """If the placeholder cannot be edited after a crash, the short error is posted in the thread (with metadata)."""
    harness.chat.fail_with = RuntimeError("secret internals")
    harness.slack.fail("chat.update", "message_not_found", times=10)
    await harness.send.event(mention(ts="26.0"))
    await harness.settle()
    final = harness.slack.calls_of("chat.postMessage")[-1].params
    assert final["thread_ts"] == "26.0"
    assert "stopped without a result" in final["text"]
    assert final["metadata"]["event_payload"]["outcome"] == "FAILURE"
    assert "secret internals" not in str(harness.slack.calls)


async def test_rate_limited_progress_edit_does_not_delay_the_final_report(harness: Harness) -> None:
    """A 429 on a progress edit drops that edit (the next edit or the final carries the state) instead of holding
    the final report behind Retry-After sleeps; the final still replaces the placeholder."""
    harness.slack.fail("chat.update", "ratelimited", status=429, retry_after=60)
    harness.chat.delay_s = 0.3
    await harness.send.event(mention(ts="27.0"))
    # Held behind Retry-After the final would need a minute; it arrives well inside the wait (no timed assertion).
    metadata = await harness.slack.wait_for_metadata(timeout_s=20)
    assert metadata["event_payload"]["outcome"] == "SUCCESS"
    await harness.settle()
    final = harness.slack.calls_of("chat.update")[-1].params
    assert final["metadata"] == metadata
    assert harness.slack.messages[("C1", final["ts"])]["metadata"] == metadata
