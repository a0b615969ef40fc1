"""The agent's view of one MCP call: its content items as JSON, every string redacted and instruction-marked (§5),
the whole bounded in bytes like every projection.

Work is bounded by the bound, not by the result: the items are first cut to a window a few times the bound (plain
cuts), then redacted and marked, then cut to the bound. A string cut in the first pass loses its last characters
before the marker, so a secret the first cut split (and the redactor could no longer recognise) is never shown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.evidence.clean import TRUNCATION_MARKER, clean_text, projection_size
from core.evidence.instructions import mark_instructions
from core.evidence.redaction import Redactor
from core.tools.mcp.content import CUT_MARKER, cut_text, fit_json

ITEMS_FIELD = "content"
_WINDOW_FACTOR = 4
_SPLIT_GUARD_CHARS = 200
_MAX_ERROR_CHARS = 400
_SHRINK_STEPS = 12


def guard_cut(value: Any) -> Any:
    """Strings the window cut end in CUT_MARKER: drop the characters just before it (a split secret's head)."""
    if isinstance(value, str):
        if value.endswith(CUT_MARKER):
            return value[: max(0, len(value) - len(CUT_MARKER) - _SPLIT_GUARD_CHARS)] + CUT_MARKER
        return value
    if isinstance(value, list):
        return [guard_cut(item) for item in value]
    if isinstance(value, dict):
        return {key: guard_cut(item) for key, item in value.items()}
    return value


def _marked(value: Any) -> Any:
    if isinstance(value, str):
        return mark_instructions(value)
    if isinstance(value, list):
        return [_marked(item) for item in value]
    if isinstance(value, dict):
        return {key: _marked(item) for key, item in value.items()}
    return value


def safe_items(items: list[dict[str, Any]], max_bytes: int, redactor: Redactor) -> tuple[list[Any], bool]:
    """Items cut to a window, redacted (values under secret-named keys hidden), marked; (items, cut in window)."""
    windowed, cut = fit_json(items, max_bytes * _WINDOW_FACTOR + 1024)
    cleaned = _marked(redactor.redact_value(guard_cut(windowed) if cut else windowed))
    return cleaned if isinstance(cleaned, list) else [], cut


def _final_cut(text: str, max_bytes: int) -> str:
    return cut_text(text, max_bytes, TRUNCATION_MARKER)


def project_mcp(
    tool_call_id: str,
    tool_name: str,
    items: list[dict[str, Any]] | None,
    total_count: int,
    error: tuple[str, str] | None,
    max_bytes: int,
    redactor: Redactor | None = None,
) -> tuple[dict[str, Any], int]:
    """(projection, its size): ERROR for `error` (code, message), else FOUND/NO_EVIDENCE over `items`."""
    redactor = redactor or Redactor()
    envelope: dict[str, Any] = {"tool_call_id": tool_call_id, "tool_name": tool_name}
    if error is not None or items is None:
        code, message = error or ("BACKEND_ERROR", "The tool returned no result.")
        envelope.update(evidence_status="ERROR", count=0, truncated=False,
                        error={"code": clean_text(code, 64)[0], "message": _clean(message, redactor)})
        return envelope, projection_size(envelope)
    shown, cut = safe_items(items, max_bytes, redactor)
    envelope.update(evidence_status="EVIDENCE_FOUND" if shown else "NO_EVIDENCE", count=max(total_count, len(items)),
                    truncated=cut, **{ITEMS_FIELD: []})
    base = projection_size(envelope)
    budget = max_bytes - base
    for _ in range(_SHRINK_STEPS):
        fitted, cut_now = fit_json(shown, max(16, budget), _final_cut)
        result = {**envelope, ITEMS_FIELD: _as_items(fitted), "truncated": cut or cut_now}
        size = projection_size(result)
        if size <= max_bytes:
            return result, size
        budget -= max(64, size - max_bytes)
    empty = {**envelope, "truncated": True}
    return empty, projection_size(empty)


def _as_items(fitted: Any) -> list[Any]:
    return [item if isinstance(item, dict) else {"type": "text", "text": item} for item in fitted]


def _clean(message: str, redactor: Callable[[str], str]) -> str:
    return clean_text(message, _MAX_ERROR_CHARS, lambda text: mark_instructions(redactor(text)))[0]
