"""Putting a turn's final message in the thread, and what to do when Slack refuses it (SPEC §10, faults)."""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.render.message import SlackMessage, fault_message
from core.contracts.release import ReleaseOutcome

log = logging.getLogger(__name__)


def error_code(exc: SlackApiError) -> str:
    """The Slack error code of a failed call (never the payload)."""
    return str(exc.response.get("error") or "unknown_error")


async def post_in_thread(client: AsyncWebClient, channel: str, thread_ts: str, msg: SlackMessage) -> str | None:
    """chat.postMessage in the thread; returns the ts or None after logging the error code."""
    try:
        resp = await client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=msg.text, blocks=msg.blocks,
                                             metadata=msg.metadata)
        return resp.get("ts")
    except SlackApiError as exc:
        log.warning("chat.postMessage failed: %s", error_code(exc))
        return None


async def deliver_final(client: AsyncWebClient, channel: str, thread_ts: str, placeholder_ts: str | None,
                        msg: SlackMessage, outcome: ReleaseOutcome) -> str | None:
    """Replace the placeholder with the final message (fallback: post it); on refusal post a short fault note."""
    last_error = ""
    if placeholder_ts is not None:
        try:
            await client.chat_update(channel=channel, ts=placeholder_ts, text=msg.text, blocks=msg.blocks,
                                     metadata=msg.metadata)
            return placeholder_ts
        except SlackApiError as exc:
            last_error = error_code(exc)
            log.warning("chat.update of final message failed: %s", last_error)
    if last_error not in {"invalid_blocks", "msg_too_long", "msg_blocks_too_long"}:
        try:
            resp = await client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=msg.text, blocks=msg.blocks,
                                                 metadata=msg.metadata)
            return str(resp.get("ts"))
        except SlackApiError as exc:
            last_error = error_code(exc)
            log.warning("chat.postMessage of final message failed: %s", last_error)
    return await post_in_thread(client, channel, thread_ts, fault_message(outcome, last_error))
