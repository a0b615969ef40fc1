"""Progress in the thread: a placeholder message edited as the run works, throttled, never blocking the run."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from slack_sdk.web.async_client import AsyncWebClient

from bot.render.progress import PLACEHOLDER, ProgressState
from bot.slack_errors import error_code
from bot.slack_retry import without_retries
from core.contracts.progress import ProgressUpdate

__all__ = ["MIN_INTERVAL_S", "PLACEHOLDER", "PLACEHOLDER_TIMEOUT_S", "SlackProgress", "without_retries"]

log = logging.getLogger(__name__)

MIN_INTERVAL_S = 1.5
# The run waits at most this long for its placeholder (the SDK's retries included); then it goes on without one and
# its final message is posted in the thread instead (retried until Slack is back, within the run's deadline).
PLACEHOLDER_TIMEOUT_S = 10.0


class SlackProgress:
    """ProgressSink for one turn: posts the placeholder, edits it at most every MIN_INTERVAL_S (last state wins)."""

    def __init__(self, client: AsyncWebClient, channel: str, thread_ts: str, min_interval_s: float = MIN_INTERVAL_S) -> None:
        self._client = client
        # Progress edits are best-effort and superseded by the next one: retried after a 429 they would stay in flight
        # for seconds, and close() must wait for an edit in flight before the final message may go.
        self._edit_client = without_retries(client)
        self._channel = channel
        self._thread_ts = thread_ts
        self._min_interval_s = min_interval_s
        self.ts: str | None = None
        self.run_id: str | None = None
        self.state = ProgressState()
        self._dirty = False
        self._last_edit = 0.0
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._in_flight = False

    async def start(self) -> None:
        """Post the placeholder in the thread (failure is logged; the final message is then posted instead)."""
        try:
            async with asyncio.timeout(PLACEHOLDER_TIMEOUT_S):
                resp = await self._client.chat_postMessage(channel=self._channel, thread_ts=self._thread_ts,
                                                           text=PLACEHOLDER)
            self.ts = resp.get("ts")
            self._last_edit = time.monotonic()
        except Exception as exc:  # any Slack answer or network failure: the run goes on, the final is posted later
            log.warning("placeholder not posted in channel %s: %s", self._channel, error_code(exc))

    async def update(self, run_id: str, update: ProgressUpdate) -> None:
        """Record the latest state and schedule an edit; returns at once."""
        if self._closed:
            return
        self.run_id = run_id
        self.state.apply(run_id, update)
        self._dirty = True
        if self.ts is not None and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._flush_later())

    async def _flush_later(self) -> None:
        while self._dirty and not self._closed:
            wait = self._last_edit + self._min_interval_s - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            self._dirty = False
            self._last_edit = time.monotonic()
            text, blocks = self.state.render()
            if self.ts is None:
                return
            self._in_flight = True
            try:
                await self._edit_client.chat_update(channel=self._channel, ts=self.ts, text=text, blocks=blocks)
            except Exception as exc:  # a lost edit is harmless; letting it escape would break close() and the final
                log.warning("progress update in channel %s failed: %s", self._channel, error_code(exc))
            finally:
                self._in_flight = False

    async def close(self) -> None:
        """Stop editing: a pending edit is dropped; an edit in flight is awaited so it cannot overwrite the final one."""
        self._closed = True
        task, self._task = self._task, None
        if task is None or task.done():
            return
        if not self._in_flight:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
