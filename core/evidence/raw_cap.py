"""The canonical record's size cap: a raw tool result over the bound keeps its first items/rows that fit, and says
so in its notes (`canonical_truncated`), so what is stored, read back and verified is bounded in bytes whatever a
backend returned.

The cost is bounded by the cap, not by the result: entries are sized one at a time (a short encoder call each, so
the event loop gets the GIL back between them when this runs in a worker thread) and sizing stops at the cap;
only what is kept is serialised whole."""

from __future__ import annotations

import json
from typing import Any

from core.contracts.evidence import RawResult
from core.evidence.json_size import compact_json_size

DEFAULT_RAW_MAX_BYTES = 2 * 1024 * 1024
_RESERVE = 4096  # envelope: columns, arguments, notes, the truncation note itself


def _size(value: Any) -> int:
    quick = compact_json_size(value)  # JSON's own types: default=str is never called, the bytes are the same
    if quick is not None:
        return quick + 1
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode()) + 1


def cap_raw(raw: RawResult, max_bytes: int = DEFAULT_RAW_MAX_BYTES) -> tuple[RawResult, int] | None:
    """(raw, its JSON size) when it fits max_bytes; else the longest prefix of items/rows that fits, with a note, and
    its size; None when not even the first item fits (the call is then an error, never an empty answer).
    Raises ValueError when the kept part cannot be serialised."""
    capped = cap_raw_json(raw, max_bytes)
    return None if capped is None else (capped[0], len(capped[1]))


def cap_raw_json(raw: RawResult, max_bytes: int = DEFAULT_RAW_MAX_BYTES) -> tuple[RawResult, str] | None:
    """cap_raw, with the kept result's JSON (`model_dump_json()`, what sized it) instead of its size: the canonical
    store writes that JSON as it is rather than encoding the result a second time."""
    field = "rows" if raw.rows else "items"
    entries: list[Any] = getattr(raw, field)
    budget = max_bytes - _RESERVE - _size(raw.columns) - _size(raw.effective_arguments) - _size(raw.notes)
    kept = 0
    for entry in entries:
        budget -= _size(entry)
        if budget < 0:
            break
        kept += 1
    if kept == len(entries):
        return raw, raw.model_dump_json()
    if kept == 0:
        return None
    note = {"kept": kept, "of": len(entries), "max_bytes": max_bytes}
    capped = raw.model_copy(update={field: entries[:kept], "notes": {**raw.notes, "canonical_truncated": note}})
    return capped, capped.model_dump_json()
