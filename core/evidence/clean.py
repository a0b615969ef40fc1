"""Tool text as the agent may see it: redacted, instruction-like spans marked, capped; and the size every projection
bound refers to. Below the projection and the tool specs, so both may use it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from core.evidence.instructions import mark_instructions
from core.evidence.json_size import compact_json_size
from core.evidence.redaction import redact

TRUNCATION_MARKER = "…[truncated]"


def projection_size(projection: dict[str, Any]) -> int:
    """Bytes of a projection as compact UTF-8 JSON: the measure every bound in this module refers to."""
    quick = compact_json_size(projection)
    if quick is not None:
        return quick
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
