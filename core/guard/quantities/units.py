"""Unit spellings the extractor recognises and their conversion factors: a small explicit table (SPEC §5 allows it).

The spellings are an allow-list (what incident text writes: `ms`, `30 s`, `2-hour`, `512MiB`, `120 req/s`). The
factors are the SI / IEC definitions; tests/unit/test_quantity_units.py checks every one against pint, so none is
trusted on sight, while the guard does not pay pint's start-up (over a second here) in every process. Decimal and
binary readings of `KB`/`MB`/`GB` are both kept, since operators write either.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# spelling -> pint unit name (durations, in seconds after conversion)
_DURATION_SPELLINGS: Mapping[str, str] = MappingProxyType({
    "ns": "nanosecond", "nanosecond": "nanosecond", "nanoseconds": "nanosecond",
    "us": "microsecond", "µs": "microsecond", "μs": "microsecond", "microsecond": "microsecond",
    "microseconds": "microsecond",
    "ms": "millisecond", "msec": "millisecond", "msecs": "millisecond", "millisecond": "millisecond",
    "milliseconds": "millisecond",
    "s": "second", "sec": "second", "secs": "second", "second": "second", "seconds": "second",
    "m": "minute", "min": "minute", "mins": "minute", "minute": "minute", "minutes": "minute",
    "h": "hour", "hr": "hour", "hrs": "hour", "hour": "hour", "hours": "hour",
    "d": "day", "day": "day", "days": "day",
    "w": "week", "wk": "week", "wks": "week", "week": "week", "weeks": "week",
})
# spelling -> (decimal pint unit, binary pint unit) (sizes, in bytes after conversion)
_SIZE_SPELLINGS: Mapping[str, tuple[str, str]] = MappingProxyType({
    "b": ("byte", "byte"), "byte": ("byte", "byte"), "bytes": ("byte", "byte"),
    "kb": ("kilobyte", "kibibyte"), "kib": ("kibibyte", "kibibyte"),
    "mb": ("megabyte", "mebibyte"), "mib": ("mebibyte", "mebibyte"),
    "gb": ("gigabyte", "gibibyte"), "gib": ("gibibyte", "gibibyte"),
    "tb": ("terabyte", "tebibyte"), "tib": ("tebibyte", "tebibyte"),
})
# words that make a number per unit of time a rate: "120 req/s", "42 rps", "3 errors per minute"
RATE_SHORTHANDS: Mapping[str, str] = MappingProxyType({"rps": "second", "qps": "second", "tps": "second", "rpm": "minute"})

_SECONDS = MappingProxyType({
    "nanosecond": 1e-9, "microsecond": 1e-6, "millisecond": 1e-3, "second": 1.0, "minute": 60.0, "hour": 3600.0,
    "day": 86400.0, "week": 604800.0,
})
_BYTES = MappingProxyType({
    "byte": 1.0, "kilobyte": 1e3, "megabyte": 1e6, "gigabyte": 1e9, "terabyte": 1e12,
    "kibibyte": 2.0**10, "mebibyte": 2.0**20, "gibibyte": 2.0**30, "tebibyte": 2.0**40,
})

DURATION_SPELLINGS = _DURATION_SPELLINGS
"""Duration spelling -> pint unit name (what the test checks the factors against)."""
SIZE_SPELLINGS = _SIZE_SPELLINGS
"""Size spelling -> (decimal, binary) pint unit names."""
UNIT_SECONDS = _SECONDS
UNIT_BYTES = _BYTES

DURATION_SECONDS: Mapping[str, float] = MappingProxyType({k: _SECONDS[v] for k, v in _DURATION_SPELLINGS.items()})
"""Duration spelling (lower case, as written) -> seconds in one of it."""
SIZE_BYTES: Mapping[str, tuple[float, float]] = MappingProxyType(
    {k: (_BYTES[dec], _BYTES[binary]) for k, (dec, binary) in _SIZE_SPELLINGS.items()}
)
"""Size spelling (lower case) -> (bytes in one, decimal reading; bytes in one, binary reading)."""
MAGNITUDES: Mapping[str, float] = MappingProxyType({"k": 1e3, "K": 1e3, "M": 1e6, "bn": 1e9, "G": 1e9})
"""Magnitude suffixes glued to a number: 42k, 1.2M, 3bn."""

DURATION_UNITS_BY_SIZE: tuple[tuple[str, float], ...] = (
    ("ms", DURATION_SECONDS["ms"]), ("s", 1.0), ("min", DURATION_SECONDS["min"]), ("h", DURATION_SECONDS["h"]),
)
"""The units evidence usually writes durations in, for the searches of a claimed duration."""
