"""What every guard check reads: the draft, this run's cited records fetched once, and derived indexes."""

from __future__ import annotations

import marshal
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from core.contracts.draft import DiagnosisDraft
from core.contracts.evidence import CanonicalRecord, EvidenceStatus, InvocationState
from core.contracts.release import Derivation
from core.guard.cache import Lru
from core.guard.plain_projection import plain_fields
from core.guard.quantities.extras import WindowSlots
from core.guard.quantities.leaves import Readings
from core.guard.quantities.model import Quantity
from core.guard.rules import RuleSet
from core.tools.registry import current_registry

if TYPE_CHECKING:
    from core.guard.quantities.evidence import CallEvidence

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


@dataclass(frozen=True, slots=True)
class ProjectionFacts:
    """What the checks need of a projection that parsed: its identity fields and how many items it shows."""

    tool_call_id: str
    tool_name: str
    evidence_status: EvidenceStatus
    count: int
    items: int


def parse_projection(projection: Mapping[str, Any]) -> tuple[ProjectionFacts | None, str | None]:
    """(facts of the parsed projection, None) or (None, short reason) when it does not parse (always validates).

    The projection is validated by the model of the tool it names (core/tools/<tool>/spec.py), first by its plain
    schema (core/guard/plain_projection.py: the same verdict, cheaper), by the model itself when that refuses it (for
    the message); a name no toolset describes does not parse."""
    name = projection.get("tool_name")
    spec = current_registry().find(name) if isinstance(name, str) else None
    if spec is None:
        return None, f"tool_name: no registered tool is named {str(name)[:64]!r}"
    fields = plain_fields(spec.projection_model, spec.items_field, projection)
    if fields is not None:  # valid: the same facts as of the parsed models, without building them
        items = fields.get(spec.items_field)
        return ProjectionFacts(fields["tool_call_id"], fields["tool_name"], fields["evidence_status"], fields["count"],
                               len(items) if isinstance(items, list) else 0), None
    try:
        parsed = spec.projection_model.model_validate(projection)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "projection"
        return None, f"{where}: {first['msg']}"
    items = getattr(parsed, spec.items_field, None)
    return ProjectionFacts(parsed.tool_call_id, parsed.tool_name, parsed.evidence_status, parsed.count,
                           len(items) if isinstance(items, list) else 0), None


def projection_key(projection: Mapping[str, Any]) -> bytes | None:
    """Bytes that determine the projection exactly, types included, or None when it holds anything but builtins.

    marshal writes only exact builtin types (dict, list, str, int, float, bool, None, ...) and refuses subclasses
    (enums), UUIDs, datetimes and any other object, so equal bytes mean an equal value of the same types in the
    same order, on which pydantic's verdict is the same. `1`, `1.0`, `True`, `[1]` and `(1,)` all differ.
    Equal values may still get different bytes (back-references follow object sharing): that is only a miss.
    A store's projection is decoded JSON, so it always has a key, and a record read again gets the same one.
    """
    if not isinstance(projection, dict):
        return None
    try:
        return marshal.dumps(projection, 4)
    except ValueError:
        return None


ParseOutcome = tuple[ProjectionFacts | None, str | None]


def parse_projection_keyed(
    projection: Mapping[str, Any], key: bytes | None, kept: Lru[bytes, ParseOutcome]
) -> ParseOutcome:
    """Same answer as parse_projection(projection), given key = projection_key(projection); outcomes are kept by key.

    A repaired draft is checked again against the same READY calls, whose projections never change, so each
    projection is parsed by pydantic once per guard; the key costs about a quarter of a parse. Anything without a
    key is parsed afresh. Outcomes are immutable (facts or a message), so keeping them is safe.
    """
    if key is None:
        return parse_projection(projection)
    found = kept.get(key)
    return kept.put(key, parse_projection(projection)) if found is None else found


@dataclass
class GuardCaches:
    """What one EvidenceGuard keeps across its checks: bounded and exact (values are pure functions of their keys),
    so a re-check (after repair) answers like a cold one, only faster. Keys hold projection bytes, which the
    projection size limit bounds, so each cache keeps a few MB at most."""

    size: int = 256
    projections: Lru[bytes, ParseOutcome] = field(init=False)
    """projection_key -> parse outcome."""
    sources: Lru[Any, Any] = field(init=False)
    """A call's source key -> its evidence searcher (core/guard/grounding.py)."""
    items: Lru[Any, Any] = field(init=False)
    """(item text, its calls' source keys, parameters) -> the item's grounding findings (core/guard/grounding.py)."""

    def __post_init__(self) -> None:
        self.projections = Lru(self.size)
        self.sources = Lru(self.size)
        self.items = Lru(self.size)


@dataclass
class GuardInput:
    """The draft plus the records of its cited calls, read in one batch, and what checks derive from them."""

    run_id: str
    draft: DiagnosisDraft
    rules: RuleSet
    records: Mapping[str, CanonicalRecord | None]
    usable: dict[str, CanonicalRecord] = field(default_factory=dict)
    """Cited records that belong to this run and are referencable (what evidence checks look at)."""
    parsed: dict[str, ProjectionFacts] = field(default_factory=dict)
    """tool_call_id -> facts of the parsed projection, for usable records whose projection parses."""
    parse_errors: dict[str, str] = field(default_factory=dict)
    first_path: dict[str, str] = field(default_factory=dict)
    """tool_call_id -> path of its first citation."""
    projection_keys: dict[str, bytes] = field(default_factory=dict)
    """tool_call_id -> projection_key of a usable record's projection (when it has one), for exact caches."""
    run_calls: dict[str, CanonicalRecord] | None = None
    """Every referencable call of the run, read only when the limitations need more than the cited calls."""
    derivations: list[Derivation] = field(default_factory=list)
    """Quantities grounded by a declared derivation (filled by the grounding check, kept in the snapshot)."""
    caches: GuardCaches = field(default_factory=lambda: GuardCaches())
    """The guard's own exact caches (one set per EvidenceGuard; fresh ones for a standalone check)."""
    untrusted: tuple[str, ...] = ()
    """Instruction-like spans of every projection the run's agent was shown, cited or not (RunContext)."""
    extracted: dict[str, tuple[str, tuple[Quantity, ...]]] = field(default_factory=dict)
    """Published text -> (its text with digits for words, its quantities), for this check only: the same text is
    read again by the limitations pre-check and by analyses that share a wording. Callers never mutate them."""
    source_keys: dict[str, tuple[bytes, bytes] | None] = field(default_factory=dict)
    """tool_call_id -> the exact key of its evidence (core/guard/grounding.py), for this check only."""
    evidence: dict[str, CallEvidence] = field(default_factory=dict)
    """tool_call_id -> its CallEvidence, for this check only (the limitations pre-check and the grounding check
    read the same calls)."""
    readings: Readings = field(default_factory=dict)
    """Evidence text -> its quantities, for this check only (core/guard/quantities/leaves.py: the calls of a run
    mostly share their window bounds and timestamps); emptied when the check ends."""
    window_slots: WindowSlots = field(default_factory=dict)
    """Window values -> their times by clock slot, for this check only (core/guard/quantities/extras.py); emptied
    when the check ends."""

    @classmethod
    def build(
        cls,
        run_id: str,
        draft: DiagnosisDraft,
        rules: RuleSet,
        records: Mapping[str, CanonicalRecord | None],
        caches: GuardCaches | None = None,
    ) -> GuardInput:
        """Derive usable records and parsed projections once, for all checks."""
        data = cls(run_id=run_id, draft=draft, rules=rules, records=records, caches=caches or GuardCaches())
        for i, item in enumerate(draft.analysis):
            for j, cid in enumerate(item.tool_call_ids):
                data.first_path.setdefault(cid, f"analysis[{i}].tool_call_ids[{j}]")
        for cid in data.first_path:
            record = records.get(cid)
            if record is None or referencable_problem(run_id, cid, record) is not None:
                continue
            data.usable[cid] = record
            projection = record.projection or {}
            key = projection_key(projection)
            if key is not None:
                data.projection_keys[cid] = key
            parsed, error = parse_projection_keyed(projection, key, data.caches.projections)
            if parsed is None:
                data.parse_errors[cid] = error or "invalid"
            else:
                data.parsed[cid] = parsed
        return data
