"""An in-test ChatServicePort (the adapter boundary): canned outcomes, controllable delay, real cancel semantics."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from core.contracts.draft import Analysis, AnalysisKind, Conclusion, DiagnosisDraft, Limitations
from core.contracts.evidence import EvidenceStatus
from core.contracts.progress import ProgressStage, ProgressUpdate, ToolProgress
from core.contracts.release import (
    EvidenceSource,
    FailureCause,
    FallbackMessage,
    ObservedFact,
    Outcome,
    PublishedReport,
    ReleaseOutcome,
)
from core.contracts.run import EventType, RunRecord, RunStatus, TimelineEvent, Turn
from core.ports import ProgressSink
from testkit.tool_names import ToolName


def success_outcome(run_id: str) -> ReleaseOutcome:
    """A small published diagnosis citing one call."""
    draft = DiagnosisDraft(
        conclusion=Conclusion(text="order-service errors are DB connection timeouts.", based_on_analysis_ids=["a1"]),
        analysis=[Analysis(analysis_id="a1", kind=AnalysisKind.NORMAL, text="37 ERROR lines: HikariPool timeout.",
                           tool_call_ids=["call_1"])],
        limitations=Limitations(scope="order-service logs, last 60 minutes", missing_info=["DB metrics"]),
    )
    source = EvidenceSource(tool_call_id="call_1", tool_name=ToolName.QUERY_LOGS,
                            evidence_status=EvidenceStatus.EVIDENCE_FOUND, label='query_logs order-service "timeout" (37)')
    return ReleaseOutcome(run_id=run_id, outcome=Outcome.SUCCESS, report=PublishedReport(run_id=run_id, draft=draft,
                                                                                         sources=[source]))


def cancelled_outcome(run_id: str) -> ReleaseOutcome:
    """What a cancelled run ends with."""
    fb = FallbackMessage(stage="cancelled by a user", observed_facts=[ObservedFact(
        text="query_logs order-service: no matches", tool_call_id="call_1", tool_name=ToolName.QUERY_LOGS,
        evidence_status=EvidenceStatus.NO_EVIDENCE)])
    return ReleaseOutcome(run_id=run_id, outcome=Outcome.FAILURE, fallback=fb)


class FakeChat:
    """Records turns; each run reports progress, then waits `delay_s` (or until cancelled) and returns `make_outcome`."""

    def __init__(self, delay_s: float = 0.0, make_outcome: Callable[[str], ReleaseOutcome] = success_outcome) -> None:
        self.delay_s = delay_s
        self.make_outcome = make_outcome
        self.turns: list[Turn] = []
        self.sessions: set[str] = set()
        self.runs: dict[str, RunRecord] = {}
        self.events: dict[str, list[TimelineEvent]] = {}
        self.active: dict[str, tuple[str, asyncio.Event]] = {}
        self.cancel_calls: list[str] = []
        self.started = asyncio.Event()
        self.finished = asyncio.Event()  # set when a run returns or raises (the turn goes on to close its progress)
        self.fail_with: Exception | None = None
        self.stale: list[RunRecord] = []
        self.hang = False  # runs ignore their cancel and never return until `unstick` is set (a wedged component)
        self.unstick = asyncio.Event()
        self.abandoned: list[tuple[str, str]] = []
        self._ids = itertools.count(1)

    def add_run(self, run_id: str, team: str, channel: str, n_events: int = 3) -> RunRecord:
        """Seed a finished run with a timeline (for /diag trace tests)."""
        t0 = datetime(2026, 1, 1, tzinfo=UTC)
        run = RunRecord(run_id=run_id, session_key=f"{team}:{channel}:1.0", team=team, channel=channel, user="U1",
                        query="why?", intent="DIAGNOSIS", status=RunStatus.FINISHED, outcome="SUCCESS", started_at=t0,
                        rule_set_version="2026.1", models={"agent": "m1"})
        self.runs[run_id] = run
        types = [EventType.RUN_STARTED, EventType.TOOL_CALL, EventType.RUN_FINISHED]
        self.events[run_id] = [
            TimelineEvent(run_id=run_id, seq=i, type=types[i % 3], at=t0 + timedelta(seconds=i), duration_ms=5.0,
                          summary={"tool": "query_logs", "count": i})
            for i in range(n_events)
        ]
        return run

    async def handle(self, turn: Turn, progress: ProgressSink | None = None) -> ReleaseOutcome:
        """One canned run."""
        run_id = f"run_{next(self._ids)}"
        key = turn.session.as_str()
        self.turns.append(turn)
        self.sessions.add(key)
        self.runs[run_id] = RunRecord(run_id=run_id, session_key=key, team=turn.session.team, channel=turn.session.channel,
                                      user=turn.user, query=turn.text, started_at=datetime.now(UTC))
        cancel = asyncio.Event()
        self.active[key] = (run_id, cancel)
        self.started.set()
        try:
            if progress is not None:
                await progress.update(run_id, ProgressUpdate(stage=ProgressStage.ROUTING))
                await progress.update(run_id, ProgressUpdate(stage=ProgressStage.TOOL_FINISHED, tool=ToolProgress(
                    tool_call_id="call_1", tool="query_logs", subject='order-service "timeout"',
                    evidence_status=EvidenceStatus.EVIDENCE_FOUND, count=37)))
            if self.fail_with is not None:
                raise self.fail_with
            if self.hang:
                await self._wedged()
                return self.make_outcome(run_id)
            try:
                await asyncio.wait_for(cancel.wait(), self.delay_s)
            except TimeoutError:
                return self.make_outcome(run_id)
            return cancelled_outcome(run_id)
        finally:
            self.active.pop(key, None)
            self.finished.set()

    async def _wedged(self) -> None:
        """Swallow every cancel until `unstick` (as a redis-py 8 task that keeps running after cancel())."""
        while not self.unstick.is_set():
            try:
                await self.unstick.wait()
            except asyncio.CancelledError:
                continue

    async def stale_runs(self, min_age_s: float, limit: int = 100) -> list[RunRecord]:
        """Runs left RUNNING by a dead process: the ones a test put in `stale`."""
        return self.stale[:limit]

    async def abandon(self, session_key: str, run_id: str,
                      cause: FailureCause = FailureCause.DEADLINE) -> ReleaseOutcome:
        """What the core does for the watchdog: free the session, FAILURE with the run's observed facts."""
        self.abandoned.append((session_key, run_id))
        active = self.active.pop(session_key, None)
        outcome = cancelled_outcome(active[0] if active else run_id)
        assert outcome.fallback is not None
        return outcome.model_copy(update={"fallback": outcome.fallback.model_copy(update={
            "stage": "the run did not finish in time", "reason": "its time limit passed"})})

    async def has_session(self, session_key: str) -> bool:
        return session_key in self.sessions

    async def cancel_run(self, run_id: str) -> bool:
        for rid, ev in self.active.values():
            if rid == run_id:
                ev.set()
                return True
        return False

    async def cancel_session(self, session_key: str) -> bool:
        self.cancel_calls.append(session_key)
        active = self.active.get(session_key)
        if active is None:
            return False
        active[1].set()
        return True

    async def get_run(self, run_id: str) -> RunRecord | None:
        return self.runs.get(run_id)

    async def timeline(self, run_id: str) -> list[TimelineEvent]:
        return self.events.get(run_id, [])
