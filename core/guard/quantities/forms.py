"""The written forms a claim's value may have in evidence text: what the lazy search looks for with str.find
before reading the leaf at each occurrence (core/guard/quantities/result_text.py)."""

from __future__ import annotations

import re

from core.guard.quantities.model import Kind, Quantity
from core.guard.quantities.units import DURATION_UNITS_BY_SIZE

_CLAIM_DIGITS = re.compile(r"[xX]?(\d[\d,]*(?:\.\d+)?)")


def number_forms(value: float) -> list[str]:
    """How evidence may write a number: '37', '1024' and '1,024', '62.21'."""
    if value.is_integer():
        whole = int(value)
        return [str(whole), f"{whole:,}"] if whole >= 1000 else [str(whole)]
    return [f"{value:g}", f"{value:.2f}".rstrip("0")]


def search_forms(claim: Quantity) -> list[str]:
    """The written forms to look for first (an empty list goes straight to the full index)."""
    kind, value = claim.kind, claim.value
    digits = _CLAIM_DIGITS.match(claim.text)
    written = digits.group(1).replace(",", "") if digits else ""
    if kind in {Kind.COUNT, Kind.NUMBER, Kind.PERCENT} and isinstance(value, float):
        return number_forms(value) if claim.tolerance <= 0.5 else [written]
    if kind is Kind.DURATION and isinstance(value, float):
        forms = [written]
        for _, seconds in DURATION_UNITS_BY_SIZE:
            amount = value / seconds
            if amount >= 1 and abs(amount - round(amount)) < 1e-9:
                forms.append(str(round(amount)))
        return list(dict.fromkeys(forms))
    if kind in {Kind.SIZE, Kind.RATE}:
        return [written]
    if kind is Kind.TIME and isinstance(value, float) and claim.tolerance <= 60:
        return [f"{int(value // 3600):02d}:{int(value % 3600 // 60):02d}"]
    if kind in {Kind.DATE, Kind.DATETIME} and isinstance(value, str):
        return [value.lstrip("-")]
    if kind in {Kind.VERSION, Kind.IDENTIFIER} and isinstance(value, str):
        return list(dict.fromkeys([claim.text.lstrip("vV#:"), value.lstrip("#")]))
    return []
