"""SAFE_FALLBACK and FAILURE: where it stopped, what was actually observed (from projections), next steps."""

from __future__ import annotations

from typing import Any

from bot.render.mrkdwn import code, escape, header, section
from core.contracts.evidence import EvidenceStatus
from core.contracts.release import FallbackMessage, FallbackType, ObservedFact, Outcome

_WHY = {
    FallbackType.EVIDENCE_VALIDATION_FAILED: "The draft cited evidence that could not be verified, so it was not published.",
    FallbackType.SEMANTIC_UNSUPPORTED: (
        "An independent check found the evidence does not support the draft, so it was not published."
    ),
    FallbackType.SEMANTIC_UNAVAILABLE: "The independent evidence check was unavailable, so nothing unverified was published.",
    FallbackType.KNOWLEDGE_UNVERIFIED: "The answer's citations could not be verified.",
}
# Status labels never say "OK"/"healthy": NO_EVIDENCE only means that query matched nothing.
STATUS_LABEL = {
    EvidenceStatus.EVIDENCE_FOUND: "found",
    EvidenceStatus.NO_EVIDENCE: "no matches",
    EvidenceStatus.ERROR: "error",
}
DEFAULT_NEXT_STEPS = ["Check the sources above directly.", "Ask again with a narrower question (one service, one time window)."]


def _fact_line(fact: ObservedFact) -> str:
    label = STATUS_LABEL.get(fact.evidence_status, "unknown")
    return f"• [{label}] {escape(fact.text)} — _{escape(fact.tool_name.value)}_ {code(fact.tool_call_id)}"


def fallback_blocks(outcome: Outcome, fallback_type: FallbackType | None, msg: FallbackMessage | None) -> list[dict[str, Any]]:
    """Body blocks of a fallback or failure (footer and limits added by the caller)."""
    msg = msg or FallbackMessage(stage="the run ended without a result")
    title = "Run did not finish" if outcome == Outcome.FAILURE else "No verified diagnosis"
    why = _WHY.get(fallback_type, "") if fallback_type else "The run could not produce a diagnosis."
    stage = f"*Where it stopped:* {escape(msg.stage)}"
    if msg.reason:
        stage += f"\n_Reason:_ {escape(msg.reason)}"
    blocks: list[dict[str, Any]] = [header(title), section(f"{why}\n{stage}")]
    if msg.observed_facts:
        lines = [_fact_line(f) for f in msg.observed_facts]
        blocks.append(section("*What was actually observed* (raw tool results, not a diagnosis)"))
        blocks += [section(line) for line in lines]
        if any(f.evidence_status == EvidenceStatus.NO_EVIDENCE for f in msg.observed_facts):
            blocks.append(section("_“no matches” means that exact query found nothing; it does not show the system is healthy._"))
    else:
        blocks.append(section("*What was actually observed:* no tool returned usable results."))
    steps = msg.next_steps or DEFAULT_NEXT_STEPS
    blocks.append(section("*Next steps*\n" + "\n".join(f"• {escape(s)}" for s in steps)))
    return blocks


def fallback_summary(outcome: Outcome, msg: FallbackMessage | None) -> str:
    """Plain-text notification summary of a fallback or failure."""
    stage = msg.stage if msg else "the run ended without a result"
    head = "Run did not finish" if outcome == Outcome.FAILURE else "No verified diagnosis"
    return f"{head}: stopped at {stage}."
