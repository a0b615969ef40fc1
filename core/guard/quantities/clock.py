"""Dates and times of day as quantities: ISO date-times, month-name dates, clock times with their precision."""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping
from types import MappingProxyType

from core.guard.quantities.model import Kind, Quantity

MONTHS: Mapping[str, int] = MappingProxyType(
    {name.lower(): i for i in range(1, 13) for name in (calendar.month_name[i], calendar.month_abbr[i])}
    | {"sept": 9}
)

_HH_MM_SS = re.compile(r"\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?")
_WORDS_AND_DIGITS = re.compile(r"[A-Za-z]+|\d+")
_CLOCK_DIGITS = re.compile(r"\d{1,2}(?::\d{2}(?::\d{2}(?:[.,]\d+)?)?)?")


def decimals(digits: str) -> int:
    dot = digits.find(".")
    return 0 if dot < 0 else len(digits) - dot - 1


def _clock(hours: int, minutes: int, seconds: float, ampm: str | None) -> float | None:
    if ampm:
        if not 1 <= hours <= 12:
            return None
        hours = hours % 12 + (12 if ampm[0].lower() == "p" else 0)
    if hours > 23 or minutes > 59 or seconds >= 60:
        return None
    return hours * 3600 + minutes * 60 + seconds


def _time_parts(text: str) -> tuple[float, float] | None:
    """(seconds since midnight, precision in seconds) of 'hh:mm[:ss[.fff]]'."""
    parts = text.replace(",", ".").split(":")
    seconds = float(parts[2]) if len(parts) > 2 else 0.0
    clock = _clock(int(parts[0]), int(parts[1]), seconds, None)
    if clock is None:
        return None
    precision = 60.0 if len(parts) == 2 else 10.0 ** -decimals(parts[2])
    return clock, precision


def datetime_quantity(text: str, start: int, end: int) -> Quantity | None:
    date, rest = text[:10].replace("/", "-"), text[11:].removeprefix("at ")
    time_text = _HH_MM_SS.match(rest)
    if not valid_date(date) or time_text is None:
        return None
    parts = _time_parts(time_text.group(0))
    if parts is None:
        return None
    return Quantity(Kind.DATETIME, date, text, start, end, tolerance=parts[1], clock=parts[0])


def valid_date(date: str) -> bool:
    try:
        year, month, day = (int(p) for p in date.split("-"))
        return 1 <= month <= 12 and 1 <= day <= calendar.monthrange(year, month)[1]
    except ValueError:
        return False


def month_date(text: str, start: int, end: int) -> Quantity | None:
    words = _WORDS_AND_DIGITS.findall(text)
    month = next((MONTHS.get(w.lower()[:3] if len(w) > 3 and w.lower()[:3] in MONTHS and w.lower() not in MONTHS
                              else w.lower()) for w in words if not w.isdigit() and w.lower() not in {"st", "nd", "rd", "th"}),
                 None)
    numbers = [int(w) for w in words if w.isdigit()]
    if month is None or not numbers:
        return None
    day, year = numbers[0], numbers[1] if len(numbers) > 1 else None
    value = f"{year:04d}-{month:02d}-{day:02d}" if year else f"--{month:02d}-{day:02d}"
    if not valid_date(value if year else f"2024-{month:02d}-{day:02d}"):
        return None
    return Quantity(Kind.DATE, value, text, start, end)


def time_quantity(written: str, ampm: str | None, start: int, end: int) -> Quantity | None:
    digits = _CLOCK_DIGITS.match(written)
    assert digits is not None  # the pattern starts with digits
    parts = digits.group(0).replace(",", ".").split(":")
    seconds = float(parts[2]) if len(parts) > 2 else 0.0
    clock = _clock(int(parts[0]), int(parts[1]) if len(parts) > 1 else 0, seconds, ampm)
    if clock is None:
        return Quantity(Kind.IDENTIFIER, written.lower(), written, start, end)
    precision = 3600.0 if len(parts) == 1 else 60.0 if len(parts) == 2 else 10.0 ** -decimals(parts[2])
    return Quantity(Kind.TIME, clock, written, start, end, tolerance=precision)
