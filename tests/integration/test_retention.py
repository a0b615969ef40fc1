"""Retention on real SQLite, MariaDB and PostgreSQL: rows on both sides of the cut-off in every purged table, in
batches; the APScheduler job logs and retries a failure and keeps going; `diagbot purge` does it on demand."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from core.contracts.evidence import InvocationMeta, InvocationState
from core.contracts.run import EventType, RunRecord, RunStatus, TimelineEvent
from core.observability.metrics import Metrics
from core.service.retention import RetentionScheduler
from core.stores.sql import Database, SqlAuditStore, SqlRunStore, SqlTimelineStore
from core.stores.sql.db import guard_drafts, reasoning_audit
from core.stores.sql.migrate import upgrade
from core.stores.sql.retention import PURGED, purge_older_than
from entrypoints.cli import main
from testkit.tool_names import ToolName
from tests.metrics_text import sample
from tests.sql_databases import BACKENDS, empty_database
from tests.waiting import until

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
CUTOFF = NOW - timedelta(days=30)
OLD, NEW = ("old", CUTOFF - timedelta(seconds=1)), ("new", CUTOFF + timedelta(seconds=1))


@pytest.fixture(params=BACKENDS)
async def db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    """A migrated database of each backend."""
    async with empty_database(request.param, tmp_path) as url:
        database = Database(url)
        try:
            await upgrade(database)
            yield database
        finally:
            await database.dispose()


async def _seed(db: Database, label: str, at: datetime, n: int) -> None:
    """n runs, each with a timeline event, a tool invocation, a reasoning row and a kept draft, all stamped `at`."""
    runs, timeline, audit = SqlRunStore(db), SqlTimelineStore(db), SqlAuditStore(db)
    for i in range(n):
        run_id = f"run_{label}_{i}"
        await runs.create(RunRecord(run_id=run_id, session_key=f"T:C:{label}{i}", team="T", channel="C", user="U",
                                    query="q", status=RunStatus.FINISHED, prompt_hashes={}, rule_set_version="v",
                                    models={}, started_at=at))
        await timeline.append(TimelineEvent(run_id=run_id, seq=1, type=EventType.RUN_STARTED, at=at, duration_ms=0,
                                            summary={}))
        await audit.record_invocation(InvocationMeta(
            run_id=run_id, tool_call_id="call_1", tool_name=ToolName.QUERY_LOGS, state=InvocationState.READY,
            evidence_status=None, count=0, raw_bytes=0, projection_bytes=0, duration_ms=1.0, started_at=at))
    async with db.engine.begin() as conn:  # the reasoning audit stamps "now" itself: write these rows directly
        await conn.execute(sa.insert(reasoning_audit), [
            {"run_id": f"run_{label}_{i}", "stage": "agent", "step": 1, "content": "r", "recorded_at": at.replace(tzinfo=None)}
            for i in range(n)])
        await conn.execute(sa.insert(guard_drafts), [  # the drafts kept for `diagbot replay` are purged too
            {"run_id": f"run_{label}_{i}", "stage": "initial", "rule_set_version": "v", "valid": True, "codes": "[]",
             "content": "{}", "recorded_at": at.replace(tzinfo=None)}
            for i in range(n)])


async def _counts(db: Database) -> dict[str, int]:
    async with db.engine.connect() as conn:
        return {t.table.name: (await conn.execute(sa.select(sa.func.count()).select_from(t.table))).scalar_one()
                for t in PURGED}


async def test_purge_deletes_only_rows_older_than_the_cutoff_in_batches(db: Database) -> None:
    """5 old and 3 new rows per table, batches of 2: every old row goes, every new row stays, counts are exact."""
    await _seed(db, *OLD, n=5)
    await _seed(db, *NEW, n=3)
    deleted = await purge_older_than(db, CUTOFF, batch_size=2)
    assert deleted == {"timeline_events": 5, "tool_invocations": 5, "reasoning_audit": 5, "guard_drafts": 5, "runs": 5}
    assert await _counts(db) == {"timeline_events": 3, "tool_invocations": 3, "reasoning_audit": 3, "guard_drafts": 3,
                                 "runs": 3}
    assert await SqlRunStore(db).get("run_new_0") is not None
    assert await SqlRunStore(db).get("run_old_0") is None
    assert await purge_older_than(db, CUTOFF) == dict.fromkeys(deleted, 0)


async def test_scheduler_logs_and_retries_a_failing_purge(caplog: pytest.LogCaptureFixture) -> None:
    """The first two purges fail (database down): each is logged and counted, a retry follows, the third succeeds;
    nothing is raised into the loop that serves."""
    calls: list[datetime] = []
    recovered = asyncio.Event()

    async def flaky(cutoff: datetime) -> dict[str, int]:
        calls.append(cutoff)
        if len(calls) <= 2:
            raise ConnectionRefusedError("database down")
        recovered.set()
        return {"runs": 4}

    metrics = Metrics()
    scheduler = RetentionScheduler(flaky, 30, metrics=metrics, first_run_delay_s=0.05, retry_delays_s=(0.05, 0.1),
                                   clock=lambda: NOW)
    with caplog.at_level(logging.INFO, logger="core.service.retention"):
        scheduler.start()
        try:
            await asyncio.wait_for(recovered.wait(), 10)
            await until(lambda: "retention purge: 4 rows" in caplog.text,  # its last bookkeeping step
                        message="the successful run's log line")
        finally:
            await scheduler.aclose()
    assert calls == [CUTOFF] * 3
    assert [r.getMessage() for r in caplog.records].count(
        "retention purge failed (ConnectionRefusedError); retry 1 in 0 s") == 1
    text = metrics.render().decode()
    assert sample(text, "diagbot_retention_failures_total") == 2
    assert sample(text, "diagbot_retention_purged_rows_total", table="runs") == 4


async def test_a_successful_purge_starts_the_retries_over(caplog: pytest.LogCaptureFixture) -> None:
    """After a purge succeeds, the next failure is retry 1 again, with the first (shortest) delay."""
    results: list[Exception | dict[str, int]] = [ConnectionRefusedError("down"), ConnectionRefusedError("down"),
                                                 {"runs": 1}, ConnectionRefusedError("down")]

    async def purge(_: datetime) -> dict[str, int]:
        result = results.pop(0)
        if isinstance(result, Exception):
            raise result
        return result

    scheduler = RetentionScheduler(purge, 30, retry_delays_s=(60, 120), clock=lambda: NOW)
    with caplog.at_level(logging.WARNING, logger="core.service.retention"):
        for _ in range(4):
            await scheduler.run_once()
    assert [r.getMessage().split("; ")[1] for r in caplog.records] == ["retry 1 in 60 s", "retry 2 in 120 s",
                                                                        "retry 1 in 60 s"]


async def test_scheduler_purges_a_real_database_on_its_schedule(tmp_path: Path) -> None:
    """Wired to purge_older_than, the scheduled job removes old rows of a SQLite database."""
    database = Database(f"sqlite:///{tmp_path}/diag.db")
    try:
        await upgrade(database)
        await _seed(database, *OLD, n=2)
        await _seed(database, *NEW, n=1)
        done = asyncio.Event()

        async def purge(cutoff: datetime) -> dict[str, int]:
            try:
                return await purge_older_than(database, cutoff)
            finally:
                done.set()

        scheduler = RetentionScheduler(purge, 30, first_run_delay_s=0.05, clock=lambda: NOW)
        scheduler.start()
        try:
            await asyncio.wait_for(done.wait(), 10)
        finally:
            await scheduler.aclose()
        assert (await _counts(database))["runs"] == 1
    finally:
        await database.dispose()


def test_retention_days_must_be_positive() -> None:
    """A retention of 0 days would purge everything: refused."""
    async def purge(_: datetime) -> dict[str, int]:
        return {}

    with pytest.raises(ValueError, match="DIAG_RETENTION_DAYS"):
        RetentionScheduler(purge, 0)


async def test_purge_command_deletes_rows_past_the_age(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`diagbot purge --older-than 30d` deletes the old rows (relative to now) and prints counts per table."""
    url = f"sqlite:///{tmp_path}/diag.db"
    database = Database(url)
    try:
        await upgrade(database)
        now = datetime.now(UTC)
        await _seed(database, "old", now - timedelta(days=31), n=2)
        await _seed(database, "new", now - timedelta(days=29), n=1)
    finally:
        await database.dispose()
    monkeypatch.setenv("DATABASE_URL", url)
    code = await asyncio.to_thread(main, ["purge", "--older-than", "30d"])
    out = capsys.readouterr().out
    assert code == 0
    assert "runs 2" in out
    assert "timeline_events 2" in out
    database = Database(url)
    try:
        assert (await _counts(database))["runs"] == 1
    finally:
        await database.dispose()


@pytest.mark.parametrize("age", ["30", "soon", "-1d", "0d"])
def test_purge_command_refuses_an_age_without_a_unit(age: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A bare number or nonsense is a usage error naming the accepted forms; nothing is deleted."""
    with pytest.raises(SystemExit) as caught:
        main(["purge", f"--older-than={age}"])
    assert caught.value.code == 2
    assert "e.g. 30d" in capsys.readouterr().err
