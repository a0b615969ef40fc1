"""kept_evidence's quick check (orjson, at most half the budget) never says "fits" where the exact sizes would not."""

from __future__ import annotations

import math
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from core.release.evidence import _fits_surely, _size

_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=30),
                  st.tuples(st.integers(), st.floats()),
                  st.sampled_from(["\x00", "\n\"\\", "é…⟦", "\u2028", "\ud800"]))
_JSON = st.recursive(_LEAF, lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=8),
                                                                                                 inner, max_size=5)),
                     max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["call_a", "call_b", "call_c"]), st.dictionaries(st.text(max_size=8), _JSON,
                                                                                       max_size=6), max_size=3),
       st.integers(0, 4000))
def test_fits_surely_only_when_the_exact_sizes_fit(projections: dict[str, dict[str, object]], budget: int) -> None:
    if _fits_surely(projections, budget):
        assert sum(_size(p) for p in projections.values()) <= budget


def test_fits_surely_leaves_non_json_values_and_non_finite_floats_to_the_exact_sizes() -> None:
    assert not _fits_surely({"c": {"v": math.inf}}, 10_000)
    assert not _fits_surely({"c": {"v": {1, 2}}}, 10_000)
    assert not _fits_surely({"c": {"v": datetime(2026, 1, 1, tzinfo=UTC)}}, 10_000)
    assert not _fits_surely({"c": {1: "x"}}, 10_000)  # type: ignore[dict-item]
    assert _fits_surely({"c": {"v": [1e-07, 1.5, "x"]}}, 10_000)
