"""Renderers: what a report, fallback, knowledge answer, chat, help and trace say, and that user text is inert."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from bot.render.help import help_blocks
from bot.render.limits import fit_blocks
from bot.render.message import render_outcome
from bot.render.mrkdwn import escape
from bot.render.timeline import timeline_blocks
from core.contracts.draft import Action, Analysis, AnalysisKind, DiagnosisDraft, KnowledgeAnswer, KnowledgeCitation, Limitations
from core.contracts.evidence import EvidenceStatus
from core.contracts.release import (
    EvidenceSource,
    FallbackMessage,
    FallbackType,
    KnowledgeResult,
    ObservedFact,
    Outcome,
    PublishedReport,
    ReleaseOutcome,
)
from core.contracts.run import EventType, RunRecord, TimelineEvent
from testkit.tool_names import ToolName
from tests.fakes.slack_server import validate_blocks


def _all_text(blocks: list[dict[str, object]]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def _report(draft: DiagnosisDraft) -> ReleaseOutcome:
    sources = [EvidenceSource(tool_call_id="c1", tool_name=ToolName.QUERY_LOGS, evidence_status=EvidenceStatus.NO_EVIDENCE,
                              label='query_logs payment "timeout" (0 matches)')]
    return ReleaseOutcome(run_id="run_r", outcome=Outcome.SUCCESS, report=PublishedReport(run_id="run_r", draft=draft,
                                                                                          sources=sources))


def test_escape_neutralises_mentions_and_links() -> None:
    """&, < and > are escaped so `<!channel>` and `<url|text>` from tools render as text."""
    assert escape("<!channel> & <http://x|y>") == "&lt;!channel&gt; &amp; &lt;http://x|y&gt;"


def test_report_without_conclusion_says_evidence_is_thin_and_marks_no_matches() -> None:
    """No conclusion -> explicit thin-evidence line; a NEGATIVE_OBSERVATION is 'No matches', never 'OK'/'healthy'."""
    draft = DiagnosisDraft(
        analysis=[Analysis(analysis_id="a1", kind=AnalysisKind.NEGATIVE_OBSERVATION, text="No timeout lines.",
                           tool_call_ids=["c1"])],
        action_plan=[Action(action="Restart payment", based_on_analysis_ids=["a1"], requires_human_confirmation=True)],
        limitations=Limitations(scope="payment logs, 60 min", missing_info=["DB metrics"]),
    )
    msg = render_outcome(_report(draft), 3.2)
    text = _all_text(msg.blocks)
    assert "No conclusion — evidence is thin" in text
    assert "No matches" in text
    assert "not proof of health" in text
    assert "healthy" not in text.replace("not proof of health", "")
    assert '"OK"' not in text
    assert 'query_logs payment \\"timeout\\" (0 matches)' in text
    assert "needs human confirmation" in text
    assert "DB metrics" in text
    assert "payment logs, 60 min" in text
    assert "run `run_r` · 3.2 s · verified" in text
    assert msg.metadata == {"event_type": "diag_run_finished", "event_payload": {
        "run_id": "run_r", "intent": "DIAGNOSIS", "outcome": "SUCCESS", "fallback_type": None}}
    assert validate_blocks(msg.blocks) is None


def test_fallback_shows_stage_facts_sources_and_next_steps_without_ok() -> None:
    """SAFE_FALLBACK: plain-words stage, facts labelled found/no matches/error with sources, next steps."""
    facts = [
        ObservedFact(text="order-service: 37 ERROR lines", tool_call_id="c1", tool_name=ToolName.QUERY_LOGS,
                     evidence_status=EvidenceStatus.EVIDENCE_FOUND),
        ObservedFact(text="payment-service: nothing for 'timeout'", tool_call_id="c2", tool_name=ToolName.QUERY_LOGS,
                     evidence_status=EvidenceStatus.NO_EVIDENCE),
    ]
    fb = FallbackMessage(stage="semantic check", reason="claims exceed evidence", observed_facts=facts,
                         next_steps=["Check the DB pool"])
    out = ReleaseOutcome(run_id="run_f", outcome=Outcome.SAFE_FALLBACK, fallback_type=FallbackType.SEMANTIC_UNSUPPORTED,
                         fallback=fb)
    msg = render_outcome(out)
    text = _all_text(msg.blocks)
    assert "does not support the draft" in text
    assert "semantic check" in text
    assert "*found* · order-service: 37 ERROR lines" in text
    assert "*no matches* · payment-service" in text
    assert "does not show the system is healthy" in text
    assert "c2" not in text, "call ids are internal"
    assert "Check the DB pool" in text
    assert " OK" not in text
    assert msg.metadata is not None
    assert msg.metadata["event_payload"]["fallback_type"] == "SEMANTIC_UNSUPPORTED"


def test_failure_without_facts_says_nothing_was_observed() -> None:
    """FAILURE with no usable tool results says so plainly."""
    out = ReleaseOutcome(run_id="run_x", outcome=Outcome.FAILURE, fallback=FallbackMessage(stage="model unavailable"))
    text = _all_text(render_outcome(out).blocks)
    assert "Run did not finish" in text
    assert "no tool returned usable results" in text


def test_knowledge_verified_and_unverified() -> None:
    """Verified answers cite their docs; unverified ones say 'No verified answer' and list documents found."""
    ok = ReleaseOutcome(run_id="run_k", intent="KNOWLEDGE", outcome=Outcome.SUCCESS, knowledge=KnowledgeResult(
        answer=KnowledgeAnswer(answer="Raise maximumPoolSize.", citations=[KnowledgeCitation(tool_call_id="c1",
                                                                                              doc="db/hikari.md")])))
    text = _all_text(render_outcome(ok).blocks)
    assert "Raise maximumPoolSize." in text
    assert "db/hikari.md" in text
    assert "not an observation" in text
    bad = ReleaseOutcome(run_id="run_k", intent="KNOWLEDGE", outcome=Outcome.SAFE_FALLBACK,
                         fallback_type=FallbackType.KNOWLEDGE_UNVERIFIED,
                         knowledge=KnowledgeResult(documents_found=["db/hikari.md"]))
    msg = render_outcome(bad)
    assert "No verified answer" in _all_text(msg.blocks)
    assert "db/hikari.md" in _all_text(msg.blocks)
    assert msg.metadata is not None
    assert msg.metadata["event_payload"]["intent"] == "KNOWLEDGE"


def test_chat_turn_renders_text_with_metadata() -> None:
    """Chat turns show their short text, escaped, and still carry the finished metadata."""
    msg = render_outcome(ReleaseOutcome(run_id="run_c", intent="CHAT", outcome=Outcome.SUCCESS, chat_text="Hi <@U1>"))
    assert "Hi &lt;@U1&gt;" in _all_text(msg.blocks)
    assert msg.metadata is not None
    assert msg.metadata["event_payload"]["intent"] == "CHAT"


def test_help_lists_commands() -> None:
    """Help names every /diag command."""
    text = _all_text(help_blocks())
    assert all(c in text for c in ("/diag trace", "/diag cancel", "/diag help"))


def test_timeline_renders_events_in_order_and_long_traces_fit() -> None:
    """Trace lines are ordered by seq with offsets and summaries; 300 events still fit the limits."""
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    run = RunRecord(run_id="run_t", session_key="T:C:1", team="T", channel="C", user="U", query="q", started_at=t0,
                    intent="DIAGNOSIS", outcome="SUCCESS", prompt_hashes={"agent": "abcdef1234567890"})
    events = [TimelineEvent(run_id="run_t", seq=i, type=EventType.TOOL_CALL, at=t0 + timedelta(seconds=i),
                            summary={"tool": "query_logs", "codes": ["A", "B"], "note": "<!here>"}) for i in (2, 0, 1)]
    blocks = fit_blocks(timeline_blocks(run, events))
    text = _all_text(blocks)
    assert text.index("+0.0s") < text.index("+1.0s") < text.index("+2.0s")
    assert "codes=A, B" in text
    assert "&lt;!here&gt;" in text
    assert "abcdef123456" in text
    many = [TimelineEvent(run_id="run_t", seq=i, type=EventType.MODEL_CALL, at=t0, summary={"x": "y" * 300})
            for i in range(300)]
    assert validate_blocks(fit_blocks(timeline_blocks(run, many))) is None


def test_tool_text_in_every_rendered_field_cannot_ping_or_link() -> None:
    """A log line echoed into any part of a report, a fallback or a knowledge answer never becomes a Slack mention,
    broadcast or link: every field of every outcome kind goes through escaping."""
    from tests.bot.fake_chat import success_outcome

    bad = "<!channel> <!here> <@U123> <#C9> <https://evil.example|click>"
    report = success_outcome("run_x")
    assert report.report is not None
    draft = report.report.draft
    assert draft.conclusion is not None
    draft.analysis[0].text = draft.conclusion.text = draft.limitations.scope = bad
    draft.limitations.missing_info = [bad]
    report.report.sources[0].label = bad
    fact = ObservedFact(text=bad, tool_call_id="c", tool_name=ToolName.QUERY_LOGS, evidence_status=EvidenceStatus.NO_EVIDENCE)
    fallback = ReleaseOutcome(run_id="r", outcome=Outcome.SAFE_FALLBACK, fallback_type=FallbackType.SEMANTIC_UNSUPPORTED,
                              fallback=FallbackMessage(stage=bad, reason=bad, observed_facts=[fact], next_steps=[bad]))
    answer = KnowledgeAnswer(answer=bad, citations=[KnowledgeCitation(tool_call_id="k", doc=bad)])
    knowledge = ReleaseOutcome(run_id="k", intent="KNOWLEDGE", outcome=Outcome.SUCCESS,
                               knowledge=KnowledgeResult(answer=answer, documents_found=[bad]))
    for outcome in (report, fallback, knowledge):
        msg = render_outcome(outcome)
        rendered = json.dumps(msg.blocks) + msg.text
        for dangerous in ("<!channel>", "<!here>", "<@U123>", "<#C9>", "<https://evil"):
            assert dangerous not in rendered, (outcome.outcome, dangerous)
