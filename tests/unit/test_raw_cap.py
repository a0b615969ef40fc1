"""The canonical record's byte cap: a huge raw result is stored as its first items/rows that fit, with a visible
note; one whose first item alone is over the cap is an ERROR, never an empty answer; the work runs off the loop."""

from __future__ import annotations

import time

from core.contracts.evidence import EvidenceStatus, RawResult
from core.evidence.boundary import ToolBoundary
from core.evidence.raw_cap import cap_raw
from core.run import RunContext
from core.service.timeline import RunTimeline
from core.stores.canonical import InMemoryCanonicalStore
from core.stores.memory import InMemoryAuditStore, InMemoryTimelineStore
from testkit.tool_names import ToolName
from testkit.tools import FakeTool

SQL = ToolName.QUERY_MYSQL


def _rows(n: int, width: int) -> RawResult:
    return RawResult(columns=["id", "text"], rows=[[i, "x" * width] for i in range(n)], total_count=n)


def test_a_result_under_the_cap_is_unchanged() -> None:
    raw = _rows(10, 10)
    assert cap_raw(raw, 10_000) == (raw, len(raw.model_dump_json()))


def test_a_result_over_the_cap_keeps_a_prefix_and_says_so() -> None:
    raw = _rows(1000, 1000)
    capped = cap_raw(raw, 100_000)
    assert capped is not None
    kept, size = capped
    assert size <= 100_000
    assert kept.rows == raw.rows[: len(kept.rows)]
    assert 50 < len(kept.rows) < 100
    note = kept.notes["canonical_truncated"]
    assert note["kept"] == len(kept.rows)
    assert note["of"] == 1000
    assert kept.total_count == 1000


def test_a_first_item_over_the_cap_gives_none() -> None:
    raw = RawResult(items=[{"message": "m" * 50_000}], total_count=1)
    assert cap_raw(raw, 10_000) is None


def _ctx() -> RunContext:
    return RunContext(run_id="r", session_key="s", query="q", timeline=RunTimeline("r", InMemoryTimelineStore()))


async def test_the_boundary_stores_at_most_the_cap() -> None:
    """A 20 MB raw result: the canonical record holds at most 1 MiB of it, marked; the agent still gets FOUND."""
    canonical = InMemoryCanonicalStore()
    boundary = ToolBoundary({SQL: FakeTool(SQL, _rows(20_000, 1000))}, canonical, InMemoryAuditStore(),
                            raw_max_bytes=1024 * 1024)
    projection = await boundary.invoke(_ctx(), "c1", SQL.value, {"query": "x"})
    assert projection["evidence_status"] == EvidenceStatus.EVIDENCE_FOUND
    record = (await canonical.get_many("r", ["c1"], with_raw=True))["c1"]
    assert record is not None
    assert record.raw_result is not None
    assert len(record.raw_result.model_dump_json()) <= 1024 * 1024
    assert record.raw_result.notes["canonical_truncated"]["of"] == 20_000


async def test_a_result_that_cannot_be_kept_is_an_error() -> None:
    raw = RawResult(items=[{"doc": "d.md", "heading": "h", "text": "t" * 100_000, "score": 1.0}], total_count=1)
    kb = ToolName.LOOKUP_KNOWLEDGE
    boundary = ToolBoundary({kb: FakeTool(kb, raw)}, InMemoryCanonicalStore(), InMemoryAuditStore(), raw_max_bytes=10_000)
    projection = await boundary.invoke(_ctx(), "c1", kb.value, {"query": "x"})
    assert projection["evidence_status"] == EvidenceStatus.ERROR
    assert projection["error"]["code"] == "RESULT_TOO_LARGE"


def test_capping_costs_what_is_kept_not_what_came_back() -> None:
    """A 100 MB result is capped without serialising it whole: sizing stops at the cap (old code: ~0.5 s, +100 MB)."""
    raw = _rows(100_000, 1000)
    t0 = time.monotonic()
    capped = cap_raw(raw, 1024 * 1024)
    assert capped is not None
    assert time.monotonic() - t0 < 0.3
    assert capped[1] <= 1024 * 1024
