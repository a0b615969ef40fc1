"""SQL feedback store: one vote per (run, user); a later vote replaces the earlier one."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import RowMapping
from sqlalchemy.exc import IntegrityError

from core.contracts.feedback import Feedback, Stored, Vote
from core.stores.sql.db import Database, feedback, from_db_time, to_db_time


def _feedback(row: RowMapping) -> Feedback:
    at = from_db_time(row["at"])
    assert at is not None  # the column is NOT NULL
    return Feedback(run_id=row["run_id"], user=row["user"], team=row["team"], vote=Vote(row["vote"]), at=at)


class SqlFeedbackStore:
    """FeedbackStore over the SQL database (portable upsert: insert, else update the existing vote)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(self, vote: Feedback) -> Stored:
        """Store the user's vote on the run, replacing an earlier different one (the same vote again changes
        nothing, its time included); what that changed."""
        values = {"team": vote.team, "vote": vote.vote.value, "at": to_db_time(vote.at)}
        key = (feedback.c.run_id == vote.run_id) & (feedback.c.user == vote.user)
        try:
            async with self._db.engine.begin() as conn:
                await conn.execute(sa.insert(feedback).values(run_id=vote.run_id, user=vote.user, **values))
            return Stored.NEW
        except IntegrityError:  # the user voted on this run before: a different vote replaces it
            async with self._db.engine.begin() as conn:
                result = await conn.execute(sa.update(feedback).where(key & (feedback.c.vote != vote.vote.value))
                                            .values(**values))
            return Stored.CHANGED if result.rowcount else Stored.SAME

    async def for_run(self, run_id: str) -> list[Feedback]:
        """The votes of one run, oldest first."""
        query = sa.select(feedback).where(feedback.c.run_id == run_id).order_by(feedback.c.at, feedback.c.user)
        async with self._db.engine.connect() as conn:
            return [_feedback(r) for r in (await conn.execute(query)).mappings()]

    async def since(self, when: datetime, limit: int = 100_000) -> list[Feedback]:
        """Every vote cast (or changed) at or after `when`, oldest first (bounded)."""
        query = (sa.select(feedback).where(feedback.c.at >= to_db_time(when))
                 .order_by(feedback.c.at, feedback.c.run_id, feedback.c.user).limit(limit))
        async with self._db.engine.connect() as conn:
            return [_feedback(r) for r in (await conn.execute(query)).mappings()]
