"""SPEC §12: a knowledge citation verifies only for a READY, FOUND lookup_knowledge call of this run whose
projection is consistent and shows the cited doc; every other case names its reason."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from core.contracts.draft import KnowledgeAnswer, KnowledgeCitation
from core.contracts.evidence import CanonicalRecord, EvidenceStatus, InvocationState
from core.steps.knowledge import citation_problems
from core.stores.canonical import InMemoryCanonicalStore
from testkit.release import error_record, knowledge_record, logs_record
from testkit.tool_names import ToolName

RUN = "run-k"
DOC = "db/hikari.md"


def _found(run_id: str = RUN, cid: str = "call_k") -> CanonicalRecord:
    return knowledge_record(run_id, cid, "HikariCP exhaustion", [(DOC, "Pool exhaustion", "Raise maximumPoolSize.")])


def _answer(cid: str = "call_k", doc: str = DOC) -> KnowledgeAnswer:
    return KnowledgeAnswer(answer="The runbook says to raise the pool size.",
                           citations=[KnowledgeCitation(tool_call_id=cid, doc=doc)])


async def _problems(records: list[CanonicalRecord], answer: KnowledgeAnswer) -> list[str]:
    store = InMemoryCanonicalStore()
    for record in records:
        await store.put(record)
    return await citation_problems(store, RUN, answer)


async def test_found_lookup_showing_the_doc_verifies() -> None:
    assert await _problems([_found()], _answer()) == []


def _with(**update: object) -> Callable[[], CanonicalRecord]:
    return lambda: _found().model_copy(update=update)


CASES: list[tuple[str, Callable[[], list[CanonicalRecord]], KnowledgeAnswer, str]] = [
    ("other-run", lambda: [_found(run_id="run-other")], _answer(), "call not in this run"),
    ("fabricated", lambda: [_found()], _answer(cid="call_made_up"), "call not in this run"),
    ("logs-call", lambda: [logs_record(RUN, "call_l", [("2026-11-29T23:00:00Z", "ERROR", DOC)])], _answer("call_l"),
     "not a lookup_knowledge call"),
    ("error-call", lambda: [error_record(RUN, "call_e", ToolName.LOOKUP_KNOWLEDGE, "TIMEOUT", "slow")],
     _answer("call_e"), "call did not return evidence"),
    ("pending", lambda: [_with(state=InvocationState.PENDING)()], _answer(), "call did not return evidence"),
    ("no-evidence", lambda: [knowledge_record(RUN, "call_k", "kafka lag")], _answer(), "call did not return evidence"),
    ("error-status", lambda: [_with(evidence_status=EvidenceStatus.ERROR)()], _answer(), "call did not return evidence"),
    ("other-projection-id", lambda: [_found().model_copy(update={"projection": {**(_found().projection or {}),
                                                                               "tool_call_id": "call_x"}})],
     _answer(), "projection missing or inconsistent"),
    ("doc-not-shown", lambda: [_found()], _answer(doc="db/other.md"), "doc not in that call's results"),
]


@pytest.mark.parametrize(("label", "records", "answer", "reason"), CASES, ids=[c[0] for c in CASES])
async def test_unverifiable_citations_name_their_reason(
    label: str, records: Callable[[], list[CanonicalRecord]], answer: KnowledgeAnswer, reason: str
) -> None:
    assert await _problems(records(), answer) == [f"citations[0]: {reason}"], label


async def test_one_bad_citation_fails_the_whole_answer() -> None:
    """A verified citation does not carry an unverified one: the answer is not verified."""
    answer = KnowledgeAnswer(answer="x", citations=[KnowledgeCitation(tool_call_id="call_k", doc=DOC),
                                                    KnowledgeCitation(tool_call_id="call_k", doc="made/up.md")])
    assert await _problems([_found()], answer) == ["citations[1]: doc not in that call's results"]
