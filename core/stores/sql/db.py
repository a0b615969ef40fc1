"""The SQL database of runs, audit and timeline: URL normalisation, async engine, portable Core tables."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

_ASYNC_DRIVERS = MappingProxyType({
    "sqlite": "sqlite+aiosqlite",
    "mysql": "mysql+aiomysql",
    "mariadb": "mysql+aiomysql",
    "postgresql": "postgresql+asyncpg",
    "postgres": "postgresql+asyncpg",
})
_SYNC_DRIVERS_REPLACED = MappingProxyType(
    {"pysqlite": "aiosqlite", "pymysql": "aiomysql", "mysqldb": "aiomysql", "psycopg2": "asyncpg"}
)


def normalize_url(url: str) -> str:
    """Give a database URL written with or without a driver the async driver this product uses."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError("database URL must look like scheme://...; e.g. sqlite+aiosqlite:///./diag.db")
    backend, _, driver = scheme.lower().partition("+")
    if backend not in _ASYNC_DRIVERS:
        raise ValueError(f"unsupported database backend {backend!r}; use sqlite, mysql/mariadb or postgresql")
    if not driver or driver in _SYNC_DRIVERS_REPLACED:
        return f"{_ASYNC_DRIVERS[backend]}://{rest}"
    if backend == "postgres":
        return f"postgresql+{driver}://{rest}"
    return url


# MySQL/MariaDB: TEXT holds only 64 KB and DATETIME drops microseconds unless told otherwise.
LongText = sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")
Timestamp = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")

# The live models. The schema itself is made by the Alembic migrations in core/stores/sql/migrations/ (a change here
# needs a new migration there; tests compare the migrated schema with these tables).
metadata = sa.MetaData()

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("run_id", sa.String(64), primary_key=True),
    sa.Column("session_key", sa.String(255), nullable=False),
    sa.Column("team", sa.String(64), nullable=False),
    sa.Column("channel", sa.String(64), nullable=False),
    sa.Column("user", sa.String(64), nullable=False),
    sa.Column("query", sa.Text(), nullable=False),
    sa.Column("intent", sa.String(16)),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("outcome", sa.String(32)),
    sa.Column("fallback_type", sa.String(64)),
    sa.Column("prompt_hashes", sa.Text(), nullable=False),
    sa.Column("rule_set_version", sa.String(64), nullable=False),
    sa.Column("models", sa.Text(), nullable=False),
    sa.Column("published_report", LongText),
    sa.Column("started_at", Timestamp, nullable=False),
    sa.Column("finished_at", Timestamp),
    sa.Index("ix_runs_session_started", "session_key", "started_at"),
    sa.Index("ix_runs_started", "started_at"),
    sa.Index("ix_runs_status_started", "status", "started_at"),
)

tool_invocations = sa.Table(
    "tool_invocations",
    metadata,
    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(64), nullable=False),
    sa.Column("tool_call_id", sa.String(128), nullable=False),
    sa.Column("tool_name", sa.String(80), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("evidence_status", sa.String(16)),
    sa.Column("count", sa.Integer(), nullable=False),
    sa.Column("raw_bytes", sa.BigInteger(), nullable=False),
    sa.Column("projection_bytes", sa.Integer(), nullable=False),
    sa.Column("truncated", sa.Boolean(), nullable=False),
    sa.Column("duration_ms", sa.Float(), nullable=False),
    sa.Column("error_code", sa.String(64)),
    sa.Column("started_at", Timestamp, nullable=False),
    sa.UniqueConstraint("run_id", "tool_call_id", name="uq_tool_invocations_call"),
    sa.Index("ix_tool_invocations_started", "started_at"),
)

timeline_events = sa.Table(
    "timeline_events",
    metadata,
    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(64), nullable=False),
    sa.Column("seq", sa.Integer(), nullable=False),
    sa.Column("type", sa.String(40), nullable=False),
    sa.Column("at", Timestamp, nullable=False),
    sa.Column("duration_ms", sa.Float(), nullable=False),
    sa.Column("summary", sa.Text(), nullable=False),
    sa.UniqueConstraint("run_id", "seq", name="uq_timeline_events_seq"),
    sa.Index("ix_timeline_events_at", "at"),
)

reasoning_audit = sa.Table(
    "reasoning_audit",
    metadata,
    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(64), nullable=False),
    sa.Column("stage", sa.String(40), nullable=False),
    sa.Column("step", sa.Integer(), nullable=False),
    sa.Column("content", LongText, nullable=False),
    sa.Column("recorded_at", Timestamp, nullable=False),
    sa.Index("ix_reasoning_audit_run", "run_id", "stage", "step"),
    sa.Index("ix_reasoning_audit_recorded", "recorded_at"),
)

# One 👍/👎 per user and run (the latest vote wins); exported by `diagbot feedback`.
feedback = sa.Table(
    "feedback",
    metadata,
    sa.Column("run_id", sa.String(64), primary_key=True),
    sa.Column("user", sa.String(64), primary_key=True),
    sa.Column("team", sa.String(64), nullable=False),
    sa.Column("vote", sa.String(8), nullable=False),
    sa.Column("at", Timestamp, nullable=False),
    sa.Index("ix_feedback_at", "at"),
)


guard_drafts = sa.Table(
    "guard_drafts",
    metadata,
    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(64), nullable=False),
    sa.Column("stage", sa.String(16), nullable=False),
    sa.Column("rule_set_version", sa.String(64), nullable=False),
    sa.Column("valid", sa.Boolean(), nullable=False),
    sa.Column("codes", sa.Text(), nullable=False),
    sa.Column("content", LongText, nullable=False),
    sa.Column("recorded_at", Timestamp, nullable=False),
    sa.Index("ix_guard_drafts_run", "run_id", "id"),
    sa.Index("ix_guard_drafts_recorded", "recorded_at"),
)


def to_db_time(value: datetime) -> datetime:
    """Store times as naive UTC: the one form SQLite, MariaDB and PostgreSQL all keep unchanged."""
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


def from_db_time(value: datetime | None) -> datetime | None:
    """Read back a stored time as an aware UTC datetime."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def dumps(value: Any) -> str:
    """JSON text for a Text column (portable across the three backends)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """Concurrent runs write timeline rows at once: WAL lets readers proceed and busy_timeout waits out writers
    instead of failing with 'database is locked'."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=10000")
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
    except Exception as exc:  # SQLITE_BUSY without waiting: another connection holds a lock (e.g. a migration)
        # WAL is a property of the file: whoever holds the lock set it already, or the next connection will; this
        # connection works in either mode meanwhile.
        if "locked" not in str(exc):
            raise
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


class Database:
    """One async engine (the schema is brought to head by core.stores.sql.migrate.upgrade); `await dispose()` at
    shutdown."""

    def __init__(self, url: str, **engine_options: Any) -> None:
        self.url = normalize_url(url)
        if self.dialect != "sqlite":
            engine_options.setdefault("pool_pre_ping", True)  # survive server restarts and idle disconnects
        self.engine: AsyncEngine = create_async_engine(self.url, **engine_options)
        if self.dialect == "sqlite":
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)

    @property
    def dialect(self) -> str:
        """The backend name: sqlite, mysql or postgresql."""
        return make_url(self.url).get_backend_name()

    async def dispose(self) -> None:
        """Close every pooled connection."""
        await self.engine.dispose()
