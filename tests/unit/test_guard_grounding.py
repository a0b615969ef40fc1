"""Numeric grounding: numbers in a draft must appear in the evidence the item rests on."""

from __future__ import annotations

from typing import Any

import pytest

from core.contracts.draft import DiagnosisDraft
from core.contracts.release import GuardResult
from core.guard.evidence_guard import EvidenceGuard
from core.guard.rules import load_rules
from core.stores.canonical import InMemoryCanonicalStore
from testkit.release import logs_record, sql_record
from tests.unit.test_guard_codes import RUN, run_records, valid_draft


async def _check(draft: dict[str, Any], extra: list[Any] | None = None) -> GuardResult:
    store = InMemoryCanonicalStore()
    for record in [*run_records(), *(extra or [])]:
        await store.put(record)
    return await EvidenceGuard(store, load_rules()).check(RUN, DiagnosisDraft.model_validate(draft))


def _with_a1(text: str) -> dict[str, Any]:
    draft = valid_draft()
    draft["analysis"][0]["text"] = text
    return draft


def _ungrounded(result: GuardResult) -> list[tuple[str, str]]:
    """(path, the quantity as written) of each NUMBER_NOT_IN_EVIDENCE: messages start "'3' is a count; ..."."""
    return [(v.path, v.message.split("'")[1]) for v in result.violations if v.code == "NUMBER_NOT_IN_EVIDENCE"]


@pytest.mark.parametrize(
    "text",
    [
        "Requests timed out after 30000ms.",  # item text
        "37 lines matched.",  # count
        "The search covered 22:30 to 23:30.",  # window (arguments / projection window)
        "The first timeout was at 23:05, the next at 23:06.",  # timestamp sub-tokens
        "The first was at 23:05:28 on 2026-11-29.",  # full time and date parts
        "HikariPool-1 timed out, as a1 and the p99 view suggest.",  # identifiers are words
        "Pool HikariPool-1 reported 37 timeouts, with 5xx errors upstream.",  # status classes are words
    ],
)
async def test_grounded_numbers_pass(text: str) -> None:
    """Numbers taken from item text, count, window or timestamp parts are grounded."""
    result = await _check(_with_a1(text))
    assert result.valid, result.violations


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("order-service hit OOM 3 times.", "3"),
        ("The slow SQL took 12s.", "12s"),
        ("38 lines matched.", "38"),
        ("The first timeout was at 23:07.", "23:07"),
        ("Requests timed out after 30001ms.", "30001ms"),
    ],
)
async def test_invented_numbers_are_rejected(text: str, number: str) -> None:
    """Classic invented specifics are NUMBER_NOT_IN_EVIDENCE, naming the number and the field."""
    result = await _check(_with_a1(text))
    assert _ungrounded(result) == [("analysis[0].text", number)]
    assert {v.code for v in result.violations} == {"NUMBER_NOT_IN_EVIDENCE"}


async def test_version_numbers_must_match_exactly() -> None:
    """4.18.0 grounds only 4.18.0: neither a different version nor a shortened one passes."""
    draft = valid_draft()
    assert (await _check(draft)).valid
    draft["analysis"][2]["text"] = "The latest deploy was v4.18.0, replacing 4.19.0 and 4.18."
    assert _ungrounded(await _check(draft)) == [("analysis[2].text", "4.19.0"), ("analysis[2].text", "4.18")]


async def test_percentages_ground_by_their_number() -> None:
    """'92%' is the number 92: grounded when the evidence shows 92, rejected otherwise."""
    extra = sql_record(RUN, "call_cpu", "SELECT host, cpu_pct FROM hosts", ["host", "cpu_pct"], [["db-1", 92], ["db-2", 1024]])
    draft = valid_draft()
    draft["analysis"].append(
        {"analysis_id": "a4", "kind": "NORMAL", "text": "db-1 ran at 92% CPU; db-2 at 1,024%.", "tool_call_ids": ["call_cpu"]}
    )
    assert (await _check(draft, [extra])).valid
    draft["analysis"][3]["text"] = "db-1 ran at 93% CPU."
    assert _ungrounded(await _check(draft, [extra])) == [("analysis[3].text", "93%")]
    draft["analysis"][3]["text"] = "db-1 served 92 requests."  # a count is not a percentage
    assert _ungrounded(await _check(draft, [extra])) == [("analysis[3].text", "92")]


async def test_numbers_must_come_from_the_items_own_citations() -> None:
    """An analysis cannot borrow a number shown by a call it does not cite."""
    draft = valid_draft()
    draft["analysis"][2]["text"] = "Version 4.18.0 has 37 errors."
    assert _ungrounded(await _check(draft)) == [("analysis[2].text", "37")]


async def test_conclusion_and_actions_use_only_the_evidence_of_their_analyses() -> None:
    """A conclusion/action/recommendation number must appear in the calls of the analyses it is based on."""
    draft = valid_draft()
    draft["conclusion"] = {"text": "4.18.0 caused 37 timeouts.", "based_on_analysis_ids": ["a3"]}
    draft["action_plan"][0]["action"] = "Roll back 4.18.0 within 15 minutes."
    draft["recommendations"][0] = {"text": "Keep 37 spare connections.", "based_on_analysis_ids": ["a1"]}
    assert _ungrounded(await _check(draft)) == [("conclusion.text", "37"), ("action_plan[0].action", "15 minutes")]


async def test_ids_and_timings_are_not_grounding_sources() -> None:
    """Digits of a tool_call_id or a run id, and the call's duration, never ground a number."""
    extra = logs_record(RUN, "call_4242", [("2026-11-29T23:10:00Z", "WARN", "slow query")], service="db")
    assert extra.duration_ms == 12.0
    draft = valid_draft()
    draft["analysis"].append(
        {"analysis_id": "a4", "kind": "NORMAL", "text": "4242 slow queries took 12ms each.", "tool_call_ids": ["call_4242"]}
    )
    assert _ungrounded(await _check(draft, [extra])) == [("analysis[3].text", "4242"), ("analysis[3].text", "12ms")]


async def test_each_ungrounded_number_is_reported_once_per_field() -> None:
    """Repeating an invented number in one text gives one finding, not one per occurrence."""
    assert _ungrounded(await _check(_with_a1("3 errors, then 3 more, then 4."))) == [
        ("analysis[0].text", "3"),
        ("analysis[0].text", "4"),
    ]


async def test_checks_with_kept_evidence_answers_equal_cold_checks() -> None:
    """Answers a guard keeps across its checks (evidence searches, per-item results) change nothing: warm equals cold."""
    grounded, invented = _with_a1("37 lines matched at 23:05."), _with_a1("38 lines matched at 23:07, 37 in total.")
    store = InMemoryCanonicalStore()
    for record in run_records():
        await store.put(record)
    guard = EvidenceGuard(store, load_rules())

    async def run(g: EvidenceGuard, draft: dict[str, Any]) -> GuardResult:
        return await g.check(RUN, DiagnosisDraft.model_validate(draft))

    cold_grounded = await run(guard, grounded)
    assert len(guard._caches.sources) > 0, "the cited calls' evidence is kept for the next check"
    assert len(guard._caches.items) > 0, "and so are the items' answers"
    warm_invented = await run(guard, invented)  # same evidence, other numbers: searched, not assumed
    warm_grounded = await run(guard, grounded)
    cold_invented = await run(EvidenceGuard(store, load_rules()), invented)
    assert cold_grounded.valid
    assert warm_grounded.valid
    assert _ungrounded(warm_invented) == _ungrounded(cold_invented) == [("analysis[0].text", "38"), ("analysis[0].text", "23:07")]
    assert warm_invented.model_dump() == cold_invented.model_dump()
    assert warm_grounded.model_dump() == cold_grounded.model_dump()


async def test_item_answers_follow_the_evidence_and_the_rules() -> None:
    """A kept item answer is reused only for the same text, the same evidence and the same numeric parameters."""
    text = "37 lines matched."
    assert (await _check(_with_a1(text))).valid
    changed = logs_record(RUN, "call_logs_found", [("2026-11-29T23:05:28Z", "ERROR", "timeout")], count=36)
    store = InMemoryCanonicalStore()
    for record in [*run_records(), changed]:  # same id, other evidence: the put replaces the record
        await store.put(record)
    guard = EvidenceGuard(store, load_rules())
    strict = _ungrounded(await guard.check(RUN, DiagnosisDraft.model_validate(_with_a1(text))))
    assert ("analysis[0].text", "37") in strict, "37 is no longer in the call's evidence"
    lenient = load_rules().with_rule("numeric_grounding", parameters={"min_digits": 3})
    assert _ungrounded(await EvidenceGuard(store, lenient).check(RUN, DiagnosisDraft.model_validate(_with_a1(text)))) == []


@pytest.mark.parametrize("text", ["The pod was OOMKilled x3 since the deploy.", "Requests timed out x12 in a row."])
async def test_multiplier_counts_are_numbers_to_ground(text: str) -> None:
    """'x3' states a count the evidence never showed, exactly like 'OOM 3 times'."""
    result = await _check(_with_a1(text))
    assert not result.valid
    assert {v.code for v in result.violations} == {"NUMBER_NOT_IN_EVIDENCE"}
