"""Votes on runs: one per user and run, only on runs that exist, counted in the metrics."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

from core.contracts.feedback import Feedback, FeedbackTally, Stored, Vote
from core.contracts.run import RunRecord
from core.observability.metrics import Metrics
from core.ports import FeedbackStore


class RunLookup(Protocol):
    """The one RunStore method votes need."""

    async def get(self, run_id: str) -> RunRecord | None: ...


class FeedbackService:
    """Implements FeedbackPort over a FeedbackStore and the run store."""

    def __init__(self, store: FeedbackStore, runs: RunLookup, metrics: Metrics | None = None,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._store = store
        self._runs = runs
        self._metrics = metrics or Metrics()
        self._clock = clock

    async def vote(self, run_id: str, user: str, team: str, vote: Vote) -> bool:
        """Record the user's vote on a run (replacing their earlier one); False for an unknown run."""
        if await self._runs.get(run_id) is None:
            return False
        stored = await self._store.record(Feedback(run_id=run_id, user=user, team=team, vote=vote, at=self._clock()))
        if stored is not Stored.SAME:  # the metric counts stored votes (first ones and changes), not clicks
            self._metrics.feedback(vote.value)
        return True

    async def tally(self, run_id: str) -> FeedbackTally:
        """The run's votes and their counts."""
        votes = await self._store.for_run(run_id)
        return FeedbackTally(up=sum(v.vote is Vote.UP for v in votes), down=sum(v.vote is Vote.DOWN for v in votes),
                             votes=votes)

    async def since(self, when: datetime) -> list[Feedback]:
        """Every vote since `when` (the export of `diagbot feedback`)."""
        return await self._store.since(when)
