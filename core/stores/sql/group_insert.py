"""Group commit: concurrent inserts into one table share a transaction, and each caller still returns only once
its own row is committed (or with its own error).

Every run writes a dozen or more timeline rows, each once its own transaction (BEGIN, INSERT, COMMIT): with
SQLite each is a round trip through aiosqlite's thread and a WAL write, and bench/bench_pipeline.py --stores sqlite
counted 16 of a queued run's 33 statements there. Rows that arrive while a write is in flight go together in the
next one (one executemany); a lone row is written at once, so nothing waits for a batch to fill.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import sqlalchemy as sa

from core.stores.sql.db import Database

MAX_ROWS_PER_WRITE = 500


class GroupInsert:
    """Inserts into `table` through one writer task per burst; `insert()` returns when its row is committed."""

    def __init__(self, db: Database, table: sa.Table, max_rows: int = MAX_ROWS_PER_WRITE) -> None:
        self._db = db
        self._table = table
        self._max_rows = max_rows
        self._pending: list[tuple[dict[str, Any], asyncio.Future[None]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def insert(self, row: dict[str, Any]) -> None:
        """Insert one row (raises what its own insert raised: a duplicate key fails only its caller)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._pending.append((row, done))
        if self._writer is None or self._writer.done():
            self._writer = loop.create_task(self._drain(), name=f"group-insert:{self._table.name}")
        await done

    async def _drain(self) -> None:
        while self._pending:
            batch, self._pending = self._pending[: self._max_rows], self._pending[self._max_rows:]
            try:
                await self._write(batch)
            except Exception as exc:  # the database is down: every caller of this batch hears it
                for _, done in batch:
                    _settle(done, exc)
            except BaseException:  # the loop is shutting down
                for _, done in batch:
                    done.cancel()
                raise

    async def _write(self, batch: list[tuple[dict[str, Any], asyncio.Future[None]]]) -> None:
        try:
            await self._execute([row for row, _ in batch])
        except sa.exc.SQLAlchemyError:
            if len(batch) == 1:
                raise
            for row, done in batch:  # one bad row (a duplicate key) must not fail the others: each on its own
                try:
                    await self._execute([row])
                except Exception as exc:
                    _settle(done, exc)
                else:
                    _settle(done, None)
            return
        for _, done in batch:
            _settle(done, None)

    async def _execute(self, rows: list[dict[str, Any]]) -> None:
        async with self._db.engine.begin() as conn:
            await conn.execute(sa.insert(self._table), rows)


def _settle(done: asyncio.Future[None], error: BaseException | None) -> None:
    """Answer a caller unless it stopped waiting (cancelled: its row is written anyway, best effort)."""
    if done.done():
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)
        with contextlib.suppress(Exception):
            done.exception()  # retrieved here too: a caller that stopped waiting leaves no "never retrieved" log
