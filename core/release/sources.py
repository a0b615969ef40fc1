"""Human labels and one-line summaries of tool calls, built only from projections and effective arguments."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from core.contracts.evidence import CallSummary, CanonicalRecord, EvidenceStatus, InvocationState, ToolName
from core.evidence.redaction import redact

_SPACE = re.compile(r"\s+")
REFERENCABLE = frozenset({EvidenceStatus.EVIDENCE_FOUND, EvidenceStatus.NO_EVIDENCE})


def shorten(text: Any, limit: int) -> str:
    """Collapse whitespace, redact secrets and cut to `limit` characters with a visible marker."""
    flat = redact(_SPACE.sub(" ", str(text)).strip())
    return flat if len(flat) <= limit else flat[: max(0, limit - 1)].rstrip() + "…"


def plural(count: Any, noun: str) -> str:
    """'1 row', '37 rows'."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def window_text(start: Any, end: Any) -> str:
    """'between 22:30 and 23:30 UTC on 2026-11-29' (or the raw values when they are not ISO times)."""
    a, b = _parse_time(start), _parse_time(end)
    if a is None or b is None:
        if start or end:
            return f"between {shorten(start or '?', 40)} and {shorten(end or '?', 40)}"
        return "in the default window"
    zone = " UTC" if a.utcoffset() is not None and a.utcoffset() == b.utcoffset() and not a.utcoffset() else ""
    if a.date() == b.date():
        return f"between {a:%H:%M} and {b:%H:%M}{zone} on {a:%Y-%m-%d}"
    return f"between {a:%Y-%m-%d %H:%M} and {b:%Y-%m-%d %H:%M}{zone}"


def _logs_subject(projection: Mapping[str, Any], arguments: Mapping[str, Any]) -> str:
    service = shorten(arguments.get("service") or "?", 60)
    query = shorten(arguments.get("query") or "", 80)
    level = arguments.get("level")
    return f'{service} "{query}"' + (f" {shorten(level, 8)}" if level else "")


def _window(projection: Mapping[str, Any], arguments: Mapping[str, Any]) -> str:
    return window_text(
        projection.get("window_start") or arguments.get("start"), projection.get("window_end") or arguments.get("end")
    )


def label_for(tool: ToolName, projection: Mapping[str, Any], arguments: Mapping[str, Any]) -> str:
    """A short human label for a cited call, e.g. 'query_logs order-service "timeout" ERROR (37 matches)'."""
    status = projection.get("evidence_status")
    count = projection.get("count", 0)
    if status == EvidenceStatus.ERROR.value:
        code = (projection.get("error") or {}).get("code", "ERROR")
        result = f"could not run: {shorten(code, 40)}"
    elif status == EvidenceStatus.NO_EVIDENCE.value:
        result = "no matches"
    else:
        noun = {ToolName.QUERY_LOGS: "match", ToolName.QUERY_MYSQL: "row", ToolName.LOOKUP_KNOWLEDGE: "section"}[tool]
        result = plural(count, noun).replace("matchs", "matches")
    if tool is ToolName.QUERY_LOGS:
        subject = f"{_logs_subject(projection, arguments)} {_window(projection, arguments)}"
    elif tool is ToolName.QUERY_MYSQL:
        subject = f'"{shorten(arguments.get("sql") or "", 100)}"'
    else:
        subject = f'"{shorten(arguments.get("query") or "", 80)}"'
    return shorten(f"{tool.value} {subject} ({result})", 240)


def source_label(record: CanonicalRecord) -> str:
    """The label of a canonical record's call (from its projection and effective arguments)."""
    projection = record.projection or {
        "evidence_status": (record.evidence_status or EvidenceStatus.ERROR).value,
        "error": record.error.model_dump() if record.error else {"code": record.state.value},
    }
    return label_for(record.tool_name, projection, record.effective_arguments or record.arguments)


def is_referencable(record: CanonicalRecord) -> bool:
    """READY, FOUND or NO_EVIDENCE, with a projection: citable by its run (SPEC §3.1)."""
    return record.state is InvocationState.READY and record.evidence_status in REFERENCABLE and bool(record.projection)


def call_summaries(records: Sequence[CanonicalRecord], run_id: str) -> list[CallSummary]:
    """One-line summaries of a run's referencable calls, for EvidenceRepair."""
    return [
        CallSummary(
            tool_call_id=r.tool_call_id,
            tool_name=r.tool_name,
            evidence_status=r.evidence_status or EvidenceStatus.ERROR,
            summary=source_label(r),
        )
        for r in records
        if r.run_id == run_id and is_referencable(r)
    ]
