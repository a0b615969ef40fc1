"""What a quantity is: its kind, its normalised value, where it was written, and (for evidence) where it came from."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    """The kinds of quantity the guard tells apart (SPEC §5)."""

    COUNT = "count"
    NUMBER = "plain number"
    PERCENT = "percentage"
    DURATION = "duration"
    SIZE = "size"
    RATE = "rate"
    TIME = "time of day"
    DATE = "date"
    DATETIME = "date and time"
    VERSION = "version"
    IDENTIFIER = "identifier"


class Origin(StrEnum):
    """Where in a call an evidence quantity was shown; decides which claims it may ground."""

    RESULT = "result"
    """The call's items or its count: grounds any claim of a compatible kind."""
    WINDOW = "window"
    """The searched window (projection or start/end arguments): grounds times, dates and window lengths only."""
    LIMIT = "limit"
    """The limit / top_k argument: grounds only statements about the limit."""
    QUERY = "query"
    """Query, SQL, service or level text: grounds only NEGATIVE_OBSERVATION analyses (and limitations)."""


NUMERIC_KINDS = frozenset({Kind.COUNT, Kind.NUMBER})
CLOCK_KINDS = frozenset({Kind.TIME, Kind.DATETIME})
DAY_KINDS = frozenset({Kind.DATE, Kind.DATETIME})


@dataclass(slots=True)
class Quantity:
    """One quantity found in a text (treated as immutable; not frozen only because frozen init is slow).

    value: COUNT/NUMBER/PERCENT the number; DURATION seconds; SIZE bytes (decimal reading); RATE per second;
    TIME seconds since midnight; DATE 'YYYY-MM-DD' (or '--MM-DD' without a year); DATETIME the date, with `clock`
    the seconds since midnight; VERSION the dotted version without a 'v'; IDENTIFIER the token in lower case.
    tolerance: how far an evidence value may be and still match, from the rounding the text uses (durations,
    sizes, rates, magnitudes, decimals); for TIME/DATETIME the precision in seconds (60 for 'hh:mm').
    """

    kind: Kind
    value: float | str
    text: str
    start: int = 0
    end: int = 0
    tolerance: float = 0.0
    clock: float | None = None
    alt: float | None = None
    """SIZE: the binary reading (KB = 1024 B) when the text's unit is ambiguous."""
    limit_cue: bool = False
    """A draft quantity written as a statement about a query limit ('the first 20', 'limit 20')."""
    key: str = ""
    """For evidence: the field or column it was shown in ('' for free text)."""
    noun: str = ""
    """For a count: the one or two words after it, lower case ('pods' in '3 pods', 'pool samples' in '3 pool samples')."""
    bound: str = ""
    """How the text bounds the value: '' exact (within `tolerance`), '~' about, '<' nearly (at most, close below),
    '>' just over (at least, close above), '<=' fewer than / within (at most, down to half), '>=' more than (at least,
    up to twice). See core/guard/quantities/match.py:fits."""

    @property
    def number(self) -> float:
        """The numeric value (raises for kinds whose value is a string)."""
        if isinstance(self.value, str):
            raise TypeError(f"a {self.kind} has no numeric value")
        return self.value


@dataclass(slots=True)
class Shown:
    """An evidence quantity with its origin: which call, which item (index in its list, -1 for none), which field."""

    quantity: Quantity
    origin: Origin
    tool_call_id: str
    item: int = -1
    field: str = ""

    def where(self) -> str:
        """A short description for messages and derivation records."""
        place = f"item {self.item}" if self.item >= 0 else self.origin.value
        return f"{self.tool_call_id} {place}" + (f" {self.field}" if self.field else "")
