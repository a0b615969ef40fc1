"""ToolBoundary with in-memory stores and FakeTool: ids, every ERROR path, budgets, cancellation, timeout, recording."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from core.contracts.evidence import CanonicalRecord, EvidenceStatus, InvocationState, RawResult
from core.contracts.progress import ProgressStage, ProgressUpdate, ToolProgress
from core.contracts.run import Budgets, EventType
from core.errors import StoreUnavailable, ToolFailure
from core.evidence.boundary import ToolBoundary
from core.evidence.projection import projection_size
from core.run import RunContext
from core.service.timeline import RunTimeline
from core.stores.canonical import InMemoryCanonicalStore
from core.stores.memory import InMemoryAuditStore, InMemoryTimelineStore
from core.tools.registry import spec_for
from testkit.progress import RecordingProgress
from testkit.tool_names import ToolName
from testkit.tools import FakeTool
from tests.waiting import until

KB = ToolName.LOOKUP_KNOWLEDGE
LOGS = ToolName.QUERY_LOGS
MINTED = re.compile(r"call_[0-9a-f]{12}")
class _Projections:
    """Validates a projection with the model of the tool it names (the registry's spec)."""

    @staticmethod
    def validate_python(projection: dict[str, Any]) -> Any:
        return spec_for(projection["tool_name"]).projection_model.model_validate(projection)


PROJECTION = _Projections()


def _found(n: int = 2, text: str = "HikariCP pool exhausted") -> RawResult:
    return RawResult(items=[{"doc": f"rb{i}.md", "heading": "Pool", "text": text, "score": 1.0} for i in range(n)],
                     total_count=n)


class FreeArgs(BaseModel):
    """Arguments model that accepts any extra field."""

    model_config = ConfigDict(extra="allow")
    query: str


class Harness:
    """A boundary over in-memory stores with one run context."""

    def __init__(self, *tools: FakeTool, budgets: Budgets | None = None, canonical: Any = None, audit: Any = None,
                 progress: RecordingProgress | None = None) -> None:
        self.canonical = canonical or InMemoryCanonicalStore()
        self.audit = audit or InMemoryAuditStore()
        self.timeline_store = InMemoryTimelineStore()
        self.progress = progress or RecordingProgress()
        self.boundary = ToolBoundary({t.name: t for t in tools}, self.canonical, self.audit)
        self.ctx = self.context("run-1", budgets)

    def context(self, run_id: str, budgets: Budgets | None = None) -> RunContext:
        return RunContext(run_id=run_id, session_key="T:C:1", query="why?", timeline=RunTimeline(run_id, self.timeline_store),
                          budgets=budgets or Budgets(), progress=self.progress)

    async def call(self, name: str = "lookup_knowledge", args: Any = '{"query": "pool"}', call_id: str | None = "call_a",
                   ctx: RunContext | None = None) -> dict[str, Any]:
        return await self.boundary.invoke(ctx or self.ctx, call_id, name, args)

    async def record(self, call_id: str, run_id: str = "run-1") -> CanonicalRecord | None:
        return (await self.canonical.get_many(run_id, [call_id], with_raw=True))[call_id]


async def test_found_call_returns_projection_and_records_everything() -> None:
    """A good call: READY canonical record with raw + projection, audit row, TOOL_CALL event, progress, counters."""
    tool = FakeTool(KB, _found(2))
    h = Harness(tool)
    projection = await h.call()
    PROJECTION.validate_python(projection)
    assert projection["tool_call_id"] == "call_a"
    assert projection["evidence_status"] == EvidenceStatus.EVIDENCE_FOUND
    assert len(projection["evidence_blocks"]) == 2

    record = await h.record("call_a")
    assert record is not None
    assert record.state == InvocationState.READY
    assert record.raw_result == _found(2)
    assert record.projection == projection
    assert record.arguments == {"query": "pool"}
    assert record.effective_arguments == {"query": "pool", "limit": 5}
    assert record.duration_ms is not None
    assert record.finished_at is not None

    (meta,) = await h.audit.invocations("run-1")
    expected = (InvocationState.READY, EvidenceStatus.EVIDENCE_FOUND, 2, None)
    assert (meta.state, meta.evidence_status, meta.count, meta.error_code) == expected
    assert meta.projection_bytes == projection_size(projection)
    assert meta.raw_bytes > 0

    (event,) = await h.timeline_store.list("run-1")
    assert event.type == EventType.TOOL_CALL
    assert event.seq == 1
    assert event.summary["tool"] == "lookup_knowledge"
    assert event.summary["count"] == 2
    assert event.summary["evidence_status"] == "EVIDENCE_FOUND"
    assert event.summary["error_code"] is None
    assert "HikariCP" not in str(event.summary)

    started = ToolProgress(tool_call_id="call_a", tool="lookup_knowledge", subject='"pool"')
    finished = started.model_copy(update={"evidence_status": EvidenceStatus.EVIDENCE_FOUND, "count": 2})
    assert h.progress.updates == [("run-1", ProgressUpdate(stage=ProgressStage.TOOL_STARTED, tool=started)),
                                  ("run-1", ProgressUpdate(stage=ProgressStage.TOOL_FINISHED, tool=finished))]
    assert h.ctx.tool_calls == 1
    assert h.ctx.observation_bytes == projection_size(projection)


async def test_backend_resolved_arguments_join_the_effective_arguments() -> None:
    """The window a backend resolved (defaults applied) is kept in the record as a grounding source."""
    start = datetime(2024, 5, 1, 22, 0, tzinfo=UTC)
    raw = RawResult(total_count=0, effective_arguments={"start": start, "end": "2024-05-01T23:00:00Z"})
    h = Harness(FakeTool(KB, raw))
    await h.call()
    record = await h.record("call_a")
    assert record is not None
    assert record.effective_arguments == {"query": "pool", "limit": 5, "start": "2024-05-01T22:00:00Z",
                                          "end": "2024-05-01T23:00:00Z"}


async def test_no_match_is_no_evidence() -> None:
    """A query that ran and matched nothing is NO_EVIDENCE and READY (referencable)."""
    h = Harness(FakeTool(KB, RawResult(total_count=0)))
    projection = await h.call()
    assert projection["evidence_status"] == EvidenceStatus.NO_EVIDENCE
    record = await h.record("call_a")
    assert record is not None
    assert record.state == InvocationState.READY


async def test_pending_record_exists_while_the_tool_runs() -> None:
    """The canonical record is written PENDING before the backend is called."""
    seen: list[InvocationState] = []
    h: Harness

    class Peeking(FakeTool):
        async def run(self, args: Any) -> RawResult:
            rec = await h.record("call_a")
            assert rec is not None
            seen.append(rec.state)
            return await super().run(args)

    h = Harness(Peeking(KB, _found(1)))
    await h.call()
    assert seen == [InvocationState.PENDING]


@pytest.mark.parametrize("provider_id", [None, "", "has space", "x" * 200, "ünïcode"])
async def test_missing_or_unusable_provider_id_gets_a_minted_one(provider_id: str | None) -> None:
    """A missing, empty or unsafe provider id is replaced by call_<12 hex>, which the projection carries."""
    h = Harness(FakeTool(KB, _found()))
    projection = await h.call(call_id=provider_id)
    assert MINTED.fullmatch(projection["tool_call_id"])
    assert await h.record(projection["tool_call_id"]) is not None


async def test_duplicate_provider_id_in_a_run_gets_a_new_id() -> None:
    """A provider id already used in the run is not reused; both calls stay citable under distinct ids."""
    h = Harness(FakeTool(KB, _found()))
    first = await h.call(call_id="call_dup")
    second = await h.call(call_id="call_dup")
    assert first["tool_call_id"] == "call_dup"
    assert second["tool_call_id"] != "call_dup"
    assert MINTED.fullmatch(second["tool_call_id"])
    assert [r.tool_call_id for r in await h.canonical.list_run("run-1")] == ["call_dup", second["tool_call_id"]]


async def test_same_provider_id_in_another_run_is_kept() -> None:
    """Ids are unique per run; another run may use the same provider id."""
    h = Harness(FakeTool(KB, _found()))
    await h.call(call_id="call_x")
    other = await h.call(call_id="call_x", ctx=h.context("run-2"))
    assert other["tool_call_id"] == "call_x"


async def test_parallel_calls_with_one_provider_id_get_distinct_ids() -> None:
    """Concurrent calls never share an id, and each id resolves to that call's own READY record and projection."""
    h = Harness(FakeTool(KB, respond=lambda args: _found(1, text=f"answer for {args.model_dump()['query']}"), delay_s=0.01))
    results = await asyncio.gather(*(h.call(call_id="same", args={"query": f"q{i}"}) for i in range(8)))
    assert len({r["tool_call_id"] for r in results}) == 8
    assert sum(r["tool_call_id"] == "same" for r in results) == 1
    for i, result in enumerate(results):
        record = await h.record(result["tool_call_id"])
        assert record is not None
        assert record.state == InvocationState.READY
        assert record.projection == result
        assert record.arguments == {"query": f"q{i}"}
        assert result["evidence_blocks"][0]["text"] == f"answer for q{i}"
    assert len(await h.canonical.list_run("run-1")) == 8


async def test_unknown_tool_is_an_error_without_a_record() -> None:
    """An unknown tool name gives UNKNOWN_TOOL listing the real tools; nothing is stored as canonical."""
    h = Harness(FakeTool(KB, _found()))
    projection = await h.call(name="rm_rf")
    assert projection["evidence_status"] == "ERROR"
    assert projection["error"]["code"] == "UNKNOWN_TOOL"
    assert "query_logs" in projection["error"]["message"]
    assert await h.record(projection["tool_call_id"]) is None
    (event,) = await h.timeline_store.list("run-1")
    assert event.summary["error_code"] == "UNKNOWN_TOOL"


async def test_tool_not_configured_is_an_error() -> None:
    """A real tool name with no backend configured gives TOOL_UNAVAILABLE and a FAILED record."""
    h = Harness(FakeTool(KB, _found()))
    projection = await h.call(name="query_mysql", args={"sql": "select 1"})
    PROJECTION.validate_python(projection)
    assert projection["error"]["code"] == "TOOL_UNAVAILABLE"
    record = await h.record("call_a")
    assert record is not None
    assert record.state == InvocationState.FAILED


@pytest.mark.parametrize(
    ("args", "fragment"),
    [("{not json", "not valid JSON"), ("[1, 2]", "JSON object"), ('"query"', "JSON object"), ("x" * 20_000, "exceed")],
)
async def test_bad_json_arguments_are_invalid_arguments(args: str, fragment: str) -> None:
    """Arguments that are not one JSON object give INVALID_ARGUMENTS and the tool is not run."""
    tool = FakeTool(KB, _found())
    h = Harness(tool)
    projection = await h.call(args=args)
    assert projection["error"]["code"] == "INVALID_ARGUMENTS"
    assert fragment in projection["error"]["message"]
    assert tool.calls == []
    record = await h.record("call_a")
    assert record is not None
    assert record.state == InvocationState.FAILED


async def test_validation_errors_name_each_bad_field_without_echoing_input() -> None:
    """The message lists the bad fields in plain words and never repeats the (possibly secret) values."""
    tool = FakeTool(KB, _found())
    h = Harness(tool)
    projection = await h.call(args={"limit": 500, "password": "hunter2"})
    message = projection["error"]["message"]
    assert projection["error"]["code"] == "INVALID_ARGUMENTS"
    assert "query" in message
    assert "limit" in message
    assert "password" in message
    assert "hunter2" not in message
    assert "500" not in message
    assert tool.calls == []


async def test_empty_arguments_mean_no_fields() -> None:
    """An empty argument string is an empty object (then validation says what is missing)."""
    h = Harness(FakeTool(KB, _found()))
    projection = await h.call(args="")
    assert projection["error"]["code"] == "INVALID_ARGUMENTS"
    assert "query" in projection["error"]["message"]


async def test_tool_call_budget_exhausted() -> None:
    """Once max_tool_calls calls were made, the next is BUDGET_EXHAUSTED and the backend is not called."""
    tool = FakeTool(KB, _found())
    h = Harness(tool, budgets=Budgets(max_tool_calls=2))
    await h.call(call_id="a")
    await h.call(call_id="b")
    projection = await h.call(call_id="c")
    assert projection["error"]["code"] == "BUDGET_EXHAUSTED"
    assert len(tool.calls) == 2
    assert h.ctx.tool_calls == 2


async def test_observation_bytes_budget_exhausted() -> None:
    """When the run has seen its observation bytes, further calls are refused."""
    tool = FakeTool(KB, _found())
    h = Harness(tool, budgets=Budgets(max_observation_bytes=4096))
    h.ctx.observation_bytes = 3000
    projection = await h.call()
    assert projection["error"]["code"] == "BUDGET_EXHAUSTED"
    assert tool.calls == []


async def test_parallel_calls_cannot_overrun_the_observation_budget() -> None:
    """Projection bytes are reserved up front, so concurrent big results stay within max_observation_bytes."""
    big = _found(50, "w" * 490)
    h = Harness(FakeTool(KB, big, delay_s=0.01), budgets=Budgets(max_observation_bytes=20_000))
    results = await asyncio.gather(*(h.call(call_id=f"c{i}") for i in range(6)))
    admitted = [r for r in results if r["evidence_status"] == "EVIDENCE_FOUND"]
    assert 2 <= len(admitted) < 6
    assert sum(projection_size(r) for r in admitted) <= 20_000
    assert h.ctx.observation_bytes == sum(projection_size(r) for r in results)


async def test_deadline_passed_refuses_calls() -> None:
    """A run past its wall-clock deadline makes no more tool calls."""
    tool = FakeTool(KB, _found())
    h = Harness(tool, budgets=Budgets(deadline_s=0.0))
    projection = await h.call()
    assert projection["error"]["code"] == "BUDGET_EXHAUSTED"
    assert tool.calls == []


async def test_cancelled_run_refuses_calls() -> None:
    """After cancellation, calls return CANCELLED without running the backend."""
    tool = FakeTool(KB, _found())
    h = Harness(tool)
    h.ctx.cancelled.set()
    projection = await h.call()
    assert projection["error"]["code"] == "CANCELLED"
    assert tool.calls == []


async def test_cancellation_during_a_call_stops_it() -> None:
    """Cancelling while the backend runs ends the call at once as CANCELLED and cancels the backend task."""
    tool = FakeTool(KB, _found(), delay_s=30)
    h = Harness(tool)
    task = asyncio.create_task(h.call())
    await until(lambda: bool(tool.calls), message="the backend to start")
    h.ctx.cancelled.set()
    projection = await asyncio.wait_for(task, 2)
    assert projection["error"]["code"] == "CANCELLED"
    assert tool.cancelled == 1
    record = await h.record("call_a")
    assert record is not None
    assert record.state == InvocationState.FAILED


async def test_slow_tool_times_out() -> None:
    """A backend slower than tool_timeout_s gives TIMEOUT and is cancelled."""
    tool = FakeTool(LOGS, RawResult(total_count=0), delay_s=30)
    h = Harness(tool, budgets=Budgets(tool_timeout_s=0.05))
    projection = await asyncio.wait_for(h.call(name="query_logs"), 2)
    PROJECTION.validate_python(projection)
    assert projection["error"]["code"] == "TIMEOUT"
    assert tool.cancelled == 1


async def test_timeout_is_capped_by_the_run_deadline() -> None:
    """The per-tool timeout never outlasts the run's remaining time."""
    tool = FakeTool(KB, _found(), delay_s=30)
    h = Harness(tool, budgets=Budgets(tool_timeout_s=60, deadline_s=0.1))
    projection = await asyncio.wait_for(h.call(), 2)
    assert projection["error"]["code"] == "TIMEOUT"


async def test_tool_failure_keeps_its_code_and_redacts_its_message() -> None:
    """ToolFailure becomes an ERROR with its code; secrets in its message are redacted."""
    tool = FakeTool(KB, error=ToolFailure("SQL_REFUSED", "refused for mysql://root:rootpw@db/shop"))
    h = Harness(tool)
    projection = await h.call()
    assert projection["error"]["code"] == "SQL_REFUSED"
    assert "rootpw" not in projection["error"]["message"]
    (meta,) = await h.audit.invocations("run-1")
    assert meta.state == InvocationState.FAILED
    assert meta.error_code == "SQL_REFUSED"


async def test_unexpected_exception_is_a_generic_backend_error(caplog: pytest.LogCaptureFixture) -> None:
    """Any other exception gives BACKEND_ERROR with a generic message; the WARNING log carries no payload."""
    tool = FakeTool(KB, error=RuntimeError("row: card=4111111111111111 password=hunter2"))
    h = Harness(tool)
    with caplog.at_level(logging.INFO):
        projection = await h.call()
    assert projection["error"]["code"] == "BACKEND_ERROR"
    assert "4111" not in projection["error"]["message"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert any("RuntimeError" in w for w in warnings)
    assert not any("4111" in w or "hunter2" in w for w in warnings)


async def test_wrong_result_type_is_a_backend_error() -> None:
    """A backend returning something other than RawResult is a BACKEND_ERROR, not a crash."""
    tool = FakeTool(KB, respond=lambda _: {"items": []})  # type: ignore[arg-type, return-value]
    h = Harness(tool)
    assert (await h.call())["error"]["code"] == "BACKEND_ERROR"


async def test_unserialisable_backend_values_are_a_backend_error() -> None:
    """A result that cannot be serialised cannot be stored or verified, so it is an ERROR, not a crash."""
    tool = FakeTool(ToolName.QUERY_MYSQL, RawResult(columns=["blob"], rows=[[object()]], total_count=1))
    h = Harness(tool)
    projection = await h.call(name="query_mysql")
    assert projection["error"]["code"] == "BACKEND_ERROR"
    record = await h.record("call_a")
    assert record is not None
    assert record.state == InvocationState.FAILED


async def test_python_argument_values_are_normalised_to_json() -> None:
    """A direct caller passing non-JSON values still gets a stored, serialisable record."""
    h = Harness(FakeTool(KB, _found(), args_model=FreeArgs))
    projection = await h.call(args={"query": "x", "when": {1, 2}})
    assert projection["evidence_status"] == EvidenceStatus.EVIDENCE_FOUND
    record = await h.record("call_a")
    assert record is not None
    assert record.arguments == {"query": "x", "when": "{1, 2}"}


class DownStore:
    """A canonical store whose Redis is gone (optionally only for put)."""

    def __init__(self, reserve_ok: bool) -> None:
        self.reserve_ok = reserve_ok

    async def reserve(self, run_id: str, tool_call_id: str) -> bool:
        if self.reserve_ok:
            return True
        raise StoreUnavailable("canonical store (Redis)", "ConnectionError")

    async def put(self, record: CanonicalRecord) -> None:
        raise StoreUnavailable("canonical store (Redis)", "ConnectionError")

    async def get_many(self, run_id: str, tool_call_ids: Sequence[str]) -> dict[str, CanonicalRecord | None]:
        raise StoreUnavailable("canonical store (Redis)", "ConnectionError")

    async def list_run(self, run_id: str) -> list[CanonicalRecord]:
        raise StoreUnavailable("canonical store (Redis)", "ConnectionError")


@pytest.mark.parametrize("reserve_ok", [False, True])
async def test_canonical_store_down_gives_store_unavailable(reserve_ok: bool) -> None:
    """Without a canonical record a call cannot be evidence: STORE_UNAVAILABLE, and the backend result is withheld."""
    tool = FakeTool(KB, _found())
    h = Harness(tool, canonical=DownStore(reserve_ok))
    projection = await h.call()
    PROJECTION.validate_python(projection)
    assert projection["error"]["code"] == "STORE_UNAVAILABLE"
    assert projection["evidence_blocks"] == []


class DownPendingStore(DownStore):
    """A store that claims and writes in one step (as both real stores do), with its Redis gone."""

    async def reserve_pending(self, record: CanonicalRecord) -> bool:
        raise StoreUnavailable("canonical store (Redis)", "ConnectionError")


async def test_store_down_at_the_one_step_claim_is_not_a_counted_call() -> None:
    """A valid call whose claim-and-write fails: STORE_UNAVAILABLE under a fresh id, the result withheld, and the
    call's admission undone as when a separate claim fails."""
    tool = FakeTool(KB, _found())
    h = Harness(tool, canonical=DownPendingStore(reserve_ok=True))
    projection = await h.call(call_id="call_given")
    PROJECTION.validate_python(projection)
    assert projection["error"]["code"] == "STORE_UNAVAILABLE"
    assert projection["tool_call_id"] != "call_given"
    assert h.ctx.tool_calls == 0
    assert h.ctx.observation_bytes == projection_size(projection)
    assert tool.calls == []


class BrokenAudit(InMemoryAuditStore):
    async def record_invocation(self, meta: Any) -> None:
        raise ConnectionError("sql down")


async def test_audit_outage_does_not_fail_the_call() -> None:
    """The audit row is bookkeeping: its failure is logged and the evidence still reaches the agent."""
    h = Harness(FakeTool(KB, _found()), audit=BrokenAudit())
    assert (await h.call())["evidence_status"] == EvidenceStatus.EVIDENCE_FOUND


async def test_failing_progress_sink_does_not_fail_the_call() -> None:
    """A progress sink that raises (Slack hiccup) does not change the result."""
    h = Harness(FakeTool(KB, _found()), progress=RecordingProgress(fail=True))
    assert (await h.call())["evidence_status"] == EvidenceStatus.EVIDENCE_FOUND
    assert h.progress.stages == [ProgressStage.TOOL_STARTED, ProgressStage.TOOL_FINISHED]


async def test_projection_is_bounded_by_projection_max_bytes() -> None:
    """The boundary's projection bound applies to every result."""
    tool = FakeTool(KB, _found(50, "z" * 2000))
    boundary = ToolBoundary({KB: tool}, InMemoryCanonicalStore(), InMemoryAuditStore(), projection_max_bytes=3000)
    ctx = RunContext(run_id="r", session_key="s", query="q", timeline=RunTimeline("r", InMemoryTimelineStore()))
    projection = await boundary.invoke(ctx, "c1", "lookup_knowledge", {"query": "x"})
    assert projection_size(projection) <= 3000
    assert projection["truncated"] is True


def test_tiny_projection_bound_is_refused() -> None:
    """A projection bound too small to be valid is a configuration error at construction."""
    with pytest.raises(ValueError, match="projection_max_bytes"):
        ToolBoundary({}, InMemoryCanonicalStore(), InMemoryAuditStore(), projection_max_bytes=100)


async def test_timeline_events_are_ordered_across_calls() -> None:
    """Each call adds one TOOL_CALL event with the next seq, success or error."""
    h = Harness(FakeTool(KB, _found()))
    await h.call(call_id="a")
    await h.call(call_id="b", args="{bad")
    await h.call(call_id="c", name="nope")
    events = await h.timeline_store.list("run-1")
    assert [e.seq for e in events] == [1, 2, 3]
    assert [e.summary["error_code"] for e in events] == [None, "INVALID_ARGUMENTS", "UNKNOWN_TOOL"]


@pytest.mark.parametrize("tool_name", list(ToolName), ids=[t.value for t in ToolName])
async def test_default_projection_bound_is_8_kib_whatever_the_raw_size(tool_name: ToolName) -> None:
    """SPEC §3.1: with no configuration, a ~2 MB raw result of any tool comes back as at most 8 KiB, flagged."""
    if tool_name is ToolName.QUERY_MYSQL:
        raw = RawResult(columns=["a", "b"], rows=[["x" * 2000, "y" * 2000] for _ in range(500)], total_count=500)
    elif tool_name is ToolName.QUERY_LOGS:
        raw = RawResult(items=[{"timestamp": "2026-11-29T23:00:00Z", "service": "s", "level": "ERROR",
                                "message": "m" * 4000} for _ in range(500)], total_count=500)
    else:
        raw = RawResult(items=[{"doc": f"d{i}.md", "heading": "h", "text": "t" * 4000, "score": 1.0} for i in range(500)],
                        total_count=500)
    boundary = ToolBoundary({tool_name: FakeTool(tool_name, raw)}, InMemoryCanonicalStore(), InMemoryAuditStore())
    ctx = RunContext(run_id="r", session_key="s", query="q", timeline=RunTimeline("r", InMemoryTimelineStore()))
    projection = await boundary.invoke(ctx, "c1", tool_name.value, {"query": "x"})
    PROJECTION.validate_python(projection)
    assert projection["evidence_status"] == EvidenceStatus.EVIDENCE_FOUND
    assert projection_size(projection) <= 8192
    assert projection["truncated"] is True
    assert projection["count"] == 500
