"""Why a quantity is not grounded, in one sentence the repair step (and /diag trace) can act on:
"'3 pods' is a count; the cited calls show 3 only inside timestamps"."""

from __future__ import annotations

import re
from collections.abc import Sequence
from types import MappingProxyType

from core.guard.quantities.evidence import CallEvidence
from core.guard.quantities.match import Context, same_value
from core.guard.quantities.model import Kind, Origin, Quantity, Shown

_INSIDE = MappingProxyType({
    Kind.DATETIME: "timestamps", Kind.TIME: "times of day", Kind.DATE: "dates", Kind.VERSION: "versions",
    Kind.IDENTIFIER: "ids",
})
_ORIGIN_RULE = MappingProxyType({
    Origin.WINDOW: "the searched window, which grounds only times, dates and window lengths",
    Origin.LIMIT: "the call's limit argument, which grounds only statements about the limit",
    Origin.QUERY: "the query text, which grounds only a NEGATIVE_OBSERVATION analysis restating that query",
})
_MAX_QUOTED = 40


def _digits(claim: Quantity) -> str:
    found = re.search(r"\d[\d,]*(?:\.\d+)?", claim.text)
    return found.group(0).replace(",", "") if found else ""


def _parts(text: str) -> set[str]:
    return {p.lstrip("0") or "0" for p in re.findall(r"\d+", text)}


def _classify(claim: Quantity, shown: Shown, context: Context, digits: str) -> tuple[str, str] | None:
    """(category, detail) for evidence that shows the claim's digits in a way that cannot ground it."""
    q = shown.quantity
    if same_value(claim, q) and not context.allows(claim, shown.origin):
        return "origin", _ORIGIN_RULE.get(shown.origin, shown.origin.value)
    if not digits:
        return None
    numbers = re.findall(r"\d[\d,]*(?:\.\d+)?", q.text)
    if q.kind is not claim.kind and digits in {n.replace(",", "") for n in numbers} and q.kind not in _INSIDE:
        return "kind", f"a {q.kind.value} ({q.text[:_MAX_QUOTED]})"
    if q.kind in _INSIDE and (digits.lstrip("0") or "0") in _parts(q.text):
        return "inside", _INSIDE[q.kind]
    return None


def explain(claim: Quantity, calls: Sequence[CallEvidence], context: Context) -> str:
    """The violation message for an ungrounded claim: the quantity, its kind and why."""
    kind = claim.kind.value
    head = f"'{claim.text[:_MAX_QUOTED]}' is {'an' if kind[:1] in 'aeiou' else 'a'} {kind}"
    where = "no referencable call of this run" if context.limitations else "the cited calls"
    digits = _digits(claim) if claim.kind not in {Kind.IDENTIFIER, Kind.VERSION} else ""
    found: dict[str, list[str]] = {}
    for call in calls:
        for shown in (*call.index(), *call.extra()):
            category = _classify(claim, shown, context, digits)
            if category is not None and category[1] not in found.setdefault(category[0], []):
                found[category[0]].append(category[1])
    if found.get("origin"):
        return f"{head}; {where} show it only in {' and '.join(found['origin'][:2])}"
    if found.get("kind"):
        return f"{head}; {where} show {digits} only as {', '.join(found['kind'][:2])}"
    if found.get("inside"):
        return f"{head}; {where} show {digits} only inside {' and '.join(found['inside'][:3])}"
    if context.limitations:
        return f"{head}; no referencable call of this run shows it"
    return f"{head}; the cited calls never show it"
