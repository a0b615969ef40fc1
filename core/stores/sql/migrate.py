"""Schema migrations (Alembic): upgrade to head under a database lock, and say whether a database is behind.

The lock makes concurrent start-ups safe: replicas that start together on an empty database take turns, the
first one migrates, the others find the schema at head. PostgreSQL: a session advisory lock; MariaDB/MySQL:
GET_LOCK on a name per database; SQLite: BEGIN EXCLUSIVE on the file (waits out the busy timeout).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.ext.asyncio import AsyncConnection

from core.stores.sql.db import Database

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

# Alembic is imported inside the functions that use it: it costs most of a second, and paths that end before any
# schema step (serve refusing a bad configuration, `diagbot check` on a new SQLite file) should not pay for it.

SCRIPT_LOCATION = "core.stores.sql:migrations"
# The revision a database made by the pre-migration create_all() has; such a database is stamped, then upgraded.
BASELINE_REVISION = "0001_initial"
LOCK_TIMEOUT_S = 120.0
_LOCK_POLL_S = 0.2
_LOCK_NAME = "diagbot_schema"
# PostgreSQL advisory locks are per database, so one constant key serves every database ("diagschm" in ASCII).
PG_LOCK_KEY = 0x64_69_61_67_73_63_68_6D


class MigrationError(Exception):
    """The schema could not be brought to head; the message names the cause and the fix."""


@dataclass(frozen=True)
class SchemaStatus:
    """Where a database's schema stands against this version's migrations."""

    current: str | None
    head: str
    known: bool

    @property
    def at_head(self) -> bool:
        """The schema is the one this version needs."""
        return self.current == self.head

    @property
    def behind(self) -> bool:
        """An upgrade (`diagbot migrate`) would bring the schema to head."""
        return self.known and not self.at_head

    def describe(self) -> str:
        """One line: at head, behind (from which revision) or unknown to this version."""
        if self.at_head:
            return f"schema at head ({self.head})"
        if not self.known:
            return (f"schema at revision {self.current}, which this version does not know (a newer diagbot migrated "
                    "it); run that version or restore a matching backup")
        start = self.current or "empty database"
        return f"schema behind: {start}, this version needs {self.head}; run `diagbot migrate`"


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic config over the packaged migrations (no alembic.ini needed); `connection` is used by env.py."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    config.attributes["connection"] = connection
    return config


def script_directory() -> ScriptDirectory:
    """The packaged migration scripts."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config())


def head_revision() -> str:
    """The newest revision of this version's migrations (the chain is linear: one head)."""
    head = script_directory().get_current_head()
    if head is None:  # pragma: no cover - the package always ships migrations
        raise MigrationError("no migrations are packaged")
    return head


def _current_revision(conn: Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(conn).get_current_revision()


async def schema_status(db: Database) -> SchemaStatus:
    """Read the database's revision (connection errors propagate) and compare it with head."""
    async with db.engine.connect() as conn:
        current = await conn.run_sync(_current_revision)
    script = script_directory()
    known = current is None or current in {rev.revision for rev in script.walk_revisions()}
    return SchemaStatus(current=current, head=head_revision(), known=known)


def _upgrade_sync(conn: Connection, target: str) -> None:
    from alembic import command
    from alembic.util.exc import CommandError

    config = alembic_config(conn)
    if _current_revision(conn) is None and sa.inspect(conn).has_table("runs"):
        command.stamp(config, BASELINE_REVISION)  # made by create_all before migrations existed
    try:
        command.upgrade(config, target)
    except CommandError as exc:
        current = _current_revision(conn)
        raise MigrationError(
            f"cannot upgrade the schema from revision {current}: {exc}; it was migrated by a newer diagbot "
            "(run that version) or by hand") from exc


async def upgrade(db: Database, target: str = "head") -> SchemaStatus:
    """Upgrade the schema to `target` under the schema lock; returns the status afterwards."""
    async with db.engine.connect() as conn, schema_lock(conn, db):
        try:
            await conn.run_sync(_upgrade_sync, target)
            await conn.commit()
        except BaseException:
            await conn.rollback()
            raise
    return await schema_status(db)


async def prepare_schema(db: Database, auto_migrate: bool) -> SchemaStatus:
    """At start-up: upgrade to head when auto_migrate, else require the schema at head (MigrationError if not)."""
    if auto_migrate:
        return await upgrade(db)
    status = await schema_status(db)
    if not status.at_head:
        raise MigrationError(status.describe() + (" (or set DIAG_AUTO_MIGRATE=1)" if status.behind else ""))
    return status


@asynccontextmanager
async def schema_lock(conn: AsyncConnection, db: Database, timeout_s: float = LOCK_TIMEOUT_S) -> AsyncIterator[None]:
    """Hold the database's schema lock on `conn` for the block (waits up to timeout_s for another holder)."""
    if db.dialect == "postgresql":
        async with _pg_lock(conn, timeout_s):
            yield
    elif db.dialect == "mysql":
        async with _mysql_lock(conn, _lock_name(db), timeout_s):
            yield
    else:
        await _sqlite_exclusive(conn)
        yield


def _lock_name(db: Database) -> str:
    return f"{_LOCK_NAME}.{make_url(db.url).database or ''}"[:64]


@asynccontextmanager
async def _pg_lock(conn: AsyncConnection, timeout_s: float) -> AsyncIterator[None]:
    key = PG_LOCK_KEY
    deadline = time.monotonic() + timeout_s
    while not (await conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": key})).scalar():
        await conn.rollback()
        if time.monotonic() > deadline:
            raise MigrationError(f"another process held the schema lock for more than {timeout_s:.0f} s "
                                 "(a migration still running, or stuck); retry, or look for it in pg_locks")
        await asyncio.sleep(_LOCK_POLL_S)
    await conn.commit()
    try:
        yield
    finally:
        await _release(conn, sa.text("SELECT pg_advisory_unlock(:k)"), {"k": key})


@asynccontextmanager
async def _mysql_lock(conn: AsyncConnection, name: str, timeout_s: float) -> AsyncIterator[None]:
    got = (await conn.execute(sa.text("SELECT GET_LOCK(:n, :t)"), {"n": name, "t": int(timeout_s)})).scalar()
    await conn.commit()
    if got != 1:
        raise MigrationError(f"another process held the schema lock {name!r} for more than {timeout_s:.0f} s "
                             "(a migration still running, or stuck); retry")
    try:
        yield
    finally:
        await _release(conn, sa.text("SELECT RELEASE_LOCK(:n)"), {"n": name})


async def _release(conn: AsyncConnection, statement: sa.TextClause, params: dict[str, object]) -> None:
    """Release a session lock; if that fails, drop the connection (the server frees its locks with the session)."""
    try:
        await conn.execute(statement, params)
        await conn.commit()
    except Exception:
        await conn.invalidate()


async def _sqlite_exclusive(conn: AsyncConnection) -> None:
    """Take the SQLite file's write lock for the transaction the migration runs in (ends at commit/rollback)."""
    await conn.exec_driver_sql("BEGIN EXCLUSIVE")
