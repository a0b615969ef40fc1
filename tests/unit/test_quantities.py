"""The one quantity extractor (draft text and evidence) and matching by kind."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.guard.quantities.evidence import CallEvidence, search_forms
from core.guard.quantities.extract import extract
from core.guard.quantities.match import Context, grounds, same_value
from core.guard.quantities.model import Kind, Quantity
from testkit.release import logs_record, sql_record

K = Kind


def kinds(text: str) -> list[tuple[Kind, Any]]:
    return [(q.kind, q.value) for q in extract(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("OOM 3 times", [(K.COUNT, 3.0)]),
        ("OOMKilled x3 since", [(K.COUNT, 3.0)]),
        ("slow SQL took 12s.", [(K.DURATION, 12.0)]),
        ("timed out after 30000ms", [(K.DURATION, 30.0)]),
        ("a 30-second timeout", [(K.DURATION, 30.0)]),
        ("in the 2-hour window", [(K.DURATION, 7200.0)]),
        ("upgraded to 4.18.0.", [(K.VERSION, "4.18.0")]),
        ("released as v4.18.0 yesterday", [(K.VERSION, "4.18.0")]),
        ("version 4.18", [(K.VERSION, "4.18")]),
        ("first error at 23:05:28.", [(K.TIME, 83128.0)]),
        ("at 2:02 pm", [(K.TIME, 50520.0)]),
        ("at 11pm", [(K.TIME, 82800.0)]),
        ("2026-11-29T23:05:28.123Z", [(K.DATETIME, "2026-11-29")]),
        ("on 2026-11-05", [(K.DATE, "2026-11-05")]),
        ("on Nov 29, 2026", [(K.DATE, "2026-11-29")]),
        ("CPU at 92% on 1,024 pods", [(K.PERCENT, 92.0), (K.COUNT, 1024.0)]),
        ("92 percent", [(K.PERCENT, 92.0)]),
        ("affected 42k users", [(K.NUMBER, 42000.0)]),
        ("1.2M rows", [(K.NUMBER, 1200000.0)]),
        ("1e3 requests", [(K.NUMBER, 1000.0)]),
        ("120 req/s", [(K.RATE, 120.0)]),
        ("512MiB", [(K.SIZE, 536870912.0)]),
        ("HTTP 503 from upstream", [(K.IDENTIFIER, "503")]),
        ("a 502 Bad Gateway", [(K.IDENTIFIER, "502")]),
        ("a spike of 502s", [(K.IDENTIFIER, "502")]),
        ("port 5432", [(K.IDENTIFIER, "5432")]),
        ("redis:6379 refused", [(K.IDENTIFIER, "6379")]),
        ("MySQL error 1040", [(K.IDENTIFIER, "1040")]),
        ("HikariPool-1 - Connection is not available", [(K.IDENTIFIER, "hikaripool-1")]),
        ("latency_ms=30064", [(K.DURATION, 30.064)]),
        ("status=502", [(K.IDENTIFIER, "502")]),
        ("seventeen times", [(K.COUNT, 17.0)]),
        ("a dozen errors", [(K.COUNT, 12.0)]),
        ("failed twice", [(K.COUNT, 2.0)]),
        ("for twenty-eight minutes", [(K.DURATION, 1680.0)]),
        ("one of the pods", []),
    ],
)
def test_quantities_have_kinds_and_normalised_values(text: str, expected: list[tuple[Kind, Any]]) -> None:
    """Each kind is recognised with its value normalised (seconds, bytes, per second, seconds of the day...)."""
    found = kinds(text)
    assert [k for k, _ in found] == [k for k, _ in expected]
    for (_, value), (_, want) in zip(found, expected, strict=True):
        assert value == (pytest.approx(want) if isinstance(want, float) else want)


@pytest.mark.parametrize(
    "text", ["as a1 shows", "p99 latency", "5xx responses", "call_12 said", "k8s node", "HikariPool1", "the 2nd try", "24/7"]
)
def test_digits_glued_after_letters_ordinals_and_classes_are_not_quantities(text: str) -> None:
    """Analysis ids, percentiles, status classes, tool call ids and ordinals are words."""
    assert extract(text) == []


def test_rounding_follows_the_written_precision() -> None:
    """'42k' is 41.5k-42.5k; '30 s' is 29.5-30.5 s; '62.2' is 62.15-62.25; an integer count is exact."""
    assert extract("42k")[0].tolerance == 500
    assert extract("30 s")[0].tolerance == 0.5
    assert extract("62.2")[0].tolerance == pytest.approx(0.05)
    assert extract("14:02")[0].tolerance == 60, "a time to the minute is any second of that minute"


def _shown(value: str, key: str = "message") -> list[Quantity]:
    from core.guard.quantities.evidence import leaf_quantities

    return list(leaf_quantities(value, key))


def test_evidence_values_take_their_kind_from_their_field() -> None:
    """A bare value is typed by its field or column: duration_ms 38 is 38 ms, status 502 an id, cpu_pct a percentage."""
    assert [(q.kind, q.value) for q in _shown("38", "duration_ms")] == [(K.DURATION, 0.038)]
    assert [(q.kind, q.value) for q in _shown("502", "status")] == [(K.IDENTIFIER, "502")]
    assert [q.kind for q in _shown("92", "cpu_pct")] == [K.PERCENT]
    assert [q.kind for q in _shown("4.17", "version")] == [K.VERSION]


@pytest.mark.parametrize(
    ("claim", "evidence", "ok"),
    [
        ("3 pods", "2026-11-29T14:03:18Z", False),  # a timestamp's minute is never a count
        ("7 restarts", "v4.17.2", False),  # nor a version's digits
        ("15917 orders", "order-service-7d9ff-15917", False),  # nor an id's
        ("30000 customers", "timed out after 30000ms", False),
        ("42 users", "42% of requests", False),
        ("42k users", "42 users", False),
        ("1e3 requests", "1 request", False),
        ("timed out after 30 s", "request timed out after 30000ms", True),
        ("30-second timeout", "latency_ms=30064", True),
        ("at 14:02", "2026-11-29T14:02:59.999Z", True),
        ("at 2:02 pm", "2026-11-29T14:02:18Z", True),
        ("at 14:03", "2026-11-29T14:02:59Z", False),
        ("on 2026-11-05", "2026-11-29T11:05:00Z", False),  # dates match whole
        ("4.18", "4.18.0", False),  # versions exactly
        ("HikariPool-1", "HikariPool-1 - Connection is not available", True),
        ("HikariPool-2", "HikariPool-1 - Connection is not available", False),
    ],
)
def test_matching_is_by_kind_and_value(claim: str, evidence: str, ok: bool) -> None:
    """A claim is shown only by an evidence quantity of a compatible kind and the same value at its precision."""
    claimed = extract(claim)[0]
    assert any(same_value(claimed, q) for q in _shown(evidence)) is ok


def _make_calls() -> list[CallEvidence]:
    lines = [
        (f"2026-11-29T23:{m:02d}:{(m * 7) % 60:02d}.{m:03d}Z", "ERROR",
         f"HikariPool-{m} timed out after {30000 + m}ms (active={m}, max=50, waiting={m * 3}) v4.{m}.1 1,024 rows")
        for m in (0, 5, 9, 17)
    ]
    rows = [[f"svc-{k}", f"4.{18 + k}.0", f"2026-11-29 22:{k:02d}:00", 1000 + k * 17, 37.0] for k in range(6)]
    return [
        CallEvidence(logs_record("r", "c_logs", lines, count=40)),
        CallEvidence(sql_record("r", "c_sql", "SELECT 1", ["service", "version", "deployed_at", "orders", "p_ms"], rows)),
    ]


CALLS = _make_calls()
"""Built once: what a CallEvidence keeps is exact, so reusing it across examples changes no answer."""

CLAIMS = st.one_of(
    st.integers(0, 2100).map(lambda n: f"{n} errors"),
    st.integers(0, 99).map(lambda n: f"{n}%"),
    st.integers(0, 23).flatmap(lambda h: st.integers(0, 59).map(lambda m: f"at {h:02d}:{m:02d}")),
    st.integers(1, 40000).map(lambda n: f"{n}ms"),
    st.integers(0, 30).map(lambda n: f"v4.{n}.{n % 3}"),
    st.integers(0, 20).map(lambda n: f"HikariPool-{n}"),
    st.sampled_from(["37", "37.0", "1,024", "1024", "30 s", "30005ms", "2026-11-29", "22:03", "svc-3", "4.19.0"]),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CLAIMS)
def test_lazy_search_agrees_with_the_full_index(claim_text: str) -> None:
    """The guard's fast path (reading only the leaves where a claim's digits occur) says yes only when the full
    index of the call does, and search() (lazy, then full) answers exactly like the full index."""
    claims = extract(claim_text)
    context = Context()
    for call in CALLS:
        for claim in claims:

            def accept(shown: Any, claim: Quantity = claim) -> bool:
                return grounds(claim, shown, context)

            full = any(accept(s) for s in call.index())
            standalone = claim.kind in {Kind.COUNT, Kind.NUMBER}
            for lazy in (call.find(search_forms(claim), accept), call.find(search_forms(claim), accept, standalone)):
                assert lazy is None or full, (claim, lazy)
            complete = call.search(search_forms(claim), accept, standalone) is not None
            assert complete == (full or any(accept(s) for s in call.extra()))


TEXT = st.text(
    alphabet=st.sampled_from([*list("0123456789 .,:-_/%xXvVkKMmsShHT+eE#=()abcdefpPnNoOuUtTwWiI\n\t\"'"), "µ", "é", "—"]),
    max_size=400,
)


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_extractor_never_crashes_and_stays_fast(text: str) -> None:
    """Any text: no exception, quantities inside the text, and bounded time."""
    started = time.perf_counter()
    for quantity in extract(text):
        assert isinstance(quantity.kind, Kind)
        assert 0 <= quantity.start <= quantity.end
    assert time.perf_counter() - started < 0.25


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_extractor_handles_any_unicode(text: str) -> None:
    """Arbitrary unicode (number words, scripts, control characters) never breaks the extractor."""
    extract(text)


def test_long_pathological_text_stays_bounded() -> None:
    """The longest text a draft field may hold, made of near-quantities, extracts in well under a second."""
    text = ("HikariPool-1-2-3-4 v1.2.3.4.5 12:34:56:78 1,2,3,4 x1x2x3 " * 20)[:1000]
    started = time.perf_counter()
    extract(text)
    assert time.perf_counter() - started < 0.5
