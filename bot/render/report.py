"""A published (SUCCESS) diagnosis: conclusion, findings with their telling item and sources, actions, limits.

The first screen holds the conclusion, up to FIRST_SCREEN findings and the actions; "Show all findings" opens the
rest. Every finding has "Show evidence" (its cited calls' verified items).
"""

from __future__ import annotations

from typing import Any

from bot.render.evidence import finding_sources, inline_item
from bot.render.links import SourceLinks
from bot.render.mrkdwn import escape, header, plain, section
from core.contracts.draft import Analysis, AnalysisKind
from core.contracts.release import PublishedReport

FIRST_SCREEN = 5
FIRST_SCREEN_RECOMMENDATIONS = 3
SHOW_EVIDENCE_ACTION = "show_evidence"
_KIND_MARKER = {
    AnalysisKind.NORMAL: "🔎 *Observed*",
    AnalysisKind.NEGATIVE_OBSERVATION: "∅ *No matches* (this query found nothing; not proof of health)",
}
NO_CONCLUSION = "No conclusion — evidence is thin"
CONFIRM_MARKER = "⚠️ *needs human confirmation*"


def evidence_value(run_id: str, index: int) -> str:
    """The Show evidence button's value: run id and finding index (authorised again on click)."""
    return f"{run_id}|{index}"


def finding_block(report: PublishedReport, index: int, links: SourceLinks | None) -> dict[str, Any]:
    """One finding: kind, text, its most telling item, its sources, and a Show evidence button."""
    finding: Analysis = report.draft.analysis[index]
    marker = _KIND_MARKER.get(finding.kind, "*Observation*") if finding.kind else "*Observation*"
    lines = [marker, escape(finding.text), inline_item(finding, report), finding_sources(finding, report, links)]
    block = section("\n".join(line for line in lines if line))
    block["accessory"] = {"type": "button", "action_id": SHOW_EVIDENCE_ACTION, "text": plain("Show evidence"),
                          "value": evidence_value(report.run_id, index)}
    return block


def _checked_line(report: PublishedReport) -> str:
    calls = len(report.sources)
    return (f"✅ _Every statement below was checked against {calls} tool call{'s' if calls != 1 else ''} "
            "of this run and reviewed independently._")


def _actions_and_limits(report: PublishedReport, first_screen: bool) -> list[dict[str, Any]]:
    draft = report.draft
    blocks: list[dict[str, Any]] = []
    if draft.action_plan:
        lines = [f"• {CONFIRM_MARKER + ' ' if a.requires_human_confirmation else ''}{escape(a.action)}"
                 for a in draft.action_plan]
        blocks.append(section("*Suggested actions*\n" + "\n".join(lines)))
    recs = draft.recommendations
    shown = recs[:FIRST_SCREEN_RECOMMENDATIONS] if first_screen else recs
    if shown:
        more = f"\n_{len(recs) - len(shown)} more in “Show all findings”._" if len(shown) < len(recs) else ""
        blocks.append(section("*Recommendations*\n" + "\n".join(f"• {escape(r.text)}" for r in shown) + more))
    lim = draft.limitations
    lim_lines = ["*Limitations*", f"_Scope:_ {escape(lim.scope) if lim.scope else 'not stated'}"]
    lim_lines += [f"• Missing: {escape(m)}" for m in lim.missing_info]
    blocks.append(section("\n".join(lim_lines)))
    return blocks


def report_blocks(report: PublishedReport, links: SourceLinks | None = None) -> list[dict[str, Any]]:
    """The first screen of a published report (the caller appends the footer and applies limits)."""
    draft = report.draft
    blocks: list[dict[str, Any]] = [header("Diagnosis"), section(_checked_line(report))]
    if draft.conclusion is not None:
        blocks.append(section("*Conclusion*\n" + escape(draft.conclusion.text)))
    else:
        blocks.append(section(f"*{NO_CONCLUSION}*"))
    if draft.analysis:
        blocks.append(section("*What the tools showed*"))
        blocks += [finding_block(report, i, links) for i in range(min(FIRST_SCREEN, len(draft.analysis)))]
        rest = len(draft.analysis) - FIRST_SCREEN
        if rest > 0:
            blocks.append(section(f"_{rest} more finding{'s' if rest != 1 else ''}: “Show all findings” below._"))
    return blocks + _actions_and_limits(report, first_screen=True)


def hidden_findings(report: PublishedReport) -> bool:
    """True when the first screen leaves findings or recommendations out."""
    return (len(report.draft.analysis) > FIRST_SCREEN
            or len(report.draft.recommendations) > FIRST_SCREEN_RECOMMENDATIONS)


def all_findings_pages(report: PublishedReport, links: SourceLinks | None = None, per_page: int = 5
                       ) -> list[list[dict[str, Any]]]:
    """The "Show all findings" view: every finding and recommendation, in pages that each fit one message."""
    findings = [finding_block(report, i, links) for i in range(len(report.draft.analysis))]
    pages = [findings[i:i + per_page] for i in range(0, len(findings), per_page)] or [[]]
    pages[0] = [header("All findings"), *pages[0]]
    recs = report.draft.recommendations
    if recs:
        pages[-1] = [*pages[-1], section("*Recommendations*\n" + "\n".join(f"• {escape(r.text)}" for r in recs))]
    return pages


def report_summary(report: PublishedReport) -> str:
    """Plain-text notification summary of a report."""
    if report.draft.conclusion is not None:
        return "Diagnosis: " + report.draft.conclusion.text
    n = len(report.draft.analysis)
    return f"Diagnosis: {NO_CONCLUSION.lower()} ({n} observation{'s' if n != 1 else ''})"
