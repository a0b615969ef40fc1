"""Exactly one run per user message: claims by Slack event_id (retries) and by (channel, ts) (double delivery).

Claims live in the shared KeyValueStore, so every replica sees them. When the store cannot be reached the
deduplicator fails *closed* for Slack's retries and *once per process* for first deliveries:

- a delivery with `X-Slack-Retry-Num` ≥ 1 is acknowledged and dropped (its first delivery was almost surely taken by
  some replica; answering it again is the failure this prevents);
- a first delivery is claimed in a bounded local set (bot.local_claims) and processed once in this process;
- those local claims are written back to the store as soon as it answers again, so a retry reaching another replica
  after the outage is still recognised; and a key claimed here is never claimed again here, store or no store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from bot.local_claims import LocalClaims
from core.ports import KeyValueStore

log = logging.getLogger(__name__)

# Slack retries at once, after ~1 min and after ~5 min: keep keys well beyond that.
DEDUP_TTL_S = 15 * 60
WRITEBACK_INTERVAL_S = 1.0
MAX_PENDING = 10_000


class Deduplicator:
    """Claims in the shared KeyValueStore; the first claimant of a key wins, everyone else drops the event."""

    def __init__(self, kv: KeyValueStore, ttl_s: float = DEDUP_TTL_S, prefix: str = "diag:dedup:", *,
                 writeback_interval_s: float = WRITEBACK_INTERVAL_S) -> None:
        self._kv = kv
        self._ttl_s = ttl_s
        self._prefix = prefix
        self._writeback_interval_s = writeback_interval_s
        self._local = LocalClaims(ttl_s)
        self._pending: dict[str, None] = {}  # claimed here while the store was down, oldest first
        self._writeback: asyncio.Task[None] | None = None

    async def _claim(self, key: str, retry_num: int) -> bool:
        if self._local.has(key):
            return False
        try:
            won = await self._kv.set_if_absent(self._prefix + key, "1", self._ttl_s)
        except Exception as exc:  # store down: fail closed for retries, once per process for first deliveries
            return self._claim_offline(key, retry_num, type(exc).__name__)
        if won:
            self._local.claim(key)
        if self._pending:
            self._schedule_writeback()
        return won

    def _claim_offline(self, key: str, retry_num: int, error: str) -> bool:
        if retry_num >= 1:
            log.warning("dedup store unavailable (%s): Slack retry #%d dropped (its first delivery was taken)", error,
                        retry_num)
            return False
        if not self._local.claim(key):
            return False
        self._pending[key] = None
        while len(self._pending) > MAX_PENDING:
            del self._pending[next(iter(self._pending))]
        log.warning("dedup store unavailable (%s): first delivery claimed in this process only", error)
        self._schedule_writeback()
        return True

    def _schedule_writeback(self) -> None:
        if self._writeback is None or self._writeback.done():
            self._writeback = asyncio.create_task(self._write_back(), name="dedup-writeback")

    async def _write_back(self) -> None:
        """Copy the claims taken during an outage into the store once it answers (other replicas then see them)."""
        while self._pending:
            key = next(iter(self._pending))
            try:
                await self._kv.set_if_absent(self._prefix + key, "1", self._ttl_s)
            except Exception:  # still down: try again shortly
                await asyncio.sleep(self._writeback_interval_s)
                continue
            self._pending.pop(key, None)
        log.info("dedup store reachable again: local claims written back")

    async def aclose(self) -> None:
        """Stop a write-back still waiting for the store."""
        if self._writeback is not None and not self._writeback.done():
            self._writeback.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writeback

    async def claim_event(self, event_id: str | None, retry_num: int = 0) -> bool:
        """True the first time this event_id is seen (a retry of a seen event returns False)."""
        if not event_id:
            return True
        return await self._claim(f"event:{event_id}", retry_num)

    async def claim_message(self, channel: str, ts: str, retry_num: int = 0) -> bool:
        """True the first time this user message (channel, ts) is claimed, whichever event carried it."""
        return await self._claim(f"msg:{channel}:{ts}", retry_num)
