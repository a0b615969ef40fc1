"""Knowledge turns: a verified answer with its cited runbooks, or "no verified answer" and the documents found."""

from __future__ import annotations

from typing import Any

from bot.render.mrkdwn import escape, header, section
from core.contracts.release import KnowledgeResult

RUNBOOK_NOTE = "_From the runbooks: this describes documented procedures, not an observation of this environment._"


def knowledge_blocks(result: KnowledgeResult | None) -> list[dict[str, Any]]:
    """Body blocks of a knowledge answer (footer and limits added by the caller)."""
    result = result or KnowledgeResult()
    if result.answer is not None:
        docs = list(dict.fromkeys(c.doc for c in result.answer.citations))
        blocks = [header("From the runbooks"), section(escape(result.answer.answer)), section(RUNBOOK_NOTE)]
        if docs:
            blocks.append(section("*Cited documents*\n" + "\n".join(f"• {escape(d)}" for d in docs)))
        return blocks
    blocks = [header("No verified answer"), section("I could not verify an answer against the runbooks.")]
    if result.documents_found:
        blocks.append(section("*Documents found* (you may want to read them)\n"
                              + "\n".join(f"• {escape(d)}" for d in result.documents_found)))
    else:
        blocks.append(section("No matching documents were found."))
    return blocks


def knowledge_summary(result: KnowledgeResult | None) -> str:
    """Plain-text notification summary of a knowledge turn."""
    if result is not None and result.answer is not None:
        return "From the runbooks: " + result.answer.answer
    return "No verified answer from the runbooks."
