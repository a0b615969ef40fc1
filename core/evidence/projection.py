"""Bounded projection: the only view of a tool call the agent gets. Redacted, instruction-like spans marked, capped
per item and in total bytes.

The envelope is generic; each tool's spec (core/tools/<tool>/spec.py) builds its items through `_Cut`, which redacts
every text value, marks instruction-like spans (core/evidence/instructions.py) and caps it."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from pydantic import BaseModel

from core.contracts.evidence import EvidenceStatus, RawResult, ToolError
from core.evidence.clean import TRUNCATION_MARKER as TRUNCATION_MARKER
from core.evidence.clean import clean_text as clean_text
from core.evidence.clean import projection_size as projection_size
from core.evidence.clean import safe_text as safe_text
from core.evidence.redaction import Redactor, redact
from core.tools.contract import ToolSpec
from core.tools.registry import current_registry

MIN_PROJECTION_BYTES = 2048
"""Smallest total bound that always leaves room for the envelope and one shortened item."""

SAFE_TEXT_MEMO_ENTRIES = 4096
SAFE_TEXT_MEMO_CHARS = 1024
_MAX_COLUMNS = 50
_MAX_ERROR_CHARS = 400
_SHRINK_LEVELS = 10


@dataclass
class _Cut:
    """The Cleaner a spec's project_items works through (core/tools/contract.py): limits for this attempt, whether
    anything was shortened or dropped, and a memo of cleaned texts."""

    item_chars: int
    columns: int
    redactor: Callable[[str], str] = redact
    happened: bool = False
    memo: dict[str, str] = field(default_factory=dict)
    """text -> safe_text(text) within one projection, or across a boundary's projections (`shared`): field values,
    services, levels and messages repeat across items and calls, and safe_text is a pure function of the text (for
    one redactor), so each distinct text is scanned once."""
    shared: bool = False
    """The memo outlives the projection (a boundary's): only texts up to SAFE_TEXT_MEMO_CHARS, a bounded number."""

    def redact(self, text: str) -> str:
        memo = self.memo
        out = memo.get(text)
        if out is None:
            out = safe_text(text, self.redactor)
            if not self.shared:
                memo[text] = out
            elif len(text) <= SAFE_TEXT_MEMO_CHARS:
                if len(memo) >= SAFE_TEXT_MEMO_ENTRIES:
                    memo.clear()  # atomic: projection threads share a boundary's memo
                memo[text] = out
        return out

    def text(self, value: Any, limit: int) -> str:
        if type(value) is str and len(value) <= limit:  # a text cleaned before, still within the limit: as it was
            known = self.memo.get(value)
            if known is not None and len(known) <= limit:
                return known  # what clean_text returns for it (one window, nothing cut), without its steps
        out, cut = clean_text(value, limit, self.redact)
        self.happened |= cut
        return out

    def scalar(self, value: Any, limit: int) -> Any:
        if value is None or isinstance(value, bool | int):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else None
        if isinstance(value, bytes | bytearray | memoryview):
            return f"<{len(bytes(value))} bytes>"
        if isinstance(value, datetime | date):
            return value.isoformat()
        return self.text(value, limit)

    def cut(self) -> None:
        self.happened = True


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


def _envelope(spec: ToolSpec, raw: RawResult | None, clean: _Cut, **common: Any) -> BaseModel:
    """The projection without items; `common` holds tool_name (the called tool's: a family answers for many)."""
    return spec.projection_model(**spec.envelope(raw, clean), **common)


def _error_projection(tool_call_id: str, spec: ToolSpec, name: str, error: ToolError) -> dict[str, Any]:
    safe = ToolError(code=clean_text(error.code, 64)[0], message=clean_text(error.message, _MAX_ERROR_CHARS)[0])
    common: dict[str, Any] = {"tool_call_id": tool_call_id, "tool_name": name, "evidence_status": EvidenceStatus.ERROR,
                              "count": 0, "error": safe}
    model = _envelope(spec, None, _Cut(0, 0), **common)
    return model.model_dump(mode="json")


def resolve(tool: ToolSpec | str) -> tuple[ToolSpec, str]:
    """The spec and the tool name of a call (UnknownTool for a name no toolset describes)."""
    if isinstance(tool, ToolSpec):
        return tool, tool.name
    return current_registry().spec_for(tool), str(tool)


def project(
    tool_call_id: str,
    tool_name: ToolSpec | str,
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
    tool_call_id: str, tool_name: ToolSpec | str, raw: RawResult | None, error: ToolError | None,
    bounds: ProjectionBounds = ProjectionBounds(), redactor: Redactor | None = None, *, name: str | None = None,
    safe_texts: dict[str, str] | None = None,
) -> tuple[dict[str, Any], int]:
    """project() and the projection_size() of its result (measured once, as the bound check already does).

    `redactor` (one per boundary) remembers the texts it redacted across calls; `safe_texts` (one per boundary, with
    its redactor) the texts cleaned for the agent (redacted, instruction-like spans marked); without them, nothing is
    remembered beyond the projection."""
    max_bytes, max_items, max_item_chars = bounds.max_bytes, bounds.max_items, bounds.max_item_chars
    if max_bytes < MIN_PROJECTION_BYTES:
        raise ValueError(f"max_bytes must be at least {MIN_PROJECTION_BYTES}, got {max_bytes}")
    spec, called = resolve(tool_name)
    called = name or called
    if error is not None or raw is None:
        fallback = ToolError(code="BACKEND_ERROR", message="The tool returned no result.")
        failed = _error_projection(tool_call_id, spec, called, error or fallback)
        return failed, projection_size(failed)

    raw_len = len(spec.raw_items(raw))
    common: dict[str, Any] = {
        "tool_call_id": tool_call_id,
        "evidence_status": EvidenceStatus.EVIDENCE_FOUND if spec.found(raw) else EvidenceStatus.NO_EVIDENCE,
        "count": max(raw.total_count, raw_len),
    }
    item_chars, columns, limit = max_item_chars, _MAX_COLUMNS, max(1, max_items)
    shared = safe_texts is not None and redactor is not None
    memo: dict[str, str] = safe_texts if safe_texts is not None and shared else {}
    for _ in range(_SHRINK_LEVELS):
        # The backend cut items or dropped some for size: the projection says so.
        cut = _Cut(item_chars, columns, redactor=redactor or redact, memo=memo, shared=shared,
                   happened=raw_len > limit or bool(raw.notes.get("bytes_truncated")))
        items = spec.project_items(raw, limit, cut)
        envelope = _envelope(spec, raw, cut, tool_name=called, truncated=False, **common)
        base = projection_size(envelope.model_dump(mode="json"))
        keep = _fit_prefix(base, [_item_size(i) for i in items], max_bytes)
        if base <= max_bytes and (keep > 0 or not items):
            truncated = cut.happened or keep < len(items)
            model = envelope.model_copy(update={spec.items_field: items[:keep], "truncated": truncated})
            result = model.model_dump(mode="json")
            size = projection_size(result)
            if size <= max_bytes:
                return result, size
        # Not even one item fits: shorten texts and columns, then try again.
        item_chars, columns = item_chars // 2, max(1, columns // 2)
    empty = _envelope(spec, None, _Cut(0, 0), tool_name=called, truncated=True, **common).model_dump(mode="json")
    return empty, projection_size(empty)
