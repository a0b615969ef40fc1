"""RunTimeline: records one run's ordered events, keeping only safe scalars (the last guard against payloads)."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from core.contracts.run import EventType, TimelineEvent
from core.evidence.redaction import Redactor
from core.ports import TimelineStore

logger = logging.getLogger(__name__)

MAX_STRING_CHARS = 300
MAX_KEYS = 30
MAX_LIST_ITEMS = 20
MAX_KEY_CHARS = 64
_MARKER = "…"

Scalar = str | int | float | bool | None


def _utc_now() -> datetime:
    return datetime.now(UTC)


_REDACTOR = Redactor()
"""One memo for every timeline of the process: summaries repeat the same tool names, statuses and subjects."""


def _text(value: str) -> str:
    text = _REDACTOR.redact(value[: MAX_STRING_CHARS * 4])
    if len(text) > MAX_STRING_CHARS:
        text = text[: MAX_STRING_CHARS - len(_MARKER)] + _MARKER
    return text


def _scalar(value: Any) -> tuple[bool, Scalar]:
    """(kept, value): enums become their value, strings are redacted and capped, anything else is dropped."""
    kind = type(value)  # exact builtin types first: the common case, and none of them is an Enum
    if kind is str:
        return True, _text(value)
    if kind is int or kind is bool or value is None:
        return True, value
    if isinstance(value, Enum):
        value = value.value
    if value is None or isinstance(value, bool | int):
        return True, value
    if isinstance(value, float):
        return True, value if math.isfinite(value) else None
    if isinstance(value, str):
        return True, _text(value)
    return False, None


def sanitize_summary(summary: dict[str, Any] | None) -> dict[str, Any]:
    """Keep only str/int/float/bool/None values and short lists of them; cap strings; drop everything else."""
    safe: dict[str, Any] = {}
    for key, value in (summary or {}).items():
        if len(safe) >= MAX_KEYS:
            break
        if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS:
            continue
        kind = type(value)  # the common values first, without a call for each: _scalar's answer for them
        if kind is str:
            safe[key] = _text(value)
            continue
        if kind is int or kind is bool or value is None:
            safe[key] = value
            continue
        if isinstance(value, list | tuple):
            items = [_scalar(v) for v in value[:MAX_LIST_ITEMS]]
            if all(kept for kept, _ in items):
                safe[key] = [v for _, v in items]
            continue
        kept, clean = _scalar(value)
        if kept:
            safe[key] = clean
    return safe


class RunTimeline:
    """Timeline of one run: monotonic seq from 1, sanitised summaries, best-effort writes (a broken store is logged)."""

    def __init__(self, run_id: str, store: TimelineStore, clock: Callable[[], datetime] = _utc_now) -> None:
        self.run_id = run_id
        self._store = store
        self._clock = clock
        self._seq: int | None = None
        self._lock = asyncio.Lock()

    async def _next_seq(self) -> int:
        if self._seq is None:
            # Continue after events an earlier RunTimeline of the same run already stored (e.g. after a restart).
            try:
                self._seq = max((e.seq for e in await self._store.list(self.run_id)), default=0)
            except Exception as exc:  # the store may be down; the append below will report it
                logger.warning("timeline of %s not readable: %s", self.run_id, exc.__class__.__name__)
                self._seq = 0
        self._seq += 1
        return self._seq

    async def record(self, type: EventType, summary: dict[str, Any] | None = None, duration_ms: float = 0.0) -> None:
        """Append one event with the next seq; never raises because of the store."""
        duration = duration_ms if math.isfinite(duration_ms) and duration_ms >= 0 else 0.0
        async with self._lock:
            seq = await self._next_seq()
            event = TimelineEvent(
                run_id=self.run_id,
                seq=seq,
                type=EventType(type),
                at=self._clock(),
                duration_ms=duration,
                summary=sanitize_summary(summary),
            )
            try:
                await self._store.append(event)
            except Exception as exc:  # a timeline write must not break the run it describes
                logger.warning("timeline event %s#%d not stored: %s", self.run_id, seq, exc.__class__.__name__)
