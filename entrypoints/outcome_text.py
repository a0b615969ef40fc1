"""Plain-text rendering of a turn's outcome and a run's timeline, for the terminal (`diagbot ask|demo|trace`)."""

from __future__ import annotations

from typing import Any

from core.contracts.release import FallbackMessage, PublishedReport, ReleaseOutcome
from core.contracts.run import RunRecord, TimelineEvent

_VALUE_CAP = 160


def render_outcome(outcome: ReleaseOutcome) -> str:
    """The outcome as a person reads it: report, fallback, knowledge answer or chat text, then the run id."""
    head = f"[{outcome.intent}] {outcome.outcome.value}"
    if outcome.fallback_type:
        head += f" ({outcome.fallback_type.value})"
    lines = [head]
    if outcome.report is not None:
        lines += _report(outcome.report)
    if outcome.knowledge is not None:
        if outcome.knowledge.answer is not None:
            lines.append(outcome.knowledge.answer.answer)
            lines += [f"  source: {c.doc} ({c.tool_call_id})" for c in outcome.knowledge.answer.citations]
        else:
            lines.append("No verified answer from the runbooks.")
            if outcome.knowledge.documents_found:
                lines.append("Documents found: " + ", ".join(outcome.knowledge.documents_found))
    if outcome.fallback is not None:
        lines += _fallback(outcome.fallback)
    if outcome.chat_text:
        lines.append(outcome.chat_text)
    lines.append(f"run id: {outcome.run_id}")
    return "\n".join(lines)


def _report(report: PublishedReport) -> list[str]:
    draft = report.draft
    lines: list[str] = []
    if draft.conclusion is not None:
        lines.append(f"Conclusion: {draft.conclusion.text}")
    else:
        lines.append("Conclusion: none (the evidence does not support one)")
    lines.append("Findings:")
    for item in draft.analysis:
        lines.append(f"  - [{item.kind.value if item.kind else '?'}] {item.text}  ({', '.join(item.tool_call_ids)})")
    if draft.action_plan:
        lines.append("Actions:")
        for action in draft.action_plan:
            confirm = " (needs human confirmation)" if action.requires_human_confirmation else ""
            lines.append(f"  - {action.action}{confirm}")
    if draft.recommendations:
        lines.append("Recommendations:")
        lines += [f"  - {rec.text}" for rec in draft.recommendations]
    lines.append(f"Scope: {draft.limitations.scope}")
    if draft.limitations.missing_info:
        lines.append("Missing: " + "; ".join(draft.limitations.missing_info))
    if report.sources:
        lines.append("Sources:")
        lines += [f"  - {s.tool_call_id}: {s.label} [{s.evidence_status.value}]" for s in report.sources]
    return lines


def _fallback(fallback: FallbackMessage) -> list[str]:
    lines = [f"Stopped at: {fallback.stage}"]
    if fallback.reason:
        lines.append(f"Reason: {fallback.reason}")
    if fallback.observed_facts:
        lines.append("Observed:")
        for fact in fallback.observed_facts:
            lines.append(f"  - {fact.text}  ({fact.tool_name} {fact.tool_call_id}, {fact.evidence_status.value})")
            lines += [f"      {line}" for line in fact.lines]
            if fact.table is not None and fact.table.rows:
                lines.append("      " + " | ".join(fact.table.columns))
                lines += ["      " + " | ".join(row) for row in fact.table.rows]
    else:
        lines.append("Observed: nothing yet")
    if fallback.next_steps:
        lines.append("Next steps:")
        # In a terminal the run's timeline is `diagbot trace`, not the Slack command.
        lines += [f"  - {step.replace('/diag trace ', 'diagbot trace ')}" for step in fallback.next_steps]
    return lines


def render_timeline(run: RunRecord | None, events: list[TimelineEvent]) -> str:
    """A run's timeline, one event a line: time, type, duration and its safe summary."""
    lines: list[str] = []
    if run is not None:
        status = f"{run.status.value}, {run.intent or '?'} -> {run.outcome or 'pending'}"
        if run.fallback_type:
            status += f" ({run.fallback_type})"
        lines.append(f"run {run.run_id}: {status}")
        versions = [f"rules {run.rule_set_version}"] if run.rule_set_version else []
        versions += [f"{k} model {v}" for k, v in run.models.items()]
        if versions:
            lines.append("versions: " + ", ".join(versions))
    for event in sorted(events, key=lambda e: e.seq):
        at = event.at.strftime("%H:%M:%S.%f")[:-3]
        summary = " ".join(f"{k}={_scalar(v)}" for k, v in event.summary.items())
        lines.append(f"  {at}  {event.type.value:<24} {event.duration_ms:>8.0f} ms  {summary}".rstrip())
    if not events:
        lines.append("  (no timeline events)")
    return "\n".join(lines)


def _scalar(value: Any) -> str:
    if isinstance(value, list | tuple):
        text = ",".join(str(v) for v in value)
    elif isinstance(value, dict):
        text = ",".join(f"{k}:{v}" for k, v in value.items())
    else:
        text = str(value)
    return text if len(text) <= _VALUE_CAP else text[: _VALUE_CAP - 1] + "…"
