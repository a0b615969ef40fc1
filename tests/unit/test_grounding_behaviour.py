"""Quantity grounding behaviours the corpus also measures, each pinned by one focused test."""

from __future__ import annotations

from typing import Any

from core.contracts.draft import DiagnosisDraft
from core.guard.evidence_guard import EvidenceGuard
from core.guard.rules import load_rules
from core.stores.canonical import InMemoryCanonicalStore
from testkit.release import CountingCanonicalStore, logs_record, sql_record
from tests.unit.test_guard_codes import L1, RUN, run_records, valid_draft


async def _guard(extra: list[Any] | None = None) -> tuple[EvidenceGuard, CountingCanonicalStore]:
    store = CountingCanonicalStore(InMemoryCanonicalStore())
    for record in [*run_records(), *(extra or [])]:
        await store.put(record)
    return EvidenceGuard(store, load_rules()), store


async def test_limitations_rest_on_every_referencable_call_read_only_when_needed() -> None:
    """A number in the limitations shown only by an uncited call of the run is grounded (one list_run); one the
    cited calls show needs no extra read; one no call shows is rejected, naming the run."""
    uncited = sql_record(RUN, "call_pool", "SELECT active FROM pool", ["active"], [[57]])
    guard, store = await _guard([uncited])
    draft = valid_draft()
    assert (await guard.check(RUN, DiagnosisDraft.model_validate(draft))).valid
    assert store.list_run_calls == 0, "22:30-23:30 is the cited calls' window: no extra read"
    draft["limitations"]["missing_info"] = ["the 57 active connections were not broken down by pod"]
    assert (await guard.check(RUN, DiagnosisDraft.model_validate(draft))).valid
    assert store.list_run_calls == 1
    draft["limitations"]["missing_info"] = ["the 58 active connections were not broken down by pod"]
    result = await guard.check(RUN, DiagnosisDraft.model_validate(draft))
    assert [(v.path, v.message) for v in result.violations] == [
        ("limitations.missing_info[0]", "'58' is a count; no referencable call of this run shows it")
    ]


async def test_derivations_are_recorded_in_the_snapshot() -> None:
    """A derived quantity is grounded and recorded (rule, value, inputs, calls) for the SemanticGuard."""
    guard, _ = await _guard()
    draft = valid_draft()
    draft["analysis"][0]["text"] = "Timeouts from 23:05 to 23:06, a 1-minute burst, in the 60-minute window."
    result = await guard.check(RUN, DiagnosisDraft.model_validate(draft))
    assert result.snapshot is not None, result.violations
    rules = {(d.path, d.quantity, d.rule) for d in result.snapshot.derivations}
    assert rules == {("analysis[0].text", "1-minute", "TIME_DIFFERENCE"), ("analysis[0].text", "60-minute", "WINDOW_LENGTH")}
    assert all(d.tool_call_ids == [L1] for d in result.snapshot.derivations)


async def test_arguments_ground_only_what_they_say() -> None:
    """limit=20 grounds 'the first 20', not '20 times'; the query text grounds a NEGATIVE_OBSERVATION restating it,
    not a NORMAL analysis."""
    guard, _ = await _guard([logs_record(RUN, "call_none_4190", [], query="version 4.19.0")])
    draft: dict[str, Any] = valid_draft()
    draft["analysis"][0]["text"] = "The first 20 lines were read; HikariPool-1 timed out."
    assert (await guard.check(RUN, DiagnosisDraft.model_validate(draft))).valid
    draft["analysis"][0]["text"] = "HikariPool-1 timed out 20 times."
    result = await guard.check(RUN, DiagnosisDraft.model_validate(draft))
    assert [v.message for v in result.violations] == [
        "'20' is a count; the cited calls show it only in the call's limit argument, which grounds only statements"
        " about the limit"
    ]
    negative = valid_draft()
    negative["analysis"].append({"analysis_id": "a4", "kind": "NEGATIVE_OBSERVATION", "text": "No line matched version 4.19.0.",
                                 "tool_call_ids": ["call_none_4190"]})
    assert (await guard.check(RUN, DiagnosisDraft.model_validate(negative))).valid
    negative["analysis"][3]["kind"] = "NORMAL"
    codes = {v.code for v in (await guard.check(RUN, DiagnosisDraft.model_validate(negative))).violations}
    assert "NUMBER_NOT_IN_EVIDENCE" in codes
