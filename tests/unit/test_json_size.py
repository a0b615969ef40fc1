"""compact_json_size (orjson) is json's compact size exactly whenever it answers, and answers for JSON's own types."""

from __future__ import annotations

import enum
import json
import math
import uuid

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from core.evidence.json_size import _SAME_HIGH, _SAME_LOW, compact_json_size


def _json_size(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


class Colour(enum.Enum):
    RED = "r"


_KEYS = st.one_of(st.text(max_size=10), st.integers(-5, 5), st.booleans(), st.none())
_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=40),
                  st.sampled_from(["\x00\x1f\x7f", "\"\\/", "é…⟦⟧\u2028\u2029\ufeff", "\U0001f600", "\ud800",
                                   1e-07, 1e-05, 1e16, 1e22, -0.0, 5e-324, 123456789.123, 0.1]),
                  st.just(Colour.RED), st.just(uuid.UUID(int=7)))
_JSON = st.recursive(_LEAF, lambda inner: st.one_of(st.lists(inner, max_size=5), st.tuples(inner, inner),
                                                    st.dictionaries(_KEYS, inner, max_size=5)), max_leaves=40)


@settings(max_examples=600, deadline=None)
@given(_JSON)
def test_an_answer_is_the_exact_json_size(value: object) -> None:
    quick = compact_json_size(value)
    if quick is not None:
        assert quick == _json_size(value)


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-(2**62), 2**62),
                              st.floats(allow_nan=False, allow_infinity=False), st.text(alphabet=st.characters(
                                  exclude_categories=["Cs"]), max_size=40)),
                    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=8), inner,
                                                                                          max_size=5)), max_leaves=40))
def test_json_values_always_get_an_answer(value: object) -> None:
    assert compact_json_size(value) == _json_size(value)


def test_what_json_refuses_or_writes_otherwise_is_left_to_json() -> None:
    for value in ({"v": math.nan}, {"v": math.inf}, {"v": Colour.RED}, {"v": uuid.UUID(int=1)}, {1: "x"}, "\ud800",
                  {"n": 2**70}):
        assert compact_json_size(value) is None
    nested: list[object] = []
    nested.append(nested)
    assert compact_json_size(nested) is None


@settings(max_examples=2000, deadline=None)
@given(st.one_of(st.floats(min_value=1e-4, max_value=1e16, exclude_max=True),
                 st.floats(min_value=-1e16, max_value=-1e-4, exclude_min=True),
                 st.sampled_from([0.0, -0.0, 1e-4, -1e-4, 9.999999999999998e15, 0.00010000000000000002,
                                  9.999999999999999e-05, 1e16, 123456789012345.67, 0.1 + 0.2])))
def test_floats_written_alike_are_those_the_size_skips(value: float) -> None:
    """The magnitudes compact_json_size takes as written alike (zero, 1e-4 <= |v| < 1e16) are: json and orjson
    write the same bytes there; outside them (9.999999999999999e-05, 1e16) the difference is still added."""
    if value == 0.0 or _SAME_LOW <= abs(value) < _SAME_HIGH:
        assert json.dumps(value).encode() == orjson.dumps(value)
    assert compact_json_size([value, {"v": value}]) == _json_size([value, {"v": value}])


class _Key(str):
    pass


def test_keys_other_than_str_are_refused_by_orjson_first() -> None:
    """The float walk does not test dict keys: orjson, which writes the value first, refuses every key that is not
    exactly a str (so the answer is None, as json might write such a key otherwise)."""
    for key in (_Key("k"), Colour.RED, 1, 1.5, True, None, (1,), b"k"):
        assert compact_json_size({"a": [{key: 1}]}) is None
