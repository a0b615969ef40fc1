"""A published (SUCCESS) diagnosis: conclusion, analyses with their sources, actions, recommendations, limits."""

from __future__ import annotations

from typing import Any

from bot.render.mrkdwn import escape, header, section
from core.contracts.draft import AnalysisKind
from core.contracts.release import EvidenceSource, PublishedReport

_KIND_MARKER = {
    AnalysisKind.NORMAL: "🔎 *Observed*",
    AnalysisKind.NEGATIVE_OBSERVATION: "∅ *No matches* (this query found nothing; not proof of health)",
}
NO_CONCLUSION = "No conclusion — evidence is thin"
CONFIRM_MARKER = "⚠️ *needs human confirmation*"


def _sources_line(ids: list[str], sources: dict[str, EvidenceSource]) -> str:
    labels = [escape(sources[i].label) if i in sources else f"call {escape(i)}" for i in ids]
    return "_Sources:_ " + "; ".join(labels) if labels else ""


def report_blocks(report: PublishedReport) -> list[dict[str, Any]]:
    """Body blocks of a published report (the caller appends the footer and applies limits)."""
    draft = report.draft
    sources = {s.tool_call_id: s for s in report.sources}
    calls = len(sources)
    verified = (f"✅ _Every statement below was checked against {calls} tool call{'s' if calls != 1 else ''} "
                "of this run and reviewed independently._")
    blocks: list[dict[str, Any]] = [header("Diagnosis"), section(verified)]
    if draft.conclusion is not None:
        blocks.append(section("*Conclusion*\n" + escape(draft.conclusion.text)))
    else:
        blocks.append(section(f"*{NO_CONCLUSION}*"))
    if draft.analysis:
        blocks.append(section("*What the tools showed*"))
        for a in draft.analysis:
            marker = _KIND_MARKER.get(a.kind, "*Observation*") if a.kind else "*Observation*"
            lines = [f"{marker} ({escape(a.analysis_id)})", escape(a.text), _sources_line(a.tool_call_ids, sources)]
            blocks.append(section("\n".join(line for line in lines if line)))
    if draft.action_plan:
        blocks.append(section("*Suggested actions*"))
        for act in draft.action_plan:
            mark = f"{CONFIRM_MARKER} " if act.requires_human_confirmation else ""
            blocks.append(section(f"• {mark}{escape(act.action)}"))
    if draft.recommendations:
        blocks.append(section("*Recommendations*"))
        for rec in draft.recommendations:
            blocks.append(section(f"• {escape(rec.text)}"))
    lim = draft.limitations
    lim_lines = ["*Limitations*", f"_Scope:_ {escape(lim.scope) if lim.scope else 'not stated'}"]
    lim_lines += [f"• Missing: {escape(m)}" for m in lim.missing_info]
    blocks.append(section("\n".join(lim_lines)))
    return blocks


def report_summary(report: PublishedReport) -> str:
    """Plain-text notification summary of a report."""
    if report.draft.conclusion is not None:
        return "Diagnosis: " + report.draft.conclusion.text
    n = len(report.draft.analysis)
    return f"Diagnosis: {NO_CONCLUSION.lower()} ({n} observation{'s' if n != 1 else ''})"
