"""Events over signed HTTP: mentions, follow-ups, ignored messages, retries, double delivery, stop."""

from __future__ import annotations

import asyncio
import json

from core.contracts.release import FallbackMessage, Outcome, ReleaseOutcome
from tests.bot.conftest import Harness
from tests.bot.slack_requests import mention, message


async def test_mention_posts_placeholder_then_final_message_with_metadata(harness: Harness) -> None:
    """@bot question -> placeholder in a thread under the mention, replaced by the report with run metadata."""
    status, _ = await harness.send.event(mention(ts="100.1"))
    assert status == 200
    await harness.settle()
    [turn] = harness.chat.turns
    assert turn.text == "why is order-service failing?"
    assert (turn.session.team, turn.session.channel, turn.session.thread_ts, turn.message_ts) == ("T1", "C1", "100.1", "100.1")
    [post] = harness.slack.calls_of("chat.postMessage")
    assert post.params["thread_ts"] == "100.1"
    assert post.params["text"].startswith("Looking into it")
    final = harness.slack.calls_of("chat.update")[-1].params
    assert final["ts"] == harness.slack.messages[("C1", final["ts"])]["ts"]
    assert final["metadata"] == {"event_type": "diag_run_finished", "event_payload": {
        "run_id": "run_1", "intent": "DIAGNOSIS", "outcome": "SUCCESS", "fallback_type": None}}
    assert "DB connection timeouts" in final["text"]
    assert any(b["type"] == "actions" and b["elements"][0]["value"] == "run_1" for b in final["blocks"])


async def test_progress_edit_shows_run_id_and_tool(harness: Harness) -> None:
    """While the run works, the placeholder is edited to show the run id and the tool that ran."""
    harness.chat.hang = True  # the run stays in its tool phase until the edit is seen (no race with the throttle)

    def edited() -> bool:
        texts = [str(c.params.get("blocks")) for c in harness.slack.calls_of("chat.update")]
        return any("`run_1`" in t and "Logs · order-service \"timeout\" — 37 matching lines" in t for t in texts)

    await harness.send.event(mention(ts="100.2"))
    await harness.slack.wait_until(edited, timeout_s=10, message="a progress edit with the run id and the tool")
    harness.chat.unstick.set()
    await harness.settle()


async def test_mention_inside_thread_replies_in_that_thread(harness: Harness) -> None:
    """A mention in an existing thread keeps the thread's ts as the session."""
    await harness.send.event(mention(ts="100.5", thread_ts="100.0"))
    await harness.settle()
    assert harness.chat.turns[0].session.thread_ts == "100.0"
    assert harness.slack.calls_of("chat.postMessage")[0].params["thread_ts"] == "100.0"


async def test_reply_in_bot_thread_is_follow_up_without_mention(harness: Harness) -> None:
    """A human reply in a thread where the bot has a session starts a turn; one in another thread does not."""
    await harness.send.event(mention(ts="200.0"))
    await harness.settle()
    await harness.send.event(message("and the payment-service?", ts="200.5", thread_ts="200.0"))
    await harness.send.event(message("unrelated thread", ts="300.5", thread_ts="300.0"))
    await harness.settle()
    assert [t.text for t in harness.chat.turns] == ["why is order-service failing?", "and the payment-service?"]
    assert harness.chat.turns[1].session.thread_ts == "200.0"


async def test_ignores_own_and_bot_messages_edits_joins_and_top_level(harness: Harness) -> None:
    """Bot messages, this bot's own replies, subtypes and top-level chatter never start a turn."""
    await harness.send.event(mention(ts="400.0"))
    await harness.settle()
    ignored = [
        message("from me", ts="400.1", thread_ts="400.0", user="UBOT", bot_id="BBOT"),
        message("other bot", ts="400.2", thread_ts="400.0", user="UOTHER", bot_id="B2"),
        message("bot message", ts="400.3", thread_ts="400.0", user=None, subtype="bot_message", bot_id="B2"),
        message("", ts="400.4", thread_ts="400.0", subtype="message_changed",
                message={"text": "edited", "ts": "400.0"}),
        message("", ts="400.5", thread_ts="400.0", subtype="message_deleted"),
        message("joined", ts="400.6", subtype="channel_join"),
        message("top-level chatter", ts="400.7"),
        message("bot broadcast", ts="400.8", thread_ts="400.0", subtype="thread_broadcast", bot_id="B2"),
        message("", ts="400.9", subtype="message_replied", message={"thread_ts": "400.0"}),
    ]
    for ev in ignored:
        status, _ = await harness.send.event(ev)
        assert status == 200
    await harness.send.event(mention(ts="401.0"))  # a sentinel sent after them: once it is answered, they were decided
    await harness.slack.wait_until(lambda: bool(harness.slack.finals("C1", "401.0")), message="the sentinel's answer")
    await harness.settle()
    assert [t.message_ts for t in harness.chat.turns] == ["400.0", "401.0"]


async def test_retries_with_same_event_id_give_one_run_and_one_answer(harness: Harness) -> None:
    """Slack's retries (same event_id, X-Slack-Retry-Num) are acked but start nothing new."""
    for retry in (None, 1, 2):
        status, _ = await harness.send.event(mention(ts="500.0"), event_id="EvSAME", retry_num=retry)
        assert status == 200
    await harness.settle()
    assert len(harness.chat.turns) == 1
    assert len(harness.slack.calls_of("chat.postMessage")) == 1
    finals = [c for c in harness.slack.calls_of("chat.update") if c.params.get("metadata")]
    assert len(finals) == 1


async def test_mention_delivered_as_app_mention_and_message_gives_one_run(harness: Harness) -> None:
    """A mention inside a bot thread arrives twice (different event_ids): one run, one answer."""
    await harness.send.event(mention(ts="600.0"))
    await harness.settle()
    text = "<@UBOT> and now?"
    await asyncio.gather(
        harness.send.event(mention(text, ts="600.5", thread_ts="600.0")),
        harness.send.event(message(text, ts="600.5", thread_ts="600.0")),
    )
    await harness.settle()
    assert [t.message_ts for t in harness.chat.turns] == ["600.0", "600.5"]


async def test_same_message_ts_under_two_event_ids_is_one_run(harness: Harness) -> None:
    """Dedup on (channel, ts) holds even when the mention filter cannot tell (no mention text in the copy)."""
    await harness.send.event(mention(ts="650.0"))
    await harness.settle()
    await harness.send.event(mention("<@UBOT> again", ts="650.5", thread_ts="650.0"))
    await harness.send.event(message("again", ts="650.5", thread_ts="650.0"))
    await harness.settle()
    assert len(harness.chat.turns) == 2


async def test_stop_reply_cancels_the_active_run_and_confirms(harness: Harness) -> None:
    """A 'stop' reply cancels the thread's running run, confirms in the thread, and the run ends as cancelled."""
    harness.chat.delay_s = 30
    await harness.send.event(mention(ts="700.0"))
    await asyncio.wait_for(harness.chat.started.wait(), 5)
    await harness.send.event(message("stop", ts="700.5", thread_ts="700.0"))
    await harness.settle()
    assert harness.chat.cancel_calls == ["T1:C1:700.0"]
    texts = [c.params["text"] for c in harness.slack.calls_of("chat.postMessage")]
    assert "Stopping the current run." in texts
    final = harness.slack.calls_of("chat.update")[-1].params
    assert final["metadata"]["event_payload"]["outcome"] == "FAILURE"
    assert len(harness.chat.turns) == 1


async def test_stop_with_mention_and_nothing_running_says_so(harness: Harness) -> None:
    """'@bot cancel' when no run is active answers that nothing is running and starts no turn."""
    await harness.send.event(mention("<@UBOT> cancel", ts="800.0"))
    await harness.settle()
    assert harness.chat.turns == []
    assert harness.slack.calls_of("chat.postMessage")[0].params["text"] == "Nothing is running in this thread."


async def test_run_crash_replaces_placeholder_with_short_error(harness: Harness) -> None:
    """If the core raises, the thread gets a short error, never a stack trace."""
    harness.chat.fail_with = RuntimeError("secret internals")
    await harness.send.event(mention(ts="900.0"))
    await harness.settle()
    final = harness.slack.calls_of("chat.update")[-1].params
    assert "stopped without a result" in final["text"]
    assert "secret internals" not in str(harness.slack.calls)


async def test_user_text_echoed_back_cannot_ping_or_link(harness: Harness) -> None:
    """A question with <!channel>, a user mention and a link, echoed back by the core (chat text, fallback reason), is
    escaped in every message: the text summary, the blocks and the progress edits."""
    nasty = "<!channel> <@U2> <https://evil.example|click> & why?"

    def echo(run_id: str) -> ReleaseOutcome:
        return ReleaseOutcome(run_id=run_id, intent="CHAT", outcome=Outcome.SUCCESS, chat_text=f"You asked: {nasty}")

    harness.chat.make_outcome = echo
    await harness.send.event(mention(f"<@UBOT> {nasty}", ts="950.0"))
    await harness.settle()
    assert harness.chat.turns[0].text == nasty
    final = harness.slack.calls_of("chat.update")[-1].params
    assert final["metadata"]["event_payload"]["intent"] == "CHAT"
    sent = json.dumps([c.params for c in harness.slack.calls if c.method.startswith("chat.")])
    for raw in ("<!channel>", "<@U2>", "<https://evil.example"):
        assert raw not in sent
    assert "&lt;!channel&gt; &lt;@U2&gt; &lt;https://evil.example|click&gt; &amp; why?" in final["text"]

    def fallback(run_id: str) -> ReleaseOutcome:
        return ReleaseOutcome(run_id=run_id, outcome=Outcome.FAILURE,
                              fallback=FallbackMessage(stage=f"routing {nasty}", reason=nasty))

    harness.chat.make_outcome = fallback
    await harness.send.event(mention(f"<@UBOT> {nasty}", ts="951.0"))
    await harness.settle()
    sent = json.dumps([c.params for c in harness.slack.calls if c.method.startswith("chat.")])
    assert "<!channel>" not in sent
    assert "<@U2>" not in sent


async def test_human_reply_sent_to_channel_too_or_with_a_file_is_a_follow_up(harness: Harness) -> None:
    """A reply with "Also send to channel" (thread_broadcast) or with an attachment (file_share) is still the user's
    reply in the thread: it is a follow-up, not something to drop silently."""
    await harness.send.event(mention(ts="460.0"))
    await harness.settle()
    await harness.send.event(message("and payment-service?", ts="460.1", thread_ts="460.0", subtype="thread_broadcast"))
    await harness.settle()
    await harness.send.event(message("here is the stack trace", ts="460.2", thread_ts="460.0", subtype="file_share",
                                     files=[{"id": "F1"}]))
    await harness.settle()
    assert [t.text for t in harness.chat.turns[1:]] == ["and payment-service?", "here is the stack trace"]
    assert all(t.session.thread_ts == "460.0" for t in harness.chat.turns)
