"""Every message kind, rendered from fixtures of every size up to the draft caps, stays inside Slack's limits.

Report (first screen), "Show all findings" pages, "Show evidence" of every finding, fallback, failure, knowledge,
chat and progress (placeholder edits and stream chunks) — each checked by the fake Slack's block validator.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.render.evidence import evidence_view
from bot.render.limits import MAX_BLOCKS, MAX_TOTAL_CHARS, fit_blocks
from bot.render.message import render_outcome
from bot.render.progress import ProgressState
from bot.render.report import all_findings_pages
from core.contracts.draft import MAX_ANALYSES, MAX_CALLS_PER_ANALYSIS, MAX_TEXT, Analysis, AnalysisKind
from core.contracts.evidence import EvidenceStatus
from core.contracts.progress import SUBJECT_MAX, ProgressStage, ProgressUpdate, ToolProgress
from core.contracts.release import (
    EvidenceSource,
    FactTable,
    FallbackMessage,
    FallbackType,
    ObservedFact,
    Outcome,
    PublishedReport,
    ReleaseOutcome,
)
from testkit.tool_names import ToolName
from tests.bot.oversized import LONG, max_draft
from tests.fakes.slack_ai import check_chunks
from tests.fakes.slack_server import validate_blocks

SIZES = [0, 1, 5, 6, MAX_ANALYSES]
TOOLS = [ToolName.QUERY_LOGS, ToolName.QUERY_MYSQL, ToolName.LOOKUP_KNOWLEDGE]


def _projection(tool: ToolName, cid: str) -> dict[str, Any]:
    """A projection at the boundary's 8 KiB bound, in the shape of each tool."""
    base = {"tool_call_id": cid, "tool_name": tool.value, "evidence_status": "EVIDENCE_FOUND", "count": 999,
            "truncated": True}
    if tool is ToolName.QUERY_LOGS:
        logs = [{"timestamp": "2026-11-29T23:05:28Z", "service": "order-service", "level": "ERROR",
                 "message": LONG[:400], "fields": {}} for _ in range(20)]
        return {**base, "window_start": "2026-11-29T22:30:00Z", "window_end": "2026-11-29T23:30:00Z", "logs": logs}
    if tool is ToolName.QUERY_MYSQL:
        return {**base, "columns": [f"column_{i}_" + "c" * 40 for i in range(20)],
                "rows": [[LONG[:60], 1.5, None, True, *range(16)] for _ in range(200)]}
    return {**base, "evidence_blocks": [{"doc": "runbooks/" + "d" * 200, "heading": "h" * 200, "text": LONG,
                                         "score": 1.0} for _ in range(5)]}


def _report(findings: int, calls: int = MAX_CALLS_PER_ANALYSIS) -> ReleaseOutcome:
    draft = max_draft()
    ids = [f"call_{i}" for i in range(calls)]
    draft.analysis = [Analysis(analysis_id=f"a{i}", kind=AnalysisKind.NORMAL, text=LONG, tool_call_ids=ids)
                      for i in range(findings)]
    tools = {cid: TOOLS[i % 3] for i, cid in enumerate(ids)}
    sources = [EvidenceSource(tool_call_id=cid, tool_name=tool, evidence_status=EvidenceStatus.EVIDENCE_FOUND,
                              label=f"{tool.value} " + "x " * 110) for cid, tool in tools.items()]
    report = PublishedReport(run_id="run_max", draft=draft, sources=sources,
                             evidence={cid: _projection(tool, cid) for cid, tool in tools.items()},
                             evidence_arguments={cid: {"service": "s" * 60, "query": "q" * 80, "sql": "SELECT " * 40}
                                                 for cid in ids})
    return ReleaseOutcome(run_id="run_max", outcome=Outcome.SUCCESS, report=report)


def _within_limits(blocks: list[dict[str, Any]]) -> None:
    assert validate_blocks(blocks) is None, validate_blocks(blocks)
    assert len(blocks) <= MAX_BLOCKS
    assert len(json.dumps(blocks)) <= MAX_TOTAL_CHARS


@pytest.mark.parametrize("findings", SIZES)
def test_report_first_screen_all_findings_and_every_evidence_view_fit(findings: int) -> None:
    """The report, each Show all findings page and each finding's evidence view fit, at every size."""
    outcome = _report(findings)
    message = render_outcome(outcome, 99.9)
    _within_limits(message.blocks)
    assert len(message.text) <= 3000
    assert outcome.report is not None
    for page in all_findings_pages(outcome.report):
        _within_limits(fit_blocks(page, run_id=None))
    for index in range(findings):
        view = fit_blocks(evidence_view(outcome.report, index), run_id=None)
        _within_limits(view)
        assert sum(b["type"] == "table" for b in view) <= 1


def test_evidence_view_of_a_small_finding_is_not_shortened() -> None:
    """One cited call of each kind fits without the truncation marker, table included."""
    outcome = _report(1, calls=3)
    assert outcome.report is not None
    blocks = fit_blocks(evidence_view(outcome.report, 0), run_id=None)
    _within_limits(blocks)
    assert "shortened" not in json.dumps(blocks)
    assert [b["type"] for b in blocks].count("table") == 1


@pytest.mark.parametrize("facts", [0, 1, 8, 60])
@pytest.mark.parametrize("outcome_kind", [Outcome.SAFE_FALLBACK, Outcome.FAILURE])
def test_fallbacks_and_failures_fit_at_every_size(facts: int, outcome_kind: Outcome) -> None:
    """Facts with their lines and tables at the caps, long reasons and steps: inside every limit."""
    table = FactTable(columns=["c" * 40] * 8, rows=[["v" * 40] * 8] * 5, total_rows=500)
    observed = [ObservedFact(text="x" * 400, tool_call_id=f"c{i}", tool_name=TOOLS[i % 3],
                             evidence_status=EvidenceStatus.EVIDENCE_FOUND, lines=["l" * 200] * 3,
                             table=table if i % 3 == 1 else None) for i in range(facts)]
    fallback = FallbackMessage(stage="s" * 300, reason="r" * 600, observed_facts=observed, next_steps=["n" * 300] * 6)
    kind = FallbackType.SEMANTIC_UNSUPPORTED if outcome_kind is Outcome.SAFE_FALLBACK else None
    _within_limits(render_outcome(ReleaseOutcome(run_id="run_f", outcome=outcome_kind, fallback_type=kind,
                                                 fallback=fallback)).blocks)


def test_progress_with_hundreds_of_tasks_fits_as_edits_and_as_stream_chunks() -> None:
    """200 tool calls with subjects at their cap: the placeholder edit fits, each task chunk is one Slack accepts."""
    state = ProgressState()
    chunks: list[dict[str, Any]] = []
    for i in range(200):
        tool = ToolProgress(tool_call_id=f"call_{i}", tool=TOOLS[i % 3].value, subject="s" * SUBJECT_MAX,
                            evidence_status=EvidenceStatus.ERROR, count=0, error_code="X" * 64)
        chunks += [t.chunk() for t in state.apply("run_p", ProgressUpdate(stage=ProgressStage.TOOL_FINISHED, tool=tool))]
    for stage in (ProgressStage.EVIDENCE_CHECK, ProgressStage.REPAIR, ProgressStage.REVIEW, ProgressStage.RELEASE):
        chunks += [t.chunk() for t in state.apply("run_p", ProgressUpdate(stage=stage))]
    _text, blocks = state.render()
    _within_limits(blocks)
    assert check_chunks({"chunks": chunks}) is None


@pytest.mark.parametrize("intent", ["KNOWLEDGE", "CHAT"])
def test_knowledge_and_chat_answers_fit(intent: str) -> None:
    """A knowledge fallback listing many documents and a chat answer at the text cap fit."""
    from core.contracts.release import KnowledgeResult

    outcome = ReleaseOutcome(run_id="run_k", intent=intent, outcome=Outcome.SAFE_FALLBACK if intent == "KNOWLEDGE"
                             else Outcome.SUCCESS, chat_text=LONG * 3,
                             knowledge=KnowledgeResult(documents_found=["d" * 300] * 50))
    _within_limits(render_outcome(outcome).blocks)
    assert MAX_TEXT == 1000
