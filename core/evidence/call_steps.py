"""The ToolBoundary's per-call steps that need none of its state (core/evidence/boundary.py): reading the model's
arguments, capping a raw result for its canonical record, noting instruction-like spans for the guard, and reporting the
call's progress."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from core.contracts.evidence import EvidenceStatus, RawResult, ToolError
from core.contracts.progress import SUBJECT_MAX, ProgressStage, ProgressUpdate, ToolProgress
from core.evidence.instructions import may_hold_spans, spans_in
from core.evidence.raw_cap import cap_raw_json
from core.evidence.subjects import cut_words
from core.run import RunContext
from core.tools.contract import ToolSpec

logger = logging.getLogger("core.evidence.boundary")  # the boundary's own log lines, wherever the code sits

MAX_ARGUMENT_CHARS = 16 * 1024

MAX_UNTRUSTED_SPANS = 64


def note_untrusted(ctx: RunContext, projection: dict[str, Any]) -> None:
    """Remember the projection's instruction-like spans for the guard (each once; the list stays bounded)."""
    if len(ctx.untrusted_spans) >= MAX_UNTRUSTED_SPANS or not may_hold_spans(projection):
        return  # nothing would be added: the list is full, or no string of the projection holds a span
    for span in spans_in(projection):
        if len(ctx.untrusted_spans) >= MAX_UNTRUSTED_SPANS:
            return
        if span not in ctx.untrusted_spans:
            ctx.untrusted_spans.append(span)


def parse_arguments(arguments: str | dict[str, Any] | None) -> dict[str, Any] | ToolError:
    """The call's arguments as one JSON object of named fields, or the error the model is told."""
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}
    if isinstance(arguments, str):
        if len(arguments) > MAX_ARGUMENT_CHARS:
            return ToolError(code="INVALID_ARGUMENTS", message=f"Arguments exceed {MAX_ARGUMENT_CHARS} characters.")
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return ToolError(code="INVALID_ARGUMENTS", message="Arguments are not valid JSON; send one JSON object.")
        if not isinstance(arguments, dict):
            return ToolError(code="INVALID_ARGUMENTS", message="Arguments must be a JSON object of named fields.")
        decoded: dict[str, Any] = arguments  # fresh from json.loads: already only what JSON can carry
        return decoded
    if not isinstance(arguments, dict):
        return ToolError(code="INVALID_ARGUMENTS", message="Arguments must be a JSON object of named fields.")
    # Direct callers may pass Python values; keep only what JSON can carry so the record always serialises.
    normalised: dict[str, Any] = json.loads(json.dumps(arguments, default=str))
    return normalised


def capped_for_record(name: str, raw: RawResult, max_bytes: int) -> tuple[RawResult, str] | ToolError:
    """The raw result sized once and capped for the canonical record, with its JSON (the store writes it as it is);
    one that cannot be serialised (or not even its first item fits the cap) could never be stored or verified."""
    try:
        capped = cap_raw_json(raw, max_bytes)
    except ValueError:
        logger.warning("tool %s returned values that cannot be serialised", name)
        message = f"The {name} backend returned values that cannot be stored; this call is not evidence."
        return ToolError(code="BACKEND_ERROR", message=message)
    if capped is None:
        message = f"The {name} result is over {max_bytes // 1024} KiB even for one item; this call is not evidence."
        return ToolError(code="RESULT_TOO_LARGE", message=message)
    return capped


async def report_progress(ctx: RunContext, call_id: str, name: str, spec: ToolSpec | None, arguments: Mapping[str, Any],
                          stage: ProgressStage, projection: dict[str, Any] | None = None,
                          error_code: str | None = None) -> None:
    """Report a call starting or ending: what was queried and, at the end, its status and count."""
    if ctx.progress is None:
        return
    tool = ToolProgress(
        tool_call_id=call_id,
        tool=name[:64],
        subject=cut_words(spec.subject(arguments, projection), SUBJECT_MAX) if spec else "",
        evidence_status=None if projection is None else EvidenceStatus(projection["evidence_status"]),
        count=None if projection is None else int(projection["count"]),
        error_code=None if error_code is None else str(error_code)[:64],
    )
    try:
        await ctx.progress.update(ctx.run_id, ProgressUpdate(stage=stage, tool=tool))
    except Exception as exc:  # progress is cosmetic; a failing sink must not fail the call
        logger.warning("progress update for %s failed: %s", call_id, type(exc).__name__)
