"""What every guard check reads: the draft, this run's cited records fetched once, and derived indexes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter, ValidationError

from core.contracts.draft import DiagnosisDraft
from core.contracts.evidence import CanonicalRecord, EvidenceStatus, InvocationState, Projection
from core.guard.rules import RuleSet

PROJECTION_ADAPTER: TypeAdapter[Any] = TypeAdapter(Projection)
REFERENCABLE_STATUSES = frozenset({EvidenceStatus.EVIDENCE_FOUND, EvidenceStatus.NO_EVIDENCE})


@dataclass(frozen=True)
class Finding:
    """One problem a check found; the guard adds the rule's id and severity."""

    code: str
    path: str
    message: str


def shown_id(value: str, limit: int = 40) -> str:
    """An id as quoted in a violation message: repr, cut so a message never carries long draft text."""
    return repr(value if len(value) <= limit else value[:limit] + "…")


def dependent_items(draft: DiagnosisDraft) -> Iterator[tuple[str, str, list[str]]]:
    """(path prefix, text, based_on_analysis_ids) for the conclusion, each action and each recommendation."""
    if draft.conclusion is not None:
        yield "conclusion", draft.conclusion.text, draft.conclusion.based_on_analysis_ids
    for i, action in enumerate(draft.action_plan):
        yield f"action_plan[{i}]", action.action, action.based_on_analysis_ids
    for i, rec in enumerate(draft.recommendations):
        yield f"recommendations[{i}]", rec.text, rec.based_on_analysis_ids


def cited_ids(draft: DiagnosisDraft) -> list[str]:
    """Every tool_call_id the draft's analyses cite, first occurrence order, without duplicates."""
    return list(dict.fromkeys(cid for item in draft.analysis for cid in item.tool_call_ids))


def referencable_problem(run_id: str, key: str, record: CanonicalRecord | None) -> tuple[str, str] | None:
    """(code, reason) when a record cannot be cited by this run, else None."""
    if record is None:
        return "INVOCATION_MISSING", "no tool call with this id exists in this run"
    if record.run_id != run_id or record.tool_call_id != key:
        return "INVOCATION_ID_MISMATCH", "the stored record belongs to a different run or id"
    if record.state is not InvocationState.READY:
        return "INVOCATION_NOT_REFERENCABLE", f"the call is {record.state.value}, not READY"
    if record.evidence_status not in REFERENCABLE_STATUSES:
        status = record.evidence_status.value if record.evidence_status else "no status"
        return "INVOCATION_NOT_REFERENCABLE", f"the call ended in {status}, which is never evidence"
    if not record.projection:
        return "INVOCATION_NOT_REFERENCABLE", "the call has no projection"
    return None


def parse_projection(projection: Mapping[str, Any]) -> tuple[Any, str | None]:
    """(parsed projection model, None) or (None, short reason) when it does not parse."""
    try:
        return PROJECTION_ADAPTER.validate_python(projection), None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "projection"
        return None, f"{where}: {first['msg']}"


@dataclass
class GuardInput:
    """The draft plus the records of its cited calls, read in one batch, and what checks derive from them."""

    run_id: str
    draft: DiagnosisDraft
    rules: RuleSet
    records: Mapping[str, CanonicalRecord | None]
    usable: dict[str, CanonicalRecord] = field(default_factory=dict)
    """Cited records that belong to this run and are referencable (what evidence checks look at)."""
    parsed: dict[str, Any] = field(default_factory=dict)
    """tool_call_id -> parsed projection model, for usable records whose projection parses."""
    parse_errors: dict[str, str] = field(default_factory=dict)
    first_path: dict[str, str] = field(default_factory=dict)
    """tool_call_id -> path of its first citation."""

    @classmethod
    def build(
        cls, run_id: str, draft: DiagnosisDraft, rules: RuleSet, records: Mapping[str, CanonicalRecord | None]
    ) -> GuardInput:
        """Derive usable records and parsed projections once, for all checks."""
        data = cls(run_id=run_id, draft=draft, rules=rules, records=records)
        for i, item in enumerate(draft.analysis):
            for j, cid in enumerate(item.tool_call_ids):
                data.first_path.setdefault(cid, f"analysis[{i}].tool_call_ids[{j}]")
        for cid in data.first_path:
            record = records.get(cid)
            if record is None or referencable_problem(run_id, cid, record) is not None:
                continue
            data.usable[cid] = record
            parsed, error = parse_projection(record.projection or {})
            if parsed is None:
                data.parse_errors[cid] = error or "invalid"
            else:
                data.parsed[cid] = parsed
        return data
