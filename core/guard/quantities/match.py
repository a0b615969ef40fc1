"""Matching by kind: which evidence quantity grounds which claim (SPEC §5)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from core.guard.quantities.model import CLOCK_KINDS, DAY_KINDS, NUMERIC_KINDS, Kind, Origin, Quantity, Shown

_TIMES_AND_DAYS = CLOCK_KINDS | DAY_KINDS


@dataclass(frozen=True, slots=True)
class Context:
    """What a published text may rest on besides results: NEGATIVE_OBSERVATION analyses may restate the query;
    the limitations may rest on every argument of every referencable call."""

    negative: bool = False
    limitations: bool = False
    nothing_matched: bool = False
    """The text says a query found nothing ('no rows for 4.19.0', 'nothing matched'): only then may a negative
    analysis rest on its query text (which shows what was asked, not what is true)."""

    def allows(self, claim: Quantity, origin: Origin) -> bool:
        """Whether evidence of this origin may ground this claim here."""
        if origin is Origin.RESULT:
            return True
        if origin is Origin.WINDOW:
            return claim.kind in _TIMES_AND_DAYS
        if origin is Origin.LIMIT:
            return claim.kind in NUMERIC_KINDS and (claim.limit_cue or self.limitations)
        return (self.negative and self.nothing_matched) or self.limitations


def close(claim: float, shown: float, tolerance: float) -> bool:
    """Equal, or inside the claim's rounding: '1 minute' is 30-90 s exclusive, so 30 s is not a minute."""
    gap, noise = abs(claim - shown), 1e-9 * max(1.0, abs(claim))
    return gap <= noise or gap < tolerance - noise


STATUS_KEYS = frozenset({"status", "status_code", "http_status", "statuscode", "response_code", "code"})
APPROX_SHARE = 0.05
"""'about 490' for 493: an approximate value is within 5 % (or the rounding its written digits show, if wider)."""
BOUND_FACTOR = 2.0
"""'more than 400' for 493, 'fewer than 500', 'within 5 minutes': a bound is true and within a factor of 2 of the
value (a bound far from the value says nothing about it, and would ground any invented number below or above)."""


def fits(claim: Quantity, shown: float, shown_bound: str = "") -> bool:
    """Whether an evidence value satisfies the claim's value as the text states it (exact, about, a bound). Evidence
    that is itself a bound ('5xx ratio above 40%', a threshold) grounds only its own number, restated."""
    value, bound = claim.number, claim.bound
    if shown_bound:
        return close(value, shown, claim.tolerance)
    noise = 1e-9 * max(1.0, abs(value))
    if not bound:
        return close(value, shown, claim.tolerance)
    if bound in ("<=", ">="):
        if bound == "<=":
            return value / BOUND_FACTOR - noise <= shown <= value + max(claim.tolerance, noise)
        return value - max(claim.tolerance, noise) <= shown <= value * BOUND_FACTOR + noise
    slack = max(claim.tolerance, APPROX_SHARE * abs(value))
    if bound == "<":
        return value - slack - noise <= shown <= value + claim.tolerance + noise
    if bound == ">":
        return value - claim.tolerance - noise <= shown <= value + slack + noise
    return abs(shown - value) <= slack + noise


def clock_slot(clock: float, precision: float) -> int:
    """Which slot of the stated precision a time falls in: 14:02 is any 14:02:xx (truncation, like a clock shows
    it), so two times are the same at a precision when their slots are."""
    precision = max(precision, 1e-3)
    return math.floor(clock / precision + 1e-9)


def shown_clock(shown: Quantity) -> float | None:
    """The time of day an evidence quantity shows (a date-time's or a time's), or None."""
    clock = shown.clock if shown.kind is Kind.DATETIME else shown.value if shown.kind is Kind.TIME else None
    return clock if isinstance(clock, float) else None


def _same_clock(claim: float, precision: float, shown: float) -> bool:
    """A time at the stated precision (see clock_slot)."""
    return clock_slot(claim, precision) == clock_slot(shown, precision)


def _same_day(claim: str, shown: str) -> bool:
    return claim == shown if not claim.startswith("--") else shown[4:] == claim[1:] or shown == claim


def same_value(claim: Quantity, shown: Quantity) -> bool:
    """Whether an evidence quantity shows the claim's value, with kinds compatible (no origin rules here)."""
    kind, value = claim.kind, claim.value
    if kind in NUMERIC_KINDS:
        if shown.kind is Kind.IDENTIFIER:  # 'before the 502': a bare status grounded by a status field
            return shown.key.lower() in STATUS_KEYS and isinstance(shown.value, str) and shown.value == f"{claim.number:g}"
        return shown.kind in NUMERIC_KINDS and fits(claim, shown.number, shown.bound)
    if kind in {Kind.PERCENT, Kind.DURATION, Kind.RATE}:
        return shown.kind is kind and fits(claim, shown.number, shown.bound)
    if kind is Kind.SIZE:
        if shown.kind is not Kind.SIZE:
            return False
        claims = [claim]
        if claim.alt is not None and claim.number:
            claims.append(replace(claim, value=claim.alt, tolerance=claim.tolerance * claim.alt / claim.number))
        shows = [shown.number] + ([shown.alt] if shown.alt is not None else [])
        return any(fits(c, s, shown.bound) for c in claims for s in shows)
    if kind is Kind.TIME:
        clock = shown_clock(shown)
        return clock is not None and _same_clock(claim.number, claim.tolerance, clock)
    if kind is Kind.DATE:
        return shown.kind in DAY_KINDS and isinstance(value, str) and _same_day(value, str(shown.value))
    if kind is Kind.DATETIME:
        return (
            shown.kind is Kind.DATETIME
            and _same_day(str(value), str(shown.value))
            and claim.clock is not None
            and shown.clock is not None
            and _same_clock(claim.clock, claim.tolerance, shown.clock)
        )
    if kind is Kind.VERSION:
        return shown.kind is Kind.VERSION and shown.value == value
    # identifiers: the same id, or (for a numeric id such as an HTTP status) the same standalone number
    if shown.kind is Kind.IDENTIFIER:
        return shown.value == value
    return isinstance(value, str) and value.isdigit() and shown.kind in NUMERIC_KINDS and shown.value == float(value)


def grounds(claim: Quantity, shown: Shown, context: Context) -> bool:
    """An evidence quantity grounds a claim: an origin allowed here, a compatible kind, the same value."""
    return context.allows(claim, shown.origin) and same_value(claim, shown.quantity)
