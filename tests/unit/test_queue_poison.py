"""Salvaging a queue entry that is not a turn job: never raises, and only ever addresses a Slack-shaped thread."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.queue.poison import MAX_DEAD_RAW_BYTES, MAX_SALVAGE_BYTES, bounded_raw, reason_of, salvage

_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                                  max_size=6), max_leaves=20)
_IDS = st.sampled_from(["C1", "D0ABC", "c1", "C1\n", "", "C" * 40, "C1:evil", 7, None])
_TSS = st.sampled_from(["100.0", "1712345678.123456", "1.", "..", "1e3", "١٢.٣", "100.0\n", "", 1.5, None])


@st.composite
def entries(draw: st.DrawFn) -> dict[str, Any]:
    """Job-shaped JSON with every field possibly wrong."""
    session = {"team": draw(_IDS), "channel": draw(_IDS), "thread_ts": draw(_TSS)}
    return {"job_id": draw(st.sampled_from(["C1:100.1", "C1:x", "D0ABC:1.2", 3, None])), "session": session,
            "message_ts": draw(_TSS), "user": draw(_IDS), "run_id": draw(st.sampled_from(["run_ab", "x", None])),
            "text": draw(st.text(max_size=20)), "extra": draw(_JSON)}


_CHANNEL = re.compile(r"[A-Z0-9]{1,32}")
_TS = re.compile(r"[0-9]{1,12}\.[0-9]{1,9}")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300) | _JSON.map(lambda v: json.dumps(v).encode()) | entries().map(
    lambda e: json.dumps(e).encode()))
def test_salvage_never_raises_and_addresses_only_slack_shaped_threads(raw: bytes) -> None:
    job = salvage(raw)
    if job is None:
        return
    assert _CHANNEL.fullmatch(job.session.channel)
    assert _TS.fullmatch(job.session.thread_ts)
    assert _TS.fullmatch(job.message_ts)
    assert job.job_id == f"{job.session.channel}:{job.message_ts}" or job.job_id.startswith(f"{job.session.channel}:")
    assert job.text == ""  # nothing of a poison entry is ever run or echoed


def test_a_valid_address_is_salvaged_with_the_entrys_own_job_id() -> None:
    raw = json.dumps({"job_id": "C1:100.2", "session": {"team": "T1", "channel": "C1", "thread_ts": "100.0"},
                      "message_ts": "100.2", "run_id": "run_abc", "text": 7}).encode()
    job = salvage(raw)
    assert job is not None
    assert (job.job_id, job.session.as_str(), job.run_id) == ("C1:100.2", "T1:C1:100.0", "run_abc")


def test_oversized_or_non_object_entries_are_not_parsed() -> None:
    entry = {"session": {"team": "T1", "channel": "C1", "thread_ts": "1.0"}, "pad": "x" * MAX_SALVAGE_BYTES}
    assert salvage(json.dumps(entry).encode()) is None
    assert salvage(b"[1, 2]") is None
    assert salvage(b"[" * 60_000) is None  # deep nesting under the size bound: RecursionError is caught
    assert salvage(None) is None


def test_the_kept_raw_text_is_bounded_in_bytes() -> None:
    kept = bounded_raw("é" * MAX_DEAD_RAW_BYTES)
    assert len(kept.encode()) < MAX_DEAD_RAW_BYTES + 64
    assert kept.endswith("bytes cut]")
    assert bounded_raw(b"\xff ok") == "\ufffd ok"


def test_a_reason_names_the_failing_field_not_its_content() -> None:
    from pydantic import BaseModel, Field, ValidationError

    class M(BaseModel):
        text: str = Field(max_length=3)

    with pytest.raises(ValidationError) as caught:
        M(text="secret-value")
    assert reason_of(caught.value) == "ValidationError: text string_too_long"
    assert reason_of(ValueError("secret-value")) == "ValueError"
