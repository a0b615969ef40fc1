"""What one MCP tool call showed, as bounded JSON: content blocks and structured content, cut to a byte bound.

Structured content stays JSON (its fields keep their names, so a number keeps the key that types it); a text block
that is the JSON text of the structured content (FastMCP sends both) is not kept twice; a text block that is a JSON
document is kept parsed, for the same reason. Anything past the bound is cut with a marker that says how much.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.tools.mcp.sdk import CallResult

CUT_MARKER = "…[cut: over max_output_bytes]"
_JSON_START = ("{", "[")
_RESOURCE_KEYS = frozenset({"uri", "mime_type", "mimeType", "text", "blob"})
_BLOCK_KEYS = frozenset({"type", "uri", "name", "mime_type", "mimeType", "data", "text"})


def json_size(value: Any) -> int:
    """Compact UTF-8 JSON bytes of a value (the measure of every bound here)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode())


def _parsed(text: str) -> Any:
    stripped = text.strip()
    if not stripped.startswith(_JSON_START):
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


def blocks_of(result: CallResult) -> list[dict[str, Any]]:
    """The call's evidence items: structured content first, then content blocks (JSON text parsed)."""
    items: list[dict[str, Any]] = []
    structured = result.structured
    if structured is not None:
        items.append({"type": "structured", "json": structured})
    for block in result.content:
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parsed = _parsed(block["text"])
            if parsed is not None and structured is not None and parsed == structured:
                continue  # the same data as the structured content
            items.append({"type": "json", "json": parsed} if parsed is not None else {"type": "text", "text": block["text"]})
        elif block.get("type") == "resource" and isinstance(block.get("resource"), dict):
            items.append({"type": "resource", **{k: v for k, v in block["resource"].items() if k in _RESOURCE_KEYS}})
        else:
            items.append({k: v for k, v in block.items() if k in _BLOCK_KEYS})
    return items


def is_empty(items: list[dict[str, Any]]) -> bool:
    """No content at all, or only blank text and empty JSON ([] {} null "")."""
    for item in items:
        value = item.get("json", item.get("text"))
        if item.get("type") not in ("text", "json", "structured"):
            return False
        if isinstance(value, str) and value.strip():
            return False
        if isinstance(value, list | dict) and value:
            return False
        if isinstance(value, int | float) and not isinstance(value, bool):
            return False
        if value is True or value is False:
            return False
    return True


def cut_text(text: str, max_bytes: int, marker: str = CUT_MARKER) -> str:
    """The longest prefix of `text` whose UTF-8 plus the marker fits max_bytes (whole characters)."""
    encoded = text.encode()
    if len(encoded) <= max_bytes:
        return text
    room = max(0, max_bytes - len(marker.encode()))
    return encoded[:room].decode(errors="ignore") + marker


def fit_json(value: Any, max_bytes: int, text: Callable[[str, int], str] = cut_text) -> tuple[Any, bool]:
    """The value cut to about max_bytes of compact JSON: strings shortened, lists and objects keep their first
    entries that fit and then say how many were cut. Returns (value, was_cut)."""
    if json_size(value) <= max_bytes:
        return value, False
    if isinstance(value, str):
        return _fit_string(value, max_bytes, text), True
    if isinstance(value, list):
        kept: list[Any] = []
        used = 2
        for index, item in enumerate(value):
            room = max_bytes - used - 48
            if room <= 16:
                kept.append(f"…[{len(value) - index} more items cut]")
                break
            fitted, _ = fit_json(item, room, text)
            kept.append(fitted)
            used += json_size(fitted) + 1
        return kept, True
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        used = 2
        for index, (key, item) in enumerate(value.items()):
            room = max_bytes - used - json_size(key) - 48
            if room <= 16:
                out["…cut"] = f"{len(value) - index} more fields"
                break
            fitted, _ = fit_json(item, room, text)
            out[key] = fitted
            used += json_size(key) + json_size(fitted) + 2
        return out, True
    return value, False


def _fit_string(value: str, max_bytes: int, text: Callable[[str, int], str]) -> str:
    """The string cut so that its JSON form (quotes and escapes included) fits max_bytes."""
    room = max(0, max_bytes - 2)
    for _ in range(8):
        out = text(value, room)
        over = json_size(out) - max_bytes
        if over <= 0 or room == 0:
            return out
        room = max(0, room - over)
    return text(value, 0)


def bounded(items: list[dict[str, Any]], max_bytes: int) -> tuple[list[dict[str, Any]], bool]:
    """The items cut to max_bytes in all (the first ones whole where they fit, the crossing one cut, later ones
    counted); returns (items, was_cut)."""
    fitted, cut = fit_json(items, max_bytes)
    return [item if isinstance(item, dict) else {"type": "text", "text": str(item)} for item in fitted], cut
