"""Test doubles for the release path: a scripted repairer, a fixed judge, a counting/failing store wrapper, record builders."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from core.contracts.draft import DiagnosisDraft
from core.contracts.evidence import CallSummary, CanonicalRecord, EvidenceStatus, InvocationState, ToolError
from core.contracts.release import SemanticVerdict, SemanticVerdictKind, VerifiedEvidenceSnapshot, Violation
from core.ports import CanonicalStore, Timeline
from testkit.tool_names import ToolName

FIXED_TIME = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)


@dataclass
class RepairCall:
    """What one repair() call received."""

    query: str
    draft: DiagnosisDraft
    violations: list[Violation]
    referencable: list[CallSummary]


@dataclass
class ScriptedRepairer:
    """EvidenceRepairer double: returns the given draft (or None), or raises `error`; records every call."""

    result: DiagnosisDraft | None = None
    error: Exception | None = None
    calls: list[RepairCall] = field(default_factory=list)

    async def repair(
        self,
        query: str,
        draft: DiagnosisDraft,
        violations: Sequence[Violation],
        referencable: Sequence[CallSummary],
        *,
        run_id: str | None = None,
        time_left_s: float | None = None,
        timeline: Timeline | None = None,
    ) -> DiagnosisDraft | None:
        """Record the inputs, then answer as scripted."""
        self.calls.append(RepairCall(query, draft, list(violations), list(referencable)))
        if self.error is not None:
            raise self.error
        return self.result


@dataclass
class JudgeCall:
    """What one judge() call received."""

    query: str
    draft: DiagnosisDraft
    snapshot: VerifiedEvidenceSnapshot


@dataclass
class FixedJudge:
    """SemanticJudge double: returns one verdict (or raises `error`) and records its inputs."""

    verdict: SemanticVerdict = field(
        default_factory=lambda: SemanticVerdict(verdict=SemanticVerdictKind.SUPPORTED, reason="evidence supports the draft")
    )
    error: Exception | None = None
    calls: list[JudgeCall] = field(default_factory=list)

    async def judge(
        self, query: str, draft: DiagnosisDraft, snapshot: VerifiedEvidenceSnapshot, *,
        time_left_s: float | None = None, timeline: Timeline | None = None,
    ) -> SemanticVerdict:
        """Record the inputs, then answer as scripted."""
        self.calls.append(JudgeCall(query, draft, snapshot))
        if self.error is not None:
            raise self.error
        return self.verdict


class CountingCanonicalStore:
    """Wraps a real CanonicalStore, counts reads, and can be switched 'down' to raise ConnectionError on every call."""

    def __init__(self, inner: CanonicalStore) -> None:
        self.inner = inner
        self.get_many_calls: list[list[str]] = []
        self.list_run_calls = 0
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise ConnectionError("canonical store is down")

    async def reserve(self, run_id: str, tool_call_id: str) -> bool:
        """Delegate (or fail when down)."""
        self._check()
        return await self.inner.reserve(run_id, tool_call_id)

    async def put(self, record: CanonicalRecord) -> None:
        """Delegate (or fail when down)."""
        self._check()
        await self.inner.put(record)

    async def get_many(
        self, run_id: str, tool_call_ids: Sequence[str], *, with_raw: bool = False
    ) -> dict[str, CanonicalRecord | None]:
        """Count, then delegate (or fail when down)."""
        self.get_many_calls.append(list(tool_call_ids))
        self._check()
        return await self.inner.get_many(run_id, tool_call_ids, with_raw=with_raw)

    async def list_run(self, run_id: str, *, with_raw: bool = False) -> list[CanonicalRecord]:
        """Count, then delegate (or fail when down)."""
        self.list_run_calls += 1
        self._check()
        return await self.inner.list_run(run_id, with_raw=with_raw)


# ---- record builders -------------------------------------------------------------------------


def _record(
    run_id: str,
    tool_call_id: str,
    tool: ToolName,
    status: EvidenceStatus,
    projection: dict[str, Any],
    arguments: dict[str, Any],
    effective: dict[str, Any],
) -> CanonicalRecord:
    return CanonicalRecord(
        run_id=run_id,
        tool_call_id=tool_call_id,
        tool_name=tool,
        arguments=arguments,
        effective_arguments=effective,
        state=InvocationState.READY,
        evidence_status=status,
        projection=projection,
        error=ToolError.model_validate(projection["error"]) if projection.get("error") else None,
        started_at=FIXED_TIME,
        finished_at=FIXED_TIME,
        duration_ms=12.0,
    )


def logs_record(
    run_id: str,
    tool_call_id: str,
    lines: Sequence[tuple[str, str, str]] = (),
    *,
    service: str = "order-service",
    query: str = "HikariPool",
    level: str | None = "ERROR",
    start: str = "2026-11-29T22:30:00Z",
    end: str = "2026-11-29T23:30:00Z",
    limit: int = 20,
    count: int | None = None,
) -> CanonicalRecord:
    """A READY query_logs record; `lines` are (timestamp, level, message); no lines means NO_EVIDENCE."""
    status = EvidenceStatus.EVIDENCE_FOUND if lines else EvidenceStatus.NO_EVIDENCE
    arguments: dict[str, Any] = {"service": service, "query": query}
    if level:
        arguments["level"] = level
    effective = {**arguments, "start": start, "end": end, "limit": limit}
    projection = {
        "tool_call_id": tool_call_id,
        "tool_name": "query_logs",
        "evidence_status": status.value,
        "count": len(lines) if count is None else count,
        "truncated": False,
        "window_start": start,
        "window_end": end,
        "logs": [{"timestamp": ts, "service": service, "level": lvl, "message": msg, "fields": {}} for ts, lvl, msg in lines],
    }
    return _record(run_id, tool_call_id, ToolName.QUERY_LOGS, status, projection, arguments, effective)


def sql_record(
    run_id: str, tool_call_id: str, sql: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> CanonicalRecord:
    """A READY query_mysql record; no rows means NO_EVIDENCE."""
    status = EvidenceStatus.EVIDENCE_FOUND if rows else EvidenceStatus.NO_EVIDENCE
    projection = {
        "tool_call_id": tool_call_id,
        "tool_name": "query_mysql",
        "evidence_status": status.value,
        "count": len(rows),
        "truncated": False,
        "columns": list(columns),
        "rows": [list(r) for r in rows],
    }
    return _record(run_id, tool_call_id, ToolName.QUERY_MYSQL, status, projection, {"sql": sql}, {"sql": sql})


def knowledge_record(
    run_id: str, tool_call_id: str, query: str, blocks: Sequence[tuple[str, str, str]] = (), top_k: int = 5
) -> CanonicalRecord:
    """A READY lookup_knowledge record; `blocks` are (doc, heading, text); none means NO_EVIDENCE."""
    status = EvidenceStatus.EVIDENCE_FOUND if blocks else EvidenceStatus.NO_EVIDENCE
    projection = {
        "tool_call_id": tool_call_id,
        "tool_name": "lookup_knowledge",
        "evidence_status": status.value,
        "count": len(blocks),
        "truncated": False,
        "evidence_blocks": [{"doc": d, "heading": h, "text": t, "score": 1.5} for d, h, t in blocks],
    }
    args = {"query": query, "top_k": top_k}
    return _record(run_id, tool_call_id, ToolName.LOOKUP_KNOWLEDGE, status, projection, args, args)


def error_record(run_id: str, tool_call_id: str, tool: ToolName, code: str, message: str, **arguments: Any) -> CanonicalRecord:
    """A READY record of a call that ended in ERROR (never evidence)."""
    projection = {
        "tool_call_id": tool_call_id,
        "tool_name": str(tool),
        "evidence_status": EvidenceStatus.ERROR.value,
        "count": 0,
        "truncated": False,
        "error": {"code": code, "message": message},
    }
    return _record(run_id, tool_call_id, tool, EvidenceStatus.ERROR, projection, dict(arguments), dict(arguments))
