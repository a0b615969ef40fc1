"""Putting a turn's final message in the thread, and what to do when Slack refuses it (SPEC §10, faults)."""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.render.message import SlackMessage, fault_message

log = logging.getLogger(__name__)


# Errors about the message itself: sending the same message elsewhere would be refused the same way.
REFUSED = frozenset({"invalid_blocks", "msg_too_long", "msg_blocks_too_long"})


def error_code(exc: Exception) -> str:
    """The Slack error code of a failed call, or the exception's type for network errors (never the payload)."""
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error") or "unknown_error")
    return type(exc).__name__


async def post_in_thread(client: AsyncWebClient, channel: str, thread_ts: str, msg: SlackMessage) -> str | None:
    """chat.postMessage in the thread; returns the ts or None after logging the error code."""
    try:
        resp = await client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=msg.text, blocks=msg.blocks,
                                             metadata=msg.metadata)
        return resp.get("ts")
    except Exception as exc:  # SlackApiError, or the network after the SDK's retries
        log.warning("chat.postMessage failed: %s", error_code(exc))
        return None


async def deliver_final(client: AsyncWebClient, channel: str, thread_ts: str, placeholder_ts: str | None,
                        msg: SlackMessage) -> str | None:
    """Replace the placeholder with the final message (fallback: post it).

    When Slack refuses the message itself (blocks), a short note with the same metadata takes its place: it replaces
    the placeholder when it can (so no "Looking into it…" is left behind), else it is posted in the thread.
    """
    last_error = ""
    if placeholder_ts is not None:
        try:
            await client.chat_update(channel=channel, ts=placeholder_ts, text=msg.text, blocks=msg.blocks,
                                     metadata=msg.metadata)
            return placeholder_ts
        except Exception as exc:  # SlackApiError, or the network after the SDK's retries
            last_error = error_code(exc)
            log.warning("chat.update of final message failed: %s", last_error)
    if last_error not in REFUSED:
        try:
            resp = await client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=msg.text, blocks=msg.blocks,
                                                 metadata=msg.metadata)
            return str(resp.get("ts"))
        except Exception as exc:  # SlackApiError, or the network after the SDK's retries
            last_error = error_code(exc)
            log.warning("chat.postMessage of final message failed: %s", last_error)
    note = fault_message(msg, last_error)
    if placeholder_ts is not None and last_error in REFUSED:
        try:
            await client.chat_update(channel=channel, ts=placeholder_ts, text=note.text, blocks=note.blocks,
                                     metadata=note.metadata)
            return placeholder_ts
        except Exception as exc:  # SlackApiError, or the network after the SDK's retries
            log.warning("chat.update of fault note failed: %s", error_code(exc))
    return await post_in_thread(client, channel, thread_ts, note)
