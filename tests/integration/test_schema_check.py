"""`diagbot check`'s database.schema line: at head, behind (fatal unless serve will upgrade), unknown revision;
it never creates or changes the database it looks at."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from core.health.catalog import config_checks
from core.health.result import Level
from core.health.schema import check_schema
from core.settings import Settings
from core.stores.sql.db import Database
from core.stores.sql.migrate import head_revision, upgrade
from tests.sql_databases import empty_database


async def test_a_new_sqlite_file_is_fine_with_auto_migrate_and_is_not_created(tmp_path: Path) -> None:
    """No file yet: ok when serve will migrate it, FATAL with the fix when DIAG_AUTO_MIGRATE is off; no file made."""
    url = f"sqlite:///{tmp_path}/diag.db"
    assert (await check_schema(Settings(database_url=url))).level is Level.OK
    off = await check_schema(Settings(database_url=url, diag_auto_migrate=False))
    assert off.level is Level.FATAL
    assert "diagbot migrate" in off.fix
    assert not (tmp_path / "diag.db").exists()


@pytest.mark.postgres
async def test_an_empty_postgres_database_is_behind_and_fatal_without_auto_migrate(tmp_path: Path) -> None:
    """PostgreSQL defaults to no auto-migrate: an empty database is FATAL naming `diagbot migrate`; after the
    upgrade the line says head; a revision from a newer version is FATAL."""
    async with empty_database("postgres", tmp_path) as url:
        settings = Settings(database_url=url)
        behind = await check_schema(settings)
        assert behind.level is Level.FATAL
        assert "schema behind" in behind.detail
        assert "diagbot migrate" in behind.fix
        database = Database(url)
        try:
            await upgrade(database)
            at_head = await check_schema(settings)
            assert at_head.level is Level.OK
            assert head_revision() in at_head.detail
            async with database.engine.begin() as conn:
                await conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999_newer'"))
            newer = await check_schema(settings)
            assert newer.level is Level.FATAL
            assert "9999_newer" in newer.detail
        finally:
            await database.dispose()


async def test_an_unreachable_database_is_left_to_the_database_check() -> None:
    """When the server cannot be reached the schema line is skipped (the database line names the cause)."""
    result = await check_schema(Settings(database_url="postgresql://postgres@127.0.0.1:9/test"))
    assert result.level is Level.SKIP


def test_the_schema_check_is_in_the_catalog() -> None:
    """`diagbot check` and serve's start-up checks include database.schema."""
    assert "database.schema" in {check.name for check in config_checks(Settings(), serving=True)}
