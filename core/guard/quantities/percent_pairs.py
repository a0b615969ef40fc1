"""Which two values of one listed row may make a percentage (PERCENT_OF of a row): a plausible (part, whole) pair.

Any ratio of two numeric cells of a row is some percentage, so without a reason to pair them a row of five numbers
grounds a dozen invented ones ('33 %' as max_size=20 of waiting=60). A pair is plausible when:
- the whole is a capacity-like field (max, size, capacity, limit, total, quota) or a field the text names;
- the part is a field the text names ('0 % of the connections were idle': idle) or, when the text names no field of
  the row, a usage-like one ('the pool was at 100 % of its capacity': active of max_size);
- the part is not larger than the whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

CAPACITY = frozenset({"max", "maximum", "capacity", "cap", "limit", "size", "total", "quota", "allowed", "allotted"})
"""Field-name words of a whole: the capacity a part is a share of."""
USAGE = frozenset({"active", "used", "use", "inuse", "busy", "usage", "current", "occupied", "allocated", "consumed",
                   "utilized", "utilised", "utilization", "utilisation", "held", "open", "taken", "load"})
"""Field-name words of a part the text need not name: what is in use of a capacity."""
GENERIC = frozenset({"count", "num", "number", "value", "n", "id", "pct", "percent", "ms", "s"})
"""Field-name words that name nothing by themselves."""
_WORD = re.compile(r"[a-z]+")


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


def _words(field: str) -> set[str]:
    return {_singular(w) for w in _WORD.findall(field.lower())}


def text_words(text: str) -> frozenset[str]:
    """The text's words in lower case, singular."""
    return frozenset(_singular(w) for w in _WORD.findall(text.lower()))


def _named(field: str, words: frozenset[str]) -> bool:
    return any(w in words for w in _words(field) - GENERIC if len(w) >= 3)


def names_a_field(fields: Iterable[str], words: frozenset[str]) -> bool:
    """Whether the text (its `text_words`) names one of these fields."""
    return any(field and _named(field, words) for field in fields)


def plausible_pairs(cells: Sequence[tuple[str, float, str]], words: frozenset[str],
                    named_elsewhere: bool = False) -> Iterator[tuple[float, str, str]]:
    """(percentage, part label, whole label) for the plausible pairs of one row's (field, number, label) cells, the
    text read as `text_words`. named_elsewhere: the text names a field of another cited row, so its percentage is
    of that field and no unnamed usage-like part of this row stands in for it ('the batch held 80 % of the pool':
    db_connections_held of another call, not active of the pool's row)."""
    named = [c for c in cells if c[0] and _named(c[0], words)]
    for whole in cells:
        field, total, _ = whole
        capacity = bool(_words(field) & CAPACITY)
        if total <= 0 or not field or not (capacity or whole in named):
            continue
        parts = [c for c in named if c is not whole and c[0] != field]
        if not parts and capacity and not named_elsewhere and all(c is whole for c in named):
            parts = [c for c in cells if c is not whole and c[0] != field and _words(c[0]) & USAGE]
        for _, part, part_label in parts:
            if 0 <= part <= total:
                yield 100.0 * part / total, part_label, whole[2]
