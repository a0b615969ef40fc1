"""Outcomes at every schema cap, for limit tests (renderer unit tests and the e2e fake-Slack check)."""

from __future__ import annotations

from core.contracts.draft import (
    MAX_ACTIONS,
    MAX_ANALYSES,
    MAX_CALLS_PER_ANALYSIS,
    MAX_RECOMMENDATIONS,
    MAX_TEXT,
    Action,
    Analysis,
    AnalysisKind,
    Conclusion,
    DiagnosisDraft,
    Limitations,
    Recommendation,
)
from core.contracts.evidence import EvidenceStatus
from core.contracts.release import EvidenceSource, Outcome, PublishedReport, ReleaseOutcome
from testkit.tool_names import ToolName

# '&' and '<' expand when escaped, so the escaped text is longer than the 1,000-char cap.
LONG = ("<!channel> & <https://evil.example|click> " * 40)[:MAX_TEXT]


def max_draft() -> DiagnosisDraft:
    """A draft with every list and text at its cap."""
    ids = [f"call_{i}" for i in range(MAX_CALLS_PER_ANALYSIS)]
    return DiagnosisDraft(
        conclusion=Conclusion(text=LONG, based_on_analysis_ids=[f"a{i}" for i in range(MAX_ANALYSES)]),
        analysis=[Analysis(analysis_id=f"a{i}", kind=AnalysisKind.NORMAL if i % 2 else AnalysisKind.NEGATIVE_OBSERVATION,
                           text=LONG, tool_call_ids=ids) for i in range(MAX_ANALYSES)],
        action_plan=[Action(action=LONG, based_on_analysis_ids=["a1"]) for _ in range(MAX_ACTIONS)],
        recommendations=[Recommendation(text=LONG, based_on_analysis_ids=["a1"]) for _ in range(MAX_RECOMMENDATIONS)],
        limitations=Limitations(scope=LONG, missing_info=[LONG] * 20),
    )


def max_outcome(run_id: str) -> ReleaseOutcome:
    """A SUCCESS outcome carrying the maximal draft and long source labels."""
    sources = [EvidenceSource(tool_call_id=f"call_{i}", tool_name=ToolName.QUERY_LOGS,
                              evidence_status=EvidenceStatus.EVIDENCE_FOUND, label="query_logs " + "x" * 300)
               for i in range(MAX_CALLS_PER_ANALYSIS)]
    return ReleaseOutcome(run_id=run_id, outcome=Outcome.SUCCESS,
                          report=PublishedReport(run_id=run_id, draft=max_draft(), sources=sources))
