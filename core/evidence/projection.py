"""Bounded projection: the only view of a tool call the agent gets. Redacted, instruction-like spans marked, capped
per item and in total bytes.

Every text value is redacted (log messages and fields, knowledge text, every SQL value whatever its column is called)
and then has instruction-like spans marked (core/evidence/instructions.py) before it is capped."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel

from core.contracts.evidence import (
    EvidenceStatus,
    KnowledgeBlock,
    KnowledgeProjection,
    LogLine,
    LogsProjection,
    RawResult,
    SqlProjection,
    ToolError,
    ToolName,
)
from core.evidence.instructions import mark_instructions
from core.evidence.redaction import REDACTED, Redactor, is_secret_key, paired_secret_keys, redact
from core.tools.sql.secrets import secret_cells, secret_columns

TRUNCATION_MARKER = "…[truncated]"
MIN_PROJECTION_BYTES = 2048
"""Smallest total bound that always leaves room for the envelope and one shortened item."""

_LOG_CORE_KEYS = frozenset({"timestamp", "service", "level", "message"})
_MAX_FIELDS = 10
_MAX_FIELD_KEY_CHARS = 40
_MAX_FIELD_VALUE_CHARS = 120
_MAX_COLUMNS = 50
_MAX_COLUMN_CHARS = 64
_MAX_LABEL_CHARS = 200
_MAX_ERROR_CHARS = 400
_SHRINK_LEVELS = 10


def projection_size(projection: dict[str, Any]) -> int:
    """Bytes of a projection as compact UTF-8 JSON: the measure every bound in this module refers to."""
    return len(json.dumps(projection, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode())


def safe_text(text: str, redactor: Callable[[str], str] = redact) -> str:
    """Tool text as the agent may see it: secrets redacted, then instruction-like spans marked."""
    return mark_instructions(redactor(text))


def clean_text(value: Any, limit: int, redactor: Callable[[str], str] | None = None) -> tuple[str, bool]:
    """Clean (safe_text: redact, mark instructions) then cap a text to `limit` characters (marker included); returns
    (text, was_cut).

    Only a window of the input is cleaned, so a 10 MB string costs about as much as a short one; the window
    grows when redaction shrank it so much that text near the window's end would become visible.
    `redactor` must return what safe_text() returns (e.g. a memo of it).
    """
    redactor = redactor or safe_text
    text = value if isinstance(value, str) else str(value)
    window = limit * 4 + 256
    while True:
        redacted = redactor(text[:window])
        if window >= len(text) or len(redacted) >= limit + 256:
            break
        window *= 4
    if len(redacted) <= limit and window >= len(text):
        return redacted, False
    if limit <= len(TRUNCATION_MARKER):
        return TRUNCATION_MARKER[:limit], True
    return redacted[: limit - len(TRUNCATION_MARKER)] + TRUNCATION_MARKER, True


@dataclass(frozen=True)
class _Limits:
    item_chars: int
    columns: int


@dataclass
class _Cut:
    """Collects whether anything was shortened or dropped while building items; cleans texts through a memo."""

    redactor: Callable[[str], str] = redact
    happened: bool = False
    memo: dict[str, str] = field(default_factory=dict)
    """text -> safe_text(text) within one projection: field values, services, levels and messages repeat across
    items, and safe_text is a pure function of the text, so each distinct text is scanned once."""

    def redact(self, text: str) -> str:
        out = self.memo.get(text)
        if out is None:
            out = self.memo[text] = safe_text(text, self.redactor)
        return out

    def text(self, value: Any, limit: int) -> str:
        out, cut = clean_text(value, limit, self.redact)
        self.happened |= cut
        return out


def _json_scalar(value: Any, limit: int, cut: _Cut) -> Any:
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(bytes(value))} bytes>"
    if isinstance(value, datetime | date):
        return value.isoformat()
    return cut.text(value, limit)


def _score(value: Any) -> float:
    try:
        score = float(value)
    except (TypeError, ValueError):
        return 0.0
    return score if math.isfinite(score) else 0.0


def _knowledge_block(item: dict[str, Any], limits: _Limits, cut: _Cut) -> KnowledgeBlock:
    return KnowledgeBlock(
        doc=cut.text(item.get("doc", ""), _MAX_LABEL_CHARS),
        heading=cut.text(item.get("heading", ""), _MAX_LABEL_CHARS),
        text=cut.text(item.get("text", ""), limits.item_chars),
        score=_score(item.get("score")),
    )


def _short_fields(item: dict[str, Any], redactor: Callable[[str], str] = redact) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    paired = paired_secret_keys(item)
    for key, value in item.items():
        if len(fields) >= _MAX_FIELDS:
            break
        if key in _LOG_CORE_KEYS or not isinstance(key, str) or len(key) > _MAX_FIELD_KEY_CHARS:
            continue
        if key in paired or is_secret_key(key):
            fields[key] = REDACTED
        elif value is None or isinstance(value, bool | int) or (isinstance(value, float) and math.isfinite(value)):
            fields[key] = value
        elif isinstance(value, str) and len(value) <= _MAX_FIELD_VALUE_CHARS:
            fields[key] = redactor(value)
    return fields


def _log_line(item: dict[str, Any], limits: _Limits, cut: _Cut) -> LogLine:
    return LogLine(
        timestamp=cut.text(item.get("timestamp", ""), 64),
        service=cut.text(item.get("service", ""), 100),
        level=cut.text(item.get("level", ""), 16),
        message=cut.text(item.get("message", ""), limits.item_chars),
        fields=_short_fields(item, cut.redact),
    )


def _sql_row(row: Sequence[Any], secret_columns: Sequence[bool], limits: _Limits, cut: _Cut) -> list[Any]:
    cells: list[Any] = []
    secret_here = secret_cells(row)
    for index, value in enumerate(row[: limits.columns]):
        secret = (index < len(secret_columns) and secret_columns[index]) or index in secret_here
        cells.append(REDACTED if secret and value not in (None, "") else _json_scalar(value, limits.item_chars, cut))
    if len(row) > limits.columns:
        cut.happened = True
    return cells


def _window(raw: RawResult | None, *names: str) -> str | None:
    if raw is None:
        return None
    for name in names:
        value = raw.effective_arguments.get(name)
        if value is not None:
            text = value.isoformat() if isinstance(value, datetime) else str(value)
            return text[:64]
    return None


def _has_items(tool_name: ToolName, raw: RawResult) -> bool:
    return bool(raw.rows) if tool_name == ToolName.QUERY_MYSQL else bool(raw.items)


def _envelope(tool_name: ToolName, raw: RawResult | None, limits: _Limits, **common: Any) -> BaseModel:
    if tool_name == ToolName.LOOKUP_KNOWLEDGE:
        return KnowledgeProjection(**common)
    if tool_name == ToolName.QUERY_LOGS:
        return LogsProjection(
            window_start=_window(raw, "window_start", "start"), window_end=_window(raw, "window_end", "end"), **common
        )
    columns = [] if raw is None else [clean_text(c, _MAX_COLUMN_CHARS)[0] for c in raw.columns[: limits.columns]]
    return SqlProjection(columns=columns, **common)


def _items(tool_name: ToolName, raw: RawResult, limit: int, limits: _Limits, cut: _Cut,
           secret_columns: Sequence[bool] = ()) -> list[Any]:
    if tool_name == ToolName.LOOKUP_KNOWLEDGE:
        return [_knowledge_block(item, limits, cut) for item in raw.items[:limit]]
    if tool_name == ToolName.QUERY_LOGS:
        return [_log_line(item, limits, cut) for item in raw.items[:limit]]
    return [_sql_row(row, secret_columns, limits, cut) for row in raw.rows[:limit]]


_ITEMS_FIELD = MappingProxyType(
    {ToolName.LOOKUP_KNOWLEDGE: "evidence_blocks", ToolName.QUERY_LOGS: "logs", ToolName.QUERY_MYSQL: "rows"}
)


def _item_size(item: Any) -> int:
    if isinstance(item, BaseModel):
        return len(item.model_dump_json().encode())
    return projection_size({"r": item}) - len('{"r":}')


def _fit_prefix(base_bytes: int, sizes: Sequence[int], max_bytes: int) -> int:
    """How many leading items fit beside the envelope (the empty list's `[]` is already in base_bytes)."""
    total, count = base_bytes, 0
    for size in sizes:
        total += size + (1 if count else 0)
        if total > max_bytes:
            break
        count += 1
    return count


def _error_projection(tool_call_id: str, tool_name: ToolName, error: ToolError) -> dict[str, Any]:
    safe = ToolError(code=clean_text(error.code, 64)[0], message=clean_text(error.message, _MAX_ERROR_CHARS)[0])
    common: dict[str, Any] = {"tool_call_id": tool_call_id, "evidence_status": EvidenceStatus.ERROR, "count": 0, "error": safe}
    model = _envelope(tool_name, None, _Limits(0, 0), **common)
    return model.model_dump(mode="json")


def project(
    tool_call_id: str,
    tool_name: ToolName,
    raw: RawResult | None,
    error: ToolError | None,
    max_bytes: int = 8192,
    max_items: int = 50,
    max_item_chars: int = 500,
    redactor: Redactor | None = None,
) -> dict[str, Any]:
    """Build the bounded, redacted projection JSON of one call; its compact JSON never exceeds max_bytes."""
    bounds = ProjectionBounds(max_bytes, max_items, max_item_chars)
    return project_sized(tool_call_id, tool_name, raw, error, bounds, redactor)[0]


@dataclass(frozen=True)
class ProjectionBounds:
    """How large one projection may be: compact JSON bytes, items, and characters per item text."""

    max_bytes: int = 8192
    max_items: int = 50
    max_item_chars: int = 500


def project_sized(
    tool_call_id: str, tool_name: ToolName, raw: RawResult | None, error: ToolError | None,
    bounds: ProjectionBounds = ProjectionBounds(), redactor: Redactor | None = None,
) -> tuple[dict[str, Any], int]:
    """project() and the projection_size() of its result (measured once, as the bound check already does).

    `redactor` (one per boundary) remembers the texts it redacted across calls; without one, nothing is remembered."""
    max_bytes, max_items, max_item_chars = bounds.max_bytes, bounds.max_items, bounds.max_item_chars
    if max_bytes < MIN_PROJECTION_BYTES:
        raise ValueError(f"max_bytes must be at least {MIN_PROJECTION_BYTES}, got {max_bytes}")
    tool_name = ToolName(tool_name)
    if error is not None or raw is None:
        fallback = ToolError(code="BACKEND_ERROR", message="The tool returned no result.")
        failed = _error_projection(tool_call_id, tool_name, error or fallback)
        return failed, projection_size(failed)

    found = _has_items(tool_name, raw)
    raw_len = len(raw.rows) if tool_name == ToolName.QUERY_MYSQL else len(raw.items)
    common: dict[str, Any] = {
        "tool_call_id": tool_call_id,
        "evidence_status": EvidenceStatus.EVIDENCE_FOUND if found else EvidenceStatus.NO_EVIDENCE,
        "count": max(raw.total_count, raw_len),
    }
    field = _ITEMS_FIELD[tool_name]
    limits, limit = _Limits(max_item_chars, _MAX_COLUMNS), max(1, max_items)
    memo: dict[str, str] = {}
    hidden: list[bool] = []
    if tool_name == ToolName.QUERY_MYSQL:  # by name, and by lineage in the statement (aliases, CONCAT, subqueries)
        sql = raw.effective_arguments.get("sql")
        hidden = secret_columns(sql if isinstance(sql, str) else None, [str(c) for c in raw.columns])
    for _ in range(_SHRINK_LEVELS):
        cut = _Cut(redactor=redactor or redact, memo=memo,
                   happened=raw_len > limit or (tool_name == ToolName.QUERY_MYSQL and len(raw.columns) > limits.columns)
                   or bool(raw.notes.get("bytes_truncated")))  # the backend cut items or dropped some for size
        items = _items(tool_name, raw, limit, limits, cut, hidden)
        envelope = _envelope(tool_name, raw, limits, truncated=False, **common)
        base = projection_size(envelope.model_dump(mode="json"))
        keep = _fit_prefix(base, [_item_size(i) for i in items], max_bytes)
        if base <= max_bytes and (keep > 0 or not items):
            truncated = cut.happened or keep < len(items)
            model = envelope.model_copy(update={field: items[:keep], "truncated": truncated})
            result = model.model_dump(mode="json")
            size = projection_size(result)
            if size <= max_bytes:
                return result, size
        # Not even one item fits: shorten texts and columns, then try again.
        limits = _Limits(limits.item_chars // 2, max(1, limits.columns // 2))
    empty = _envelope(tool_name, None, _Limits(0, 0), truncated=True, **common).model_dump(mode="json")
    return empty, projection_size(empty)

