"""DMs and the assistant container: greeting and suggested prompts, title and status, turns answered in the thread."""

from __future__ import annotations

from typing import Any

from tests.bot.conftest import Harness
from tests.bot.slack_requests import message


def thread_started(channel: str = "D1", thread_ts: str = "50.0", user: str = "U1") -> dict[str, Any]:
    """An assistant_thread_started event as Slack sends it when a user opens the assistant container."""
    return {"type": "assistant_thread_started", "event_ts": "50.1",
            "assistant_thread": {"user_id": user, "channel_id": channel, "thread_ts": thread_ts,
                                 "context": {"channel_id": "C1", "team_id": "T1", "enterprise_id": None}}}


def im(text: str, *, ts: str, thread_ts: str | None = None, user: str = "U1") -> dict[str, Any]:
    """A message event in the DM channel D1 (in an assistant thread when thread_ts is set)."""
    return message(text, ts=ts, thread_ts=thread_ts, user=user, channel="D1", channel_type="im")


async def test_new_assistant_thread_gets_a_greeting_and_suggested_prompts(harness: Harness) -> None:
    """Opening the container: one greeting in the thread and 1..4 suggested prompts for it."""
    await harness.send.event(thread_started())
    await harness.settle()
    [greeting] = harness.slack.calls_of("chat.postMessage")
    assert (greeting.params["channel"], greeting.params["thread_ts"]) == ("D1", "50.0")
    [prompts] = harness.slack.suggested_prompts
    assert prompts["channel_id"] == "D1"
    assert 1 <= len(prompts["prompts"]) <= 4
    assert harness.chat.turns == []


async def test_question_in_an_assistant_thread_is_a_turn_with_title_and_status(harness: Harness) -> None:
    """A user message in the assistant thread runs a turn of that thread's session, titled after the question, with
    a working status, and the final message lands in the thread; a second message is a follow-up of the session."""
    await harness.send.event(im("why is order-service failing since 23:00?", ts="50.2", thread_ts="50.0"))
    await harness.settle()
    [turn] = harness.chat.turns
    assert turn.session.as_str() == "T1:D1:50.0"
    assert harness.slack.titles[0]["title"] == "why is order-service failing since 23:00?"
    assert harness.slack.statuses[0]["status"].startswith("is checking")
    [final] = harness.slack.finals("D1", "50.0")
    assert final["metadata"]["event_payload"]["outcome"] == "SUCCESS"
    await harness.send.event(im("and payment-service?", ts="50.3", thread_ts="50.0"))
    await harness.settle()
    assert [t.session.as_str() for t in harness.chat.turns] == ["T1:D1:50.0", "T1:D1:50.0"]
    assert len(harness.slack.finals("D1", "50.0")) == 2


async def test_top_level_dm_is_answered_in_a_thread_under_it(harness: Harness) -> None:
    """A new DM (outside an assistant thread) starts a session answered in a thread under the message, once."""
    event = im("why is payment-service slow?", ts="60.0")
    await harness.send.event(event)
    await harness.send.event(event, retry_num=1)  # Slack's retry of the same delivery
    await harness.settle()
    [turn] = harness.chat.turns
    assert turn.session.as_str() == "T1:D1:60.0"
    assert len(harness.slack.finals("D1", "60.0")) == 1


async def test_stop_in_an_assistant_thread_cancels_without_a_title(harness: Harness) -> None:
    """'stop' in the thread is a cancel (no new turn, no title change)."""
    await harness.send.event(im("stop", ts="70.1", thread_ts="70.0"))
    await harness.settle()
    assert harness.chat.turns == []
    assert harness.chat.cancel_calls == ["T1:D1:70.0"]
    assert harness.slack.titles == []


async def test_bot_messages_in_dms_are_ignored(harness: Harness) -> None:
    """The bot's own (or another bot's) DM messages never start turns."""
    await harness.send.event(im("I am a bot", ts="80.0") | {"bot_id": "B2"})
    await harness.send.event(im("thread bot", ts="80.2", thread_ts="80.0") | {"bot_id": "B2"})
    await harness.settle()
    assert harness.chat.turns == []
