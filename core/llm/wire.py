"""Wire-format helpers: decode the model's JSON answers and build OpenAI chat messages."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from core.llm.model import ModelToolCall

_FENCE = re.compile(r"^```(?:json|JSON)?\s*\n?(?P<body>.*?)\n?```$", re.DOTALL)


def parse_json_object(text: str | None) -> dict[str, Any] | None:
    """Decode a JSON object answer, tolerating one surrounding ```json fence; None for anything else."""
    if text is None:
        return None
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group("body").strip()
    try:
        value = json.loads(body)
    except (json.JSONDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def decode_arguments(arguments: str) -> dict[str, Any] | None:
    """Decode a tool call's argument text into an object; None when it is not a JSON object."""
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except (json.JSONDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def system_message(text: str) -> dict[str, Any]:
    """A system message."""
    return {"role": "system", "content": text}


def user_message(text: str) -> dict[str, Any]:
    """A user message."""
    return {"role": "user", "content": text}


def assistant_message(content: str | None, calls: Sequence[ModelToolCall], ids: Sequence[str]) -> dict[str, Any]:
    """The assistant turn to send back in the history; every tool call carries an id (the wire format needs one)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call, call_id in zip(calls, ids, strict=True)
        ]
    return message


def tool_message(tool_call_id: str, payload: dict[str, Any] | str) -> dict[str, Any]:
    """The answer to one tool call: the projection JSON (or a short corrective text)."""
    content = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False, default=str)
    return {"role": "tool", "tool_call_id": tool_call_id, "content": content}
