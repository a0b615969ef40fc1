"""In-process audit, timeline and run stores: the same behaviour as the SQL stores, for tests and one-off CLI use."""

from __future__ import annotations

from core.contracts.evidence import InvocationMeta
from core.contracts.release import Outcome
from core.contracts.run import Intent, RunRecord, TimelineEvent
from core.stores.sql.audit import UNAVAILABLE


class InMemoryAuditStore:
    """AuditStore in memory; `invocations` and `reasoning_rows` are readable for assertions."""

    def __init__(self) -> None:
        self._invocations: dict[tuple[str, str], InvocationMeta] = {}
        self.reasoning_rows: list[tuple[str, str, int, str]] = []

    async def record_invocation(self, meta: InvocationMeta) -> None:
        """Insert or replace the call's metadata."""
        self._invocations[(meta.run_id, meta.tool_call_id)] = meta.model_copy(deep=True)

    async def record_reasoning(self, run_id: str, stage: str, step: int, content: str | None) -> None:
        """Store provider reasoning; None (or empty) is stored as 'unavailable'."""
        self.reasoning_rows.append((run_id, stage, step, content or UNAVAILABLE))

    async def invocations(self, run_id: str) -> list[InvocationMeta]:
        """The run's invocation rows in start order."""
        rows = [m for (rid, _), m in self._invocations.items() if rid == run_id]
        return sorted(rows, key=lambda m: m.started_at)

    async def reasoning(self, run_id: str) -> list[tuple[str, int, str]]:
        """The run's reasoning rows as (stage, step, content), in recording order."""
        return [(stage, step, content) for rid, stage, step, content in self.reasoning_rows if rid == run_id]


class InMemoryTimelineStore:
    """TimelineStore in memory; events come back ordered by seq."""

    def __init__(self) -> None:
        self._events: dict[str, dict[int, TimelineEvent]] = {}

    async def append(self, event: TimelineEvent) -> None:
        """Add one event; ValueError if its (run_id, seq) exists (as the SQL unique key would)."""
        events = self._events.setdefault(event.run_id, {})
        if event.seq in events:
            raise ValueError(f"timeline event {event.run_id}#{event.seq} already exists")
        events[event.seq] = event.model_copy(deep=True)

    async def list(self, run_id: str) -> list[TimelineEvent]:
        """All events of a run in seq order."""
        events = self._events.get(run_id, {})
        return [events[seq].model_copy(deep=True) for seq in sorted(events)]


class InMemoryRunStore:
    """RunStore in memory."""

    def __init__(self) -> None:
        self._runs: dict[str, RunRecord] = {}

    async def create(self, run: RunRecord) -> None:
        """Insert a new run; ValueError if the run id exists."""
        if run.run_id in self._runs:
            raise ValueError(f"run {run.run_id} already exists")
        self._runs[run.run_id] = run.model_copy(deep=True)

    async def update(self, run: RunRecord) -> None:
        """Replace a run; KeyError if the run is unknown."""
        if run.run_id not in self._runs:
            raise KeyError(f"unknown run {run.run_id}")
        self._runs[run.run_id] = run.model_copy(deep=True)

    async def get(self, run_id: str) -> RunRecord | None:
        """A run by id, or None."""
        run = self._runs.get(run_id)
        return None if run is None else run.model_copy(deep=True)

    async def has_session(self, session_key: str) -> bool:
        """True when any run of this session exists."""
        return any(r.session_key == session_key for r in self._runs.values())

    async def latest_published(self, session_key: str) -> RunRecord | None:
        """The session's latest run whose intent was DIAGNOSIS and outcome SUCCESS; fallbacks never count."""
        published = [
            r
            for r in self._runs.values()
            if r.session_key == session_key and r.intent == Intent.DIAGNOSIS.value and r.outcome == Outcome.SUCCESS.value
        ]
        if not published:
            return None
        return max(published, key=lambda r: r.started_at).model_copy(deep=True)
