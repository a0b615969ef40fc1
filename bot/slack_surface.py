"""The Slack side of the turn lifecycle: core/turns/surface.TurnSurface over the Web API.

Progress is a placeholder edited in place or a stream (bot/stream.py); the final is rendered here from the
lifecycle's `Final` and delivered by bot/delivery.py; `final_in_thread` reads the thread back with
conversations.replies (`include_all_metadata`) to find a `diag_run_finished` message an outage left unrecorded.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery import DeliveryPolicy, deliver_final
from bot.progress import MIN_INTERVAL_S, SlackProgress
from bot.render.message import (
    EVENT_TYPE,
    RenderOptions,
    SlackMessage,
    busy_message,
    cancelled_before_start_message,
    gave_up_message,
    internal_error_message,
    render_outcome,
    restart_note,
    shutdown_message,
    unprocessable_message,
)
from bot.stream import progress_for
from core.turns.surface import Final, FinalKind, Target, TurnProgress

log = logging.getLogger(__name__)

# One page of a thread read back (Slack's own default and cap for most apps is far above; the turn's own messages
# follow its question closely).
REPLIES_PAGE = 100
MAX_PAGES = 5


def render_final(final: Final, options: RenderOptions) -> SlackMessage:
    """The Slack message of a turn's final (every kind carries the `diag_run_finished` metadata)."""
    run_id = final.run_id or ""
    if final.kind is FinalKind.OUTCOME and final.outcome is not None:
        note = restart_note(final.restart_of) if final.restart_of else None
        return render_outcome(final.outcome, final.duration_s, options, note=note)
    if final.kind is FinalKind.BUSY:
        return busy_message(final.count, run_id)
    if final.kind is FinalKind.GAVE_UP:
        return gave_up_message(run_id, final.count)
    if final.kind is FinalKind.CANCELLED_BEFORE_START:
        return cancelled_before_start_message(run_id)
    if final.kind is FinalKind.SHUTDOWN:
        return shutdown_message(final.run_id)
    if final.kind is FinalKind.UNPROCESSABLE:
        return unprocessable_message(run_id)
    return internal_error_message(final.run_id)


def _is_final(message: dict[str, Any], run_ids: Collection[str] | None) -> bool:
    metadata = message.get("metadata") or {}
    if metadata.get("event_type") != EVENT_TYPE:
        return False
    return run_ids is None or (metadata.get("event_payload") or {}).get("run_id") in run_ids


class SlackSurface:
    """TurnSurface for Slack."""

    def __init__(self, client: AsyncWebClient, *, progress_interval_s: float = MIN_INTERVAL_S,
                 streaming: bool = False, delivery: DeliveryPolicy = DeliveryPolicy(),
                 render: RenderOptions = RenderOptions()) -> None:
        self.client = client
        self._progress_interval_s = progress_interval_s
        self._streaming = streaming
        self._delivery = delivery
        self._render = render

    def progress(self, target: Target, *, user: str, team: str, placeholder_ts: str | None) -> TurnProgress:
        thread_ts = target.thread_ts or ""
        if placeholder_ts is not None:  # a re-run edits the placeholder its first attempt posted
            adopted = SlackProgress(self.client, target.channel, thread_ts, self._progress_interval_s)
            adopted.ts = placeholder_ts
            return adopted
        return progress_for(self.client, target.channel, thread_ts, user=user, team=team,
                            streaming=self._streaming and bool(user),  # a stream needs its human recipient
                            edit_interval_s=self._progress_interval_s)

    async def deliver(self, target: Target, placeholder_ts: str | None, final: Final, *, until: float) -> str | None:
        thread_ts = target.thread_ts or placeholder_ts or ""
        return await deliver_final(self.client, target.channel, thread_ts, placeholder_ts,
                                   render_final(final, self._render), until=until, policy=self._delivery)

    async def final_in_thread(self, target: Target, placeholder_ts: str | None, after_ts: str,
                              run_ids: Collection[str]) -> str | None:
        if placeholder_ts is not None:  # the turn's own message: a final there counts whatever run wrote it
            for message in await self._replies(target.channel, placeholder_ts, oldest=placeholder_ts,
                                               latest=placeholder_ts):
                if message.get("ts") == placeholder_ts and _is_final(message, None):
                    return placeholder_ts
        thread = target.thread_ts or placeholder_ts
        if thread is None:
            return None
        for message in await self._replies(target.channel, thread, oldest=after_ts):
            if _is_final(message, run_ids):
                return str(message.get("ts"))
        return None

    async def _replies(self, channel: str, ts: str, *, oldest: str, latest: str | None = None) -> list[dict[str, Any]]:
        """Messages of the thread holding `ts`, from `oldest` (inclusive), metadata included; raises on failure."""
        messages: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            kwargs: dict[str, Any] = {"channel": channel, "ts": ts, "oldest": oldest, "inclusive": True,
                                      "include_all_metadata": True, "limit": REPLIES_PAGE}
            if latest is not None:
                kwargs["latest"] = latest
            if cursor:
                kwargs["cursor"] = cursor
            resp = await self.client.conversations_replies(**kwargs)
            messages.extend(resp.get("messages") or [])
            cursor = (resp.get("response_metadata") or {}).get("next_cursor")
            if not resp.get("has_more") or not cursor:
                break
        return messages
