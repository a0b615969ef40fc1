"""Human labels and one-line summaries of tool calls, built only from projections and effective arguments."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.contracts.evidence import CallSummary, CanonicalRecord, EvidenceStatus, InvocationState
from core.evidence.subjects import plural, shorten, window_text
from core.tools.registry import spec_for

__all__ = ("REFERENCABLE", "call_summaries", "is_referencable", "label_for", "plural", "shorten", "source_label",
           "window_text")

REFERENCABLE = frozenset({EvidenceStatus.EVIDENCE_FOUND, EvidenceStatus.NO_EVIDENCE})


def label_for(tool: str, projection: Mapping[str, Any], arguments: Mapping[str, Any]) -> str:
    """A short human label for a cited call, e.g. 'query_logs order-service "timeout" ERROR (37 matches)'."""
    spec = spec_for(tool)
    status = projection.get("evidence_status")
    count = projection.get("count", 0)
    if status == EvidenceStatus.ERROR.value:
        code = (projection.get("error") or {}).get("code", "ERROR")
        result = f"could not run: {shorten(code, 40)}"
    elif status == EvidenceStatus.NO_EVIDENCE.value:
        result = "no matches"
    else:
        result = plural(count, spec.nouns.label)
    return shorten(f"{tool} {spec.label_subject(arguments, projection)} ({result})", 240)


def source_label(record: CanonicalRecord) -> str:
    """The label of a canonical record's call (from its projection and effective arguments)."""
    projection = record.projection or {
        "evidence_status": (record.evidence_status or EvidenceStatus.ERROR).value,
        "error": record.error.model_dump() if record.error else {"code": record.state.value},
    }
    return label_for(record.tool_name, projection, record.effective_arguments or record.arguments)


def is_referencable(record: CanonicalRecord) -> bool:
    """READY, FOUND or NO_EVIDENCE, with a projection: citable by its run (SPEC §3.1)."""
    return record.state is InvocationState.READY and record.evidence_status in REFERENCABLE and bool(record.projection)


def call_summaries(records: Sequence[CanonicalRecord], run_id: str) -> list[CallSummary]:
    """One-line summaries of a run's referencable calls, for EvidenceRepair."""
    return [
        CallSummary(
            tool_call_id=r.tool_call_id,
            tool_name=r.tool_name,
            evidence_status=r.evidence_status or EvidenceStatus.ERROR,
            summary=source_label(r),
        )
        for r in records
        if r.run_id == run_id and is_referencable(r)
    ]
