"""RunTimeline: ordered seq per run and summaries reduced to safe, short scalars."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from enum import StrEnum

import pytest

from core.contracts.run import EventType, TimelineEvent
from core.service.timeline import MAX_STRING_CHARS, RunTimeline, sanitize_summary
from core.stores.memory import InMemoryTimelineStore


class Colour(StrEnum):
    RED = "RED"


async def test_events_get_monotonic_seq_even_when_recorded_concurrently() -> None:
    """Concurrent record() calls still produce seq 1..n without gaps or duplicates."""
    store = InMemoryTimelineStore()
    timeline = RunTimeline("run-1", store)
    await asyncio.gather(*(timeline.record(EventType.TOOL_CALL, {"i": i}) for i in range(20)))
    events = await store.list("run-1")
    assert [e.seq for e in events] == list(range(1, 21))


async def test_a_new_timeline_for_the_same_run_continues_the_seq() -> None:
    """A second RunTimeline of a run (another component, a restart) appends after the stored events."""
    store = InMemoryTimelineStore()
    await RunTimeline("run-1", store).record(EventType.RUN_STARTED)
    await RunTimeline("run-1", store).record(EventType.RUN_FINISHED)
    assert [(e.seq, e.type) for e in await store.list("run-1")] == [(1, EventType.RUN_STARTED), (2, EventType.RUN_FINISHED)]


async def test_event_carries_type_time_and_duration() -> None:
    """The clock, type and duration given are what is stored."""
    at = datetime(2024, 5, 1, 23, 0, tzinfo=UTC)
    store = InMemoryTimelineStore()
    await RunTimeline("r", store, clock=lambda: at).record(EventType.RUN_STARTED, {"intent": "DIAGNOSIS"}, duration_ms=12.5)
    (event,) = await store.list("r")
    assert (event.type, event.at, event.duration_ms, event.summary) == (EventType.RUN_STARTED, at, 12.5, {"intent": "DIAGNOSIS"})


def test_summary_keeps_only_safe_scalars() -> None:
    """Dicts, objects and mixed lists are dropped; enums become values; NaN becomes null."""
    summary = {
        "tool": "query_logs",
        "count": 3,
        "ratio": float("nan"),
        "ok": True,
        "none": None,
        "colour": Colour.RED,
        "codes": ["A", "B"],
        "raw": {"rows": [[1, 2]]},
        "mixed": ["a", {"b": 1}],
        "obj": object(),
        "": "empty key",
    }
    assert sanitize_summary(summary) == {
        "tool": "query_logs", "count": 3, "ratio": None, "ok": True, "none": None, "colour": "RED", "codes": ["A", "B"],
    }


def test_summary_strings_are_capped_and_redacted() -> None:
    """Long strings are cut to the cap and secrets in them are redacted."""
    summary = sanitize_summary({"reason": "x" * 5000, "note": "password=hunter2", "list": ["token=abc"] * 100})
    assert len(summary["reason"]) == MAX_STRING_CHARS
    assert summary["note"] == "password=[redacted]"
    assert len(summary["list"]) == 20
    assert summary["list"][0] == "token=[redacted]"


class BrokenStore:
    async def append(self, event: TimelineEvent) -> None:
        raise ConnectionError("db down")

    async def list(self, run_id: str) -> list[TimelineEvent]:
        return []


async def test_store_failure_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    """A broken timeline store never breaks the run it describes."""
    await RunTimeline("r", BrokenStore()).record(EventType.RUN_FAILED, {"reason": "x"})
    assert any("ConnectionError" in r.getMessage() for r in caplog.records)


async def test_negative_or_infinite_duration_is_stored_as_zero() -> None:
    """Durations are never negative or infinite in the stored event."""
    store = InMemoryTimelineStore()
    timeline = RunTimeline("r", store)
    await timeline.record(EventType.MODEL_CALL, None, duration_ms=-5)
    await timeline.record(EventType.MODEL_CALL, None, duration_ms=float("inf"))
    assert [e.duration_ms for e in await store.list("r")] == [0.0, 0.0]
