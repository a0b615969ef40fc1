"""SQL audit: one metadata row per tool call and the reasoning audit (never raw payloads)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.mysql import insert as mysql_insert
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from core.contracts.evidence import InvocationMeta
from core.contracts.release import StoredDraft
from core.stores.sql.db import Database, dumps, from_db_time, guard_drafts, reasoning_audit, to_db_time, tool_invocations
from core.stores.sql.group_insert import GroupInsert

UNAVAILABLE = "unavailable"
MAX_DRAFTS_READ = 10_000


def _row(meta: InvocationMeta) -> dict[str, object]:
    return {
        "run_id": meta.run_id,
        "tool_call_id": meta.tool_call_id,
        "tool_name": meta.tool_name,
        "state": meta.state.value,
        "evidence_status": meta.evidence_status.value if meta.evidence_status else None,
        "count": meta.count,
        "raw_bytes": meta.raw_bytes,
        "projection_bytes": meta.projection_bytes,
        "truncated": meta.truncated,
        "duration_ms": meta.duration_ms,
        "error_code": meta.error_code,
        "started_at": to_db_time(meta.started_at),
    }


_CALL_KEY = ("run_id", "tool_call_id")


def _upsert(dialect: str, row: dict[str, object]) -> sa.Executable | None:
    """INSERT ... ON CONFLICT / ON DUPLICATE KEY UPDATE of one invocation row for the three backends."""
    changes = [k for k in row if k not in _CALL_KEY]
    if dialect in ("sqlite", "postgresql"):
        insert = sqlite_insert if dialect == "sqlite" else postgresql_insert
        statement = insert(tool_invocations).values(**row)
        return statement.on_conflict_do_update(index_elements=list(_CALL_KEY),
                                               set_={k: statement.excluded[k] for k in changes})
    if dialect == "mysql":
        mysql = mysql_insert(tool_invocations).values(**row)
        return mysql.on_duplicate_key_update({k: mysql.inserted[k] for k in changes})
    return None


class SqlAuditStore:
    """AuditStore over the SQL database."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._dialect = db.dialect
        self._reasoning = GroupInsert(db, reasoning_audit)  # concurrent runs' rows share a transaction

    async def record_invocation(self, meta: InvocationMeta) -> None:
        """Insert the call's metadata, or update it when the call was recorded before: one upsert statement on
        the (run_id, tool_call_id) unique key (it was an UPDATE, then an INSERT when nothing matched)."""
        row = _row(meta)
        async with self._db.engine.begin() as conn:
            statement = _upsert(self._dialect, row)
            if statement is not None:
                await conn.execute(statement)
                return
            match = (tool_invocations.c.run_id == meta.run_id) & (tool_invocations.c.tool_call_id == meta.tool_call_id)
            updated = await conn.execute(sa.update(tool_invocations).where(match).values(**row))
            if updated.rowcount == 0:
                await conn.execute(sa.insert(tool_invocations).values(**row))

    async def record_reasoning(self, run_id: str, stage: str, step: int, content: str | None) -> None:
        """Store provider reasoning; None (or empty) is stored as 'unavailable'."""
        await self._reasoning.insert({"run_id": run_id, "stage": stage[:40], "step": step,
                                      "content": content or UNAVAILABLE, "recorded_at": to_db_time(datetime.now(UTC))})

    async def invocations(self, run_id: str) -> list[InvocationMeta]:
        """The run's invocation rows, in start order (for traces and tests)."""
        query = (
            sa.select(tool_invocations)
            .where(tool_invocations.c.run_id == run_id)
            .order_by(tool_invocations.c.started_at, tool_invocations.c.id)
        )
        async with self._db.engine.connect() as conn:
            rows = (await conn.execute(query)).mappings().all()
        return [
            InvocationMeta.model_validate({**row, "started_at": row["started_at"].replace(tzinfo=UTC)}) for row in rows
        ]

    async def reasoning(self, run_id: str) -> list[tuple[str, int, str]]:
        """The run's reasoning rows as (stage, step, content), in recording order."""
        query = (
            sa.select(reasoning_audit.c.stage, reasoning_audit.c.step, reasoning_audit.c.content)
            .where(reasoning_audit.c.run_id == run_id)
            .order_by(reasoning_audit.c.id)
        )
        async with self._db.engine.connect() as conn:
            rows = (await conn.execute(query)).all()
        return [(row.stage, row.step, row.content) for row in rows]

    # ---- checked drafts, for `diagbot replay` (internal: never shown) ----------------------------------------

    async def record_draft(self, stored: StoredDraft) -> None:
        """Keep a checked draft with what the guard read."""
        content = stored.model_dump_json(include={"draft", "records", "untrusted"})
        async with self._db.engine.begin() as conn:
            await conn.execute(
                sa.insert(guard_drafts).values(
                    run_id=stored.run_id, stage=stored.stage[:16], rule_set_version=stored.rule_set_version[:64],
                    valid=stored.valid, codes=dumps(stored.codes), content=content,
                    recorded_at=to_db_time(stored.recorded_at),
                )
            )

    async def drafts(self, run_id: str) -> list[StoredDraft]:
        """The run's stored drafts, in check order."""
        query = sa.select(guard_drafts).where(guard_drafts.c.run_id == run_id).order_by(guard_drafts.c.id)
        return await self._read_drafts(query)

    async def drafts_since(self, since: datetime, limit: int = MAX_DRAFTS_READ) -> list[StoredDraft]:
        """Drafts recorded at or after `since`, oldest first (at most `limit`)."""
        query = (
            sa.select(guard_drafts)
            .where(guard_drafts.c.recorded_at >= to_db_time(since))
            .order_by(guard_drafts.c.recorded_at, guard_drafts.c.id)
            .limit(limit)
        )
        return await self._read_drafts(query)

    async def _read_drafts(self, query: sa.Select[Any]) -> list[StoredDraft]:
        async with self._db.engine.connect() as conn:
            rows = (await conn.execute(query)).mappings().all()
        return [
            StoredDraft.model_validate({
                **json.loads(row["content"]), "run_id": row["run_id"], "stage": row["stage"], "valid": row["valid"],
                "rule_set_version": row["rule_set_version"], "codes": json.loads(row["codes"]),
                "recorded_at": from_db_time(row["recorded_at"]),
            })
            for row in rows
        ]
