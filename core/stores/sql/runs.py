"""SQL run store: run records with the versions they ran under, and the session rule of SPEC §7."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import RowMapping
from sqlalchemy.exc import IntegrityError

from core.contracts.release import Outcome
from core.contracts.run import Intent, RunRecord, RunStatus
from core.stores.sql.db import Database, dumps, from_db_time, runs, to_db_time


def _row(run: RunRecord) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "session_key": run.session_key,
        "team": run.team,
        "channel": run.channel,
        "user": run.user,
        "query": run.query,
        "intent": run.intent,
        "status": run.status.value,
        "outcome": run.outcome,
        "fallback_type": run.fallback_type,
        "prompt_hashes": dumps(run.prompt_hashes),
        "rule_set_version": run.rule_set_version,
        "models": dumps(run.models),
        "published_report": None if run.published_report is None else dumps(run.published_report),
        "started_at": to_db_time(run.started_at),
        "finished_at": None if run.finished_at is None else to_db_time(run.finished_at),
    }


def _record(row: RowMapping) -> RunRecord:
    data = dict(row)
    data["prompt_hashes"] = json.loads(data["prompt_hashes"])
    data["models"] = json.loads(data["models"])
    if data["published_report"] is not None:
        data["published_report"] = json.loads(data["published_report"])
    data["started_at"] = from_db_time(data["started_at"])
    data["finished_at"] = from_db_time(data["finished_at"])
    return RunRecord.model_validate(data)


class SqlRunStore:
    """RunStore over the SQL database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(self, run: RunRecord) -> None:
        """Insert a new run; ValueError if the run id exists."""
        try:
            async with self._db.engine.begin() as conn:
                await conn.execute(sa.insert(runs).values(**_row(run)))
        except IntegrityError as exc:
            raise ValueError(f"run {run.run_id} already exists") from exc

    async def update(self, run: RunRecord) -> None:
        """Replace a run's fields; KeyError if the run is unknown."""
        values = _row(run)
        del values["run_id"]
        async with self._db.engine.begin() as conn:
            result = await conn.execute(sa.update(runs).where(runs.c.run_id == run.run_id).values(**values))
        if result.rowcount == 0:
            raise KeyError(f"unknown run {run.run_id}")

    async def get(self, run_id: str) -> RunRecord | None:
        """A run by id, or None."""
        async with self._db.engine.connect() as conn:
            row = (await conn.execute(sa.select(runs).where(runs.c.run_id == run_id))).mappings().first()
        return None if row is None else _record(row)

    async def has_session(self, session_key: str) -> bool:
        """True when any run of this session exists (uses the session_key index)."""
        query = sa.select(runs.c.run_id).where(runs.c.session_key == session_key).limit(1)
        async with self._db.engine.connect() as conn:
            return (await conn.execute(query)).first() is not None

    async def running(self, started_before: datetime, limit: int) -> list[RunRecord]:
        """Runs still RUNNING that started before `started_before`, oldest first (index runs_status_started)."""
        query = (
            sa.select(runs)
            .where(runs.c.status == RunStatus.RUNNING.value, runs.c.started_at < to_db_time(started_before))
            .order_by(runs.c.started_at)
            .limit(limit)
        )
        async with self._db.engine.connect() as conn:
            rows = (await conn.execute(query)).mappings().all()
        return [_record(row) for row in rows]

    async def latest_published(self, session_key: str) -> RunRecord | None:
        """The session's latest run (by start time) whose intent was DIAGNOSIS and outcome SUCCESS; fallbacks never count."""
        query = (
            sa.select(runs)
            .where(runs.c.session_key == session_key)
            .where(runs.c.intent == Intent.DIAGNOSIS.value, runs.c.outcome == Outcome.SUCCESS.value)
            .order_by(runs.c.started_at.desc())
            .limit(1)
        )
        async with self._db.engine.connect() as conn:
            row = (await conn.execute(query)).mappings().first()
        return None if row is None else _record(row)
