"""FeedbackService: votes only on existing runs, one per user (the latest wins), counted in the metrics."""

from __future__ import annotations

from datetime import UTC, datetime

from core.contracts.feedback import Vote
from core.contracts.run import RunRecord
from core.observability.metrics import Metrics
from core.service.feedback import FeedbackService
from core.stores.memory import InMemoryFeedbackStore, InMemoryRunStore


async def test_votes_are_per_user_latest_wins_unknown_runs_refused_and_counted() -> None:
    """A second vote replaces the first in the tally; a vote on an unknown run is refused and not counted."""
    runs = InMemoryRunStore()
    await runs.create(RunRecord(run_id="run_1", session_key="T:C:1", team="T", channel="C", user="U1", query="q",
                                started_at=datetime.now(UTC)))
    metrics = Metrics()
    service = FeedbackService(InMemoryFeedbackStore(), runs, metrics)
    assert await service.vote("run_1", "U1", "T", Vote.UP)
    assert await service.vote("run_1", "U1", "T", Vote.DOWN)
    assert await service.vote("run_1", "U2", "T", Vote.UP)
    assert not await service.vote("run_missing", "U1", "T", Vote.UP)
    tally = await service.tally("run_1")
    assert (tally.up, tally.down) == (1, 1)
    exposition = metrics.render().decode()
    assert 'diagbot_feedback_votes_total{vote="up"} 2.0' in exposition
    assert 'diagbot_feedback_votes_total{vote="down"} 1.0' in exposition


async def test_the_vote_metric_counts_stored_votes_not_clicks() -> None:
    """Four clicks of 👍 by one user are one stored vote; a change to 👎 is a second; clicking 👎 again is not."""
    runs = InMemoryRunStore()
    await runs.create(RunRecord(run_id="run_1", session_key="T:C:1", team="T", channel="C", user="U1", query="q",
                                started_at=datetime.now(UTC)))
    metrics = Metrics()
    service = FeedbackService(InMemoryFeedbackStore(), runs, metrics)
    for vote in [Vote.UP] * 4 + [Vote.DOWN] * 2:
        assert await service.vote("run_1", "U1", "T", vote)
    exposition = metrics.render().decode()
    assert 'diagbot_feedback_votes_total{vote="up"} 1.0' in exposition
    assert 'diagbot_feedback_votes_total{vote="down"} 1.0' in exposition
