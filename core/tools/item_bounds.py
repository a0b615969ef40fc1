"""Byte bounds for log lines and knowledge blocks, as query_mysql has for cells and results (issue 8 item 3).

Every item (one log line, one runbook block) is at most `item_bytes` as compact JSON: its longest text values are
shortened first, each cut ending with a visible marker; a nested value that alone is too big becomes the marker.
A result keeps items while their total stays within `result_bytes`; the rest are dropped and counted. Both leave
`bytes_truncated` (and counts) in the result's notes, which the projection shows as `truncated`. The raw read of a
log file is bounded too: a line longer than `line_bytes` is not parsed at all (counted as oversized).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson

TRUNCATED = "…[truncated]"
# Never dropped from an item (they are what the projection shows first); other fields go when cutting is not enough.
_MIN_CUT_BYTES = 64
_CORE_KEYS = frozenset({"timestamp", "service", "level", "message", "doc", "heading", "text", "score"})


@dataclass(frozen=True)
class ItemBounds:
    """The bounds of one result."""

    item_bytes: int = 16 * 1024
    """One item as compact JSON."""
    result_bytes: int = 512 * 1024
    """All kept items together."""
    line_bytes: int = 256 * 1024
    """One raw log line read from a file (longer ones are skipped before parsing)."""


def json_size(value: Any) -> int:
    """Bytes of a value as compact UTF-8 JSON (what every bound here measures)."""
    try:
        return len(orjson.dumps(value, default=str))
    except TypeError:  # orjson refuses integers beyond 64 bits (a SQL NUMERIC, an MCP result): json writes them
        return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str).encode("utf-8",
                                                                                                   "surrogatepass"))


def cut_utf8(text: str, max_bytes: int) -> str:
    """The longest prefix of text whose UTF-8 encoding fits max_bytes (never splits a character)."""
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text
    return encoded[: max(0, max_bytes)].decode("utf-8", errors="ignore")


def bound_item(item: dict[str, Any], max_bytes: int) -> tuple[dict[str, Any], bool]:
    """The item within max_bytes (largest values shortened first, with the marker); (item, was_cut)."""
    size = json_size(item)
    if size <= max_bytes:
        return item, False
    out = dict(item)
    for key in sorted(out, key=lambda k: json_size(out[k]), reverse=True):
        excess = size - max_bytes
        if excess <= 0:
            break
        value = out[key]
        before = json_size(value)
        if before <= _MIN_CUT_BYTES:  # values are in decreasing size: cutting the rest cannot help
            break
        if isinstance(value, str):
            keep = max(0, len(value.encode("utf-8")) - excess - len(TRUNCATED.encode("utf-8")) - 8)
            out[key] = cut_utf8(value, keep) + TRUNCATED
        elif isinstance(value, dict | list):
            out[key] = TRUNCATED
        else:
            continue
        size -= before - json_size(out[key])
    if size > max_bytes:  # many small fields: drop the extra ones, the core fields stay
        for key in [k for k in reversed(list(out)) if k not in _CORE_KEYS]:
            del out[key]
            out["fields_dropped_for_size"] = int(out.get("fields_dropped_for_size", 0)) + 1
            if json_size(out) <= max_bytes:
                break
    return out, True


def bound_items(items: list[dict[str, Any]], bounds: ItemBounds) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Items cut to the per-item bound and kept while the result bound holds; notes say what was cut or dropped."""
    kept: list[dict[str, Any]] = []
    total = 0
    cut = 0
    for item in items:
        bounded, was_cut = bound_item(item, bounds.item_bytes)
        size = json_size(bounded)
        if total + size > bounds.result_bytes:
            break
        kept.append(bounded)
        total += size
        cut += was_cut
    notes: dict[str, Any] = {}
    if cut or len(kept) < len(items):
        notes = {"bytes_truncated": True, "items_cut_for_size": cut, "items_dropped_for_size": len(items) - len(kept),
                 "item_bytes_max": bounds.item_bytes, "result_bytes_max": bounds.result_bytes}
    return kept, notes
