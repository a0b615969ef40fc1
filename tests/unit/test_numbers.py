"""The numeric tokenizer shared by draft text and evidence sources."""

from __future__ import annotations

import random
from typing import Any

import pytest

from core.guard.numbers import EvidenceText, canonical, evidence_text, numbers_in, source_tokens


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("OOM 3 times", ["3"]),
        ("slow SQL took 12s.", ["12"]),
        ("upgraded to 4.18.0.", ["4.18.0"]),
        ("released as v4.18.0 yesterday", ["4.18.0"]),
        ("first error at 23:05:28.", ["23:05:28"]),
        ("CPU at 92% on 1,024 pods", ["92", "1024"]),
        ("2026-11-29T23:05:28.123Z", ["2026", "11", "29", "23:05:28.123"]),
        ("HikariPool-1 - Connection is not available", ["1"]),
    ],
)
def test_numbers_in_finds_maximal_digit_runs(text: str, expected: list[str]) -> None:
    """Numbers are maximal digit runs joined by . , : ; a trailing full stop and unit suffixes are not part of them."""
    assert numbers_in(text) == expected


@pytest.mark.parametrize("text", ["as a1 shows", "p99 latency", "5xx responses", "call_12 said", "k8s node", "HikariPool1"])
def test_digits_glued_after_letters_are_words_not_numbers(text: str) -> None:
    """Identifiers such as analysis ids, percentiles, status classes and tool call ids are not numbers."""
    assert numbers_in(text) == []


def test_thousands_separator_is_normalised() -> None:
    """'1,024' and '1024' are the same number; '1,2' (not a thousands group) stays as written."""
    assert canonical("1,024") == "1024"
    assert canonical("12,345,678.5") == "12345678.5"
    assert canonical("1,2") == "1,2"


def test_source_tokens_cover_items_count_window_and_timestamp_parts() -> None:
    """Evidence tokens include item text numbers, the count, window arguments and sub-tokens of times."""
    projection = {
        "tool_call_id": "call_77",
        "tool_name": "query_logs",
        "evidence_status": "EVIDENCE_FOUND",
        "count": 37,
        "logs": [{"timestamp": "2026-11-29T23:05:28.123Z", "message": "pool size 10 exhausted", "fields": {"ms": 30000}}],
    }
    tokens = source_tokens(projection, {"start": "2026-11-29T22:30:00Z", "limit": 20, "sql": "x 99"}, ["start", "limit"])
    for expected in [
        "37",
        "10",
        "30000",
        "23:05:28.123",
        "23:05:28",
        "23:05",
        "23",
        "05",
        "5",
        "28",
        "2026",
        "29",
        "22:30",
        "20",
    ]:
        assert expected in tokens, expected
    assert "77" not in tokens, "tool_call_id is never a grounding source"
    assert "99" not in tokens, "only the chosen argument keys are sources"


def test_source_tokens_without_arguments_ignore_them() -> None:
    """With argument_keys None the call's arguments ground nothing."""
    tokens = source_tokens({"count": 1, "rows": [[2.0, True, None]]}, {"limit": 20}, None)
    assert tokens == frozenset({"1", "2.0", "2"})


def _evidence_samples() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    rows = [[f"svc-{k}", f"4.{18 + k}.0", f"2026-11-29 22:{k:02d}:00", 1000 + k * 17, 37.0, 1024] for k in range(12)]
    logs = [
        {
            "timestamp": f"2026-11-29T{h:02d}:{m:02d}:{(m * 7) % 60:02d}.{m:03d}Z",
            "message": f"HikariPool-{m} timed out after {30000 + m}ms (waiting={m}, idle=0) 5xx v2.{m}.1 1,024 rows\n{m}s"
            f" at 2026-11-29T0{m % 10}:05:00Z xv{m} é{m} x.{m}.:{m}, 1..{m} 4XX {m}xxy",
            "fields": {"k8s_pod": f"pod-{m}", "ms": m * 100},
        }
        for h, m in [(0, 5), (9, 0), (23, 59), (12, 7)]
    ]
    return [
        ({"count": 12, "columns": ["s", "v", "at", "n"], "rows": rows}, {"sql": "SELECT 1", "limit": 50}),
        ({"count": 40, "window_start": "2026-11-29T22:30:00Z", "logs": logs}, {"start": "2026-11-29T08:00:00+01:00"}),
    ]


def test_lazy_evidence_search_agrees_with_full_tokenisation() -> None:
    """EvidenceText.grounds (the guard's fast path) answers exactly like membership in the full token set."""
    rng = random.Random(7)
    candidates = {str(i) for i in range(130)} | {"0", "00", "05", "5", "9:05", "09:05", "23:59", "2.0.1", "4.18.0"}
    candidates |= {f"{rng.randint(0, 23)}:{rng.randint(0, 59):02d}" for _ in range(60)}
    candidates |= {"1024", "1,024", "30005", "37", "37.0", "100", "500", "2026", "29", "1017", "4.19", "22:30", "8:00"}
    for projection, arguments in _evidence_samples():
        keys = list(arguments)
        full = source_tokens(projection, arguments, keys)
        lazy = EvidenceText(evidence_text(projection, arguments, keys))
        for number in sorted(candidates | full):
            canon = canonical(number)
            assert lazy.grounds(canon) == (canon in full), number


def test_common_numbers_switch_to_one_full_pass() -> None:
    """A number occurring everywhere (like 0) falls back to one full tokenisation, with the same answers."""
    text = evidence_text({"rows": [[f"{i}0{i}"] for i in range(1, 100)]}, {}, None)
    lazy = EvidenceText(text)
    assert lazy.grounds("0") is False
    assert lazy._all is not None, "the full token set was built"
    assert lazy.grounds("505") is True
    assert lazy.grounds("5") is False


@pytest.mark.parametrize(
    ("text", "expected"),
    [("OOMKilled x3 since", ["3"]), ("retried X12 times", ["12"]), ("on x86 nodes", ["86"]), ("flag 0x1F set", ["0"]),
     ("max12 limit", [])],
)
def test_a_lone_x_prefix_states_a_number(text: str, expected: list[str]) -> None:
    """'x3' is a count like '3 times'; an x glued inside a word (0x1F, max12) does not start a number."""
    assert numbers_in(text) == expected
