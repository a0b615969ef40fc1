"""Citation checks: every cited call is this run's, referencable, of the right kind, and its projection is sound."""

from __future__ import annotations

from collections.abc import Iterator
from types import MappingProxyType

from core.contracts.draft import AnalysisKind
from core.contracts.evidence import EvidenceStatus
from core.guard.inputs import Finding, GuardInput, referencable_problem, shown_id

_KIND_NEEDS = MappingProxyType({
    AnalysisKind.NORMAL: EvidenceStatus.EVIDENCE_FOUND,
    AnalysisKind.NEGATIVE_OBSERVATION: EvidenceStatus.NO_EVIDENCE,
})


def check_invocation_ownership(data: GuardInput) -> Iterator[Finding]:
    """INVOCATION_MISSING / INVOCATION_ID_MISMATCH / INVOCATION_NOT_REFERENCABLE, once per citation."""
    for i, item in enumerate(data.draft.analysis):
        for j, cid in enumerate(item.tool_call_ids):
            problem = referencable_problem(data.run_id, cid, data.records.get(cid))
            if problem is not None:
                code, reason = problem
                yield Finding(code, f"analysis[{i}].tool_call_ids[{j}]", f"tool call {shown_id(cid)}: {reason}")


def check_evidence_kind(data: GuardInput) -> Iterator[Finding]:
    """EVIDENCE_KIND_MISMATCH: NORMAL citing a non-FOUND call, NEGATIVE_OBSERVATION citing a non-NO_EVIDENCE call."""
    for i, item in enumerate(data.draft.analysis):
        if item.kind is None:
            continue
        needed = _KIND_NEEDS[item.kind]
        for j, cid in enumerate(item.tool_call_ids):
            record = data.usable.get(cid)
            if record is not None and record.evidence_status is not needed:
                status = record.evidence_status.value if record.evidence_status else "no status"
                yield Finding(
                    "EVIDENCE_KIND_MISMATCH",
                    f"analysis[{i}].tool_call_ids[{j}]",
                    f"a {item.kind.value} analysis may cite only {needed.value} calls; {shown_id(cid)} is {status}",
                )


def check_projection_consistency(data: GuardInput) -> Iterator[Finding]:
    """PROJECTION_INVALID / _MISMATCH / _EMPTY_FOUND / _NONEMPTY_NO_EVIDENCE, once per cited call."""
    for cid, record in data.usable.items():
        path = data.first_path[cid]
        if cid in data.parse_errors:
            yield Finding(
                "PROJECTION_INVALID", path, f"the projection of {shown_id(cid)} does not parse: {data.parse_errors[cid]}"
            )
            continue
        projection = data.parsed[cid]
        differing = [
            name
            for name, seen, stored in (
                ("tool_call_id", projection.tool_call_id, record.tool_call_id),
                ("evidence_status", projection.evidence_status, record.evidence_status),
                ("tool_name", projection.tool_name, record.tool_name),
            )
            if seen != stored
        ]
        if differing:
            yield Finding(
                "PROJECTION_MISMATCH",
                path,
                f"the projection of {shown_id(cid)} differs from its record in {', '.join(differing)}",
            )
            continue
        items = projection.items
        if record.evidence_status is EvidenceStatus.EVIDENCE_FOUND and items == 0:
            yield Finding("PROJECTION_EMPTY_FOUND", path, f"{shown_id(cid)} is EVIDENCE_FOUND but its projection has no items")
        if record.evidence_status is EvidenceStatus.NO_EVIDENCE and (items > 0 or projection.count > 0):
            yield Finding(
                "PROJECTION_NONEMPTY_NO_EVIDENCE", path, f"{shown_id(cid)} is NO_EVIDENCE but its projection reports matches"
            )
