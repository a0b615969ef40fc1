"""Fallback factory: bounded observed facts from this run's projections, the failed stage in words, next steps.

Nothing here reads the draft: a fallback must never repeat prose the guards did not let through.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from core.contracts.evidence import CanonicalRecord, EvidenceStatus, InvocationState, ToolName
from core.contracts.release import FallbackMessage, ObservedFact
from core.release.sources import plural, shorten, source_label, window_text

_CODE = re.compile(r"[a-z0-9_]+")

FACT_MAX = 400
STEPS_MAX = 6

STAGE_EVIDENCE = "the evidence check found citations that do not match this run's tool calls"
STAGE_STORE = "the evidence store could not be read, so the report's citations could not be checked"
STAGE_UNSUPPORTED = "the independent review judged that the evidence does not support the report"
STAGE_UNAVAILABLE = "the independent review could not be completed"

_FAILURE_WORDS = {
    "budget_steps": "the step budget was exhausted",
    "budget_tool_calls": "the tool-call budget was exhausted",
    "budget_observations": "the observation budget was exhausted",
    "budget_observation": "the observation budget was exhausted",
    "budget_bytes": "the observation budget was exhausted",
    "deadline": "the time budget was exhausted",
    "budget_deadline": "the time budget was exhausted",
    "timeout": "the time budget was exhausted",
    "cancelled": "the run was cancelled",
    "model_unavailable": "the model was unavailable",
    "model_error": "the model was unavailable",
    "wire_format": "the model did not answer in the required format",
    "no_draft": "the model ended without submitting a report",
}


def failure_stage(reason: str) -> str:
    """'the diagnosis could not be finished: <reason in words>' for FAILURE outcomes."""
    code = reason.strip().lower()
    words = _FAILURE_WORDS.get(code) or shorten(code.replace("_", " ") if _CODE.fullmatch(code) else reason, 160)
    words = words or "an unknown error"
    return f"the diagnosis could not be finished: {words}"


def _items(projection: Mapping[str, Any], key: str) -> list[Any]:
    value = projection.get(key)
    return value if isinstance(value, list) else []


def _found_text(record: CanonicalRecord, projection: Mapping[str, Any], args: Mapping[str, Any]) -> str:
    count = projection.get("count", 0)
    if record.tool_name is ToolName.QUERY_LOGS:
        service, query, level = args.get("service") or "?", args.get("query") or "", args.get("level")
        head = f'query_logs {shorten(service, 60)} "{shorten(query, 80)}"' + (f" {shorten(level, 8)}" if level else "")
        window = window_text(projection.get("window_start") or args.get("start"), projection.get("window_end") or args.get("end"))
        text = f"{head}: {plural(count, 'matching line')} {window}"
        logs = _items(projection, "logs")
        if logs and isinstance(logs[0], Mapping):
            first = logs[0]
            text += f'; first shown ({shorten(first.get("timestamp", "?"), 30)}): "{shorten(first.get("message", ""), 160)}"'
        return text
    if record.tool_name is ToolName.QUERY_MYSQL:
        columns = ", ".join(str(c) for c in _items(projection, "columns"))
        rows = _items(projection, "rows")
        text = f'query_mysql "{shorten(args.get("sql") or "", 100)}": {plural(count, "row")}; columns: {shorten(columns, 100)}'
        if rows:
            text += f"; first row: {shorten(rows[0], 120)}"
        return text
    blocks = [b for b in _items(projection, "evidence_blocks") if isinstance(b, Mapping)]
    if not blocks:
        return f'lookup_knowledge "{shorten(args.get("query") or "", 80)}": {plural(count, "runbook section")} matched'
    first = blocks[0]
    more = f" (+{len(blocks) - 1} more sections)" if len(blocks) > 1 else ""
    return (
        f"runbook {shorten(first.get('doc', '?'), 80)} § {shorten(first.get('heading', '?'), 80)} matched"
        f' "{shorten(args.get("query") or "", 60)}"{more}; the runbook says (guidance, not an observation of this'
        f' environment): "{shorten(first.get("text", ""), 140)}"'
    )


def _no_evidence_text(record: CanonicalRecord, projection: Mapping[str, Any], args: Mapping[str, Any]) -> str:
    if record.tool_name is ToolName.QUERY_LOGS:
        window = window_text(projection.get("window_start") or args.get("start"), projection.get("window_end") or args.get("end"))
        level = f" at level {shorten(args['level'], 8)}" if args.get("level") else ""
        return (
            f'query_logs: no lines matched "{shorten(args.get("query") or "", 80)}"{level} for '
            f"{shorten(args.get('service') or '?', 60)} {window} — this does not show the service is healthy"
        )
    if record.tool_name is ToolName.QUERY_MYSQL:
        return (
            f'query_mysql "{shorten(args.get("sql") or "", 120)}" returned no rows — this does not show the data is as expected'
        )
    return f'lookup_knowledge: no runbook section matched "{shorten(args.get("query") or "", 80)}"'


def _error_code(record: CanonicalRecord, projection: Mapping[str, Any]) -> str:
    error = projection.get("error")
    if isinstance(error, Mapping) and error.get("code"):
        return str(error["code"])
    return record.error.code if record.error else record.state.value


def _fact(record: CanonicalRecord) -> tuple[int, ObservedFact] | None:
    """(priority, fact) for one record; None for calls still pending."""
    if record.state is InvocationState.PENDING:
        return None
    projection = record.projection or {}
    args = record.effective_arguments or record.arguments
    status = record.evidence_status
    if record.state is InvocationState.READY and status is EvidenceStatus.EVIDENCE_FOUND and projection:
        priority, text = 0, _found_text(record, projection, args)
    elif record.state is InvocationState.READY and status is EvidenceStatus.NO_EVIDENCE and projection:
        priority, text = 1, _no_evidence_text(record, projection, args)
    else:
        label = source_label(record).removesuffix(")").rsplit(" (", 1)[0]
        priority, text = 2, f"{label} could not run: {shorten(_error_code(record, projection), 40)}"
        status = EvidenceStatus.ERROR
    fact = ObservedFact(
        text=shorten(text, FACT_MAX), tool_call_id=record.tool_call_id, tool_name=record.tool_name, evidence_status=status
    )
    return priority, fact


def observed_facts(records: Sequence[CanonicalRecord], limit: int = 8, run_id: str | None = None) -> list[ObservedFact]:
    """Bounded facts from tool projections only: FOUND first, then NO_EVIDENCE, then calls that could not run."""
    ranked = [f for r in records if run_id is None or r.run_id == run_id if (f := _fact(r)) is not None]
    ranked.sort(key=lambda pair: pair[0])  # stable: call order within each priority
    return [fact for _, fact in ranked[: max(0, limit)]]


def next_steps_for(records: Sequence[CanonicalRecord], run_id: str | None) -> list[str]:
    """Concrete next steps derived from what the run observed."""
    steps: list[str] = []
    services: dict[str, str] = {}
    for record in records:
        args = record.effective_arguments or record.arguments
        if record.state is not InvocationState.READY and record.state is not InvocationState.FAILED:
            continue
        status = record.evidence_status if record.state is InvocationState.READY else EvidenceStatus.ERROR
        if record.tool_name is ToolName.QUERY_LOGS and args.get("service"):
            service = shorten(args["service"], 60)
            if status is EvidenceStatus.EVIDENCE_FOUND and service not in services:
                projection = record.projection or {}
                services[service] = window_text(
                    projection.get("window_start") or args.get("start"), projection.get("window_end") or args.get("end")
                )
            elif status is EvidenceStatus.NO_EVIDENCE:
                steps.append(
                    f'Re-run query_logs for {service} "{shorten(args.get("query") or "", 60)}" with a wider window; '
                    "no match in one window is not proof of health."
                )
        if record.tool_name is ToolName.LOOKUP_KNOWLEDGE and status is EvidenceStatus.EVIDENCE_FOUND and record.projection:
            blocks = [b for b in _items(record.projection, "evidence_blocks") if isinstance(b, Mapping)]
            if blocks:
                steps.append(
                    f"Check runbook {shorten(blocks[0].get('doc', '?'), 80)} § {shorten(blocks[0].get('heading', '?'), 80)}"
                    " and escalate as it says if the symptoms match."
                )
        if status is EvidenceStatus.ERROR:
            code = shorten(_error_code(record, record.projection or {}), 40)
            steps.append(
                f"Retry the {record.tool_name.value} call that could not run ({code}) after fixing its arguments or backend."
            )
    steps[:0] = [
        f"Check {service}'s dashboards, recent deploys and error rates {window}." for service, window in services.items()
    ]
    if not records:
        steps.append("Ask again naming the service and the time window, so the tools can be pointed at them.")
    if run_id:
        steps.append(f"`/diag trace {run_id}` shows every step this run took.")
    return list(dict.fromkeys(steps))[:STEPS_MAX]


def build_fallback(
    records: Sequence[CanonicalRecord],
    stage: str,
    reason: str,
    next_steps: list[str] | None = None,
    *,
    run_id: str | None = None,
    limit: int = 8,
) -> FallbackMessage:
    """A fallback message from projections only: stage in words, safe reason, observed facts, next steps."""
    mine = [r for r in records if run_id is None or r.run_id == run_id]
    steps = next_steps if next_steps is not None else next_steps_for(mine, run_id)
    return FallbackMessage(
        stage=stage,
        reason=shorten(reason, 300),
        observed_facts=observed_facts(mine, limit=limit),
        next_steps=[shorten(s, 300) for s in steps],
    )
