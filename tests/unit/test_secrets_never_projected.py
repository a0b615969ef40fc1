"""A secret planted anywhere in a tool's raw result never reaches what leaves the canonical record.

SPEC §3.1: secrets are redacted before projection. For each tool, one secret of each kind is planted in every
field the backend returns; through the real ToolBoundary, neither the projection (what the agent sees), nor the
audit row, the TOOL_CALL timeline event or the progress update carries any of them. The canonical record keeps
the raw result (visible to the harness only) — which proves the secrets really went in.
"""

from __future__ import annotations

from typing import Any

import pytest

from core.contracts.evidence import EvidenceStatus, RawResult
from core.contracts.progress import ProgressUpdate
from core.errors import ToolFailure
from core.evidence.boundary import ToolBoundary
from core.run import RunContext
from core.service.timeline import RunTimeline
from core.stores.canonical import InMemoryCanonicalStore
from core.stores.memory import InMemoryAuditStore, InMemoryTimelineStore
from testkit.tool_names import ToolName
from testkit.tools import FakeTool

# (secret value that must never be shown, text carrying it)
PLANTED = [
    ("Pl4ntedPassw0rd", "password=Pl4ntedPassw0rd"),
    ("DsnS3cretPw", "mysql://app:DsnS3cretPw@db.internal:3306/shop"),
    ("xoxb-5555555555-6666666666-plantedtok", "using xoxb-5555555555-6666666666-plantedtok"),
    ("sk-proj-plantedplantedplantedplanted01", "key sk-proj-plantedplantedplantedplanted01 rejected"),
    ("AKIAPLANTEDPLANT0001", "aws AKIAPLANTEDPLANT0001 in use"),
    ("Bearertok3nPlanted99", "Authorization: Bearer Bearertok3nPlanted99"),
]
SECRETS = [s for s, _ in PLANTED]
CARRIERS = " | ".join(t for _, t in PLANTED)


def _raw(tool: ToolName) -> RawResult:
    if tool is ToolName.QUERY_LOGS:
        item: dict[str, Any] = {
            "timestamp": "2026-11-29T23:05:28Z",
            "service": "order-service",
            "level": "ERROR",
            "message": f"connect failed: {CARRIERS}",
            "note": PLANTED[0][1],
            "db_password": "FieldPw0rdPlanted",
            "dsn": PLANTED[1][1],
            "api_token": "FieldTok3nPlanted",
        }
        return RawResult(items=[item], total_count=1)
    if tool is ToolName.QUERY_MYSQL:
        return RawResult(
            columns=["id", "password", "api_key", "note", "dsn"],
            rows=[[1, "ColPw0rdPlanted", "ColKeyPlanted", CARRIERS, PLANTED[1][1]]],
            total_count=1,
        )
    return RawResult(
        items=[{"doc": "db/hikari.md", "heading": f"Pool {PLANTED[0][1]}", "text": f"Example: {CARRIERS}", "score": 1.0}],
        total_count=1,
    )


EXTRA = ["FieldPw0rdPlanted", "FieldTok3nPlanted", "ColPw0rdPlanted", "ColKeyPlanted"]


def _harness(tool: FakeTool) -> tuple[ToolBoundary, RunContext, InMemoryCanonicalStore, InMemoryAuditStore,
                                      InMemoryTimelineStore, list[Any]]:
    canonical, audit, timeline = InMemoryCanonicalStore(), InMemoryAuditStore(), InMemoryTimelineStore()
    updates: list[Any] = []

    class Progress:
        async def update(self, run_id: str, update: ProgressUpdate) -> None:
            updates.append((run_id, update.stage, update.model_dump(mode="json")))

    ctx = RunContext(run_id="run-s", session_key="T:C:1", query="why?", timeline=RunTimeline("run-s", timeline),
                     progress=Progress())
    return ToolBoundary({tool.name: tool}, canonical, audit), ctx, canonical, audit, timeline, updates


@pytest.mark.parametrize("tool", list(ToolName), ids=[t.value for t in ToolName])
async def test_secrets_planted_in_every_raw_field_never_leave_the_canonical_record(tool: ToolName) -> None:
    """Every planted secret is in the raw result and absent from projection, audit, timeline and progress."""
    boundary, ctx, canonical, audit, timeline, updates = _harness(FakeTool(tool, _raw(tool)))
    projection = await boundary.invoke(ctx, "call_s", tool.value, {"query": "pool"})
    assert projection["evidence_status"] == EvidenceStatus.EVIDENCE_FOUND
    record = (await canonical.get_many("run-s", ["call_s"], with_raw=True))["call_s"]
    assert record is not None
    raw_text = record.raw_result.model_dump_json() if record.raw_result else ""
    planted_here = [s for s in [*SECRETS, *EXTRA] if s in raw_text]
    assert len(planted_here) >= len(SECRETS), "the secrets really were in the raw result"
    shown = {
        "projection": str(projection),
        "record.projection": str(record.projection),
        "audit": str([m.model_dump() for m in await audit.invocations("run-s")]),
        "timeline": str([e.model_dump() for e in await timeline.list("run-s")]),
        "progress": str(updates),
    }
    for where, text in shown.items():
        leaked = [s for s in planted_here if s in text]
        assert leaked == [], f"{where} leaks {leaked}"


@pytest.mark.parametrize("tool", list(ToolName), ids=[t.value for t in ToolName])
async def test_secrets_in_a_tool_failure_message_never_leave_the_boundary(tool: ToolName) -> None:
    """A backend error message quoting a DSN or token is redacted in the ERROR projection and everywhere else."""
    failure = ToolFailure("BACKEND_UNAVAILABLE", f"cannot connect: {CARRIERS}")
    boundary, ctx, _canonical, audit, timeline, updates = _harness(FakeTool(tool, error=failure))
    projection = await boundary.invoke(ctx, "call_e", tool.value, {"query": "pool"})
    assert projection["evidence_status"] == EvidenceStatus.ERROR
    assert projection["error"]["code"] == "BACKEND_UNAVAILABLE"
    shown = [str(projection), str([m.model_dump() for m in await audit.invocations("run-s")]),
             str([e.model_dump() for e in await timeline.list("run-s")]), str(updates)]
    for text in shown:
        assert [s for s in SECRETS if s in text] == [], text


@pytest.mark.parametrize("tool", list(ToolName), ids=[t.value for t in ToolName])
async def test_secret_in_the_agents_arguments_never_reaches_projection_audit_timeline_or_progress(tool: ToolName) -> None:
    """Arguments are kept in the canonical record only; what leaves the boundary never repeats them."""
    boundary, ctx, canonical, audit, timeline, updates = _harness(FakeTool(tool, _raw(tool)))
    projection = await boundary.invoke(ctx, "call_a", tool.value, {"query": "login password=ArgS3cretPw failed"})
    record = (await canonical.get_many("run-s", ["call_a"]))["call_a"]
    assert record is not None
    assert "ArgS3cretPw" in str(record.arguments), "the argument really went in"
    for text in (str(projection), str([m.model_dump() for m in await audit.invocations("run-s")]),
                 str([e.model_dump() for e in await timeline.list("run-s")]), str(updates)):
        assert "ArgS3cretPw" not in text
