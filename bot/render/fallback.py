"""SAFE_FALLBACK and FAILURE: where it stopped and why in plain words, what the tools actually showed, next steps.

No tool call ids, no codes, no reprs: facts are the fallback factory's sentences, log lines and runbook excerpts in
monospace, SQL rows as a small aligned table. Every piece of tool or model text is escaped.
"""

from __future__ import annotations

from typing import Any

from bot.render.mrkdwn import escape, escape_entities, header, pre, section
from bot.render.table import mono_table
from core.contracts.evidence import EvidenceStatus
from core.contracts.release import FallbackMessage, FallbackType, ObservedFact, Outcome

_WHY = {
    FallbackType.EVIDENCE_VALIDATION_FAILED: "The draft cited evidence that could not be verified, so it was not published.",
    FallbackType.SEMANTIC_UNSUPPORTED: (
        "An independent review found the evidence does not support the draft, so it was not published."
    ),
    FallbackType.SEMANTIC_UNAVAILABLE: "The independent review could not be completed, so nothing unverified was published.",
    FallbackType.KNOWLEDGE_UNVERIFIED: "The answer's citations could not be verified, so it was not published.",
}
FAILURE_WHY = "The run stopped before it had a report to check, so there is no diagnosis."
# Status labels never say "OK"/"healthy": NO_EVIDENCE only means that query matched nothing.
STATUS_LABEL = {
    EvidenceStatus.EVIDENCE_FOUND: "found",
    EvidenceStatus.NO_EVIDENCE: "no matches",
    EvidenceStatus.ERROR: "could not run",
}
STATUS_ICON = {EvidenceStatus.EVIDENCE_FOUND: "🔎", EvidenceStatus.NO_EVIDENCE: "∅", EvidenceStatus.ERROR: "⚠️"}
DEFAULT_NEXT_STEPS = ["Check the sources above directly.", "Ask again with a narrower question (one service, one time window)."]
NO_MATCH_NOTE = "_“no matches” means that exact query found nothing; it does not show the system is healthy._"


def fact_text(fact: ObservedFact) -> str:
    """One fact as mrkdwn: status, the sentence, then its lines or table in monospace."""
    status = fact.evidence_status
    parts = [f"{STATUS_ICON.get(status, '•')} *{STATUS_LABEL.get(status, 'result')}* · {escape(fact.text)}"]
    if fact.lines:
        parts.append(pre("\n".join(fact.lines)))
    if fact.table is not None and fact.table.rows:
        parts.append(mono_table(fact.table.columns, fact.table.rows))
    return "\n".join(parts)


def _where(outcome: Outcome, fallback_type: FallbackType | None, msg: FallbackMessage) -> str:
    why = FAILURE_WHY if outcome == Outcome.FAILURE or fallback_type is None else _WHY.get(fallback_type, "")
    lines = [why, f"*Where it stopped:* {escape(msg.stage)}"]
    if msg.reason:
        lines.append(f"*Why:* {escape(msg.reason)}")
    return "\n".join(line for line in lines if line)


def fallback_blocks(outcome: Outcome, fallback_type: FallbackType | None, msg: FallbackMessage | None) -> list[dict[str, Any]]:
    """Body blocks of a fallback or failure (footer and limits added by the caller)."""
    msg = msg or FallbackMessage(stage="the run ended without a result")
    title = "Run did not finish" if outcome == Outcome.FAILURE else "No verified diagnosis"
    blocks: list[dict[str, Any]] = [header(title), section(_where(outcome, fallback_type, msg))]
    if msg.observed_facts:
        blocks.append(section("*What the tools actually showed* (raw results, not a diagnosis)"))
        blocks += [section(fact_text(f)) for f in msg.observed_facts]
        if any(f.evidence_status == EvidenceStatus.NO_EVIDENCE for f in msg.observed_facts):
            blocks.append(section(NO_MATCH_NOTE))
    else:
        blocks.append(section("*What the tools actually showed:* no tool returned usable results."))
    steps = msg.next_steps or DEFAULT_NEXT_STEPS
    blocks.append(section("*Next steps*\n" + "\n".join(f"• {_step(s)}" for s in steps)))
    return blocks


def _step(step: str) -> str:
    # The trace command is ours and shown as code; everything else in a step may carry tool text.
    if step.startswith("`/diag trace ") and step.count("`") == 2:
        command, rest = step[1:].split("`", 1)
        return f"`{escape_entities(command)}`{escape(rest)}"
    return escape(step)


def fallback_summary(outcome: Outcome, msg: FallbackMessage | None) -> str:
    """Plain-text notification summary of a fallback or failure."""
    stage = msg.stage if msg else "the run ended without a result"
    head = "Run did not finish" if outcome == Outcome.FAILURE else "No verified diagnosis"
    return f"{head}: stopped at {stage}." if msg is None or msg.kind is None else f"{head}: {stage}."
