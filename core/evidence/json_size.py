"""The size of a value as json.dumps writes it compactly (`ensure_ascii=False`, separators "," and ":"), measured with
orjson, several times faster, wherever the two are known to write the same bytes.

For JSON's own types (exactly: str-keyed dicts, lists and tuples, str, int, finite float, bool, None) both write the
same strings (every code point outside the surrogates escaped alike: checked one by one), integers and literals in the
same order with the same separators; only a float may be written differently (1e-07 and 1e-7, 1e-05 and 0.00001), so
each float's difference is added. Anything else, or anything orjson refuses (an integer over 64 bits, a lone
surrogate, a cycle, nesting past its limit), returns None: the caller measures with json itself, whose answer or
error stays what it always was.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import orjson

_SAME_LOW, _SAME_HIGH = 1e-4, 1e16
"""Floats of this magnitude (and zero) are written alike by both, in positional notation (repr switches to an
exponent below 1e-4 and from 1e16 on; orjson writes these the same: tests/unit/test_json_size.py checks random values
and bit patterns), so their difference is 0 without writing them twice."""


def compact_json_size(value: Any) -> int | None:
    """len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()), or None when not sure."""
    try:
        written = orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return None
    extra = _float_difference(value)
    return None if extra is None else len(written) + extra


_PLAIN = frozenset({str, int, bool, type(None)})
"""The types both write alike whatever the value (a container's items of these are skipped with one set lookup)."""


def _float_difference(value: Any) -> int | None:
    """How many more bytes json writes than orjson for the floats in value; None when value is not only JSON's types
    (only called after orjson encoded it: no cycle, bounded depth, every dict key a str)."""
    kind = type(value)
    if kind is dict:
        # Its keys are all exactly str: orjson, which wrote the value first, refuses any other key (a str subclass,
        # an int, None...) without OPT_NON_STR_KEYS, so they are not tested again here (that test was most of a
        # projection's walk: a generator over every dict's keys).
        items: Iterable[Any] = value.values()
    elif kind is list or kind is tuple:
        items = value
    elif kind in _PLAIN:
        return 0
    elif kind is float:
        if value == 0.0 or _SAME_LOW <= abs(value) < _SAME_HIGH:
            return 0
        return len(repr(value)) - len(orjson.dumps(value)) if math.isfinite(value) else None
    else:
        return None
    # The items in the same loop (one call per container, none per scalar): other scalars than floats skipped.
    extra = 0
    for item in items:
        held = type(item)
        if held in _PLAIN:
            continue
        if held is float and (item == 0.0 or _SAME_LOW <= abs(item) < _SAME_HIGH):
            continue  # written alike by both (the common case: no call)
        found = _float_difference(item)
        if found is None:
            return None
        extra += found
    return extra
