"""Exactly one run per user message: claims by Slack event_id (retries) and by (channel, ts) (double delivery)."""

from __future__ import annotations

import logging

from core.ports import KeyValueStore

log = logging.getLogger(__name__)

# Slack retries at once, after ~1 min and after ~5 min: keep keys well beyond that.
DEDUP_TTL_S = 15 * 60


class Deduplicator:
    """Claims in the shared KeyValueStore; the first claimant of a key wins, everyone else drops the event."""

    def __init__(self, kv: KeyValueStore, ttl_s: float = DEDUP_TTL_S, prefix: str = "diag:dedup:") -> None:
        self._kv = kv
        self._ttl_s = ttl_s
        self._prefix = prefix

    async def _claim(self, key: str) -> bool:
        try:
            return await self._kv.set_if_absent(self._prefix + key, "1", self._ttl_s)
        except Exception as exc:  # store down: answering twice beats never answering
            log.warning("dedup store unavailable (%s); processing event anyway", type(exc).__name__)
            return True

    async def claim_event(self, event_id: str | None) -> bool:
        """True the first time this event_id is seen (a retry of a seen event returns False)."""
        if not event_id:
            return True
        return await self._claim(f"event:{event_id}")

    async def claim_message(self, channel: str, ts: str) -> bool:
        """True the first time this user message (channel, ts) is claimed, whichever event carried it."""
        return await self._claim(f"msg:{channel}:{ts}")
