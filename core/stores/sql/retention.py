"""Retention: delete rows older than a cut-off from every table that keeps per-run history, in bounded batches.

Each batch selects at most `batch_size` primary keys by the table's (indexed) time column and deletes exactly
those in its own short transaction, so a large purge never holds long locks and works the same on SQLite,
PostgreSQL and MariaDB (which cannot DELETE ... LIMIT through a subquery).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from core.stores.sql.db import Database, guard_drafts, reasoning_audit, runs, timeline_events, to_db_time, tool_invocations

DEFAULT_BATCH = 1000


@dataclass(frozen=True)
class PurgeTarget:
    """A table the retention job purges: its primary key and the time column compared with the cut-off."""

    table: sa.Table
    key: str
    time_column: str


# Children before parents: a run's events and audit rows go before its run row (the session history).
PURGED: tuple[PurgeTarget, ...] = (
    PurgeTarget(timeline_events, "id", "at"),
    PurgeTarget(tool_invocations, "id", "started_at"),
    PurgeTarget(reasoning_audit, "id", "recorded_at"),
    PurgeTarget(guard_drafts, "id", "recorded_at"),
    PurgeTarget(runs, "run_id", "started_at"),
)


async def _purge_batch(db: Database, target: PurgeTarget, cutoff: datetime, batch_size: int) -> int:
    key = target.table.c[target.key]
    when = target.table.c[target.time_column]
    async with db.engine.begin() as conn:
        keys = (await conn.execute(sa.select(key).where(when < cutoff).order_by(when).limit(batch_size))).scalars().all()
        if keys:
            await conn.execute(sa.delete(target.table).where(key.in_(keys)))
    return len(keys)


async def purge_older_than(db: Database, cutoff: datetime, *, batch_size: int = DEFAULT_BATCH,
                           targets: tuple[PurgeTarget, ...] = PURGED) -> dict[str, int]:
    """Delete every row of `targets` older than `cutoff` (aware or naive UTC); rows deleted per table."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    naive_cutoff = to_db_time(cutoff)
    deleted: dict[str, int] = {}
    for target in targets:
        total = 0
        while True:
            n = await _purge_batch(db, target, naive_cutoff, batch_size)
            total += n
            if n < batch_size:
                break
            await asyncio.sleep(0)  # let runs in flight use the loop (and the database) between batches
        deleted[target.table.name] = total
    return deleted
