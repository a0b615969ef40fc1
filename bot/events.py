"""Events API listeners: @mentions start turns, thread replies are follow-ups, "stop"/"cancel" cancels.

Event listeners are acked by Bolt before they run; the listener only filters, dedupes and schedules.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.alert_messages import alert_text, app_of, is_foreign_app_message
from bot.delivery import post_in_thread
from bot.deps import BotDeps
from bot.render.message import SlackMessage
from bot.render.mrkdwn import section
from bot.slack_errors import error_code
from core.contracts.run import SessionKey

log = logging.getLogger(__name__)

_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
STOP_WORDS = frozenset({"stop", "cancel"})
# Subtypes that are still a person writing a new message (a reply also sent to the channel, one with a file);
# every other subtype is an edit, deletion, join, bot message or Slack's hidden bookkeeping (message_replied).
HUMAN_SUBTYPES = frozenset({"thread_broadcast", "file_share"})


def is_human_message(event: dict[str, Any]) -> bool:
    """A new message written by a person (not a bot, not an edit/deletion/join)."""
    if event.get("bot_id") or event.get("bot_profile"):
        return False
    subtype = event.get("subtype")
    return not subtype or subtype in HUMAN_SUBTYPES


def strip_mention(text: str, bot_user_id: str | None) -> str:
    """The question without the bot's own mention."""
    if bot_user_id:
        text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", "", text)
    return text.strip()


def is_stop(text: str) -> bool:
    """True for a bare 'stop' / 'cancel' reply (mentions and trailing punctuation ignored)."""
    words = _MENTION.sub("", text).strip().lower().rstrip(".!")
    return words in STOP_WORDS


def is_follow_up_candidate(event: dict[str, Any], bot_user_id: str | None) -> bool:
    """A human reply inside a thread, not an edit/join/bot message, and not a mention (app_mention takes those)."""
    if not is_human_message(event):
        return False
    user = event.get("user")
    if not user or user == bot_user_id:
        return False
    thread_ts = event.get("thread_ts")
    if not thread_ts or thread_ts == event.get("ts"):
        return False
    return not (bot_user_id and f"<@{bot_user_id}" in (event.get("text") or ""))


def is_direct_question(event: dict[str, Any], bot_user_id: str | None) -> bool:
    """A person's new top-level message in a DM with the bot (thread replies there are the assistant's or follow-ups)."""
    return (event.get("channel_type") == "im" and not event.get("thread_ts") and is_human_message(event)
            and bool(event.get("user")) and event.get("user") != bot_user_id)


def retry_num(request: AsyncBoltRequest | None) -> int:
    """Slack's X-Slack-Retry-Num of this delivery (0 for a first delivery; Socket Mode passes retry_attempt here)."""
    if request is None:
        return 0
    values = request.headers.get("x-slack-retry-num") or ["0"]
    try:
        return max(0, int(values[0]))
    except (TypeError, ValueError):
        return 0


async def _claim(deps: BotDeps, body: dict[str, Any], channel: str, ts: str, retry: int) -> bool:
    # Both claims are taken: a retry repeats event_id; a mention in a thread comes as two events with one ts.
    first_event = await deps.dedup.claim_event(body.get("event_id"), retry)
    return first_event and await deps.dedup.claim_message(channel, ts, retry)


async def _cancel(deps: BotDeps, session: SessionKey) -> None:
    stopped = await deps.jobs.cancel_session(session.as_str())
    text = "Stopping the current run." if stopped else "Nothing is running in this thread."
    await post_in_thread(deps.client, session.channel, session.thread_ts, SlackMessage(text=text, blocks=[section(text)]))


async def refuse(deps: BotDeps, channel: str, user: str, thread_ts: str | None, why: str) -> None:
    """The one ephemeral line a refused asker sees (in the thread they asked in)."""
    log.info("asker %s refused in %s: %s", user, channel, why[:60])
    try:
        await deps.client.chat_postEphemeral(channel=channel, user=user, text=why, thread_ts=thread_ts)
    except Exception as exc:  # the refusal stands; only its explanation is lost
        log.warning("refusal not shown to %s: %s", user, error_code(exc))


async def dispatch_turn(deps: BotDeps, body: dict[str, Any], event: dict[str, Any], text: str, retry: int = 0,
                        admitted: Callable[[], Awaitable[None]] | None = None) -> None:
    """Dedupe the user message, check the access policy (DIAG_ALLOWED_CHANNELS, DIAG_DM_USERS, guests), then start
    a turn or a cancel after the ack; `admitted` runs once the asker is let in, before the turn is queued."""
    channel, ts = event.get("channel", ""), event.get("ts", "")
    team = body.get("team_id") or event.get("team") or ""
    if not channel or not ts or not await _claim(deps, body, channel, ts, retry):
        return
    user = event.get("user", "")
    if (why := await deps.gate.refusal(channel, user, event.get("channel_type"))) is not None:
        await refuse(deps, channel, user, event.get("thread_ts"), why)
        return
    if admitted is not None:
        await admitted()
    session = SessionKey(team=team, channel=channel, thread_ts=event.get("thread_ts") or ts)
    if is_stop(text):
        deps.runner.spawn(_cancel(deps, session), name=f"cancel:{channel}:{ts}")
        return
    if not text:
        text = "help"
    await deps.jobs.submit(session, text, event.get("user", ""), ts)


async def dispatch_alert(deps: BotDeps, body: dict[str, Any], event: dict[str, Any], retry: int = 0) -> None:
    """An alert app's message in a watched channel: an investigation in its thread (core/alerts/intake.py)."""
    channel, ts = event.get("channel", ""), event.get("ts", "")
    if deps.alerts is None or not channel or not ts or not await _claim(deps, body, channel, ts, retry):
        return
    bot_id, app = app_of(event)
    thread_ts = event.get("thread_ts")
    await deps.alerts.app_message(team=body.get("team_id") or event.get("team") or "", channel=channel, ts=ts,
                                  thread_ts=thread_ts if thread_ts and thread_ts != ts else None, bot_id=bot_id,
                                  app=app, text=alert_text(event))


def _watched_alert(deps: BotDeps, event: dict[str, Any], context: AsyncBoltContext) -> bool:
    if deps.alerts is None or not is_foreign_app_message(event, context.bot_id, context.bot_user_id):
        return False
    return deps.alerts.policy.watches(event.get("channel", ""), app_of(event)[0])


def register_events(app: AsyncApp, deps: BotDeps) -> None:
    """Attach the app_mention and message listeners."""

    @app.event("app_mention")
    async def on_mention(body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext,
                         request: AsyncBoltRequest) -> None:
        if not is_human_message(event):
            return
        with deps.runner.busy():
            await dispatch_turn(deps, body, event, strip_mention(event.get("text") or "", context.bot_user_id),
                                retry_num(request))

    @app.event("message")
    async def on_message(body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext,
                         request: AsyncBoltRequest) -> None:
        if _watched_alert(deps, event, context):  # another app's alert in a DIAG_ALERT_SOURCES channel
            with deps.runner.busy():
                await dispatch_alert(deps, body, event, retry_num(request))
            return
        if is_direct_question(event, context.bot_user_id):  # a new DM: answered in a thread under it
            with deps.runner.busy():
                await dispatch_turn(deps, body, event, strip_mention(event.get("text") or "", context.bot_user_id),
                                    retry_num(request))
            return
        if not is_follow_up_candidate(event, context.bot_user_id):
            return
        team = body.get("team_id") or event.get("team") or ""
        session = SessionKey(team=team, channel=event.get("channel", ""), thread_ts=event["thread_ts"])
        with deps.runner.busy():
            if await deps.chat.has_session(session.as_str()):
                await dispatch_turn(deps, body, event, (event.get("text") or "").strip(), retry_num(request))
