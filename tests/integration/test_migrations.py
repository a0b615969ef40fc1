"""Alembic migrations on real SQLite, MariaDB and PostgreSQL: empty -> head, models == migrated schema, databases
from before migrations are adopted, unknown revisions and stale schemas are named, and the schema lock holds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import Connection

from core.stores.sql.db import Database, metadata
from core.stores.sql.migrate import (
    BASELINE_REVISION,
    PG_LOCK_KEY,
    MigrationError,
    head_revision,
    prepare_schema,
    schema_status,
    script_directory,
    upgrade,
)
from tests.sql_databases import BACKENDS, empty_database


@pytest.fixture(params=BACKENDS)
async def empty(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    """A Database over a new, empty database of each backend."""
    async with empty_database(request.param, tmp_path) as url:
        database = Database(url)
        try:
            yield database
        finally:
            await database.dispose()


def _diff(conn: Connection) -> list[object]:
    context = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": False})
    return list(compare_metadata(context, metadata))


async def _tables(db: Database) -> set[str]:
    async with db.engine.connect() as conn:
        return set(await conn.run_sync(lambda c: sa.inspect(c).get_table_names()))


def test_the_migration_chain_is_linear() -> None:
    """One head, every revision has at most one parent: each schema change is a new migration after the last."""
    script = script_directory()
    assert len(script.get_heads()) == 1
    revisions = list(script.walk_revisions())
    assert revisions[-1].revision == BASELINE_REVISION
    assert all(not isinstance(rev.down_revision, tuple) for rev in revisions)


async def test_empty_database_migrates_to_head_and_matches_the_models(empty: Database) -> None:
    """Upgrading an empty database reaches head, and alembic finds no difference between the models and it."""
    assert (await schema_status(empty)).current is None
    status = await upgrade(empty)
    assert status.at_head
    assert status.current == head_revision()
    async with empty.engine.connect() as conn:
        assert await conn.run_sync(_diff) == []
    again = await upgrade(empty)  # every start runs it: a second upgrade is a no-op
    assert again.at_head


async def test_a_database_made_before_migrations_is_adopted(empty: Database) -> None:
    """Tables created by the old create_all (the baseline schema, no alembic_version) are stamped, then upgraded,
    keeping their rows."""
    async with empty.engine.begin() as conn:
        await conn.run_sync(lambda c: _baseline_without_version(c))
        await conn.execute(sa.text("INSERT INTO timeline_events (run_id, seq, type, at, duration_ms, summary) "
                                   "VALUES ('run_old', 1, 'RUN_STARTED', '2026-01-01 00:00:00', 0, '{}')"))
    status = await upgrade(empty)
    assert status.at_head
    async with empty.engine.connect() as conn:
        assert (await conn.execute(sa.text("SELECT count(*) FROM timeline_events"))).scalar() == 1
        assert await conn.run_sync(_diff) == []


def _baseline_without_version(conn: Connection) -> None:
    from alembic import command

    from core.stores.sql.migrate import alembic_config

    command.upgrade(alembic_config(conn), BASELINE_REVISION)
    conn.execute(sa.text("DROP TABLE alembic_version"))


async def test_unknown_revision_and_stale_schema_are_named(empty: Database) -> None:
    """A schema migrated by a newer version is refused with its revision; without auto-migrate a behind schema is
    named with the command that fixes it."""
    with pytest.raises(MigrationError, match=r"schema behind: empty database.*diagbot migrate.*DIAG_AUTO_MIGRATE"):
        await prepare_schema(empty, auto_migrate=False)
    assert not await _tables(empty) - {"alembic_version"}  # checking never creates anything
    await upgrade(empty)
    assert (await prepare_schema(empty, auto_migrate=False)).at_head
    async with empty.engine.begin() as conn:
        await conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999_from_the_future'"))
    status = await schema_status(empty)
    assert not status.known
    assert not status.behind
    with pytest.raises(MigrationError, match="9999_from_the_future"):
        await upgrade(empty)
    with pytest.raises(MigrationError, match="does not know"):
        await prepare_schema(empty, auto_migrate=False)


async def test_concurrent_upgrades_on_one_empty_database_all_succeed(empty: Database) -> None:
    """Several engines (as several replicas would) upgrading the same empty database at once: all succeed."""
    others = [Database(empty.url) for _ in range(4)]
    try:
        results = await asyncio.gather(*(upgrade(db) for db in [empty, *others]))
    finally:
        for db in others:
            await db.dispose()
    assert all(status.at_head for status in results)
    async with empty.engine.connect() as conn:
        assert (await conn.execute(sa.text("SELECT count(*) FROM alembic_version"))).scalar() == 1


@pytest.mark.parametrize("backend", [pytest.param("postgres", marks=pytest.mark.postgres),
                                     pytest.param("mariadb", marks=pytest.mark.mariadb)])
async def test_upgrade_waits_for_the_schema_lock(backend: str, tmp_path: Path) -> None:
    """While another session holds the schema lock (advisory lock / GET_LOCK), an upgrade waits; once released it
    runs. Proves the lock is taken, not merely that the race happened to go well."""
    async with empty_database(backend, tmp_path) as url:
        holder, db = Database(url), Database(url)
        try:
            async with holder.engine.connect() as conn:
                if backend == "postgres":
                    await conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": PG_LOCK_KEY})
                else:
                    name = f"diagbot_schema.{sa.engine.make_url(db.url).database}"
                    await conn.execute(sa.text("SELECT GET_LOCK(:n, 5)"), {"n": name})
                task = asyncio.create_task(upgrade(db))
                done, _ = await asyncio.wait({task}, timeout=1.0)  # a negative: a second later it still waits
                assert not done
                assert not await _tables(holder)
                unlock = "SELECT pg_advisory_unlock(:k)" if backend == "postgres" else "SELECT RELEASE_LOCK(:n)"
                await conn.execute(sa.text(unlock), {"k": PG_LOCK_KEY} if backend == "postgres" else {"n": name})
                assert (await asyncio.wait_for(task, 30)).at_head
        finally:
            await holder.dispose()
            await db.dispose()
