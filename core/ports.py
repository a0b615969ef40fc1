"""Ports: the small protocols the domain is typed against. Real adapters and test doubles implement them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from core.contracts.draft import DiagnosisDraft
from core.contracts.evidence import CallSummary, CanonicalRecord, InvocationMeta, RawResult
from core.contracts.feedback import Feedback, FeedbackTally, Stored, Vote
from core.contracts.release import (
    FailureCause,
    PublishedReport,
    ReleaseOutcome,
    SemanticVerdict,
    StoredDraft,
    VerifiedEvidenceSnapshot,
    Violation,
)
from core.contracts.run import Intent, RunRecord, StopReason, TimelineEvent, Turn
from core.queue.port import JobQueue as JobQueue
from core.run import ProgressSink as ProgressSink
from core.run import RunContext as RunContext
from core.run import Timeline as Timeline

if TYPE_CHECKING:
    from core.llm.model import ModelReply

ArgsT = TypeVar("ArgsT", bound=BaseModel)


class CanonicalStore(Protocol):
    """Canonical tool records keyed by (run_id, tool_call_id); Redis in production, in-process otherwise."""

    async def reserve(self, run_id: str, tool_call_id: str) -> bool:
        """Claim an id for a run; False if already used in that run."""
        ...

    async def put(self, record: CanonicalRecord) -> None:
        """Create or replace a record (with the store's TTL)."""
        ...

    async def get_many(
        self, run_id: str, tool_call_ids: Sequence[str], *, with_raw: bool = False
    ) -> dict[str, CanonicalRecord | None]:
        """Read several records of one run in one round trip; missing ones map to None.

        The raw backend result is stored apart and read only with_raw, so the guard's read costs the same
        whatever the size of what the backends returned."""
        ...

    async def list_run(self, run_id: str, *, with_raw: bool = False) -> list[CanonicalRecord]:
        """All records of a run, in call order."""
        ...


@runtime_checkable
class PendingClaims(Protocol):
    """A canonical store that claims a call id and writes its first record in one step (both stores of
    core/stores/canonical.py); ToolBoundary falls back to reserve then put for any other."""

    async def reserve_pending(self, record: CanonicalRecord) -> bool:
        """reserve(record's run, record's id), then put(record) only when claimed; False when the id was used."""
        ...


@runtime_checkable
class DumpedPuts(Protocol):
    """A canonical store that takes a record with its raw result already encoded (both stores of
    core/stores/canonical.py): the boundary sizes every raw result by encoding it, so the store need not encode it a
    second time; ToolBoundary uses put for any other."""

    async def put_dumped(self, record: CanonicalRecord, raw_json: str | None) -> None:
        """put(record), `raw_json` being `record.raw_result.model_dump_json()` (None: the store encodes it)."""
        ...


@runtime_checkable
class RecordDumps(Protocol):
    """A canonical store that hands out a run's records as the JSON objects it keeps (both stores of
    core/stores/canonical.py): what `model_dump(mode="json", exclude={"raw_result"})` of each list_run record gives,
    without building the models first (the release keeps them for replay as they are)."""

    async def list_run_dumps(self, run_id: str) -> list[dict[str, Any]]:
        """The run's records without raw results, in call order, as JSON objects."""
        ...


class KeyValueStore(Protocol):
    """Shared small state: dedup keys, leases (locks with an owner), cancel flags."""

    async def set_if_absent(self, key: str, value: str, ttl_s: float) -> bool: ...

    async def get(self, key: str) -> str | None: ...

    async def set(self, key: str, value: str, ttl_s: float) -> None: ...

    async def delete(self, key: str) -> None: ...

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        """Values of several keys in one round trip (None for each absent key)."""
        ...

    async def renew(self, key: str, value: str, ttl_s: float) -> bool:
        """Reset the key's TTL if it still holds `value` (a lease its owner renews); False if not the owner."""
        ...

    async def delete_if(self, key: str, value: str) -> bool:
        """Delete the key only if it still holds `value` (an owner releasing its lease); True if deleted."""
        ...

    async def set_many(self, values: Mapping[str, str], ttl_s: float, ttls: Mapping[str, float] | None = None) -> None:
        """set() of several keys with one TTL (`ttls`: another for some of them), in one round trip."""
        ...

    async def renew_many(self, leases: Mapping[str, str], ttl_s: float) -> list[bool]:
        """renew() of several leases (key -> the owner's value) in one round trip; True for each still owned."""
        ...

    async def delete_many(self, keys: Sequence[str], owned: Mapping[str, str] | None = None) -> None:
        """delete() of `keys` and delete_if() of each `owned` lease (key -> the owner's value), in one round trip."""
        ...

    async def incr(self, key: str, ttl_s: float) -> int:
        """Add one to a counter (created at 1 with `ttl_s`; the TTL is not extended later); the new count."""
        ...


class AuditStore(Protocol):
    """Long-lived SQL audit: invocation metadata and reasoning (never raw payloads)."""

    async def record_invocation(self, meta: InvocationMeta) -> None: ...

    async def record_reasoning(self, run_id: str, stage: str, step: int, content: str | None) -> None:
        """Store provider reasoning; None is stored as 'unavailable'."""
        ...


class DraftArchive(Protocol):
    """Where checked drafts are kept for `diagbot replay` (the SQL audit store; subject to retention)."""

    async def record_draft(self, stored: StoredDraft) -> None: ...

    async def drafts(self, run_id: str) -> list[StoredDraft]:
        """The run's stored drafts, in check order."""
        ...

    async def drafts_since(self, since: datetime, limit: int) -> list[StoredDraft]:
        """Drafts recorded at or after `since` (at most `limit`, oldest first)."""
        ...


class TimelineStore(Protocol):
    async def append(self, event: TimelineEvent) -> None: ...

    async def list(self, run_id: str) -> list[TimelineEvent]: ...


class RunStore(Protocol):
    """Runs and the session rule of SPEC §7."""

    async def create(self, run: RunRecord) -> None: ...

    async def update(self, run: RunRecord) -> None: ...

    async def get(self, run_id: str) -> RunRecord | None: ...

    async def has_session(self, session_key: str) -> bool:
        """True when any run of this session exists (the bot has taken part in the thread)."""
        ...

    async def latest_published(self, session_key: str) -> RunRecord | None:
        """The latest run of the session whose intent was DIAGNOSIS and outcome SUCCESS (None otherwise)."""
        ...

    async def running(self, started_before: datetime, limit: int) -> list[RunRecord]:
        """Runs still recorded RUNNING that started before `started_before`, oldest first (the recovery job)."""
        ...


class Tool(Protocol[ArgsT]):
    """One read-only tool backend behind the ToolBoundary, generic over its argument model (no downcasts)."""

    name: str
    args_model: type[ArgsT]

    async def run(self, args: ArgsT) -> RawResult:
        """Execute validated arguments. Raise ToolFailure for a clear ERROR; any other exception is a bug."""
        ...


class ToolInvoker(Protocol):
    """The ToolBoundary as a tool loop sees it: never raises for bad input, returns the projection JSON."""

    async def invoke(
        self, ctx: RunContext, tool_call_id: str | None, name: str, arguments: str | dict[str, Any]
    ) -> dict[str, Any]: ...


class ChatModel(Protocol):
    """An OpenAI-compatible chat completion endpoint (non-streaming)."""

    async def complete(
        self,
        *,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        timeout_s: float = 60.0,
    ) -> ModelReply:
        """Return the assistant's reply; raise ModelUnavailable when no answer can be had."""
        ...


class RouteDecisionLike(Protocol):
    """What the router decided: the intent, by what ('rule', 'model', 'fallback') and, for a fallback, why."""

    @property
    def intent(self) -> Intent: ...

    @property
    def source(self) -> str: ...

    @property
    def reason(self) -> str | None: ...


class IntentRouting(Protocol):
    async def decide(
        self, text: str, *, timeline: Timeline | None = None, time_left_s: float | None = None
    ) -> RouteDecisionLike:
        """The intent and what decided it ('rule', 'model' or 'fallback')."""
        ...


class AgentRunResult(Protocol):
    @property
    def draft(self) -> DiagnosisDraft | None: ...

    @property
    def stop_reason(self) -> StopReason: ...


class DiagnosisAgentPort(Protocol):
    async def run(self, ctx: RunContext, previous_report: PublishedReport | None) -> AgentRunResult: ...


class ReleasePort(Protocol):
    async def release(self, ctx: RunContext, draft: DiagnosisDraft) -> ReleaseOutcome: ...

    async def failure(self, ctx: RunContext, reason: str) -> ReleaseOutcome: ...


class KnowledgePort(Protocol):
    async def answer(self, ctx: RunContext) -> ReleaseOutcome:
        """Answer a knowledge question: SUCCESS with a verified answer or SAFE_FALLBACK KNOWLEDGE_UNVERIFIED."""
        ...


class EvidenceRepairer(Protocol):
    async def repair(
        self,
        query: str,
        draft: DiagnosisDraft,
        violations: Sequence[Violation],
        referencable: Sequence[CallSummary],
        *,
        run_id: str | None = None,
        time_left_s: float | None = None,
        timeline: Timeline | None = None,
    ) -> DiagnosisDraft | None:
        """At most one repair attempt; None when the repair produced nothing usable. run_id: for the reasoning audit;
        time_left_s: the time the run can give the repair; timeline: where its model calls are recorded."""
        ...


class SemanticJudge(Protocol):
    async def judge(
        self, query: str, draft: DiagnosisDraft, snapshot: VerifiedEvidenceSnapshot, *,
        time_left_s: float | None = None, timeline: Timeline | None = None,
    ) -> SemanticVerdict:
        """One isolated judgement; UNAVAILABLE after bounded retries or when time_left_s is spent."""
        ...


class FeedbackStore(Protocol):
    """One 👍/👎 per user and run (SQL in production)."""

    async def record(self, vote: Feedback) -> Stored:
        """Store the vote, replacing the same user's earlier vote on that run; what that changed."""
        ...

    async def for_run(self, run_id: str) -> list[Feedback]: ...

    async def since(self, when: datetime, limit: int = 100_000) -> list[Feedback]: ...


class FeedbackPort(Protocol):
    """What the delivery channels call to record and read votes (core.service.feedback.FeedbackService)."""

    async def vote(self, run_id: str, user: str, team: str, vote: Vote) -> bool:
        """Record a vote on a finished run; False when the run does not exist."""
        ...

    async def tally(self, run_id: str) -> FeedbackTally: ...


class ChatServicePort(Protocol):
    """What the delivery channels (bot/, CLI) call. Implemented by core.service.chat_service.ChatService."""

    async def handle(self, turn: Turn, progress: ProgressSink | None = None) -> ReleaseOutcome:
        """Process one user message of a session (turns of one session run one at a time)."""
        ...

    async def has_session(self, session_key: str) -> bool:
        """True when the bot has taken part in this thread (so replies there are follow-ups)."""
        ...

    async def cancel_run(self, run_id: str) -> bool:
        """Cancel a running run; False if unknown or already finished."""
        ...

    async def cancel_session(self, session_key: str) -> bool:
        """Cancel the session's active run ('stop' / 'cancel' reply)."""
        ...

    async def abandon(self, session_key: str, run_id: str,
                      cause: FailureCause = FailureCause.DEADLINE) -> ReleaseOutcome:
        """Finish a run stuck past its deadline (or left by a dead worker): free its session, record it FAILED,
        FAILURE with observed facts."""
        ...

    async def stale_runs(self, min_age_s: float, limit: int = 100) -> list[RunRecord]:
        """Runs recorded RUNNING for over `min_age_s` whose heartbeat stopped (their process died)."""
        ...

    async def get_run(self, run_id: str) -> RunRecord | None: ...

    async def timeline(self, run_id: str) -> list[TimelineEvent]: ...
