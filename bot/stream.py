"""Progress the way Slack AI apps show it: a streamed message whose tasks are the run's tool calls and checking stages.

chat.startStream opens the message (a plan block, one task per tool call), chat.appendStream sends the tasks that
changed (throttled, last state wins), chat.stopStream closes it; the final message then replaces it through
chat.update like any placeholder. Only tasks and stage titles are streamed (ProgressState holds nothing else), never
draft text. When Slack refuses the stream (an older workspace, a missing feature or scope) or DIAG_SLACK_STREAMING is
off, the turn falls back to the placeholder edited in place (SlackProgress).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.progress import MIN_INTERVAL_S, PLACEHOLDER_TIMEOUT_S, SlackProgress
from bot.render.progress import PLACEHOLDER, ProgressState, TaskStatus
from bot.slack_errors import error_code
from bot.slack_retry import without_retries
from core.contracts.progress import ProgressUpdate
from core.turns.surface import TurnProgress

log = logging.getLogger(__name__)

STREAM_INTERVAL_S = 0.5
# Answers after which the stream cannot be written to again: the rest of the turn streams nothing more.
STREAM_GONE = frozenset({"message_not_in_streaming_state", "stopped_by_user", "streaming_state_conflict",
                         "message_not_found", "channel_not_found", "not_in_channel"})


class StreamProgress:
    """ProgressSink for one turn over chat.startStream/appendStream/stopStream, with the edit fallback inside."""

    def __init__(self, client: AsyncWebClient, channel: str, thread_ts: str, *, user: str, team: str,
                 min_interval_s: float = STREAM_INTERVAL_S, edit_interval_s: float = MIN_INTERVAL_S) -> None:
        self._client = client
        self._append_client = without_retries(client)  # superseded by the next append, as edits are
        self._channel, self._thread_ts, self._user, self._team = channel, thread_ts, user, team
        self._min_interval_s = min_interval_s
        self._fallback = SlackProgress(client, channel, thread_ts, edit_interval_s)
        self._streaming = False
        self._stream_ts: str | None = None
        self.state = ProgressState()
        self.run_id: str | None = None
        self._pending: dict[str, dict[str, Any]] = {}
        self._stage_sent = ""
        self._last = 0.0
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._in_flight = False

    @property
    def ts(self) -> str | None:
        """The message the final answer replaces: the stream, or the fallback's placeholder."""
        return self._stream_ts if self._stream_ts is not None else self._fallback.ts

    async def start(self) -> None:
        """Open the stream; on any refusal, post the edit-mode placeholder instead."""
        try:
            async with asyncio.timeout(PLACEHOLDER_TIMEOUT_S):
                resp = await self._client.chat_startStream(
                    channel=self._channel, thread_ts=self._thread_ts, recipient_user_id=self._user or None,
                    recipient_team_id=self._team or None, task_display_mode="plan",
                    chunks=[{"type": "plan_update", "title": PLACEHOLDER}])
            self._stream_ts = resp.get("ts")
            self._streaming = self._stream_ts is not None
            self._last = time.monotonic()
        except Exception as exc:  # the workspace or app cannot stream: today's placeholder edits
            log.info("streaming unavailable in channel %s (%s); editing a placeholder instead", self._channel,
                     error_code(exc))
        if not self._streaming:
            await self._fallback.start()

    async def update(self, run_id: str, update: ProgressUpdate) -> None:
        """Fold the update into the tasks and schedule an append; returns at once."""
        self.run_id = run_id
        if not self._streaming:
            await self._fallback.update(run_id, update)
            return
        if self._closed:
            return
        for task in self.state.apply(run_id, update):
            self._pending[task.id] = task.chunk()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._flush_later())

    def _chunks(self) -> list[dict[str, Any]]:
        chunks: list[dict[str, Any]] = []
        if self.state.stage and self.state.stage != self._stage_sent:
            self._stage_sent = self.state.stage
            chunks.append({"type": "plan_update", "title": self.state.stage})
        chunks += self._pending.values()
        self._pending = {}
        return chunks

    async def _flush_later(self) -> None:
        while not self._closed and self._streaming and (self._pending or self.state.stage != self._stage_sent):
            wait = self._last + self._min_interval_s - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            self._last = time.monotonic()
            await self._send(self._append_client.chat_appendStream, self._chunks())

    async def _send(self, method: Any, chunks: list[dict[str, Any]]) -> None:
        if not chunks or self._stream_ts is None:
            return
        self._in_flight = True
        try:
            await method(channel=self._channel, ts=self._stream_ts, chunks=chunks)
        except Exception as exc:  # a lost append is cosmetic; a closed stream ends streaming for this turn
            code = error_code(exc)
            log.warning("stream append in channel %s failed: %s", self._channel, code)
            if code in STREAM_GONE:
                self._streaming = False
        finally:
            self._in_flight = False

    async def close(self) -> None:
        """Stop sending; close the stream with its open tasks marked complete (the final message replaces it)."""
        if not self._streaming:
            await self._fallback.close()
            return
        self._closed = True
        task, self._task = self._task, None
        if task is not None and not task.done():
            if not self._in_flight:  # waiting out the interval: its chunks go with the stop instead
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for open_task in self.state.open_tasks():
            open_task.status = TaskStatus.COMPLETE
            self._pending[open_task.id] = open_task.chunk()
        self._streaming = False
        await self._send(self._client.chat_stopStream, self._chunks() or [{"type": "plan_update", "title": "Done"}])


def progress_for(client: AsyncWebClient, channel: str, thread_ts: str, *, user: str, team: str, streaming: bool,
                 edit_interval_s: float = MIN_INTERVAL_S) -> TurnProgress:
    """The progress message of one turn: streamed when enabled, else the edited placeholder."""
    if streaming:
        return StreamProgress(client, channel, thread_ts, user=user, team=team,
                              min_interval_s=min(STREAM_INTERVAL_S, edit_interval_s), edit_interval_s=edit_interval_s)
    return SlackProgress(client, channel, thread_ts, edit_interval_s)
