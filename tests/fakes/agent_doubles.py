"""Small in-test doubles for the agent-area tests: a recording audit/timeline/progress and a scripted tool boundary.

The boundary double follows the ToolBoundary contract of ARCHITECTURE.md (never raises, mints ids when missing
or reused, enforces the tool-call and observation budgets, writes canonical records) over canned results.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from core.contracts.evidence import CanonicalRecord, EvidenceStatus, InvocationMeta, InvocationState
from core.contracts.run import EventType
from core.run import RunContext
from testkit.tool_names import ToolName


class RecordingAudit:
    """AuditStore double keeping reasoning rows and invocation metas in lists."""

    def __init__(self) -> None:
        self.reasoning: list[tuple[str, str, int, str]] = []
        self.invocations: list[InvocationMeta] = []

    async def record_invocation(self, meta: InvocationMeta) -> None:
        self.invocations.append(meta)

    async def record_reasoning(self, run_id: str, stage: str, step: int, content: str | None) -> None:
        self.reasoning.append((run_id, stage, step, content if content is not None else "unavailable"))


class RecordingTimeline:
    """Timeline double keeping (type, summary, duration) triples."""

    def __init__(self) -> None:
        self.events: list[tuple[EventType, dict[str, Any], float]] = []

    async def record(self, type: EventType, summary: dict[str, Any] | None = None, duration_ms: float = 0.0) -> None:
        self.events.append((type, dict(summary or {}), duration_ms))

    def of(self, type: EventType) -> list[dict[str, Any]]:
        return [s for t, s, _ in self.events if t == type]


class DictCanonicalStore:
    """CanonicalStore double over a dict."""

    def __init__(self) -> None:
        self.records: dict[tuple[str, str], CanonicalRecord] = {}

    async def reserve(self, run_id: str, tool_call_id: str) -> bool:
        return (run_id, tool_call_id) not in self.records

    async def put(self, record: CanonicalRecord) -> None:
        self.records[(record.run_id, record.tool_call_id)] = record

    async def get_many(self, run_id: str, tool_call_ids: Sequence[str]) -> dict[str, CanonicalRecord | None]:
        return {i: self.records.get((run_id, i)) for i in tool_call_ids}

    async def list_run(self, run_id: str) -> list[CanonicalRecord]:
        return [r for (rid, _), r in self.records.items() if rid == run_id]


Responder = Callable[[str, dict[str, Any]], dict[str, Any]]


def logs_result(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """Canned query_logs items (status follows from the list)."""
    return {"logs": lines}


class FakeBoundary:
    """ToolBoundary double: canned projections by tool name (or a responder), real id minting and budgets."""

    def __init__(self, canned: dict[str, Any] | None = None, responder: Responder | None = None,
                 canonical: DictCanonicalStore | None = None, delay_s: float = 0.0) -> None:
        self.canned = canned or {}
        self.responder = responder
        self.canonical = canonical or DictCanonicalStore()
        self.delay_s = delay_s
        self.calls: list[tuple[str | None, str, str | dict[str, Any]]] = []
        self.in_flight = 0
        self.max_in_flight = 0

    async def invoke(self, ctx: RunContext, tool_call_id: str | None, name: str,
                     arguments: str | dict[str, Any]) -> dict[str, Any]:
        import asyncio

        self.calls.append((tool_call_id, name, arguments))
        call_id = tool_call_id
        if not call_id or not await self.canonical.reserve(ctx.run_id, call_id):
            call_id = f"tc_{uuid.uuid4().hex[:10]}"
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay_s:
                await asyncio.sleep(self.delay_s)  # a slow backend, as configured by the test
        finally:
            self.in_flight -= 1
        try:
            tool = ToolName(name)
        except ValueError:
            return self._error(ctx, call_id, ToolName.QUERY_LOGS, {}, "UNKNOWN_TOOL", f"no tool {name}")
        args = arguments if isinstance(arguments, dict) else _loads(arguments)
        if args is None:
            return self._error(ctx, call_id, tool, {}, "INVALID_ARGUMENTS", "arguments are not a JSON object")
        if ctx.tool_calls >= ctx.budgets.max_tool_calls:
            return self._error(ctx, call_id, tool, args, "BUDGET_EXHAUSTED", "tool call budget exhausted")
        if ctx.observation_bytes >= ctx.budgets.max_observation_bytes:
            return self._error(ctx, call_id, tool, args, "BUDGET_EXHAUSTED", "observation budget exhausted")
        ctx.tool_calls += 1
        items = self.responder(name, args) if self.responder else self.canned.get(name, {})
        projection = self._projection(call_id, tool, items)
        ctx.observation_bytes += len(json.dumps(projection).encode())
        await self._store(ctx, call_id, tool, args, projection)
        return projection

    def _projection(self, call_id: str, tool: ToolName, items: dict[str, Any]) -> dict[str, Any]:
        key = {"lookup_knowledge": "evidence_blocks", "query_logs": "logs", "query_mysql": "rows"}[tool.value]
        found = bool(items.get(key))
        projection: dict[str, Any] = {
            "tool_call_id": call_id, "tool_name": tool.value,
            "evidence_status": (EvidenceStatus.EVIDENCE_FOUND if found else EvidenceStatus.NO_EVIDENCE).value,
            "count": len(items.get(key, [])), "truncated": False, "error": None,
        }
        projection.update(items)
        projection.setdefault(key, [])
        return projection

    def _error(self, ctx: RunContext, call_id: str, tool: ToolName, args: dict[str, Any], code: str,
               message: str) -> dict[str, Any]:
        return {"tool_call_id": call_id, "tool_name": tool.value, "evidence_status": "ERROR", "count": 0,
                "truncated": False, "error": {"code": code, "message": message}}

    async def _store(self, ctx: RunContext, call_id: str, tool: ToolName, args: dict[str, Any],
                     projection: dict[str, Any]) -> None:
        await self.canonical.put(CanonicalRecord(
            run_id=ctx.run_id, tool_call_id=call_id, tool_name=tool, arguments=args, effective_arguments=args,
            state=InvocationState.READY, evidence_status=EvidenceStatus(projection["evidence_status"]),
            projection=projection, started_at=datetime.now(UTC), finished_at=datetime.now(UTC), duration_ms=1.0,
        ))


def _loads(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def make_ctx(query: str = "why is order-service failing?", **budgets: Any) -> tuple[RunContext, RecordingTimeline]:
    """A RunContext with a recording timeline and the given budget overrides."""
    from core.contracts.run import Budgets

    timeline = RecordingTimeline()
    ctx = RunContext(run_id=f"run_{uuid.uuid4().hex[:8]}", session_key="T:C:1", query=query, timeline=timeline,
                     budgets=Budgets(**budgets))
    return ctx, timeline
