"""SPEC §3/§5: ERROR is never evidence. Every way the real ToolBoundary can end a call in ERROR leaves a record the
real EvidenceGuard refuses to let a draft cite, whatever the analysis kind."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from core.contracts.draft import DiagnosisDraft
from core.contracts.evidence import EvidenceStatus, RawResult
from core.contracts.run import Budgets
from core.errors import ToolFailure
from core.evidence.boundary import ToolBoundary
from core.guard.evidence_guard import EvidenceGuard
from core.guard.rules import load_rules
from core.run import RunContext
from core.service.timeline import RunTimeline
from core.stores.canonical import InMemoryCanonicalStore
from core.stores.memory import InMemoryAuditStore, InMemoryTimelineStore
from testkit.tool_names import ToolName
from testkit.tools import FakeTool

KB = ToolName.LOOKUP_KNOWLEDGE
FOUND = RawResult(items=[{"doc": "rb.md", "heading": "Pool", "text": "HikariCP pool exhausted", "score": 1.0}],
                  total_count=1)
Invoke = Callable[[ToolBoundary, RunContext], Awaitable[dict[str, Any]]]


def _invoke(name: str = "lookup_knowledge", args: Any = '{"query": "pool"}') -> Invoke:
    async def run(boundary: ToolBoundary, ctx: RunContext) -> dict[str, Any]:
        return await boundary.invoke(ctx, "call_err", name, args)

    return run


CASES: list[tuple[str, FakeTool, Budgets, bool, Invoke]] = [
    ("tool-failure", FakeTool(KB, error=ToolFailure("SQL_REFUSED", "no")), Budgets(), False, _invoke()),
    ("unexpected-exception", FakeTool(KB, error=RuntimeError("boom")), Budgets(), False, _invoke()),
    ("invalid-arguments", FakeTool(KB, FOUND), Budgets(), False, _invoke(args='{"query": ""}')),
    ("bad-json", FakeTool(KB, FOUND), Budgets(), False, _invoke(args="{not json")),
    ("unknown-tool", FakeTool(KB, FOUND), Budgets(), False, _invoke(name="rm_rf")),
    ("timeout", FakeTool(KB, FOUND, delay_s=5), Budgets(tool_timeout_s=0.05), False, _invoke()),
    ("budget", FakeTool(KB, FOUND), Budgets(max_tool_calls=0), False, _invoke()),
    ("cancelled", FakeTool(KB, FOUND), Budgets(), True, _invoke()),
    ("wrong-result-type", FakeTool(KB, respond=lambda _: {"items": []}), Budgets(), False, _invoke()),  # type: ignore[arg-type, return-value]
]


@pytest.mark.parametrize("kind", ["NORMAL", "NEGATIVE_OBSERVATION"])
@pytest.mark.parametrize(("label", "tool", "budgets", "cancel", "invoke"), CASES, ids=[c[0] for c in CASES])
async def test_a_draft_citing_an_error_call_is_rejected(
    label: str, tool: FakeTool, budgets: Budgets, cancel: bool, invoke: Invoke, kind: str
) -> None:
    canonical = InMemoryCanonicalStore()
    boundary = ToolBoundary({tool.name: tool}, canonical, InMemoryAuditStore())
    ctx = RunContext(run_id="run-e", session_key="T:C:1", query="why?", timeline=RunTimeline("run-e", InMemoryTimelineStore()),
                     budgets=budgets)
    if cancel:
        ctx.cancelled.set()
    projection = await invoke(boundary, ctx)
    assert projection["evidence_status"] == EvidenceStatus.ERROR, label
    draft = DiagnosisDraft.model_validate({
        "conclusion": None,
        "analysis": [{"analysis_id": "a1", "kind": kind, "text": "The pool looks exhausted.",
                      "tool_call_ids": [projection["tool_call_id"]]}],
        "limitations": {"scope": "one runbook lookup", "missing_info": []},
    })
    result = await EvidenceGuard(canonical, load_rules()).check("run-e", draft)
    assert not result.valid, label
    assert result.snapshot is None
    assert {v.code for v in result.violations} <= {"INVOCATION_NOT_REFERENCABLE", "INVOCATION_MISSING"}, label
    assert [v.path for v in result.violations] == ["analysis[0].tool_call_ids[0]"]
