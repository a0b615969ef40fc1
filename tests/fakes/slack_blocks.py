"""Block Kit checks of the fake Slack, as Slack documents them (docs.slack.dev/reference/block-kit).

Messages: 50 blocks; section text 1..3,000 and 10 fields of 2,000; header 150; context 1..10 elements; actions 1..25
elements (button text 75, value 2,000, action_id 255, unique in its block); block_id 255 and unique; `table` 1..100
rows of at most 20 cells, all rows as wide, cells `raw_text`/`raw_number`/`rich_text`, 20 column settings, and only
one table per message (`only_one_table_allowed`); `context_actions` 1..5 `feedback_buttons`/`icon_button` elements
(button text 75, value 2,000); `markdown` 12,000. About 13,000 characters of blocks in total (`msg_blocks_too_long`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

TOTAL_BLOCKS_CHARS = 13_000
MESSAGE_TYPES = frozenset({"header", "section", "context", "actions", "divider", "table", "context_actions", "markdown"})
_BUTTON_TEXT = 75
_VALUE = 2000
_ID = 255


def _text_len(obj: Any) -> int:
    return len(obj.get("text", "")) if isinstance(obj, dict) else 0


def _button_ok(button: dict[str, Any]) -> bool:
    text = button.get("text") or {}
    return (text.get("type") == "plain_text" and 0 < len(text.get("text", "")) <= _BUTTON_TEXT
            and len(str(button.get("value", ""))) <= _VALUE and len(str(button.get("action_id", ""))) <= _ID)


def _section(b: dict[str, Any]) -> bool:
    if "text" in b and not 0 < _text_len(b["text"]) <= 3000:
        return False
    fields = b.get("fields", [])
    return len(fields) <= 10 and all(_text_len(f) <= 2000 for f in fields) and ("text" in b or bool(fields))


def _actions(b: dict[str, Any]) -> bool:
    elements = b.get("elements") or []
    return 0 < len(elements) <= 25 and all(e.get("type") != "button" or _button_ok(e) for e in elements)


def _cell_ok(cell: Any) -> bool:
    if not isinstance(cell, dict):
        return False
    if cell.get("type") == "raw_text":
        return isinstance(cell.get("text"), str)
    if cell.get("type") == "raw_number":
        return isinstance(cell.get("number"), int | float)
    return cell.get("type") == "rich_text"


def _table(b: dict[str, Any]) -> bool:
    rows = b.get("rows")
    if not isinstance(rows, list) or not 0 < len(rows) <= 100:
        return False
    widths = {len(r) for r in rows if isinstance(r, list)}
    if len(widths) != 1 or not 0 < widths.pop() <= 20:
        return False
    return all(_cell_ok(c) for r in rows for c in r) and len(b.get("column_settings") or []) <= 20


def _context_actions(b: dict[str, Any]) -> bool:
    elements = b.get("elements") or []
    if not 0 < len(elements) <= 5:
        return False
    for e in elements:
        if e.get("type") == "feedback_buttons":
            if not all(isinstance(e.get(k), dict) and _button_ok(e[k]) for k in ("positive_button", "negative_button")):
                return False
        elif e.get("type") != "icon_button":
            return False
    return True


CHECKS: dict[str, Callable[[dict[str, Any]], bool]] = {
    "header": lambda b: 0 < _text_len(b.get("text")) <= 150,
    "section": _section,
    "context": lambda b: 0 < len(b.get("elements") or []) <= 10,
    "actions": _actions,
    "table": _table,
    "context_actions": _context_actions,
    "markdown": lambda b: 0 < len(b.get("text", "")) <= 12_000,
    "divider": lambda b: True,
}


def validate_blocks(blocks: list[dict[str, Any]] | None, allowed: frozenset[str] = MESSAGE_TYPES) -> str | None:
    """Slack's block checks; returns the error code or None."""
    if not blocks:
        return None
    if len(blocks) > 50:
        return "invalid_blocks"
    if sum(1 for b in blocks if b.get("type") == "table") > 1:
        return "only_one_table_allowed"
    block_ids = [b["block_id"] for b in blocks if "block_id" in b]
    if len(block_ids) != len(set(block_ids)) or any(len(str(i)) > _ID for i in block_ids):
        return "invalid_blocks"
    for b in blocks:  # action_id: unique among the elements of its block
        ids = [e.get("action_id") for e in b.get("elements") or [] if isinstance(e, dict) and e.get("action_id")]
        if len(ids) != len(set(ids)):
            return "invalid_blocks"
    for b in blocks:
        kind = b.get("type")
        if kind not in allowed or not CHECKS[kind](b):
            return "invalid_blocks"
    if len(json.dumps(blocks)) > TOTAL_BLOCKS_CHARS:
        return "msg_blocks_too_long"
    return None
