"""ToolBoundary: the agent's only way to a tool. Validates, enforces budgets, records, projects; never raises for bad input."""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from pydantic_core import to_jsonable_python

from core.contracts.evidence import (
    CanonicalRecord,
    EvidenceStatus,
    InvocationMeta,
    InvocationState,
    RawResult,
    ToolError,
)
from core.contracts.progress import ProgressStage
from core.contracts.run import EventType
from core.errors import StoreUnavailable, ToolFailure
from core.evidence.call_steps import capped_for_record, note_untrusted, parse_arguments, report_progress
from core.evidence.offload import offload
from core.evidence.projection import MIN_PROJECTION_BYTES, ProjectionBounds, project_sized, projection_size
from core.evidence.raw_cap import DEFAULT_RAW_MAX_BYTES
from core.evidence.redaction import Redactor
from core.observability.metrics import Metrics
from core.ports import AuditStore, CanonicalStore, DumpedPuts, PendingClaims
from core.run import DeadlinePassed, RunCancelled, RunContext, bounded
from core.tools.contract import InvalidArguments, Tool, ToolSpec
from core.tools.native import as_tool
from core.tools.registry import current_registry

logger = logging.getLogger(__name__)

_PROVIDER_ID = re.compile(r"[A-Za-z0-9_.:-]{1,80}")
_MINT_ATTEMPTS = 5


def mint_call_id() -> str:
    """A fresh tool call id: call_<12 hex>."""
    return f"call_{uuid.uuid4().hex[:12]}"


@dataclass
class _Call:
    """State of one invocation while it is being handled."""

    ctx: RunContext
    call_id: str
    name: str
    spec: ToolSpec | None
    started_at: datetime
    t0: float = field(default_factory=time.monotonic)
    arguments: dict[str, Any] = field(default_factory=dict)
    effective: dict[str, Any] = field(default_factory=dict)
    reserved_bytes: int = 0
    max_bytes: int = MIN_PROJECTION_BYTES
    raw_bytes: int = 0
    raw_json: str | None = None
    """The capped raw result's JSON (what sized it: the canonical store writes it as it is)."""
    projected: tuple[dict[str, Any], int] | None = None
    """The result's projection and its size, made in the same worker thread as its capping (one hop, not two)."""

    async def report(self, stage: ProgressStage, projection: dict[str, Any] | None = None, code: str | None = None) -> None:
        """Report this call's progress (what was queried; at the end its status and count)."""
        await report_progress(self.ctx, self.call_id, self.name, self.spec, self.effective or self.arguments, stage,
                              projection, code)


class ToolBoundary:
    """Runs tool calls for a run: ids, validation, budgets, timeout, canonical record, audit, timeline, projection."""

    def __init__(
        self,
        tools: Mapping[str, Any],
        canonical: CanonicalStore,
        audit: AuditStore,
        projection_max_bytes: int = 8192,
        *,
        metrics: Metrics | None = None,
        redactor: Redactor | None = None,
        raw_max_bytes: int = DEFAULT_RAW_MAX_BYTES,
    ) -> None:
        if projection_max_bytes < MIN_PROJECTION_BYTES:
            raise ValueError(f"projection_max_bytes must be at least {MIN_PROJECTION_BYTES}")
        self._redactor = redactor or Redactor()
        self._safe_texts: dict[str, str] = {}
        """Texts cleaned for the agent by this boundary's redactor (project_sized's bounded memo across calls)."""
        self._tools: dict[str, Tool[Any]] = {str(name): as_tool(tool) for name, tool in tools.items()}
        self._canonical = canonical
        self._claims_pending = canonical if isinstance(canonical, PendingClaims) else None
        self._dumped_puts = canonical if isinstance(canonical, DumpedPuts) else None
        self._audit = audit
        self._max_bytes = projection_max_bytes
        self._raw_max_bytes = raw_max_bytes
        self._metrics = metrics or Metrics()
        self._metrics.count_tools(self._tools)

    @property
    def tools(self) -> Mapping[str, Tool[Any]]:
        """The configured tools by name, in registry order (what the agent is offered)."""
        return MappingProxyType(self._tools)

    def tool_names(self) -> list[str]:
        """The names of the tools this boundary runs (what is configured)."""
        return list(self._tools)

    async def invoke(
        self, ctx: RunContext, tool_call_id: str | None, name: str, arguments: str | dict[str, Any]
    ) -> dict[str, Any]:
        """Run one tool call and return its bounded projection JSON (ERROR projection for every failure)."""
        started_at = datetime.now(UTC)
        spec = current_registry().find(name) if isinstance(name, str) else None
        parsed = parse_arguments(arguments)
        tool = self._tools.get(name)
        valid = self._valid(spec, tool, parsed)
        if valid is not None and self._claims_pending is not None and self._admission_error(ctx) is None:
            return await self._invoke_valid(ctx, tool_call_id, _Call(ctx, "", name, spec, started_at), valid)
        try:
            call_id = await self._claim_id(ctx.run_id, tool_call_id)
        except StoreUnavailable:
            call = _Call(ctx, mint_call_id(), name, spec, started_at)
            return await self._store_down(call)
        call = _Call(ctx, call_id, name, spec, started_at)
        call.arguments = parsed if isinstance(parsed, dict) else {}

        refusal = self._admission_error(ctx)
        if refusal is not None:
            return await self._finish(call, None, refusal)
        self._admit(call)
        if spec is None:
            registry = current_registry()
            known = ", ".join(dict.fromkeys([*self._tools, *(s.name for s in registry.specs() if s.args_model)]))
            return await self._finish(call, None, ToolError(code="UNKNOWN_TOOL", message=f"Unknown tool; use one of: {known}."))
        if isinstance(parsed, ToolError):
            return await self._finish(call, None, parsed)
        if tool is None:
            message = f"{name} is not configured in this deployment."
            return await self._finish(call, None, ToolError(code="TOOL_UNAVAILABLE", message=message))
        try:
            args = tool.validate(parsed)
        except InvalidArguments as exc:
            return await self._finish(call, None, ToolError(code="INVALID_ARGUMENTS", message=exc.message))
        call.effective = tool.effective(args)

        try:
            await self._canonical.put(self._record(call, InvocationState.PENDING))
        except StoreUnavailable:
            return await self._store_down(call)
        await call.report(ProgressStage.TOOL_STARTED)
        outcome = await self._run(call, tool, args)
        if isinstance(outcome, ToolError):
            return await self._finish(call, None, outcome)
        return await self._finish(call, outcome, None)

    @staticmethod
    def _valid(spec: ToolSpec | None, tool: Tool[Any] | None, parsed: dict[str, Any] | ToolError
               ) -> tuple[dict[str, Any], Any] | None:
        """(arguments, validated args) of a call that will run, or None (unknown, unconfigured, invalid: those take
        the general path, which claims the id first and records the refusal)."""
        if spec is None or tool is None or isinstance(parsed, ToolError):
            return None
        try:
            return parsed, tool.validate(parsed)
        except InvalidArguments:
            return None

    async def _invoke_valid(self, ctx: RunContext, provider_id: str | None, call: _Call,
                            valid: tuple[dict[str, Any], Any]) -> dict[str, Any]:
        """A call that will run: admitted, then its id claimed and its PENDING record written in one store step
        (one round trip where the general path makes two); the rest as invoke."""
        assert self._claims_pending is not None
        assert call.spec is not None
        call.arguments, args = valid
        tool = self._tools[call.name]
        call.effective = tool.effective(args)
        self._admit(call)
        try:
            await self._claim_pending(ctx.run_id, provider_id, call)
        except StoreUnavailable:
            # As when the claim fails on the general path: not admitted, reported under a fresh id.
            ctx.tool_calls -= 1
            ctx.observation_bytes -= call.reserved_bytes
            return await self._store_down(_Call(ctx, mint_call_id(), call.name, call.spec, call.started_at))
        await call.report(ProgressStage.TOOL_STARTED)
        outcome = await self._run(call, tool, args)
        if isinstance(outcome, ToolError):
            return await self._finish(call, None, outcome)
        return await self._finish(call, outcome, None)

    async def _claim_pending(self, run_id: str, provider_id: str | None, call: _Call) -> None:
        """Claim the provider's id (or, when it is malformed or used, a fresh one) with the PENDING record."""
        assert self._claims_pending is not None
        if provider_id and _PROVIDER_ID.fullmatch(provider_id):
            call.call_id = provider_id
            if await self._claims_pending.reserve_pending(self._record(call, InvocationState.PENDING)):
                return
        for _ in range(_MINT_ATTEMPTS):
            call.call_id = mint_call_id()
            if await self._claims_pending.reserve_pending(self._record(call, InvocationState.PENDING)):
                return
        raise StoreUnavailable("canonical store", "could not reserve a fresh tool call id")

    # ---- steps ---------------------------------------------------------------------------------

    async def _claim_id(self, run_id: str, provider_id: str | None) -> str:
        if provider_id and _PROVIDER_ID.fullmatch(provider_id) and await self._canonical.reserve(run_id, provider_id):
            return provider_id
        for _ in range(_MINT_ATTEMPTS):
            candidate = mint_call_id()
            if await self._canonical.reserve(run_id, candidate):
                return candidate
        raise StoreUnavailable("canonical store", "could not reserve a fresh tool call id")

    def _admission_error(self, ctx: RunContext) -> ToolError | None:
        if ctx.cancelled.is_set():
            return ToolError(code="CANCELLED", message="The run was cancelled; no more tool calls are made.")
        budgets = ctx.budgets
        if ctx.tool_calls >= budgets.max_tool_calls:
            return ToolError(code="BUDGET_EXHAUSTED", message=f"Tool call budget of {budgets.max_tool_calls} calls is used up.")
        if ctx.seconds_left() <= 0:
            return ToolError(code="BUDGET_EXHAUSTED", message="The run's deadline has passed; no more tool calls.")
        if budgets.max_observation_bytes - ctx.observation_bytes < MIN_PROJECTION_BYTES:
            return ToolError(code="BUDGET_EXHAUSTED", message="The run's observation byte budget is used up.")
        return None

    def _admit(self, call: _Call) -> None:
        """Count the call and reserve its projection bytes up front, so parallel calls cannot overrun the budgets."""
        ctx = call.ctx
        ctx.tool_calls += 1
        call.max_bytes = min(self._max_bytes, ctx.budgets.max_observation_bytes - ctx.observation_bytes)
        call.reserved_bytes = call.max_bytes
        ctx.observation_bytes += call.reserved_bytes

    async def _run(self, call: _Call, tool: Tool[Any], args: Any) -> RawResult | ToolError:
        """Run the tool under the per-tool timeout (capped by the deadline), stopping early on cancellation."""
        name = call.name
        timeout = min(call.ctx.budgets.tool_timeout_s, call.ctx.seconds_left())
        result: object = None
        failure: Exception | None = None
        timed_out = False
        current = asyncio.current_task()
        cancelling = current.cancelling() if current is not None else 0
        try:
            result = await bounded(tool.run(args), call.ctx.cancelled, timeout)
        except RunCancelled:
            return ToolError(code="CANCELLED", message="The run was cancelled while the tool was running.")
        except DeadlinePassed:
            timed_out = True
        except asyncio.CancelledError:
            if current is None or current.cancelling() > cancelling:
                raise
            timed_out = True  # the tool cancelled itself: it gave no answer, as a timeout
        except Exception as exc:  # a TimeoutError the tool raised itself included
            failure = exc
        if timed_out:
            return ToolError(code="TIMEOUT", message=f"{name} did not answer within {timeout:.1f} s.")
        if failure is None:
            if isinstance(result, RawResult):
                # Serialising, capping and projecting a big result is CPU work: off the event loop, so acks stay fast.
                return await offload(self._measured_projected, call, result)
            logger.warning("tool %s returned %s instead of RawResult", name, type(result).__name__)
        elif isinstance(failure, ToolFailure):
            return ToolError(code=failure.code, message=failure.message)
        else:
            logger.warning("tool %s call %s raised %s", name, call.call_id, type(failure).__name__)
            logger.debug("tool %s failure detail", name, exc_info=failure)
        return ToolError(code="BACKEND_ERROR", message=f"The {name} backend failed unexpectedly; this call is not evidence.")

    def _measured_projected(self, call: _Call, raw: RawResult) -> RawResult | ToolError:
        """capped_for_record, then the capped result's projection for _finish (in the caller's worker thread)."""
        capped = capped_for_record(call.name, raw, self._raw_max_bytes)
        if isinstance(capped, ToolError):
            return capped
        raw, call.raw_json = capped
        call.raw_bytes = len(call.raw_json)
        call.projected = self._project(call, raw, None)
        return raw

    # ---- recording -----------------------------------------------------------------------------

    def _record(
        self,
        call: _Call,
        state: InvocationState,
        raw: RawResult | None = None,
        projection: dict[str, Any] | None = None,
        error: ToolError | None = None,
        duration_ms: float | None = None,
    ) -> CanonicalRecord:
        assert call.spec is not None  # records exist only for known tools
        return CanonicalRecord(
            run_id=call.ctx.run_id,
            tool_call_id=call.call_id,
            tool_name=call.name,
            arguments=call.arguments,
            effective_arguments=call.effective,
            state=state,
            evidence_status=None if projection is None else EvidenceStatus(projection["evidence_status"]),
            raw_result=raw,
            projection=projection,
            error=error,
            started_at=call.started_at,
            finished_at=None if state == InvocationState.PENDING else datetime.now(UTC),
            duration_ms=duration_ms,
        )

    async def _store_down(self, call: _Call) -> dict[str, Any]:
        error = ToolError(code="STORE_UNAVAILABLE", message="The canonical store is unavailable; this call cannot be evidence.")
        return await self._finish(call, None, error, write_record=False)

    async def _finish(
        self, call: _Call, raw: RawResult | None, error: ToolError | None, write_record: bool = True
    ) -> dict[str, Any]:
        """Project, write the final canonical record, audit row, timeline event and progress; settle the counters."""
        duration_ms = (time.monotonic() - call.t0) * 1000
        if raw is not None and raw.effective_arguments:
            # The backend's resolved arguments (e.g. the default time window) are what grounding checks against.
            call.effective = {**call.effective, **to_jsonable_python(raw.effective_arguments, fallback=str)}
        if raw is None:
            projection, size = self._project(call, raw, error)
        elif call.projected is not None and error is None:  # made with the capping, off the event loop
            projection, size = call.projected
        else:  # redaction and bounding of a real result is CPU work: off the event loop
            projection, size = await offload(self._project, call, raw, error)
        note_untrusted(call.ctx, projection)
        if write_record and call.spec is not None:
            state = InvocationState.FAILED if error is not None else InvocationState.READY
            record = self._record(call, state, raw, projection, error, duration_ms)
            try:
                if self._dumped_puts is not None and raw is not None and call.raw_json is not None:
                    await self._dumped_puts.put_dumped(record, call.raw_json)
                else:
                    await self._canonical.put(record)
            except StoreUnavailable:
                if error is None:  # a result nobody can verify must not reach the agent as evidence
                    return await self._store_down(call)
                logger.warning("canonical store down; FAILED record of %s not written", call.call_id)
        call.ctx.observation_bytes += size - call.reserved_bytes
        call.reserved_bytes = 0
        code = None if projection.get("error") is None else projection["error"]["code"]
        self._metrics.tool_call(call.name, projection["evidence_status"], duration_ms / 1000)
        await self._audit_call(call, projection, size, raw, code, duration_ms)
        summary = {
            "tool": call.name[:64],
            "tool_call_id": call.call_id,
            "evidence_status": projection["evidence_status"],
            "count": projection["count"],
            "truncated": projection["truncated"],
            "error_code": code,
            "duration_ms": round(duration_ms, 1),
        }
        await call.ctx.timeline.record(EventType.TOOL_CALL, summary, duration_ms)
        await call.report(ProgressStage.TOOL_FINISHED, projection, code)
        return projection

    def _project(self, call: _Call, raw: RawResult | None, error: ToolError | None) -> tuple[dict[str, Any], int]:
        """The projection and its projection_size."""
        if call.spec is None:
            # An unknown tool has no projection model; the same envelope keeps the agent's parsing uniform.
            unknown = {
                "tool_call_id": call.call_id,
                "tool_name": call.name[:64],
                "evidence_status": EvidenceStatus.ERROR.value,
                "count": 0,
                "truncated": False,
                "error": (error or ToolError(code="UNKNOWN_TOOL", message="Unknown tool.")).model_dump(),
            }
            return unknown, projection_size(unknown)
        bounds = ProjectionBounds(max_bytes=max(call.max_bytes, MIN_PROJECTION_BYTES))
        return project_sized(call.call_id, call.spec, raw, error, bounds, redactor=self._redactor, name=call.name,
                             safe_texts=self._safe_texts)

    async def _audit_call(
        self, call: _Call, projection: dict[str, Any], size: int, raw: RawResult | None, code: str | None, duration_ms: float
    ) -> None:
        if call.spec is None:
            return
        meta = InvocationMeta(
            run_id=call.ctx.run_id,
            tool_call_id=call.call_id,
            tool_name=call.name,
            state=InvocationState.FAILED if code else InvocationState.READY,
            evidence_status=EvidenceStatus(projection["evidence_status"]),
            count=projection["count"],
            raw_bytes=call.raw_bytes if raw is not None else 0,
            projection_bytes=size,
            truncated=projection["truncated"],
            duration_ms=duration_ms,
            error_code=code,
            started_at=call.started_at,
        )
        try:
            await self._audit.record_invocation(meta)
        except Exception as exc:  # audit is long-lived bookkeeping; its outage must not turn evidence into an error
            logger.warning("audit row for %s not written: %s", call.call_id, type(exc).__name__)
