"""Observed facts for fallbacks: what each call of the run queried and returned, in plain words, from projections only.

Each fact is one sentence (no tool names, no call ids), plus the most telling lines or excerpt, or a small table,
as the call's tool words it (ToolSpec.fact in core/tools/<tool>/spec.py). Nothing here reads the draft.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.contracts.evidence import CanonicalRecord, EvidenceStatus, InvocationState
from core.contracts.release import ObservedFact
from core.evidence.subjects import question_words, shorten
from core.release.wording import tool_error_words
from core.tools.contract import Fact
from core.tools.registry import spec_for

FACT_MAX = 400


def error_reason(record: CanonicalRecord, projection: Mapping[str, Any]) -> str:
    """Why a call could not run, in words (a tool may add its own sentence: a SQL refusal keeps the checker's)."""
    error = projection.get("error")
    code = str(error.get("code")) if isinstance(error, Mapping) and error.get("code") else (
        record.error.code if record.error else "")
    message = str(error.get("message") or "") if isinstance(error, Mapping) else (record.error.message if record.error else "")
    return spec_for(record.tool_name).error_words(code, message, tool_error_words(code))


def _error_fact(record: CanonicalRecord, projection: Mapping[str, Any], args: Mapping[str, Any]) -> str:
    what = spec_for(record.tool_name).error_subject(args)
    return f"{what} could not run: {error_reason(record, projection)}."


def _fact(record: CanonicalRecord, words: frozenset[str]) -> tuple[int, ObservedFact] | None:
    """(priority, fact) for one record; None for calls still pending."""
    if record.state is InvocationState.PENDING:
        return None
    projection = record.projection or {}
    args = record.effective_arguments or record.arguments
    status = record.evidence_status
    fact = Fact("")
    if record.state is InvocationState.READY and projection and status in (EvidenceStatus.EVIDENCE_FOUND,
                                                                            EvidenceStatus.NO_EVIDENCE):
        priority = 0 if status is EvidenceStatus.EVIDENCE_FOUND else 1
        fact = spec_for(record.tool_name).fact(status, projection, args, words)
        text = fact.text
    else:
        priority, text, status = 2, _error_fact(record, projection, args), EvidenceStatus.ERROR
    return priority, ObservedFact(text=shorten(text, FACT_MAX), tool_call_id=record.tool_call_id,
                                  tool_name=record.tool_name, evidence_status=status, lines=list(fact.lines),
                                  table=fact.table)


def observed_facts(records: Sequence[CanonicalRecord], limit: int = 8, run_id: str | None = None,
                   question: str = "") -> list[ObservedFact]:
    """Bounded facts from tool projections only: FOUND first, then NO_EVIDENCE, then calls that could not run."""
    words = question_words(question)
    ranked = [f for r in records if run_id is None or r.run_id == run_id if (f := _fact(r, words)) is not None]
    ranked.sort(key=lambda pair: pair[0])  # stable: call order within each priority
    unique: list[ObservedFact] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for _, fact in ranked:  # a call repeated with the same arguments and answer is one fact, listed once
        key = (fact.text, tuple(fact.lines))
        if key not in seen and len(unique) < max(0, limit):
            seen.add(key)
            unique.append(fact)
    return unique
