"""In-process audit, timeline and run stores: the same behaviour as the SQL stores, for tests and one-off CLI use."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from core.contracts.evidence import InvocationMeta
from core.contracts.feedback import Feedback, Stored
from core.contracts.release import Outcome, StoredDraft
from core.contracts.run import Intent, RunRecord, RunStatus, TimelineEvent
from core.stores.sql.audit import UNAVAILABLE

# Records are kept as their JSON (model_dump_json), as the SQL stores keep their columns, and read back with
# model_validate_json: nothing a caller holds aliases what is stored, and both directions run in pydantic-core
# (a run's record, draft and timeline events cost ~240 us a run to deep-copy in Python, ~105 us as JSON).


class InMemoryAuditStore:
    """AuditStore in memory; `invocations` and `reasoning_rows` are readable for assertions."""

    def __init__(self) -> None:
        self._invocations: dict[tuple[str, str], str] = {}
        self.reasoning_rows: list[tuple[str, str, int, str]] = []
        self._drafts: list[tuple[str, datetime, str]] = []  # (run id, recorded at, the draft's JSON)

    async def record_invocation(self, meta: InvocationMeta) -> None:
        """Insert or replace the call's metadata."""
        self._invocations[(meta.run_id, meta.tool_call_id)] = meta.model_dump_json()

    async def record_reasoning(self, run_id: str, stage: str, step: int, content: str | None) -> None:
        """Store provider reasoning; None (or empty) is stored as 'unavailable'."""
        self.reasoning_rows.append((run_id, stage, step, content or UNAVAILABLE))

    async def invocations(self, run_id: str) -> list[InvocationMeta]:
        """The run's invocation rows in start order."""
        rows = [InvocationMeta.model_validate_json(m) for (rid, _), m in self._invocations.items() if rid == run_id]
        return sorted(rows, key=lambda m: m.started_at)

    async def reasoning(self, run_id: str) -> list[tuple[str, int, str]]:
        """The run's reasoning rows as (stage, step, content), in recording order."""
        return [(stage, step, content) for rid, stage, step, content in self.reasoning_rows if rid == run_id]

    async def record_draft(self, stored: StoredDraft) -> None:
        """Keep a checked draft (a copy)."""
        self._drafts.append((stored.run_id, stored.recorded_at, stored.model_dump_json()))

    async def drafts(self, run_id: str) -> list[StoredDraft]:
        """The run's stored drafts, in check order."""
        return [StoredDraft.model_validate_json(d) for rid, _, d in self._drafts if rid == run_id]

    async def drafts_since(self, since: datetime, limit: int = 10_000) -> list[StoredDraft]:
        """Drafts recorded at or after `since`, oldest first."""
        return [StoredDraft.model_validate_json(d) for _, at, d in self._drafts if at >= since][:limit]


class InMemoryTimelineStore:
    """TimelineStore in memory; events come back ordered by seq."""

    def __init__(self) -> None:
        self._events: dict[str, dict[int, str]] = {}

    async def append(self, event: TimelineEvent) -> None:
        """Add one event; ValueError if its (run_id, seq) exists (as the SQL unique key would)."""
        events = self._events.setdefault(event.run_id, {})
        if event.seq in events:
            raise ValueError(f"timeline event {event.run_id}#{event.seq} already exists")
        events[event.seq] = event.model_dump_json()

    async def list(self, run_id: str) -> list[TimelineEvent]:
        """All events of a run in seq order."""
        events = self._events.get(run_id, {})
        return [TimelineEvent.model_validate_json(events[seq]) for seq in sorted(events)]


@dataclass(frozen=True)
class _RunRow:
    """A stored run: its JSON, and the columns the store's queries look at."""

    json: str
    session_key: str
    status: RunStatus
    started_at: datetime
    published: bool  # intent DIAGNOSIS and outcome SUCCESS

    @staticmethod
    def of(run: RunRecord) -> _RunRow:
        published = run.intent == Intent.DIAGNOSIS.value and run.outcome == Outcome.SUCCESS.value
        return _RunRow(run.model_dump_json(), run.session_key, run.status, run.started_at, published)

    def record(self) -> RunRecord:
        return RunRecord.model_validate_json(self.json)


class InMemoryRunStore:
    """RunStore in memory."""

    def __init__(self) -> None:
        self._runs: dict[str, _RunRow] = {}
        # session_key -> its run ids, so session lookups do not scan every run the process ever kept; run_id ->
        # creation position (the order of `_runs`), so ties among a session's runs break as a full scan would.
        self._sessions: dict[str, set[str]] = {}
        self._order: dict[str, int] = {}

    def _index(self, run: RunRecord) -> None:
        previous = self._runs.get(run.run_id)
        if previous is not None and previous.session_key != run.session_key:
            self._sessions[previous.session_key].discard(run.run_id)
        self._sessions.setdefault(run.session_key, set()).add(run.run_id)

    async def create(self, run: RunRecord) -> None:
        """Insert a new run; ValueError if the run id exists."""
        if run.run_id in self._runs:
            raise ValueError(f"run {run.run_id} already exists")
        self._index(run)
        self._order[run.run_id] = len(self._order)
        self._runs[run.run_id] = _RunRow.of(run)

    async def update(self, run: RunRecord) -> None:
        """Replace a run; KeyError if the run is unknown."""
        if run.run_id not in self._runs:
            raise KeyError(f"unknown run {run.run_id}")
        self._index(run)
        self._runs[run.run_id] = _RunRow.of(run)

    async def get(self, run_id: str) -> RunRecord | None:
        """A run by id, or None."""
        row = self._runs.get(run_id)
        return None if row is None else row.record()

    async def has_session(self, session_key: str) -> bool:
        """True when any run of this session exists."""
        return bool(self._sessions.get(session_key))

    async def running(self, started_before: datetime, limit: int) -> list[RunRecord]:
        """Runs still RUNNING that started before `started_before`, oldest first."""
        stale = [r for r in self._runs.values() if r.status is RunStatus.RUNNING and r.started_at < started_before]
        return [r.record() for r in sorted(stale, key=lambda r: r.started_at)[:limit]]

    async def latest_published(self, session_key: str) -> RunRecord | None:
        """The session's latest run whose intent was DIAGNOSIS and outcome SUCCESS; fallbacks never count."""
        runs = (self._runs[run_id] for run_id in sorted(self._sessions.get(session_key, ()), key=self._order.__getitem__))
        published = [r for r in runs if r.published]
        if not published:
            return None
        return max(published, key=lambda r: r.started_at).record()


class InMemoryFeedbackStore:
    """FeedbackStore in this process (tests, the demo, bots built without a database)."""

    def __init__(self) -> None:
        self._votes: dict[tuple[str, str], Feedback] = {}

    async def record(self, vote: Feedback) -> Stored:
        """Store the user's vote on the run, replacing an earlier different one; what that changed."""
        key = (vote.run_id, vote.user)
        earlier = self._votes.get(key)
        if earlier is not None and earlier.vote is vote.vote:
            return Stored.SAME
        self._votes[key] = vote.model_copy()
        return Stored.NEW if earlier is None else Stored.CHANGED

    async def for_run(self, run_id: str) -> list[Feedback]:
        """The votes of one run, oldest first."""
        return sorted((v for v in self._votes.values() if v.run_id == run_id), key=lambda v: (v.at, v.user))

    async def since(self, when: datetime, limit: int = 100_000) -> list[Feedback]:
        """Every vote at or after `when`, oldest first (bounded)."""
        return sorted((v for v in self._votes.values() if v.at >= when), key=lambda v: (v.at, v.run_id, v.user))[:limit]
