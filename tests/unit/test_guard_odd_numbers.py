"""Numbers no float holds and unit letters only re's case folding reads as ASCII: the guard gives a verdict.

`1e400` raised OverflowError (10.0 ** 400) and `12 per \u017fec` KeyError (re's IGNORECASE matches the long s to `s`,
str.lower() keeps it), so a draft holding either crashed the check instead of being refused.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.guard.quantities.extract import extract
from core.guard.quantities.model import Kind
from tests.unit.test_guard_codes import L1, check, codes, valid_draft

ODD = [
    "latency reached 1e400 ms",
    "1e999 requests were queued",
    "99.9e308 ms of waiting",
    "1e-400 s between retries",
    "12 per ſec",
    "5/ſ",
    "30 mın after the deploy",
    "3 \u212aB per request",
    "7 İn",
    "9" * 400 + " errors",
]


def draft_with(text: str) -> dict[str, Any]:
    draft = valid_draft()
    draft["analysis"].append({"analysis_id": "a9", "kind": "NORMAL", "text": text, "tool_call_ids": [L1]})
    return draft


@pytest.mark.parametrize("text", ODD)
async def test_an_odd_number_is_refused_not_a_crash(text: str) -> None:
    result = await check(draft_with(f"The pool logged {text}."))
    assert not result.valid
    assert codes(result) == {"NUMBER_NOT_IN_EVIDENCE"}


def test_overflowing_numbers_have_no_tolerance() -> None:
    """An infinite tolerance would take any evidence value: a number beyond floats keeps none."""
    for text in ("1e400", "1e400 ms", "99.9e308 ms", "2.5e999 %"):
        (quantity,) = extract(text)
        assert quantity.value == float("inf")
        assert quantity.tolerance == 0.0


def test_units_folded_by_the_pattern_read_as_their_ascii_spelling() -> None:
    assert [(q.kind, q.value) for q in extract("12 per ſec")] == [(Kind.RATE, 12.0)]
    assert [(q.kind, q.value) for q in extract("30 mın")] == [(Kind.DURATION, 1800.0)]


FOLDED = st.lists(
    st.sampled_from([*"0123456789 .,eE+-/%kKMms", "ſ", "ı", "İ", "\u212a", "\u212b", "µ", "μ", "Μ", "ß",
                     " per ", " sec", " min", " rps", " KiB", "e400", "e-400", "e308"]),
    max_size=40,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(FOLDED)
def test_the_extractor_never_raises_on_folded_letters_or_huge_exponents(text: str) -> None:
    for quantity in extract(text):
        assert quantity.tolerance == quantity.tolerance  # never NaN
        assert quantity.tolerance != float("inf")
