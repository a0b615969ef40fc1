"""Every EvidenceGuard violation code, each triggered alone, plus the snapshot of a valid draft."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from core.contracts.draft import AnalysisKind, DiagnosisDraft
from core.contracts.evidence import CanonicalRecord, EvidenceStatus, InvocationState
from core.contracts.release import GuardResult
from core.guard.cache import Lru
from core.guard.evidence_guard import EvidenceGuard, GuardUnavailable
from core.guard.inputs import ParseOutcome, parse_projection, parse_projection_keyed, projection_key
from core.guard.rules import RULE_CODES, RuleSet, load_rules
from core.stores.canonical import InMemoryCanonicalStore
from testkit.release import CountingCanonicalStore, error_record, knowledge_record, logs_record, sql_record
from testkit.tool_names import ToolName

RUN = "run-1"
OTHER_RUN = "run-0"
L1, L0, S1, K1, E1 = "call_logs_found", "call_logs_none", "call_sql", "call_kb", "call_err"


def run_records(run_id: str = RUN) -> list[CanonicalRecord]:
    """The calls of a typical run: found logs, an empty log query, a deploy row, a runbook hit, a failed query."""
    timeout = "HikariPool-1 - Connection is not available, request timed out after 30000ms."
    return [
        logs_record(
            run_id,
            L1,
            [
                ("2026-11-29T23:05:28.123Z", "ERROR", timeout),
                ("2026-11-29T23:06:02.000Z", "ERROR", timeout),
            ],
            count=37,
        ),
        logs_record(run_id, L0, [], query="OutOfMemoryError"),
        sql_record(
            run_id,
            S1,
            "SELECT service, version, deployed_at FROM deploys ORDER BY deployed_at DESC LIMIT 1",
            ["service", "version", "deployed_at"],
            [["order-service", "4.18.0", "2026-11-29 22:50:00"]],
        ),
        knowledge_record(run_id, K1, "HikariCP exhaustion", [("db/hikari.md", "Pool exhaustion", "Raise maximumPoolSize...")]),
        error_record(run_id, E1, ToolName.QUERY_MYSQL, "SQL_REFUSED", "only SELECT is allowed", sql="DELETE FROM x"),
    ]


def valid_draft() -> dict[str, Any]:
    """A draft whose every citation and number is grounded in run_records()."""
    return {
        "conclusion": {
            "text": "order-service exhausted its HikariPool-1 connections from 23:05, after 4.18.0 was deployed at 22:50.",
            "based_on_analysis_ids": ["a1", "a3"],
        },
        "analysis": [
            {
                "analysis_id": "a1",
                "kind": "NORMAL",
                "text": "37 ERROR lines: HikariPool-1 connection requests timed out after 30000ms, the first at 23:05:28.",
                "tool_call_ids": [L1],
            },
            {
                "analysis_id": "a2",
                "kind": "NEGATIVE_OBSERVATION",
                "text": "No OutOfMemoryError lines matched for order-service between 22:30 and 23:30.",
                "tool_call_ids": [L0],
            },
            {
                "analysis_id": "a3",
                "kind": "NORMAL",
                "text": "The latest deploy of order-service was version 4.18.0 on 2026-11-29 at 22:50.",
                "tool_call_ids": [S1],
            },
        ],
        "action_plan": [
            {"action": "Compare the pool settings of 4.18.0 with the previous release.", "based_on_analysis_ids": ["a3"]}
        ],
        "recommendations": [{"text": "Alert on HikariPool-1 timeouts before users see them.", "based_on_analysis_ids": ["a1"]}],
        "limitations": {"scope": "order-service logs 22:30-23:30 and the deploys table", "missing_info": ["pool metrics"]},
    }


async def guard_for(
    records: Sequence[CanonicalRecord], rules: RuleSet | None = None
) -> tuple[EvidenceGuard, CountingCanonicalStore]:
    store = CountingCanonicalStore(InMemoryCanonicalStore())
    for record in records:
        await store.put(record)
    return EvidenceGuard(store, rules or load_rules()), store


async def check(
    draft: dict[str, Any], records: Sequence[CanonicalRecord] | None = None, rules: RuleSet | None = None
) -> GuardResult:
    guard, _ = await guard_for(run_records() if records is None else records, rules)
    return await guard.check(RUN, DiagnosisDraft.model_validate(draft))


def codes(result: GuardResult) -> set[str]:
    return {v.code for v in result.violations}


def edited(edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    draft = valid_draft()
    edit(draft)
    return draft


async def test_valid_draft_yields_snapshot_of_exactly_its_cited_calls() -> None:
    """A valid draft passes, and its snapshot holds the projections and arguments of its cited calls, nothing else."""
    records = {r.tool_call_id: r for r in run_records()}
    result = await check(valid_draft())
    assert result.valid, result.violations
    assert result.snapshot is not None
    assert list(result.snapshot.projections) == [L1, L0, S1]
    for cid in (L1, L0, S1):
        assert result.snapshot.projections[cid] == records[cid].projection
        assert result.snapshot.effective_arguments[cid] == records[cid].effective_arguments
    assert result.snapshot.rule_set_version == "2026-12-01.3"
    assert result.snapshot.run_id == RUN


async def test_canonical_records_are_read_in_one_batch_per_draft() -> None:
    """get_many is called exactly once per check, with every cited id once, however many citations there are."""
    guard, store = await guard_for(run_records())
    draft = valid_draft()
    draft["analysis"][0]["tool_call_ids"] = [L1, L1]
    draft["analysis"].append({"analysis_id": "a4", "kind": "NORMAL", "text": "HikariPool-1 timed out.", "tool_call_ids": [L1]})
    await guard.check(RUN, DiagnosisDraft.model_validate(draft))
    assert store.get_many_calls == [[L1, L0, S1]]


async def test_unreadable_store_raises_guard_unavailable() -> None:
    """A canonical store that cannot be read never yields a valid result: the guard says it could not check."""
    guard, store = await guard_for(run_records())
    store.down = True
    with pytest.raises(GuardUnavailable):
        await guard.check(RUN, DiagnosisDraft.model_validate(valid_draft()))


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """An edit setting a dotted path like 'analysis.1.kind' in the draft dict."""

    def edit(draft: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = draft
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(last) if last.isdigit() else last] = value

    return edit


STRUCTURE_CASES = [
    ("DRAFT_EMPTY", lambda d: d.update(conclusion=None, analysis=[], action_plan=[], recommendations=[])),
    ("ANALYSIS_EMPTY", lambda d: d.update(analysis=[])),
    ("ANALYSIS_ID_MISSING", _set("analysis.1.analysis_id", " ")),
    ("ANALYSIS_ID_DUPLICATE", _set("analysis.1.analysis_id", "a1")),
    ("ANALYSIS_KIND_MISSING", _set("analysis.0.kind", None)),
    ("ANALYSIS_TEXT_MISSING", _set("analysis.1.text", "")),
    ("TOOL_REFERENCE_MISSING", _set("analysis.1.tool_call_ids", [])),
    ("ANALYSIS_REFERENCE_MISSING", _set("action_plan.0.based_on_analysis_ids", [])),
    ("ANALYSIS_REFERENCE_UNKNOWN", _set("recommendations.0.based_on_analysis_ids", ["a1", "a9"])),
    ("TEXT_MISSING", _set("action_plan.0.action", "   ")),
    ("LIMITATIONS_SCOPE_MISSING", _set("limitations.scope", "")),
    ("INVOCATION_MISSING", _set("analysis.1.tool_call_ids", [L0, "call_fabricated"])),
    ("INVOCATION_NOT_REFERENCABLE", _set("analysis.1.tool_call_ids", [E1])),
    ("EVIDENCE_KIND_MISMATCH", _set("analysis.1.kind", "NORMAL")),
    ("NUMBER_NOT_IN_EVIDENCE", _set("analysis.0.text", "OOM 3 times in HikariPool-1.")),
]


@pytest.mark.parametrize(("code", "edit"), STRUCTURE_CASES, ids=[c for c, _ in STRUCTURE_CASES])
async def test_each_draft_fault_triggers_exactly_its_code(code: str, edit: Callable[[dict[str, Any]], None]) -> None:
    """One fault in an otherwise valid draft yields exactly its violation code, from the rule that owns it."""
    result = await check(edited(edit))
    assert not result.valid
    assert codes(result) == {code}
    assert result.snapshot is None
    for violation in result.violations:
        assert violation.code in RULE_CODES[violation.rule_id]
        assert violation.path
        assert violation.message


async def test_violation_paths_point_at_the_offending_citation() -> None:
    """Paths name the exact place in the draft, e.g. analysis[1].tool_call_ids[1]."""
    result = await check(edited(_set("analysis.1.tool_call_ids", [L0, "call_fabricated"])))
    assert [v.path for v in result.violations] == ["analysis[1].tool_call_ids[1]"]


async def test_negative_observation_citing_no_evidence_passes_but_normal_citing_it_fails() -> None:
    """NEGATIVE_OBSERVATION may cite a NO_EVIDENCE call; NORMAL may not; NEGATIVE may not cite a FOUND call either."""
    assert (await check(valid_draft())).valid
    result = await check(edited(_set("analysis.1.kind", AnalysisKind.NORMAL.value)))
    assert codes(result) == {"EVIDENCE_KIND_MISMATCH"}
    assert result.violations[0].path == "analysis[1].tool_call_ids[0]"
    result = await check(edited(_set("analysis.0.kind", AnalysisKind.NEGATIVE_OBSERVATION.value)))
    assert codes(result) == {"EVIDENCE_KIND_MISMATCH"}


async def test_citing_another_runs_real_call_is_invocation_missing() -> None:
    """A real call of a previous run (or another run) is not citable: INVOCATION_MISSING."""
    records = [*run_records(), logs_record(OTHER_RUN, "call_prev", [("2026-11-29T22:00:00Z", "ERROR", "timeout")])]
    result = await check(edited(_set("analysis.0.tool_call_ids", ["call_prev"])), records)
    assert codes(result) == {"INVOCATION_MISSING"}


class _RawStore:
    """A store returning fixed records whatever the key says: models a tampered or mis-keyed canonical entry."""

    def __init__(self, records: dict[str, CanonicalRecord]) -> None:
        self.records = records

    async def reserve(self, run_id: str, tool_call_id: str) -> bool:
        return True

    async def put(self, record: CanonicalRecord) -> None:
        self.records[record.tool_call_id] = record

    async def get_many(
        self, run_id: str, tool_call_ids: Sequence[str], *, with_raw: bool = False
    ) -> dict[str, CanonicalRecord | None]:
        return {cid: self.records.get(cid) for cid in tool_call_ids}

    async def list_run(self, run_id: str, *, with_raw: bool = False) -> list[CanonicalRecord]:
        return list(self.records.values())


@pytest.mark.parametrize(
    "foreign",
    [
        lambda r: r.model_copy(update={"run_id": OTHER_RUN}),
        lambda r: r.model_copy(update={"tool_call_id": "call_other"}),
    ],
    ids=["other-run", "other-id"],
)
async def test_record_whose_ids_differ_from_its_key_is_id_mismatch(foreign: Callable[[CanonicalRecord], CanonicalRecord]) -> None:
    """A record stored under this run's key but naming another run or id is INVOCATION_ID_MISMATCH."""
    records = {r.tool_call_id: r for r in run_records()}
    records[L1] = foreign(records[L1])
    guard = EvidenceGuard(_RawStore(records), load_rules())
    result = await guard.check(RUN, DiagnosisDraft.model_validate(valid_draft()))
    assert codes(result) == {"INVOCATION_ID_MISMATCH"}


def _not_referencable() -> list[tuple[str, CanonicalRecord]]:
    base = run_records()[0]
    return [
        ("pending", base.model_copy(update={"state": InvocationState.PENDING})),
        ("failed", base.model_copy(update={"state": InvocationState.FAILED})),
        ("error-status", base.model_copy(update={"evidence_status": EvidenceStatus.ERROR})),
        ("no-status", base.model_copy(update={"evidence_status": None})),
        ("empty-projection", base.model_copy(update={"projection": {}})),
        ("null-projection", base.model_copy(update={"projection": None})),
    ]


@pytest.mark.parametrize(("label", "record"), _not_referencable(), ids=[n for n, _ in _not_referencable()])
async def test_unusable_calls_are_not_referencable(label: str, record: CanonicalRecord) -> None:
    """Pending, failed, ERROR, status-less or projection-less calls are INVOCATION_NOT_REFERENCABLE (and nothing else)."""
    records = [record, *run_records()[1:]]
    result = await check(valid_draft(), records)
    assert codes(result) == {"INVOCATION_NOT_REFERENCABLE"}, label


def _projection_variants() -> list[tuple[str, str, Callable[[dict[str, Any]], None]]]:
    def drop_count(p: dict[str, Any]) -> None:
        del p["count"]

    def extra_key(p: dict[str, Any]) -> None:
        p["secret_notes"] = "x"

    def wrong_tool(p: dict[str, Any]) -> None:
        sql_shape = {"tool_call_id": p["tool_call_id"], "tool_name": "query_mysql", "evidence_status": "EVIDENCE_FOUND"}
        p.clear()
        p.update(sql_shape, count=1, columns=["message"], rows=[["HikariPool-1 timeout"]])

    def no_items(p: dict[str, Any]) -> None:
        p["logs"] = []

    return [
        ("PROJECTION_INVALID", "missing-count", drop_count),
        ("PROJECTION_INVALID", "extra-key", extra_key),
        ("PROJECTION_INVALID", "bad-item", lambda p: p["logs"].append({"timestamp": 5})),
        ("PROJECTION_MISMATCH", "other-id", lambda p: p.update(tool_call_id="call_else")),
        ("PROJECTION_MISMATCH", "other-status", lambda p: p.update(evidence_status="NO_EVIDENCE")),
        ("PROJECTION_MISMATCH", "other-tool", wrong_tool),
        ("PROJECTION_EMPTY_FOUND", "no-items", no_items),
    ]


def _numberless_a1(draft: dict[str, Any]) -> None:
    """a1 states no number, and nothing else rests on it, so only the projection of its call is under test."""
    draft["analysis"][0]["text"] = "ERROR lines show connection requests timing out."
    draft["conclusion"] = {"text": "order-service runs version 4.18.0.", "based_on_analysis_ids": ["a3"]}
    draft["recommendations"][0] = {"text": "Compare the pool settings of the new release.", "based_on_analysis_ids": ["a3"]}


@pytest.mark.parametrize(
    ("code", "label", "mutate"), _projection_variants(), ids=[f"{c}-{n}" for c, n, _ in _projection_variants()]
)
async def test_projection_inconsistencies_have_their_own_codes(
    code: str, label: str, mutate: Callable[[dict[str, Any]], None]
) -> None:
    """A cited FOUND call whose projection is invalid, disagrees with its record, or is empty gets exactly one code."""
    records = run_records()
    assert records[0].projection is not None
    mutate(records[0].projection)
    result = await check(edited(_numberless_a1), records)
    assert codes(result) == {code}, label
    assert result.violations[0].path == "analysis[0].tool_call_ids[0]"


async def test_no_evidence_projection_with_items_is_flagged() -> None:
    """A NO_EVIDENCE call whose projection nevertheless lists items is PROJECTION_NONEMPTY_NO_EVIDENCE."""
    records = run_records()
    assert records[1].projection is not None
    records[1].projection["logs"] = [
        {"timestamp": "2026-11-29T23:00:00Z", "service": "order-service", "level": "ERROR", "message": "OutOfMemoryError"}
    ]
    result = await check(valid_draft(), records)
    assert codes(result) == {"PROJECTION_NONEMPTY_NO_EVIDENCE"}


async def test_violation_messages_never_carry_long_draft_text() -> None:
    """Messages quote at most a short prefix of ids the draft made up, never its prose."""
    marker = "MARKER-" + "x" * 200
    result = await check(edited(_set("analysis.1.tool_call_ids", [marker])))
    assert codes(result) == {"INVOCATION_MISSING"}
    assert marker not in result.violations[0].message


def test_projection_key_is_exact_and_refuses_anything_but_builtins() -> None:
    """Values pydantic may judge differently never share a key; enums, UUIDs, datetimes get none (parsed afresh)."""
    assert len({projection_key({"count": v}) for v in (1, 1.0, True, "1", [1], (1,), None)}) == 7
    for odd in (ToolName.QUERY_LOGS, EvidenceStatus.EVIDENCE_FOUND, uuid.UUID(int=1), datetime(2026, 1, 1, tzinfo=UTC)):
        assert projection_key({"tool_name": odd}) is None


async def test_kept_parse_outcomes_answer_like_a_fresh_parse_and_stay_bounded() -> None:
    """Kept outcomes equal fresh pydantic parses (valid or not); a re-read record is a hit; at most `size` kept."""
    kept: Lru[bytes, ParseOutcome] = Lru(2)

    def parse(projection: dict[str, Any]) -> ParseOutcome:
        return parse_projection_keyed(projection, projection_key(projection), kept)

    valid = run_records()[0].projection
    assert valid is not None
    invalid = {**valid, "count": -1}
    for projection in (valid, invalid, valid, invalid):
        assert parse(projection) == parse_projection(projection)
    assert parse(invalid)[0] is None
    assert len(kept) == 2
    store = InMemoryCanonicalStore()
    await store.put(run_records()[0])
    reads = [(await store.get_many(RUN, ["call_logs_found"]))["call_logs_found"] for _ in range(2)]
    first, second = (r.projection for r in reads if r is not None)
    assert first is not second
    assert first is not None
    assert second is not None
    assert parse(first) is parse(second), "a record read again reuses the kept outcome"
    odd = {**valid, "tool_name": ToolName.QUERY_LOGS}
    assert parse(odd) == parse_projection(odd)
    assert len(kept) == 2, "a projection without a key is not kept"
    parse({**valid, "count": 99})
    assert len(kept) == 2


async def test_projection_codes_are_the_same_with_kept_outcomes() -> None:
    """A call checked valid once and then changed is judged on its new projection; warm equals cold for every code."""
    for code, label, mutate in _projection_variants():
        records = run_records()
        assert records[0].projection is not None
        warm_guard, store = await guard_for(records)
        draft = DiagnosisDraft.model_validate(edited(_numberless_a1))
        assert (await warm_guard.check(RUN, draft)).valid  # the unchanged projection is now kept by this guard
        mutate(records[0].projection)
        await store.put(records[0])
        warm = await warm_guard.check(RUN, draft)
        cold = await EvidenceGuard(store, load_rules()).check(RUN, draft)
        assert codes(warm) == {code}, label
        assert warm.model_dump() == cold.model_dump(), label


async def test_no_evidence_projection_reporting_a_count_is_flagged() -> None:
    """A NO_EVIDENCE call whose projection shows no items but a count above zero also reports matches."""
    records = run_records()
    assert records[1].projection is not None
    records[1].projection["count"] = 3
    result = await check(valid_draft(), records)
    assert codes(result) == {"PROJECTION_NONEMPTY_NO_EVIDENCE"}
    assert [v.path for v in result.violations] == ["analysis[1].tool_call_ids[0]"]


STRUCTURE_PATHS = [
    ("ANALYSIS_ID_MISSING", _set("analysis.1.analysis_id", " "), ["analysis[1].analysis_id"]),
    ("ANALYSIS_ID_DUPLICATE", _set("analysis.1.analysis_id", "a1"), ["analysis[1].analysis_id"]),
    ("ANALYSIS_KIND_MISSING", _set("analysis.2.kind", None), ["analysis[2].kind"]),
    ("ANALYSIS_TEXT_MISSING", _set("analysis.1.text", " "), ["analysis[1].text"]),
    ("TOOL_REFERENCE_MISSING", _set("analysis.1.tool_call_ids", []), ["analysis[1].tool_call_ids"]),
    ("ANALYSIS_REFERENCE_MISSING", _set("conclusion.based_on_analysis_ids", []), ["conclusion.based_on_analysis_ids"]),
    ("ANALYSIS_REFERENCE_UNKNOWN", _set("recommendations.0.based_on_analysis_ids", ["a1", "a9"]),
     ["recommendations[0].based_on_analysis_ids[1]"]),
    ("TEXT_MISSING", _set("recommendations.0.text", ""), ["recommendations[0].text"]),
    ("TEXT_MISSING", _set("action_plan.0.action", ""), ["action_plan[0].action"]),
    ("TEXT_MISSING", _set("conclusion.text", " "), ["conclusion.text"]),
    ("LIMITATIONS_SCOPE_MISSING", _set("limitations.scope", " "), ["limitations.scope"]),
    ("EVIDENCE_KIND_MISMATCH", _set("analysis.2.kind", "NEGATIVE_OBSERVATION"), ["analysis[2].tool_call_ids[0]"]),
    ("NUMBER_NOT_IN_EVIDENCE", _set("recommendations.0.text", "Alert after 7 timeouts."), ["recommendations[0].text"]),
]


@pytest.mark.parametrize(("code", "edit", "paths"), STRUCTURE_PATHS, ids=[f"{c}-{p[0]}" for c, _, p in STRUCTURE_PATHS])
async def test_each_violation_points_at_the_exact_field(
    code: str, edit: Callable[[dict[str, Any]], None], paths: list[str]
) -> None:
    """Every code names the exact field it is about, so a repair (and an operator) can find it."""
    result = await check(edited(edit))
    assert [(v.code, v.path) for v in result.violations] == [(code, p) for p in paths]


async def test_blank_padded_analysis_ids_still_close_references() -> None:
    """Ids compare after trimming: ' a1 ' and 'a1' are the same analysis, for duplicates and for references."""
    assert (await check(edited(_set("analysis.0.analysis_id", " a1 ")))).valid
    result = await check(edited(_set("analysis.1.analysis_id", "a1 ")))
    assert codes(result) == {"ANALYSIS_ID_DUPLICATE"}
