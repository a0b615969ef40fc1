"""ChatService: one user turn in, one ReleaseOutcome out (SPEC §2, §6, §7, §8, §9, §12).

It owns the run lifecycle: the run record and its versions, routing, the previous-turn rule,
per-session serialisation, cancellation, the hard deadline and the closing timeline event.
Components it drives are typed against the small protocols below; `core.bootstrap` wires real ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from core.contracts.progress import ProgressStage, ProgressUpdate
from core.contracts.release import FailureCause, Outcome, PublishedReport, ReleaseOutcome
from core.contracts.run import Budgets, EventType, Intent, RunRecord, RunStatus, TimelineEvent, Turn
from core.evidence.instructions import marked_spans
from core.evidence.redaction import Redactor
from core.observability.log_context import log_fields
from core.observability.metrics import Metrics
from core.ports import (
    DiagnosisAgentPort,
    IntentRouting,
    KeyValueStore,
    KnowledgePort,
    ProgressSink,
    ReleasePort,
    RunStore,
    Timeline,
    TimelineStore,
)
from core.release.fallback import failure_fallback
from core.run import RunCancelled, RunContext, bounded, release_grace_s
from core.service.collaborators import Instruments, RunPolicy, RunStores, Steps

__all__ = ("ChatService", "RunCancelled", "release_grace_s")
from core.service.sessions import SessionGate, active_run_key

log = logging.getLogger(__name__)

T = TypeVar("T")

CHAT_HELP = (
    "I diagnose incidents from evidence. Ask me e.g. \"why is order-service failing since 23:00?\" "
    "or \"what does the runbook say about HikariCP pool exhaustion?\". "
    "I only publish what my read-only tools (logs, database, runbooks) showed; otherwise I say what I observed "
    "and where I got stuck. Reply \"stop\" in the thread to cancel a running diagnosis."
)



class _SafeProgress:
    """Forwards progress updates; a failing sink (e.g. Slack down) never breaks a run."""

    def __init__(self, sink: ProgressSink) -> None:
        self._sink = sink

    async def update(self, run_id: str, update: ProgressUpdate) -> None:
        try:
            await self._sink.update(run_id, update)
        except Exception as exc:
            log.warning("progress update failed for %s: %s", run_id, type(exc).__name__)


def new_run_id() -> str:
    """A fresh run id: run_<32 hex>."""
    return f"run_{uuid.uuid4().hex}"


class ChatService:
    """Implements ChatServicePort over the router, agent, release and knowledge path."""

    def __init__(
        self, steps: Steps, stores: RunStores, policy: RunPolicy, *, gate: SessionGate | None = None,
        instruments: Instruments | None = None,
    ) -> None:
        instruments = instruments or Instruments()
        self._router: IntentRouting = steps.router
        self._agent: DiagnosisAgentPort = steps.agent
        self._release: ReleasePort = steps.release
        self._knowledge: KnowledgePort = steps.knowledge
        self._runs: RunStore = stores.runs
        self._timeline_store: TimelineStore = stores.timeline_store
        self._timeline_factory: Callable[[str], Timeline] = stores.timeline_factory
        self._kv: KeyValueStore = stores.kv
        self._versions = policy.versions
        self._budgets: Budgets = policy.budgets
        self._gate = gate or SessionGate(stores.kv, run_deadline_s=self._budgets.deadline_s)
        self._metrics: Metrics = instruments.metrics
        self._redactor: Redactor = instruments.redactor

    # ---- ChatServicePort ---------------------------------------------------------------------

    async def handle(self, turn: Turn, progress: ProgressSink | None = None) -> ReleaseOutcome:
        """Process one turn; never raises for anything that happens inside the run."""
        session_key = turn.session.as_str()
        run_id = turn.run_id or new_run_id()
        try:
            with log_fields(run_id=run_id, session=session_key), self._metrics.run_in_flight():
                # One serialisation per turn: the queue's thread order for queued turns, the gate for the others.
                async with contextlib.nullcontext() if turn.queued else self._gate.turn(session_key, run_id):
                    return await self._run_turn(run_id, turn, _SafeProgress(progress) if progress else None)
        except Exception as exc:
            # Only the bookkeeping around a run gets here (lock, run record): a store is down.
            log.error("run %s could not be started or recorded: %s", run_id, type(exc).__name__)
            self._metrics.run_finished(None, Outcome.FAILURE.value, None, 0.0)
            return ReleaseOutcome(
                run_id=run_id,
                outcome=Outcome.FAILURE,
                fallback=failure_fallback([], FailureCause.STORAGE),
            )

    async def abandon(self, session_key: str, run_id: str,
                      cause: FailureCause = FailureCause.DEADLINE) -> ReleaseOutcome:
        """Finish a run found stuck past its deadline (the bot's watchdog) or left RUNNING by a worker that stopped
        (the recovery job): free its session for the turns waiting behind it, record it FAILED, and return a FAILURE
        with what its tools observed. Never raises."""
        try:
            await self._gate.release(session_key, run_id)
        except Exception as exc:  # the leases still lapse by themselves
            log.error("releasing the session of stuck run %s failed: %s", run_id, type(exc).__name__)
        ctx = RunContext(run_id=run_id, session_key=session_key, query="", timeline=self._timeline_factory(run_id),
                         budgets=self._budgets)
        record: RunRecord | None = None
        try:
            record = await self._runs.get(run_id)
        except Exception as exc:
            log.error("reading stuck run %s failed: %s", run_id, type(exc).__name__)
        stub = record or RunRecord(run_id=run_id, session_key=session_key, team="", channel="", user="", query="",
                                   started_at=datetime.now(UTC))
        outcome = await self._failure(ctx, stub, cause)
        if record is not None and record.status is RunStatus.RUNNING:
            record.intent = record.intent or Intent(outcome.intent)
            record.outcome, record.status = outcome.outcome, RunStatus.FAILED
            record.finished_at = datetime.now(UTC)
            await self._finish(ctx, record, outcome)
        return outcome

    async def stale_runs(self, min_age_s: float, limit: int = 100) -> list[RunRecord]:
        """Runs recorded RUNNING for over `min_age_s` whose heartbeat (`run-active:<run_id>`) has stopped: their
        process died without finishing them (the recovery job finishes those whose turn nobody re-runs)."""
        started_before = datetime.now(UTC) - timedelta(seconds=min_age_s)
        running = await self._runs.running(started_before, limit)
        beats = await self._kv.get_many([active_run_key(r.run_id) for r in running])
        return [r for r, beat in zip(running, beats, strict=True) if beat is None and not self._gate.is_active(r.run_id)]

    async def has_session(self, session_key: str) -> bool:
        """True when any run exists for this session (a KV marker first: it is asked for every thread message)."""
        if await self._kv.get(_session_seen_key(session_key)) is not None:
            return True
        return await self._runs.has_session(session_key)

    async def cancel_run(self, run_id: str) -> bool:
        """Cancel a running run; False if unknown or already finished."""
        return await self._gate.cancel_run(run_id)

    async def cancel_session(self, session_key: str) -> bool:
        """Cancel the session's active run."""
        return await self._gate.cancel_session(session_key)

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run record, or None."""
        return await self._runs.get(run_id)

    async def timeline(self, run_id: str) -> list[TimelineEvent]:
        """The run's ordered timeline events."""
        return await self._timeline_store.list(run_id)

    # ---- one run -----------------------------------------------------------------------------

    async def _run_turn(self, run_id: str, turn: Turn, progress: ProgressSink | None) -> ReleaseOutcome:
        session_key = turn.session.as_str()
        ctx = RunContext(
            run_id=run_id,
            session_key=session_key,
            query=turn.text,
            timeline=self._timeline_factory(run_id),
            budgets=self._budgets,
            progress=progress,
        )
        ctx.untrusted_spans.extend(marked_spans(turn.text))  # an alert's data in the question is tool text too (§5)
        record = RunRecord(
            run_id=run_id,
            session_key=session_key,
            team=turn.session.team,
            channel=turn.session.channel,
            user=turn.user,
            query=self._redactor.redact(turn.text),  # a secret pasted into a question is never stored
            prompt_hashes=dict(self._versions.prompt_hashes),
            rule_set_version=self._versions.rule_set_version,
            models=dict(self._versions.models),
            started_at=datetime.now(UTC),
            intent=turn.intent,
        )
        await self._runs.create(record)
        started: dict[str, Any] = {"query_chars": len(turn.text)}
        if turn.restart_of:
            started["restart_of"] = turn.restart_of
            await self._supersede(turn.restart_of, run_id)
        await ctx.timeline.record(EventType.RUN_STARTED, started)
        # The session-seen marker goes with the gate's leases (one round trip, not two).
        seen = {_session_seen_key(session_key): (run_id, SESSION_SEEN_TTL_S)}
        async with self._gate.active(session_key, run_id, ctx.cancelled, seen):
            outcome, status = await self._guarded(ctx, record)
            abandoned = not self._gate.is_active(run_id)
        if abandoned:  # the bot's watchdog finished this run already (abandon): its record says FAILED and stays so
            log.warning("run %s returned after it was abandoned; its outcome is dropped", run_id)
            return outcome
        record.intent = record.intent or Intent(outcome.intent)
        record.outcome = outcome.outcome
        record.fallback_type = outcome.fallback_type
        record.status = status
        record.finished_at = datetime.now(UTC)
        if record.intent is Intent.DIAGNOSIS and outcome.outcome is Outcome.SUCCESS and outcome.report:
            record.published_report = self._redactor.redact_value(outcome.report.model_dump(mode="json"))
        await self._finish(ctx, record, outcome)
        return outcome

    async def _supersede(self, old_run_id: str, run_id: str) -> None:
        """The run `old_run_id` stopped with its worker and `run_id` re-runs its turn: record the old one FAILED,
        with a timeline event naming the re-run (so `/diag trace` of either shows both). Never raises."""
        try:
            old = await self._runs.get(old_run_id)
            if old is None or old.status is not RunStatus.RUNNING:
                return
            old.status, old.outcome, old.finished_at = RunStatus.FAILED, Outcome.FAILURE, datetime.now(UTC)
            await self._timeline_factory(old_run_id).record(
                EventType.RUN_FAILED, {"cause": FailureCause.WORKER_STOPPED.value, "rerun_as": run_id})
            await self._runs.update(old)
        except Exception as exc:  # the re-run goes on; the recovery job retries the old record later
            log.warning("recording run %s as superseded failed: %s", old_run_id, type(exc).__name__)

    async def _guarded(self, ctx: RunContext, record: RunRecord) -> tuple[ReleaseOutcome, RunStatus]:
        """Run the turn with cancellation and the hard deadline; map every way out to an outcome."""
        try:
            outcome = await self._until_cancelled(ctx, self._dispatch(ctx, record))
        except RunCancelled:
            return await self._failure(ctx, record, FailureCause.CANCELLED), RunStatus.CANCELLED
        except TimeoutError:
            return await self._failure(ctx, record, FailureCause.DEADLINE), RunStatus.FAILED
        except Exception as exc:
            log.error("run %s failed unexpectedly: %s", ctx.run_id, type(exc).__name__)
            log.debug("run %s failure details", ctx.run_id, exc_info=True)
            return await self._failure(ctx, record, FailureCause.INTERNAL_ERROR), RunStatus.FAILED
        status = RunStatus.FAILED if outcome.outcome is Outcome.FAILURE else RunStatus.FINISHED
        return outcome, status

    @staticmethod
    async def _until_cancelled(ctx: RunContext, work: Awaitable[T]) -> T:
        """Await work unless the cancel event fires first (RunCancelled) or the deadline passes (TimeoutError)."""
        return await bounded(work, ctx.cancelled, ctx.seconds_left() + release_grace_s(ctx.budgets.deadline_s))

    async def _dispatch(self, ctx: RunContext, record: RunRecord) -> ReleaseOutcome:
        intent = await self._route(ctx) if record.intent is None else await self._given(ctx, record.intent)
        record.intent = intent
        if intent is Intent.CHAT:
            chat = ReleaseOutcome(run_id=ctx.run_id, intent="CHAT", outcome=Outcome.SUCCESS, chat_text=CHAT_HELP)
            return await self._decided(ctx, chat)
        if intent is Intent.KNOWLEDGE:
            outcome = await self._knowledge.answer(ctx)
            return await self._decided(ctx, outcome.model_copy(update={"intent": "KNOWLEDGE", "run_id": ctx.run_id}))
        return await self._diagnose(ctx)

    @staticmethod
    async def _decided(ctx: RunContext, outcome: ReleaseOutcome) -> ReleaseOutcome:
        """Record the release decision of a knowledge or chat turn (diagnosis turns get theirs from release)."""
        fallback_type = outcome.fallback_type.value if outcome.fallback_type else None
        await ctx.timeline.record(
            EventType.RELEASE_DECISION,
            {"intent": outcome.intent, "outcome": outcome.outcome.value, "fallback_type": fallback_type},
        )
        return outcome

    @staticmethod
    async def _given(ctx: RunContext, intent: Intent) -> Intent:
        """The caller's intent (an alert's investigation), recorded as routing is."""
        await ctx.timeline.record(EventType.INTENT_ROUTED, {"intent": intent.value, "by": "caller"}, 0.0)
        return intent

    async def _route(self, ctx: RunContext) -> Intent:
        if ctx.progress:
            await ctx.progress.update(ctx.run_id, ProgressUpdate(stage=ProgressStage.ROUTING))
        started = time.monotonic()
        try:
            decision = await self._router.decide(ctx.query, timeline=ctx.timeline, time_left_s=ctx.seconds_left())
            intent, routed_by, why = decision.intent, decision.source, decision.reason
        except Exception as exc:
            # A broken router must not lose the question: diagnosis is the safe default.
            log.warning("router failed for %s: %s", ctx.run_id, type(exc).__name__)
            intent, routed_by, why = Intent.DIAGNOSIS, "default_after_router_error", type(exc).__name__
        elapsed_ms = (time.monotonic() - started) * 1000
        summary = {"intent": intent.value, "by": routed_by, **({"reason": why} if why else {})}
        await ctx.timeline.record(EventType.INTENT_ROUTED, summary, elapsed_ms)
        return intent

    async def _diagnose(self, ctx: RunContext) -> ReleaseOutcome:
        previous = await self._previous_report(ctx.session_key)
        result = await self._agent.run(ctx, previous)
        if result.stop_reason == "cancelled":
            raise RunCancelled
        if result.draft is None:
            # Stop reasons other than 'submitted' are FailureCause values; release says them in words.
            return await self._release.failure(ctx, str(result.stop_reason))
        # The agent records DRAFT_SUBMITTED itself (it knows the step); release records and reports the guard stages.
        return await self._release.release(ctx, result.draft)

    async def _previous_report(self, session_key: str) -> PublishedReport | None:
        latest = await self._runs.latest_published(session_key)
        if latest is None or latest.published_report is None:
            return None
        return PublishedReport.model_validate(latest.published_report)

    async def _failure(self, ctx: RunContext, record: RunRecord, reason: FailureCause) -> ReleaseOutcome:
        """FAILURE with observed facts; if even that breaks, a plain FAILURE without facts."""
        intent = (record.intent or Intent.DIAGNOSIS).value
        try:
            outcome = await asyncio.wait_for(self._release.failure(ctx, reason), timeout=FAILURE_BUILD_TIMEOUT_S)
        except Exception as exc:
            log.error("building the failure message of %s failed: %s", ctx.run_id, type(exc).__name__)
            outcome = ReleaseOutcome(
                run_id=ctx.run_id,
                outcome=Outcome.FAILURE,
                fallback=failure_fallback([], reason),
            )
        return outcome.model_copy(update={"intent": intent, "fallback_type": None})

    async def _finish(self, ctx: RunContext, record: RunRecord, outcome: ReleaseOutcome) -> None:
        end = {
            RunStatus.CANCELLED: EventType.RUN_CANCELLED,
            RunStatus.FAILED: EventType.RUN_FAILED,
        }.get(record.status, EventType.RUN_FINISHED)
        elapsed_ms = (time.monotonic() - ctx.started_monotonic) * 1000
        self._metrics.run_finished(record.intent, record.outcome, record.fallback_type, elapsed_ms / 1000)
        summary: dict[str, Any] = {"intent": record.intent, "outcome": record.outcome}
        if record.fallback_type:
            summary["fallback_type"] = record.fallback_type
        try:
            await ctx.timeline.record(end, summary, elapsed_ms)
            await self._runs.update(record)
        except Exception as exc:
            log.error("persisting the end of %s failed: %s", ctx.run_id, type(exc).__name__)


SESSION_SEEN_TTL_S = 30 * 24 * 3600.0
FAILURE_BUILD_TIMEOUT_S = 10.0


def _session_seen_key(session_key: str) -> str:
    return f"session-seen:{session_key}"
