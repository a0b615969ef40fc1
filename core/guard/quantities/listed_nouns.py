"""A count of what a query lists ('5 alerts' of `SELECT ... FROM alerts`) is grounded by that call's count, a cell
of a field its noun names, or a derivation (ITEM_COUNT, SUM); not by any number a cell's free text writes.

Without this, 'N alerts fired' against the demo's alerts table passed for N = 0, 20 and 57: a summary cell reads
'HikariPool-1 active=20 idle=0 waiting=57'. Only a count whose noun names the queried table is held to this; other
counts are written loosely ('all 20 connections were busy' for active=20) and keep matching any number shown.
"""

from __future__ import annotations

import re

from core.guard.quantities.evidence import CallEvidence
from core.guard.quantities.model import Kind, Origin, Quantity, Shown

_TABLE = re.compile(r"\b(?:from|join)\s+[`\"]?([a-z_][\w.]*)", re.IGNORECASE)
_WORD = re.compile(r"[a-z]+")


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


def _words(name: str) -> set[str]:
    return {_singular(w) for w in _WORD.findall(name.lower())}


def noun_words(claim: Quantity) -> set[str]:
    """The count's noun as singular words ('alerts fired' -> {'alert', 'fired'})."""
    return _words(claim.noun) if claim.kind is Kind.COUNT else set()


def names_listed_table(nouns: set[str], call: CallEvidence) -> bool:
    """Whether the count's noun names a table the call's SQL lists rows of (its last word: 'alerts' for alerts,
    'runs' for batch_job_runs)."""
    sql = call.arguments.get("sql")
    if not nouns or not isinstance(sql, str):
        return False
    for name in _TABLE.findall(sql):
        last = _WORD.findall(name.rsplit(".", 1)[-1].lower())
        if last and _singular(last[-1]) in nouns:
            return True
    return False


def counts_what_is_listed(nouns: set[str], shown: Shown) -> bool:
    """Whether an evidence number may ground a count of the listed rows: the call's count (or its window or limit),
    or a value whose field, key or following words the noun names ('57 orders' by order_count=57, by '57 orders'
    in a message)."""
    if shown.origin is not Origin.RESULT or (shown.item < 0 and shown.field == "count"):
        return True
    return bool(nouns & (_words(shown.field) | _words(shown.quantity.key) | _words(shown.quantity.noun)))
