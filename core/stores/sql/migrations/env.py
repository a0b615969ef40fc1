"""Alembic environment: run on the connection `core.stores.sql.migrate` hands over (under its schema lock).

Without one (a developer running the `alembic` command, e.g. `alembic revision --autogenerate`), it connects to
the `sqlalchemy.url` option or DATABASE_URL itself.
"""

from __future__ import annotations

import asyncio
import os

from alembic import context
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from core.stores.sql.db import metadata, normalize_url


def _run(connection: Connection) -> None:
    # render_as_batch: SQLite cannot ALTER most things; autogenerate then writes batch operations that work everywhere.
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True, compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


async def _run_standalone(url: str) -> None:
    engine = create_async_engine(normalize_url(url))
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_run)
    finally:
        await engine.dispose()


given = context.config.attributes.get("connection")
if given is not None:
    _run(given)
elif context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported; run `diagbot migrate` against the database")
else:
    asyncio.run(_run_standalone(context.config.get_main_option("sqlalchemy.url") or os.environ.get(
        "DATABASE_URL", "sqlite+aiosqlite:///./diag.db")))
