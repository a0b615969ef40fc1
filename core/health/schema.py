"""The database schema against this version's migrations: at head, behind (and whether serve will upgrade it),
or migrated by a newer version."""

from __future__ import annotations

from core.health.result import CheckResult, Level
from core.health.stores import sqlite_file_of
from core.settings import Settings
from core.stores.sql.db import Database
from core.stores.sql.migrate import schema_status

NAME = "database.schema"
MIGRATE_FIX = "run `diagbot migrate` (or set DIAG_AUTO_MIGRATE=1 to upgrade at start)"


async def check_schema(settings: Settings) -> CheckResult:
    """Read the schema revision (never creating or changing anything); a connection problem is the database check's."""
    try:
        sqlite_file = sqlite_file_of(settings.database_url)
        database = Database(settings.database_url)
    except Exception:  # an invalid URL is reported by the database check
        return CheckResult(name=NAME, level=Level.SKIP, detail="DATABASE_URL unusable (see database)")
    try:
        if sqlite_file is not None and not sqlite_file.exists():
            return _behind("a new SQLite file", "the newest revision", settings.auto_migrate)
        try:
            status = await schema_status(database)
        except Exception:
            return CheckResult(name=NAME, level=Level.SKIP, detail="database not reachable (see database)")
    finally:
        await database.dispose()
    if status.at_head:
        return CheckResult(name=NAME, level=Level.OK, detail=status.describe())
    if not status.known:
        return CheckResult(name=NAME, level=Level.FATAL, detail=status.describe(),
                           fix="run the diagbot version that migrated it, or restore a matching backup")
    return _behind(status.current or "an empty database", status.head, settings.auto_migrate)


def _behind(start: str, head: str, auto_migrate: bool) -> CheckResult:
    if auto_migrate:
        return CheckResult(name=NAME, level=Level.OK,
                           detail=f"schema behind ({start}); serve upgrades it to {head} at start (DIAG_AUTO_MIGRATE)")
    return CheckResult(name=NAME, level=Level.FATAL, detail=f"schema behind: {start}, this version needs {head}",
                       fix=MIGRATE_FIX)
