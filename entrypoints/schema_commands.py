"""`diagbot migrate` and `diagbot purge --older-than 30d`: the database schema and retention, on demand."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime, timedelta

from pytimeparse.timeparse import timeparse as parse_duration

from core.bootstrap import open_schema
from core.settings import Settings
from core.stores.sql.db import Database
from core.stores.sql.errors import describe_database_error
from core.stores.sql.migrate import schema_status, upgrade
from core.stores.sql.retention import purge_older_than

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def older_than(text: str) -> timedelta:
    """argparse type of --older-than: an age such as 30d, 12h, 2w or 1d12h (a usage error naming the forms otherwise)."""
    seconds = parse_duration(text.strip()) if text.strip() else None
    if seconds is None or seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not an age: give a positive number with a unit, e.g. 30d, 12h, 2w")
    return timedelta(seconds=seconds)


async def migrate(settings: Settings) -> int:
    """Upgrade DATABASE_URL's schema to head (under the schema lock) and say from where to where."""
    database = Database(settings.database_url)
    try:
        try:
            before = await schema_status(database)
            after = await upgrade(database)
        except Exception as exc:  # connection, privileges, unknown revision: one line naming the cause
            problem = describe_database_error(exc)
            print(f"diagbot migrate: {problem.cause}" + (f"; {problem.fix}" if problem.fix else ""), file=sys.stderr)
            return EXIT_FAILED
        if before.current == after.current:
            print(f"database schema already at head ({after.head})")
        else:
            print(f"database schema upgraded: {before.current or 'empty database'} -> {after.current}")
        return EXIT_OK
    finally:
        await database.dispose()


async def purge(settings: Settings, age: timedelta) -> int:
    """Delete rows older than `age` now (the daily job's work, on demand); prints rows deleted per table."""
    database = Database(settings.database_url)
    try:
        await open_schema(database, settings.auto_migrate)
        cutoff = datetime.now(UTC) - age
        try:
            deleted = await purge_older_than(database, cutoff)
        except Exception as exc:  # connection lost, privileges: say what failed, never a traceback
            problem = describe_database_error(exc)
            print(f"diagbot purge: {problem.cause}" + (f"; {problem.fix}" if problem.fix else ""), file=sys.stderr)
            return EXIT_FAILED
        print(f"purged rows older than {cutoff.isoformat(timespec='seconds')}: "
              + ", ".join(f"{table} {n}" for table, n in deleted.items()))
        return EXIT_OK
    finally:
        await database.dispose()
