"""query_logs' static description (the toolset contract): projection, quantity roles, words and views."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, Field

from core.contracts.evidence import EvidenceStatus, ProjectionBase, RawResult
from core.evidence.redaction import REDACTED, SECRET_KEYS
from core.evidence.subjects import overlap, plural, short_window, shorten, window_text
from core.tools.contract import (
    ArgumentRoles,
    Cleaner,
    EvidenceView,
    Fact,
    LinesView,
    Nouns,
    StepHints,
    ToolSpec,
)
from core.tools.logs.args import NAME, LogsArgs

LINE_MAX = 200
LINES_SHOWN = 2
VIEW_LINE_MAX = 400
QUERY_MAX = 60
SERVICE_MAX = 60
_CORE_KEYS = frozenset({"timestamp", "service", "level", "message"})
_MAX_FIELDS = 10
_MAX_FIELD_KEY_CHARS = 40
_MAX_FIELD_VALUE_CHARS = 120
_LEVEL_WEIGHT = MappingProxyType({"FATAL": 4, "CRITICAL": 4, "ERROR": 3, "WARN": 2, "WARNING": 2})


class LogLine(BaseModel):
    """One log line returned by query_logs."""

    timestamp: str = Field(description="ISO-8601 time of the line.")
    service: str = Field(description="Service that wrote the line.")
    level: str = Field(description="ERROR, WARN, INFO or DEBUG.")
    message: str = Field(description="Log message, possibly shortened (then ends with a marker).")
    fields: dict[str, Any] = Field(
        default_factory=dict, description="Other short fields of the line (long ones are omitted)."
    )


class LogsProjection(ProjectionBase):
    """Projection of a query_logs call."""

    tool_name: Literal["query_logs"] = NAME
    window_start: str | None = Field(default=None, description="Effective start of the searched window (ISO-8601).")
    window_end: str | None = Field(default=None, description="Effective end of the searched window (ISO-8601).")
    logs: list[LogLine] = Field(default_factory=list)


# ---- words -----------------------------------------------------------------------------------------------------


def clock(timestamp: Any) -> str:
    """'22:41:07' from an ISO timestamp (the raw value, shortened, when it is not one)."""
    try:
        return datetime.fromisoformat(str(timestamp)).strftime("%H:%M:%S")
    except ValueError:
        return shorten(timestamp, 30)


def log_line(line: Mapping[str, Any], limit: int = LINE_MAX) -> str:
    """'22:41:07 ERROR HikariPool-1 - Connection is not available…' (time, level, message, bounded)."""
    head = f"{clock(line.get('timestamp', '?'))} {shorten(line.get('level', '?'), 8)}"
    return f"{head} {shorten(line.get('message', ''), max(20, limit - len(head) - 1))}"


def telling_lines(logs: Sequence[Mapping[str, Any]], words: frozenset[str], limit: int = LINES_SHOWN) -> list[str]:
    """The lines that best match the question (then the most severe), shown in time order."""
    ranked = sorted(range(len(logs)), key=lambda i: (-overlap(str(logs[i].get("message", "")), words),
                                                      -_LEVEL_WEIGHT.get(str(logs[i].get("level", "")).upper(), 0), i))
    return [log_line(logs[i]) for i in sorted(ranked[:limit])]


def _window(projection: Mapping[str, Any] | None, arguments: Mapping[str, Any]) -> tuple[Any, Any]:
    projection = projection or {}
    return (projection.get("window_start") or arguments.get("start"), projection.get("window_end") or arguments.get("end"))


def _lines(projection: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    value = projection.get("logs")
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


# ---- projection ------------------------------------------------------------------------------------------------


def _short_fields(item: Mapping[str, Any], redactor: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    hidden = SECRET_KEYS.hidden(item)  # secret-named keys and a key/value record's value fields (paired_secret_keys)
    for key, value in item.items():
        if len(fields) >= _MAX_FIELDS:
            break
        if key in _CORE_KEYS or not isinstance(key, str) or len(key) > _MAX_FIELD_KEY_CHARS:
            continue
        if key in hidden:
            fields[key] = REDACTED
        elif value is None or isinstance(value, bool | int) or (isinstance(value, float) and math.isfinite(value)):
            fields[key] = value
        elif isinstance(value, str) and len(value) <= _MAX_FIELD_VALUE_CHARS:
            fields[key] = redactor(value)
    return fields


def _log_line(item: Mapping[str, Any], clean: Cleaner) -> LogLine:
    return LogLine(
        timestamp=clean.text(item.get("timestamp", ""), 64),
        service=clean.text(item.get("service", ""), 100),
        level=clean.text(item.get("level", ""), 16),
        message=clean.text(item.get("message", ""), clean.item_chars),
        fields=_short_fields(item, clean.redact),
    )


def _window_value(raw: RawResult | None, *names: str) -> str | None:
    if raw is None:
        return None
    for name in names:
        value = raw.effective_arguments.get(name)
        if value is not None:
            text = value.isoformat() if isinstance(value, datetime) else str(value)
            return text[:64]
    return None


class LogsSpec(ToolSpec):
    """query_logs: matching lines of one service in a window."""

    name = NAME
    args_model = LogsArgs
    summary = "Search one service's log lines in a time window (default: the 60 minutes before now)."
    projection_model = LogsProjection
    items_field = "logs"
    nouns = Nouns(kind="Logs", what="logs query", found="matching line", label="match")
    arguments = ArgumentRoles(window=("start", "end"), projection_window=("window_start", "window_end"),
                              limit=("limit",), query=("query", "service", "level"))
    link_setting = "diag_logs_link_template"

    def envelope(self, raw: RawResult | None, clean: Cleaner) -> dict[str, Any]:
        if raw is None:
            return {}
        return {"window_start": _window_value(raw, "window_start", "start"),
                "window_end": _window_value(raw, "window_end", "end")}

    def project_items(self, raw: RawResult, limit: int, clean: Cleaner) -> list[Any]:
        return [_log_line(item, clean) for item in raw.items[:limit]]

    def subject(self, arguments: Mapping[str, Any], projection: Mapping[str, Any] | None) -> str:
        service = shorten(arguments.get("service") or "any service", SERVICE_MAX)
        query = shorten(arguments.get("query") or "", QUERY_MAX)
        level = arguments.get("level")
        text = service + (f' "{query}"' if query else "") + (f" {shorten(level, 8)}" if level else "")
        window = short_window(*_window(projection, arguments))
        return f"{text}, {window}" if window else text

    def label_subject(self, arguments: Mapping[str, Any], projection: Mapping[str, Any]) -> str:
        service = shorten(arguments.get("service") or "?", 60)
        query = shorten(arguments.get("query") or "", 80)
        level = arguments.get("level")
        subject = f'{service} "{query}"' + (f" {shorten(level, 8)}" if level else "")
        return f"{subject} {window_text(*_window(projection, arguments))}"

    def fact(self, status: EvidenceStatus, projection: Mapping[str, Any], arguments: Mapping[str, Any],
             words: frozenset[str]) -> Fact:
        service, query = shorten(arguments.get("service") or "every service", 60), shorten(arguments.get("query") or "", 80)
        level = f" at level {shorten(arguments['level'], 8)}" if arguments.get("level") else ""
        window = window_text(*_window(projection, arguments))
        if status is EvidenceStatus.NO_EVIDENCE:
            return Fact(f'Logs of {service}: no lines matched "{query}"{level} {window}'
                        " — this does not show the service is healthy.")
        count = plural(projection.get("count", 0), "matching line")
        head = f'Logs of {service} matching "{query}"{level} {window}: {count}.'
        return Fact(head, tuple(telling_lines(_lines(projection), words)))

    def error_subject(self, arguments: Mapping[str, Any]) -> str:
        return f'The logs query for {shorten(arguments.get("service") or "every service", 60)}'

    def next_steps(self, status: EvidenceStatus, projection: Mapping[str, Any], arguments: Mapping[str, Any],
                   reason: str) -> StepHints:
        if status is EvidenceStatus.ERROR or not arguments.get("service"):
            return super().next_steps(status, projection, arguments, reason)
        service = shorten(arguments["service"], 60)
        if status is EvidenceStatus.EVIDENCE_FOUND:
            return StepHints(looked_at=(service, window_text(*_window(projection, arguments))))
        return StepHints((f'Look at {service}\'s logs for "{shorten(arguments.get("query") or "", 60)}" over a wider '
                          "window; no match in one window is not proof of health.",))

    def evidence_view(self, projection: Mapping[str, Any]) -> EvidenceView | None:
        logs = _lines(projection)
        return LinesView(tuple(log_line(item, VIEW_LINE_MAX) for item in logs)) if logs else None

    def telling_item(self, projection: Mapping[str, Any], words: frozenset[str], limit: int) -> str:
        logs = _lines(projection)
        return telling_lines(logs, words, 1)[0][:limit] if logs else ""

    def link_values(self, arguments: Mapping[str, Any], projection: Mapping[str, Any]) -> Mapping[str, Any] | None:
        start, end = _window(projection, arguments)
        return {"service": arguments.get("service"), "query": arguments.get("query"), "start": start, "end": end}
