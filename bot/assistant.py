"""DMs and Slack's assistant (agent) container, through bolt's AsyncAssistant middleware (SPEC §10).

A new assistant thread gets a greeting and suggested prompts; every user message there is a turn of that thread's
session (no mention needed, "stop" cancels), with the thread titled after the question and a status while the run
works. Top-level DMs start a session in a thread under the message, as a mention does in a channel. Sessions, dedup
and the previous-turn rule are the channel ones: the session key is (team, DM channel, thread).
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.say.async_say import AsyncSay
from slack_bolt.context.set_status.async_set_status import AsyncSetStatus
from slack_bolt.context.set_suggested_prompts.async_set_suggested_prompts import AsyncSetSuggestedPrompts
from slack_bolt.context.set_title.async_set_title import AsyncSetTitle
from slack_bolt.middleware.assistant.async_assistant import AsyncAssistant

from bot.deps import BotDeps
from bot.events import dispatch_turn, is_human_message, is_stop, strip_mention
from bot.slack_errors import error_code

log = logging.getLogger(__name__)

GREETING = ("Hi! Ask me why something is failing — I query the logs, the database and the runbooks, and I publish "
            "only what those tools actually showed.")
PROMPTS_TITLE = "Try one of these"
SUGGESTED_PROMPTS = [
    {"title": "Why is a service failing?", "message": "Why is order-service throwing errors since 23:00?"},
    {"title": "Check a database pool", "message": "Is the order-service DB connection pool exhausted?"},
    {"title": "What does the runbook say?", "message": "What does the runbook say about HikariCP pool exhaustion?"},
]
WORKING_STATUS = "is checking the logs, the database and the runbooks…"
TITLE_MAX = 80


def title_for(question: str) -> str:
    """The assistant thread's title: the question's first words (whole words only)."""
    words = " ".join(question.split())
    if len(words) <= TITLE_MAX:
        return words or "Diagnosis"
    return words[: TITLE_MAX - 1].rsplit(" ", 1)[0] + "…"


def build_assistant(deps: BotDeps) -> AsyncAssistant:
    """The assistant middleware with diagbot's listeners (app.use() it before the event listeners)."""
    assistant = AsyncAssistant()

    @assistant.thread_started
    async def on_thread_started(say: AsyncSay, set_suggested_prompts: AsyncSetSuggestedPrompts) -> None:
        try:
            await say(GREETING)
            await set_suggested_prompts(prompts=SUGGESTED_PROMPTS, title=PROMPTS_TITLE)
        except Exception as exc:  # cosmetic: the thread still works without them
            log.warning("assistant thread greeting failed: %s", error_code(exc))

    @assistant.thread_context_changed
    async def on_context_changed() -> None:
        """diagbot does not use the channel the user is viewing: bolt's default would store it in message metadata
        (extra conversations.replies / chat.update calls for nothing)."""

    @assistant.user_message
    async def on_user_message(body: dict[str, Any], payload: dict[str, Any], context: AsyncBoltContext,
                              set_status: AsyncSetStatus, set_title: AsyncSetTitle) -> None:
        if not is_human_message(payload):
            return
        text = strip_mention(payload.get("text") or "", context.bot_user_id)

        async def working() -> None:  # only once the asker is let in (the access policy)
            if text and not is_stop(text):
                try:
                    await set_title(title_for(text))
                    await set_status(WORKING_STATUS)
                except Exception as exc:  # an older workspace without the container APIs: answer anyway
                    log.info("assistant thread status/title not set: %s", error_code(exc))

        with deps.runner.busy():
            await dispatch_turn(deps, body, payload, text, admitted=working)

    return assistant
