"""Empty databases on the three backends for schema tests: a SQLite file, or a fresh uniquely named database on
the shared MariaDB / PostgreSQL servers (dropped afterwards; never anything the test did not create)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from tests.conftest import MARIADB_URL, POSTGRES_URL

BACKENDS = [
    "sqlite",
    pytest.param("mariadb", marks=pytest.mark.mariadb),
    pytest.param("postgres", marks=pytest.mark.postgres),
]


def admin_url(backend: str) -> str:
    """The server URL tests create their databases through."""
    return MARIADB_URL if backend == "mariadb" else POSTGRES_URL


@asynccontextmanager
async def empty_database(backend: str, tmp_path: Path) -> AsyncIterator[str]:
    """The URL (without a driver, as an operator writes it) of a new, empty database on `backend`."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path}/diag-{uuid.uuid4().hex[:6]}.db"
        return
    admin = admin_url(backend)
    name = f"diag_test_{uuid.uuid4().hex[:10]}"
    engine = create_async_engine(admin, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            suffix = " CHARACTER SET utf8mb4" if backend == "mariadb" else ""
            await conn.execute(sa.text(f"CREATE DATABASE {name}{suffix}"))
        yield make_url(admin).set(drivername=backend, database=name).render_as_string(hide_password=False)
    finally:
        async with engine.connect() as conn:
            force = " WITH (FORCE)" if backend == "postgres" else ""
            await conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name}{force}"))
        await engine.dispose()
