"""The guard's fastest path: claims whose kind and value follow from their token alone (a time, a date, a dotted
version, a hyphenated id, a number with its unit or percent sign) are grounded where the evidence writes the same
token, found with str.find and checked only at its two ends.

Each check accepts an occurrence only where the extractor would read a token of the same kind and value there
(tests/unit/test_quantities.py compares this path with the full index), so it never grounds more than the full
search; when it finds nothing the guard goes on to the full search.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from core.guard.quantities.model import Kind, Quantity
from core.guard.quantities.units import DURATION_UNITS_BY_SIZE

Check = Callable[[str, int, int], bool]
"""(text, start, end) of an occurrence -> whether the extractor reads the claimed quantity there."""


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _at(text: str, i: int) -> str:
    return text[i] if 0 <= i < len(text) else " "


def _time_ok(text: str, start: int, end: int) -> bool:
    before, after = _at(text, start - 1), _at(text, end)
    if before.isdigit() or before in ":." or after.isdigit():
        return False
    if _word(before):  # only the T of an ISO date-time may touch a time
        return before == "T" and _at(text, start - 2).isdigit()
    return True


def _date_ok(text: str, start: int, end: int) -> bool:
    before, after = _at(text, start - 1), _at(text, end)
    if _word(before) or before in ".-/" or after.isdigit():
        return False
    return not (after in "-/:" and _at(text, end + 1).isdigit())


def _version_ok(text: str, start: int, end: int) -> bool:
    before, after = _at(text, start - 1), _at(text, end)
    if _word(before) or before == ".":
        return False
    if _word(after) or (after == "." and _at(text, end + 1).isdigit()):
        return False
    return not (after in "-+" and _word(_at(text, end + 1)))


def _ident_ok(text: str, start: int, end: int) -> bool:
    return not (_word(_at(text, start - 1)) or _at(text, start - 1) in "-./" or _word(_at(text, end)) or _at(text, end) == "-")


def _unit_ok(text: str, start: int, end: int) -> bool:
    before = _at(text, start - 1)
    return not (_word(before) or before in ".," or _word(_at(text, end)))


def _number(value: float) -> str | None:
    return str(int(value)) if 1 <= value < math.inf and abs(value - round(value)) < 1e-9 else None


def exact_forms(claim: Quantity) -> tuple[list[str], Check] | None:
    """The tokens that show exactly this claim, with their boundary check; None when the claim's kind depends on
    its context (a bare number, a numeric id, a 2-part version) and needs the full search."""
    kind, value = claim.kind, claim.value
    if kind is Kind.TIME and isinstance(value, float) and claim.tolerance in (60.0, 1.0):
        hours, minutes, seconds = int(value // 3600), int(value % 3600 // 60), int(value % 60)
        form = f"{hours:02d}:{minutes:02d}" + (f":{seconds:02d}" if claim.tolerance == 1.0 else "")
        return [form], _time_ok
    if kind is Kind.DATE and isinstance(value, str) and not value.startswith("-"):
        return [value], _date_ok
    if kind is Kind.VERSION and isinstance(value, str) and value.count(".") >= 2:
        return [value], _version_ok
    if kind is Kind.IDENTIFIER and claim.text[:1].isalpha() and "-" in claim.text:
        return [claim.text], _ident_ok
    if kind is Kind.PERCENT and isinstance(value, float) and (whole := _number(value)) and claim.tolerance == 0.5:
        return [f"{whole}%", f"{whole} %"], _unit_ok
    if kind is Kind.DURATION and isinstance(value, float):
        forms = []
        for unit, in_seconds in DURATION_UNITS_BY_SIZE:
            amount = _number(value / in_seconds)
            if amount is not None and not (unit == "s" and 100 <= int(amount) <= 599):
                forms += [f"{amount}{unit}", f"{amount} {unit}"]
        return forms, _unit_ok
    return None
