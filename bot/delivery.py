"""Putting a turn's final message in the thread so that exactly one answer is visible (SPEC §10, issue 13).

`deliver_final` tries, in order, until `until` (monotonic):

1. edit the placeholder into the final message (retrying retryable failures for up to `update_budget_s`);
   when Slack refuses the content itself (invalid_blocks, msg_too_long…), edit it into the short note instead;
2. otherwise post the final message (or the note) in the thread, retrying until `until` — Slack coming back within
   the run's deadline still gets the user their answer — and then delete the placeholder (or, if Slack will not
   delete it, edit it into a pointer without metadata), so no "Looking into it…" stays above the answer;
3. a post refused for the channel (channel_not_found, not_in_channel, is_archived…) ends it at once, and a post
   still failing at `until` ends it too: logged with the channel and the reason.

Every failure is classified by bot.slack_errors whatever Slack's body looked like; nothing here raises for one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.render.message import SlackMessage, fault_message
from bot.render.mrkdwn import section
from bot.slack_errors import SlackFailure, error_code
from bot.slack_retry import call_until, without_retries

log = logging.getLogger(__name__)

POINTER = "The answer is in the next message."

__all__ = ["Delivered", "DeliveryPolicy", "deliver", "deliver_final", "error_code", "post_in_thread"]


@dataclass(frozen=True)
class DeliveryPolicy:
    """How long each step of a final delivery may keep retrying."""

    update_budget_s: float = 10.0
    """The final edit of the placeholder, before the answer is posted as a new message instead."""
    cleanup_budget_s: float = 10.0
    """Deleting (or neutralising) the placeholder once the answer was posted below it."""
    final_budget_s: float = 60.0
    """The whole delivery when the caller gives no deadline of its own."""
    first_backoff_s: float = 0.5
    """The first pause between retries (doubled each time, capped; Retry-After wins)."""


@dataclass(frozen=True)
class Delivered:
    """Where the final message ended up: its ts (None when nothing could be posted) and the last failure."""

    ts: str | None
    failure: SlackFailure | None = None
    placeholder_left: bool = False


class _Thread:
    """The calls one final delivery makes, on a client without the SDK's retry handlers."""

    def __init__(self, client: AsyncWebClient, channel: str, thread_ts: str, until: float | None,
                 policy: DeliveryPolicy) -> None:
        self.client = without_retries(client)
        self.channel = channel
        self.thread_ts = thread_ts
        self.until = until if until is not None else time.monotonic() + policy.final_budget_s
        self.policy = policy

    async def _call(self, call: Callable[[], Awaitable[Any]], what: str, budget_s: float | None = None) -> Any:
        until = self.until if budget_s is None else min(self.until, time.monotonic() + budget_s)
        return await call_until(call, until=until, what=what, channel=self.channel,
                                first_backoff_s=self.policy.first_backoff_s)

    async def update(self, ts: str, msg: SlackMessage) -> SlackFailure | None:
        result = await self._call(lambda: self.client.chat_update(channel=self.channel, ts=ts, text=msg.text,
                                                                  blocks=msg.blocks, metadata=msg.metadata),
                                  "chat.update of the final message", self.policy.update_budget_s)
        return result if isinstance(result, SlackFailure) else None

    async def post(self, msg: SlackMessage) -> str | SlackFailure:
        result = await self._call(lambda: self.client.chat_postMessage(
            channel=self.channel, thread_ts=self.thread_ts, text=msg.text, blocks=msg.blocks, metadata=msg.metadata),
            "chat.postMessage of the final message")
        return result if isinstance(result, SlackFailure) else str(result.get("ts") or "")

    async def clear(self, placeholder_ts: str) -> bool:
        """Delete the placeholder (else edit it into a pointer without metadata); True when it is gone or harmless."""
        budget = self.policy.cleanup_budget_s
        deleted = await self._call(lambda: self.client.chat_delete(channel=self.channel, ts=placeholder_ts),
                                   "chat.delete of the placeholder", budget)
        if not isinstance(deleted, SlackFailure) or deleted.code == "message_not_found":
            return True
        pointer = await self._call(lambda: self.client.chat_update(channel=self.channel, ts=placeholder_ts, text=POINTER,
                                                                   blocks=[section(POINTER)]),
                                   "chat.update of the placeholder", budget)
        return not isinstance(pointer, SlackFailure) or pointer.code == "message_not_found"


async def deliver_final(client: AsyncWebClient, channel: str, thread_ts: str, placeholder_ts: str | None,
                        msg: SlackMessage, *, until: float | None = None,
                        policy: DeliveryPolicy = DeliveryPolicy()) -> str | None:
    """Show the final message in the thread exactly once; its ts, or None (logged with channel and reason)."""
    return (await deliver(client, channel, thread_ts, placeholder_ts, msg, until=until, policy=policy)).ts


async def deliver(client: AsyncWebClient, channel: str, thread_ts: str, placeholder_ts: str | None,
                  msg: SlackMessage, *, until: float | None = None, policy: DeliveryPolicy = DeliveryPolicy()) -> Delivered:
    """deliver_final with the details (see the module docstring)."""
    thread = _Thread(client, channel, thread_ts, until, policy)
    failure: SlackFailure | None = None
    noted = False
    if placeholder_ts:
        failure = await thread.update(placeholder_ts, msg)
        if failure is None:
            return Delivered(placeholder_ts)
        if failure.refused_content:
            msg, noted = fault_message(msg, failure.code), True
            if (failure := await thread.update(placeholder_ts, msg)) is None:
                return Delivered(placeholder_ts)
    # Even a channel-level refusal of the edit (not_in_channel) gets one post: only the post can tell for sure.
    posted = await thread.post(msg)
    if isinstance(posted, SlackFailure) and posted.refused_content and not noted:
        msg = fault_message(msg, posted.code)
        posted = await thread.post(msg)
    if not isinstance(posted, SlackFailure):
        left = placeholder_ts is not None and not await thread.clear(placeholder_ts)
        if left:
            log.warning("placeholder %s in channel %s could not be removed under the answer", placeholder_ts, channel)
        return Delivered(posted, failure, placeholder_left=left)
    failure = posted
    run_id = ((msg.metadata or {}).get("event_payload") or {}).get("run_id") or "?"
    log.error("final message of run %s not delivered in channel %s: %s (%s)", run_id, channel, failure.code,
              failure.kind.value)
    return Delivered(None, failure, placeholder_left=placeholder_ts is not None)


async def post_in_thread(client: AsyncWebClient, channel: str, thread_ts: str, msg: SlackMessage) -> str | None:
    """chat.postMessage in the thread (the app client's own retries); returns the ts or None after logging the code."""
    try:
        resp = await client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=msg.text, blocks=msg.blocks,
                                             metadata=msg.metadata)
        return resp.get("ts")
    except Exception as exc:  # SlackApiError of any body, or the network after the SDK's retries
        log.warning("chat.postMessage in channel %s failed: %s", channel, error_code(exc))
        return None
