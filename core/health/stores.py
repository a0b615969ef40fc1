"""Checks of the stores: Redis answers PING; DATABASE_URL connects (the schema check has its place here)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from core.health.result import CheckResult, Level
from core.health.urls import display_url
from core.netdiag import network_cause
from core.settings import Settings
from core.stores.redis_client import redis_client_from_url  # the same client the server builds
from core.stores.sql.db import Database
from core.tools.sql.errors import connect_problem


async def check_redis(settings: Settings) -> CheckResult:
    """PING the Redis of REDIS_URL with the server's own client settings (quick failure, no stall)."""
    if not settings.redis_url:
        return CheckResult(name="redis", level=Level.SKIP, detail="no Redis to probe (see redis.mode)")

    shown = display_url(settings.redis_url)
    client = redis_client_from_url(settings.redis_url)
    try:
        await client.ping()
    except Exception as exc:
        cause = network_cause(exc) or type(exc).__name__
        if "Authentication" in type(exc).__name__ or "NOAUTH" in str(exc) or "WRONGPASS" in str(exc):
            cause = "authentication failed"
        return CheckResult(name="redis", level=Level.FATAL, detail=f"{shown}: {cause}",
                           fix="check REDIS_URL (host, port, password) and that Redis is running")
    finally:
        await client.aclose()
    return CheckResult(name="redis", level=Level.OK, detail=f"{shown} answers PING")


def sqlite_file_of(url: str) -> Path | None:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database).expanduser()


async def check_database(settings: Settings) -> CheckResult:
    """DATABASE_URL parses and connects; a SQLite file that does not exist yet is fine when its folder is writable."""
    try:
        shown = make_url(settings.database_url).render_as_string(hide_password=True)
        sqlite_file = sqlite_file_of(settings.database_url)
    except ArgumentError:
        return CheckResult(name="database", level=Level.FATAL, detail="DATABASE_URL is not a database URL",
                           fix="set DATABASE_URL to a SQLAlchemy URL, e.g. postgresql://user@host/diag")
    if sqlite_file is not None and not sqlite_file.exists():
        folder = sqlite_file.resolve().parent
        if folder.is_dir():
            return CheckResult(name="database", level=Level.OK, detail=f"{shown}: created at first start")
        return CheckResult(name="database", level=Level.FATAL, detail=f"{shown}: folder {folder} does not exist",
                           fix="create the folder or point DATABASE_URL elsewhere")
    try:
        database = Database(settings.database_url)
    except ValueError as exc:  # our own clear message (unsupported backend, missing driver), never the URL
        return CheckResult(name="database", level=Level.FATAL, detail=str(exc), fix="fix DATABASE_URL")
    try:
        async with database.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
    except Exception as exc:
        problem = connect_problem(exc)
        reason = f"{problem[0].value}: {problem[1]}" if problem else type(getattr(exc, "orig", None) or exc).__name__
        return CheckResult(name="database", level=Level.FATAL, detail=f"{shown}: {reason}",
                           fix="check DATABASE_URL (host, port, user, password, database) and that the server runs")
    finally:
        await database.dispose()
    # Schema at head: core/health/schema.py (listed beside this check in core/health/catalog.py).
    return CheckResult(name="database", level=Level.OK, detail=f"{shown} connects")
