"""SQL audit, timeline and run stores on real SQLite, MariaDB and PostgreSQL (each test in a fresh database)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import create_async_engine

from core.contracts.evidence import EvidenceStatus, InvocationMeta, InvocationState
from core.contracts.feedback import Feedback, Stored, Vote
from core.contracts.run import EventType, RunRecord, RunStatus, TimelineEvent
from core.stores.sql import Database, SqlAuditStore, SqlRunStore, SqlTimelineStore, normalize_url
from core.stores.sql.feedback import SqlFeedbackStore
from core.stores.sql.migrate import upgrade
from testkit.tool_names import ToolName
from tests.conftest import MARIADB_URL, POSTGRES_URL

T0 = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("sqlite:///x.db", "sqlite+aiosqlite:///x.db"),
        ("sqlite+pysqlite:///x.db", "sqlite+aiosqlite:///x.db"),
        ("sqlite+aiosqlite:///./diag.db", "sqlite+aiosqlite:///./diag.db"),
        ("mysql://root@db:3306/diag", "mysql+aiomysql://root@db:3306/diag"),
        ("mysql+pymysql://u:p@db/diag", "mysql+aiomysql://u:p@db/diag"),
        ("mariadb://root@db/diag", "mysql+aiomysql://root@db/diag"),
        ("postgresql://pg@db/diag", "postgresql+asyncpg://pg@db/diag"),
        ("postgres://pg@db/diag", "postgresql+asyncpg://pg@db/diag"),
        ("postgresql+psycopg2://pg@db/diag", "postgresql+asyncpg://pg@db/diag"),
        ("postgresql+asyncpg://pg@db/diag", "postgresql+asyncpg://pg@db/diag"),
    ],
)
def test_urls_with_or_without_driver_get_the_async_driver(given: str, expected: str) -> None:
    """DATABASE_URL may be written with or without a driver; the product picks its async one."""
    assert normalize_url(given) == expected


@pytest.mark.parametrize("bad", ["diag.db", "oracle://x/y", "mongodb://h/db"])
def test_unsupported_urls_are_refused_clearly(bad: str) -> None:
    """A URL of an unsupported backend fails at construction with a message naming the supported ones."""
    with pytest.raises(ValueError, match=r"sqlite|scheme"):
        normalize_url(bad)


async def _fresh_server_database(admin_url: str, scheme: str) -> tuple[str, str]:
    """Create diag_test_<random> on the server behind admin_url; return (url without driver, name)."""
    name = f"diag_test_{uuid.uuid4().hex[:10]}"
    engine = create_async_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            suffix = " CHARACTER SET utf8mb4" if scheme == "mariadb" else ""
            await conn.execute(sa.text(f"CREATE DATABASE {name}{suffix}"))
    finally:
        await engine.dispose()
    url = make_url(admin_url).set(drivername=scheme, database=name).render_as_string(hide_password=False)
    return url, name


async def _drop_server_database(admin_url: str, name: str, backend: str) -> None:
    engine = create_async_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            force = " WITH (FORCE)" if backend == "postgres" else ""
            await conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name}{force}"))
    finally:
        await engine.dispose()


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("mariadb", marks=pytest.mark.mariadb),
        pytest.param("postgres", marks=pytest.mark.postgres),
    ]
)
async def db(request: pytest.FixtureRequest, tmp_path: str) -> AsyncIterator[Database]:
    """A Database with fresh tables on the requested backend, removed afterwards."""
    backend: str = request.param
    if backend == "sqlite":
        database = Database(f"sqlite:///{tmp_path}/diag.db")
        await upgrade(database)
        yield database
        await database.dispose()
        return
    admin = MARIADB_URL if backend == "mariadb" else POSTGRES_URL
    url, name = await _fresh_server_database(admin, backend)
    database = Database(url)
    try:
        await upgrade(database)
        yield database
    finally:
        await database.dispose()
        await _drop_server_database(admin, name, backend)


def _meta(call_id: str = "call_a", **changes: object) -> InvocationMeta:
    meta = InvocationMeta(
        run_id="run-1", tool_call_id=call_id, tool_name=ToolName.QUERY_LOGS, state=InvocationState.PENDING,
        evidence_status=None, count=0, raw_bytes=10_000_000_000, projection_bytes=0, duration_ms=0.0, started_at=T0,
    )
    return meta.model_copy(update=changes)


async def test_create_all_is_idempotent(db: Database) -> None:
    """Creating the schema twice is harmless (startup runs it every time)."""
    await upgrade(db)
    async with db.engine.connect() as conn:
        tables = await conn.run_sync(lambda c: sa.inspect(c).get_table_names())
    assert {"runs", "tool_invocations", "timeline_events", "reasoning_audit"} <= set(tables)


async def test_audit_invocation_insert_then_update(db: Database) -> None:
    """The same call recorded twice leaves one row with the latest values, times exact to the microsecond."""
    audit = SqlAuditStore(db)
    await audit.record_invocation(_meta())
    final = _meta(state=InvocationState.READY, evidence_status=EvidenceStatus.EVIDENCE_FOUND, count=37,
                  projection_bytes=8000, truncated=True, duration_ms=12.5)
    await audit.record_invocation(final)
    await audit.record_invocation(final)  # identical values: still found, not re-inserted
    await audit.record_invocation(_meta("call_b", started_at=T0 + timedelta(seconds=1), error_code="TIMEOUT",
                                        state=InvocationState.FAILED, evidence_status=EvidenceStatus.ERROR))
    rows = await audit.invocations("run-1")
    assert rows[0] == final
    assert [r.tool_call_id for r in rows] == ["call_a", "call_b"]
    assert rows[1].error_code == "TIMEOUT"
    assert await audit.invocations("other") == []


async def test_reasoning_unavailable_and_long_content(db: Database) -> None:
    """Missing reasoning is stored as 'unavailable'; long reasoning (over MySQL TEXT's 64 KB) is kept whole."""
    audit = SqlAuditStore(db)
    long = "思考" * 50_000
    await audit.record_reasoning("run-1", "agent", 1, None)
    await audit.record_reasoning("run-1", "agent", 2, long)
    await audit.record_reasoning("run-1", "semantic_guard", 1, "")
    assert await audit.reasoning("run-1") == [("agent", 1, "unavailable"), ("agent", 2, long),
                                              ("semantic_guard", 1, "unavailable")]


async def test_timeline_is_ordered_by_seq_and_round_trips(db: Database) -> None:
    """Events come back by seq with their summary JSON and aware UTC times; a duplicate seq is refused."""
    store = SqlTimelineStore(db)
    summary = {"tool": "query_logs", "count": 3, "codes": ["NUMBER_NOT_IN_EVIDENCE"], "reason": "证据不足", "ok": None}
    later = TimelineEvent(run_id="run-1", seq=2, type=EventType.TOOL_CALL, at=T0 + timedelta(seconds=1),
                          duration_ms=3.25, summary=summary)
    first = TimelineEvent(run_id="run-1", seq=1, type=EventType.RUN_STARTED, at=T0)
    await store.append(later)
    await store.append(first)
    await store.append(TimelineEvent(run_id="run-2", seq=1, type=EventType.RUN_STARTED, at=T0))
    assert await store.list("run-1") == [first, later]
    with pytest.raises(IntegrityError):
        await store.append(first)


async def test_times_in_other_zones_are_stored_as_the_same_instant(db: Database) -> None:
    """An aware time in UTC+8 reads back as the same instant in UTC."""
    store = SqlTimelineStore(db)
    at = datetime(2024, 5, 2, 7, 0, tzinfo=timezone(timedelta(hours=8)))
    await store.append(TimelineEvent(run_id="r", seq=1, type=EventType.RUN_STARTED, at=at))
    (event,) = await store.list("r")
    assert event.at == at
    assert event.at.tzinfo == UTC


def _run(run_id: str, minutes: int, intent: str | None = "DIAGNOSIS", outcome: str | None = "SUCCESS",
         session: str = "T1:C1:1700000000.000100") -> RunRecord:
    return RunRecord(
        run_id=run_id, session_key=session, team="T1", channel="C1", user="U1", query="why is order-service failing?",
        intent=intent, outcome=outcome, status=RunStatus.FINISHED, prompt_hashes={"agent": "ab12"},
        rule_set_version="2024.05.1", models={"agent": "gpt-x"},
        published_report={"conclusion": "pool exhausted", "big": "x" * 100_000} if outcome == "SUCCESS" else None,
        started_at=T0 + timedelta(minutes=minutes), finished_at=T0 + timedelta(minutes=minutes, seconds=30),
    )


async def test_runs_create_get_update(db: Database) -> None:
    """A run round-trips whole (JSON fields, 100 KB report, exact times); updates replace; misuse fails clearly."""
    runs = SqlRunStore(db)
    run = _run("run-1", 0).model_copy(update={"status": RunStatus.RUNNING, "outcome": None, "finished_at": None})
    await runs.create(run)
    assert await runs.get("run-1") == run
    finished = _run("run-1", 0)
    await runs.update(finished)
    await runs.update(finished)  # an update with unchanged values is not "unknown run"
    assert await runs.get("run-1") == finished
    assert await runs.get("nope") is None
    with pytest.raises(ValueError, match="already exists"):
        await runs.create(run)
    with pytest.raises(KeyError):
        await runs.update(_run("nope", 0))


async def test_has_session_is_true_once_any_run_of_the_session_exists(db: Database) -> None:
    """A thread where the bot only chatted (no published report) is still the bot's session, across restarts."""
    runs = SqlRunStore(db)
    assert not await runs.has_session("T1:C1:1700000000.000100")
    await runs.create(_run("chat", 0, intent="CHAT"))
    assert await runs.has_session("T1:C1:1700000000.000100")
    assert not await runs.has_session("T1:C1:other")


async def test_latest_published_only_counts_diagnosis_success(db: Database) -> None:
    """The latest DIAGNOSIS+SUCCESS run of the session carries forward; later fallbacks, knowledge runs and other
    sessions never replace it."""
    runs = SqlRunStore(db)
    assert await runs.latest_published("T1:C1:1700000000.000100") is None
    await runs.create(_run("old", 0))
    await runs.create(_run("published", 1))
    await runs.create(_run("fallback", 2, outcome="SAFE_FALLBACK"))
    await runs.create(_run("failure", 3, outcome="FAILURE"))
    await runs.create(_run("knowledge", 4, intent="KNOWLEDGE"))
    await runs.create(_run("running", 5, outcome=None))
    await runs.create(_run("elsewhere", 6, session="T1:C1:other"))
    latest = await runs.latest_published("T1:C1:1700000000.000100")
    assert latest is not None
    assert latest.run_id == "published"
    assert latest.published_report is not None
    elsewhere = await runs.latest_published("T1:C1:other")
    assert elsewhere is not None
    assert elsewhere.run_id == "elsewhere"


async def test_feedback_is_one_vote_per_user_and_run_on_every_backend(db: Database) -> None:
    """A second vote of the same user on the same run replaces the first; other users and runs are kept apart."""
    store = SqlFeedbackStore(db)
    assert await store.record(Feedback(run_id="run-1", user="U1", team="T1", vote=Vote.UP, at=T0)) is Stored.NEW
    assert await store.record(Feedback(run_id="run-1", user="U1", team="T1", vote=Vote.UP,
                                       at=T0 + timedelta(seconds=30))) is Stored.SAME  # a second click: nothing
    assert await store.record(Feedback(run_id="run-1", user="U1", team="T1", vote=Vote.DOWN,
                                       at=T0 + timedelta(minutes=1))) is Stored.CHANGED
    await store.record(Feedback(run_id="run-1", user="U2", team="T1", vote=Vote.UP, at=T0 + timedelta(minutes=2)))
    await store.record(Feedback(run_id="run-2", user="U1", team="T1", vote=Vote.UP, at=T0 + timedelta(minutes=3)))
    votes = await store.for_run("run-1")
    assert [(v.user, v.vote) for v in votes] == [("U1", Vote.DOWN), ("U2", Vote.UP)]
    assert votes[0].at == T0 + timedelta(minutes=1)
    assert [v.run_id for v in await store.since(T0 + timedelta(minutes=2))] == ["run-1", "run-2"]


async def test_concurrent_timeline_events_share_transactions_and_each_is_committed(db: Database) -> None:
    """Group commit: 200 events of 20 runs appended at once go out in a few transactions, not 200; every one is
    stored and each append returns only after its row is committed."""
    store = SqlTimelineStore(db)
    commits = 0

    def count(*_: object) -> None:
        nonlocal commits
        commits += 1

    sa.event.listen(db.engine.sync_engine, "commit", count)
    events = [TimelineEvent(run_id=f"run-{r}", seq=s, type=EventType.TOOL_CALL, at=T0)
              for s in range(1, 11) for r in range(20)]
    await asyncio.gather(*(store.append(e) for e in events))
    assert commits <= 10
    for r in range(20):
        assert [e.seq for e in await store.list(f"run-{r}")] == list(range(1, 11))


async def test_a_duplicate_event_in_a_group_fails_only_its_own_append(db: Database) -> None:
    store = SqlTimelineStore(db)
    first = TimelineEvent(run_id="run-1", seq=1, type=EventType.RUN_STARTED, at=T0)
    await store.append(first)
    others = [TimelineEvent(run_id="run-1", seq=s, type=EventType.TOOL_CALL, at=T0) for s in (2, 3)]
    results = await asyncio.gather(store.append(first), *(store.append(e) for e in others), return_exceptions=True)
    assert isinstance(results[0], IntegrityError)
    assert results[1:] == [None, None]
    assert [e.seq for e in await store.list("run-1")] == [1, 2, 3]


async def test_appends_fail_clearly_while_the_database_is_gone(tmp_path: Path) -> None:
    """No table (a database that is not the diagbot one): each append raises, none hangs."""
    database = Database(f"sqlite:///{tmp_path}/empty.db")
    try:
        store = SqlTimelineStore(database)
        events = [TimelineEvent(run_id="r", seq=s, type=EventType.RUN_STARTED, at=T0) for s in (1, 2, 3)]
        results = await asyncio.wait_for(asyncio.gather(*(store.append(e) for e in events), return_exceptions=True), 10)
        assert all(isinstance(r, sa.exc.OperationalError) for r in results)
    finally:
        await database.dispose()
