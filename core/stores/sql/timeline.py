"""SQL timeline store: the ordered, safe events of every run."""

from __future__ import annotations

import json

import sqlalchemy as sa

from core.contracts.run import EventType, TimelineEvent
from core.stores.sql.db import Database, dumps, from_db_time, timeline_events, to_db_time
from core.stores.sql.group_insert import GroupInsert


class SqlTimelineStore:
    """TimelineStore over the SQL database; events come back ordered by seq."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._inserts = GroupInsert(db, timeline_events)  # concurrent runs' events share a transaction

    async def append(self, event: TimelineEvent) -> None:
        """Insert one event (its (run_id, seq) must be new); returns once it is committed."""
        await self._inserts.insert({
            "run_id": event.run_id,
            "seq": event.seq,
            "type": event.type.value,
            "at": to_db_time(event.at),
            "duration_ms": event.duration_ms,
            "summary": dumps(event.summary),
        })

    async def list(self, run_id: str) -> list[TimelineEvent]:
        """All events of a run in seq order."""
        query = sa.select(timeline_events).where(timeline_events.c.run_id == run_id).order_by(timeline_events.c.seq)
        async with self._db.engine.connect() as conn:
            rows = (await conn.execute(query)).mappings().all()
        return [
            TimelineEvent(
                run_id=row["run_id"],
                seq=row["seq"],
                type=EventType(row["type"]),
                at=from_db_time(row["at"]),
                duration_ms=row["duration_ms"],
                summary=json.loads(row["summary"]),
            )
            for row in rows
        ]
