"""The canonical store's record decoding (orjson, then pydantic in Python mode) reads exactly what
model_validate_json reads: the same record, or a refusal, for stored JSON as written and tampered with."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from core.contracts.evidence import CanonicalRecord, EvidenceStatus, InvocationState
from core.stores.canonical import InMemoryCanonicalStore, _record
from testkit.tool_names import ToolName

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
STORED = CanonicalRecord(
    run_id="run-1", tool_call_id="c1", tool_name=ToolName.QUERY_LOGS, arguments={"q": "timeout"},
    effective_arguments={"q": "timeout", "limit": 20}, state=InvocationState.READY,
    evidence_status=EvidenceStatus.EVIDENCE_FOUND, started_at=T0, duration_ms=12.5,
    projection={"tool_call_id": "c1", "logs": [{"message": "timed out after 30000ms", "n": 3, "r": 0.1}]},
    error={"code": "X", "message": "y"},
).model_dump_json(exclude={"raw_result"})
FIELDS = sorted(orjson.loads(STORED))

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=False)
    | st.text(max_size=8) | st.sampled_from(["READY", "PENDING", "EVIDENCE_FOUND", "2024-05-01T12:00:00Z", "1.5",
                                             "true", "", "query_logs", "1714564800"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


def _outcome(read: Any, data: str) -> str:
    try:
        return repr(read(data).model_dump())
    except ValidationError:
        return "refused"


@settings(max_examples=300, deadline=None)
@given(field=st.sampled_from(FIELDS), value=JSON)
def test_a_field_replaced_reads_as_model_validate_json_reads_it(field: str, value: Any) -> None:
    """Any JSON value in any field (wrong types, numbers as strings, timestamps, nested junk, big integers)."""
    doc = orjson.loads(STORED)
    doc[field] = value
    text = json.dumps(doc)  # integers of any size, as a hand-edited record may hold
    assert _outcome(_record, text) == _outcome(CanonicalRecord.model_validate_json, text)


@settings(max_examples=300, deadline=None)
@given(at=st.integers(min_value=0, max_value=len(STORED)), cut=st.integers(min_value=0, max_value=3),
       insert=st.sampled_from(["", "x", '"', ",", "}", "{", "NaN", "1e999", "\\ud800", "\\u00e9", " ", "9" * 30]))
def test_tampered_text_reads_as_model_validate_json_reads_it(at: int, cut: int, insert: str) -> None:
    """Bytes cut or inserted anywhere: invalid JSON, NaN, huge numbers, lone surrogates, escapes."""
    text = STORED[:at] + insert + STORED[at + cut:]
    assert _outcome(_record, text) == _outcome(CanonicalRecord.model_validate_json, text)


def test_integers_beyond_64_bits_stay_integers() -> None:
    """orjson would read them as floats: the store reads them as model_validate_json does, exactly."""
    doc = orjson.loads(STORED)
    doc["projection"]["big"] = [2**70, -(2**63) - 1, 2**64, 2**64 - 1]
    text = json.dumps(doc)
    assert _record(text).projection == CanonicalRecord.model_validate_json(text).projection == doc["projection"]


def test_repeated_keys_keep_the_last_value_as_before() -> None:
    text = STORED[:-1] + ',"state":"PENDING","projection":{"a":1,"a":2}}'
    assert _outcome(_record, text) == _outcome(CanonicalRecord.model_validate_json, text)
    assert _record(text).state is InvocationState.PENDING


@pytest.mark.parametrize("stored", ["{not json", "[1, 2]", '"a"', "", STORED.replace('"READY"', '"DONE"'),
                                    STORED.replace('"run_id":"run-1",', ""), "\ud800"])
async def test_a_tampered_stored_record_reads_as_missing_with_a_warning(
    stored: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The store refuses a record it cannot validate: None for it, a WARNING naming it, the others read."""
    store = InMemoryCanonicalStore()
    good = CanonicalRecord.model_validate_json(STORED)
    await store.put(good)
    await store.put(good.model_copy(update={"tool_call_id": "c2"}))
    expires_at, _, raw = store._records[("run-1", "c2")]
    store._records[("run-1", "c2")] = (expires_at, stored, raw)
    with caplog.at_level(logging.WARNING):
        got = await store.get_many("run-1", ["c1", "c2"])
    assert got == {"c1": good, "c2": None}
    assert any("run-1/c2" in r.getMessage() and "unreadable" in r.getMessage() for r in caplog.records)
