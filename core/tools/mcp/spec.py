"""The static description of every MCP tool (the family mcp_<server>_<tool>): projection, words and views.

It reads only projections and arguments, so records outlive the servers: a replica without the toolsets file, or
`diagbot replay` after a server was removed, still reads an MCP call's record.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from core.contracts.evidence import EvidenceStatus, ProjectionBase, RawResult
from core.evidence.redaction import REDACTED, is_secret_key
from core.tools.contract import Cleaner, EvidenceView, Fact, LinesView, Nouns, StepHints, ToolSpec
from core.tools.mcp.content import CUT_MARKER, fit_json, json_size
from core.tools.mcp.projection import ITEMS_FIELD, guard_cut

FAMILY = re.compile(r"mcp_([a-z][a-z0-9]{0,15})_([A-Za-z0-9_-]{1,60})")
_ITEM_BYTES_PER_CHAR = 16
_LINE_CHARS = 300
_MAX_LINES = 40
_MAX_FACT_LINES = 3


class McpProjection(ProjectionBase):
    """Projection of an MCP tool call: its content items (structured JSON, parsed JSON text, text, other blocks)."""

    content: list[Any] = Field(default_factory=list)


def parts(name: str) -> tuple[str, str]:
    """(server, tool) of mcp_<server>_<tool> (('', name) for another name)."""
    match = FAMILY.fullmatch(name)
    return (match.group(1), match.group(2)) if match else ("", name)


def _clean(value: Any, clean: Cleaner, depth: int = 0) -> Any:
    """Every string redacted and instruction-marked (not capped: the byte fit below does that); values under
    secret-named keys hidden."""
    if isinstance(value, str):
        return clean.redact(value)
    if isinstance(value, list):
        return [_clean(item, clean, depth + 1) for item in value]
    if isinstance(value, dict):
        return {str(key): REDACTED if isinstance(key, str) and is_secret_key(key) and value[key] not in (None, "", [], {})
                else _clean(item, clean, depth + 1) for key, item in value.items()}
    return value


def line_of(item: Any, limit: int = _LINE_CHARS) -> str:
    """One item as one line of text."""
    if isinstance(item, dict):
        if isinstance(item.get("text"), str):
            text = item["text"]
        elif "json" in item:
            text = json.dumps(item["json"], ensure_ascii=False, separators=(", ", ": "))
        else:
            text = json.dumps(item, ensure_ascii=False, separators=(", ", ": "))
    else:
        text = str(item)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _text_lines(item: Any) -> list[str]:
    if isinstance(item, dict) and isinstance(item.get("text"), str):
        return [line.strip() for line in item["text"].splitlines() if line.strip()]
    return [line_of(item)]


class McpSpec(ToolSpec):
    """Every mcp_<server>_<tool>."""

    name = "mcp"
    projection_model = McpProjection
    items_field = ITEMS_FIELD
    nouns = Nouns(kind="MCP", what="MCP tool call", found="result", label="result")

    def matches(self, name: str) -> bool:
        return FAMILY.fullmatch(name) is not None

    def project_items(self, raw: RawResult, limit: int, clean: Cleaner) -> list[Any]:
        """The items cleaned and cut to a byte budget that shrinks with the cleaner's limits (so the projection's
        retries converge on its byte bound); a cut is recorded."""
        budget = max(256, clean.item_chars * _ITEM_BYTES_PER_CHAR)
        items = list(raw.items[:limit])
        if len(raw.items) > limit:
            clean.cut()
        windowed, cut = fit_json(items, budget * 4 + 1024)
        cleaned = _clean(guard_cut(windowed) if cut else windowed, clean)
        fitted, cut_now = fit_json(cleaned, budget)
        if cut or cut_now or any(_ends_cut(item) for item in items):
            clean.cut()
        return [item if isinstance(item, dict) else {"type": "text", "text": item} for item in fitted]

    def subject(self, arguments: Mapping[str, Any], projection: Mapping[str, Any] | None) -> str:
        server, tool = parts(str((projection or {}).get("tool_name", "")))
        shown = ", ".join(f"{k}={_short(v)}" for k, v in list(arguments.items())[:3])
        head = f"{server} {tool}".strip() if server else tool
        return f"{head} {shown}".strip()

    def label_subject(self, arguments: Mapping[str, Any], projection: Mapping[str, Any]) -> str:
        return self.subject(arguments, projection)

    def fact(self, status: EvidenceStatus, projection: Mapping[str, Any], arguments: Mapping[str, Any],
             words: frozenset[str]) -> Fact:
        server, tool = parts(str(projection.get("tool_name", "")))
        what = f"The {tool} call of the {server} MCP server"
        if status is EvidenceStatus.NO_EVIDENCE:
            return Fact(f"{what} found nothing — this does not show all is well.")
        lines = tuple(self._telling_lines(projection, words, _MAX_FACT_LINES))
        return Fact(f"{what} returned {projection.get('count', 0)} result(s).", lines=lines)

    def error_subject(self, arguments: Mapping[str, Any]) -> str:
        return "The MCP tool call"

    def next_steps(self, status: EvidenceStatus, projection: Mapping[str, Any], arguments: Mapping[str, Any],
                   reason: str) -> StepHints:
        if status is EvidenceStatus.ERROR:
            server, _ = parts(str(projection.get("tool_name", "")))
            return StepHints((f"The {server} MCP server's call could not run ({reason}); run `diagbot check` to see "
                              "the server's state, then ask again.",))
        return StepHints()

    def evidence_view(self, projection: Mapping[str, Any]) -> EvidenceView | None:
        items = self.shown_items(projection)
        if not items:
            return None
        lines = [line_of(text) for item in items for text in _text_lines(item)]
        return LinesView(lines=tuple(lines[:_MAX_LINES]), noun="line")

    def telling_item(self, projection: Mapping[str, Any], words: frozenset[str], limit: int) -> str:
        found = self._telling_lines(projection, words, 1)
        return found[0][:limit] if found else ""

    def _telling_lines(self, projection: Mapping[str, Any], words: frozenset[str], count: int) -> list[str]:
        lines = [line for item in self.shown_items(projection) for line in _text_lines(item)]
        lowered = {w.lower() for w in words}
        ranked = sorted(range(len(lines)), key=lambda i: (-sum(w in lines[i].lower() for w in lowered), i))
        return [line_of(lines[i]) for i in ranked[:count]]


def _ends_cut(item: Any) -> bool:
    return json_size(item) > 0 and CUT_MARKER in json.dumps(item, ensure_ascii=False)[-256:]


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:39] + "…"
