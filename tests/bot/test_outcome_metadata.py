"""SPEC §10: the final message of every kind of turn carries diag_run_finished metadata and a plain-text summary;
a fallback's NO_EVIDENCE facts never read as health, as Slack renders them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from core.contracts.draft import KnowledgeAnswer, KnowledgeCitation
from core.contracts.release import FallbackStage, FallbackType, KnowledgeResult, Outcome, ReleaseOutcome
from core.release.fallback import build_fallback
from core.release.wording import violation_sentence
from testkit.release import knowledge_record, logs_record, sql_record
from tests.bot.conftest import Harness
from tests.bot.slack_requests import mention


def _fallback(kind: FallbackType) -> Callable[[str], ReleaseOutcome]:
    def make(run_id: str) -> ReleaseOutcome:
        records = [
            logs_record(run_id, "call_n1", [], service="payment-service", query="timeout"),
            sql_record(run_id, "call_n2", "SELECT * FROM orders WHERE status = 'FAILED'", ["id"], []),
            knowledge_record(run_id, "call_n3", "kafka lag"),
        ]
        message = build_fallback(records, FallbackStage.EVIDENCE_CHECK, violation_sentence("INVOCATION_MISSING"), run_id=run_id)
        intent = "KNOWLEDGE" if kind is FallbackType.KNOWLEDGE_UNVERIFIED else "DIAGNOSIS"
        return ReleaseOutcome(run_id=run_id, intent=intent, outcome=Outcome.SAFE_FALLBACK, fallback_type=kind,
                              fallback=message)

    return make


def _knowledge_success(run_id: str) -> ReleaseOutcome:
    answer = KnowledgeAnswer(answer="The runbook says to check the pool size.",
                             citations=[KnowledgeCitation(tool_call_id="call_k", doc="db/hikari.md")])
    return ReleaseOutcome(run_id=run_id, intent="KNOWLEDGE", outcome=Outcome.SUCCESS,
                          knowledge=KnowledgeResult(answer=answer, documents_found=["db/hikari.md"]))


CASES = [
    ("diagnosis-evidence", _fallback(FallbackType.EVIDENCE_VALIDATION_FAILED), "DIAGNOSIS", "SAFE_FALLBACK",
     "EVIDENCE_VALIDATION_FAILED"),
    ("diagnosis-unsupported", _fallback(FallbackType.SEMANTIC_UNSUPPORTED), "DIAGNOSIS", "SAFE_FALLBACK",
     "SEMANTIC_UNSUPPORTED"),
    ("diagnosis-unavailable", _fallback(FallbackType.SEMANTIC_UNAVAILABLE), "DIAGNOSIS", "SAFE_FALLBACK",
     "SEMANTIC_UNAVAILABLE"),
    ("knowledge-unverified", _fallback(FallbackType.KNOWLEDGE_UNVERIFIED), "KNOWLEDGE", "SAFE_FALLBACK",
     "KNOWLEDGE_UNVERIFIED"),
    ("knowledge-success", _knowledge_success, "KNOWLEDGE", "SUCCESS", None),
]


@pytest.mark.parametrize(("label", "make", "intent", "outcome", "fallback_type"), CASES, ids=[c[0] for c in CASES])
async def test_every_final_message_carries_run_metadata_and_text(
    harness: Harness, label: str, make: Callable[[str], ReleaseOutcome], intent: str, outcome: str,
    fallback_type: str | None,
) -> None:
    """Fallbacks of every type and knowledge turns end with the metadata of their outcome and a plain-text summary."""
    harness.chat.make_outcome = make
    await harness.send.event(mention(ts="700.1"))
    await harness.settle()
    finals = [c.params for c in harness.slack.calls if c.params.get("metadata")]
    assert len(finals) == 1, label
    [final] = finals
    assert final["metadata"] == {"event_type": "diag_run_finished", "event_payload": {
        "run_id": "run_1", "intent": intent, "outcome": outcome, "fallback_type": fallback_type}}
    assert isinstance(final["text"], str)
    assert final["text"].strip()
    assert not final["text"].startswith("Looking into it")


HEALTH = re.compile(r"healthy|ruled out|\bOK\b|\bfine\b|no (?:problem|issue)s?\b|all good|normal", re.IGNORECASE)
NEGATED = ("does not show the service is ", "does not show the system is ")


async def test_rendered_no_evidence_facts_never_claim_health(harness: Harness) -> None:
    """In the Slack fallback, NO_EVIDENCE facts are 'no matches'; any mention of health is explicitly negated."""
    harness.chat.make_outcome = _fallback(FallbackType.SEMANTIC_UNSUPPORTED)
    await harness.send.event(mention(ts="701.1"))
    await harness.settle()
    [final] = [c.params for c in harness.slack.calls if c.params.get("metadata")]
    texts = [final["text"]]
    for block in final["blocks"]:
        texts += re.findall(r'"text": "((?:[^"\\]|\\.)*)"', json.dumps(block, ensure_ascii=False))
    rendered = "\n".join(texts)
    assert "no matches" in rendered
    assert "no lines matched" in rendered
    for match in HEALTH.finditer(rendered):
        assert rendered[: match.start()].endswith(NEGATED), rendered[max(0, match.start() - 80): match.end() + 20]
